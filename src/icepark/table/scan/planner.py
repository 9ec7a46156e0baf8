"""Scan planning over manifests: which live files of a snapshot a filter may select.

Spec, *Scan Planning*: "Scans are planned by reading the manifest files for the current
snapshot. Deleted entries in data and delete manifests (those marked with status "DELETED")
are not used in a scan." and "Manifests that contain no matching files, determined using either
file counts or partition summaries, may be skipped." Then "For each manifest, scan predicates,
which filter data rows, are converted to partition predicates, which filter data and delete
files. ... This conversion uses the partition spec used to write the manifest file." and "Scan
predicates are also used to filter data and delete files using column bounds and counts".

:class:`ManifestPlanner` skips manifests by their partition summaries (one
:class:`~icepark.expressions.ManifestEvaluator` per spec); reads the delete manifests into a
:class:`~icepark.table.scan.delete_index.DeleteIndex`; then streams the data manifests (each read
once, a bounded number ahead, and decoded by forked workers when there are many and forking is
safe, else in this process: see :data:`PLANNING_WORKERS`; read ahead on threads, and inflated
there: see :data:`INFLATE_AHEAD_MAX_BYTES`; local ones read here and inflated, some also run
through the Avro kernel, in batches on one thread: :mod:`~icepark.table.scan.read_ahead`),
keeping the live files whose partition (tested once per distinct partition, before the rest of
an entry is decoded) and metrics may match, each with its delete files and its residual (one
per partition). Only the metric maps the filter (and the equality deletes) need are decoded, unless
the caller asks for every column's.
"""

from __future__ import annotations

import copy
import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from icepark.errors import CorruptFile, ValidationError
from icepark.expressions import (
    ALWAYS_TRUE,
    AlwaysTrue,
    Expr,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    ResidualEvaluator,
    bind,
    inclusive_projection,
    partition_evaluator,
    referenced_ids,
    rewrite_not,
    unbind,
)
from icepark.io.avro.native import SETTLED, inflate_ahead, inflated
from icepark.io.fileio import FileIO, is_local
from icepark.io.manifest.cache import ManifestCache, configured_cache, fits
from icepark.io.manifest.manifest import read_manifest_blocks, read_manifest_files
from icepark.io.manifest.reader import ALL_STATS, PartitionFilter, Stats
from icepark.io.preloaded import PreloadedFileIO
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.types import PrimitiveType
from icepark.table.scan.delete_index import DeleteIndex, column_types, equality_metrics_only
from icepark.table.scan.prefilter import metrics_prefilter
from icepark.table.scan.read_ahead import inflated_ahead
from icepark.table.scan.tasks import (
    READ_THREADS,
    FileScanTask,
    can_fork,
    cyclic_gc_paused,
    map_tasks,
    parallel_map,
    trusted_task,
)


def _cpus() -> int:
    """The CPUs this process may run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cpus or 1)


def _planning_workers() -> int:
    """``ICEPARK_PLANNING_WORKERS`` if set to a positive number, else the CPUs this process
    may run on (at most 8)."""
    configured = os.environ.get("ICEPARK_PLANNING_WORKERS", "")
    if configured.strip().isdigit() and int(configured) > 0:
        return int(configured)
    return min(_cpus(), 8)


PLANNING_WORKERS = _planning_workers()
"""Processes decoding data manifests when there are enough of them (:data:`PROCESS_MIN_BYTES`)
and forking is safe (:func:`~icepark.table.scan.tasks.can_fork`: on Linux, from a process running
no other thread; a Spark driver hosts the JVM gateway's threads, so it plans in-process).
Decoding holds the GIL, so threads would not help; the workers are forked, get each manifest's
bytes from the planning process (they never open a file system client) and send back their
tasks pickled. ``ICEPARK_PLANNING_WORKERS=1`` plans in-process always."""
PROCESS_MIN_BYTES = 4 * 1024 * 1024
"""Data manifests smaller than this in total (about 40,000 files) are decoded in the planning
process: forking costs more than it saves."""
INFLATE_AHEAD_MAX_BYTES = 2 * 1024 * 1024
"""Data manifests read ahead on threads, at most ``INFLATE_AHEAD_MAX_BYTES`` long, are
inflated on those threads, outside the GIL (:func:`~icepark.io.avro.native.inflated`), into
one uncompressed block: the thread decoding them then spends no time on codec calls (for
manifests of a record per block, as pyiceberg writes them, most of its time). Larger ones are
inflated a block at a time as they are decoded, so that the manifests read ahead hold at most
about six times this size each in memory."""
LOCAL_READ_AHEAD = 1
"""Threads reading data manifests ahead from this machine's file system when they are not read
in batches (:mod:`~icepark.table.scan.read_ahead`, which needs numba): one keeps ahead of
the decoding thread (reading and inflating a manifest takes a fraction of the time decoding it
does), and each more only takes the GIL from it between its calls: with four (as for remote
storage, whose waits more threads overlap) planning 100,000 files took 6 to 23% longer on two
cores."""
READ_IN_BATCHES = True
"""Whether data manifests on this machine's file system are read by the planning thread and
inflated, and some run through the Avro kernel, in batches on one thread
(:mod:`~icepark.table.scan.read_ahead`; where numba can be loaded); otherwise read ahead a
file at a time (:data:`LOCAL_READ_AHEAD`), the baseline ``by_file`` of
benchmarks/bench_planning.py."""
_INFLATING = threading.BoundedSemaphore(max(1, _cpus() - 1))
"""Threads inflating at once: all cores but the one decoding (more would take it from the
decoding thread, the one planning waits for)."""
T = TypeVar("T")
_RESIDUAL_CACHE_LIMIT = 100_000  # partitions remembered per scan (bounded memory)
_NO_DELETES = DeleteIndex.build(())


def presence_columns(metadata: TableMetadata, schema: Schema) -> frozenset[int]:
    """The columns whose metrics tell a reader whether a data file stores them: the sources of
    identity partition fields (a file without the column reads its partition value) and the
    columns with an ``initial-default`` ("the value for the field that is used when reading
    data files that were written before the field was added"), with their nested fields."""
    ids = {f.source_id for spec in metadata.partition_specs for f in spec.fields
           if f.transform.is_identity}
    for fid, f in index_by_id(schema).items():
        if f.initial_default is not None:
            ids.add(fid)
            if not isinstance(f.field_type, PrimitiveType):
                ids.update(index_by_id(f.field_type))
    return frozenset(ids)


class ManifestPlanner:
    """The filter of one scan applied to manifests and their entries, with its evaluators
    cached per partition spec and its residuals per partition."""

    def __init__(self, metadata: TableMetadata, file_io: FileIO, schema: Schema,
                 row_filter: Expr, *, case_sensitive: bool = True,
                 workers: int = PLANNING_WORKERS, include_column_stats: bool = False,
                 stats_columns: Iterable[int] = (), row_lineage: bool = False) -> None:
        self.file_io, self.schema = file_io, schema
        self.row_lineage = row_lineage
        """Whether the planned files carry their inherited ``first_row_id`` and the tasks
        their data sequence number, as readers of ``_row_id`` and
        ``_last_updated_sequence_number`` need. *First Row ID Inheritance* counts the rows of
        every earlier file of a manifest, so partitions and metrics are then tested after
        every entry is decoded."""
        self.row_filter, self.case_sensitive, self.workers = row_filter, case_sensitive, workers
        bound = rewrite_not(bind(row_filter, schema, case_sensitive))  # unknown columns fail
        self.always_true = isinstance(bound, AlwaysTrue)
        self.include_column_stats = include_column_stats
        refs = referenced_ids(bound)
        self.filter_columns = frozenset(refs)
        """The columns the filter reads: their metrics are decoded to evaluate it (and kept
        in the planned files only when asked for: see :meth:`data_stats`)."""
        self.stats_columns = frozenset(stats_columns) | presence_columns(metadata, schema)
        """More columns whose metrics the planned files keep: the caller's, and the
        :func:`presence_columns`, by which readers tell whether a file stores a column."""
        self._unbound = unbind(bound)
        self.specs = {s.spec_id: s for s in metadata.partition_specs}
        self._unpartitioned = frozenset(s.spec_id for s in metadata.partition_specs
                                        if s.is_unpartitioned)
        self._types = column_types(metadata, schema)
        self._manifest_evaluators: dict[int, ManifestEvaluator] = {}
        self._partition_tests: dict[int, Callable[[Sequence[Any]], bool] | None] = {}
        self._gates: dict[int, PartitionFilter | None] = {}
        self._residual_evaluators: dict[int, ResidualEvaluator] = {}
        self._residuals: dict[tuple[int, tuple[Any, ...]], Expr] = {}
        self._metrics = None if self.always_true else InclusiveMetricsEvaluator(
            schema, row_filter, case_sensitive).eval
        self._cannot_match = None if self.always_true else metrics_prefilter(bound)
        self.cache: ManifestCache | None = configured_cache(
            getattr(file_io, "properties", None) or {})
        """Where decoded manifests are kept across scans (:mod:`icepark.io.manifest.cache`),
        when this process decodes them; None if the FileIO properties disable it."""

    def spec(self, manifest: ManifestFile) -> PartitionSpec:
        spec = self.specs.get(manifest.partition_spec_id)
        if spec is None:
            raise ValidationError(
                f"Manifest {manifest.manifest_path} uses partition spec "
                f"{manifest.partition_spec_id}, which is not among the table's specs")
        return spec

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        """Whether a manifest may hold live matching files, by its file counts ("when
        ``null`` this is assumed to be non-zero") and partition summaries."""
        if not (manifest.has_added_files() or manifest.has_existing_files()):
            return False
        if self.always_true:
            return True
        spec_id = manifest.partition_spec_id
        evaluator = self._manifest_evaluators.get(spec_id)
        if evaluator is None:
            evaluator = self._manifest_evaluators[spec_id] = ManifestEvaluator(
                self.schema, self.spec(manifest), self.row_filter, self.case_sensitive)
        return evaluator.eval(manifest)

    def _partition_test(self, manifest: ManifestFile) -> Callable[[Sequence[Any]], bool] | None:
        spec_id = manifest.partition_spec_id
        if spec_id in self._partition_tests:
            return self._partition_tests[spec_id]
        test = None
        spec = self.spec(manifest)
        if not self.always_true and spec.fields:
            projected = inclusive_projection(self.schema, spec, self.case_sensitive)(
                self.row_filter)
            if not isinstance(projected, AlwaysTrue):
                test = partition_evaluator(spec, self.schema, projected).eval
        self._partition_tests[spec_id] = test
        return test

    def _partition_gate(self, manifest: ManifestFile) -> PartitionFilter | None:
        """The partition test of the manifest's spec, evaluated once per distinct partition
        tuple (a bounded cache per spec): :data:`~icepark.io.avro.native.SETTLED` for a
        partition whose every row matches (its residual is true: the manifest reader need not
        test the metrics of its files, which :meth:`_matched` does not test either)."""
        spec_id = manifest.partition_spec_id
        if spec_id in self._gates:
            return self._gates[spec_id]
        test = self._partition_test(manifest)
        gate = None
        if test is not None:
            cache: dict[tuple[Any, ...], int] = {}
            partition_test, residual = test, self._residual

            def gate(partition: tuple[Any, ...]) -> int:
                found = cache.get(partition)
                if found is None:
                    if len(cache) >= _RESIDUAL_CACHE_LIMIT:
                        cache.clear()
                    found = cache[partition] = (
                        (SETTLED if isinstance(residual(spec_id, partition), AlwaysTrue)
                         else True) if partition_test(partition) else False)
                return found

        self._gates[spec_id] = gate
        return gate

    def entries(self, manifest: ManifestFile, added_by: frozenset[int] | None = None, *,
                metrics: bool = True, stats: Stats | None = None,
                file_io: FileIO | None = None) -> list[ManifestEntry]:
        """The live entries of a manifest whose partition (and ``metrics``) may match (files
        without rows are skipped); with ``added_by``, only files ADDED by those snapshots.
        Partitions are tested before the rest of an entry is decoded; a file whose partition
        the filter matches entirely (its residual is true: every row matches) needs no metrics
        test; :mod:`~icepark.table.scan.prefilter` rules most others out before their file
        record is even built.

        ``stats`` are the metric maps decoded into the entries' files (default: as
        :meth:`data_stats` without delete files); ``file_io`` replaces the planner's."""
        blocks = self._blocks(read_manifest_blocks, manifest, metrics, stats, file_io,
                              discard_deleted=True)
        if added_by is None:
            return [e for block in blocks
                    for e in self._matching([x.data_file for x in block], block, metrics)]
        added = EntryStatus.ADDED
        return [e for block in blocks
                for e in self._matching([x.data_file for x in block], block, metrics)
                if e.status is added and e.snapshot_id in added_by]

    def _blocks(self, read: Callable[..., Iterator[list[Any]]],
                manifest: ManifestFile, metrics: bool, stats: Stats | None,
                file_io: FileIO | None = None, **options: Any) -> Iterator[list[Any]]:
        return read(file_io or self.file_io, manifest, specs_by_id=self.specs,
                    stats=stats or self.data_stats(_NO_DELETES),
                    partition_filter=self._partition_gate(manifest),
                    metrics_filter=self._cannot_match if metrics else None,
                    row_ids=self.row_lineage, cache=self.cache, **options)

    def _matching(self, files: list[DataFile], items: list[T], metrics: bool) -> list[T]:
        """The ``items`` (entries or the files themselves) of ``files`` that have rows and
        (if ``metrics``) whose metrics may match."""
        if not metrics or self._metrics is None:
            return [item for f, item in zip(files, items, strict=True) if f.record_count]
        return [items[i] for i, _ in self._matched(files)]

    def _matched(self, files: list[DataFile]) -> Iterator[tuple[int, Expr]]:
        """The number of each of ``files`` that has rows and whose metrics may match, with its
        residual: a file whose residual is true (its partition matches entirely) needs no
        metrics test."""
        metrics_test, prefilter, residual = self._metrics, self._cannot_match, self.residual
        for i, f in enumerate(files):
            if f.record_count == 0:
                continue
            left = residual(f)
            if metrics_test is not None and not (f.partition and isinstance(left, AlwaysTrue)):
                verdict = None if prefilter is None else prefilter(f)
                if verdict or (verdict is None and not metrics_test(f)):
                    continue  # (the prefilter's False is the evaluator's True)
            yield i, left

    def delete_may_match(self, delete_file: DataFile) -> bool:
        """Whether a delete file may delete rows the filter selects, by its metrics: "If
        metrics show that a delete file has no rows that match a scan predicate, it may be
        ignored". A position delete file's metrics are those of the rows it deletes; an
        equality delete file deletes every row equal on its equality columns, whatever the
        other values it stores, so only the equality columns' metrics are used."""
        return self._metrics is None or self._metrics(equality_metrics_only(delete_file))

    def residual(self, data_file: DataFile) -> Expr:
        """The filter left for the rows of the file's partition (unbound, full column names):
        "These projections are used to calculate the residual predicates for each file"."""
        if self.always_true:
            return ALWAYS_TRUE
        return self._residual(data_file.spec_id, data_file.partition)

    def _residual(self, spec_id: int, partition: tuple[Any, ...]) -> Expr:
        key = (spec_id, partition)
        found = self._residuals.get(key)
        if found is not None:
            return found
        spec = self.specs[spec_id]
        if not spec.fields:
            residual = self._unbound
        else:
            evaluator = self._residual_evaluators.get(spec_id)
            if evaluator is None:
                evaluator = self._residual_evaluators[spec_id] = ResidualEvaluator(
                    self.schema, spec, self.row_filter, self.case_sensitive)
            residual = unbind(evaluator.residual_for(partition))
        if len(self._residuals) >= _RESIDUAL_CACHE_LIMIT:
            self._residuals.clear()
        self._residuals[key] = residual
        return residual

    def delete_index(self, manifests: Sequence[ManifestFile]) -> DeleteIndex:
        """Index the matching live delete files of the delete manifests."""
        deletes: list[tuple[int, DataFile]] = []
        for manifest in manifests:
            for entry in self.entries(manifest, metrics=False, stats=ALL_STATS):
                if not self.delete_may_match(entry.data_file):
                    continue
                if entry.sequence_number is None:
                    raise ValidationError(
                        f"Delete file {entry.data_file.file_path} has no data sequence number")
                deletes.append((entry.sequence_number, entry.data_file))
        return DeleteIndex.build(deletes, self._unpartitioned, self._types)

    def data_stats(self, index: DeleteIndex) -> Stats:
        """The metric maps decoded into data files: all of them when the planner includes
        column stats; else those of the filter's columns, which its metrics evaluation reads,
        and of the equality delete columns, by which equality deletes are matched to files,
        and of the ``stats_columns`` asked for. When the files need no column's (no
        equality deletes, no ``stats_columns``) and the filter has a test the manifest reader
        applies (:mod:`~icepark.table.scan.prefilter`), the filter's are decoded for that test
        alone (``Stats.filter_only``): a compiled reader leaves them out of the files it
        decides, and passes them on with the files it leaves to the evaluator (manifests
        kept decoded in the cache keep them: each scan filters those again). Building them
        into every planned file costs more than decoding them (the Java planner, too, keeps
        no column stats in tasks unless asked)."""
        if self.include_column_stats:
            return ALL_STATS
        kept = index.equality_ids | self.stats_columns
        if not kept and self._cannot_match is not None:
            return Stats.for_columns(self.filter_columns, filter_only=True)
        return Stats.for_columns(self.filter_columns | kept)

    def tasks(self, manifest: ManifestFile, index: DeleteIndex,
              added_by: frozenset[int] | None = None, file_io: FileIO | None = None
              ) -> list[FileScanTask]:
        """The tasks of one data manifest's matching live files (read through ``file_io``
        if given, else the planner's)."""
        task = trusted_task
        with cyclic_gc_paused():
            if added_by is None and index.is_empty and not self.row_lineage:
                # nothing to look up by entry: files, each with the residual it was tested by
                blocks = self._blocks(read_manifest_files, manifest, True,
                                      self.data_stats(index), file_io=file_io)
                if self.always_true:
                    return [task(f, (), ALWAYS_TRUE, f.spec_id, 0, f.file_size_in_bytes,
                                 f.partition, None)
                            for block in blocks for f in block if f.record_count]
                return [task(f, (), residual, f.spec_id, 0, f.file_size_in_bytes, f.partition,
                             None)
                        for block in blocks for i, residual in self._matched(block)
                        for f in (block[i],)]
            residual = self.residual
            for_data_file = index.for_data_file
            return [task(f, for_data_file(e.sequence_number or 0, f), residual(f), f.spec_id, 0,
                         f.file_size_in_bytes, f.partition, e.sequence_number)
                    for e in self.entries(manifest, added_by, stats=self.data_stats(index),
                                          file_io=file_io)
                    for f in (e.data_file,)]

    def plan(self, manifests: Iterable[ManifestFile],
             added_by: frozenset[int] | None = None) -> Iterator[FileScanTask]:
        """One task per matching live data file of ``manifests``, with the deletes of the
        delete manifests among them and its residual. Nothing is read before the first task
        is asked for (a generator: closing it stops the reading). The tasks pass from each
        manifest's list to the caller through one generator (over ``itertools.chain``), not
        one per step of the planning (each generator a task passes through resumes once for
        it)."""
        yield from itertools.chain.from_iterable(self._plan_lists(manifests, added_by))

    def _plan_lists(self, manifests: Iterable[ManifestFile], added_by: frozenset[int] | None
                    ) -> Iterator[list[FileScanTask]]:
        data, delete = self.select(manifests)
        yield from self._selected_lists(data, delete, added_by)

    def plan_selected(self, data: list[ManifestFile], delete: list[ManifestFile],
                      added_by: frozenset[int] | None = None) -> Iterator[FileScanTask]:
        """:meth:`plan` of the manifests :meth:`select` chose."""
        yield from itertools.chain.from_iterable(self._selected_lists(data, delete, added_by))

    def _selected_lists(self, data: list[ManifestFile], delete: list[ManifestFile],
                        added_by: frozenset[int] | None) -> Iterator[list[FileScanTask]]:
        index = self.delete_index(delete)
        work = sum(m.manifest_length for m in data)
        planner = self
        if self.cache is not None and not fits(self.cache, work):
            planner = copy.copy(self)  # too large to keep: decoded as if uncached
            planner.cache = None
        yield from planner._decoded(data, index, added_by, work)

    def _decoded(self, data: list[ManifestFile], index: DeleteIndex,
                 added_by: frozenset[int] | None, work: int
                 ) -> Iterator[list[FileScanTask]]:
        """The tasks of the data manifests (``work``: their total length), a list per
        manifest, decoded here or by forked workers."""
        cache = self.cache

        def read(m: ManifestFile) -> tuple[ManifestFile, bytes | None]:
            if cache is not None and cache.holds(m.manifest_path):
                return m, None  # most likely decoded already: read only if it is not
            return m, self.file_io.new_input(m.manifest_path).read()

        def read_ahead(m: ManifestFile) -> tuple[ManifestFile, bytes | None]:
            m, content = read(m)
            if content is not None and len(content) <= INFLATE_AHEAD_MAX_BYTES:
                with _INFLATING:
                    content = inflated(content, len(content))
            return m, content

        def decode(job: tuple[ManifestFile, bytes | None], planner: ManifestPlanner = self
                   ) -> list[FileScanTask]:
            manifest, content = job  # decoded from memory: a worker opens no file system
            if content is None:
                return planner.tasks(manifest, index, added_by)
            preloaded = PreloadedFileIO(self.file_io, {manifest.manifest_path: content})
            return planner.tasks(manifest, index, added_by, preloaded)

        results: Iterator[list[FileScanTask]]
        cached = cache is not None and all(cache.holds(m.manifest_path) for m in data)
        if (self.workers > 1 and len(data) > 1 and work >= PROCESS_MIN_BYTES and not cached
                and can_fork()):
            # read in this thread: read-ahead threads would be running when workers fork;
            # what forked workers decode is gone with them: they keep no cache
            uncached = copy.copy(self)
            uncached.cache = None
            results = map_tasks(functools.partial(decode, planner=uncached), map(read, data),
                                self.workers)
        elif len(data) > 1:  # read ahead on threads: waits on storage (and inflating in
            # bulk) do not hold the GIL
            local = is_local(data[0].manifest_path)
            ahead = inflate_ahead() if local and READ_IN_BATCHES else None
            if ahead is not None:  # see read_ahead: one hand-over of the GIL a batch
                results = inflated_ahead(ahead, data, read, decode, INFLATE_AHEAD_MAX_BYTES)
            else:
                threads = LOCAL_READ_AHEAD if local else READ_THREADS
                results = map(decode, parallel_map(read_ahead, data, threads))
        else:
            results = (self.tasks(m, index, added_by) for m in data)
        yield from self._checked_lists(results, index, added_by)

    def select(self, manifests: Iterable[ManifestFile]
               ) -> tuple[list[ManifestFile], list[ManifestFile]]:
        """The data manifests and the delete manifests that may hold matching live files
        (:meth:`manifest_may_match`), in order."""
        data: list[ManifestFile] = []
        delete: list[ManifestFile] = []
        for m in manifests:
            if self.manifest_may_match(m):
                (delete if m.content is ManifestContent.DELETES else data).append(m)
        return data, delete

    def checked(self, results: Iterable[list[FileScanTask]], index: DeleteIndex,
                added_by: frozenset[int] | None = None) -> Iterator[FileScanTask]:
        """The tasks of every data manifest (``results``, one list per manifest), checked at
        the end: a full scan sees every live data file, so each deletion vector of ``index``
        (whose ``referenced_data_file`` "is required for deletion vectors") must reference one;
        a vector that does not is a :class:`~icepark.errors.CorruptFile`."""
        yield from itertools.chain.from_iterable(self._checked_lists(results, index, added_by))

    def _checked_lists(self, results: Iterable[list[FileScanTask]], index: DeleteIndex,
                       added_by: frozenset[int] | None) -> Iterator[list[FileScanTask]]:
        dvs = index.deletion_vectors if self.always_true and added_by is None else {}
        planned: set[str] = set()
        for tasks in results:
            if dvs:
                planned.update(t.data_file.file_path for t in tasks)
            yield tasks
        dangling = sorted(set(dvs) - planned)
        if dangling:
            dv = dvs[dangling[0]]
            raise CorruptFile(
                f"Deletion vector in {dv.file_path} at offset {dv.content_offset} references "
                f"data file {dangling[0]}, which is not a live data file of the snapshot"
                + (f" ({len(dangling) - 1} more such vectors)" if len(dangling) > 1 else ""))
