"""Rewrite position delete files from Spark: compaction on v2, deletion vectors on v3, dangling
deletes dropped (:mod:`icepark.table.snapshot.rewrite_deletes` says what and why).

The driver plans the groups; Spark runs them, at most ``max-concurrent-file-group-rewrites`` at a
time (one Spark partition each), every task reading its group's position delete files, keeping
the positions that still delete live rows, and writing them as position delete files sorted by
``file_path`` then ``pos`` ("The rows in the delete file must be sorted by file_path then pos")
rolled at the reference's ``target + (max - target) / 2``, or on v3 as one Puffin file of
deletion vectors. Files are named ``<data path>/[<partition>/]<job id>-<task>-<n>-deletes.*``,
so a failed job's files are found and deleted by its UUID.

The result commits as one ``replace`` snapshot (with ``partial-progress.enabled``, in up to
``partial-progress.max-commits`` snapshots, each of whole groups; a group whose commit fails is
dropped and its files deleted, and the others stay). A commit fails cleanly, deleting the files
it wrote, when a data file its deletes reference was removed concurrently or a delete file that
may apply to one was added.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.errors import CommitFailed, ValidationError
from icepark.io.arrow.deletes import DeleteCache, sorted_unique
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.io.parquet.delete_writer import PositionDeleteWriter
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spark.frames import local_frame
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.tables import TableLike, resolve
from icepark.spark.writer.tasks import (
    collect_records,
    delete_job_files,
    keep_unless_aborted,
    records_batch,
    task_id,
)
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.rewrite_deletes import (
    DeleteGroup,
    DeleteRewriteOptions,
    GroupResult,
    RewritePositionDeletes,
    plan,
)
from icepark.table.table import Table


@dataclass(frozen=True, slots=True)
class RewriteDeletesResult:
    """What a position delete rewrite did, in the reference's terms (delete files removed and
    added, and their bytes), plus the dangling deletes it dropped: rows (positions) of removed
    files that no longer deleted a live row, and files removed unread for that reason."""

    rewritten_delete_files_count: int = 0
    added_delete_files_count: int = 0
    rewritten_bytes_count: int = 0
    added_bytes_count: int = 0
    dangling_deletes_removed: int = 0
    dangling_files_removed: int = 0
    failed_groups_count: int = 0
    snapshot_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteTask:
    """What every task needs: plain, picklable values."""

    job_id: str
    table_location: str
    properties: Mapping[str, str]
    schema: Schema
    specs: Mapping[int, PartitionSpec]
    vectors: bool
    roll_bytes: int
    file_io: FileIO = field(default_factory=ArrowFileIO)

    @property
    def data_path(self) -> str:
        return LocationProvider(self.table_location, self.properties).data_path


def rewrite_group(task: DeleteTask, group: DeleteGroup, name: str) -> GroupResult:
    """Read a group's position delete files, keep the positions that still delete live rows
    and write them anew (position delete files, or deletion vectors); on an error, delete what
    was written."""
    cache = DeleteCache(task.file_io, task.schema)
    kept: dict[str, list[Any]] = {}
    read = dangling = 0
    for delete in group.deletes:
        for path, positions in cache.positions(delete.file).items():
            read += len(positions)
            if group.applies(delete, path):
                kept.setdefault(path, []).append(positions)
            else:
                dangling += len(positions)
    merged = {p: sorted_unique(np.concatenate(parts)) for p, parts in sorted(kept.items())}
    added: list[DataFile] = []
    if merged:
        added = (_write_vectors if task.vectors else _write_files)(task, group, merged, name)
    return GroupResult(tuple(d.file for d in group.deletes), tuple(added),
                       group.sequence_number, tuple(group.targets[p].file for p in merged),
                       read, dangling)


def _write_files(task: DeleteTask, group: DeleteGroup, merged: Mapping[str, Any],
                 name: str) -> list[DataFile]:
    spec = task.specs[group.spec_id]
    path = spec.partition_path(group.partition, task.schema) if spec.fields else ""
    directory = f"{task.data_path}/{path}" if path else task.data_path
    count = iter(range(1, 1 << 30))
    props = {**task.properties, "write.target-file-size-bytes": str(task.roll_bytes)}
    writer = PositionDeleteWriter(
        task.file_io, lambda: f"{directory}/{task.job_id}-{name}-{next(count):05d}-deletes.parquet",
        task.schema, spec, group.partition, props)
    try:
        for data_path, positions in merged.items():
            writer.write(pa.record_batch({
                "file_path": pa.array([data_path] * len(positions), pa.string()),
                "pos": pa.array(positions, pa.int64())}))
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def _write_vectors(task: DeleteTask, group: DeleteGroup, merged: Mapping[str, Any],
                   name: str) -> list[DataFile]:
    location = f"{task.data_path}/{task.job_id}-{name}-00001-deletes.puffin"
    try:
        written = write_deletion_vectors(task.file_io, location, merged)
        return written.data_files({p: group.targets[p].file for p in merged})
    except BaseException:
        with contextlib.suppress(Exception):
            task.file_io.delete(location)
        raise


def _map_function(task: DeleteTask, groups: Sequence[DeleteGroup]
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        base = task_id()
        results = [rewrite_group(task, groups[i], f"{base}-{i}")
                   for batch in batches for i in batch.column(0).to_pylist()]
        keep_unless_aborted(task.file_io, task.data_path, task.job_id,
                            [f.file_path for r in results for f in r.added])
        yield records_batch(results)

    return run


def rewrite_position_delete_files(spark: SparkSession, table: TableLike, *,
                                  options: Mapping[str, str] | None = None,
                                  where: str | None = None,
                                  snapshot_properties: Mapping[str, str] | None = None,
                                  progress: ProgressCallback | None = None
                                  ) -> RewriteDeletesResult:
    """Compact ``table``'s position delete files (v2) or turn them into deletion vectors (v3),
    dropping dangling deletes, in ``replace`` snapshots; ``options`` as the reference's
    procedure takes them (:class:`~icepark.table.snapshot.rewrite_deletes.DeleteRewriteOptions`),
    ``where`` limits the rewrite to partitions whose rows may match it. Nothing is committed
    when there is nothing to do."""
    target = resolve(spark, table)
    parsed = DeleteRewriteOptions.parse(dict(options or {}), target.metadata.properties)
    with track(spark, progress):
        return _rewrite(spark, target, parsed, where, snapshot_properties)


def _rewrite(spark: SparkSession, table: Table, options: DeleteRewriteOptions,
             where: str | None, snapshot_properties: Mapping[str, str] | None
             ) -> RewriteDeletesResult:
    metadata = table.metadata
    found = plan(table.io, metadata, options, where)
    if not found.groups and not found.dangling:
        return RewriteDeletesResult()
    task = DeleteTask(str(uuid.uuid4()), metadata.location, dict(metadata.properties),
                      metadata.schema(), {s.spec_id: s for s in metadata.partition_specs},
                      metadata.format_version >= 3, options.write_max_file_size, table.io)
    results: list[GroupResult] = []
    if found.groups:
        parts = max(1, min(len(found.groups), options.max_concurrent_file_group_rewrites))
        frame = local_frame(spark, [(i,) for i in range(len(found.groups))], "g int")
        job = frame.repartition(parts, "g").mapInArrow(_map_function(task, found.groups),
                                                       "record binary")
        try:
            results = [r for r in collect_records(job) if isinstance(r, GroupResult)]
        except BaseException:
            delete_job_files(table.io, task.data_path, task.job_id, tasks_may_run=True)
            raise
    chunks = _chunks(results, options)
    out = RewriteDeletesResult()
    own: list[int] = []
    for n, chunk in enumerate(chunks):
        change = RewritePositionDeletes(table.io, table.metadata,
                                        snapshot_properties=snapshot_properties)
        change.validate_from_snapshot(found.snapshot_id).ignore_snapshots(own)
        if n == 0:
            change.rewrite(found.dangling, ())
        for r in chunk:
            change.rewrite(r.removed, r.added, r.sequence_number, r.referenced)
            change.delete_on_failure(*(f.file_path for f in r.added))
        try:
            table.commit(change)
        except (ValidationError, CommitFailed):
            if not options.partial_progress_enabled:
                raise
            out = replace(out, failed_groups_count=out.failed_groups_count + len(chunk))
            continue
        head = table.current_snapshot()
        own.append(head.snapshot_id if head is not None else 0)
        out = _counted(out, chunk, found.dangling if n == 0 else ())
    return replace(out, snapshot_ids=tuple(own))


def _chunks(results: list[GroupResult], options: DeleteRewriteOptions) -> list[list[GroupResult]]:
    if not options.partial_progress_enabled or len(results) <= 1:
        return [results]
    count = min(options.partial_progress_max_commits, len(results))
    size = -(-len(results) // count)
    return [results[i:i + size] for i in range(0, len(results), size)]


def _counted(out: RewriteDeletesResult, chunk: Sequence[GroupResult],
             unread: Sequence[DataFile]) -> RewriteDeletesResult:
    """``out`` plus a committed chunk and the dangling files removed unread with it."""
    removed = [f for r in chunk for f in r.removed]
    added = [f for r in chunk for f in r.added]
    return replace(
        out,
        rewritten_delete_files_count=out.rewritten_delete_files_count + len(removed) + len(unread),
        added_delete_files_count=out.added_delete_files_count + len(added),
        rewritten_bytes_count=out.rewritten_bytes_count + sum(
            _size(f) for f in (*removed, *unread)),
        added_bytes_count=out.added_bytes_count + sum(_size(f) for f in added),
        dangling_deletes_removed=out.dangling_deletes_removed + sum(
            r.dangling_rows for r in chunk) + sum(f.record_count for f in unread),
        dangling_files_removed=out.dangling_files_removed + len(unread))


def _size(f: DataFile) -> int:
    """A delete file's bytes: a vector's blob, not its shared Puffin file."""
    return f.content_size_in_bytes or 0 if f.is_deletion_vector else f.file_size_in_bytes


__all__ = ["RewriteDeletesResult", "rewrite_group", "rewrite_position_delete_files"]
