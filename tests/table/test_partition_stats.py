"""Partition statistics from a snapshot's manifests (spec, *Partition Statistics*): one row per
partition of a spec, in the unified partition type, sorted nulls first; counts of data files,
position delete files, deletion vectors and equality delete files; when each partition last
changed; the file's schema and field IDs by format version."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.metadata import FormatVersion
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.snapshots import Snapshot
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.inspect.files import partition_coercer, table_partition_type
from icepark.table.maintenance.partition_stats import (
    PartitionStats,
    collect_partition_stats,
    partition_stats_location,
    partition_stats_schema,
    read_partition_stats,
    write_partition_stats,
)
from icepark.table.table import Table
from tests.table.committer import FAST_RETRIES, InMemoryCommitter
from tests.table.producer_fixtures import SCHEMA, data_file

POS = FileContent.POSITION_DELETES
EQ = FileContent.EQUALITY_DELETES


def make_table(tmp_path: Path, version: FormatVersion) -> Table:
    committer = InMemoryCommitter()
    spec = PartitionSpecBuilder(SCHEMA).identity("category").build()
    metadata, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"), spec=spec,
                                            format_version=version, properties=FAST_RETRIES)
    return Table(("db", "t"), committer.create(("db", "t"), metadata), ArrowFileIO(),
                 committer)


def stats_of(table: Table, snapshot: Snapshot | None = None) -> list[PartitionStats]:
    md = table.refresh().metadata
    snapshot = snapshot or md.current_snapshot()
    assert snapshot is not None
    ptype = table_partition_type(md)
    return collect_partition_stats(table.io, md, snapshot, ptype, partition_coercer(md, ptype))


def head(table: Table) -> Snapshot:
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None
    return snapshot


def dv(path: str, category: str, records: int, data: str) -> DataFile:
    return replace(data_file(path, category, records, content=POS),
                   file_format=FileFormat.PUFFIN, referenced_data_file=data,
                   content_offset=4, content_size_in_bytes=40)


def test_counts_deletes_and_last_update_per_partition(tmp_path: Path) -> None:
    table = make_table(tmp_path, 2)
    table.append_data_files([data_file("/d/a1", "a", 10, size=100),
                             data_file("/d/b1", "b", 5, size=50),
                             data_file("/d/n1", None, 7, size=70)])
    first = head(table)
    table.append_data_files([data_file("/d/a2", "a", 20, size=200)])
    second = head(table)
    (table.new_row_delta()
     .add_deletes(data_file("/d/apos", "a", records=3, content=POS))
     .add_deletes(data_file("/d/beq", "b", records=2, content=EQ, equality_ids=(1,)))
     .commit())
    third = head(table)
    rows = stats_of(table)
    # sorted by partition, nulls first; a partition's last update is its newest commit
    assert [(r.partition, r.spec_id) for r in rows] == [((None,), 0), (("a",), 0), (("b",), 0)]
    null, a, b = rows
    assert (null.data_record_count, null.data_file_count, null.total_data_file_size_in_bytes,
            null.last_updated_snapshot_id, null.last_updated_at) == (
        7, 1, 70, first.snapshot_id, first.timestamp_ms)
    assert null.total_record_count == 7  # no deletes: the data records are the rows
    assert (a.data_record_count, a.data_file_count, a.total_data_file_size_in_bytes) == (
        30, 2, 300)
    assert (a.position_delete_record_count, a.position_delete_file_count, a.dv_count) == (
        3, 1, 0)
    assert a.total_record_count is None  # a position delete file: unknown without reading
    assert (b.equality_delete_record_count, b.equality_delete_file_count) == (2, 1)
    assert a.last_updated_snapshot_id == b.last_updated_snapshot_id == third.snapshot_id
    # an older snapshot's statistics describe that snapshot only
    old = stats_of(table, second)
    assert [(r.partition, r.data_file_count, r.last_updated_snapshot_id) for r in old] == [
        ((None,), 1, first.snapshot_id), (("a",), 2, second.snapshot_id),
        (("b",), 1, first.snapshot_id)]


def test_deletion_vectors_and_deleted_files(tmp_path: Path) -> None:
    table = make_table(tmp_path, 3)
    table.append_data_files([data_file("/d/a1", "a", 10), data_file("/d/b1", "b", 5)])
    table.new_row_delta().add_deletes(dv("/d/a1.puffin", "a", 4, "/d/a1")).commit()
    table.refresh().delete_files(["/d/b1"])
    deleted = head(table)
    rows = stats_of(table)
    a, b = rows
    # "position_delete_record_count": deletes "across position delete files and deletion
    # vectors"; "position_delete_file_count": "ignoring deletion vectors"
    assert (a.position_delete_record_count, a.position_delete_file_count, a.dv_count) == (
        4, 0, 1)
    assert a.total_record_count == 6  # only deletion vectors: records minus deleted positions
    # every file of b was deleted: a row of zeros, last updated by the delete
    assert (b.data_file_count, b.data_record_count, b.last_updated_snapshot_id) == (
        0, 0, deleted.snapshot_id)


def test_specs_are_unified_and_rows_are_per_spec(tmp_path: Path) -> None:
    table = make_table(tmp_path, 2)
    table.append_data_files([data_file("/d/a1", "a", 10)])
    with table.refresh().update_spec() as spec:
        spec.add_field("id", "bucket[4]")
    table.refresh().append_data_files([data_file("/d/a2", "a", 3, spec_id=1, partition=("a", 2)),
                             data_file("/d/a3", "a", 1, spec_id=1, partition=("a", None))])
    rows = stats_of(table)
    ptype = table_partition_type(table.metadata)
    assert [f.field_id for f in ptype.fields] == [1000, 1001]
    schema = partition_stats_schema(ptype, 2)
    assert schema.find_field("partition").field_type == ptype
    # spec 0's "a" and spec 1's ("a", null) are different rows: the key is (spec, partition)
    assert [(r.partition, r.spec_id, r.data_record_count) for r in rows] == [
        (("a", None), 0, 10), (("a", None), 1, 1), (("a", 2), 1, 3)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_file_schema_round_trip_and_field_ids(tmp_path: Path, version: FormatVersion) -> None:
    table = make_table(tmp_path, version)
    table.append_data_files([data_file("/d/a1", "a", 10), data_file("/d/b1", "b", 5)])
    md, snapshot = table.refresh().metadata, head(table)
    ptype = table_partition_type(md)
    schema = partition_stats_schema(ptype, version)
    rows = stats_of(table)
    location = partition_stats_location(md, snapshot.snapshot_id)
    assert location.startswith(f"{md.location}/metadata/partition-stats-{snapshot.snapshot_id}-")
    assert location.endswith(".parquet")
    entry = write_partition_stats(table.io, location, snapshot.snapshot_id, schema, rows)
    assert entry.file_size_in_bytes == Path(location).stat().st_size
    arrow = read_partition_stats(table.io, entry)
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in arrow.schema]
    assert ids == ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] + ([13] if version >= 3 else []))
    required = {f.name for f in arrow.schema if not f.nullable}
    optional_before_v3 = {"position_delete_record_count", "position_delete_file_count",
                          "equality_delete_record_count", "equality_delete_file_count"}
    assert required >= {"partition", "spec_id", "data_record_count", "data_file_count",
                        "total_data_file_size_in_bytes"}
    assert not required & {"total_record_count", "last_updated_at", "last_updated_snapshot_id"}
    # "optional" in v1 and v2, "required" in v3
    assert (required & optional_before_v3) == (optional_before_v3 if version >= 3 else set())
    partition_ids = [int(f.metadata[b"PARQUET:field_id"])
                     for f in arrow.schema.field("partition").type]
    assert partition_ids == [1000]
    parquet = pq.ParquetFile(location).schema_arrow
    assert parquet.field("partition").type.field(0).name == "category"
    assert [(r["partition"], r["data_record_count"]) for r in arrow.to_pylist()] == [
        ({"category": "a"}, 10), ({"category": "b"}, 5)]


def test_unpartitioned_tables_have_no_partition_statistics(tmp_path: Path) -> None:
    md, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"))
    with pytest.raises(ValidationError, match="unpartitioned"):
        partition_stats_schema(table_partition_type(md), 2)
