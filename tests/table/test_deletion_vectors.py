"""Deletion vectors in commits, planning and the Arrow reader, and the bad input around them.

Spec (v3), *Scan Planning*: "A deletion vector must be applied to a data file when all of the
following are true: The data file's ``file_path`` is equal to the deletion vector's
``referenced_data_file``; The data file's data sequence number is *less than or equal to* the
deletion vector's data sequence number; The data file's partition (both spec and partition
values) is equal to the deletion vector's partition", and a position delete file applies only
when "There is no deletion vector that must be applied to the data file". *Delete Formats*:
"Position delete files must not be added to v3 tables" and "When removing a data file,
writers must also remove any deletion vector that applies to that data file".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.errors import CorruptFile, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.io.parquet.delete_writer import PositionDeleteWriter
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spec.manifest import DataFile, FileContent, FileFormat, ManifestContent
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.inspect import files as inspect
from icepark.table.scan.delete_index import DeleteIndex
from icepark.table.table import Table
from tests.table.committer import FAST_RETRIES, InMemoryCommitter

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))


def make(committer: InMemoryCommitter, tmp_path: Path, format_version: Any = 3) -> Table:
    spec = PartitionSpecBuilder(SCHEMA).identity("k").build()
    metadata, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"), spec=spec,
                                            format_version=format_version,
                                            properties=FAST_RETRIES)
    return Table(("db", "t"), committer.create(("db", "t"), metadata), ArrowFileIO(),
                 committer)


def seeded(committer: InMemoryCommitter, tmp_path: Path, format_version: Any = 3) -> Table:
    """Two data files: ids 0-9 in k=a, 10-14 in k=b."""
    table = make(committer, tmp_path, format_version)
    table.append(pa.table({"id": pa.array(range(10), pa.int64()), "k": ["a"] * 10}))
    table.refresh().append(pa.table({"id": pa.array(range(10, 15), pa.int64()),
                                     "k": ["b"] * 5}))
    return table.refresh()


def data_files(table: Table) -> dict[str, DataFile]:
    """The live data files by partition value."""
    return {t.data_file.partition[0]: t.data_file for t in table.scan().plan_files()}


def vectors(table: Table, positions: dict[str, list[int]], name: str = "dv") -> list[DataFile]:
    """Deletion vectors (one Puffin file) deleting ``positions`` of the files of partitions."""
    files = data_files(table)
    written = write_deletion_vectors(
        table.io, f"{table.location}/data/{name}.puffin",
        {files[k].file_path: p for k, p in positions.items()})
    return written.data_files({f.file_path: f for f in files.values()})


def ids(table: Table, **scan: Any) -> list[int]:
    return sorted(table.refresh().scan(**scan).to_arrow().column("id").to_pylist())


def live_deletes(table: Table) -> list[DataFile]:
    table = table.refresh()
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    return [e.data_file for m in read_manifest_list(table.io, snapshot.manifest_list)
            if m.content is ManifestContent.DELETES
            for e in read_manifest(table.io, m, discard_deleted=True)]


def test_vectors_delete_their_positions_in_the_arrow_reader(committer: InMemoryCommitter,
                                                            tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    delta = table.new_row_delta()
    for dv in vectors(table, {"a": [0, 9], "b": [1]}):
        delta.add_deletes(dv)
    delta.commit()
    assert ids(table) == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14]
    assert ids(table, row_filter="k = 'b'") == [10, 12, 13, 14]
    got = table.refresh().scan().to_arrow(["_pos", "_row_id"]).to_pylist()
    assert {(r["id"], r["_pos"], r["_row_id"]) for r in got if r["id"] in (1, 12)} == {
        (1, 1, 1), (12, 2, 12)}
    summary = table.refresh().current_snapshot().summary  # type: ignore[union-attr]
    assert summary is not None
    assert (summary.properties["added-dvs"], summary.properties["added-delete-files"],
            summary.properties["added-position-deletes"],
            summary.properties["total-delete-files"]) == ("2", "2", "3", "2")
    assert "added-position-delete-files" not in summary.properties
    # both vectors share one Puffin file, each with its own blob
    dvs = live_deletes(table)
    assert len({d.file_path for d in dvs}) == 1 and len({d.content_offset for d in dvs}) == 2


def test_a_vector_replaced_in_a_row_delta_leaves_only_the_new_one(committer: InMemoryCommitter,
                                                                  tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    first = vectors(table, {"a": [0], "b": [0]})
    delta = table.new_row_delta()
    for dv in first:
        delta.add_deletes(dv)
    delta.commit()
    table = table.refresh()
    # replace the vector of the 'a' file only: the one of 'b' shares the Puffin file and stays
    merged = vectors(table, {"a": [0, 1, 2]}, "dv2")
    old_a = next(d for d in first if d.referenced_data_file == merged[0].referenced_data_file)
    table.new_row_delta().add_deletes(merged[0]).remove_deletes(old_a).commit()
    assert ids(table) == [3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
    live = live_deletes(table)
    assert sorted(d.record_count for d in live) == [1, 3]
    summary = table.refresh().current_snapshot().summary  # type: ignore[union-attr]
    assert summary is not None
    assert (summary.properties["added-dvs"], summary.properties["removed-dvs"]) == ("1", "1")


def test_removing_a_data_file_removes_its_vector(committer: InMemoryCommitter,
                                                 tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    delta = table.new_row_delta()
    for dv in vectors(table, {"a": [0], "b": [0]}):
        delta.add_deletes(dv)
    delta.commit()
    table = table.refresh()
    table.delete("k = 'a'")  # the whole 'a' file
    live = live_deletes(table)
    assert [d.referenced_data_file for d in live] == [data_files(table.refresh())["b"].file_path]
    assert ids(table) == [11, 12, 13, 14]


def test_a_vector_replaces_position_deletes_of_an_upgraded_table(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    """A v2 position delete file stays valid after the upgrade; once a vector is written for
    its data file, readers "can safely ignore matching position delete files"."""
    table = seeded(committer, tmp_path, format_version=2)
    a = data_files(table)["a"]
    spec = table.spec()
    writer = PositionDeleteWriter(table.io, lambda: f"{table.location}/data/pos.parquet",
                                  table.schema(), spec, a.partition, table.properties)
    writer.write(pa.record_batch({"file_path": [a.file_path] * 2,
                                  "pos": pa.array([3, 4], pa.int64())}))
    [pos] = writer.close()
    table.new_row_delta().add_deletes(pos).commit()
    table = table.refresh().upgrade_format_version(3).refresh()
    assert ids(table)[:4] == [0, 1, 2, 5]
    with pytest.raises(ValidationError, match="Position delete files must not be added"):
        table.new_row_delta().add_deletes(replace(pos, file_path=f"{pos.file_path}.x"))
    # a vector holding only position 7: the position delete file no longer applies
    [dv] = vectors(table, {"a": [7]})
    table.new_row_delta().add_deletes(dv).commit()
    assert ids(table)[:8] == [0, 1, 2, 3, 4, 5, 6, 8]


def test_a_vector_applies_by_path_sequence_number_and_partition() -> None:
    """"The data file's data sequence number is less than or equal to the deletion vector's
    data sequence number", and a position delete file applies only where no vector does."""
    data = DataFile("/d/a.parquet", FileFormat.PARQUET, ("a",), 10, 100)
    dv = DataFile("/d/x.puffin", FileFormat.PUFFIN, ("a",), 2, 50,
                  FileContent.POSITION_DELETES, referenced_data_file=data.file_path,
                  content_offset=4, content_size_in_bytes=40)
    pos = DataFile("/d/p.parquet", FileFormat.PARQUET, ("a",), 3, 60,
                   FileContent.POSITION_DELETES)
    index = DeleteIndex.build([(3, dv), (4, pos)])
    assert index.for_data_file(3, data) == (dv,)  # equal sequence numbers: the vector
    assert index.for_data_file(4, data) == (pos,)  # newer than the vector: the file only
    assert index.for_data_file(2, replace(data, file_path="/d/b.parquet")) == (pos,)
    assert DeleteIndex.build([(3, dv)]).deletion_vectors == {data.file_path: dv}


def test_format_versions_refuse_the_other_kind_of_position_deletes(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    v3 = seeded(committer, tmp_path)
    [dv] = vectors(v3, {"a": [0]})
    v2 = seeded(InMemoryCommitter(), tmp_path / "v2", format_version=2)
    with pytest.raises(ValidationError, match="Deletion vectors are added in v3"):
        v2.new_row_delta().add_deletes(dv)


# --------------------------------------------------------------------------------- bad input


def test_two_vectors_for_one_data_file_are_a_corrupt_table(committer: InMemoryCommitter,
                                                           tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [one] = vectors(table, {"a": [0]}, "one")
    [two] = vectors(table, {"a": [1]}, "two")
    table.new_row_delta().add_deletes(one).add_deletes(two).commit()
    with pytest.raises(CorruptFile, match=r"Two deletion vectors for data file .*one\.puffin"
                                          r".*two\.puffin"):
        ids(table)


def test_a_vector_for_a_data_file_not_in_the_table_is_corrupt(committer: InMemoryCommitter,
                                                              tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [dv] = vectors(table, {"a": [0]})
    ghost = replace(dv, referenced_data_file=f"{table.location}/data/ghost.parquet")
    table.new_row_delta().add_deletes(ghost).commit()
    with pytest.raises(CorruptFile, match=r"references data file .*ghost\.parquet, which is "
                                          "not a live data file"):
        ids(table)


def test_a_vector_in_another_partition_than_its_data_file_is_corrupt(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [dv] = vectors(table, {"a": [0]})
    table.new_row_delta().add_deletes(replace(dv, partition=("b",))).commit()
    with pytest.raises(CorruptFile, match=r"is in partition \('b',\)"):
        ids(table)


def test_a_vector_whose_cardinality_disagrees_with_its_record_count_is_corrupt(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [dv] = vectors(table, {"a": [0, 1]})
    table.new_row_delta().add_deletes(replace(dv, record_count=3)).commit()
    with pytest.raises(CorruptFile, match=r"holds 2 positions but its record's record_count "
                                          r"is 3"):
        ids(table)


def test_a_damaged_puffin_file_is_corrupt_not_a_wrong_result(committer: InMemoryCommitter,
                                                             tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [dv] = vectors(table, {"a": [0]})
    table.new_row_delta().add_deletes(dv).commit()
    raw = bytearray(Path(dv.file_path).read_bytes())
    assert dv.content_offset is not None
    raw[dv.content_offset + 9] ^= 0xFF  # a byte of the bitmap: the CRC no longer matches
    Path(dv.file_path).write_bytes(bytes(raw))
    with pytest.raises(CorruptFile, match=r"dv\.puffin: CRC-32 mismatch"):
        ids(table)
    with pytest.raises(ValidationError, match="content_offset and content_size_in_bytes"):
        replace(dv, content_size_in_bytes=None)
    with pytest.raises(ValidationError, match="no referenced_data_file"):
        DataFile(dv.file_path, dv.file_format, (), 1, 10, FileContent.POSITION_DELETES,
                 content_offset=4, content_size_in_bytes=10)


def test_the_files_metadata_table_shows_vectors_and_first_row_ids(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = seeded(committer, tmp_path)
    [dv] = vectors(table, {"b": [0, 1]})
    table.new_row_delta().add_deletes(dv).commit()
    rows = {r["file_path"]: r for r in inspect.files(table.refresh()).to_pylist()}
    data = data_files(table)
    assert sorted(rows[f.file_path]["first_row_id"] for f in data.values()) == [0, 10]
    assert {k: rows[dv.file_path][k] for k in (
        "content", "file_format", "record_count", "referenced_data_file", "content_offset",
        "content_size_in_bytes", "first_row_id")} == {
        "content": 1, "file_format": "PUFFIN", "record_count": 2,
        "referenced_data_file": data["b"].file_path, "content_offset": dv.content_offset,
        "content_size_in_bytes": dv.content_size_in_bytes, "first_row_id": None}
