"""The local Spark session starts, runs Python workers, and reads Parquet by field ID."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from icepark.spark.session import plan_bytes, scoped_conf

pytestmark = pytest.mark.spark


def test_session_runs_a_job_with_python_workers(spark: SparkSession) -> None:
    rdd = spark.sparkContext.parallelize(range(100), 4)
    assert rdd.map(lambda x: x * 2).sum() == 9900


def test_session_has_icepark_settings(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.parquet.fieldId.read.enabled") == "true"
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"


def test_parquet_columns_resolve_by_field_id(spark: SparkSession, tmp_path: Path) -> None:
    """A renamed column reads by its field ID: the fact the read path builds on."""
    def field(name: str, spark_type: LongType | StringType, field_id: int) -> StructField:
        return StructField(name, spark_type, True, {"parquet.field.id": field_id})

    written = StructType([field("id", LongType(), 1), field("data", StringType(), 2)])
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a"), (2, "b")], written).write.parquet(path)
    renamed = StructType([field("payload", StringType(), 2), field("key", LongType(), 1),
                          field("added", LongType(), 3)])
    rows = spark.read.schema(renamed).parquet(path).orderBy("key").collect()
    assert [tuple(r) for r in rows] == [("a", 1, None), ("b", 2, None)]


def test_scoped_settings_return_the_sessions_own_when_the_last_block_ends(
        spark: SparkSession) -> None:
    key, other = "spark.sql.adaptive.enabled", "spark.icepark.test.scoped"
    own = spark.conf.get(key)
    first, second = scoped_conf(spark, {key: "false", other: "x"}), scoped_conf(
        spark, {key: "false"})
    first.__enter__()
    second.__enter__()  # overlapping blocks, as two threads' jobs would be
    assert (spark.conf.get(key), spark.conf.get(other)) == ("false", "x")
    first.__exit__(None, None, None)  # the first to start ends first: still held
    assert spark.conf.get(key) == "false" and spark.conf.get(other, None) is None
    second.__exit__(None, None, None)
    assert spark.conf.get(key) == own
    with pytest.raises(RuntimeError), scoped_conf(spark, {key: "false"}):
        raise RuntimeError  # restored after an error too
    assert spark.conf.get(key) == own
    spark.conf.set(other, "y")
    try:
        with scoped_conf(spark, {other: "Y"}):  # already so: left alone
            assert spark.conf.get(other) == "y"
        assert spark.conf.get(other) == "y"
    finally:
        spark.conf.unset(other)


def test_plan_bytes_is_the_optimizers_estimate(spark: SparkSession) -> None:
    assert plan_bytes(spark.range(10)) == 80  # Range: eight bytes a row
    assert plan_bytes(spark.range(10).where("id > 5")) == 80  # a filter does not shrink it
    rdd = spark.createDataFrame([(i,) for i in range(10)], "n long")  # an RDD: unknown size
    assert plan_bytes(rdd) == 2**63 - 1
