"""Tables as streams: offsets, micro-batch admission and exactly-once commit markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.errors import ValidationError
from icepark.table.snapshot.append import FastAppend
from icepark.table.streams.changelog import changelog_snapshots
from icepark.table.streams.epochs import (
    EPOCH_ID_PROPERTY,
    QUERY_ID_PROPERTY,
    committed,
    epoch_properties,
    last_committed_epoch,
)
from icepark.table.streams.offsets import BEFORE_FIRST, StreamOffset, StreamOptions, StreamPlanner
from tests.table.scan_fixtures import ScanTable, name_of


def planner(t: ScanTable, **options: str) -> StreamPlanner:
    return StreamPlanner(t.metadata, t.io, StreamOptions.parse(options))


def batches(t: ScanTable, start: StreamOffset, **limits: int | None) -> list[list[str]]:
    """Every micro-batch from ``start`` to the end of the table, as file names."""
    p = planner(t)
    out = []
    while (end := p.latest_offset(start, **limits)) != start:
        out.append([name_of(x.data_file) for x in p.planned_files(start, end)])
        start = end
    return out


def test_a_new_stream_reads_the_current_table_then_each_append(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"), t.file("b"))
    start = planner(t).initial_offset()
    assert start.scan_all_files and start.position == 0
    assert batches(t, start) == [["a", "b"]]
    end = planner(t).latest_offset(start)
    t.append(t.file("c"))
    t.append(t.file("d"), t.file("e"))
    assert batches(t, end) == [["c", "d", "e"]]
    assert batches(t, end, max_files=2) == [["c", "d"], ["e"]]
    assert batches(t, end, max_files=1) == [["c"], ["d"], ["e"]]


def test_row_limits_admit_whole_files_and_at_least_one(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a", records=10), t.file("b", records=10), t.file("c", records=30))
    start = StreamOffset(BEFORE_FIRST, 0)
    assert batches(t, start, max_rows=20) == [["a", "b"], ["c"]]
    assert batches(t, start, max_rows=5) == [["a"], ["b"], ["c"]]
    assert batches(t, start, max_rows=25, max_files=1) == [["a"], ["b"], ["c"]]


def test_replace_snapshots_are_skipped_and_deletes_stop_the_stream(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    t.rewrite(["a"], [t.file("a2")])
    t.append(t.file("b"))
    start = StreamOffset(BEFORE_FIRST, 0)
    assert batches(t, start) == [["a", "b"]]
    t.delete("b")
    t.append(t.file("c"))
    with pytest.raises(ValidationError, match="streaming-skip-delete-snapshots=true"):
        planner(t).latest_offset(start)
    p = planner(t, **{"streaming-skip-delete-snapshots": "true"})
    end = p.latest_offset(start)
    assert [name_of(x.data_file) for x in p.planned_files(start, end)] == ["a", "b", "c"]


def test_overwrites_stop_the_stream_unless_skipped(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    t.row_delta(t.file("b"), t.position_deletes("p"))  # an overwrite
    t.append(t.file("c"))
    start = StreamOffset(BEFORE_FIRST, 0)
    with pytest.raises(ValidationError, match="operation is 'overwrite'"):
        planner(t).latest_offset(start)
    p = planner(t, **{"streaming-skip-overwrite-snapshots": "true"})
    assert [name_of(x.data_file) for x in p.planned_files(start, p.latest_offset(start))] \
        == ["a", "c"]


def test_stream_from_timestamp_starts_at_the_first_later_snapshot(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    s2 = t.append(t.file("b"))
    t.append(t.file("c"))
    stamps = [s.timestamp_ms for s in t.metadata.snapshots]
    assert stamps == sorted(stamps)

    def from_time(ms: int) -> list[list[str]]:
        p = planner(t, **{"stream-from-timestamp": str(ms)})
        return batches(t, p.initial_offset())

    assert from_time(0) == [["a", "b", "c"]]
    later = [s for s in t.metadata.snapshots if s.timestamp_ms > s1.timestamp_ms]
    if later and later[0].snapshot_id == s2.snapshot_id:  # distinct clock ticks
        assert from_time(s2.timestamp_ms) == [["b", "c"]]
    assert from_time(stamps[-1] + 1) == []


def test_an_empty_table_streams_its_first_appends(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    start = planner(t).initial_offset()
    assert start == StreamOffset(BEFORE_FIRST, 0)
    assert batches(t, start) == []
    t.append(t.file("a"))
    assert batches(t, start) == [["a"]]


def test_available_now_stops_at_the_snapshot_it_was_given(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    t.append(t.file("b"))
    start = StreamOffset(BEFORE_FIRST, 0)
    p = planner(t)
    end = p.latest_offset(start, until=s1.snapshot_id)
    assert [name_of(x.data_file) for x in p.planned_files(start, end)] == ["a"]
    assert p.latest_offset(end, until=s1.snapshot_id) == end
    assert planner(t).latest_offset(start, until=BEFORE_FIRST) == start


def test_offsets_of_a_lost_snapshot_and_bad_options_are_errors(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    with pytest.raises(ValidationError, match="not in the history"):
        planner(t).latest_offset(StreamOffset(12345, 0))
    with pytest.raises(ValidationError, match="Not an icepark stream offset"):
        StreamOffset.from_json({"offset": 3})
    with pytest.raises(ValidationError, match="at least 1"):
        StreamOptions.parse({"streaming-max-files-per-micro-batch": "0"})
    with pytest.raises(ValidationError, match="true or false"):
        StreamOptions.parse({"streaming-skip-delete-snapshots": "yes"})


def test_commit_markers_find_the_last_batch_of_a_query(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    assert last_committed_epoch(t.metadata, "main", "q") is None
    for query, epoch in (("q", 0), ("q", 1), ("other", 0)):
        t.committer.commit(FastAppend(t.io, t.metadata, snapshot_properties=epoch_properties(
            query, epoch)).append_file(t.file(f"{query}{epoch}")))
    assert last_committed_epoch(t.metadata, "main", "q") == 1
    assert committed(t.metadata, "main", "q", 1) and committed(t.metadata, "main", "q", 0)
    assert not committed(t.metadata, "main", "q", 2)
    assert last_committed_epoch(t.metadata, "main", "other") == 0
    summary = t.current().summary.properties  # type: ignore[union-attr]
    assert summary[QUERY_ID_PROPERTY] == "other" and summary[EPOCH_ID_PROPERTY] == "0"
    t.branch("audit", t.metadata.snapshots[0].snapshot_id)
    assert last_committed_epoch(t.metadata, "audit", "q") == 0


def test_changelog_ranges_follow_the_history_and_leave_out_replaces(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1 = t.append(t.file("a"))
    s2 = t.append(t.file("b"))
    t.rewrite(["a"], [t.file("a2")])
    s4 = t.append(t.file("c"))

    def ids(start: int | None, end: int | None) -> list[int]:
        return [s.snapshot_id for s in changelog_snapshots(t.metadata, start, end)]

    assert ids(None, None) == [s1.snapshot_id, s2.snapshot_id, s4.snapshot_id]
    assert ids(s1.snapshot_id, None) == [s2.snapshot_id, s4.snapshot_id]
    assert ids(s1.snapshot_id, s2.snapshot_id) == [s2.snapshot_id]
    assert ids(s4.snapshot_id, None) == []
    with pytest.raises(ValidationError, match="not an ancestor"):
        ids(s4.snapshot_id, s2.snapshot_id)
    with pytest.raises(ValidationError, match="Cannot find the start snapshot 9"):
        ids(9, None)
