"""icepark's Spark read (``icepark.spark.reader.read.read``) against Spark's own Parquet reader on
the
same data files, in the same run and the same Spark session.

    PYTHONPATH=src python -m benchmarks.bench_spark_read            # 20M rows
    PYTHONPATH=src python -m benchmarks.bench_spark_read --rows 2000000

The table has 20 columns (6 long, 5 double, 5 string, 2 date, 2 timestamp) and is written once
by icepark; the baseline reads exactly the table's data files with ``spark.read.parquet``.
Two queries, each timed end to end (icepark's time includes planning the scan from the
table's metadata), best of ``--repeat`` runs taken in turns, alternating who goes first:

* selective: ``sum(d1), count(*)`` over rows with ``l1 < 10000`` (about 1% of rows; ``l1`` is a
  hash of the row number, so no file can be skipped by its bounds and both sides read every
  file): 2 of 20 columns;
* full-row aggregation: ``count(*)`` and ``max`` of every one of the 20 columns.

Prints a markdown table; ratio = Spark time / icepark time (1.0 = parity, higher is better).
The peak RSS of the Spark JVM and of the Python driver are for the whole run (both readers
share one session).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

from icepark.catalog import load_catalog
from icepark.spark.reader.read import read
from icepark.spark.schema import to_iceberg
from icepark.spark.session import build_session
from icepark.spark.writer.write import write

SELECTIVE = "l1 < 10000"


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    row = F.col("id")
    cols = [row.alias("l0"), ((row * 7919) % 1_000_003).alias("l1")]
    cols += [((row * (31 + i)) % (10_000 * (i + 1))).alias(f"l{i}") for i in range(2, 6)]
    cols += [(row * (0.5 + i)).alias(f"d{i}") for i in range(5)]
    cols += [F.concat(F.lit(f"s{i}-"), ((row * (13 + i)) % 50_000).cast("string")).alias(f"s{i}")
             for i in range(5)]
    cols += [F.date_from_unix_date(((row + 97 * i) % 3650).cast("int")).alias(f"dt{i}")
             for i in range(2)]
    cols += [F.timestamp_seconds(1_700_000_000 + (row * (i + 3)) % 2_592_000).alias(f"ts{i}")
             for i in range(2)]
    return spark.range(rows).select(*cols)


def _selective(df: Any) -> list[Any]:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    return list(df.filter(F.col("l1") < 10_000).agg(F.sum("d1"), F.count("*")).collect()[0])


def _full(df: Any) -> list[Any]:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    return list(df.agg(F.count("*"), *(F.max(c) for c in df.columns)).collect()[0])


def _best_pair(first: Callable[[], list[Any]], second: Callable[[], list[Any]],
               repeat: int) -> tuple[tuple[float, list[Any]], tuple[float, list[Any]]]:
    """Best time and answer of each, run in turns (alternating who goes first), so both see
    the same machine load."""
    times: list[list[float]] = [[], []]
    answers: list[list[Any]] = [[], []]
    works = (first, second)
    for i in range(repeat):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            answers[which] = works[which]()
            times[which].append(time.perf_counter() - start)
    return (min(times[0]), answers[0]), (min(times[1]), answers[1])


def _same(left: list[Any], right: list[Any]) -> bool:
    """Equal answers; sums of doubles may differ in the last bits with the summation order."""
    return len(left) == len(right) and all(
        math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) else a == b
        for a, b in zip(left, right, strict=True))


def _jvm_peak_rss_mb() -> float | None:
    """The largest VmHWM among this process's java children (the local Spark JVM)."""
    me, peak = os.getpid(), None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(me) and "java" in fields.get("Name", ""):
            kb = int(fields.get("VmHWM", "0 kB").split()[0])
            peak = max(peak or 0.0, kb / 1024)
    return peak


def bench(rows: int, repeat: int) -> tuple[list[tuple[str, float, float]], dict[str, Any]]:
    spark = build_session("local[*]", "icepark-bench-read",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                           "spark.sql.parquet.compression.codec": "zstd"})
    root = tempfile.mkdtemp(prefix="icepark-bench-read-")
    try:
        catalog = load_catalog("bench", uri=f"sqlite:///{root}/c.db", warehouse=f"{root}/wh")
        catalog.create_namespace("db")
        df = _frame(spark, rows)
        table = catalog.create_table("db.wide", to_iceberg(df.schema, fresh_ids=True))
        write(df, table)
        table = table.refresh()
        paths = [t.data_file.file_path for t in table.scan().plan_files()]

        def ours(query: Callable[[Any], list[Any]], **kw: Any) -> Callable[[], list[Any]]:
            return lambda: query(read(spark, table, **kw))

        def spark_own(query: Callable[[Any], list[Any]]) -> Callable[[], list[Any]]:
            return lambda: query(spark.read.parquet(*paths))

        cases = [("2 of 20 columns, l1 < 10000", ours(_selective, row_filter=SELECTIVE,
                                                      columns=["l1", "d1"]),
                  spark_own(_selective)),
                 ("full-row aggregation (20 columns)", ours(_full), spark_own(_full))]
        results = []
        for name, ice_work, spark_work in cases:
            spark_work()  # warm the file system cache and the JVM's code for both sides
            (ice_s, ice_answer), (spark_s, spark_answer) = _best_pair(ice_work, spark_work,
                                                                      repeat)
            if not _same(ice_answer, spark_answer):
                raise AssertionError(f"{name}: icepark {ice_answer} != Spark {spark_answer}")
            results.append((name, ice_s, spark_s))
        memory = {"files": len(paths), "jvm_peak_mb": _jvm_peak_rss_mb(),
                  "driver_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        return results, memory
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results, memory = bench(args.rows, args.repeat)
    print(f"{args.rows:,} rows in {memory['files']} files; peak RSS: Spark JVM "
          f"{memory['jvm_peak_mb'] or 0:.0f} MB, Python driver {memory['driver_peak_mb']:.0f} MB")
    print("| query | icepark s | Spark parquet s | ratio |")
    print("|---|---:|---:|---:|")
    for name, ice, native in results:
        print(f"| {name} | {ice:.2f} | {native:.2f} | {native / ice:.2f}x |")


if __name__ == "__main__":
    main()
