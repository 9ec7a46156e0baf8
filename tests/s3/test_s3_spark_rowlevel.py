"""Copy-on-write row-level operations (delete, update, merge), compaction and orphan removal
through Spark on a table in an S3 bucket (moto's server, tests/s3/conftest.py) with stock
PySpark: the rows are read in Python tasks by the Arrow reader and written by icepark's writer
(:mod:`icepark.spark.storage`). Every result is checked against rows computed here and against
icepark's Arrow reader."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from tests.s3.conftest import S3Server
from tests.s3.spark_tables import (
    KINDS,
    arrow_rows,
    assert_written_by_icepark,
    frame,
    row,
    s3_table,
    spark_rows,
)

pytestmark = pytest.mark.spark


def test_row_level_and_compaction(spark: SparkSession, s3_server: S3Server, bucket: str,
                                  tmp_path: Path) -> None:
    table = s3_table(s3_server, bucket, tmp_path)  # copy-on-write, the default
    ips.write(frame(spark, 0, 60), table)
    ips.write(frame(spark, 60, 120), table)
    ips.delete(spark, table, "id < 10")
    expected = {i: row(i) for i in range(10, 120)}
    assert arrow_rows(table) == sorted(expected.values())
    ips.update(spark, table, set={"amount": "-1"}, where="id >= 100")
    expected.update({i: (i, KINDS[i % 3], -1) for i in range(100, 120)})
    assert arrow_rows(table) == sorted(expected.values())
    source = spark.sql("SELECT id, 'z' AS kind, id AS amount FROM range(110, 130)")
    (ips.merge(table, source, on="t.id = s.id")
     .when_matched_update(set={"amount": "s.amount * 2"})
     .when_not_matched_insert_all().execute())
    expected.update({i: (i, KINDS[i % 3], i * 2) for i in range(110, 120)})
    expected.update({i: (i, "z", i) for i in range(120, 130)})
    assert arrow_rows(table) == sorted(expected.values())
    before = len(list(table.refresh().scan().plan_files()))
    ips.rewrite_data_files(spark, table, options={"min-input-files": "2"})
    assert len(list(table.refresh().scan().plan_files())) < before
    assert arrow_rows(table) == sorted(expected.values()) == spark_rows(ips.read(spark, table))
    assert_written_by_icepark(s3_server, table)
    # the files compaction replaced stay in the history; a stray object is an orphan
    stray = f"{table.location}/data/kind=a/stray.parquet"
    s3_server.client().put_object(Bucket=bucket, Key=stray.removeprefix(f"s3://{bucket}/"),
                                  Body=b"x")
    future = int(time.time() * 1000) + 3_600_000
    found = ips.remove_orphan_files(spark, table, older_than_ms=future, dry_run=True)
    assert found.orphan_file_locations == (stray,)
