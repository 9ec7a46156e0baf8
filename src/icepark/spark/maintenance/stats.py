"""Column and partition statistics of a snapshot, registered in the table's metadata.

:func:`compute_table_stats` sketches the distinct values of columns in Spark and registers a
Puffin statistics file (spec, *Table Statistics*; the pure parts are in
:mod:`icepark.table.maintenance.table_stats`): each Spark task feeds its rows' values, serialized
as Appendix D says, to one Theta sketch per column and returns the compact sketches; the driver
unions them (Puffin spec: "a "compact" Theta sketch ... obtained by constructing Alpha family
sketch with default seed, and feeding it with individual distinct values converted to bytes
using Iceberg's single-value serialization"), writes one ``apache-datasketches-theta-v1`` blob
per column with its ``ndv``, and registers the file for the snapshot. The snapshot's rows are
read as every icepark read does (deletes applied).

:func:`compute_partition_stats` needs no Spark job: it reads the snapshot's manifests on the
driver (:mod:`icepark.table.maintenance.partition_stats`) and registers a Parquet partition
statistics file (spec, *Partition Statistics*: "Each table snapshot may be associated with at
most one partition statistics file").

Both register with ``table.update_statistics()``, replacing a file the snapshot had; a failed
commit deletes the new file (unless its outcome is unknown), so no statistics are left
half-registered. A table without snapshots gets no file, as in the reference implementation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark import __version__
from icepark.errors import CommitStateUnknown, NoSuchSnapshot, ValidationError
from icepark.io.fileio import FileIO
from icepark.io.puffin.theta import ndv, union
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.scan_rows import scan_rows
from icepark.spark.schema import quote
from icepark.spark.session import case_sensitive
from icepark.spark.tables import TableLike, resolve
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import PrimitiveType
from icepark.table.inspect.files import partition_coercer, table_partition_type
from icepark.table.maintenance.partition_stats import (
    PartitionStatsResult,
    collect_partition_stats,
    partition_stats_location,
    partition_stats_schema,
    write_partition_stats,
)
from icepark.table.maintenance.table_stats import (
    StatsColumn,
    TableStatsResult,
    delete_quietly,
    sketch_batches,
    stats_columns,
    stats_location,
    write_table_stats,
)
from icepark.table.table import Table

_SKETCH_SCHEMA_PREFIX = "sketch_"


def compute_table_stats(spark: SparkSession, table: TableLike, *,
                        columns: Sequence[str] | None = None, snapshot_id: int | None = None,
                        progress: ProgressCallback | None = None) -> TableStatsResult:
    """Compute an NDV sketch of each of ``columns`` (full dotted names; by default every
    top-level primitive column) over the rows of ``snapshot_id`` (the current snapshot by
    default), write them as a Puffin statistics file ``<metadata>/<snapshot-id>-<uuid>.stats``
    and register it for that snapshot.

    Raises :class:`~icepark.errors.ValidationError` before any job for an unknown column, a
    column that is not primitive, inside a list or map, or of a type without single-value
    serialization (variant, unknown, geometry, geography), and
    :class:`~icepark.errors.NoSuchSnapshot` for an unknown snapshot.
    """
    table = resolve(spark, table)
    metadata = table.metadata
    snapshot = _snapshot(metadata, snapshot_id, "statistics")
    sensitive = case_sensitive(spark)
    if snapshot is None:  # nothing to describe; the names are still checked
        stats_columns(metadata.schema(), columns, case_sensitive=sensitive)
        return TableStatsResult(None, None)
    schema = (None if snapshot.schema_id is None else metadata.schema_by_id(snapshot.schema_id)
              ) or metadata.schema()
    chosen = stats_columns(schema, columns, case_sensitive=sensitive)
    with track(spark, progress):
        sketches = _sketch(spark, table, snapshot, schema, chosen)
    location = stats_location(metadata, snapshot.snapshot_id)
    entry = write_table_stats(table.io, location, snapshot, list(zip(chosen, sketches,
                                                                     strict=True)),
                              created_by=f"icepark {__version__} Spark {spark.version}")
    _register(table.io, location, lambda: table.update_statistics().set_statistics(entry)
              .commit())
    table.refresh()
    return TableStatsResult(location, snapshot.snapshot_id,
                            {c.name: ndv(s, c.name) for c, s in zip(chosen, sketches,
                                                                     strict=True)}, entry)


def compute_partition_stats(spark: SparkSession, table: TableLike, *,
                            snapshot_id: int | None = None) -> PartitionStatsResult:
    """Compute the statistics of every partition of ``snapshot_id`` (the current snapshot by
    default) from its manifests, write them as a Parquet partition statistics file
    ``<metadata>/partition-stats-<snapshot-id>-<uuid>.parquet`` and register it for that
    snapshot.

    Raises :class:`~icepark.errors.ValidationError` for a table without partition fields and
    :class:`~icepark.errors.NoSuchSnapshot` for an unknown snapshot; a snapshot without files
    gets no file (the result's path is None).
    """
    table = resolve(spark, table)
    metadata = table.metadata
    ptype = table_partition_type(metadata)
    schema = partition_stats_schema(ptype, metadata.format_version)
    snapshot = _snapshot(metadata, snapshot_id, "partition statistics")
    if snapshot is None:
        return PartitionStatsResult(None, None)
    rows = collect_partition_stats(table.io, metadata, snapshot, ptype,
                                   partition_coercer(metadata, ptype))
    if not rows:
        return PartitionStatsResult(None, snapshot.snapshot_id)
    location = partition_stats_location(metadata, snapshot.snapshot_id)
    entry = write_partition_stats(table.io, location, snapshot.snapshot_id, schema, rows)
    _register(table.io, location, lambda: table.update_statistics()
              .set_partition_statistics(entry).commit())
    table.refresh()
    return PartitionStatsResult(location, snapshot.snapshot_id, len(rows), entry)


def _snapshot(metadata: TableMetadata, snapshot_id: int | None, what: str) -> Snapshot | None:
    if snapshot_id is None:
        return metadata.current_snapshot()
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise ValidationError(f"A snapshot ID is an integer, not {snapshot_id!r}")
    snapshot = metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        known = ", ".join(str(s.snapshot_id) for s in metadata.snapshots) or "none"
        raise NoSuchSnapshot(f"Cannot compute {what} of snapshot {snapshot_id}: it is not a "
                             f"snapshot of the table (snapshots: {known})")
    return snapshot


def _register(io: FileIO, location: str, commit: Any) -> None:
    """Commit the registration; on a failure, delete the file nothing references."""
    try:
        commit()
    except CommitStateUnknown:
        raise  # the file may be registered: keep it
    except BaseException:
        delete_quietly(io, location)
        raise


def _sketch(spark: SparkSession, table: Table, snapshot: Snapshot, schema: Schema,
            chosen: Sequence[StatsColumn]) -> list[bytes]:
    """The union of every Spark task's compact sketches, one per column."""
    tasks = list(table.scan(snapshot_id=snapshot.snapshot_id).plan_files())
    rows = scan_rows(spark, table, tasks, schema, [c.name for c in chosen],
                     case_sensitive=True).rows
    names = [f"{_SKETCH_SCHEMA_PREFIX}{i}" for i in range(len(chosen))]
    values = rows.select(*(_column(schema, c.field_id).alias(n)
                           for c, n in zip(chosen, names, strict=True)))
    out_schema = ", ".join(f"{n} binary" for n in names)
    types = tuple(c.field_type for c in chosen)
    sketched = values.mapInArrow(partial(_sketch_task, types, names), out_schema).collect()
    return [union(row[i] for row in sketched) for i in range(len(chosen))]


def _column(schema: Schema, field_id: int) -> Column:
    """The column of a (possibly struct-nested) field, by its path of names."""
    path = []
    current: int | None = field_id
    while current is not None:
        path.append(schema.find_field(current).name)
        current = schema.parent_id(current)
    col = F.col(quote(path[-1]))
    for name in reversed(path[:-1]):
        col = col.getField(name)
    return col


def _sketch_task(types: tuple[PrimitiveType, ...], names: list[str],
                 batches: Iterator[Any]) -> Iterator[Any]:
    """One Spark task: the compact sketch of each column of its batches (one row)."""
    sketches = sketch_batches(types, batches)
    yield pa.record_batch([pa.array([s], pa.binary()) for s in sketches], names=names)


__all__ = ["compute_partition_stats", "compute_table_stats"]
