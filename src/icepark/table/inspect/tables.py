"""Metadata tables: a table's snapshots, history, references, manifests, files and partitions
as pyarrow Tables, with the columns (names, types, field IDs) of the reference implementation.

Table-level tables read only the table metadata:

* ``snapshots`` -- spec, *Snapshots*: one row per "valid snapshot" with its ``timestamp-ms``
  (``committed_at``), parent, ``operation``, ``manifest-list`` and ``summary`` ("A string map
  that summarizes the snapshot changes", without ``operation``);
* ``history`` -- the ``snapshot-log``: "timestamp and snapshot ID pairs that encodes changes to
  the current snapshot for the table", and whether each snapshot is an ancestor of the current
  one (a rollback leaves snapshots that are not);
* ``refs`` -- spec, *Snapshot Reference*: every branch and tag with its retention settings;
* ``metadata_log_entries`` -- the ``metadata-log`` ("timestamp and metadata file location pairs
  that encodes changes to the previous metadata files") plus the current metadata file, each
  with the snapshot that was current then (from the snapshot log).

Snapshot-level tables read the current snapshot, or the one ``snapshot_id`` names: ``manifests``
(spec, *Manifest Lists*), ``files``, ``data_files``, ``delete_files``, ``entries`` (see
:mod:`icepark.table.inspect.files`) and ``partitions`` (live files and records per partition).
The ``all_`` tables (``all_manifests``, ``all_files``, ``all_data_files``, ``all_delete_files``,
``all_entries``) cover every snapshot.

Timestamps are ``timestamptz`` (Arrow ``timestamp[us, UTC]``). The bounds of
``partition_summaries`` are the human-readable strings of the partition values (as in
partition paths), null when the manifest has no bound ("null if all values are null or NaN").

>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.change.commit import CommitResult
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/w/t")
>>> table = Table(("db", "t"), CommitResult(md, "/w/t/metadata/v1.metadata.json"),
...               ArrowFileIO(), committer=None)  # read-only: nothing to commit
>>> metadata_table(table, "metadata_log_entries").column("file").to_pylist()
['/w/t/metadata/v1.metadata.json']
>>> metadata_table(table, "files").column_names[:4], metadata_table(table, "files").num_rows
(['content', 'file_path', 'file_format', 'spec_id'], 0)
>>> metadata_table(table, "snapshot")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
icepark.errors.ValidationError: Unknown metadata table 'snapshot': use one of all_data_files, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from icepark.errors import ValidationError
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import FileContent, ManifestContent, ManifestFile
from icepark.spec.metadata import MetadataLogEntry, TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import ancestors_of
from icepark.spec.types import (
    BOOLEAN,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.inspect.files import (
    ArrowBuilder,
    all_data_files,
    all_delete_files,
    all_entries,
    all_files,
    data_files,
    delete_files,
    entries,
    files,
    partition_coercer,
    read_entries,
    select_snapshot,
    spec_partition_type,
    table_partition_type,
)
from icepark.table.scan.tasks import parallel_map
from icepark.table.table import Table

__all__ = [
    "METADATA_TABLES",
    "all_data_files",
    "all_delete_files",
    "all_entries",
    "all_files",
    "all_manifests",
    "data_files",
    "delete_files",
    "entries",
    "files",
    "history",
    "manifests",
    "metadata_log_entries",
    "metadata_table",
    "partitions",
    "refs",
    "snapshots",
]

SNAPSHOTS = Schema.of(
    NestedField.required(1, "committed_at", TIMESTAMPTZ),
    NestedField.required(2, "snapshot_id", LONG),
    NestedField.optional(3, "parent_id", LONG),
    NestedField.optional(4, "operation", STRING),
    NestedField.optional(5, "manifest_list", STRING),
    NestedField.optional(6, "summary", MapType(7, STRING, 8, STRING)),
)
HISTORY = Schema.of(
    NestedField.required(1, "made_current_at", TIMESTAMPTZ),
    NestedField.required(2, "snapshot_id", LONG),
    NestedField.optional(3, "parent_id", LONG),
    NestedField.required(4, "is_current_ancestor", BOOLEAN),
)
REFS = Schema.of(
    NestedField.required(1, "name", STRING),
    NestedField.required(2, "type", STRING),
    NestedField.required(3, "snapshot_id", LONG),
    NestedField.optional(4, "max_reference_age_in_ms", LONG),
    NestedField.optional(5, "min_snapshots_to_keep", INT),
    NestedField.optional(6, "max_snapshot_age_in_ms", LONG),
)
METADATA_LOG_ENTRIES = Schema.of(
    NestedField.required(1, "timestamp", TIMESTAMPTZ),
    NestedField.required(2, "file", STRING),
    NestedField.optional(3, "latest_snapshot_id", LONG),
    NestedField.optional(4, "latest_schema_id", INT),
    NestedField.optional(5, "latest_sequence_number", LONG),
)
_PARTITION_SUMMARY = StructType((
    NestedField.required(10, "contains_null", BOOLEAN),
    NestedField.optional(11, "contains_nan", BOOLEAN),
    NestedField.optional(12, "lower_bound", STRING),
    NestedField.optional(13, "upper_bound", STRING),
))
_MANIFEST_FIELDS = (
    NestedField.required(14, "content", INT),
    NestedField.required(1, "path", STRING),
    NestedField.required(2, "length", LONG),
    NestedField.required(3, "partition_spec_id", INT),
    NestedField.required(4, "added_snapshot_id", LONG),
    NestedField.optional(5, "added_data_files_count", INT),
    NestedField.optional(6, "existing_data_files_count", INT),
    NestedField.optional(7, "deleted_data_files_count", INT),
    NestedField.optional(15, "added_delete_files_count", INT),
    NestedField.optional(16, "existing_delete_files_count", INT),
    NestedField.optional(17, "deleted_delete_files_count", INT),
    NestedField.optional(8, "partition_summaries", ListType(9, _PARTITION_SUMMARY)),
)
MANIFESTS = Schema(_MANIFEST_FIELDS)
ALL_MANIFESTS = Schema((*_MANIFEST_FIELDS,
                        NestedField.required(18, "reference_snapshot_id", LONG)))
_PARTITION_COUNTS = (
    NestedField.required(2, "record_count", LONG, "Count of records in data files"),
    NestedField.required(3, "file_count", INT, "Count of data files"),
    NestedField.required(11, "total_data_file_size_in_bytes", LONG,
                         "Total size in bytes of data files"),
    NestedField.required(5, "position_delete_record_count", LONG,
                         "Count of records in position delete files"),
    NestedField.required(6, "position_delete_file_count", INT,
                         "Count of position delete files"),
    NestedField.required(7, "equality_delete_record_count", LONG,
                         "Count of records in equality delete files"),
    NestedField.required(8, "equality_delete_file_count", INT,
                         "Count of equality delete files"),
    NestedField.optional(9, "last_updated_at", TIMESTAMPTZ,
                         "Commit time of snapshot that last updated this partition"),
    NestedField.optional(10, "last_updated_snapshot_id", LONG,
                         "Id of snapshot that last updated this partition"),
)


def _micros(timestamp_ms: int) -> int:
    return timestamp_ms * 1000


# ----------------------------------------------------------------------------- table level

def snapshots(table: Table) -> Any:
    """One row per snapshot of the table, in metadata order."""
    builder = ArrowBuilder(SNAPSHOTS)
    rows = [(_micros(s.timestamp_ms), s.snapshot_id, s.parent_snapshot_id,
             None if s.summary is None else s.summary.operation.value, s.manifest_list,
             None if s.summary is None else dict(s.summary.properties))
            for s in table.metadata.snapshots]
    return builder.table([builder.batch(rows)])


def history(table: Table) -> Any:
    """The snapshot log: when each snapshot became current, and whether it is an ancestor of
    the current snapshot. An expired snapshot's parent is unknown (null)."""
    md = table.metadata
    ancestors = {s.snapshot_id for s in ancestors_of(md.current_snapshot_id, md.snapshots_by_id)}
    rows = []
    for entry in md.snapshot_log:
        snapshot = md.snapshot_by_id(entry.snapshot_id)
        rows.append((_micros(entry.timestamp_ms), entry.snapshot_id,
                     None if snapshot is None else snapshot.parent_snapshot_id,
                     entry.snapshot_id in ancestors))
    builder = ArrowBuilder(HISTORY)
    return builder.table([builder.batch(rows)])


def refs(table: Table) -> Any:
    """Every branch and tag; ``type`` is ``BRANCH`` or ``TAG``."""
    rows = [(name, ref.ref_type.value.upper(), ref.snapshot_id, ref.max_ref_age_ms,
             ref.min_snapshots_to_keep, ref.max_snapshot_age_ms)
            for name, ref in table.metadata.refs.items()]
    builder = ArrowBuilder(REFS)
    return builder.table([builder.batch(rows)])


def _snapshot_as_of(md: TableMetadata, timestamp_ms: int) -> int | None:
    current = None
    for entry in md.snapshot_log:
        if entry.timestamp_ms <= timestamp_ms:
            current = entry.snapshot_id
    return current


def metadata_log_entries(table: Table) -> Any:
    """The previous metadata files and the current one (at ``last-updated-ms``), each with the
    snapshot current at its time and that snapshot's schema ID and sequence number (null when
    no snapshot was current, or it has expired)."""
    md = table.metadata
    rows = []
    for entry in (*md.metadata_log, MetadataLogEntry(table.metadata_location,
                                                     md.last_updated_ms)):
        snapshot_id = _snapshot_as_of(md, entry.timestamp_ms)
        snapshot = None if snapshot_id is None else md.snapshot_by_id(snapshot_id)
        rows.append((_micros(entry.timestamp_ms), entry.metadata_file, snapshot_id,
                     None if snapshot is None else snapshot.schema_id,
                     None if snapshot is None else snapshot.sequence_number))
    builder = ArrowBuilder(METADATA_LOG_ENTRIES)
    return builder.table([builder.batch(rows)])


# ----------------------------------------------------------------------------- manifests

class _ManifestRows:
    """``manifest_file`` records as rows of the manifests tables."""

    def __init__(self, md: TableMetadata) -> None:
        self._md = md
        self._types: dict[int, StructType] = {}

    def row(self, m: ManifestFile) -> tuple[Any, ...]:
        data = m.content is ManifestContent.DATA
        counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
        zeros = (0, 0, 0)
        return (int(m.content), m.manifest_path, m.manifest_length, m.partition_spec_id,
                m.added_snapshot_id, *(counts if data else zeros),
                *(zeros if data else counts), self._summaries(m))

    def _summaries(self, m: ManifestFile) -> list[tuple[Any, ...]] | None:
        """Spec: "A list of field summaries for each partition field in the spec"; bounds
        are "serialized to bytes using the single-object serialization in Appendix D. The
        type of used to encode the value is the type of the partition field data"."""
        if m.partitions is None:
            return None
        spec = self._md.spec_by_id(m.partition_spec_id)
        if spec is None:
            raise ValidationError(f"Manifest {m.manifest_path} has partition spec "
                                  f"{m.partition_spec_id}, which the table does not have")
        ptype = self._types.get(spec.spec_id)
        if ptype is None:
            ptype = self._types[spec.spec_id] = spec_partition_type(self._md, spec)
        out = []
        for pf, nf, s in zip(spec.fields, ptype.fields, m.partitions, strict=False):
            t = nf.field_type
            if not isinstance(t, PrimitiveType):  # partition values are primitive
                raise ValidationError(f"Partition field {pf.name!r} is not primitive: {t}")
            bounds = [None if raw is None else pf.transform.to_human_string(t, from_bytes(t, raw))
                      for raw in (s.lower_bound, s.upper_bound)]
            out.append((s.contains_null, s.contains_nan, *bounds))
        return out


def manifests(table: Table, snapshot_id: int | None = None) -> Any:
    """The manifests of the current snapshot (or ``snapshot_id``'s). File counts are split
    by content: a data manifest has zero delete-file counts and the reverse."""
    snapshot = select_snapshot(table.metadata, snapshot_id)
    builder, rows = ArrowBuilder(MANIFESTS), _ManifestRows(table.metadata)
    listed = [] if snapshot is None else snapshot_manifests(table.io, snapshot)
    return builder.table([builder.batch([rows.row(m) for m in listed])])


def all_manifests(table: Table) -> Any:
    """The manifests of every snapshot, one row per snapshot that lists a manifest
    (``reference_snapshot_id``); manifest lists are read in parallel."""
    md = table.metadata
    builder, rows = ArrowBuilder(ALL_MANIFESTS), _ManifestRows(md)

    def batches() -> Iterator[Any]:
        listed = parallel_map(lambda s: (s.snapshot_id, snapshot_manifests(table.io, s)),
                              md.snapshots)
        for snapshot_id, found in listed:
            yield builder.batch([(*rows.row(m), snapshot_id) for m in found])

    return builder.table(batches())


# ----------------------------------------------------------------------------- partitions

def partitions_schema(md: TableMetadata) -> Schema:
    """The ``partitions`` schema; without ``partition`` and ``spec_id`` when the table has no
    partition fields (as the reference implementation does)."""
    ptype = table_partition_type(md)
    if not ptype.fields:
        return Schema(_PARTITION_COUNTS)
    return Schema((NestedField.required(1, "partition", ptype),
                   NestedField.required(4, "spec_id", INT), *_PARTITION_COUNTS))


def partitions(table: Table, snapshot_id: int | None = None) -> Any:
    """Live records and files per partition of the current snapshot (or ``snapshot_id``'s).

    Partitions are keyed by their value in the table's unified partition type, so files of
    different specs that agree on every field share a row; its ``spec_id`` is then the
    largest (newest) of their specs. ``last_updated_at`` is the commit time of the newest
    snapshot that added one of the partition's live files (null when that snapshot expired).
    Rows follow the order in which partitions are first seen.
    """
    md = table.metadata
    snapshot = select_snapshot(md, snapshot_id)
    schema = partitions_schema(md)
    ptype = table_partition_type(md)
    coerce = partition_coercer(md, ptype) if ptype.fields else None
    stats: dict[tuple[Any, ...], list[Any]] = {}
    listed = [] if snapshot is None else snapshot_manifests(table.io, snapshot)
    for entries_of_manifest in read_entries(table.io, md, listed, live=True):
        for entry in entries_of_manifest:
            f = entry.data_file
            key = () if coerce is None else coerce(f)
            row = stats.get(key)
            if row is None:  # spec, 3 counts, 2 position, 2 equality, updated at, by
                row = stats[key] = [f.spec_id, 0, 0, 0, 0, 0, 0, 0, None, None]
            row[0] = max(row[0], f.spec_id)
            if f.content is FileContent.DATA:
                row[1] += f.record_count
                row[2] += 1
                row[3] += f.file_size_in_bytes
            elif f.content is FileContent.POSITION_DELETES:
                row[4] += f.record_count
                row[5] += 1
            else:
                row[6] += f.record_count
                row[7] += 1
            added_by = None if entry.snapshot_id is None else md.snapshot_by_id(
                entry.snapshot_id)
            if added_by is not None and (row[8] is None or added_by.timestamp_ms > row[8]):
                row[8], row[9] = added_by.timestamp_ms, added_by.snapshot_id
    builder = ArrowBuilder(schema)
    rows = []
    for key, (spec_id, *counts, at, by) in stats.items():
        tail = (*counts, None if at is None else _micros(at), by)
        rows.append(tail if coerce is None else (key, spec_id, *tail))
    return builder.table([builder.batch(rows)])


# ----------------------------------------------------------------------------- dispatch

_AT_SNAPSHOT: dict[str, Callable[[Table, int | None], Any]] = {
    "entries": entries,
    "files": files,
    "data_files": data_files,
    "delete_files": delete_files,
    "manifests": manifests,
    "partitions": partitions,
}
_WHOLE_TABLE: dict[str, Callable[[Table], Any]] = {
    "snapshots": snapshots,
    "history": history,
    "refs": refs,
    "metadata_log_entries": metadata_log_entries,
    "all_manifests": all_manifests,
    "all_files": all_files,
    "all_data_files": all_data_files,
    "all_delete_files": all_delete_files,
    "all_entries": all_entries,
}
METADATA_TABLES: tuple[str, ...] = tuple(sorted({*_AT_SNAPSHOT, *_WHOLE_TABLE}))
"""The names :func:`metadata_table` accepts."""


def metadata_table(table: Table, name: str, snapshot_id: int | None = None) -> Any:
    """The metadata table ``name`` (case-insensitive) of ``table`` as a pyarrow Table.

    ``snapshot_id`` selects the snapshot of the snapshot-level tables (``entries``, ``files``,
    ``data_files``, ``delete_files``, ``manifests``, ``partitions``); giving it for any other
    table is an error.
    """
    key = name.strip().lower()
    if key in _AT_SNAPSHOT:
        return _AT_SNAPSHOT[key](table, snapshot_id)
    if key not in _WHOLE_TABLE:
        raise ValidationError(f"Unknown metadata table {name!r}: use one of "
                              f"{', '.join(METADATA_TABLES)}")
    if snapshot_id is not None:
        raise ValidationError(
            f"Metadata table {key!r} covers the whole table and cannot be read at snapshot "
            f"{snapshot_id}: only {', '.join(sorted(_AT_SNAPSHOT))} can")
    return _WHOLE_TABLE[key](table)
