"""Statistics files in table metadata: registered, kept by every other commit, dropped and
deleted with their snapshot.

Spec, *Table Statistics*: "A table can contain many statistics files associated with different
table snapshots", each a Puffin file whose entry records its size, "Total size of the
statistics file's footer" and blob metadata; *Partition Statistics*: "Each table snapshot may be
associated with at most one partition statistics file".
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.puffin.reader import read_file_metadata
from icepark.io.puffin.writer import PuffinWriter, WrittenFile
from icepark.spec.metadata import PartitionStatisticsFile
from icepark.spec.schema import Schema
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_json
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.change.statistics import statistics_file
from icepark.table.table import Table
from tests.table.committer import FAST_RETRIES, InMemoryCommitter

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))


@pytest.fixture(params=[2, 3])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    committer = InMemoryCommitter()
    metadata, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"),
                                            format_version=request.param,
                                            properties=FAST_RETRIES)
    table = Table(("db", "t"), committer.create(("db", "t"), metadata), ArrowFileIO(),
                  committer)
    return append(table, 3)


def append(table: Table, n: int) -> Table:
    table.refresh().append(pa.table({"id": pa.array(range(n), pa.int64()), "k": ["x"] * n}))
    return table.refresh()


def puffin(table: Table, name: str, snapshot_id: int) -> WrittenFile:
    """A statistics file with one blob on column 1 (an opaque payload: readers may ignore
    statistics, and none here is interpreted)."""
    with PuffinWriter(table.io, f"{table.location}/metadata/{name}.stats") as writer:
        writer.add_blob("icepark-test-ndv-v1", b"\x00\x01\x02", fields=(1,),
                        snapshot_id=snapshot_id, sequence_number=1,
                        properties={"ndv": "3"})
    return writer.result


def head(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def test_statistics_survive_every_other_kind_of_commit(table: Table) -> None:
    first = head(table)
    written = puffin(table, "s1", first)
    entry = statistics_file(written, first)
    assert entry.file_footer_size_in_bytes == written.footer_size
    assert read_file_metadata(table.io, entry.statistics_path).blobs[0].fields == (1,)
    partition = PartitionStatisticsFile(first, f"{table.location}/metadata/p1.parquet", 10)
    with table.update_statistics() as update:
        update.set_statistics(entry).set_partition_statistics(partition)
    table = table.refresh()
    assert table.metadata.statistics == (entry,)
    assert table.metadata.partition_statistics == (partition,)
    # appends, a delete, schema, properties, a branch and a tag leave them as they were
    table = append(table, 2)
    table.delete_files([t.data_file for t in table.scan().plan_files()
                        if t.data_file.record_count == 2])
    with table.refresh().update_schema() as schema:
        schema.add_column("note", STRING)
    table = table.refresh().set_properties({"owner": "ana"})
    table.manage_snapshots().create_branch("b").create_tag("t", first).commit()
    table = append(table, 1)
    assert table.metadata.statistics == (entry,)
    assert table.metadata.partition_statistics == (partition,)
    text = table_metadata_to_json(table.metadata)
    assert table_metadata_from_json(text).statistics == (entry,)
    # one file per snapshot: a new one replaces it; removing unregisters it
    replacement = statistics_file(puffin(table, "s2", first), first)
    table.update_statistics().set_statistics(replacement).commit()
    assert table.refresh().metadata.statistics == (replacement,)
    table.refresh().update_statistics().remove_statistics(first).commit()
    assert table.refresh().metadata.statistics == ()


def test_expiry_drops_the_statistics_of_expired_snapshots_and_deletes_their_files(
        table: Table) -> None:
    first = head(table)
    old = statistics_file(puffin(table, "old", first), first)
    table.update_statistics().set_statistics(old).commit()
    table = append(table, 2)
    current = head(table)
    new = statistics_file(puffin(table, "new", current), current)
    table.update_statistics().set_statistics(new).commit()
    result = table.refresh().expire_snapshots(snapshot_ids=[first])
    assert result.deleted_statistics_files == (old.statistics_path,)
    assert not Path(old.statistics_path).exists() and Path(new.statistics_path).exists()
    assert table.refresh().metadata.statistics == (new,)


def test_statistics_must_name_a_snapshot_of_the_table(table: Table) -> None:
    entry = statistics_file(puffin(table, "s", 42), 42)
    with pytest.raises(ValidationError, match="snapshot 42 is not in the table"):
        table.update_statistics().set_statistics(entry).commit()
    first = head(table)
    with pytest.raises(ValidationError, match="both set and remove"):
        table.update_statistics().set_statistics(statistics_file(
            puffin(table, "t", first), first)).remove_statistics(first).commit()
