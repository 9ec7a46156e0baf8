"""Structured Streaming into and out of icepark tables: ``writeStream.format("icepark")``,
``readStream.format("icepark")`` and ``foreach_batch_writer``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.spark.datasource.source import register
from icepark.spark.writer.write import JOB_ID_PROPERTY
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.streams.epochs import EPOCH_ID_PROPERTY, QUERY_ID_PROPERTY
from icepark.table.table import Table
from tests.spark.test_write import catalog, data_files_on_disk, live_files

pytestmark = pytest.mark.spark
__all__ = ["catalog"]

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
SPARK_SCHEMA = "id long, s string"


@pytest.fixture
def table(spark: SparkSession, catalog: BaseCatalog) -> Table:
    register(spark)
    return catalog.create_table(
        "db.t", SCHEMA, partition_spec=PartitionSpecBuilder(SCHEMA).identity("s").build())


def options(tmp_path: Path) -> dict[str, str]:
    return {"catalog": "test", "catalog.uri": f"sqlite:///{tmp_path}/catalog.db",
            "catalog.warehouse": str(tmp_path / "wh")}


def source_file(directory: Path, n: int, rows: int = 10) -> None:
    """Source file number ``n``: ids ``n*rows`` up to ``(n+1)*rows - 1``, s cycling a-c."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = list(range(n * rows, (n + 1) * rows))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                             "s": ["abc"[i % 3] for i in ids]}), directory / f"{n:04d}.parquet")


def file_stream(spark: SparkSession, directory: Path) -> DataFrame:
    return spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1) \
        .parquet(str(directory))


def run_to_end(stream: DataFrame, tmp_path: Path, checkpoint: Path, mode: str = "append") -> Any:
    query = (stream.writeStream.format("icepark").options(**options(tmp_path))
             .option("checkpointLocation", str(checkpoint)).outputMode(mode)
             .trigger(availableNow=True).start("db.t"))
    query.awaitTermination()
    return query


def ids(table: Table) -> list[int]:
    return sorted(row["id"] for f in live_files(table.refresh())
                  for row in pq.read_table(f.file_path, columns=["id"]).to_pylist())


def test_each_micro_batch_is_one_snapshot_and_a_replay_commits_nothing(
        spark: SparkSession, table: Table, tmp_path: Path) -> None:
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    for n in range(3):
        source_file(source, n)
    query = run_to_end(file_stream(spark, source), tmp_path, checkpoint)
    assert ids(table) == list(range(30))
    marks = [(s.summary.properties[QUERY_ID_PROPERTY], s.summary.properties[EPOCH_ID_PROPERTY])
             for s in table.snapshots() if s.summary is not None]
    assert marks == [(str(query.id), "0"), (str(query.id), "1"), (str(query.id), "2")]
    jobs = {job for s in table.snapshots() if s.summary is not None
            for job in s.summary.properties[JOB_ID_PROPERTY].split(",")}
    assert all(any(Path(f.file_path).name.startswith(j) for j in jobs)
               for f in live_files(table))  # the summary names the job that wrote the files
    files = data_files_on_disk(table)

    # killed after the table commit, before Spark recorded the batch: the restart replays it
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run_to_end(file_stream(spark, source), tmp_path, checkpoint)
    assert ids(table) == list(range(30)) and len(table.snapshots()) == 3
    assert data_files_on_disk(table) == files  # the replay's files are gone

    source_file(source, 3)
    run_to_end(file_stream(spark, source), tmp_path, checkpoint)
    assert ids(table) == list(range(40))
    assert table.current_snapshot().summary.properties[EPOCH_ID_PROPERTY] == "3"  # type: ignore[union-attr]


def test_complete_mode_replaces_the_rows(spark: SparkSession, table: Table,
                                         tmp_path: Path) -> None:
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source_file(source, 0)
    counts = file_stream(spark, source).groupBy("s").count().selectExpr("count AS id", "s")
    run_to_end(counts, tmp_path, checkpoint, mode="complete")
    assert counted(spark, table) == [("a", 4), ("b", 3), ("c", 3)]
    source_file(source, 1)
    run_to_end(counts, tmp_path, checkpoint, mode="complete")
    assert counted(spark, table) == [("a", 7), ("b", 7), ("c", 6)]


def counted(spark: SparkSession, table: Table) -> list[tuple[str, int]]:
    return sorted((r.s, r.id) for r in ips.read(spark, table.refresh()).collect())


def test_the_sink_refuses_batch_only_options(spark: SparkSession, table: Table,
                                             tmp_path: Path) -> None:
    source = tmp_path / "source"
    source_file(source, 0)
    query = (file_stream(spark, source).writeStream.format("icepark")
             .options(**options(tmp_path)).option("overwrite-mode", "dynamic")
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start("db.t"))
    with pytest.raises(StreamingQueryException, match="overwrite-mode are for batch writes"):
        query.awaitTermination()
    assert table.refresh().current_snapshot() is None


def read_stream(spark: SparkSession, tmp_path: Path, checkpoint: Path, out: Path,
                **extra: str) -> Any:
    """Stream the table into Parquet files at ``out`` until what it holds now is read."""
    stream = spark.readStream.format("icepark").options(**options(tmp_path)) \
        .options(**extra).load("db.t")
    query = (stream.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return query


def streamed(out: Path) -> list[int]:
    return sorted(pq.read_table(out, columns=["id"]).column("id").to_pylist())


def append(spark: SparkSession, table: Table, start: int, count: int) -> None:
    df = spark.createDataFrame([(i, "abc"[i % 3]) for i in range(start, start + count)],
                               SPARK_SCHEMA)
    ips.write(df, table.refresh())


def test_the_source_reads_the_table_then_its_appends(spark: SparkSession, table: Table,
                                                     tmp_path: Path) -> None:
    checkpoint, out = tmp_path / "read-checkpoint", tmp_path / "out"
    append(spark, table, 0, 10)
    append(spark, table, 10, 10)
    read_stream(spark, tmp_path, checkpoint, out)
    assert streamed(out) == list(range(20))
    append(spark, table, 20, 5)
    ips.rewrite_data_files(spark, table.refresh(), options={"min-input-files": "1"})
    append(spark, table, 25, 5)
    read_stream(spark, tmp_path, checkpoint, out)  # restarted: from its checkpointed offset
    assert streamed(out) == list(range(30))  # the compaction streamed nothing again

    ips.delete(spark, table.refresh(), "s = 'a'")  # whole files: a delete snapshot
    append(spark, table, 30, 5)
    with pytest.raises(StreamingQueryException, match="streaming-skip-delete-snapshots"):
        read_stream(spark, tmp_path, checkpoint, out)
    ips.delete(spark, table.refresh(), "id = 31")  # part of a file: an overwrite snapshot
    append(spark, table, 35, 5)
    skip = {"streaming-skip-delete-snapshots": "true"}
    with pytest.raises(StreamingQueryException, match="streaming-skip-overwrite-snapshots"):
        read_stream(spark, tmp_path, checkpoint, out, **skip)
    read_stream(spark, tmp_path, checkpoint, out,
                **skip, **{"streaming-skip-overwrite-snapshots": "true"})
    assert streamed(out) == list(range(40))  # appended rows, as appended


def test_admission_control_and_stream_from_timestamp(spark: SparkSession, table: Table,
                                                     tmp_path: Path) -> None:
    for start in range(0, 40, 10):
        append(spark, table, start, 10)
    snapshots = table.refresh().snapshots()
    query = read_stream(spark, tmp_path, tmp_path / "ck1", tmp_path / "out1",
                        **{"streaming-max-files-per-micro-batch": "1"})
    assert streamed(tmp_path / "out1") == list(range(40))
    files = len(live_files(table))
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(batches) == files and max(p["numInputRows"] for p in batches) <= 10

    later = snapshots[2].timestamp_ms
    if later > snapshots[1].timestamp_ms:  # distinct clock ticks
        read_stream(spark, tmp_path, tmp_path / "ck2", tmp_path / "out2",
                    **{"stream-from-timestamp": str(later)})
        assert streamed(tmp_path / "out2") == list(range(20, 40))


def test_foreach_batch_writer_writes_each_batch_once(spark: SparkSession, table: Table,
                                                     tmp_path: Path) -> None:
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    for n in range(2):
        source_file(source, n)

    def run() -> None:
        (file_stream(spark, source).writeStream
         .foreachBatch(ips.foreach_batch_writer(table))
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
         .start().awaitTermination())

    run()
    assert ids(table) == list(range(20))
    shutil.rmtree(checkpoint / "commits")
    (checkpoint / "commits").mkdir()
    run()  # every batch replayed: all already in the table
    assert ids(table) == list(range(20)) and len(table.refresh().snapshots()) == 2
