"""Overwrite, delete and rewrite: removing whole files by path, record or row filter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.data_writer import write_data_files
from icepark.spec.manifest import DataFile, EntryStatus, FileContent
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.serde.metadata_json import table_metadata_to_json
from icepark.spec.snapshots import Operation
from icepark.table.snapshot.append import FastAppend, MergeAppend
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.overwrite import DeleteFiles, Overwrite, RewriteFiles
from icepark.table.snapshot.row_delta import RowDelta
from tests.table.producer_fixtures import (
    InMemoryCommitter,
    data_file,
    entries_of,
    live_paths,
    manifests_of,
    new_table,
    raw_entries,
)

IO = ArrowFileIO()


def seeded(tmp_path: Path, *, partitioned: bool = True, format_version: FormatVersion = 2,
           files: tuple[DataFile, ...] = (),
           props: dict[str, str] | None = None) -> InMemoryCommitter:
    c = InMemoryCommitter(new_table(tmp_path, partitioned=partitioned,
                                    format_version=format_version, properties=props))
    files = files or (data_file("/d/a1", "a"), data_file("/d/a2", "a"), data_file("/d/b1", "b"))
    c.commit(FastAppend(IO, c.metadata).append_files(files))
    return c


def test_overwrite_by_path_rewrites_the_manifest(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    first = c.metadata.current_snapshot()
    assert first is not None
    change = Overwrite(IO, c.metadata).delete_file("/d/a1").add_file(data_file("/d/a3", "a"))
    md = c.commit(change)
    snap = md.current_snapshot()
    assert snap is not None and snap.operation is Operation.OVERWRITE
    assert live_paths(IO, snap) == {"/d/a2", "/d/b1", "/d/a3"}
    new, rewritten = manifests_of(IO, snap)
    assert (new.added_files_count, new.sequence_number) == (1, 2)
    assert (rewritten.existing_files_count, rewritten.deleted_files_count) == (2, 1)
    assert rewritten.added_snapshot_id == snap.snapshot_id and rewritten.min_sequence_number == 1
    raw = {r["data_file"]["file_path"]: r for r in raw_entries(rewritten.manifest_path)}
    assert (raw["/d/a1"]["status"], raw["/d/a1"]["snapshot_id"],
            raw["/d/a1"]["sequence_number"], raw["/d/a1"]["file_sequence_number"]) == (
        2, None, 1, 1)
    assert (raw["/d/a2"]["status"], raw["/d/a2"]["snapshot_id"]) == (0, first.snapshot_id)
    deleted = [e for e in entries_of(IO, snap) if e.status is EntryStatus.DELETED]
    assert [(e.data_file.file_path, e.snapshot_id) for e in deleted] == [
        ("/d/a1", snap.snapshot_id)]
    assert snap.summary is not None
    props = snap.summary.properties
    assert (props["deleted-data-files"], props["added-data-files"], props["deleted-records"],
            props["total-data-files"], props["changed-partition-count"]) == ("1", "1", "10",
                                                                             "3", "1")


def test_overwrite_v1_marks_deletes_with_the_snapshot_id(tmp_path: Path) -> None:
    c = seeded(tmp_path, format_version=1)
    snap = c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/b1")).current_snapshot()
    assert snap is not None and snap.operation is Operation.DELETE
    [m] = manifests_of(IO, snap)
    raw = {r["data_file"]["file_path"]: r for r in raw_entries(m.manifest_path)}
    assert (raw["/d/b1"]["status"], raw["/d/b1"]["snapshot_id"]) == (2, snap.snapshot_id)


def test_delete_by_filter_on_partition(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    md = c.commit(DeleteFiles(IO, c.metadata).delete_where("category = 'a'"))
    snap = md.current_snapshot()
    assert snap is not None and live_paths(IO, snap) == {"/d/b1"}
    assert snap.summary is not None and snap.summary.properties["deleted-data-files"] == "2"


def test_delete_by_filter_on_metrics(tmp_path: Path) -> None:
    files = (data_file("/d/0", None, id_range=(0, 9), partition=()),
             data_file("/d/1", None, id_range=(10, 19), partition=()),
             data_file("/d/2", None, id_range=(20, 29), partition=()))
    c = seeded(tmp_path, partitioned=False, files=files)
    c.commit(DeleteFiles(IO, c.metadata).delete_where("id < 20"))
    assert live_paths(IO, c.metadata.current_snapshot()) == {"/d/2"}
    with pytest.raises(ValidationError, match="Cannot delete part of file /d/2 without "
                                              "row-level deletes"):
        c.commit(DeleteFiles(IO, c.metadata).delete_where("id < 25"))
    c.commit(DeleteFiles(IO, c.metadata).delete_where("id > 100"))  # matches nothing
    assert live_paths(IO, c.metadata.current_snapshot()) == {"/d/2"}


def test_partial_partition_match_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    before = {p for p in map(str, tmp_path.rglob("*")) if Path(p).is_file()}
    change = Overwrite(IO, c.metadata).delete_where("category = 'a' AND id = 3")
    with pytest.raises(ValidationError, match="Cannot delete part of file /d/a1"):
        c.commit(change)
    assert {p for p in map(str, tmp_path.rglob("*")) if Path(p).is_file()} == before


def test_unknown_filter_column_fails_early(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    with pytest.raises(ValidationError, match="nope"):
        DeleteFiles(IO, c.metadata).delete_where("nope = 1")


def test_deleting_a_missing_file_fails(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    with pytest.raises(ValidationError, match="no longer in the table: /d/zz"):
        c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/zz"))


def test_overwrite_to_a_branch(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    main = c.metadata.current_snapshot()
    assert main is not None
    md = c.commit(Overwrite(IO, c.metadata, branch="b2").delete_where("category = 'b'")
                  .add_file(data_file("/d/b9", "b")))
    assert md.current_snapshot() == main
    b2 = md.snapshot_by_ref("b2")
    assert b2 is not None and b2.parent_snapshot_id == main.snapshot_id  # forked from main
    assert live_paths(IO, b2) == {"/d/a1", "/d/a2", "/d/b9"}
    md = c.commit(Overwrite(IO, c.metadata, branch="b2").delete_file("/d/a1"))
    assert live_paths(IO, md.snapshot_by_ref("b2")) == {"/d/a2", "/d/b9"}
    assert live_paths(IO, md.current_snapshot()) == {"/d/a1", "/d/a2", "/d/b1"}


def test_merge_drops_entries_deleted_by_earlier_snapshots(tmp_path: Path) -> None:
    c = seeded(tmp_path, props={"commit.manifest.min-count-to-merge": "2"})
    c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/a1"))
    [m] = manifests_of(IO, c.metadata.current_snapshot())
    assert m.deleted_files_count == 1
    snap = c.commit(MergeAppend(IO, c.metadata).append_file(data_file("/d/c", "c"))) \
        .current_snapshot()
    [merged] = manifests_of(IO, snap)
    assert (merged.added_files_count, merged.existing_files_count,
            merged.deleted_files_count) == (1, 2, 0)


def test_manifest_left_with_only_deleted_entries_is_dropped_later(tmp_path: Path) -> None:
    c = seeded(tmp_path, props={"commit.manifest-merge.enabled": "false"})
    c.commit(DeleteFiles(IO, c.metadata).delete_where("category IS NOT NULL"))
    [m] = manifests_of(IO, c.metadata.current_snapshot())
    assert (m.existing_files_count, m.deleted_files_count) == (0, 3)
    snap = c.commit(MergeAppend(IO, c.metadata).append_file(data_file("/d/n", "a"))) \
        .current_snapshot()
    assert [mf.added_files_count for mf in manifests_of(IO, snap)] == [1]


# ----------------------------------------------------------------------------- rewrite


def _write(md_io: ArrowFileIO, c: InMemoryCommitter, ids: list[int]) -> list[DataFile]:
    md = c.metadata
    loc = LocationProvider.of(md)
    return write_data_files(md_io, loc.data_file_namer(md.spec(), md.schema(), ()),
                            md.schema(), md.spec(), (), md.properties,
                            [pa.table({"id": ids, "category": [None] * len(ids)})])


def _rows(snapshot_files: set[str]) -> list[int]:
    return sorted(i for p in snapshot_files for i in pq.read_table(p)["id"].to_pylist())


def test_rewrite_keeps_rows_and_data_sequence_numbers(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path, partitioned=False))
    c.commit(FastAppend(IO, c.metadata).append_files(_write(IO, c, [1, 2, 3])))
    c.commit(FastAppend(IO, c.metadata).append_files(_write(IO, c, [4, 5])))
    old = [e for e in entries_of(IO, c.metadata.current_snapshot())]
    before = _rows(live_paths(IO, c.metadata.current_snapshot()))
    combined = _write(IO, c, before)
    change = RewriteFiles(IO, c.metadata).rewrite(
        [e.data_file for e in old], combined,
        data_sequence_number=max(e.sequence_number or 0 for e in old))
    md = c.commit(change)
    snap = md.current_snapshot()
    assert snap is not None and snap.operation is Operation.REPLACE
    assert _rows(live_paths(IO, snap)) == before == [1, 2, 3, 4, 5]
    [new] = [e for e in entries_of(IO, snap) if e.status is EntryStatus.ADDED]
    assert (new.sequence_number, new.file_sequence_number) == (2, 3)
    assert snap.summary is not None
    props = snap.summary.properties
    assert props["total-records"] == "5" and props["deleted-data-files"] == "2"
    [raw] = [r for m in manifests_of(IO, snap) for r in raw_entries(m.manifest_path)
             if r["status"] == 1]
    assert (raw["sequence_number"], raw["file_sequence_number"]) == (2, None)


def test_rewrite_of_a_removed_file_fails(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    change = RewriteFiles(IO, c.metadata).rewrite(["/d/a1"], [data_file("/d/a9", "a")])
    c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/a1"))
    with pytest.raises(ValidationError, match="no longer in the table: /d/a1"):
        c.commit(change)


def test_rewrite_conflicts_with_new_position_deletes_for_removed_files(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    rewrite = RewriteFiles(IO, c.metadata).rewrite(["/d/a1"], [data_file("/d/a9", "a")],
                                                   data_sequence_number=1)
    c.commit(RowDelta(IO, c.metadata).add_deletes(
        data_file("/d/pos", "a", content=FileContent.POSITION_DELETES)))
    with pytest.raises(ValidationError, match="delete files for the removed data files"):
        c.commit(rewrite)
    ok = RewriteFiles(IO, c.metadata).rewrite(["/d/b1"], [data_file("/d/b9", "b")],
                                              data_sequence_number=1)
    c.commit(RowDelta(IO, c.metadata).add_deletes(
        data_file("/d/eq", "b", content=FileContent.EQUALITY_DELETES, equality_ids=(1,))))
    c.commit(ok)  # equality deletes still apply to the older-sequenced new file
    assert "/d/b9" in live_paths(IO, c.metadata.current_snapshot())


def test_rewrite_sequence_number_cannot_be_in_the_future(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    change = RewriteFiles(IO, c.metadata).rewrite(["/d/a1"], [data_file("/d/a9", "a")],
                                                  data_sequence_number=7)
    with pytest.raises(ValidationError, match="above the table's last sequence number"):
        c.commit(change)


# ----------------------------------------------------------------------------- oracle


def _oracle_table(tmp_path: Path) -> tuple[TableMetadata, Any]:
    """An icepark append then overwrite, opened by pyiceberg from our metadata JSON."""
    c = InMemoryCommitter(new_table(tmp_path))
    c.commit(MergeAppend(IO, c.metadata).append_files(
        [data_file(f"{tmp_path}/a{i}.parquet", "a") for i in range(2)]
        + [data_file(f"{tmp_path}/b.parquet", "b")]))
    c.commit(Overwrite(IO, c.metadata).delete_where("category = 'a'")
             .add_file(data_file(f"{tmp_path}/a9.parquet", "a", records=7)))
    location = tmp_path / "t" / "metadata" / "v2.metadata.json"
    location.write_text(table_metadata_to_json(c.metadata))
    return c.metadata, StaticTable.from_metadata(str(location))


def test_pyiceberg_reads_the_same_snapshots_summaries_and_manifests(tmp_path: Path) -> None:
    md, table = _oracle_table(tmp_path)
    theirs = {s.snapshot_id: (s.parent_snapshot_id, s.sequence_number, s.summary.operation.value,
                              dict(s.summary.additional_properties))
              for s in table.snapshots()}
    ours = {s.snapshot_id: (s.parent_snapshot_id, s.sequence_number,
                            s.operation.value if s.operation else None,
                            dict(s.summary.properties) if s.summary else {})
            for s in md.snapshots}
    assert theirs == ours
    assert theirs[md.current_snapshot_id or 0][3]["total-data-files"] == "2"
    for snapshot in md.snapshots:
        mine = [(m.manifest_path, m.sequence_number, m.added_files_count, m.deleted_files_count)
                for m in manifests_of(IO, snapshot)]
        other = table.snapshot_by_id(snapshot.snapshot_id).manifests(table.io)
        assert [(m.manifest_path, m.sequence_number, m.added_files_count,
                 m.deleted_files_count) for m in other] == mine


def test_pyiceberg_plans_the_same_data_files(tmp_path: Path) -> None:
    md, table = _oracle_table(tmp_path)
    assert {t.file.file_path for t in table.scan().plan_files()} == live_paths(
        IO, md.current_snapshot())
    assert {t.file.record_count for t in table.scan(row_filter="category = 'a'").plan_files()} \
        == {7}


def test_retry_reuses_the_rewritten_manifest_and_inherits_the_new_snapshot_id(
        tmp_path: Path) -> None:
    c = seeded(tmp_path, props={"commit.manifest-merge.enabled": "false"})
    change = Overwrite(IO, c.metadata).delete_file("/d/a1")
    c.before_commit.append(
        lambda: c.commit(FastAppend(IO, c.metadata).append_file(data_file("/d/c1", "c"))))
    snap = c.commit(change).current_snapshot()
    assert snap is not None and snap.sequence_number == 3
    [deleted] = [e for e in entries_of(IO, snap) if e.status is EntryStatus.DELETED]
    assert (deleted.snapshot_id, deleted.sequence_number) == (snap.snapshot_id, 1)
    rewritten = [m for m in manifests_of(IO, snap) if m.deleted_files_count]
    assert len(rewritten) == 1 and rewritten[0].manifest_path.endswith("-m0.avro")
    metadata_files = {p.name for p in (tmp_path / "t" / "metadata").iterdir()}
    assert len([n for n in metadata_files if n.startswith(change.commit_uuid)]) == 1


def test_merging_delete_manifests_keeps_sequence_numbers(tmp_path: Path) -> None:
    c = seeded(tmp_path, props={"commit.manifest.min-count-to-merge": "2"})
    for name in ("/d/p1", "/d/p2"):
        c.commit(RowDelta(IO, c.metadata).add_deletes(
            data_file(name, "a", content=FileContent.POSITION_DELETES)))
    snap = c.metadata.current_snapshot()
    deletes = [m for m in manifests_of(IO, snap) if m.content == 1]
    assert len(deletes) == 1 and (deletes[0].added_files_count,
                                  deletes[0].existing_files_count) == (1, 1)
    assert {e.data_file.file_path: e.sequence_number for e in entries_of(IO, snap)
            if e.data_file.is_delete} == {"/d/p1": 2, "/d/p2": 3}
    assert deletes[0].min_sequence_number == 2


def test_v1_merge_writes_snapshot_ids(tmp_path: Path) -> None:
    c = seeded(tmp_path, format_version=1, props={"commit.manifest.min-count-to-merge": "2"})
    snap = c.commit(MergeAppend(IO, c.metadata).append_file(data_file("/d/c1", "c"))) \
        .current_snapshot()
    assert snap is not None
    [m] = manifests_of(IO, snap)
    raw = {r["data_file"]["file_path"]: (r["status"], r["snapshot_id"])
           for r in raw_entries(m.manifest_path)}
    assert raw["/d/c1"] == (1, snap.snapshot_id)
    assert raw["/d/a1"] == (0, snap.parent_snapshot_id)
