"""Streams, changes and metadata maintenance through Spark on a table in an S3 bucket (moto's
server, tests/s3/conftest.py) with stock PySpark: the ``icepark`` stream sink given the
catalog and its S3 properties as options (the stream source reads as batch reads do, in
tests/s3/test_s3_spark.py), the changelog of a merge-on-read delete,
``rewrite_position_delete_files`` and ``rewrite_manifests``. Every result is checked against
rows computed here and against icepark's Arrow reader."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from tests.s3.conftest import S3Server
from tests.s3.spark_tables import arrow_rows, assert_written_by_icepark, row, s3_table

pytestmark = pytest.mark.spark


def _source_file(directory: Path, start: int, stop: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rows = [row(i) for i in range(start, stop)]
    pq.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                             "kind": [r[1] for r in rows],
                             "amount": pa.array([r[2] for r in rows], pa.int64())}),
                   directory / f"{start:05d}.parquet")


def test_streams_changes_and_maintenance(spark: SparkSession, s3_server: S3Server, bucket: str,
                                         tmp_path: Path) -> None:
    table = s3_table(s3_server, bucket, tmp_path, 2, **{"write.delete.mode": "merge-on-read"})
    ips.register_datasource(spark)
    options = {"catalog": "s3spark", "uri": f"sqlite:///{tmp_path}/catalog.db",
               "warehouse": f"s3://{bucket}/wh",
               **{f"catalog.{k}": v for k, v in s3_server.properties().items()}}

    # the sink: one snapshot per micro-batch, written to the bucket by icepark's writer
    source = tmp_path / "source"
    for start in (0, 40):
        _source_file(source, start, start + 40)
    query = (spark.readStream.schema("id long, kind string, amount long")
             .option("maxFilesPerTrigger", 1).parquet(str(source))
             .writeStream.format("icepark").options(**options)
             .option("checkpointLocation", str(tmp_path / "sink-checkpoint"))
             .trigger(availableNow=True).start("db.t"))
    query.awaitTermination()
    assert arrow_rows(table) == [row(i) for i in range(80)]
    assert len(table.snapshots()) == 2
    assert_written_by_icepark(s3_server, table)

    # the changelog of a merge-on-read delete (position delete files in the bucket)
    streamed = table.refresh().current_snapshot()
    assert streamed is not None
    ips.delete(spark, table, "id < 5 OR id >= 75")
    changed = ips.changes(spark, table.refresh(), start_snapshot_id=streamed.snapshot_id)
    assert sorted((r["_change_type"], r["id"]) for r in changed.collect()) == \
        [("DELETE", i) for i in (*range(5), *range(75, 80))]
    expected = [row(i) for i in range(5, 75)]

    # compaction of those position delete files, then of the manifests: no row changes
    tasks = list(table.refresh().scan().plan_files())
    deletes = {d.file_path for t in tasks for d in t.delete_files}
    assert len(deletes) == sum(1 for t in tasks if t.delete_files)  # one per data file
    rewritten = ips.rewrite_position_delete_files(spark, table,
                                                  options={"rewrite-all": "true"})
    assert rewritten.rewritten_delete_files_count == len(deletes)
    after = {d.file_path for t in table.refresh().scan().plan_files() for d in t.delete_files}
    assert after and not after & deletes
    assert all(p.startswith(f"{table.location}/data/") for p in after)
    manifests = ips.rewrite_manifests(spark, table.refresh())
    assert manifests.rewritten_manifests_count > 1 and manifests.added_manifests_count >= 1
    assert arrow_rows(table) == expected
    assert sorted(tuple(r) for r in ips.read(spark, table.refresh()).collect()) == expected
