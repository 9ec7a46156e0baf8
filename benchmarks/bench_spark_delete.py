"""icepark's Spark row-level delete (``icepark.spark.rowlevel.delete.delete_rows``) in both modes
against
Spark's own Parquet reader merely finding the same rows, in the same run and Spark session.

    PYTHONPATH=src python -m benchmarks.bench_spark_delete            # 5M rows, 10 files
    PYTHONPATH=src python -m benchmarks.bench_spark_delete --rows 2000000 --files 4
    PYTHONPATH=src python -m benchmarks.bench_spark_delete --format-version 3  # deletion vectors

The table (5 columns: 3 long, 1 double, 1 string) is written once, one file per append, so
it has exactly ``--files`` data files. The filter ``k < 10000`` matches about 1% of the rows;
``k`` is a hash of the row number, so every file holds matching rows and none can be skipped
by its bounds. Each run is timed end to end (planning, Spark jobs, files written, commit),
then the table is rolled back to the written snapshot, so every run deletes from the same
state:

* merge-on-read: position delete files (v2) or deletion vectors (v3) for the matching rows,
  written on the driver where the table holds at most ``DRIVER_POSITIONS`` rows (4M: not the
  default 5M, where both variants write in tasks), and (in turns with it, as a baseline) in
  the scan's tasks;
* copy-on-write: every data file rewritten without them.

The baseline is ``spark.read.parquet(<the table's data files>).filter(k < 10000).count()``:
the least any delete must do is find the rows. Best of ``--repeat`` runs each. Prints a
markdown table; ratio = baseline time / delete time (1.0 = a delete as fast as the scan).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.catalog import load_catalog
from icepark.spark.rowlevel import positions
from icepark.spark.rowlevel.delete import delete_rows
from icepark.spark.session import build_session
from icepark.spec.metadata import FormatVersion
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField

FILTER = "k < 10000"
DRIVER_POSITIONS = positions.DRIVER_POSITIONS
VARIANTS = {"": DRIVER_POSITIONS, ", positions written in tasks": 0}
"""Merge-on-read runs twice in turns: as icepark runs it (a table of at most
:data:`~icepark.spark.rowlevel.positions.DRIVER_POSITIONS` rows has its positions collected and
written on the driver) and with every table's positions written in the scan's tasks."""
SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.required(2, "k", LONG),
    NestedField.optional(3, "g", LONG),
    NestedField.optional(4, "v", DOUBLE),
    NestedField.optional(5, "s", STRING))


def _rows(start: int, count: int) -> pa.Table:
    ids = pa.array(range(start, start + count), pa.int64())
    return pa.table({
        "id": ids,
        "k": pc.bit_wise_and(pc.multiply(ids, 7919), 0xFFFFF),  # ~1/100 below 10000
        "g": pc.divide(ids, 1000),
        "v": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
        "s": pc.binary_join_element_wise("s-", pc.cast(pc.bit_wise_and(ids, 0xFFFF),
                                                       pa.string()), "")})


def _best(work: Callable[[], Any], repeat: int, reset: Callable[[], None] | None = None
          ) -> tuple[float, Any]:
    best, answer = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        answer = work()
        best = min(best, time.perf_counter() - start)
        if reset is not None:
            reset()
    return best, answer


def bench(rows: int, files: int, repeat: int, format_version: int = 2
          ) -> tuple[list[tuple[str, float, int]], float, int]:
    spark = build_session("local[*]", "icepark-bench-delete",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "3g",
                           "spark.sql.shuffle.partitions": "8"})
    root = tempfile.mkdtemp(prefix="icepark-bench-delete-")
    version: FormatVersion = 3 if format_version == 3 else 2
    try:
        catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{root}/c.db",
                               warehouse=f"{root}/wh")
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", SCHEMA, format_version=version)
        per_file = rows // files
        for i in range(files):
            table.append(_rows(i * per_file, per_file))
        snapshot = table.current_snapshot()
        assert snapshot is not None
        base = snapshot.snapshot_id
        paths = [t.data_file.file_path for t in table.scan().plan_files()]

        def scan() -> int:
            return int(spark.read.parquet(*paths).filter(FILTER).count())

        scan()  # warm the file system cache and the JVM for both sides
        scan_s, expected = _best(scan, repeat)

        def reset() -> None:
            table.manage_snapshots().rollback_to_snapshot(base).commit()
            table.refresh()

        results = []
        for mode in ("merge-on-read", "copy-on-write"):
            table.set_properties({"write.delete.mode": mode})
            table.refresh()
            variants = VARIANTS if mode == "merge-on-read" else {"": positions.DRIVER_POSITIONS}
            best = dict.fromkeys(variants, float("inf"))
            for _ in range(repeat):  # the variants in turns
                for label, limit in variants.items():
                    positions.DRIVER_POSITIONS = limit
                    start = time.perf_counter()
                    result = delete_rows(spark, table, FILTER)
                    best[label] = min(best[label], time.perf_counter() - start)
                    reset()
                    if result.deleted_rows != expected:
                        raise AssertionError(f"{mode}{label}: deleted {result.deleted_rows} "
                                             f"rows, Spark found {expected}")
            positions.DRIVER_POSITIONS = DRIVER_POSITIONS
            results += [(mode + label, seconds, len(paths)) for label, seconds in best.items()]
        return results, scan_s, expected
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format-version", type=int, choices=(2, 3), default=2)
    args = parser.parse_args()
    results, scan_s, matched = bench(args.rows, args.files, args.repeat, args.format_version)
    print(f"v{args.format_version}, {args.rows:,} rows in {args.files} files, {matched:,} "
          f"matching {FILTER!r}; "
          f"baseline spark.read.parquet(...).filter(...).count(): {scan_s:.2f} s")
    print("| delete mode | icepark s | Spark scan s | ratio |")
    print("|---|---:|---:|---:|")
    for mode, seconds, _ in results:
        print(f"| {mode} | {seconds:.3f} | {scan_s:.3f} | {scan_s / seconds:.2f}x |")
    best = {mode: seconds for mode, seconds, _ in results}
    tasks = best["merge-on-read" + list(VARIANTS)[1]]
    print(f"merge-on-read, positions written on the driver vs in tasks: "
          f"{tasks / best['merge-on-read']:.2f}x faster")


if __name__ == "__main__":
    main()
