"""A streaming query's driver for the kill tests: run as a script, it streams the Parquet files of
a directory into an icepark table until every file is read, and is killed at random points.

    python stream_driver.py <source dir> <checkpoint dir> <catalog db> <warehouse>

It prints ``started`` once the query runs, so that the test kills it while batches commit.
"""

from __future__ import annotations

import sys

from icepark.spark.datasource.source import register
from icepark.spark.session import build_session


def main(source: str, checkpoint: str, catalog_db: str, warehouse: str) -> None:
    spark = build_session("local[1]", "icepark-stream-kills",
                          {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"})
    register(spark)
    stream = spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 2) \
        .parquet(source)
    query = (stream.writeStream.format("icepark").option("catalog", "test")
             .option("catalog.uri", f"sqlite:///{catalog_db}")
             .option("catalog.warehouse", warehouse)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True)
             .start("db.t"))
    print("started", flush=True)
    query.awaitTermination()
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
