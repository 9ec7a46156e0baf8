"""The ``icepark`` data source: ``df.write.format("icepark")`` appends and overwrites."""

from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from icepark.catalog import BaseCatalog
from icepark.errors import CommitFailed
from icepark.spark.datasource.source import register
from icepark.spark.writer.tasks import WriteTask, delete_job_files, write_batches
from icepark.spark.writer.write import JOB_ID_PROPERTY
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.table import Table
from tests.spark.test_write import catalog, data_files_on_disk, expected, rows

pytestmark = pytest.mark.spark
__all__ = ["catalog"]

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))


@pytest.fixture
def table(spark: SparkSession, catalog: BaseCatalog) -> Table:
    register(spark)
    return catalog.create_table(
        "db.t", SCHEMA, partition_spec=PartitionSpecBuilder(SCHEMA).identity("s").build())


def writer(df: DataFrame, tmp_path: Path, mode: str) -> DataFrameWriter:
    return (df.write.format("icepark").option("catalog", "test")
            .option("catalog.uri", f"sqlite:///{tmp_path}/catalog.db")
            .option("catalog.warehouse", str(tmp_path / "wh")).mode(mode))


def test_append_and_overwrite(spark: SparkSession, table: Table, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a"), (2, "b"), (3, "a")], "id long, s string")
    writer(df, tmp_path, "append").option("snapshot-property.app", "ds").save("db.t")
    assert rows(table) == expected([{"id": 1, "s": "a"}, {"id": 2, "s": "b"},
                                    {"id": 3, "s": "a"}])
    summary = table.current_snapshot().summary.properties  # type: ignore[union-attr]
    assert summary["app"] == "ds" and JOB_ID_PROPERTY in summary

    new = spark.createDataFrame([(9, "a")], "id int, s string")  # int into long
    writer(new, tmp_path, "overwrite").option("overwrite-mode", "dynamic").save("db.t")
    assert rows(table) == expected([{"id": 2, "s": "b"}, {"id": 9, "s": "a"}])

    writer(spark.createDataFrame([(10, "b")], "id long, s string"), tmp_path, "overwrite") \
        .option("overwrite-filter", "s = 'b'").save("db.t")
    assert rows(table) == expected([{"id": 10, "s": "b"}, {"id": 9, "s": "a"}])

    writer(spark.createDataFrame([(7, "z")], "id long, s string"), tmp_path,
           "overwrite").save("db.t")
    assert rows(table) == expected([{"id": 7, "s": "z"}])


def test_branch(spark: SparkSession, table: Table, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a")], "id long, s string")
    writer(df, tmp_path, "append").option("branch", "dev").save("db.t")
    assert table.refresh().current_snapshot() is None
    assert rows(table, "dev") == expected([{"id": 1, "s": "a"}])


def test_schema_mismatch_fails_before_any_file(spark: SparkSession, table: Table,
                                               tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a", 2)], "id long, s string, extra int")
    with pytest.raises(Exception, match=r"Column\(s\) 'extra' are not in the table schema; "
                       r"add them first with update_schema\(\)\.union_by_name\(\) or drop "
                       "them"):  # the data source cannot merge schemas: no merge_schema here
        writer(df, tmp_path, "append").save("db.t")
    assert data_files_on_disk(table) == []


def test_task_failure_aborts_and_deletes(spark: SparkSession, table: Table,
                                         tmp_path: Path) -> None:
    def fail_on_77(x: int) -> int:
        if x == 77:
            raise RuntimeError("injected failure")
        return x

    boom = F.udf(fail_on_77, T.LongType())
    df = spark.range(0, 100, numPartitions=4).select(
        boom("id").alias("id"), (F.col("id") % 3).cast("string").alias("s"))
    with pytest.raises(Exception, match="injected failure"):
        writer(df, tmp_path, "append").save("db.t")
    # Spark reports the failure while the job's other tasks may still run (a cancelled task
    # is not stopped): one that writes its files after the driver's listing deletes them
    # itself once they are written, so no file is left once the tasks end
    deadline = time.monotonic() + 120
    while data_files_on_disk(table) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert data_files_on_disk(table) == []
    assert table.refresh().current_snapshot() is None


def test_a_task_finishing_after_the_abort_deletes_its_files(table: Table) -> None:
    """The driver marks the job aborted before it lists the job's files; a task that writes
    its files after that listing finds the mark and deletes them."""
    task = WriteTask(uuid.uuid4().hex, table.location, table.properties, table.schema(),
                     table.spec())
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})
    assert delete_job_files(table.io, task.data_path, task.job_id, tasks_may_run=True,
                            settle_seconds=0, max_rounds=1) == 0  # nothing written yet
    with pytest.raises(CommitFailed, match=f"{task.job_id} was aborted"):
        write_batches(task, [batch], table.io)
    assert data_files_on_disk(table) == []
    # after a job whose tasks all ended (a failed commit) no mark is left: files stay
    other = dataclasses.replace(task, job_id=uuid.uuid4().hex)
    delete_job_files(table.io, other.data_path, other.job_id, settle_seconds=0, max_rounds=1)
    written = write_batches(other, [batch], table.io)
    assert sorted(str(p) for p in data_files_on_disk(table)) == sorted(
        f.file_path.removeprefix("file://") for f in written)
