"""Conflict detection between concurrent commits, and the filters it uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.reserved import FILE_PATH
from icepark.table.snapshot.append import FastAppend
from icepark.table.snapshot.overwrite import DeleteFiles, Overwrite, RewriteFiles
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.snapshot.validation import (
    FileFilter,
    IsolationLevel,
    isolation_level,
    may_apply,
    validation_history,
)
from tests.table.producer_fixtures import (
    InMemoryCommitter,
    data_file,
    files_under,
    live_paths,
    long_bound,
    manifests_of,
    new_table,
)

IO = ArrowFileIO()
POS = FileContent.POSITION_DELETES


def seeded(tmp_path: Path, **props: str) -> InMemoryCommitter:
    c = InMemoryCommitter(new_table(tmp_path, properties=props))
    c.commit(FastAppend(IO, c.metadata).append_files(
        [data_file("/d/a1", "a"), data_file("/d/b1", "b")]))
    return c


def concurrently(c: InMemoryCommitter, *files: DataFile, delete: str | None = None) -> None:
    """Commit another writer's change just before our first attempt."""
    def other() -> None:
        if delete is not None:
            c.commit(DeleteFiles(IO, c.metadata).delete_file(delete))
        if files:
            change = RowDelta(IO, c.metadata)
            for f in files:
                change.add_files([f])
            c.commit(change)
    c.before_commit.append(other)


def overwrite_a(c: InMemoryCommitter) -> Overwrite:
    start = c.metadata.current_snapshot_id
    return (Overwrite(IO, c.metadata).delete_where("category = 'a'")
            .add_file(data_file("/d/a9", "a"))
            .validate_no_conflicting_appends(start, "category = 'a'"))


def test_serializable_overwrite_fails_on_a_concurrent_append_in_its_filter(
        tmp_path: Path) -> None:
    c = seeded(tmp_path)
    concurrently(c, data_file("/d/a2", "a"))
    with pytest.raises(ValidationError, match=r"conflicting data files added matching "
                                              r"category = 'a' since snapshot \d+: /d/a2"):
        c.commit(overwrite_a(c))
    assert c.attempts == 3  # the other writer's commit, our attempt, our retry: no more
    assert files_under(tmp_path) == _referenced(c)  # our manifests and lists were deleted
    assert live_paths(IO, c.metadata.current_snapshot()) == {"/d/a1", "/d/b1", "/d/a2"}


def test_serializable_overwrite_succeeds_with_a_concurrent_append_elsewhere(
        tmp_path: Path) -> None:
    c = seeded(tmp_path)
    concurrently(c, data_file("/d/b2", "b"))
    md = c.commit(overwrite_a(c))
    assert live_paths(IO, md.current_snapshot()) == {"/d/a9", "/d/b1", "/d/b2"}


def test_snapshot_isolation_overwrite_accepts_concurrent_appends(tmp_path: Path) -> None:
    c = seeded(tmp_path, **{"write.overwrite.isolation-level": "snapshot"})
    concurrently(c, data_file("/d/a2", "a", id_range=(100, 200)))
    change = (Overwrite(IO, c.metadata).delete_where("category = 'a' AND id < 50")
              .validate_no_conflicting_appends(c.metadata.current_snapshot_id))
    with pytest.raises(ValidationError, match="Cannot delete part of file /d/a1"):
        c.commit(change)  # /d/a1 has no metrics: only some rows may match
    c2 = seeded(tmp_path / "2", **{"write.overwrite.isolation-level": "snapshot"})
    concurrently(c2, data_file("/d/a2", "a"))
    md = c2.commit(overwrite_a(c2))
    assert live_paths(IO, md.current_snapshot()) == {"/d/a9", "/d/b1"}


def test_concurrent_deletes_conflict_at_both_levels(tmp_path: Path) -> None:
    for level in IsolationLevel:
        c = seeded(tmp_path / level.value)
        concurrently(c, data_file("/d/pos", "a", content=POS))
        with pytest.raises(ValidationError, match="conflicting delete files added"):
            c.commit(overwrite_a(c).isolation_level(level))
        c = seeded(tmp_path / f"{level.value}-removed")
        concurrently(c, delete="/d/a1")
        with pytest.raises(ValidationError, match="conflicting data files removed"):
            c.commit(overwrite_a(c).isolation_level(level))


def test_a_file_to_delete_removed_concurrently_fails(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    concurrently(c, delete="/d/a1")
    with pytest.raises(ValidationError, match="no longer in the table: /d/a1"):
        c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/a1"))
    c.before_commit.clear()
    concurrently(c, delete="/d/b1")
    with pytest.raises(ValidationError, match="no longer in the table: /d/b1"):
        c.commit(RewriteFiles(IO, c.metadata).rewrite(["/d/b1"], [data_file("/d/b9", "b")]))


def test_position_deletes_for_a_data_file_removed_concurrently_fail(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    def compact() -> None:
        c.commit(RewriteFiles(IO, c.metadata).rewrite(
            ["/d/a1"], [data_file("/d/a1-compacted", "a")]))

    c.before_commit.append(compact)
    change = (RowDelta(IO, c.metadata).add_deletes(data_file("/d/pos", "a", content=POS))
              .validate_data_files_exist(["/d/a1"]))
    with pytest.raises(ValidationError, match=r"referenced data file\(s\) were removed "
                                              "concurrently: /d/a1"):
        c.commit(change)
    ok = (RowDelta(IO, c.metadata).add_deletes(data_file("/d/pos2", "b", content=POS))
          .validate_data_files_exist(["/d/b1"]))
    concurrently(c, delete="/d/a1-compacted")
    c.commit(ok)


def test_row_delta_conflict_filter_and_isolation(tmp_path: Path) -> None:
    def delta(c: InMemoryCommitter) -> RowDelta:
        return (RowDelta(IO, c.metadata).add_deletes(data_file("/d/pos", "a", content=POS))
                .conflict_detection_filter("category = 'a'")
                .validate_no_conflicting_data_files().validate_no_new_delete_files())

    c = seeded(tmp_path / "1")
    concurrently(c, data_file("/d/a2", "a"))
    with pytest.raises(ValidationError, match="conflicting data files added"):
        c.commit(delta(c))
    c = seeded(tmp_path / "2", **{"write.delete.isolation-level": "snapshot"})
    concurrently(c, data_file("/d/a2", "a"))
    c.commit(delta(c))
    c = seeded(tmp_path / "3")
    concurrently(c, data_file("/d/eq", "a", content=FileContent.EQUALITY_DELETES,
                              equality_ids=(1,)))
    with pytest.raises(ValidationError, match="conflicting delete files added"):
        c.commit(delta(c).isolation_level("snapshot"))
    c = seeded(tmp_path / "4")
    concurrently(c, data_file("/d/b2", "b"), data_file("/d/posb", "b", content=POS))
    c.commit(delta(c))


def test_history_must_reach_the_starting_snapshot(tmp_path: Path) -> None:
    c = seeded(tmp_path)
    head = c.metadata.current_snapshot()
    assert validation_history(c.metadata, head, head.snapshot_id if head else None) == []
    assert len(validation_history(c.metadata, head, None)) == 1
    with pytest.raises(ValidationError, match="not an ancestor"):
        validation_history(c.metadata, head, 12345)
    change = RowDelta(IO, c.metadata).add_rows(data_file("/d/x")).validate_from_snapshot(
        999).validate_no_conflicting_data_files()
    with pytest.raises(ValidationError, match="changes since snapshot 999"):
        c.commit(change)


def test_file_filter_uses_partitions_then_metrics(tmp_path: Path) -> None:
    md = new_table(tmp_path)
    f = FileFilter(md, "category = 'a' AND id >= 10")
    in_range = data_file("/d/1", "a", id_range=(10, 20))
    partly = data_file("/d/2", "a", id_range=(5, 20))
    other = data_file("/d/3", "b", id_range=(10, 20))
    assert (f.may_match(in_range), f.must_match(in_range)) == (True, True)
    assert (f.may_match(partly), f.must_match(partly)) == (True, False)
    assert (f.may_match(other), f.must_match(other)) == (False, False)
    assert FileFilter(md, "category = 'b'").must_match(other)
    assert not FileFilter(md, "id > 30").may_match(in_range)
    with pytest.raises(ValidationError):
        FileFilter(md, "missing = 1")


def test_may_apply_follows_scan_planning_rules() -> None:
    data = data_file("/d/b", "a")
    pos = DataFile("/d/p", data.file_format, ("a",), 1, 1, POS, 0,
                   lower_bounds={FILE_PATH.field_id: b"/d/a"},
                   upper_bounds={FILE_PATH.field_id: b"/d/c"})
    assert may_apply(pos, data, set())
    assert not may_apply(pos, data_file("/d/z", "a"), set())
    assert not may_apply(pos, data_file("/d/b", "b"), set())
    eq = data_file("/d/e", None, partition=(), spec_id=1, content=FileContent.EQUALITY_DELETES,
                   equality_ids=(1,))
    assert may_apply(eq, data, {1}) and not may_apply(eq, data, set())
    assert long_bound(1) == b"\x01" + b"\x00" * 7


def test_isolation_level_property() -> None:
    assert isolation_level({}, "write.delete.isolation-level") is IsolationLevel.SERIALIZABLE
    with pytest.raises(ValidationError, match="'serializable' or 'snapshot'"):
        isolation_level({"k": "strict"}, "k")


def _referenced(c: InMemoryCommitter) -> set[str]:
    """The manifest lists and manifests of every snapshot."""
    out: set[str] = set()
    for s in c.metadata.snapshots:
        out |= {s.manifest_list or "", *(m.manifest_path for m in manifests_of(IO, s))}
    return out
