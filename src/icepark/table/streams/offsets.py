"""Reading a table as a stream: offsets over its snapshots and the files of each micro-batch.

A stream reads the rows each snapshot appended, snapshot by snapshot, along the history of the
current snapshot (its ancestors, oldest first). Spec, *Snapshots*: ``append`` -- "Only data
files were added and no files were removed"; ``replace`` -- "Data and delete files were added
and removed without changing table data" (compaction: nothing new to stream, skipped);
``overwrite`` and ``delete`` remove or delete rows, which an append stream cannot express: the
stream fails on them, naming the option that skips them (``streaming-skip-overwrite-snapshots``,
``streaming-skip-delete-snapshots``), as the reference implementation does. And *Manifest Entry
Fields*: "When a file is added to the dataset, its manifest entry should store the snapshot ID
in which the file was added and set status to 1 (added)": a snapshot's new rows are the data
files its own manifests list as added by it.

A :class:`StreamOffset` is a position in that sequence: the next file to read is number
``position`` (in path order) of snapshot ``snapshot_id``'s files; with ``scan_all_files`` those
are every live file of that snapshot (with its deletes: the table's rows when the stream
started) instead of the files it added. A stream without ``stream-from-timestamp`` starts with
all rows of the current snapshot and then follows its appends; with it, from the first snapshot
committed at or after that time. Offsets are plain JSON values Spark keeps in its checkpoint, so
a restarted query plans the same files for the same offsets.

Admission control: a micro-batch takes whole files up to ``streaming-max-files-per-micro-batch``
files and ``streaming-max-rows-per-micro-batch`` rows, but always at least one file so that the
stream progresses; a limit ``until`` (a snapshot ID) stops it there (``Trigger.AvailableNow``).

>>> StreamOffset.from_json({"snapshot_id": 3, "position": 2, "scan_all_files": False})
StreamOffset(snapshot_id=3, position=2, scan_all_files=False)
>>> StreamOffset(3, 2, False).to_json()
{'snapshot_id': 3, 'position': 2, 'scan_all_files': False}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import int_property
from icepark.spec.snapshots import Operation, Snapshot, ancestors_of
from icepark.table.scan.incremental import IncrementalAppendScan
from icepark.table.scan.scan import TableScan
from icepark.table.scan.tasks import FileScanTask

BEFORE_FIRST = -1
"""The ``snapshot_id`` of an offset before the first snapshot (a stream on an empty table)."""
_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class StreamOffset:
    """The next file to read: number ``position`` of ``snapshot_id``'s files (see the module
    docstring)."""

    snapshot_id: int
    position: int
    scan_all_files: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"snapshot_id": self.snapshot_id, "position": self.position,
                "scan_all_files": self.scan_all_files}

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> StreamOffset:
        try:
            return StreamOffset(int(value["snapshot_id"]), int(value["position"]),
                                bool(value.get("scan_all_files", False)))
        except (KeyError, TypeError, ValueError) as e:
            raise ValidationError(f"Not an icepark stream offset: {dict(value)!r} ({e}); was "
                                  "the checkpoint written by another source?") from None


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """The reference implementation's streaming read options."""

    from_timestamp: int | None = None
    max_files: int = _INT_MAX
    max_rows: int = _INT_MAX
    skip_deletes: bool = False
    skip_overwrites: bool = False

    @staticmethod
    def parse(options: Mapping[str, str]) -> StreamOptions:
        lowered = {k.lower(): v for k, v in options.items()}

        def number(key: str, default: int, minimum: int) -> int:
            return int_property(lowered, key, default, minimum=minimum, kind="Option")

        def flag(key: str) -> bool:
            text = lowered.get(key, "false").strip().lower()
            if text not in ("true", "false"):
                raise ValidationError(f"Option {key} must be true or false, not {text!r}")
            return text == "true"

        start = lowered.get("stream-from-timestamp")
        return StreamOptions(
            from_timestamp=None if start is None else number("stream-from-timestamp", 0, 0),
            max_files=number("streaming-max-files-per-micro-batch", _INT_MAX, 1),
            max_rows=number("streaming-max-rows-per-micro-batch", _INT_MAX, 1),
            skip_deletes=flag("streaming-skip-delete-snapshots"),
            skip_overwrites=flag("streaming-skip-overwrite-snapshots"))


class StreamPlanner:
    """Offsets and micro-batch files of one table version (see the module docstring)."""

    def __init__(self, metadata: TableMetadata, file_io: FileIO, options: StreamOptions) -> None:
        self.metadata, self.io, self.options = metadata, file_io, options
        self._history = list(ancestors_of(metadata.current_snapshot_id,
                                          metadata.snapshots_by_id))[::-1]
        self._index = {s.snapshot_id: i for i, s in enumerate(self._history)}
        self._files = lru_cache(maxsize=64)(self._snapshot_files)

    def initial_offset(self) -> StreamOffset:
        """Where a new stream starts: all rows of the current snapshot, or the first snapshot
        at or after ``stream-from-timestamp``."""
        if not self._history:
            return StreamOffset(BEFORE_FIRST, 0)
        start = self.options.from_timestamp
        if start is None:
            return StreamOffset(self._history[-1].snapshot_id, 0, scan_all_files=True)
        later = [i for i, s in enumerate(self._history) if s.timestamp_ms >= start]
        first = later[0] if later else len(self._history)
        if first == 0:
            return StreamOffset(BEFORE_FIRST, 0)
        previous = self._history[first - 1].snapshot_id  # read up to its end: nothing of it
        return StreamOffset(previous, len(self.files(previous, False)))

    def latest_offset(self, start: StreamOffset, *, max_files: int | None = None,
                      max_rows: int | None = None, until: int | None = None) -> StreamOffset:
        """The end (exclusive) of the next micro-batch from ``start``: as many whole files as
        the limits admit (at least one), not past snapshot ``until``; ``start`` itself when
        there is nothing new."""
        files_left = max_files if max_files is not None else _INT_MAX
        rows_left = max_rows if max_rows is not None else _INT_MAX
        end = start
        taken = 0
        for snapshot_id, all_files, first in self._units(start, until):
            files = self.files(snapshot_id, all_files)
            position = first
            while position < len(files):
                rows = files[position].data_file.record_count
                if taken and (files_left <= 0 or rows > rows_left):
                    return end
                files_left -= 1
                rows_left -= rows
                taken += 1
                position += 1
                end = StreamOffset(snapshot_id, position, all_files)
            if end.snapshot_id != snapshot_id or end.scan_all_files != all_files:
                end = StreamOffset(snapshot_id, len(files), all_files)  # an empty snapshot
        return end

    def planned_files(self, start: StreamOffset, end: StreamOffset) -> list[FileScanTask]:
        """The file scan tasks of the micro-batch ``[start, end)``."""
        if end == start:
            return []
        tasks: list[FileScanTask] = []
        for snapshot_id, all_files, first in self._units(start, end.snapshot_id):
            files = self.files(snapshot_id, all_files)
            last = end.position if (snapshot_id == end.snapshot_id
                                    and all_files == end.scan_all_files) else len(files)
            tasks += files[first:last]
            if snapshot_id == end.snapshot_id and all_files == end.scan_all_files:
                break
        return tasks

    def _units(self, start: StreamOffset, until: int | None) -> list[tuple[int, bool, int]]:
        """``(snapshot ID, all files, first position)`` of each snapshot to read from
        ``start`` on, oldest first, up to ``until`` (a snapshot ID) if given."""
        units: list[tuple[int, bool, int]] = []
        if start.snapshot_id == BEFORE_FIRST:
            following = 0
        else:
            index = self._index.get(start.snapshot_id)
            if index is None:
                raise ValidationError(
                    f"The stream's offset names snapshot {start.snapshot_id}, which is not in "
                    "the history of the table's current snapshot (expired, or the table was "
                    "rolled back or replaced): restart the stream from a new checkpoint")
            units.append((start.snapshot_id, start.scan_all_files, start.position))
            following = index + 1
        if until is not None and start.snapshot_id == until:
            return units
        for snapshot in self._history[following:]:
            if self._readable(snapshot):
                units.append((snapshot.snapshot_id, False, 0))
            if snapshot.snapshot_id == until:
                break
        return units

    def _readable(self, snapshot: Snapshot) -> bool:
        """Whether the stream reads ``snapshot``'s files (an append), skips it (a replace, or
        a skipped delete or overwrite), or must stop."""
        match snapshot.operation:
            case Operation.APPEND:
                return True
            case Operation.REPLACE:
                return False
            case Operation.DELETE if self.options.skip_deletes:
                return False
            case Operation.OVERWRITE if self.options.skip_overwrites:
                return False
            case Operation.DELETE | Operation.OVERWRITE as op:
                option = ("streaming-skip-delete-snapshots" if op is Operation.DELETE
                          else "streaming-skip-overwrite-snapshots")
                raise ValidationError(
                    f"Cannot stream snapshot {snapshot.snapshot_id}: its operation is "
                    f"{op.value!r} (rows were removed or changed, which an append stream cannot "
                    f"express); to skip such snapshots set option {option}=true, or read the "
                    "changes with icepark.spark.changes")
            case _:
                raise ValidationError(f"Cannot stream snapshot {snapshot.snapshot_id}: its "
                                      "summary has no operation")

    def files(self, snapshot_id: int, all_files: bool) -> Sequence[FileScanTask]:
        """The file tasks of one snapshot, in path order: those it added, or with
        ``all_files`` its whole table (with their deletes)."""
        return self._files(snapshot_id, all_files)

    def _snapshot_files(self, snapshot_id: int, all_files: bool) -> tuple[FileScanTask, ...]:
        snapshot = self.metadata.snapshot_by_id(snapshot_id)
        assert snapshot is not None
        if all_files:
            tasks = list(TableScan(self.metadata, self.io, snapshot_id=snapshot_id).plan_files())
        elif snapshot.operation is not Operation.APPEND:
            return ()  # nothing appended: skipped, or the stream stops at it
        else:
            parent = snapshot.parent_snapshot_id
            known = parent is not None and self.metadata.snapshot_by_id(parent) is not None
            tasks = IncrementalAppendScan(self.metadata, self.io,
                                          parent if known else None, snapshot_id).plan_files()
        return tuple(sorted(tasks, key=lambda t: t.data_file.file_path))


__all__ = ["BEFORE_FIRST", "StreamOffset", "StreamOptions", "StreamPlanner"]
