"""Metadata tables of data and delete files: ``files``, ``entries`` and their ``all_`` forms.

Spec, *Manifests*: "A manifest is an immutable Avro file that lists data files or delete files,
along with each file's partition data tuple, metrics, and tracking information." These tables
show the ``data_file`` struct of each manifest entry with the column names and field IDs of the
spec (``100 file_path``, ``102 partition``, ``125 lower_bounds`` ...), plus the ``141 spec_id``
of the manifest that lists the file and a ``readable_metrics`` struct: the metrics of every
primitive column of the current schema, by full column name, with the bounds decoded from their
Appendix D binary form ("Single-value serialization for lower and upper bounds is detailed in
Appendix D").

* ``files``, ``data_files``, ``delete_files``: the live files (status EXISTING or ADDED) of one
  snapshot, all, data only ("content" 0), or deletes only;
* ``entries``: every manifest entry of one snapshot, DELETED ones too, with the entry fields
  (``0 status``, ``1 snapshot_id``, ``3 sequence_number``, ``4 file_sequence_number``) after
  *Sequence Number Inheritance*;
* ``all_files`` ...: the live files of every manifest of every snapshot, each path once (the
  first time it is seen, oldest snapshot first); ``all_entries``: every entry of every manifest
  reachable from a snapshot (each manifest read once).

The ``partition`` column has the table's *unified* partition type (:func:`table_partition_type`)
so that files of every spec fit one column; a table whose specs have no fields has no
``partition`` column, as in the reference implementation. Manifests are read on a small thread
pool, a bounded number at a time, and turned into Arrow batches one manifest after another, so a
single snapshot never reads other snapshots' manifests.

>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.spec.schema import Schema
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(2, "tags", ListType(3, STRING)))
>>> [f.name for f in readable_metrics_type(schema, 200).fields]
['id', 'tags.element']
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa

from icepark.errors import NoSuchSnapshot, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import (
    BINARY,
    INT,
    LONG,
    STRING,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)
from icepark.table.scan.tasks import parallel_map
from icepark.table.table import Table

T = TypeVar("T")
R = TypeVar("R")

_METRIC_NAMES = ("column_size", "value_count", "null_value_count", "nan_value_count")
_FILE_FIELDS_BEFORE_PARTITION = (
    NestedField.required(134, "content", INT,
                         "0: DATA, 1: POSITION DELETES, 2: EQUALITY DELETES"),
    NestedField.required(100, "file_path", STRING, "Full URI for the file with FS scheme"),
    NestedField.required(101, "file_format", STRING,
                         "String file format name, avro, orc or parquet"),
    NestedField.required(141, "spec_id", INT, "Partition spec ID"),
)
_FILE_FIELDS_AFTER_PARTITION = (
    NestedField.required(103, "record_count", LONG, "Number of records in this file"),
    NestedField.required(104, "file_size_in_bytes", LONG, "Total file size in bytes"),
    NestedField.optional(108, "column_sizes", MapType(117, INT, 118, LONG)),
    NestedField.optional(109, "value_counts", MapType(119, INT, 120, LONG)),
    NestedField.optional(110, "null_value_counts", MapType(121, INT, 122, LONG)),
    NestedField.optional(137, "nan_value_counts", MapType(138, INT, 139, LONG)),
    NestedField.optional(125, "lower_bounds", MapType(126, INT, 127, BINARY)),
    NestedField.optional(128, "upper_bounds", MapType(129, INT, 130, BINARY)),
    NestedField.optional(131, "key_metadata", BINARY),
    NestedField.optional(132, "split_offsets", ListType(133, LONG)),
    NestedField.optional(135, "equality_ids", ListType(136, INT)),
    NestedField.optional(140, "sort_order_id", INT),
    NestedField.optional(142, "first_row_id", LONG,
                         "The _row_id for the first row in the data file (v3)"),
    NestedField.optional(143, "referenced_data_file", STRING,
                         "Fully qualified location of a data file that all deletes reference"),
    NestedField.optional(144, "content_offset", LONG,
                         "The offset in the file where the content starts"),
    NestedField.optional(145, "content_size_in_bytes", LONG,
                         "The length of a referenced content stored in the file"),
)
_ENTRY_FIELDS = (
    NestedField.required(0, "status", INT, "0: EXISTING 1: ADDED 2: DELETED"),
    NestedField.optional(1, "snapshot_id", LONG),
    NestedField.optional(3, "sequence_number", LONG),
    NestedField.optional(4, "file_sequence_number", LONG),
)


# ----------------------------------------------------------------------------- shared helpers

class ArrowBuilder:
    """Rows (tuples in the order of ``schema``'s fields, structs as nested tuples) to Arrow.

    >>> b = ArrowBuilder(Schema.of(NestedField.required(1, "n", LONG)))
    >>> b.table([b.batch([(1,), (2,)])]).column("n").to_pylist()
    [1, 2]
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema)

    def batch(self, rows: Sequence[tuple[Any, ...]], tail: Sequence[Any] = ()) -> Any:
        """A RecordBatch of ``rows``; ``tail`` holds ready Arrow arrays of the last columns
        (then rows hold the other columns only)."""
        fields = self.schema.fields[:len(self.schema.fields) - len(tail)]
        columns = [_array(f.field_type, self.arrow_schema.field(i).type, [row[i] for row in rows])
                   for i, f in enumerate(fields)]
        return pa.RecordBatch.from_arrays([*columns, *tail], schema=self.arrow_schema)

    def table(self, batches: Iterable[Any]) -> Any:
        """The batches as one Table; empty batches are left out (consumers such as PySpark's
        ``createDataFrame`` stop reading at an empty batch)."""
        return pa.Table.from_batches([b for b in batches if b.num_rows],
                                     schema=self.arrow_schema)


def _array(t: IcebergType, arrow_type: Any, values: list[Any]) -> Any:
    if not isinstance(t, StructType):
        return pa.array(values, type=arrow_type)
    children = [_array(f.field_type, af.type, [None if v is None else v[i] for v in values])
                for i, (f, af) in enumerate(zip(t.fields, arrow_type, strict=True))]
    nulls = [v is None for v in values]
    mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
    return pa.StructArray.from_arrays(children, fields=list(arrow_type), mask=mask)


def select_snapshot(metadata: TableMetadata, snapshot_id: int | None) -> Snapshot | None:
    """The snapshot to inspect: ``snapshot_id``'s, or the current one (None if there is none)."""
    if snapshot_id is None:
        return metadata.current_snapshot()
    snapshot = metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        known = ", ".join(str(s.snapshot_id) for s in metadata.snapshots) or "none"
        raise NoSuchSnapshot(f"Cannot inspect snapshot {snapshot_id}: it is not a snapshot of "
                             f"the table (snapshots: {known})")
    return snapshot


def reachable_manifests(table: Table) -> Iterator[ManifestFile]:
    """Every manifest of every snapshot, each path once, oldest snapshot first (manifest
    lists are read in parallel)."""
    seen: set[str] = set()
    for manifests in parallel_map(lambda s: snapshot_manifests(table.io, s),
                                  table.metadata.snapshots):
        for manifest in manifests:
            if manifest.manifest_path not in seen:
                seen.add(manifest.manifest_path)
                yield manifest


def read_entries(io: FileIO, metadata: TableMetadata, manifests: Iterable[ManifestFile], *,
                 live: bool) -> Iterator[list[ManifestEntry]]:
    """The entries of each manifest (only live ones if ``live``), read in parallel, in order."""
    specs = {s.spec_id: s for s in metadata.partition_specs}
    return parallel_map(lambda m: list(read_manifest(io, m, specs_by_id=specs,
                                                     discard_deleted=live)), manifests)


# ----------------------------------------------------------------------------- partition type

def spec_partition_type(metadata: TableMetadata, spec: PartitionSpec) -> StructType:
    """A spec's partition type against the current schema, else the newest schema that still
    has its source columns."""
    schemas = [metadata.schema(), *reversed(metadata.schemas)]
    error: ValidationError | None = None
    for schema in schemas:
        try:
            return spec.partition_type(schema)
        except ValidationError as e:
            error = error or e
    assert error is not None
    raise error


def table_partition_type(metadata: TableMetadata) -> StructType:
    """The partition type of the whole table: the union of every spec's partition fields by
    field ID, in ID order, as the reference implementation builds it for metadata tables.

    The name and type of a field come from the newest spec that has it with a transform other
    than ``void`` (v1 tables drop fields by making them void). Two specs giving one field ID
    different result types is an error; a name used by two field IDs is kept by the newer one
    and the older one gets ``_<field ID>`` appended. A field with a transform icepark does not
    know is left out (the type of its values is not known), as in ``_partition``.
    """
    found: dict[int, tuple[NestedField, bool]] = {}  # field ID -> (field, is void)
    for spec in sorted(metadata.partition_specs, key=lambda s: s.spec_id, reverse=True):
        ptype = spec_partition_type(metadata, spec)
        for pf, nf in zip(spec.fields, ptype.fields, strict=True):
            if pf.transform.is_unknown:
                continue
            known = found.get(pf.field_id)
            is_void = pf.transform.is_void
            if known is None or (known[1] and not is_void):
                found[pf.field_id] = (nf, is_void)
            elif not is_void and known[0].field_type != nf.field_type:
                raise ValidationError(
                    f"Partition field {pf.field_id} is {known[0].field_type} in one spec and "
                    f"{nf.field_type} in spec {spec.spec_id}: field IDs must keep their type")
    fields: list[NestedField] = []
    names: set[str] = set()
    for field_id in sorted(found, reverse=True):
        nf = found[field_id][0]
        name = nf.name if nf.name not in names else f"{nf.name}_{field_id}"
        names.add(name)
        fields.append(NestedField.optional(field_id, name, nf.field_type))
    return StructType(tuple(reversed(fields)))


def partition_coercer(metadata: TableMetadata,
                      ptype: StructType) -> Callable[[DataFile], tuple[Any, ...]]:
    """A function giving a file's partition tuple in ``ptype`` (None where its spec has no
    such field)."""
    positions = {f.field_id: i for i, f in enumerate(ptype.fields)}
    width = len(ptype.fields)
    layouts = {spec.spec_id: [positions.get(f.field_id) for f in spec.fields]
               for spec in metadata.partition_specs}

    def coerce(data_file: DataFile) -> tuple[Any, ...]:
        layout = layouts.get(data_file.spec_id)
        if layout is None or len(layout) != len(data_file.partition):
            raise ValidationError(f"{data_file.file_path}: its partition does not match a "
                                  f"partition spec of the table (spec {data_file.spec_id})")
        out: list[Any] = [None] * width
        for position, value in zip(layout, data_file.partition, strict=True):
            if position is not None:  # None: a field left out of the type (unknown transform)
                out[position] = value
        return tuple(out)

    return coerce


# ----------------------------------------------------------------------------- schemas

def _metric_columns(schema: Schema) -> list[tuple[int, str, PrimitiveType]]:
    """Every primitive column (list elements and map keys and values too) as (ID, full name,
    type), sorted by name."""
    columns = [(f.field_id, schema.find_column_name(f.field_id) or str(f.field_id),
                f.field_type) for f in index_by_id(schema).values()]
    return sorted(((fid, name, t) for fid, name, t in columns if isinstance(t, PrimitiveType)),
                  key=lambda c: c[1])


def readable_metrics_type(schema: Schema, first_id: int) -> StructType:
    """One struct per primitive column of ``schema`` (list elements and map keys and values
    too), named by full column name, sorted by name; field IDs from ``first_id`` on."""
    fields = []
    next_id = first_id
    for _, name, t in _metric_columns(schema):
        metrics = [NestedField.optional(next_id + i, m, LONG) for i, m in enumerate(_METRIC_NAMES)]
        metrics += [NestedField.optional(next_id + 4, "lower_bound", t),
                    NestedField.optional(next_id + 5, "upper_bound", t)]
        fields.append(NestedField.optional(next_id + 6, name, StructType(tuple(metrics)),
                                           f"Metrics for column {name}"))
        next_id += 7
    return StructType(tuple(fields))


def data_file_fields(ptype: StructType) -> tuple[NestedField, ...]:
    """The ``data_file`` columns; ``partition`` only when the table has partition fields."""
    partition = (NestedField.required(102, "partition", ptype),) if ptype.fields else ()
    return (*_FILE_FIELDS_BEFORE_PARTITION, *partition, *_FILE_FIELDS_AFTER_PARTITION)


def _with_metrics(fields: tuple[NestedField, ...], schema: Schema) -> Schema:
    highest = Schema(fields).highest_field_id
    metrics = readable_metrics_type(schema, highest + 1)
    return Schema((*fields, NestedField.optional(
        highest + 7 * len(metrics.fields) + 1, "readable_metrics", metrics,
        "Column metrics in readable form")))


def files_schema(metadata: TableMetadata) -> Schema:
    """The schema of the ``files`` tables."""
    return _with_metrics(data_file_fields(table_partition_type(metadata)), metadata.schema())


def entries_schema(metadata: TableMetadata) -> Schema:
    """The schema of the ``entries`` tables."""
    data_file = StructType(data_file_fields(table_partition_type(metadata)))
    fields = (*_ENTRY_FIELDS, NestedField.required(2, "data_file", data_file))
    return _with_metrics(fields, metadata.schema())


# ----------------------------------------------------------------------------- rows

class _FileRows:
    """Turns data files into ``data_file`` rows and ``readable_metrics`` arrays."""

    def __init__(self, metadata: TableMetadata) -> None:
        ptype = table_partition_type(metadata)
        self._coerce = partition_coercer(metadata, ptype) if ptype.fields else None
        self._columns = [(fid, name, _decoder(t))
                         for fid, name, t in _metric_columns(metadata.schema())]

    def data_file(self, f: DataFile) -> tuple[Any, ...]:
        partition = () if self._coerce is None else (self._coerce(f),)
        return (int(f.content), f.file_path, f.file_format.value, f.spec_id, *partition,
                f.record_count, f.file_size_in_bytes, *map(_plain, (
                    f.column_sizes, f.value_counts, f.null_value_counts, f.nan_value_counts,
                    f.lower_bounds, f.upper_bounds)), f.key_metadata,
                _plain(f.split_offsets), _plain(f.equality_ids), f.sort_order_id,
                f.first_row_id, f.referenced_data_file, f.content_offset,
                f.content_size_in_bytes)

    def readable_metrics(self, files: Sequence[DataFile], arrow_type: Any) -> Any:
        """The ``readable_metrics`` of ``files`` as a StructArray of ``arrow_type``, built
        column by column."""
        if not self._columns:
            return pa.array([{}] * len(files), arrow_type)
        sizes = [f.column_sizes or _NONE for f in files]
        counts = [f.value_counts or _NONE for f in files]
        nulls = [f.null_value_counts or _NONE for f in files]
        nans = [f.nan_value_counts or _NONE for f in files]
        lowers = [f.lower_bounds or _NONE for f in files]
        uppers = [f.upper_bounds or _NONE for f in files]
        children = []
        for (fid, name, decode), column in zip(self._columns, arrow_type, strict=True):
            values = [[m.get(fid) for m in maps] for maps in (sizes, counts, nulls, nans)]
            for bounds in (lowers, uppers):
                values.append(_decoded(files, [m.get(fid) for m in bounds], decode, name))
            metrics = list(column.type)
            children.append(pa.StructArray.from_arrays(
                [pa.array(v, type=m.type) for v, m in zip(values, metrics, strict=True)],
                fields=metrics))
        return pa.StructArray.from_arrays(children, fields=list(arrow_type))


def _decoded(files: Sequence[DataFile], raw: list[bytes | None],
             decode: Callable[[bytes], Any], column: str) -> list[Any]:
    out = []
    for f, value in zip(files, raw, strict=True):
        try:
            out.append(None if value is None else decode(value))
        except ValidationError as e:
            raise ValidationError(f"{f.file_path}: cannot read the bounds of column "
                                  f"{column!r}: {e}") from None
    return out


_NONE: Mapping[int, Any] = {}


def _plain(values: Any) -> Any:
    """A mapping as a dict and a tuple as a list, for Arrow."""
    return values if values is None else (
        dict(values) if isinstance(values, Mapping) else list(values))


def _decoder(t: PrimitiveType) -> Callable[[bytes], Any]:
    """:func:`~icepark.spec.bounds.from_bytes` for ``t``, with a fast path for the common
    sizes ("Stored as 4-byte little-endian" / 8-byte) and UTF-8 strings."""
    fmt = _FIXED_WIDTH.get(t.type_id)
    if fmt is not None:
        unpack, size = struct.Struct(fmt).unpack, struct.calcsize(fmt)

        def fixed(raw: bytes) -> Any:
            return unpack(raw)[0] if len(raw) == size else from_bytes(t, raw)

        return fixed
    if t.type_id is TypeId.STRING:

        def text(raw: bytes) -> Any:
            try:
                return bytes(raw).decode()
            except UnicodeDecodeError:
                return from_bytes(t, raw)  # raises a ValidationError saying why

        return text
    return partial(from_bytes, t)


_FIXED_WIDTH = {TypeId.INT: "<i", TypeId.LONG: "<q", TypeId.FLOAT: "<f", TypeId.DOUBLE: "<d",
                TypeId.DATE: "<i", TypeId.TIME: "<q", TypeId.TIMESTAMP: "<q",
                TypeId.TIMESTAMPTZ: "<q"}


# ----------------------------------------------------------------------------- tables

_CONTENTS: dict[str, frozenset[ManifestContent]] = {
    "files": frozenset(ManifestContent),
    "data_files": frozenset({ManifestContent.DATA}),
    "delete_files": frozenset({ManifestContent.DELETES}),
}
"""Spec: "A manifest may store either data files or delete files, but not both"."""


def _files_table(table: Table, kind: str, manifests: Iterable[ManifestFile],
                 unique: bool) -> Any:
    metadata = table.metadata
    builder, rows = ArrowBuilder(files_schema(metadata)), _FileRows(metadata)
    wanted = (m for m in manifests if m.content in _CONTENTS[kind])
    metrics_type, seen = builder.arrow_schema.field("readable_metrics").type, set[str]()

    def batches() -> Iterator[Any]:
        for entries in read_entries(table.io, metadata, wanted, live=True):
            out = [e.data_file for e in entries]
            if unique:
                out = [f for f in out if f.file_path not in seen]
                seen.update(f.file_path for f in out)
            yield builder.batch([rows.data_file(f) for f in out],
                                [rows.readable_metrics(out, metrics_type)])

    return builder.table(batches())


def _snapshot_manifests(table: Table, snapshot_id: int | None) -> list[ManifestFile]:
    snapshot = select_snapshot(table.metadata, snapshot_id)
    return [] if snapshot is None else snapshot_manifests(table.io, snapshot)


def files(table: Table, snapshot_id: int | None = None) -> Any:
    """The live data and delete files of the current snapshot (or ``snapshot_id``'s)."""
    return _files_table(table, "files", _snapshot_manifests(table, snapshot_id), False)


def data_files(table: Table, snapshot_id: int | None = None) -> Any:
    """The live data files ("0: DATA") of the current snapshot (or ``snapshot_id``'s)."""
    return _files_table(table, "data_files", _snapshot_manifests(table, snapshot_id), False)


def delete_files(table: Table, snapshot_id: int | None = None) -> Any:
    """The live position and equality delete files of the current snapshot (or
    ``snapshot_id``'s)."""
    return _files_table(table, "delete_files", _snapshot_manifests(table, snapshot_id), False)


def all_files(table: Table) -> Any:
    """The files live in any manifest of any snapshot, each path once."""
    return _files_table(table, "files", reachable_manifests(table), True)


def all_data_files(table: Table) -> Any:
    """The data files live in any manifest of any snapshot, each path once."""
    return _files_table(table, "data_files", reachable_manifests(table), True)


def all_delete_files(table: Table) -> Any:
    """The delete files live in any manifest of any snapshot, each path once."""
    return _files_table(table, "delete_files", reachable_manifests(table), True)


def _entries_table(table: Table, manifests: Iterable[ManifestFile]) -> Any:
    metadata = table.metadata
    builder, rows = ArrowBuilder(entries_schema(metadata)), _FileRows(metadata)
    metrics_type = builder.arrow_schema.field("readable_metrics").type

    def batches() -> Iterator[Any]:
        for entries in read_entries(table.io, metadata, manifests, live=False):
            yield builder.batch(
                [(int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number,
                  rows.data_file(e.data_file)) for e in entries],
                [rows.readable_metrics([e.data_file for e in entries], metrics_type)])

    return builder.table(batches())


def entries(table: Table, snapshot_id: int | None = None) -> Any:
    """Every manifest entry (DELETED ones too) of the current snapshot (or ``snapshot_id``'s):
    "Used to track additions and deletions. Deletes are informational only"."""
    return _entries_table(table, _snapshot_manifests(table, snapshot_id))


def all_entries(table: Table) -> Any:
    """Every entry of every manifest reachable from any snapshot (each manifest once)."""
    return _entries_table(table, reachable_manifests(table))
