"""The NaN counts and float bounds of the files Spark's own Parquet writer wrote, from their
footers (:func:`icepark.io.parquet.float_stats.footer_float_stats`) against reading their
float and double columns back (:func:`~icepark.io.parquet.float_stats.read_back`, what every
native write did before), in the same run on the same files.

    PYTHONPATH=src:. python -m benchmarks bench_float_stats              # 2M rows, 4 files
    PYTHONPATH=src:. python -m benchmarks bench_float_stats --repeat 20

The table is :mod:`benchmarks.bench_reference`'s (``--rows`` rows x 20 columns, 5 of them
doubles, written by icepark's native writer from ``--files`` tasks, one file each). Each way
opens every file of the table in turn on one thread, as the driver does after a write (where
up to 8 files are read at once), and the answers are checked equal. The two ways take turns
(who goes first alternates); best and median of ``--repeat`` each, after one untimed run of
each. Ratio: read back / footer (above 1.00x: the footer is faster).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import icepark.spark as ips
from benchmarks.bench_reference import columns
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.io.arrow.parquet_file import open_parquet
from icepark.io.parquet.float_stats import FloatCollector, read_back, read_float_stats
from icepark.spark.session import build_session
from icepark.spec.schema import Schema


def _answer(found: list[FloatCollector | None], schema: Schema) -> list[Any]:
    ids = [f.field_id for f in schema.fields]
    return [None if c is None else (c.nan_counts, [repr(c.bounds(i)) for i in ids])
            for c in found]


def _ways(paths: list[str], schema: Schema) -> dict[str, Callable[[], list[Any]]]:
    def footer() -> list[Any]:
        return _answer([read_float_stats(p, schema) for p in paths], schema)

    def back() -> list[Any]:
        return _answer([read_back(open_parquet(p, p), schema, p) for p in paths], schema)

    return {"footer": footer, "read back": back}


def bench(rows: int, files: int, repeat: int) -> tuple[int, dict[str, list[float]]]:
    """The number of files and each way's seconds (see the module docstring)."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = build_session("local[2]", "icepark-bench-float-stats",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                           "spark.sql.shuffle.partitions": "8"})
    root = tempfile.mkdtemp(prefix="icepark-bench-float-stats-")
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": root})
        catalog.create_namespace("db")
        rows_df = spark.range(0, rows, 1, files).selectExpr(*columns())
        table = ips.write(rows_df, catalog.create_table("db.t", ips.to_iceberg(rows_df.schema)))
        paths = sorted({t.data_file.file_path for t in table.scan().plan_files()})
        ways = _ways(paths, table.schema())
        times: dict[str, list[float]] = {name: [] for name in ways}
        for run in ways.values():
            run()
        for i in range(repeat):
            answers = {}
            for name in list(ways) if i % 2 == 0 else list(reversed(ways)):
                start = time.perf_counter()
                answers[name] = ways[name]()
                times[name].append(time.perf_counter() - start)
            if answers["footer"] != answers["read back"]:
                raise AssertionError(f"footer {answers['footer']} != "
                                     f"read back {answers['read back']}")
        return len(paths), times
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    count, times = bench(args.rows, args.files, args.repeat)
    print(f"{args.rows:,} rows x 20 columns (5 doubles) in {count} files, {args.repeat} turns; "
          f"load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    print("| | footer s | read back s | ratio |")
    print("|---|---:|---:|---:|")
    for label, pick in (("best", min), ("median", statistics.median)):
        footer, back = pick(times["footer"]), pick(times["read back"])
        print(f"| {label} | {footer:.4f} | {back:.4f} | {back / footer:.1f}x |")


if __name__ == "__main__":
    main()
