"""Merge-on-read deletes through Spark on tables in an S3 bucket (moto's server,
tests/s3/conftest.py) with stock PySpark: the matching rows' positions come from the Arrow
reader in Python tasks, and the position delete files (v2) or deletion vectors (v3) are written
to the bucket by Python tasks. Every result is checked against rows computed here and against
icepark's Arrow reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from tests.s3.conftest import S3Server
from tests.s3.spark_tables import arrow_rows, frame, row, s3_table, spark_rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_delete(spark: SparkSession, s3_server: S3Server, bucket: str,
                              tmp_path: Path, version: int) -> None:
    table = s3_table(s3_server, bucket, tmp_path, version,
                     **{"write.delete.mode": "merge-on-read"})
    ips.write(frame(spark, 0, 200), table)
    before = {t.data_file.file_path for t in table.refresh().scan().plan_files()}
    ips.delete(spark, table, "id < 30 OR amount IS NULL")
    expected = [row(i) for i in range(30, 200) if i % 10]
    assert arrow_rows(table) == expected == spark_rows(ips.read(spark, table))
    tasks = list(table.refresh().scan().plan_files())
    assert {t.data_file.file_path for t in tasks} == before  # no data file rewritten
    deletes = {d.file_path: d for t in tasks for d in t.delete_files}
    assert deletes and all(p.startswith(f"{table.location}/data/") for p in deletes)
    assert all(d.is_deletion_vector == (version == 3) for d in deletes.values())
    ips.delete(spark, table, "kind = 'c' AND id > 100")
    expected = [r for r in expected if not (r[1] == "c" and r[0] > 100)]
    assert arrow_rows(table) == expected == spark_rows(ips.read(spark, table, "id >= 0"))
