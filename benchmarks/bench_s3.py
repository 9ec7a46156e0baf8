"""Throughput of icepark's Python data path on an S3 endpoint (moto's server on 127.0.0.1,
:mod:`tools.s3_server`), side by side in the same run with its baselines on the same data.

    PYTHONPATH=src:. python -m benchmarks.bench_s3                     # 2M rows
    PYTHONPATH=src:. python -m benchmarks.bench_s3 --rows 500000 --repeat 1

Stock PySpark has no Hadoop S3 connector, so icepark writes and reads tables in a bucket in
Spark's Python workers (:mod:`icepark.spark.storage`). Rows (write and read, each timed alone):

* ``icepark, S3``: ``ips.write`` of a cached DataFrame (long, double, string, date, timestamp)
  to a table whose warehouse is ``s3://<bucket>/wh`` (the Python-worker writer), and
  ``ips.read`` of all its rows (the Arrow reader in ``mapInArrow`` tasks), consumed by Spark's
  ``noop`` sink;
* ``icepark, local disk, Python path``: the same with the table on local disk and
  ``spark.icepark.data-path=python``: the cost of the Python path without the object store;
* ``Spark Parquet, local disk`` (the baseline): ``df.write.parquet`` and
  ``spark.read.parquet(...)`` to the ``noop`` sink, the same codec (zstd);
* ``pyarrow, S3``: ``pyarrow.parquet.write_table`` / ``read_table`` of the same rows (already
  in the driver as one Arrow table) straight to and from the endpoint in one process: the
  object store's own cost through the same S3 client.

MB are the Parquet bytes written (each writer's own files); MB/s and rows/s divide them by the
best of ``--repeat`` runs; the ratio is the row's rows/s over the Spark baseline's.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from tools.s3_server import s3_server

from icepark.catalog import load_catalog
from icepark.io.fileio import s3_options
from icepark.spark.reader.read import read
from icepark.spark.schema import to_iceberg
from icepark.spark.session import build_session
from icepark.spark.storage import DATA_PATH_SETTING
from icepark.spark.writer.write import write


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    return spark.range(rows).select(
        F.col("id"),
        (F.col("id") * 1.5).alias("x"),
        F.concat(F.lit("name-"), (F.col("id") % 100_000).cast("string")).alias("name"),
        F.date_from_unix_date((F.col("id") % 3650).cast("int")).alias("d"),
        F.timestamp_seconds(1_700_000_000 + F.col("id") % 2_592_000).alias("ts"))


def _best(repeat: int, work: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _table_bytes(table: Any) -> int:
    return sum(t.data_file.file_size_in_bytes for t in table.refresh().scan().plan_files())


def _dir_bytes(fs: Any, path: str) -> int:
    selector = pafs.FileSelector(path, recursive=True)
    return sum(int(i.size) for i in fs.get_file_info(selector)
               if i.type == pafs.FileType.File and i.path.endswith(".parquet"))


Row = tuple[str, str, float, int, int]
"""(case, operation, seconds, bytes, rows)."""


def bench(rows: int, repeat: int) -> list[Row]:
    spark = build_session("local[*]", "icepark-bench-s3",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                           "spark.sql.parquet.compression.codec": "zstd"})
    root = tempfile.mkdtemp(prefix="icepark-bench-s3-")
    results: list[Row] = []
    try:
        with s3_server() as server:
            bucket = server.new_bucket()
            s3_catalog = load_catalog("s3", uri=f"sqlite:///{root}/s3.db",
                                      warehouse=f"s3://{bucket}/wh", **server.properties())
            local_catalog = load_catalog("local", uri=f"sqlite:///{root}/local.db",
                                         warehouse=f"{root}/wh")
            for catalog in (s3_catalog, local_catalog):
                catalog.create_namespace("db")
            df = _frame(spark, rows).cache()
            df.count()
            schema = to_iceberg(df.schema, fresh_ids=True)
            counter = iter(range(1_000_000))
            tables: dict[str, Any] = {}

            def ice_write(catalog: Any) -> Callable[[], None]:
                def run() -> None:
                    table = catalog.create_table(f"db.t{next(counter)}", schema)
                    write(df, table)
                    tables[catalog.name] = table
                return run

            def ice_read(name: str) -> Callable[[], None]:
                return lambda: read(spark, tables[name]).write.format("noop").mode(
                    "overwrite").save()

            def spark_write() -> None:
                df.write.mode("overwrite").parquet(f"{root}/spark")

            def spark_read() -> None:
                spark.read.parquet(f"{root}/spark").write.format("noop").mode(
                    "overwrite").save()

            # warm up: Python workers, the JVM's code, the S3 clients
            small = _frame(spark, 10_000)
            write(small, s3_catalog.create_table("db.warm", to_iceberg(small.schema,
                                                                       fresh_ids=True)))
            small.write.mode("overwrite").parquet(f"{root}/warm")

            seconds = _best(repeat, ice_write(s3_catalog))
            results.append(("icepark, S3", "write", seconds, _table_bytes(tables["s3"]), rows))
            seconds = _best(repeat, ice_read("s3"))
            results.append(("icepark, S3", "read", seconds, _table_bytes(tables["s3"]), rows))

            spark.conf.set(DATA_PATH_SETTING, "python")
            try:
                seconds = _best(repeat, ice_write(local_catalog))
                size = _table_bytes(tables["local"])
                results.append(("icepark, local disk, Python path", "write", seconds, size,
                                 rows))
                seconds = _best(repeat, ice_read("local"))
                results.append(("icepark, local disk, Python path", "read", seconds, size,
                                rows))
            finally:
                spark.conf.unset(DATA_PATH_SETTING)

            local = pafs.LocalFileSystem()
            seconds = _best(repeat, spark_write)
            size = _dir_bytes(local, f"{root}/spark")
            results.append(("Spark Parquet, local disk", "write", seconds, size, rows))
            results.append(("Spark Parquet, local disk", "read", _best(repeat, spark_read),
                            size, rows))

            arrow = df.toArrow()
            fs = pafs.S3FileSystem(**s3_options(server.properties()))
            key = f"{bucket}/pyarrow/data.parquet"
            seconds = _best(repeat, lambda: pq.write_table(arrow, key, filesystem=fs,
                                                           compression="zstd"))
            size = fs.get_file_info(key).size
            results.append(("pyarrow, S3", "write", seconds, size, rows))
            results.append(("pyarrow, S3", "read", _best(
                repeat, lambda: pq.read_table(key, filesystem=fs)), size, rows))
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each case; the best time counts")
    args = parser.parse_args()
    results = bench(args.rows, args.repeat)
    baseline = {op: rows / s for case, op, s, _, rows in results
                if case == "Spark Parquet, local disk"}
    print("| case | operation | rows | MB | s | MB/s | rows/s | vs Spark local |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case, op, seconds, size, rows in results:
        print(f"| {case} | {op} | {rows:,} | {size / 1e6:.1f} | {seconds:.2f} "
              f"| {size / 1e6 / seconds:.1f} | {rows / seconds:,.0f} "
              f"| {rows / seconds / baseline[op]:.2f}x |")


if __name__ == "__main__":
    main()
