"""Iceberg file locations and Spark's ``_metadata.file_path`` map to the same key."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from icepark.errors import ValidationError
from icepark.spark.paths import file_key, file_key_column, spark_file_paths, spark_location

pytestmark = pytest.mark.spark

NAMES = ["plain", "a b", "100%", "%41 %2525", "x#y", "é ü 漢字", "a+b;c=d&e", "run[1]{a,b}?*"]


@pytest.mark.parametrize(("raw", "key"), [
    ("/wh/a b.parquet", "file:/wh/a b.parquet"),
    ("file:/wh/a b.parquet", "file:/wh/a b.parquet"),
    ("file:///wh/a%41.parquet", "file:/wh/a%41.parquet"),
    ("file://localhost/wh/x", "file:/wh/x"),
    ("//wh//db///x", "file:/wh/db/x"),
    ("s3a://bucket/wh/x", "s3://bucket/wh/x"),
    ("s3n://bucket/wh//x", "s3://bucket/wh/x"),
    ("hdfs://nn:8020/wh/x", "hdfs://nn:8020/wh/x"),
])
def test_file_key_of_iceberg_locations(raw: str, key: str) -> None:
    assert file_key(raw) == key


def test_escaped_form_decodes_percent_but_not_plus() -> None:
    assert file_key("file:/wh/a%20b%2541+c%23%C3%A9", escaped=True) == "file:/wh/a b%41+c#é"


@pytest.mark.parametrize("bad", ["", "relative/x.parquet"])
def test_unusable_locations_are_rejected(bad: str) -> None:
    with pytest.raises(ValidationError, match="location"):
        file_key(bad)


def test_spark_metadata_paths_match_iceberg_locations(spark: SparkSession,
                                                      tmp_path: Path) -> None:
    """Files under awkward names, read by Spark: the key of ``_metadata.file_path`` (in Spark
    and in Python) equals the key of the location the file was written at."""
    locations = []
    for i, name in enumerate(NAMES):
        directory = tmp_path / f"dir {name}"
        directory.mkdir()
        location = str(directory / f"{name}.parquet")
        pq.write_table(pa.table({"i": [i]}), location)
        locations.append(location)
    prefixed = ["file:" + loc if i % 2 else loc for i, loc in enumerate(locations)]
    df = spark.read.parquet(*(spark_location(p) for p in prefixed))
    rows = df.select("i", F.col("_metadata.file_path").alias("p"),
                     file_key_column(F.col("_metadata.file_path")).alias("k")).collect()
    assert len(rows) == len(NAMES)
    for row in rows:
        assert row.p != locations[row.i]  # Spark's form differs as text ...
        assert row.k == file_key(row.p, escaped=True) == file_key(prefixed[row.i])  # ... not as key


def test_column_form_of_raw_locations_equals_python(spark: SparkSession) -> None:
    raws = ["/wh/a b%41#é.parquet", "file:///wh/x+y", "s3a://b//k[1]", "file://localhost/z"]
    df = spark.createDataFrame([(r,) for r in raws], "p string")
    got = [r.k for r in df.select(file_key_column(F.col("p"), escaped=False).alias("k"))
           .collect()]
    assert got == [file_key(r) for r in raws]


def test_spark_file_paths_lists_the_metadata_strings(spark: SparkSession, tmp_path: Path) -> None:
    locations = []
    for i, name in enumerate(NAMES):
        location = str(tmp_path / f"{name}.parquet")
        pq.write_table(pa.table({"i": [i, i]}), location)
        locations.append(location)
    df = spark.read.parquet(*(spark_location(p) for p in locations))
    forms = spark_file_paths(df)
    assert set(forms) == {file_key(p) for p in locations}
    for row in df.select("i", "_metadata.file_path").collect():
        assert row.file_path in forms[file_key(locations[row.i])]
