"""The executor side of a merge-on-read delete: sorted positions in, position delete files out.

Spec, *Position Delete Files*: "Position-based delete files identify deleted rows by file and
position in one or more data files" and "The rows in the delete file must be sorted by
``file_path`` then ``pos`` to optimize filtering rows while scanning." Spec, *Scan Planning*: a
position delete file applies to a data file when "The data file's partition (both spec and
partition values) is equal to the delete file's partition", so every delete file is written
in the spec and partition of the data files it refers to.

Rows arrive with a :data:`GROUP_COLUMN` (the index of a (spec ID, partition) pair in
:attr:`PositionDeleteTask.groups`), ``file_path``, ``pos`` and :data:`WHOLE_COLUMN`, sorted by
the first three; each run of one group is written by one
:class:`~icepark.io.parquet.delete_writer.PositionDeleteWriter` (which checks the order and rolls
files at ``write.target-file-size-bytes``); with ``file`` granularity
(:data:`~icepark.spark.rowlevel.modes.DELETE_GRANULARITY`) each data file's run gets a writer of
its own. The positions of a data file removed whole (:data:`WHOLE_COLUMN` true: every row of it
is deleted) are not written; the task reports the file and its number of positions as a
:class:`RemovedFile` instead. Files are named
``<data path>/<partition path>/<job id>-<task id>-<n>-deletes.parquet``, so the driver finds
every file of a failed job by its UUID (:func:`icepark.spark.writer.tasks.delete_job_files`).

A DELETE's positions need no shuffle when each delete file covers one data file
(:func:`write_file_deletes`): each scan task sorts the positions it found by file and position
and writes a delete file per data file, reporting how many positions each data file had
(:class:`FilePositions`); the driver adds the counts up, since Spark may split a large file
between tasks, and finds the files removed whole from them.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.io.parquet.delete_writer import PositionDeleteWriter
from icepark.spark.writer.tasks import (
    check_not_aborted,
    collect_records,
    equal_runs,
    records_batch,
    task_id,
)
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.table.snapshot.locations import LocationProvider

GROUP_COLUMN = "__icepark_group"
"""The (spec, partition) group of a position: an index into :attr:`PositionDeleteTask.groups`."""
WHOLE_COLUMN = "__icepark_whole"
"""Whether the position's data file is removed whole (so its positions are not written)."""


@dataclass(frozen=True, slots=True)
class RemovedFile:
    """A data file all of whose rows the task received positions for: removed, not covered
    by position deletes."""

    file_path: str
    rows: int


@dataclass(frozen=True, slots=True)
class PositionDeleteTask:
    """Everything a task needs to write position delete files: plain, picklable values."""

    job_id: str
    table_location: str
    properties: Mapping[str, str]
    schema: Schema
    specs: Mapping[int, PartitionSpec]
    groups: tuple[tuple[int, tuple[Any, ...]], ...]
    """(spec ID, partition tuple) of each group, by :data:`GROUP_COLUMN` value."""
    io_properties: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The FileIO properties of the table (may hold credentials: not in the ``repr``)."""
    file_scoped: bool = False
    """Whether each delete file covers one data file (``file`` granularity)."""

    def file_io(self) -> FileIO:
        return ArrowFileIO(self.io_properties)

    @property
    def data_path(self) -> str:
        return LocationProvider(self.table_location, self.properties).data_path


class _GroupWriters:
    """One open :class:`PositionDeleteWriter` at a time (rows are sorted by group)."""

    def __init__(self, task: PositionDeleteTask, file_io: FileIO, task_name: str) -> None:
        self._task = task
        self._io = file_io
        self._prefix = f"{task.job_id}-{task_name}"
        self._count = 0
        self._key: tuple[int, str | None] | None = None
        self._writer: PositionDeleteWriter | None = None
        self._files: list[DataFile] = []
        self._created: list[PositionDeleteWriter] = []

    @property
    def file_io(self) -> FileIO:
        """What the files are written with."""
        return self._io

    def write(self, group: int, rows: pa.RecordBatch, data_file: str | None = None) -> None:
        """Write ``rows`` of ``group`` (of one ``data_file`` if given: a writer of its own)."""
        if (group, data_file) != self._key or self._writer is None:
            self._finish()
            self._writer = self._open(group)
            self._key = (group, data_file)
        self._writer.write(rows)

    def close(self) -> list[DataFile]:
        self._finish()
        return self._files

    def finish(self) -> list[DataFile]:
        """Close the open writer; the files it wrote."""
        before = len(self._files)
        self._finish()
        return self._files[before:]

    def abort(self) -> None:
        for writer in self._created:
            with contextlib.suppress(Exception):
                writer.abort()
        for data_file in self._files:
            with contextlib.suppress(Exception):
                self._io.delete(data_file.file_path)
        self._files = []

    def _finish(self) -> None:
        if self._writer is not None:
            self._files += self._writer.close()
            self._writer = None

    def _open(self, group: int) -> PositionDeleteWriter:
        spec_id, partition = self._task.groups[group]
        spec, schema = self._task.specs[spec_id], self._task.schema
        path = spec.partition_path(partition, schema) if spec.fields else ""
        base = self._task.data_path
        directory = f"{base}/{path}" if path else base

        def name() -> str:
            self._count += 1
            return f"{directory}/{self._prefix}-{self._count:05d}-deletes.parquet"

        writer = PositionDeleteWriter(self._io, name, schema, spec, partition,
                                      self._task.properties)
        self._created.append(writer)
        return writer


def write_position_deletes(task: PositionDeleteTask, batches: Iterable[pa.RecordBatch],
                           file_io: FileIO | None = None, task_name: str | None = None
                           ) -> tuple[list[DataFile], list[RemovedFile]]:
    """Write the sorted positions of one task; on any error the task's files are deleted.
    Returns the delete files written and the data files removed whole."""
    writers = _GroupWriters(task, file_io or task.file_io(), task_name or task_id())
    removed: Counter[str] = Counter()
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            whole = pc.fill_null(batch.column(WHOLE_COLUMN), False)
            kept = batch
            if pc.any(whole).as_py():
                paths = batch.column("file_path").filter(whole)
                removed.update({v["values"].as_py(): v["counts"].as_py()
                                for v in pc.value_counts(paths)})
                kept = batch.filter(pc.invert(whole))
            rows = kept.select(["file_path", "pos"])
            groups = kept.column(GROUP_COLUMN)  # non-null: one column's runs of equal values
            paths = kept.column("file_path")
            for start, end in equal_runs([groups, paths] if task.file_scoped else [groups],
                                         len(groups)):
                writers.write(int(groups[start].as_py()), rows.slice(start, end - start),
                              paths[start].as_py() if task.file_scoped else None)
        files = writers.close()
        check_not_aborted(writers.file_io, task.data_path, task.job_id)
    except BaseException:
        writers.abort()
        raise
    return files, [RemovedFile(path, n) for path, n in removed.items()]


def map_function(task: PositionDeleteTask) -> Callable[[Iterator[pa.RecordBatch]],
                                                       Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: sorted positions in, pickled records out (one
    :class:`~icepark.spec.manifest.DataFile` per delete file, one :class:`RemovedFile` per
    data file removed whole)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files, removed = write_position_deletes(task, batches)
        yield records_batch([*files, *removed])

    return run


@dataclass(frozen=True, slots=True)
class ScanFile:
    """A data file whose positions a scan task may find, by its number in the scan."""

    file_path: str
    group: int
    """Its (spec, partition) group: an index into :attr:`PositionDeleteTask.groups`."""
    removed: bool
    """Known to be removed whole (by planning): its positions are counted, not written."""


@dataclass(frozen=True, slots=True)
class FilePositions:
    """The positions one task found in one data file, and the delete files it wrote for
    them (none for a file known to be removed whole)."""

    file_path: str
    rows: int
    delete_files: tuple[str, ...]


def write_file_deletes(task: PositionDeleteTask, files: Sequence[ScanFile],
                       batches: Iterable[pa.RecordBatch], file_io: FileIO | None = None,
                       task_name: str | None = None
                       ) -> tuple[list[DataFile], list[FilePositions]]:
    """Write the positions of one scan task (``FILE_NUMBER``, an index into ``files``, and
    ``ROW_POSITION``, in any order) to a delete file per data file; on any error the task's
    files are deleted."""
    writers = _GroupWriters(task, file_io or task.file_io(), task_name or task_id())
    found: list[FilePositions] = []
    try:
        batches = [b for b in batches if b.num_rows]
        if batches:
            positions = pa.Table.from_batches(batches).combine_chunks()
            positions = positions.take(pc.sort_indices(
                positions, [(positions.column_names[0], "ascending"),
                            (positions.column_names[1], "ascending")]))
            numbers, pos = positions.column(0), positions.column(1)
            for start, end in equal_runs([numbers], len(numbers)):
                scanned = files[numbers[start].as_py()]
                written: list[DataFile] = []
                if not scanned.removed:
                    rows = pa.record_batch(
                        {"file_path": pa.repeat(pa.scalar(scanned.file_path), end - start),
                         "pos": pos.slice(start, end - start).combine_chunks()})
                    writers.write(scanned.group, rows, scanned.file_path)
                    written = writers.finish()
                found.append(FilePositions(scanned.file_path, end - start,
                                           tuple(f.file_path for f in written)))
        files_written = writers.close()
        check_not_aborted(writers.file_io, task.data_path, task.job_id)
    except BaseException:
        writers.abort()
        raise
    return files_written, found


def file_map_function(task: PositionDeleteTask, files: Sequence[ScanFile]
                      ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of :func:`write_file_deletes`: pickled records out (a
    :class:`~icepark.spec.manifest.DataFile` per delete file, a :class:`FilePositions` per
    data file)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        written, found = write_file_deletes(task, files, batches)
        yield records_batch([*written, *found])

    return run


@dataclass(frozen=True, slots=True)
class NewDeletes:
    """How many rows a task's deletion vector for ``file_path`` deletes that were not deleted
    before (a vector also holds the positions deleted earlier)."""

    file_path: str
    rows: int


def collect(rows: Any) -> tuple[list[DataFile], list[RemovedFile], int]:
    """The records of a job of :func:`map_function` tasks (a DataFrame), split by kind, and
    the number of rows its new delete files delete (the position delete files' records, or
    the :class:`NewDeletes` of deletion vector tasks)."""
    records = collect_records(rows)
    files = [r for r in records if isinstance(r, DataFile)]
    counts = [r.rows for r in records if isinstance(r, NewDeletes)]
    return (files, [r for r in records if isinstance(r, RemovedFile)],
            sum(counts) if counts else sum(f.record_count for f in files))


__all__ = ["GROUP_COLUMN", "WHOLE_COLUMN", "FilePositions", "NewDeletes", "PositionDeleteTask",
           "RemovedFile", "ScanFile", "collect", "file_map_function", "map_function",
           "write_file_deletes", "write_position_deletes"]
