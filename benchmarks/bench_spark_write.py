"""icepark's Spark write (Python-worker writer in ``mapInArrow``) against Spark's own Parquet
writer, same zstd codec, same cached DataFrame, in the same run.

    PYTHONPATH=src python -m benchmarks.bench_spark_write            # 20M rows
    PYTHONPATH=src python -m benchmarks.bench_spark_write --rows 2000000

Cases: a flat schema (long, double, string, date, timestamp); a schema with a list and a map
column; and a partitioned write (``day(ts)``, ``bucket[16](id)``; Spark's baseline writes the
same rows repartitioned by the same partition values with ``partitionBy`` on them).
Prints a markdown table; ratio = Spark time / icepark time (throughput ratio, 1.0 = parity).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from icepark.catalog import load_catalog
from icepark.spark.schema import to_iceberg
from icepark.spark.session import build_session
from icepark.spark.transforms import partition_columns
from icepark.spark.write import write
from icepark.spec.partitioning import PartitionSpecBuilder


def _timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _frames(spark: Any, rows: int) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    base = spark.range(rows).select(
        F.col("id"),
        (F.col("id") * 1.5).alias("x"),
        F.concat(F.lit("name-"), (F.col("id") % 100_000).cast("string")).alias("name"),
        F.date_from_unix_date((F.col("id") % 3650).cast("int")).alias("d"),
        F.timestamp_seconds(1_700_000_000 + F.col("id") % 2_592_000).alias("ts"))
    nested = spark.range(rows // 4).select(
        F.col("id"),
        F.array(F.col("id") % 7, F.col("id") % 11, F.col("id") % 13).alias("tags"),
        F.create_map(F.lit("a"), (F.col("id") % 5).cast("string"),
                     F.lit("b"), F.col("id").cast("string")).alias("props"))
    return {"flat": base.cache(), "nested": nested.cache()}


def bench(rows: int) -> list[tuple[str, int, float, float]]:
    spark = build_session("local[*]", "icepark-bench",
                          {"spark.ui.enabled": "false",
                           "spark.sql.parquet.compression.codec": "zstd",
                           "spark.driver.memory": "4g"})
    root = tempfile.mkdtemp(prefix="icepark-bench-")
    try:
        catalog = load_catalog("bench", uri=f"sqlite:///{root}/c.db", warehouse=f"{root}/wh")
        catalog.create_namespace("db")
        frames = _frames(spark, rows)
        results = []
        for name, df in frames.items():
            count = df.count()  # materialize the cache
            schema = to_iceberg(df.schema, fresh_ids=True)
            table = catalog.create_table(f"db.{name}", schema)
            ice = _timed(partial(write, df, table))
            native = _timed(partial(df.write.mode("overwrite").option("compression", "zstd")
                                    .parquet, f"{root}/spark_{name}"))
            results.append((name, count, ice, native))
        df = frames["flat"]
        schema = to_iceberg(df.schema, fresh_ids=True)
        spec = PartitionSpecBuilder(schema).day("ts").bucket("id", 16).build()
        table = catalog.create_table("db.parted", schema, partition_spec=spec)
        ice = _timed(lambda: write(df, table))
        parts = partition_columns(table.spec(), table.schema(), df)
        names = [f.name for f in table.spec().fields]
        spark_parted = df.select("*", *parts).repartition(*names)
        native = _timed(lambda: spark_parted.write.mode("overwrite").partitionBy(*names)
                        .option("compression", "zstd").parquet(f"{root}/spark_parted"))
        results.append(("partitioned day(ts), bucket[16](id)", rows, ice, native))
        for frame in frames.values():
            frame.unpersist()
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    args = parser.parse_args()
    results = bench(args.rows)
    print("| case | rows | icepark s | Spark parquet s | throughput ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, count, ice, native in results:
        print(f"| {name} | {count:,} | {ice:.2f} | {native:.2f} | {native / ice:.2f}x |")


if __name__ == "__main__":
    main()
