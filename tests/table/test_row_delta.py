"""Row delta: delete files go to delete manifests, with data files in the same snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.spec.manifest import EntryStatus, FileContent, ManifestContent
from icepark.spec.metadata import FormatVersion
from icepark.spec.snapshots import Operation
from icepark.table.snapshot.append import FastAppend
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
POS = FileContent.POSITION_DELETES
EQ = FileContent.EQUALITY_DELETES


def seeded(tmp_path: Path, format_version: FormatVersion = 2) -> InMemoryCommitter:
    c = InMemoryCommitter(new_table(tmp_path, format_version=format_version))
    c.commit(FastAppend(IO, c.metadata).append_files(
        [data_file("/d/a1", "a"), data_file("/d/b1", "b")]))
    return c


def test_both_delete_kinds_go_to_a_delete_manifest(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    change = (RowDelta(IO, c.metadata)
              .add_deletes(data_file("/d/pos", "a", records=3, content=POS))
              .add_deletes(data_file("/d/eq", "a", records=2, content=EQ, equality_ids=(1,))))
    assert change.operation is Operation.DELETE
    snap = c.commit(change).current_snapshot()
    assert snap is not None and snap.operation is Operation.DELETE
    deletes = [m for m in manifests_of(IO, snap) if m.content is ManifestContent.DELETES]
    assert len(deletes) == 1 and deletes[0].added_files_count == 2
    assert deletes[0].sequence_number == 2
    assert sorted(r["data_file"]["content"] for r in raw_entries(deletes[0].manifest_path)) == [
        1, 2]
    by_path = {e.data_file.file_path: e for e in entries_of(IO, snap)}
    assert by_path["/d/eq"].data_file.equality_ids == (1,)
    assert (by_path["/d/pos"].sequence_number, by_path["/d/a1"].sequence_number) == (2, 1)
    assert snap.summary is not None
    props = snap.summary.properties
    assert (props["added-delete-files"], props["added-position-delete-files"],
            props["added-equality-delete-files"], props["added-position-deletes"],
            props["added-equality-deletes"], props["total-delete-files"],
            props["total-position-deletes"], props["total-equality-deletes"],
            props["total-records"]) == ("2", "1", "1", "3", "2", "2", "3", "2", "20")


def test_data_and_deletes_together_is_an_overwrite(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    change = (RowDelta(IO, c.metadata).add_rows(data_file("/d/a2", "a"))
              .add_deletes(data_file("/d/pos", "a", content=POS))
              .validate_data_files_exist(["/d/a1"]))
    assert change.operation is Operation.OVERWRITE
    snap = c.commit(change).current_snapshot()
    assert snap is not None
    contents = sorted(m.content for m in manifests_of(IO, snap))
    assert contents == [ManifestContent.DATA, ManifestContent.DATA, ManifestContent.DELETES]
    assert RowDelta(IO, c.metadata).add_rows(data_file("/d/x")).operation is Operation.APPEND


def test_remove_deletes(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    c.commit(RowDelta(IO, c.metadata).add_deletes(data_file("/d/pos", "a", content=POS)))
    snap = c.commit(RowDelta(IO, c.metadata).remove_deletes("/d/pos")).current_snapshot()
    assert snap is not None and snap.operation is Operation.OVERWRITE
    assert live_paths(IO, snap) == {"/d/a1", "/d/b1"}
    [deleted] = [e for e in entries_of(IO, snap) if e.status is EntryStatus.DELETED]
    assert deleted.data_file.file_path == "/d/pos" and deleted.sequence_number == 2
    assert snap.summary is not None
    assert snap.summary.properties["removed-delete-files"] == "1"
    assert snap.summary.properties["total-delete-files"] == "0"


def test_remove_rows_with_deletes_in_one_snapshot(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    delta = RowDelta(IO, c.metadata).remove_rows("/d/a1") \
        .add_deletes(data_file("/d/pos", "b", content=POS))
    snap = c.commit(delta).current_snapshot()
    assert snap is not None and snap.operation is Operation.DELETE
    assert live_paths(IO, snap) == {"/d/b1", "/d/pos"}
    assert snap.summary is not None
    assert snap.summary.properties["deleted-data-files"] == "1"
    with pytest.raises(ValidationError, match="use remove_deletes"):
        RowDelta(IO, c.metadata).remove_rows(data_file("/d/pos", "b", content=POS))


def test_v1_tables_have_no_row_level_deletes(tmp_path: Path) -> None:
    c = seeded(tmp_path, format_version=1)
    with pytest.raises(ValidationError, match="not supported in v1"):
        RowDelta(IO, c.metadata).add_deletes(data_file("/d/pos", "a", content=POS))


def test_wrong_kinds_are_rejected(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    with pytest.raises(ValidationError, match="use add_deletes"):
        RowDelta(IO, c.metadata).add_rows(data_file("/d/p", content=POS))
    with pytest.raises(ValidationError, match="use add_rows"):
        RowDelta(IO, c.metadata).add_deletes(data_file("/d/p"))


def test_row_delta_on_a_branch_with_retry(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    main = c.metadata.current_snapshot_id
    change = RowDelta(IO, c.metadata, branch="wap").add_deletes(
        data_file("/d/pos", "a", content=POS)).validate_data_files_exist(["/d/a1"])
    c.before_commit.append(lambda: _append(c, "/d/a7", branch="wap"))
    md = c.commit(change)
    assert md.current_snapshot_id == main
    wap = md.snapshot_by_ref("wap")
    assert wap is not None and wap.sequence_number == 3
    assert live_paths(IO, wap) == {"/d/a1", "/d/b1", "/d/a7", "/d/pos"}


def _append(c: InMemoryCommitter, path: str, branch: str = "main") -> None:
    c.commit(FastAppend(IO, c.metadata, branch=branch).append_file(data_file(path, "a")))
