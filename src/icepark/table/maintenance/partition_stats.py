r"""Partition statistics files: per partition, the counts and sizes of its data and delete files
and when it last changed, computed from a snapshot's manifests.

Spec, *Partition Statistics*: "Statistics information for each unique partition tuple is stored
as a row in any of the data file format of the table (for example, Parquet or ORC). These rows
must be sorted (in ascending manner with NULL FIRST) by ``partition`` field". The file's schema
(:func:`partition_stats_schema`) has ``1 partition`` ("schema based on the unified partition
type considering all specs in a table"), ``2 spec_id``, ``3 data_record_count``, ``4
data_file_count``, ``5 total_data_file_size_in_bytes``, ``6 position_delete_record_count``
("Count of position deletes across position delete files and deletion vectors"), ``7
position_delete_file_count`` ("ignoring deletion vectors"), ``8
equality_delete_record_count``, ``9 equality_delete_file_count``, ``10 total_record_count``,
``11 last_updated_at`` ("Timestamp in milliseconds from the unix epoch when the partition was
last updated"), ``12 last_updated_snapshot_id`` and, in v3, ``13 dv_count``; fields 6 to 9 are
optional before v3 and required in v3.

As the reference implementation computes them (a full computation, never incremental here):

* a row per partition *of a spec*: the key is the spec ID and the file's partition tuple, the
  tuple shown in the unified type (None where its spec lacks a field);
* every entry of the snapshot's manifests counts: a live one (ADDED or EXISTING) adds its file
  to the counts, and a DELETED one only updates when the partition last changed, so a partition
  whose files were all just deleted has a row of zeros;
* ``last_updated_at``/``last_updated_snapshot_id``: the newest commit among the snapshots that
  added or deleted the partition's entries (None when those snapshots have expired);
* ``total_record_count``: "If a table has no deletes or only deletion vectors, implementations
  are encouraged to populate total_record_count using metadata in manifests": the data records
  minus the deletion vectors' records when the partition has no delete files, else None
  ("implementations may omit this field and must write NULL").

The file is Parquet, named as the reference does: ``<metadata>/partition-stats-<snapshot
id>-<uuid>.parquet``. The unified type is given by the caller (``table_partition_type`` of
:mod:`icepark.table.inspect.files`, a layer above this one).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.errors import ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.io.manifest.reader import NO_STATS
from icepark.spec.bounds import sort_key
from icepark.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry
from icepark.spec.metadata import PartitionStatisticsFile, TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import INT, LONG, NestedField, PrimitiveType, StructType
from icepark.table.scan.tasks import parallel_map
from icepark.table.snapshot.locations import LocationProvider

Coerce = Callable[[DataFile], tuple[Any, ...]]
"""A file's partition tuple in the unified partition type."""


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """One row of a partition statistics file (the spec's fields, Python names)."""

    partition: tuple[Any, ...]
    spec_id: int
    data_record_count: int = 0
    data_file_count: int = 0
    total_data_file_size_in_bytes: int = 0
    position_delete_record_count: int = 0
    position_delete_file_count: int = 0
    equality_delete_record_count: int = 0
    equality_delete_file_count: int = 0
    total_record_count: int | None = None
    last_updated_at: int | None = None
    last_updated_snapshot_id: int | None = None
    dv_count: int = 0


@dataclass(frozen=True, slots=True)
class PartitionStatsResult:
    """What :func:`icepark.spark.maintenance.stats.compute_partition_stats` did: the
    registered ``statistics_path`` and the ``snapshot_id`` it describes, and how many
    ``partitions`` (rows) it holds; path and snapshot are None when nothing was written (no
    snapshot, or a snapshot without files)."""

    statistics_path: str | None
    snapshot_id: int | None
    partitions: int = 0
    statistics_file: PartitionStatisticsFile | None = None


_COUNTS = (  # field ID, name, type: fields 6 to 9, optional before v3
    (6, "position_delete_record_count", LONG), (7, "position_delete_file_count", INT),
    (8, "equality_delete_record_count", LONG), (9, "equality_delete_file_count", INT))


def partition_stats_schema(partition_type: StructType, format_version: int) -> Schema:
    """The schema of a partition statistics file of a table of ``format_version``; its
    ``dv_count`` (v3 only) comes last, as the reference implementation writes it.

    >>> from icepark.spec.types import STRING
    >>> ptype = StructType((NestedField.optional(1000, "region", STRING),))
    >>> [(f.field_id, f.is_required) for f in partition_stats_schema(ptype, 2).fields][4:7]
    [(5, True), (6, False), (7, False)]
    >>> partition_stats_schema(ptype, 3).fields[-1].name
    'dv_count'
    """
    if not partition_type.fields:
        raise ValidationError("Cannot compute partition statistics of an unpartitioned table: "
                              "every partition spec of the table has no fields")
    counted = NestedField.required if format_version >= 3 else NestedField.optional
    fields = [
        NestedField.required(1, "partition", partition_type),
        NestedField.required(2, "spec_id", INT),
        NestedField.required(3, "data_record_count", LONG),
        NestedField.required(4, "data_file_count", INT),
        NestedField.required(5, "total_data_file_size_in_bytes", LONG),
        *(counted(i, name, t) for i, name, t in _COUNTS),
        NestedField.optional(10, "total_record_count", LONG),
        NestedField.optional(11, "last_updated_at", LONG),
        NestedField.optional(12, "last_updated_snapshot_id", LONG),
    ]
    if format_version >= 3:
        fields.append(NestedField.required(13, "dv_count", INT))
    return Schema(tuple(fields))


class _Counter:
    __slots__ = ("at", "by", "counts")

    def __init__(self) -> None:
        # data records, files, bytes; position delete records, files; equality records, files;
        # deletion vectors
        self.counts = [0] * 8
        self.at: int | None = None
        self.by: int | None = None

    def add(self, f: DataFile) -> None:
        c = self.counts
        if f.content is FileContent.DATA:
            c[0] += f.record_count
            c[1] += 1
            c[2] += f.file_size_in_bytes
        elif f.content is FileContent.POSITION_DELETES:
            c[3] += f.record_count
            c[7 if f.file_format is FileFormat.PUFFIN else 4] += 1
        else:
            c[5] += f.record_count
            c[6] += 1

    def touched(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None and (self.at is None or snapshot.timestamp_ms > self.at):
            self.at, self.by = snapshot.timestamp_ms, snapshot.snapshot_id

    def freeze(self, key: tuple[int, tuple[Any, ...]]) -> PartitionStats:
        data, files, size, pos, pos_files, eq, eq_files, dvs = self.counts
        total = data - pos if pos_files == 0 and eq_files == 0 else None
        return PartitionStats(key[1], key[0], data, files, size, pos, pos_files, eq, eq_files,
                              total, self.at, self.by, dvs)


def collect_partition_stats(io: FileIO, metadata: TableMetadata, snapshot: Snapshot,
                            partition_type: StructType, coerce: Coerce) -> list[PartitionStats]:
    """The statistics of every partition in ``snapshot``'s manifests, sorted by partition
    (nulls first; then by spec ID); empty when the snapshot lists no files."""
    specs = {s.spec_id: s for s in metadata.partition_specs}
    counters: dict[tuple[int, tuple[Any, ...]], _Counter] = {}

    def read(manifest: Any) -> list[ManifestEntry]:
        return list(read_manifest(io, manifest, specs_by_id=specs, stats=NO_STATS,
                                  row_ids=False))

    for entries in parallel_map(read, snapshot_manifests(io, snapshot)):
        for entry in entries:
            f = entry.data_file
            key = (f.spec_id, coerce(f))
            counter = counters.get(key)
            if counter is None:
                counter = counters[key] = _Counter()
            if entry.is_live:
                counter.add(f)
            counter.touched(None if entry.snapshot_id is None
                            else metadata.snapshot_by_id(entry.snapshot_id))
    order = _partition_order(partition_type)
    return sorted((c.freeze(k) for k, c in counters.items()),
                  key=lambda s: (order(s.partition), s.spec_id))


def _partition_order(partition_type: StructType) -> Callable[[tuple[Any, ...]], Any]:
    """A key ordering partition tuples field by field, nulls first."""
    keys = [sort_key(f.field_type) if isinstance(f.field_type, PrimitiveType) else None
            for f in partition_type.fields]

    def order(partition: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((0,) if v is None else (1, v if key is None else key(v))
                     for key, v in zip(keys, partition, strict=True))

    return order


def partition_stats_location(metadata: TableMetadata, snapshot_id: int) -> str:
    """``<write.metadata.path>/partition-stats-<snapshot id>-<uuid>.parquet``."""
    return LocationProvider.of(metadata).metadata_file(
        f"partition-stats-{snapshot_id}-{uuid.uuid4()}.parquet")


def partition_stats_table(schema: Schema, stats: Sequence[PartitionStats]) -> Any:
    """The rows as an Arrow table of ``schema`` (with its field IDs)."""
    arrow_schema = to_arrow_schema(schema)
    partition_type = arrow_schema.field("partition").type
    names = [f.name for f in partition_type]
    rows = [{"partition": dict(zip(names, s.partition, strict=True)), "spec_id": s.spec_id,
             "data_record_count": s.data_record_count, "data_file_count": s.data_file_count,
             "total_data_file_size_in_bytes": s.total_data_file_size_in_bytes,
             "position_delete_record_count": s.position_delete_record_count,
             "position_delete_file_count": s.position_delete_file_count,
             "equality_delete_record_count": s.equality_delete_record_count,
             "equality_delete_file_count": s.equality_delete_file_count,
             "total_record_count": s.total_record_count, "last_updated_at": s.last_updated_at,
             "last_updated_snapshot_id": s.last_updated_snapshot_id, "dv_count": s.dv_count}
            for s in stats]
    return pa.Table.from_pylist(rows, schema=arrow_schema)


def write_partition_stats(io: FileIO, location: str, snapshot_id: int, schema: Schema,
                          stats: Sequence[PartitionStats]) -> PartitionStatisticsFile:
    """Write the rows as a Parquet file and return its ``partition-statistics`` entry; a
    failure leaves no file behind."""
    table = partition_stats_table(schema, stats)
    try:
        with io.new_output(location).create() as out:
            pq.write_table(table, out)
        size = io.new_input(location).length()
    except BaseException:
        with contextlib.suppress(Exception):  # best effort: the write already failed
            io.delete(location)
        raise
    return PartitionStatisticsFile(snapshot_id, location, size)


def read_partition_stats(io: FileIO, entry: PartitionStatisticsFile | str) -> Any:
    """The rows of a partition statistics file (ours or another writer's) as an Arrow table."""
    location = entry if isinstance(entry, str) else entry.statistics_path
    with io.new_input(location).open() as stream:
        return pq.read_table(stream)


__all__ = ["Coerce", "PartitionStats", "PartitionStatsResult", "collect_partition_stats",
           "partition_stats_location", "partition_stats_schema", "partition_stats_table",
           "read_partition_stats", "write_partition_stats"]
