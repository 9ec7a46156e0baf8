"""Spark jobs on tables in an S3 bucket (moto's server, tests/s3/conftest.py) with stock
PySpark, which has no Hadoop S3 connector: the data path moves into Python tasks
(:mod:`icepark.spark.storage`). Every result is checked against rows computed here in Python
and against icepark's Arrow reader (``table.scan().to_arrow()``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spark.storage import DATA_PATH_SETTING, data_path
from tests.s3.conftest import S3Server
from tests.s3.spark_tables import (
    arrow_rows,
    assert_written_by_icepark,
    frame,
    row,
    s3_table,
    spark_rows,
)

pytestmark = pytest.mark.spark


def test_data_path_detection(spark: SparkSession) -> None:
    local, s3 = ["/tmp/t/data/a.parquet"], ["s3://b/t/data/a.parquet"]
    assert data_path(spark, local) == "spark"
    assert data_path(spark, ["hdfs://nn/t/a.parquet", "file:///t/a"]) == "spark"
    assert data_path(spark, s3) == "python"
    assert data_path(spark, [*local, *s3]) == "python"
    try:
        spark.conf.set("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
        assert data_path(spark, s3) == "spark"  # a configured connector: Spark's own path
        spark.conf.set(DATA_PATH_SETTING, "python")
        assert data_path(spark, local) == "python"
        spark.conf.set(DATA_PATH_SETTING, "sometimes")
        with pytest.raises(ValidationError, match="auto, spark or python"):
            data_path(spark, local)
    finally:
        spark.conf.unset("spark.hadoop.fs.s3.impl")
        spark.conf.unset(DATA_PATH_SETTING)


def test_write_and_read(spark: SparkSession, s3_server: S3Server, bucket: str,
                        tmp_path: Path) -> None:
    table = s3_table(s3_server, bucket, tmp_path)
    ips.write(frame(spark, 0, 400), table)
    expected = [row(i) for i in range(400)]
    assert arrow_rows(table) == expected
    assert_written_by_icepark(s3_server, table)
    assert spark_rows(ips.read(spark, table)) == expected
    where = "kind = 'b' AND amount > 600"
    got = ips.read(spark, table, where, columns=["amount", "id"],
                   metadata_columns=["_file", "_pos"])
    assert got.columns == ["id", "amount", "_file", "_pos"]  # table order, then metadata
    rows = spark_rows(got)
    assert [r[:2] for r in rows] == [(i, a) for i, k, a in expected if k == "b" and a and a > 600]
    arrow = table.refresh().scan(where).to_arrow(["_file", "_pos"])
    assert rows == sorted(zip(*(arrow.column(c).to_pylist()
                                for c in ("id", "amount", "_file", "_pos")), strict=True))
    # an overwrite by filter (whole partitions), then a dynamic overwrite of those written
    ips.write(frame(spark, 1000, 1030).where("kind = 'a'"), table, mode="overwrite",
              overwrite_filter="kind = 'a'")
    expected = [r for r in expected if r[1] != "a"] + [row(i) for i in range(1000, 1030)
                                                       if i % 3 == 0]
    assert arrow_rows(table) == sorted(expected)
    ips.write(frame(spark, 5000, 5003).where("kind = 'b'"), table, mode="dynamic")
    expected = [r for r in expected if r[1] != "b"] + [row(5002)]
    assert arrow_rows(table) == sorted(expected) == spark_rows(ips.read(spark, table))
    assert_written_by_icepark(s3_server, table)


def test_forced_spark_path_is_refused(spark: SparkSession, s3_server: S3Server, bucket: str,
                                      tmp_path: Path) -> None:
    table = s3_table(s3_server, bucket, tmp_path)
    ips.write(frame(spark, 0, 10), table)
    spark.conf.set(DATA_PATH_SETTING, "spark")  # as if the session had an S3 connector
    try:
        with pytest.raises(UnsupportedFeature, match="no Hadoop file system for s3 paths"):
            ips.read(spark, table).collect()
        with pytest.raises(UnsupportedFeature, match="no Hadoop file system for s3 paths"):
            ips.write(frame(spark, 10, 20), table)
    finally:
        spark.conf.unset(DATA_PATH_SETTING)
    assert arrow_rows(table) == [row(i) for i in range(10)]
    live = sorted(t.data_file.file_path.removeprefix(f"s3://{bucket}/")
                  for t in table.refresh().scan().plan_files())
    assert [k for k in _keys(s3_server, bucket) if "/data/" in k and not k.endswith("/")] == live


def _keys(server: S3Server, bucket: str) -> list[str]:
    client: Any = server.client()
    return sorted(o["Key"] for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket) for o in page.get("Contents", []))


def test_datasource_on_s3(spark: SparkSession, s3_server: S3Server, bucket: str,
                          tmp_path: Path) -> None:
    """The ``icepark`` data source's writer (its tasks run in Python workers) with the catalog,
    and its S3 properties, given as options."""
    table = s3_table(s3_server, bucket, tmp_path)
    ips.register_datasource(spark)
    options = {"catalog": "s3spark", "uri": f"sqlite:///{tmp_path}/catalog.db",
               "warehouse": f"s3://{bucket}/wh",
               **{f"catalog.{k}": v for k, v in s3_server.properties().items()}}
    frame(spark, 0, 50).write.format("icepark").options(**options).mode("append").save("db.t")
    assert arrow_rows(table) == [row(i) for i in range(50)]
    assert_written_by_icepark(s3_server, table)
