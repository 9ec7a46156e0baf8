"""Snapshot summaries: change counts, custom entries and totals across operations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.spec.manifest import FileContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Operation, Snapshot, Summary
from icepark.table.change.commit import CommitResult
from icepark.table.snapshot.append import FastAppend, MergeAppend
from icepark.table.snapshot.overwrite import DeleteFiles, Overwrite, RewriteFiles
from icepark.table.snapshot.producer import SnapshotProducer
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.snapshot.summary import (
    EMPTY_TOTALS,
    TOTAL_KEYS,
    SummaryBuilder,
    custom_properties,
    totals_of,
)
from tests.table.producer_fixtures import InMemoryCommitter, data_file, entries_of, new_table

IO = ArrowFileIO()
POS = FileContent.POSITION_DELETES
EQ = FileContent.EQUALITY_DELETES


def props(snapshot: Snapshot | None) -> dict[str, str]:
    assert snapshot is not None and snapshot.summary is not None
    return dict(snapshot.summary.properties)


def actual_totals(snapshot: Snapshot | None) -> dict[str, str]:
    return totals_of(e.data_file for e in entries_of(IO, snapshot) if e.is_live)


def test_builder_writes_positive_counts_and_changed_partitions() -> None:
    b = SummaryBuilder({"app": "x"})
    b.added_file(data_file("/d/a", "a", records=4, size=40))
    b.added_file(data_file("/d/p", "a", records=2, size=5, content=POS))
    b.removed_file(data_file("/d/e", "b", records=1, size=7, content=EQ, equality_ids=(1,)))
    s = b.build(Operation.OVERWRITE, {**EMPTY_TOTALS, "total-equality-deletes": "3",
                                      "total-delete-files": "1"})
    assert dict(s.properties) == {
        "app": "x", "added-data-files": "1", "removed-equality-delete-files": "1",
        "added-position-delete-files": "1", "added-delete-files": "1",
        "removed-delete-files": "1", "added-records": "4", "added-files-size": "45",
        "removed-files-size": "7", "added-position-deletes": "2",
        "removed-equality-deletes": "1", "changed-partition-count": "2",
        "total-records": "4", "total-files-size": "38", "total-data-files": "1",
        "total-delete-files": "1", "total-position-deletes": "2",
        "total-equality-deletes": "2"}


def test_totals_missing_or_negative_in_the_parent_are_left_out() -> None:
    b = SummaryBuilder()
    b.removed_file(data_file("/d/a", records=4))
    s = b.build(Operation.DELETE, {"total-records": "1", "total-data-files": "x"})
    assert "total-records" not in s.properties and "total-data-files" not in s.properties
    assert s.properties["deleted-records"] == "4"


def test_custom_properties() -> None:
    assert custom_properties({"snapshot-property.a": "1", "b": "2"}) == {"a": "1", "b": "2"}
    with pytest.raises(ValidationError, match="'added-records'"):
        custom_properties({"snapshot-property.added-records": "1"})
    with pytest.raises(ValidationError, match="operation"):
        FastAppend(IO, new_table(Path("/nowhere")), snapshot_properties={"operation": "x"})


def test_totals_follow_a_sequence_of_operations(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path, properties={
        "commit.manifest.min-count-to-merge": "3"}))
    steps: list[Callable[[TableMetadata], SnapshotProducer]] = [
        lambda md: FastAppend(IO, md).append_files([data_file("/d/a1", "a", 10, size=100),
                                                    data_file("/d/b1", "b", 5, size=50)]),
        lambda md: MergeAppend(IO, md).append_file(data_file("/d/a2", "a", 7, size=70)),
        lambda md: RowDelta(IO, md).add_deletes(data_file("/d/pos", "a", 2, size=9,
                                                          content=POS))
        .add_deletes(data_file("/d/eq", "b", 1, size=8, content=EQ, equality_ids=(1,))),
        lambda md: Overwrite(IO, md).delete_file("/d/b1").add_file(data_file("/d/b2", "b", 3)),
        lambda md: RewriteFiles(IO, md).rewrite(["/d/a1", "/d/a2"],
                                                [data_file("/d/a3", "a", 17, size=160)]),
        lambda md: RowDelta(IO, md).remove_deletes("/d/eq"),
        lambda md: DeleteFiles(IO, md).delete_where("category = 'b'"),
    ]
    expected_records = ["15", "22", "22", "20", "20", "20", "17"]
    for step, records in zip(steps, expected_records, strict=True):
        snap = c.commit(step(c.metadata)).current_snapshot()
        summary = props(snap)
        assert {k: summary[k] for k in TOTAL_KEYS} == actual_totals(snap)
        assert summary["total-records"] == records
    last = props(c.metadata.current_snapshot())
    assert (last["total-data-files"], last["total-delete-files"],
            last["total-position-deletes"], last["deleted-data-files"]) == ("1", "1", "2", "1")


def test_totals_are_recomputed_when_the_parent_has_none(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    c.commit(FastAppend(IO, c.metadata).append_files(
        [data_file("/d/a", "a", 10, size=100), data_file("/d/b", "b", 4, size=40)]))
    md = c.metadata
    [snap] = md.snapshots
    bare = replace(snap, summary=Summary(Operation.APPEND))
    c.current = CommitResult(replace(md, snapshots=(bare,)), c.current.metadata_location)
    new = c.commit(DeleteFiles(IO, c.metadata).delete_file("/d/b")).current_snapshot()
    summary = props(new)
    assert (summary["total-records"], summary["total-files-size"],
            summary["total-data-files"]) == ("10", "100", "1")
