"""Sustained streaming ingest: a rate source into a partitioned icepark table through the
``icepark`` sink, against the same stream into plain Parquet (Spark's file sink, the ceiling),
in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_stream_ingest                 # 100k rows/s, 5 min
    PYTHONPATH=src:. python -m benchmarks bench_stream_ingest --seconds 60 --rate 20000

Each stream reads Spark's ``rate`` source at ``--rate`` rows per second (2 partitions), shapes
each row as ``id`` (the value), ``kind`` (``id % 10``: the partition), ``ts`` and a 20-character
``payload``, and writes with a ``--trigger``-second processing-time trigger for ``--seconds``
seconds; then it is stopped. Reported for each sink: rows committed per second of wall time,
the micro-batch duration (Spark's ``triggerExecution``: read, write, commit) at the median,
95th percentile and maximum, batches, and data files per partition at the end. icepark's
committed rows are its snapshots' ``total-records``; Parquet's are the rows its file sink
committed (read back).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

import icepark.spark as ips
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.session import build_session


def _stream(spark: SparkSession, rate: int) -> DataFrame:
    source = spark.readStream.format("rate").option("rowsPerSecond", rate) \
        .option("numPartitions", 2).load()
    return source.select(F.col("value").alias("id"), (F.col("value") % 10).alias("kind"),
                         F.col("timestamp").alias("ts"),
                         F.sha1(F.col("value").cast("string")).substr(1, 20).alias("payload"))


def _run(query: Any, seconds: float) -> tuple[float, list[dict[str, Any]]]:
    start = time.perf_counter()
    time.sleep(seconds)
    query.stop()
    elapsed = time.perf_counter() - start
    return elapsed, [p for p in query.recentProgress if p["numInputRows"] > 0]


def _durations(progress: list[dict[str, Any]]) -> tuple[float, float, float]:
    ms = sorted(p["durationMs"]["triggerExecution"] / 1000 for p in progress) or [0.0]
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return statistics.median(ms), p95, ms[-1]


def bench(rate: int, seconds: float, trigger: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-stream-"))
    spark = build_session("local[2]", "icepark-bench-stream",
                          {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    results: dict[str, Any] = {}
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": str(root / "warehouse")})
        catalog.create_namespace("db")
        ips.configure(spark, catalog)
        shape = _stream(spark, rate)
        table = catalog.create_table("db.events", ips.to_iceberg(shape.schema),
                                     partition_spec=["kind"])
        query = (shape.writeStream.format("icepark").option("catalog", "bench")
                 .option("type", "filesystem").option("warehouse", str(root / "warehouse"))
                 .option("checkpointLocation", str(root / "ck-icepark"))
                 .trigger(processingTime=f"{trigger} seconds").start("db.events"))
        elapsed, progress = _run(query, seconds)
        table = table.refresh()
        snapshot = table.current_snapshot()
        rows = int(snapshot.summary.properties["total-records"]) if snapshot else 0  # type: ignore[union-attr]
        files = sum(1 for _ in table.scan().plan_files())
        results["icepark"] = (rows, elapsed, _durations(progress), len(progress), files / 10)

        out = root / "parquet"
        query = (shape.writeStream.format("parquet").partitionBy("kind")
                 .option("path", str(out)).option("checkpointLocation", str(root / "ck-pq"))
                 .trigger(processingTime=f"{trigger} seconds").start())
        elapsed, progress = _run(query, seconds)
        rows = spark.read.parquet(str(out)).count()
        files = len(list(out.rglob("*.parquet")))
        results["parquet"] = (rows, elapsed, _durations(progress), len(progress), files / 10)
        return results
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--trigger", type=int, default=10)
    args = parser.parse_args()
    results = bench(args.rate, args.seconds, args.trigger)
    print(f"rate source {args.rate:,} rows/s, {args.trigger} s triggers, {args.seconds:.0f} s "
          "per sink, 10 partitions")
    print("| sink | rows committed | rows/s | batches | batch s p50 | p95 | max | "
          "files per partition |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("icepark", "parquet"):
        rows, elapsed, (p50, p95, top), batches, per_partition = results[name]
        print(f"| {name} | {rows:,} | {rows / elapsed:,.0f} | {batches} | {p50:.1f} | "
              f"{p95:.1f} | {top:.1f} | {per_partition:.1f} |")
    ours, ceiling = results["icepark"], results["parquet"]
    print(f"\nicepark / Parquet rows per second: "
          f"{(ours[0] / ours[1]) / max(ceiling[0] / ceiling[1], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
