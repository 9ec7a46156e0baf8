r"""Column statistics files: one Theta sketch of distinct values per column, in a Puffin file
registered for a snapshot.

Spec, *Table Statistics*: "Table statistics files are valid Puffin files. Statistics are
informational. A reader can choose to ignore statistics information." Each column's blob is an
``apache-datasketches-theta-v1`` sketch (:mod:`icepark.io.puffin.theta`) "feeding it with
individual distinct values converted to bytes using Iceberg's single-value serialization" (spec,
Appendix D, *Binary single-value serialization*): ``int``, ``date`` "4-byte little-endian",
``long``, ``time`` and the timestamps "8-byte little-endian", ``float``/``double`` their IEEE 754
bits little-endian, ``boolean`` one byte, ``string`` "UTF-8 bytes (without length)", ``binary``
and ``fixed`` the value, ``uuid`` "16-byte big-endian", ``decimal(P, S)`` the "unscaled value as
two's-complement big-endian binary, using the minimum number of bytes". Nulls are not values and
are skipped. ``unknown``, ``variant``, ``geometry`` and ``geography`` columns are not sketched.

This module holds the parts without an engine: which columns (:func:`stats_columns`), the hashes
of an Arrow column's values (:func:`value_hashes`), a partition's sketches
(:func:`sketch_batches`, what each Spark task runs), where the file goes
(:func:`stats_location`: ``<metadata>/<snapshot-id>-<uuid>.stats``, as the reference
implementation names it), and writing and reading the file (:func:`write_table_stats`,
:func:`read_theta_sketches`). Each blob is ZSTD-compressed and carries ``fields`` = [the column's
field ID], the snapshot's ID and sequence number and the ``ndv`` property (blob metadata:
"Sequence number of the Iceberg table's snapshot the blob was computed from").

>>> import pyarrow as pa
>>> from icepark.io.puffin.theta import union, ndv
>>> from icepark.spec.types import LONG
>>> sketch = union(sketch_batches((LONG,), [pa.record_batch([pa.array([1, 2, 2, None])],
...                                                           names=["c0"])])[:1])
>>> ndv(sketch)
2

Known divergence: the reference implementation (Iceberg 1.10's Spark action) serializes a
``uuid`` column from the Spark string it reads, so its sketch of a uuid column hashes the
36-character text, not the 16 bytes the spec names; the NDV agrees, the hashes do not.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import CorruptFile, ValidationError
from icepark.io.fileio import FileIO
from icepark.io.puffin.codec import Codec
from icepark.io.puffin.reader import PuffinReader
from icepark.io.puffin.theta import (
    NDV_PROPERTY,
    THETA_BLOB_TYPE,
    ThetaAccumulator,
    hash_bytes,
    hash_fixed,
    ndv,
)
from icepark.io.puffin.writer import PuffinWriter
from icepark.spec.bounds import to_bytes
from icepark.spec.metadata import StatisticsFile, TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import FrozenMap, Snapshot
from icepark.spec.types import ListType, MapType, PrimitiveType, TypeId
from icepark.table.change.statistics import statistics_file
from icepark.table.snapshot.locations import LocationProvider

NOT_SKETCHED = frozenset({TypeId.UNKNOWN, TypeId.VARIANT, TypeId.GEOMETRY, TypeId.GEOGRAPHY})
"""Primitive types without sketches: Appendix D serializes ``unknown`` and ``variant`` "Not
supported"; geometry and geography (WKB) are left out, as the reference implementation does."""
# Appendix D widths of the fixed-width types, and the Arrow integer type their values cast to.
_FIXED = {
    TypeId.INT: (4, pa.int32()), TypeId.DATE: (4, pa.int32()),
    TypeId.LONG: (8, pa.int64()), TypeId.TIME: (8, pa.int64()),
    TypeId.TIMESTAMP: (8, pa.int64()), TypeId.TIMESTAMPTZ: (8, pa.int64()),
    TypeId.TIMESTAMP_NS: (8, pa.int64()), TypeId.TIMESTAMPTZ_NS: (8, pa.int64()),
}
_FLOATS = {TypeId.FLOAT: np.uint32, TypeId.DOUBLE: np.uint64}
_BYTES = frozenset({TypeId.BINARY, TypeId.FIXED, TypeId.UUID})


@dataclass(frozen=True, slots=True)
class StatsColumn:
    """A column to sketch: its full dotted ``name``, ``field_id`` and type."""

    name: str
    field_id: int
    field_type: PrimitiveType


@dataclass(frozen=True, slots=True)
class TableStatsResult:
    """What :func:`icepark.spark.maintenance.stats.compute_table_stats` did:
    ``statistics_path`` of the registered file and the ``snapshot_id`` it describes (both None
    when the table has no snapshot: nothing is written), and each column's ``ndv`` by name."""

    statistics_path: str | None
    snapshot_id: int | None
    ndv: Mapping[str, int] = field(default_factory=FrozenMap, hash=False)
    statistics_file: StatisticsFile | None = None


def stats_columns(schema: Schema, columns: Sequence[str] | None = None, *,
                  case_sensitive: bool = True) -> tuple[StatsColumn, ...]:
    """The columns to sketch: ``columns`` (full dotted names, duplicates once, in order), or by
    default every top-level primitive column of a sketched type (the reference implementation's
    default, over the schema of the snapshot).

    >>> from icepark.spec.types import LONG, STRING, NestedField, StructType
    >>> s = Schema.of(NestedField.required(1, "id", LONG),
    ...               NestedField.optional(2, "p", StructType((
    ...                   NestedField.optional(3, "name", STRING),))))
    >>> [c.name for c in stats_columns(s)], [c.field_id for c in stats_columns(s, ["p.name"])]
    (['id'], [3])
    >>> stats_columns(s, ["p"])
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot compute statistics of column 'p': it is a struct, \
not a primitive column
    """
    if columns is None:
        chosen = [f.name for f in schema.fields
                  if isinstance(f.field_type, PrimitiveType)
                  and f.field_type.type_id not in NOT_SKETCHED]
        if not chosen:
            raise ValidationError("Cannot compute statistics: the table has no primitive "
                                  "column of a type with sketches")
    else:
        if isinstance(columns, str):
            raise ValidationError(f"Give the columns as a list of names, not the string "
                                  f"{columns!r}")
        chosen = list(dict.fromkeys(columns))
        if not chosen:
            raise ValidationError("Cannot compute statistics of no columns: name at least one, "
                                  "or leave the columns out for every primitive column")
    return tuple(_column(schema, name, case_sensitive) for name in chosen)


def _column(schema: Schema, name: str, case_sensitive: bool) -> StatsColumn:
    field_id = schema.find_field_id(name, case_sensitive) if isinstance(name, str) else None
    if field_id is None:
        known = ", ".join(f.name for f in schema.fields)
        raise ValidationError(f"Cannot compute statistics of column {name!r}: the table has no "
                              f"such column (top-level columns: {known})")
    nested = schema.find_field(field_id)
    t = nested.field_type
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"Cannot compute statistics of column {name!r}: it is a "
                              f"{type(t).__name__.removesuffix('Type').lower()}, not a "
                              "primitive column")
    if t.type_id in NOT_SKETCHED:
        raise ValidationError(f"Cannot compute statistics of column {name!r}: {t} values have "
                              "no single-value serialization to sketch")
    parent = schema.parent_id(field_id)
    while parent is not None:
        if isinstance(schema.find_field(parent).field_type, ListType | MapType):
            raise ValidationError(f"Cannot compute statistics of column {name!r}: it is inside "
                                  "a list or map (a row holds many of its values)")
        parent = schema.parent_id(parent)
    full = schema.find_column_name(field_id)
    assert full is not None
    return StatsColumn(full, field_id, t)


def value_hashes(t: PrimitiveType, array: Any) -> np.ndarray:
    """The Theta hashes of the non-null values of an Arrow array of type ``t`` (in Spark's
    read layout: uuids as 16 bytes, nanosecond timestamps as longs; Arrow's own types too),
    each value serialized as Appendix D says. Fixed-width values hash in one vectorized step;
    the others are made distinct first, then hashed one by one."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    array = array.drop_null()
    tid = t.type_id
    if tid in _FIXED:
        width, int_type = _FIXED[tid]
        ints = np.asarray(array.cast(int_type).to_numpy(zero_copy_only=False))
        unsigned = ints.view(np.uint32 if width == 4 else np.uint64)
        return hash_fixed(unsigned.astype(np.uint64), width)
    if tid in _FLOATS:
        bits = np.asarray(array.to_numpy(zero_copy_only=False)).view(_FLOATS[tid])
        return hash_fixed(bits.astype(np.uint64), bits.dtype.itemsize)
    return np.fromiter((hash_bytes(v) for v in serialized_values(t, pc.unique(array)) if v),
                       np.uint64)


def serialized_values(t: PrimitiveType, array: Any) -> Iterable[bytes]:
    """The Appendix D bytes of the values of a non-null Arrow array of a variable-width type
    (or boolean, or decimal)."""
    match t.type_id:
        case TypeId.BOOLEAN:
            return (b"\x01" if v else b"\x00" for v in array.to_pylist())
        case TypeId.STRING:
            return (v.encode() if isinstance(v, str) else bytes(v) for v in array.to_pylist())
        case tid if tid in _BYTES:
            return (v.bytes if isinstance(v, uuid.UUID) else bytes(v) for v in array.to_pylist())
        case TypeId.DECIMAL:
            return (to_bytes(t, v) for v in array.to_pylist())
    raise ValidationError(f"Cannot sketch {t} values: no single-value serialization")


def sketch_batches(types: Sequence[PrimitiveType], batches: Iterable[Any]) -> list[bytes]:
    """The compact sketches of the columns of ``batches`` (Arrow record batches whose column
    ``i`` has type ``types[i]``), one per column, in order: what one Spark task computes."""
    sketches = [ThetaAccumulator() for _ in types]
    for batch in batches:
        for t, sketch, column in zip(types, sketches, batch.columns, strict=True):
            sketch.update_hashes(value_hashes(t, column))
    return [s.to_bytes() for s in sketches]


def stats_location(metadata: TableMetadata, snapshot_id: int) -> str:
    """``<write.metadata.path>/<snapshot-id>-<uuid>.stats``: a new statistics file's location."""
    return LocationProvider.of(metadata).metadata_file(f"{snapshot_id}-{uuid.uuid4()}.stats")


def write_table_stats(io: FileIO, location: str, snapshot: Snapshot,
                      sketches: Sequence[tuple[StatsColumn, bytes]],
                      created_by: str | None = None) -> StatisticsFile:
    """Write a Puffin file with one theta blob per (column, sketch) and return its
    ``statistics`` entry for ``snapshot``; a failure leaves no file behind."""
    properties = {"created-by": created_by} if created_by else None
    with PuffinWriter(io, location, properties=properties) as writer:
        for column, sketch in sketches:
            writer.add_blob(THETA_BLOB_TYPE, sketch, fields=(column.field_id,),
                            snapshot_id=snapshot.snapshot_id,
                            sequence_number=snapshot.sequence_number,
                            properties={NDV_PROPERTY: str(ndv(sketch, column.name))},
                            compression=Codec.ZSTD)
    return statistics_file(writer.result, snapshot.snapshot_id)


def delete_quietly(io: FileIO, location: str) -> None:
    """Delete a file written for a commit that failed (best effort)."""
    with contextlib.suppress(Exception):
        io.delete(location)


def read_theta_sketches(io: FileIO, entry: StatisticsFile) -> dict[int, bytes]:
    """The theta sketches of a registered statistics file by field ID (blobs of one field;
    other blob types are skipped, as readers may ignore them)."""
    out: dict[int, bytes] = {}
    with PuffinReader(io, entry.statistics_path, file_size=entry.file_size_in_bytes,
                      footer_size=entry.file_footer_size_in_bytes) as reader:
        for blob in reader.metadata.blobs:
            if blob.type != THETA_BLOB_TYPE:
                continue
            if len(blob.fields) != 1:
                raise CorruptFile(f"{entry.statistics_path}: a {THETA_BLOB_TYPE} blob of "
                                  f"{len(blob.fields)} fields; icepark reads single-column "
                                  "sketches")
            out[blob.fields[0]] = reader.read_blob(blob)
    return out


__all__ = ["NOT_SKETCHED", "StatsColumn", "TableStatsResult", "delete_quietly",
           "read_theta_sketches", "serialized_values", "sketch_batches", "stats_columns",
           "stats_location", "value_hashes", "write_table_stats"]
