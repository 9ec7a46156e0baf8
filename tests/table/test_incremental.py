"""Incremental append scans: the data files appended between two snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.table.change import updates as u
from icepark.table.scan.incremental import IncrementalAppendScan
from icepark.table.snapshot.append import MergeAppend
from tests.table.scan_fixtures import ScanTable, long_bounds, name_of


def appended(t: ScanTable, from_id: int | None, to_id: int | None = None,
             **kwargs: object) -> list[str]:
    scan = IncrementalAppendScan(t.metadata, t.io, from_id, to_id, **kwargs)  # type: ignore[arg-type]
    return [name_of(x.data_file) for x in scan.plan_files()]


def test_appends_between_snapshots(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    s2 = t.append(t.file("b"), t.file("c"))
    s3 = t.append(t.file("d"))
    assert appended(t, s1.snapshot_id) == ["b", "c", "d"]
    assert appended(t, s1.snapshot_id, s2.snapshot_id) == ["b", "c"]
    assert appended(t, s2.snapshot_id, s3.snapshot_id) == ["d"]
    assert appended(t, s3.snapshot_id) == []
    assert appended(t, None, s2.snapshot_id) == ["a", "b", "c"]
    assert [s.snapshot_id for s in IncrementalAppendScan(
        t.metadata, t.io, s1.snapshot_id).snapshots()] == [s2.snapshot_id, s3.snapshot_id]


def test_merged_manifests_still_give_only_new_files(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, properties={"commit.manifest.min-count-to-merge": "2"})
    s1 = t.append(t.file("a"))
    for name in ("b", "c", "d"):  # merge appends rewrite older entries as EXISTING
        t.committer.commit(MergeAppend(t.io, t.metadata).append_file(t.file(name)))
    assert appended(t, s1.snapshot_id) == ["b", "c", "d"]


def test_filter_and_projection(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    t.append(t.file("low", ("b",), **long_bounds(1, 0, 9)),
             t.file("high", ("c",), **long_bounds(1, 10, 19)))
    assert appended(t, s1.snapshot_id, row_filter="id >= 10") == ["high"]
    assert appended(t, s1.snapshot_id, row_filter="category = 'b'") == ["low"]
    scan = IncrementalAppendScan(t.metadata, t.io, s1.snapshot_id).filter("id < 5").select("id")
    assert [f.name for f in scan.projection().fields] == ["id"]
    assert [name_of(x.data_file) for x in scan.plan_files()] == ["low"]
    with pytest.raises(ValidationError, match="Cannot find column 'nope'"):
        scan.filter("nope = 1").plan_files()


def test_replace_snapshots_are_skipped(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"), t.file("b"))
    t.append(t.file("c"))
    t.rewrite(["a", "b"], [t.file("ab")])  # compaction: no new rows
    t.append(t.file("d"))
    assert appended(t, s1.snapshot_id) == ["c", "d"]


@pytest.mark.parametrize("operation", ["delete", "overwrite"])
def test_cannot_cross_a_delete_or_overwrite(tmp_path: Path, operation: str) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"), t.file("b"))
    if operation == "delete":
        t.delete("a")
    else:
        t.row_delta(t.file("c"), t.position_deletes("p"))
    t.append(t.file("d"))
    with pytest.raises(ValidationError,
                       match=f"incremental append scan cannot cross a {operation} snapshot"):
        appended(t, s1.snapshot_id)
    assert appended(t, t.current().parent_snapshot_id) == ["d"]  # after it is fine


def test_from_must_be_an_ancestor(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    s2 = t.append(t.file("b"))
    with pytest.raises(ValidationError, match="is not an ancestor"):
        appended(t, s2.snapshot_id, s1.snapshot_id)
    with pytest.raises(ValidationError, match="Cannot find the starting snapshot 42"):
        appended(t, 42)
    with pytest.raises(ValidationError, match="Cannot find the end snapshot 43"):
        appended(t, s1.snapshot_id, 43)
    t.update(u.RemoveSnapshots((s1.snapshot_id,)))
    with pytest.raises(ValidationError, match="Cannot find the starting snapshot"):
        appended(t, s1.snapshot_id)


def test_empty_table(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    assert appended(t, None) == []
    assert IncrementalAppendScan(t.metadata, t.io, None).plan_tasks() == []
