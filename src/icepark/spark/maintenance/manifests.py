"""Rewrite manifests from Spark: the branch's manifests clustered by partition, in one ``replace``
snapshot (:mod:`icepark.table.snapshot.rewrite_manifests` says what is written and why).

Spec, *Snapshots*: "Large tables can be split across multiple manifests so that implementations
can parallelize job planning or reduce the cost of rewriting a manifest." With few manifests
(fewer than :data:`SPARK_MIN_MANIFESTS` to rewrite) the driver reads and writes them itself, and
a conflict re-plans the rewrite on the refreshed table. With many, Spark tasks do the work: one
task per manifest reads its live entries (each with its clustering key, an order-preserving
byte string of the partition tuple: Spark sorts binary columns bytewise, as the driver does);
Spark range-partitions the entries by that key into about ``total size / target size`` parts
and sorts each; each task writes its part as manifests of EXISTING entries, named
``<metadata>/<job id>-<task>-m<N>.avro``. The driver then commits the new manifests in place of
the old ones; if one of those was changed concurrently the commit fails with
:class:`~icepark.errors.ValidationError` and every manifest of the job is deleted (run it again).
"""

from __future__ import annotations

import contextlib
import pickle
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import read_manifest
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
from icepark.spec.manifest import ManifestFile
from icepark.spec.partitioning import PartitionSpec
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.rewrite_manifests import (
    ManifestGroup,
    ManifestTarget,
    RewriteManifests,
    RewriteManifestsResult,
    live_entries,
    partition_sort_key,
    sort_positions,
    write_sorted,
)
from icepark.table.table import Table

SPARK_MIN_MANIFESTS = 32
"""Rewrites of at least this many manifests run in Spark tasks; smaller ones in the driver."""

_KEY, _ENTRY = "key", "entry"
_ENTRY_SCHEMA = f"{_KEY} binary, {_ENTRY} binary"


def rewrite_manifests(spark: SparkSession, table: TableLike, *, spec_id: int | None = None,
                      sort_by: Sequence[str] | None = None,
                      target_size_bytes: int | None = None,
                      progress: ProgressCallback | None = None,
                      distributed: bool | None = None) -> RewriteManifestsResult:
    """Rewrite the data and delete manifests of ``table``'s current snapshot clustered by
    partition (``sort_by``: partition field names to cluster by first), in manifests of about
    ``target_size_bytes`` (default ``commit.manifest.target-size-bytes``, 8 MiB), optionally
    only those of partition spec ``spec_id``; one ``replace`` snapshot, no data change.

    ``distributed`` chooses Spark tasks (True) or the driver (False); None: Spark tasks from
    :data:`SPARK_MIN_MANIFESTS` manifests on. Returns the manifests and entries rewritten and
    added (all zero, no snapshot, when no manifest needs a rewrite)."""
    target = resolve(spark, table)
    with track(spark, progress):
        change = RewriteManifests(target.io, target.metadata, spec_id=spec_id, sort_by=sort_by,
                                  target_size_bytes=target_size_bytes)
        groups = change.groups()
        if not groups:
            return RewriteManifestsResult()
        count = sum(len(g.manifests) for g in groups)
        if distributed if distributed is not None else count >= SPARK_MIN_MANIFESTS:
            _write_in_spark(spark, target, change, groups)
        target.commit(change)
    head = target.current_snapshot()
    return change.result(None if head is None else head.snapshot_id)


def _write_in_spark(spark: SparkSession, table: Table, change: RewriteManifests,
                    groups: Sequence[ManifestGroup]) -> None:
    """Write every group's new manifests in Spark tasks and hand them to ``change``."""
    job_id = str(uuid.uuid4())
    metadata_path = LocationProvider.of(table.metadata).metadata_path
    added: list[ManifestFile] = []
    try:
        for group in groups:
            added += _write_group(spark, table, change, group, job_id, metadata_path)
    except BaseException:
        delete_job_files(table.io, metadata_path, job_id, [m.manifest_path for m in added],
                         tasks_may_run=True)
        raise
    rewritten = [m for g in groups for m in g.manifests]
    try:
        change.replace_manifests(rewritten, added)
    except ValidationError:
        for m in added:
            with contextlib.suppress(Exception):
                table.io.delete(m.manifest_path)
        raise


def _write_group(  # noqa: PLR0917 - one caller
        spark: SparkSession, table: Table, change: RewriteManifests, group: ManifestGroup,
        job_id: str, metadata_path: str) -> list[ManifestFile]:
    """One group: read in a task per manifest, range-partitioned and sorted by the clustering
    key, written in a task per part."""
    metadata = table.metadata
    target = change.target(metadata, group, None)
    positions = sort_positions(target.spec, [n for n in change.sort_by
                                             if n in {f.name for f in target.spec.fields}])
    specs = {s.spec_id: s for s in metadata.partition_specs}
    entries = sum((m.added_files_count or 0) + (m.existing_files_count or 0)
                  for m in group.manifests)
    parts = max(1, min(-(-entries // target.per_manifest), entries))
    manifests = local_frame(spark, [(pickle.dumps(m),) for m in group.manifests],
                            "manifest binary").repartition(len(group.manifests))
    read = manifests.mapInArrow(_reader(table.io, specs, positions), _ENTRY_SCHEMA)
    ordered = read.repartitionByRange(parts, _KEY).sortWithinPartitions(_KEY)
    written = ordered.mapInArrow(_writer(table.io, target, job_id, metadata_path),
                                 "record binary")
    return [r for r in collect_records(written) if isinstance(r, ManifestFile)]


def _reader(file_io: FileIO, specs: dict[int, PartitionSpec], positions: tuple[int, ...]
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function reading manifests: pickled manifest list entries in,
    ``(key, pickled entry)`` rows out, one per live entry."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for raw in batch.column(0).to_pylist():
                manifest: ManifestFile = pickle.loads(raw)  # our own record
                keys: list[bytes] = []
                values: list[bytes] = []
                for entry in live_entries(read_manifest(file_io, manifest, specs_by_id=specs)):
                    f = entry.data_file
                    keys.append(partition_sort_key(f.partition, positions)
                                + f.file_path.encode("utf-8"))
                    values.append(pickle.dumps(entry))
                yield pa.record_batch({_KEY: pa.array(keys, pa.binary()),
                                       _ENTRY: pa.array(values, pa.binary())})

    return run


def _writer(file_io: FileIO, target: ManifestTarget, job_id: str, metadata_path: str
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function writing manifests: sorted entries in, pickled manifest
    list entries out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        name = task_id()
        counter = iter(range(1 << 30))

        def entries() -> Iterator[Any]:
            for batch in batches:
                for raw in batch.column(1).to_pylist():
                    yield pickle.loads(raw)  # our own record

        def location() -> str:
            return f"{metadata_path}/{job_id}-{name}-m{next(counter)}.avro"

        written = write_sorted(file_io, target, entries(), location)
        keep_unless_aborted(file_io, metadata_path, job_id, [m.manifest_path for m in written])
        yield records_batch(written)

    return run


__all__ = ["SPARK_MIN_MANIFESTS", "RewriteManifestsResult", "rewrite_manifests"]
