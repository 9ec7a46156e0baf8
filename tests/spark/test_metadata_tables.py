"""Metadata tables as Spark DataFrames hold the same rows as the Arrow tables."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icepark.io.fileio import ArrowFileIO
from icepark.spark.metadata_tables import metadata_table, spark_compatible
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, UUID, NestedField
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.inspect import tables as inspect
from icepark.table.snapshot.append import FastAppend
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.table import Table
from tests.table.committer import InMemoryCommitter

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG),
                   NestedField.optional(2, "category", STRING),
                   NestedField.optional(3, "u", UUID))


def small_table(location: str) -> Table:
    """Two appends and a position delete file; bounds of every column, a uuid among them."""
    md, _ = MetadataBuilder.new_table(
        SCHEMA, location, spec=PartitionSpecBuilder(SCHEMA).identity("category").build())
    committer = InMemoryCommitter()
    table = Table(("db", "t"), committer.create(("db", "t"), md), ArrowFileIO(), committer)
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    bounds = {1: to_bytes(LONG, 1), 2: to_bytes(STRING, "a"), 3: to_bytes(UUID, u)}

    def data(name: str, category: str, content: FileContent = FileContent.DATA) -> DataFile:
        return DataFile(f"{location}/data/{name}.parquet", FileFormat.PARQUET, (category,), 2,
                        100, content, column_sizes={1: 10, 2: 20}, value_counts={1: 2, 2: 2},
                        lower_bounds=bounds, upper_bounds=bounds, split_offsets=(4,))

    table.commit(FastAppend(table.io, table.metadata).append_files(
        [data("a", "a"), data("b", "b")]))
    table.commit(FastAppend(table.io, table.metadata).append_file(data("c", "a")))
    table.commit(RowDelta(table.io, table.metadata).add_deletes(
        data("pos", "a", FileContent.POSITION_DELETES)))
    return table


def by_path(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["file_path"])


def test_files_dataframe_has_the_arrow_rows(spark: SparkSession, tmp_path: Path) -> None:
    table = small_table(str(tmp_path))
    arrow = inspect.metadata_table(table, "files")
    df = metadata_table(spark, table, "files")
    assert df.columns == arrow.column_names
    assert df.count() == arrow.num_rows == 4
    assert by_path(df.toArrow().to_pylist()) == by_path(spark_compatible(arrow).to_pylist())
    first = table.snapshots()[0].snapshot_id
    at_first = metadata_table(spark, table, "data_files", snapshot_id=first)
    assert sorted(r.file_path.rsplit("/", 1)[1] for r in at_first.collect()) == [
        "a.parquet", "b.parquet"]


def test_timestamps_and_partitions_survive_the_conversion(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    table = small_table(str(tmp_path))
    snapshots = metadata_table(spark, table, "snapshots").toArrow().to_pylist()
    assert snapshots == inspect.snapshots(table).to_pylist()
    partitions = metadata_table(spark, table, "partitions").orderBy("partition.category")
    assert [(r.partition.category, r.record_count, r.position_delete_file_count)
            for r in partitions.collect()] == [("a", 4, 1), ("b", 2, 0)]
