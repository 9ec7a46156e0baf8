"""Scan tasks: one data file (or a byte range of it) with its deletes and residual, and bins.

Spec, *Scan Planning*: "Data files that match the query filter must be read by the scan" and
"Delete files that match the query filter must be applied to data files at read time". A
:class:`FileScanTask` is that unit of work: a data file, the delete files that apply to it, and
the *residual* filter still to apply to its rows. Tasks are plain frozen values of primitives
(picklable): they cross from the Spark driver to its executors.

Splitting follows ``split_offsets``: "Split offsets for the data file. For example, all row
group offsets in a Parquet file. Must be sorted ascending". A file is cut only at those offsets
(consecutive row groups are grouped up to the target size); a file without usable offsets is
cut into fixed-size ranges, which readers map to the row groups that start in them.
Bin-packing (:func:`bin_pack`) combines tasks into :class:`CombinedScanTask` bins of about the
target size, each task weighing its bytes plus its delete files' bytes, and at least the
``open file cost`` per file it opens, keeping ``lookback`` bins open at once.
:func:`map_tasks` produces tasks in forked worker processes (manifest decoding holds the GIL),
passing them back as tuples of primitives.

>>> from icepark.spec.manifest import DataFile, FileFormat
>>> f = DataFile("s3://b/t/a.parquet", FileFormat.PARQUET, (), 100, 100, split_offsets=(4, 40, 70))
>>> task = FileScanTask.of(f)
>>> [(t.start, t.length) for t in split(task, 60)]
[(0, 40), (40, 60)]
>>> [(t.start, t.length) for t in split(task, 10)]
[(0, 40), (40, 30), (70, 30)]
>>> bins = bin_pack(split(task, 10), target_size=64, lookback=2, open_file_cost=4)
>>> [[(t.start, t.length) for t in b.tasks] for b in bins]
[[(0, 40)], [(40, 30), (70, 30)]]
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any, TypeVar

from icepark.errors import ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr
from icepark.spec.manifest import DataFile
from icepark.spec.properties import int_property
from icepark.spec.trusted import trusted_constructor

SPLIT_SIZE = "read.split.target-size"
SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024
SPLIT_LOOKBACK = "read.split.planning-lookback"
SPLIT_LOOKBACK_DEFAULT = 10
SPLIT_OPEN_FILE_COST = "read.split.open-file-cost"
SPLIT_OPEN_FILE_COST_DEFAULT = 4 * 1024 * 1024
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class FileScanTask:
    """Read bytes ``[start, start + length)`` of ``data_file``, apply ``delete_files`` and keep
    the rows matching ``residual`` (an unbound expression naming the scan's columns).

    ``partition`` and ``spec_id`` are the data file's (also on ``data_file``), kept at the top
    for readers that add partition values as constant columns. ``data_sequence_number`` is the
    file's data sequence number when the planner decoded it (it does when delete files apply or
    row lineage is read: "On read, if ``_last_updated_sequence_number`` is ``null`` it is
    assigned the ``sequence_number`` of the data file's manifest entry"), else None.
    """

    data_file: DataFile
    delete_files: tuple[DataFile, ...] = ()
    residual: Expr = ALWAYS_TRUE
    spec_id: int = 0
    start: int = 0
    length: int = 0
    partition: tuple[Any, ...] = ()
    data_sequence_number: int | None = None

    @staticmethod
    def of(data_file: DataFile, delete_files: tuple[DataFile, ...] = (),
           residual: Expr = ALWAYS_TRUE) -> FileScanTask:
        """A task reading the whole file."""
        return FileScanTask(data_file, delete_files, residual, data_file.spec_id, 0,
                            data_file.file_size_in_bytes, data_file.partition)

    @property
    def file_path(self) -> str:
        return self.data_file.file_path

    @property
    def size_bytes(self) -> int:
        """Bytes this task reads: its range plus every delete file it applies."""
        return self.length + sum(d.file_size_in_bytes for d in self.delete_files)

    @property
    def files_count(self) -> int:
        """Files this task opens: the data file and its delete files."""
        return 1 + len(self.delete_files)

    @property
    def is_whole_file(self) -> bool:
        return self.start == 0 and self.length == self.data_file.file_size_in_bytes


trusted_task = trusted_constructor(FileScanTask)
"""Builds a :class:`FileScanTask` from all its fields in order, without the frozen dataclass's
per-field ``object.__setattr__`` (see :mod:`icepark.spec.trusted`): for planners."""


@dataclass(frozen=True, slots=True)
class CombinedScanTask:
    """Tasks read together by one reader (one Spark partition)."""

    tasks: tuple[FileScanTask, ...]

    @property
    def size_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tasks)

    @property
    def files_count(self) -> int:
        return sum(t.files_count for t in self.tasks)


def split_settings(properties: Mapping[str, str]) -> tuple[int, int, int]:
    """``read.split.target-size``, ``read.split.planning-lookback`` and
    ``read.split.open-file-cost`` from table properties (or scan options over them)."""
    return (int_property(properties, SPLIT_SIZE, SPLIT_SIZE_DEFAULT, minimum=1),
            int_property(properties, SPLIT_LOOKBACK, SPLIT_LOOKBACK_DEFAULT, minimum=1),
            int_property(properties, SPLIT_OPEN_FILE_COST, SPLIT_OPEN_FILE_COST_DEFAULT,
                         minimum=0))


def valid_split_offsets(data_file: DataFile) -> tuple[int, ...] | None:
    """The file's split offsets if they can be used: each within the file (and sorted, which
    :class:`DataFile` checks). A writer's bad offsets are ignored rather than trusted."""
    offsets = data_file.split_offsets
    if not offsets:
        return None
    if offsets[0] < 0 or offsets[-1] >= data_file.file_size_in_bytes:
        return None
    return offsets


def split(task: FileScanTask, target_size: int) -> Iterator[FileScanTask]:
    """Cut a whole-file task into ranges of about ``target_size`` bytes.

    With split offsets, ranges start and end only at offsets (the first range starts at 0, so
    the file header belongs to it): consecutive row groups are grouped while the group stays
    within ``target_size``; a row group larger than the target is a range of its own. Without
    them, ranges are ``target_size`` bytes (the last one shorter).
    """
    if target_size <= 0:
        raise ValidationError(f"Split target size must be positive, not {target_size}")
    size = task.data_file.file_size_in_bytes
    if task.length <= target_size or not task.is_whole_file:
        yield task
        return
    offsets = valid_split_offsets(task.data_file)
    if offsets is None:
        for start in range(0, size, target_size):
            yield replace(task, start=start, length=min(target_size, size - start))
        return
    bounds = [0, *offsets[1:], size]  # the first row group's range starts at the header
    start = 0
    for i in range(1, len(bounds)):
        end = bounds[i]
        if end - start > target_size and bounds[i - 1] > start:
            yield replace(task, start=start, length=bounds[i - 1] - start)
            start = bounds[i - 1]
    yield replace(task, start=start, length=size - start)


def task_weight(task: FileScanTask, open_file_cost: int) -> int:
    """A task's weight for bin-packing: its bytes, but at least ``open_file_cost`` for each
    file it opens (many tiny files are not free to read)."""
    return max(task.size_bytes, task.files_count * open_file_cost)


def bin_pack(tasks: Iterable[FileScanTask], target_size: int, lookback: int,
             open_file_cost: int) -> Iterator[CombinedScanTask]:
    """Pack tasks into bins of at most ``target_size`` weight (a heavier task gets a bin of
    its own), streaming: each task goes to the first of the ``lookback`` open bins it fits in,
    or a new bin; when more than ``lookback`` bins are open, the fullest one is emitted. Tasks
    keep their order within a bin.
    """
    if target_size <= 0 or lookback <= 0 or open_file_cost < 0:
        raise ValidationError(
            f"Bin-packing needs a positive target size ({target_size}) and lookback "
            f"({lookback}), and a non-negative open file cost ({open_file_cost})")
    bins: list[tuple[list[FileScanTask], list[int]]] = []  # (tasks, [weight])
    for task in tasks:
        weight = task_weight(task, open_file_cost)
        for items, total in bins:
            if total[0] + weight <= target_size:
                items.append(task)
                total[0] += weight
                break
        else:
            bins.append(([task], [weight]))
            if len(bins) > lookback:
                fullest = max(range(len(bins)), key=lambda i: bins[i][1][0])
                yield CombinedScanTask(tuple(bins.pop(fullest)[0]))
    for items, _ in bins:
        yield CombinedScanTask(tuple(items))


def plan_tasks(tasks: Iterable[FileScanTask], target_size: int = SPLIT_SIZE_DEFAULT,
               lookback: int = SPLIT_LOOKBACK_DEFAULT,
               open_file_cost: int = SPLIT_OPEN_FILE_COST_DEFAULT) -> list[CombinedScanTask]:
    """Split every task at its split offsets, then bin-pack the pieces."""
    pieces = (piece for task in tasks for piece in split(task, target_size))
    return list(bin_pack(pieces, target_size, lookback, open_file_cost))


# ----------------------------------------------------------------------------- in processes

_DATA_FILE = trusted_constructor(DataFile)
_DATA_FILE_FIELDS = attrgetter(*(f.name for f in fields(DataFile)))
Packed = tuple[tuple[Any, ...], tuple[DataFile, ...], Expr, int, int, int | None]
_PRODUCE: Callable[[Any], list[FileScanTask]] | None = None


def pack(tasks: list[FileScanTask]) -> list[Packed]:
    """Tasks as tuples of their fields: a frozen dataclass unpickles through one ``setattr``
    per field, several times slower than building it again from a tuple."""
    fields_of = _DATA_FILE_FIELDS
    return [(fields_of(t.data_file), t.delete_files, t.residual, t.start, t.length,
             t.data_sequence_number) for t in tasks]


def unpack(packed: list[Packed]) -> list[FileScanTask]:
    out = []
    for values, deletes, residual, start, length, seq in packed:
        f = _DATA_FILE(*values)  # checked in the worker
        out.append(trusted_task(f, deletes, residual, f.spec_id, start, length, f.partition,
                                seq))
    return out


def _set_producer(produce: Callable[[Any], list[FileScanTask]]) -> None:
    global _PRODUCE  # noqa: PLW0603 - what one forked worker process runs
    _PRODUCE = produce


def _produce_packed(item: Any) -> bytes:
    """The packed tasks of ``item``, pickled here: unpickled by the executor's thread in the
    parent, they would be with the cyclic collector running, whose passes over the thousands
    of new tuples cost several times the unpickling itself."""
    assert _PRODUCE is not None, "worker process started without its function"
    return pickle.dumps(pack(_PRODUCE(item)), protocol=pickle.HIGHEST_PROTOCOL)


def _unpickled(result: bytes) -> list[FileScanTask]:
    with cyclic_gc_paused():
        return unpack(pickle.loads(result))  # bytes from our own worker process


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a manifest's tasks are built: the thousands
    of records allocated hold no cycles, but each 700 allocations start a collection, and
    its passes over the older generations grow with the tasks already planned (a tenth of
    planning time in one process, most of the unpickling of a worker's tasks). Reference
    counting still frees everything; the collector is enabled again after (unless it was
    disabled before).

    Enabled again, the collector would at once collect the young generation, which then
    holds every record just built (and still referenced: they are the tasks being returned),
    and promote them through the middle generation, whose collections would walk them again.
    Instead, the young and middle generations are moved to the oldest one as they are
    (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no walk): a cycle among those
    objects, ours or another thread's, is then found by the next full collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


READ_THREADS = min(8, (os.cpu_count() or 1) + 2)
"""Files (manifests, manifest lists) read at the same time by :func:`parallel_map`: reads
wait on storage, not on the GIL."""


def parallel_map(fn: Callable[[T], R], items: Iterable[T],
                 threads: int = READ_THREADS) -> Generator[R, None, None]:
    """``map(fn, items)`` on a thread pool, in order, with at most ``2 * threads`` pending;
    closing the iterator cancels the items not yet started."""
    threads = max(1, threads)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="icepark-read")
    return _in_order(pool, fn, items, 2 * threads)


def _in_order(pool: Executor, fn: Callable[[T], R], items: Iterable[T], window: int
              ) -> Generator[R, None, None]:
    """``fn`` of each item run on ``pool``, results in order, with at most ``window`` items
    taken from ``items`` and not yet consumed; the pool is shut down at the end, and closing
    the iterator cancels the items not yet started."""
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def can_fork() -> bool:
    """Whether :func:`map_tasks` may fork workers: on Linux (where ``fork`` is cheap), from a
    process running no other Python thread and allowed children (a daemonic
    ``multiprocessing`` worker is not). A thread may hold a lock (of the logging module, of a
    socket client, ...) at the moment of the fork, and the child would wait for it forever; a
    Spark driver, with its JVM gateway threads, is such a process."""
    return (sys.platform == "linux" and threading.active_count() == 1
            and not multiprocessing.current_process().daemon)


def _fork_context() -> Any:
    """The ``fork`` start method where :func:`can_fork`, else None. Forked workers inherit
    the producing function (a planner and its delete index) without pickling it."""
    if not can_fork():
        return None
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def map_tasks(produce: Callable[[T], list[FileScanTask]], items: Iterable[T],
              workers: int = 1) -> Iterator[list[FileScanTask]]:
    """``map(produce, items)``, in order. With ``workers`` > 1 (and :func:`can_fork`),
    ``produce`` runs in that many forked processes, with at most ``2 * workers`` items
    taken from ``items``, running or finished-but-unconsumed at once (bounded memory);
    closing the iterator cancels the items not yet started. An exception in a worker is
    raised here."""
    context = _fork_context() if workers > 1 else None
    if context is None:
        yield from map(produce, items)
        return
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_set_producer,
                               initargs=(produce,))
    with contextlib.closing(_in_order(pool, _produce_packed, items, 2 * workers)) as results:
        for result in results:
            yield _unpickled(result)
