"""icepark's Spark reads of an unchanged table with the file relations a session resolved kept
(:mod:`icepark.spark.reader.listing`) against the same reads resolving them every time, in
the same run and the same Spark session.

    PYTHONPATH=src:. python -m benchmarks bench_read_relations              # 2M rows, 4 files
    PYTHONPATH=src:. python -m benchmarks bench_read_relations --repeat 30

The table is :mod:`benchmarks.bench_reference`'s (``--rows`` rows x 20 columns written by
icepark from ``--files`` tasks, one file each), read as that benchmark reads it: the table
loaded from the catalog, ``ips.read`` with its filter and columns, then the query
(``sum(d1), count(*)`` where ``l1 < 10000``: 2 of 20 columns; ``count(*)`` and ``max`` of all 20
columns). "driver" is the time until the DataFrame is built (loading, planning and Spark's
analysis), "total" until the answer is back. Kept and resolved take turns (who goes first
alternates); best and median of ``--repeat`` each, after one untimed run of each. Ratios:
resolved / kept (above 1.00x: keeping is faster).
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
from benchmarks.bench_reference import FILTER, columns
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.reader import listing
from icepark.spark.session import build_session

NARROW = (["d1", "l1"], FILTER, ["sum(d1)", "count(*)"])
WIDE = (None, None, ["count(*)", *(f"max({c.rsplit(' AS ', 1)[-1]})" for c in columns())])
Query = tuple[list[str] | None, str | None, list[str]]


def _run(spark: Any, catalog: FilesystemCatalog, query: Query) -> tuple[float, float, Any]:
    """The driver's seconds, the total seconds and the answer of one read."""
    names, row_filter, exprs = query
    start = time.perf_counter()
    df = ips.read(spark, catalog.load_table("db.t"), row_filter=row_filter, columns=names)
    if row_filter:
        df = df.filter(row_filter)
    df = df.selectExpr(*exprs)
    built = time.perf_counter()
    answer = list(df.collect()[0])
    return built - start, time.perf_counter() - start, answer


def _turns(run: Callable[[bool], tuple[float, float, Any]], repeat: int
           ) -> dict[bool, list[tuple[float, float]]]:
    """Each way's (driver, total) seconds over ``repeat`` turns; answers checked equal."""
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for keep in (True, False):
        run(keep)
    for i in range(repeat):
        answers = {}
        for keep in (True, False) if i % 2 == 0 else (False, True):
            driver, total, answers[keep] = run(keep)
            times[keep].append((driver, total))
        if answers[True] != answers[False]:
            raise AssertionError(f"kept {answers[True]} != resolved {answers[False]}")
    return times


def bench(rows: int, files: int, repeat: int) -> list[dict[str, Any]]:
    """Both queries' times, kept and resolved (see the module docstring)."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = build_session("local[2]", "icepark-bench-read-relations",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                           "spark.sql.shuffle.partitions": "8"})
    root = tempfile.mkdtemp(prefix="icepark-bench-relations-")
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": root})
        catalog.create_namespace("db")
        rows_df = spark.range(0, rows, 1, files).selectExpr(*columns())
        table = catalog.create_table("db.t", ips.to_iceberg(rows_df.schema))
        ips.write(rows_df, table)
        results = []
        for label, query in (("read 2 of 20 columns, l1 < 10000", NARROW),
                             ("read all 20 columns", WIDE)):
            def run(keep: bool, query: Query = query) -> tuple[float, float, Any]:
                listing.KEEP_RELATIONS = keep
                try:
                    return _run(spark, catalog, query)
                finally:
                    listing.KEEP_RELATIONS = True
            results.append({"query": label, "times": _turns(run, repeat)})
        return results
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    results = bench(args.rows, args.files, args.repeat)
    print(f"{args.rows:,} rows x 20 columns in {args.files} files, {args.repeat} turns; load "
          f"average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    print("| query | | kept best s | resolved best s | ratio | kept median s | "
          "resolved median s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        for part, index in (("driver", 0), ("total", 1)):
            kept = [t[index] for t in r["times"][True]]
            resolved = [t[index] for t in r["times"][False]]
            best = (min(kept), min(resolved))
            median = (statistics.median(kept), statistics.median(resolved))
            print(f"| {r['query']} | {part} | {best[0]:.3f} | {best[1]:.3f} | "
                  f"{best[1] / best[0]:.2f}x | {median[0]:.3f} | {median[1]:.3f} | "
                  f"{median[1] / median[0]:.2f}x |")


if __name__ == "__main__":
    main()
