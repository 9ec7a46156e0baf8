"""The executor side of a Spark write: Arrow batches in, Parquet data files out, records back.

Spec, Appendix A, *Parquet*: "Column IDs are required." Every file is written by
:class:`~icepark.io.parquet.data_writer.DataFileWriter` (pyarrow writes ``PARQUET:field_id`` on
struct
fields, list elements and map keys and values alike), streaming one row group at a time and
rolling to a new file at ``write.target-file-size-bytes``. It writes the v3 types Spark's own
writer cannot (``timestamp_ns``/``timestamptz_ns`` as ``TIMESTAMP(NANOS)``, from Spark
timestamps or ``LongType`` nanoseconds; geometry and geography of other CRSs).

Spec, *Partitioning*: "Partition values for a data file must be the same for all records
stored in the data file." Two ways to split rows by partition:

* the Spark pipeline (:mod:`icepark.spark.writer.write`) computes the partition values as Spark
  columns (:mod:`icepark.spark.transforms`), appends them to every row as
  :data:`PARTITION_PREFIX` columns and sorts each task's rows by them, so a task keeps exactly
  one writer open and starts a new file whenever the partition changes;
* the ``icepark`` data source (:mod:`icepark.spark.datasource.source`) gets rows as they come, so it
  splits each batch with the Arrow kernels
  (:func:`~icepark.io.arrow.transforms.partition_batches`) and keeps one writer per
  partition open.

Files are named ``<data path>/<partition path>/<job id>-<task id>-<n>.parquet``: every file of
one job carries the job's UUID, so the driver can find and delete every file of a failed job by
listing (:func:`delete_job_files`), even those of tasks whose records it never received. Spark
reports a failed job while its other tasks may still run (a cancelled task is not stopped, only
no longer waited for), so the driver first marks the job aborted (:func:`abort_marker`) and a
task that finishes its files after that finds the mark and deletes them itself
(:func:`write_batches`): a task's files exist before it looks, so either the driver's listing
finds them or the task finds the mark.

What crosses to the executors is :class:`WriteTask`, a frozen value of primitives and spec
values; what comes back is the pickled :class:`~icepark.spec.manifest.DataFile` records.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import pickle
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import CommitFailed
from icepark.expressions import Expr, RowEvaluator
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.arrow.transforms import partition_batches, to_python_values
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.io.parquet.data_writer import DataFileWriter
from icepark.spark.nanos import as_nanosecond_batch, has_nanos
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import TypeId
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.writes import check_rows_match, prepare

PARTITION_PREFIX = "__icepark_partition_"
"""Name prefix of the partition value columns the Spark pipeline appends to each row."""
RECORD_COLUMN = "data_file"
"""The one binary column of the task output: a pickled ``DataFile`` per row."""


@dataclass(frozen=True, slots=True)
class WriteTask:
    """Everything a task needs to write its rows: plain, picklable values (no FileIO)."""

    job_id: str
    table_location: str
    properties: Mapping[str, str]
    schema: Schema
    spec: PartitionSpec
    sort_order_id: int | None = None
    presorted: bool = False
    """Rows carry :data:`PARTITION_PREFIX` columns and arrive sorted by them."""
    row_filter: Expr | None = None
    """Every row must match it (an overwrite by filter); checked before a file is closed."""
    case_sensitive: bool = True
    io_properties: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The FileIO properties of the table (may hold credentials: not in the ``repr``)."""

    def file_io(self) -> FileIO:
        return ArrowFileIO(self.io_properties)

    @property
    def data_path(self) -> str:
        return LocationProvider(self.table_location, self.properties).data_path


def task_id() -> str:
    """This Spark task's partition and attempt (``00003.17``), or a random ID outside Spark."""
    from pyspark import TaskContext  # noqa: PLC0415 - only meaningful inside a task

    context = TaskContext.get()
    if context is None:
        return uuid.uuid4().hex[:12]
    return f"{context.partitionId():05d}.{context.taskAttemptId()}"


class _Namer:
    """``<data path>/<partition path>/<job id>-<task id>-<n>.parquet``, ``n`` counting every
    file of the task."""

    def __init__(self, task: WriteTask, task_name: str) -> None:
        self._prefix = f"{task.job_id}-{task_name}"
        self._data_path = task.data_path
        self._task = task
        self._count = 0

    def for_partition(self, partition: tuple[Any, ...]) -> Callable[[], str]:
        spec, schema = self._task.spec, self._task.schema
        path = spec.partition_path(partition, schema) if spec.fields else ""
        directory = f"{self._data_path}/{path}" if path else self._data_path

        def name() -> str:
            self._count += 1
            return f"{directory}/{self._prefix}-{self._count:05d}.parquet"

        return name


def _key(partition: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(("nan",) if isinstance(v, float) and math.isnan(v) else v for v in partition)


class TaskWriter:
    """The open writers of one task, by partition; :meth:`abort` deletes every file."""

    def __init__(self, task: WriteTask, file_io: FileIO | None = None,
                 task_name: str | None = None) -> None:
        self.task = task
        self._io = file_io or task.file_io()
        self._namer = _Namer(task, task_name or task_id())
        self._open: dict[tuple[Any, ...], DataFileWriter] = {}
        self._files: list[DataFile] = []
        self._arrow_schema = to_arrow_schema(task.schema)
        self._partition_fields = task.spec.partition_type(task.schema).fields
        self._evaluator = (None if task.row_filter is None else
                           RowEvaluator(task.schema, task.row_filter, task.case_sensitive))
        self._nanos = has_nanos(task.schema)

    @property
    def file_io(self) -> FileIO:
        """What the files are written with."""
        return self._io

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Write one batch (with partition columns when ``presorted``)."""
        if batch.num_rows == 0:
            return
        if self.task.presorted:
            names = batch.schema.names
            data = batch.select([n for n in names if not n.startswith(PARTITION_PREFIX)])
            parts = [batch.column(n) for n in names if n.startswith(PARTITION_PREFIX)]
            rows = self._conformed(data)
            for start, end in equal_runs(parts, batch.num_rows):
                partition = self._partition_of(parts, start)
                self._writer(partition, single=True).write(rows.slice(start, end - start))
        else:
            rows = self._conformed(batch)
            for partition, part in partition_batches(pa.Table.from_batches([rows]),
                                                     self.task.schema, self.task.spec):
                self._writer(tuple(partition), single=False).write(part)

    def close(self) -> list[DataFile]:
        while self._open:
            self._files += self._open.popitem()[1].close()
        return self._files

    def abort(self) -> None:
        for writer in self._open.values():
            writer.abort()
        self._open.clear()
        for data_file in self._files:
            with contextlib.suppress(Exception):
                self._io.delete(data_file.file_path)
        self._files = []

    def _conformed(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self._nanos:  # long nanoseconds, as a "nanos" read gives them, are timestamps
            batch = as_nanosecond_batch(batch, self.task.schema)
        rows = prepare(batch, self.task.schema, self._arrow_schema)
        if self._evaluator is not None and self.task.row_filter is not None:
            check_rows_match(pa.Table.from_batches([rows]), self._evaluator,
                             self.task.row_filter)
        return rows

    def _partition_of(self, parts: list[pa.Array], row: int) -> tuple[Any, ...]:
        values = []
        for f, column in zip(self._partition_fields, parts, strict=True):
            one = column.slice(row, 1)
            if f.field_type.type_id is TypeId.UUID and pa.types.is_string(one.type):
                text = one[0].as_py()
                values.append(None if text is None else uuid.UUID(text))
            else:
                values.append(to_python_values(one, f.field_type)[0])
        return tuple(values)

    def _writer(self, partition: tuple[Any, ...], single: bool) -> DataFileWriter:
        key = _key(partition)
        writer = self._open.get(key)
        if writer is None:
            if single:  # rows are sorted by partition: the previous one is done
                self.close()
            writer = DataFileWriter(self._io, self._namer.for_partition(partition),
                                    self.task.schema, self.task.spec, partition,
                                    self.task.properties, self.task.sort_order_id)
            self._open[key] = writer
        return writer


def equal_runs(parts: list[pa.Array], length: int) -> list[tuple[int, int]]:
    """``[start, end)`` ranges of consecutive rows with equal partition columns (nulls equal,
    NaNs equal)."""
    if not parts or length == 0:
        return [(0, length)] if length else []
    changed = pa.array([False] * (length - 1), pa.bool_())
    for column in parts:
        before, after = column.slice(0, length - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(before, after), False)
        nulls = pc.xor(pc.is_null(before), pc.is_null(after))
        if pa.types.is_floating(column.type):
            both_nan = pc.and_(pc.fill_null(pc.is_nan(before), False),
                               pc.fill_null(pc.is_nan(after), False))
            differs = pc.and_(differs, pc.invert(both_nan))
        changed = pc.or_(changed, pc.or_(differs, nulls))
    cuts = [int(i) + 1 for i in pc.indices_nonzero(changed).to_pylist()]
    bounds = [0, *cuts, length]
    return list(itertools.pairwise(bounds))


def write_batches(task: WriteTask, batches: Iterable[pa.RecordBatch],
                  file_io: FileIO | None = None) -> list[DataFile]:
    """Write every batch of one task; on any error, or when the driver has marked the job
    aborted by the time the files are written (:func:`abort_marker`), the task's files are
    deleted."""
    writer = TaskWriter(task, file_io)
    try:
        for batch in batches:
            writer.write_batch(batch)
        files = writer.close()
        check_not_aborted(writer.file_io, task.data_path, task.job_id)
    except BaseException:
        writer.abort()
        raise
    return files


def records_batch(records: Iterable[object]) -> pa.RecordBatch:
    """The task output: one pickled record (a ``DataFile``, or another record of the task's
    result) per row."""
    return pa.record_batch({RECORD_COLUMN: pa.array([pickle.dumps(r) for r in records],
                                                    pa.binary())})


def collect_records(rows: Any) -> list[Any]:
    """The records of a job of :func:`records_batch` outputs (a DataFrame), on the driver."""
    return [pickle.loads(row[0]) for row in rows.collect()]  # our own records


def map_function(task: WriteTask) -> Callable[[Iterator[pa.RecordBatch]],
                                              Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a write: rows in, pickled data file records out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield records_batch(write_batches(task, batches))

    return run


ABORTED = ".aborted"
"""The name ending of a job's abort mark (:func:`abort_marker`)."""


def abort_marker(data_path: str, job_id: str) -> str:
    """``<data path>/<job id>.aborted``: an empty file :func:`delete_job_files` writes before
    it lists the job's files (not one of them: it lacks the ``-`` after the job ID), and leaves
    in place, for the tasks still running (:func:`check_not_aborted`). No table references it:
    removing orphan files removes it."""
    return f"{data_path}/{job_id}{ABORTED}"


def mark_aborted(file_io: FileIO, data_path: str, job_id: str) -> None:
    """Write the job's abort mark (:func:`abort_marker`), for its tasks still running to find
    (:func:`check_not_aborted`)."""
    file_io.new_output(abort_marker(data_path, job_id)).write(b"", overwrite=True)


def check_not_aborted(file_io: FileIO, data_path: str, job_id: str) -> None:
    """``CommitFailed`` when the driver has marked the job aborted (:func:`abort_marker`): a
    task calls it once its files are written, and deletes them when it raises. A mark that
    cannot be looked for counts as none (the driver's listing is then the only cleanup)."""
    try:
        aborted = file_io.exists(abort_marker(data_path, job_id))
    except Exception:  # storage trouble is not an abort
        return
    if aborted:
        raise CommitFailed(f"Write job {job_id} was aborted by the driver while this task "
                           f"ran: its files are deleted")


def keep_unless_aborted(file_io: FileIO, data_path: str, job_id: str,
                        written: Iterable[str]) -> None:
    """:func:`check_not_aborted` for a task whose files are ``written``: they are deleted
    (best effort) before ``CommitFailed`` is raised."""
    try:
        check_not_aborted(file_io, data_path, job_id)
    except CommitFailed:
        for location in written:
            with contextlib.suppress(Exception):
                file_io.delete(location)
        raise


def job_files(file_io: FileIO, data_path: str, job_id: str) -> list[str]:
    """Every file of the job ``job_id`` under ``data_path`` (found by its name prefix)."""
    prefix = f"{job_id}-"
    return [info.location for info in file_io.list_prefix(data_path)
            if info.location.rsplit("/", 1)[-1].startswith(prefix)]


def delete_job_files(file_io: FileIO, data_path: str, job_id: str,
                     known: Iterable[str] = (), *, tasks_may_run: bool = False,
                     settle_seconds: float = 1.0, max_rounds: int = 10) -> int:
    """Delete every file the job wrote (``known`` records plus the prefix listing); best
    effort. Returns how many were deleted.

    When a job fails, Spark reports it while tasks cancelled with it may still be closing
    files; so after a failed job (``tasks_may_run``) the job is first marked aborted
    (:func:`abort_marker`: a task that writes its files after this deletes them itself), and
    the listing is repeated, ``settle_seconds`` apart, until a round finds nothing new (at
    most ``max_rounds`` rounds). After a job whose every task ended (a failed commit) there is
    no mark to leave.
    """
    if tasks_may_run:
        with contextlib.suppress(Exception):  # best effort, as the rest
            mark_aborted(file_io, data_path, job_id)
    deleted: set[str] = set()
    pending = set(known)
    for round_number in range(max_rounds):
        with contextlib.suppress(Exception):
            pending.update(job_files(file_io, data_path, job_id))
        pending -= deleted
        if not pending and round_number > 0:
            break
        for location in pending:
            with contextlib.suppress(Exception):
                file_io.delete(location)
        deleted |= pending
        pending = set()
        time.sleep(settle_seconds)
    return len(deleted)
