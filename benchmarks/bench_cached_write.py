"""How a native write of a cached DataFrame gives its columns their field IDs: ``DataFrame.to``
against the alias projection, each against Spark's own Parquet write, in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_cached_write               # 2M rows, 9 turns
    PYTHONPATH=src:. python -m benchmarks bench_cached_write --rows 200000 --repeat 3

The rows are :mod:`benchmarks.bench_reference`'s (20 columns: longs, doubles, strings, dates,
timestamps; ``--files`` tasks), cached as a view, as that benchmark's writes read them. Variants,
each writing the whole view once per turn (zstd, ``local[2]``):

* ``spark parquet``: ``df.write.parquet``, Spark's own write of the view, no field IDs;
* ``aliases``: the frame :func:`icepark.spark.writer.file_columns.aliased_frame` gives (every
  column selected again with its field ID) written the way the native writer does (its
  options and session settings), Spark's job alone;
* ``DataFrame.to``: the frame :func:`~icepark.spark.writer.file_columns.file_frame` gives a
  cached frame, written the same way;
* ``ips.write``: icepark's whole write of the view to a new table (footers, commit).

The variants take turns (the order rotating every turn), each after a ``System.gc()`` in the
JVM so that no turn collects another's garbage. Reported: wall time and the JVM's CPU time
(``/proc``: user and system, all threads), best and median of ``--repeat`` turns after one
untimed turn; ratios are against ``spark parquet`` (1.00x: as fast; lower is better).
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
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

import icepark.spark as ips
from benchmarks.bench_reference import SCHEMA_DDL, columns
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.session import build_session
from icepark.spark.writer.file_columns import aliased_frame, file_frame
from icepark.spark.writer.native import parquet_settings, writer_options
from icepark.spec.schema import Schema

VIEW = "bench_cached_rows"
VARIANTS = ("spark parquet", "aliases", "DataFrame.to", "ips.write")


def _jvm_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _variants(spark: SparkSession, catalog: FilesystemCatalog, schema: Schema,
              root: Path) -> dict[str, Callable[[int], None]]:
    options = writer_options({}, "bench")

    def spark_parquet(turn: int) -> None:
        spark.table(VIEW).write.option("compression", "zstd").parquet(str(root / f"p{turn}"))

    def framed(frame: Callable[[DataFrame], DataFrame], name: str) -> Callable[[int], None]:
        def run(turn: int) -> None:
            with parquet_settings(spark):
                frame(spark.table(VIEW)).write.options(**options).parquet(
                    str(root / f"{name}{turn}"))
        return run

    def to_frame(df: DataFrame) -> DataFrame:
        frame, cached = file_frame(df, schema)
        assert cached, "the view is not framed with DataFrame.to"
        return frame

    def icepark(turn: int) -> None:
        ips.write(spark.table(VIEW), catalog.create_table(f"db.t{turn}", schema))

    return {"spark parquet": spark_parquet,
            "aliases": framed(lambda df: aliased_frame(df, schema), "a"),
            "DataFrame.to": framed(to_frame, "t"), "ips.write": icepark}


def bench(rows: int, files: int, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Each variant's wall and CPU seconds per timed turn."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-cached-write-"))
    spark = build_session("local[2]", "icepark-bench-cached-write",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g"})
    try:
        spark.range(0, rows, 1, files).selectExpr(*columns()).createOrReplaceTempView(VIEW)
        spark.sql(f"CACHE TABLE {VIEW}")
        catalog = FilesystemCatalog("bench", {"warehouse": str(root / "warehouse")})
        catalog.create_namespace("db")
        schema = ips.to_iceberg(spark.createDataFrame([], SCHEMA_DDL).schema)
        variants = _variants(spark, catalog, schema, root)
        jvm = spark._jvm  # the benchmark's own session: its JVM's pid and GC
        assert jvm is not None
        pid = int(jvm.java.lang.ProcessHandle.current().pid())
        wall: dict[str, list[float]] = {v: [] for v in VARIANTS}
        cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for turn in range(repeat + 1):
            order = VARIANTS[turn % len(VARIANTS):] + VARIANTS[:turn % len(VARIANTS)]
            for name in order:
                jvm.java.lang.System.gc()
                time.sleep(0.5)
                cpu_start, start = _jvm_cpu_seconds(pid), time.perf_counter()
                variants[name](turn)
                seconds, cpu_seconds = time.perf_counter() - start, \
                    _jvm_cpu_seconds(pid) - cpu_start
                if turn:
                    wall[name].append(seconds)
                    cpu[name].append(cpu_seconds)
            for path in root.iterdir():
                if path.name != "warehouse":
                    shutil.rmtree(path, ignore_errors=True)
        return {"wall": wall, "cpu": cpu}
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def markdown(result: dict[str, dict[str, list[float]]]) -> str:
    wall, cpu = result["wall"], result["cpu"]
    lines = ["| variant | wall best s | wall median s | CPU best s | CPU median s | "
             "wall vs Spark (best) | wall vs Spark (median) | CPU vs Spark (median) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    base: dict[str, Any] = {"wb": min(wall["spark parquet"]),
                            "wm": statistics.median(wall["spark parquet"]),
                            "cm": statistics.median(cpu["spark parquet"])}
    for name in VARIANTS:
        wb, wm = min(wall[name]), statistics.median(wall[name])
        cb, cm = min(cpu[name]), statistics.median(cpu[name])
        lines.append(f"| {name} | {wb:.3f} | {wm:.3f} | {cb:.2f} | {cm:.2f} | "
                     f"{wb / base['wb']:.2f}x | {wm / base['wm']:.2f}x | "
                     f"{cm / base['cm']:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4, help="tasks (and files) of a write")
    parser.add_argument("--repeat", type=int, default=9, help="timed turns of each variant")
    args = parser.parse_args()
    result = bench(args.rows, args.files, args.repeat)
    print(f"{args.rows:,} rows x 20 columns cached in {args.files} tasks, {args.repeat} turns "
          f"after one untimed; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          " at the end\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
