"""Iceberg schemas as Arrow schemas whose every field carries its Iceberg field ID, and back.

Spec, Appendix A, *Parquet*: "Values should be stored in Parquet using the types and logical
type annotations in the table below. Column IDs are required." pyarrow's Parquet writer turns
the field metadata ``PARQUET:field_id`` into the Parquet ``field_id`` of each column, so every
Arrow field made here -- struct fields, list elements, map keys and values -- carries it.

Type choices (Appendix A lists Parquet types; the Arrow types are ours):

* ``string`` is ``pa.string()`` and ``binary`` is ``pa.binary()`` (32-bit offsets): the Arrow
  types Spark sends by default, so its batches need no copy; the Parquet column is the same
  ``binary``/``UTF8`` either way, and row groups are written from chunked tables, so one chunk
  never has to hold more than a batch.
* ``uuid`` is Arrow's canonical ``arrow.uuid`` extension type (``pa.uuid()``, pyarrow >= 18),
  which pyarrow writes as ``fixed_len_byte_array[16]`` with the Parquet logical type ``UUID`` as
  the table requires; older pyarrow falls back to ``fixed_size_binary(16)`` (no logical type).
* ``time`` is ``time64[us]`` (pyarrow writes ``TIME_MICROS`` with ``adjustToUtc=false``),
  ``timestamp`` is ``timestamp[us]`` and ``timestamptz`` is ``timestamp[us, tz=UTC]``.
* ``decimal(P,S)`` is ``decimal128(P, S)``; the writer stores it as int32/int64/fixed by
  precision ("``P <= 9``: ``int32``, ``P <= 18``: ``int64``, ``fixed`` otherwise").
* Lists are ``list<element>``, maps ``map<key, value>``: the 3-level Parquet representations
  ("Lists must use the 3-level representation").
* The v3 types: ``timestamp_ns`` is ``timestamp[ns]`` and ``timestamptz_ns``
  ``timestamp[ns, tz=UTC]`` (pyarrow writes ``TIMESTAMP(NANOS)`` with ``isAdjustedToUTC`` as
  the zone says, beside ``TIMESTAMP(MICROS)`` columns in the same file); ``unknown`` is
  ``null`` (the writer leaves it out of the file: "Omit from data files"); ``variant`` is
  ``struct<metadata: binary, value: binary>`` without field IDs inside
  (:mod:`icepark.io.arrow.variant`); ``geometry`` and ``geography`` are WKB in GeoArrow's
  ``geoarrow.wkb`` extension type carrying the CRS and edges, which pyarrow writes as the
  Parquet ``GEOMETRY``/``GEOGRAPHY`` logical types (:mod:`icepark.io.arrow.geo`).

:func:`conform_batch` fits incoming Arrow data to such a schema, by name, before it is written.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, ListType, NestedField
>>> s = Schema.of(NestedField.required(1, "id", LONG),
...               NestedField.optional(2, "tags", ListType(3, STRING, element_required=False)))
>>> arrow = to_arrow_schema(s)
>>> arrow.field("tags").type.value_field.metadata
{b'PARQUET:field_id': b'3'}
>>> from_arrow_schema(arrow) == s
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import IncompatibleColumn, UnsupportedFeature, ValidationError
from icepark.io.arrow import geo, variant
from icepark.io.arrow.fixed_width import fixed_from_binary, uuids_from_strings
from icepark.spec.schema import Schema, SchemaVisitor, fresh_schema, visit
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    VARIANT,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)

FIELD_ID_KEY = b"PARQUET:field_id"
"""The Arrow field metadata key pyarrow maps to and from the Parquet column ``field_id``."""

_TIMESTAMP_UNITS = frozenset({"s", "ms", "us"})
_NANO_TIMESTAMPS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})
_GEO = frozenset({TypeId.GEOMETRY, TypeId.GEOGRAPHY})


def uuid_arrow_type() -> Any:
    """The Arrow type of ``uuid``: ``arrow.uuid`` if this pyarrow has it (Parquet ``UUID``)."""
    make = getattr(pa, "uuid", None)
    return make() if make is not None else pa.binary(16)


_PRIMITIVES: dict[TypeId, Any] = {
    TypeId.BOOLEAN: pa.bool_(),
    TypeId.INT: pa.int32(),
    TypeId.LONG: pa.int64(),
    TypeId.FLOAT: pa.float32(),
    TypeId.DOUBLE: pa.float64(),
    TypeId.DATE: pa.date32(),
    TypeId.TIME: pa.time64("us"),
    TypeId.TIMESTAMP: pa.timestamp("us"),
    TypeId.TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
    TypeId.TIMESTAMP_NS: pa.timestamp("ns"),
    TypeId.TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC"),
    TypeId.STRING: pa.string(),
    TypeId.UUID: uuid_arrow_type(),
    TypeId.BINARY: pa.binary(),
    TypeId.UNKNOWN: pa.null(),
    TypeId.VARIANT: variant.arrow_type(),
}


def field_metadata(field_id: int) -> dict[bytes, bytes]:
    """The Arrow field metadata carrying an Iceberg field ID."""
    return {FIELD_ID_KEY: str(field_id).encode()}


def leaf_field_ids(arrow_schema: Any) -> list[int | None]:
    """The field ID of each Parquet leaf column, in column order (None where there is none)."""
    ids: list[int | None] = []

    def walk(f: Any) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i))
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field)
        else:
            raw = (f.metadata or {}).get(FIELD_ID_KEY)
            ids.append(int(raw) if raw is not None else None)

    for f in arrow_schema:
        walk(f)
    return ids


def to_arrow_field(f: NestedField) -> Any:
    """The Arrow field of an Iceberg field: name, type, nullability ("optional") and ID."""
    return pa.field(f.name, to_arrow_type(f.field_type), nullable=f.is_optional,
                    metadata=field_metadata(f.field_id))


class _ToArrow(SchemaVisitor[Any]):
    def struct(self, struct: StructType, field_results: list[Any]) -> Any:
        return pa.struct(field_results)

    def field(self, f: NestedField, field_result: Any) -> Any:
        return pa.field(f.name, field_result, nullable=f.is_optional,
                        metadata=field_metadata(f.field_id))

    def list(self, list_type: ListType, element_result: Any) -> Any:
        return pa.list_(self.field(list_type.element_field, element_result))

    def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
        return pa.map_(self.field(map_type.key_field, key_result),
                       self.field(map_type.value_field, value_result))

    def primitive(self, primitive: PrimitiveType) -> Any:
        match primitive.type_id:
            case TypeId.DECIMAL:
                return pa.decimal128(primitive.precision, primitive.scale)
            case TypeId.FIXED:
                return pa.binary(primitive.length)
            case TypeId.GEOMETRY | TypeId.GEOGRAPHY:
                return geo.arrow_type(primitive)
            case tid if tid in _PRIMITIVES:
                return _PRIMITIVES[tid]
        raise UnsupportedFeature(f"Type {primitive} has no Arrow type in icepark")


def to_arrow_type(t: IcebergType) -> Any:
    """The Arrow type of an Iceberg type; nested fields carry their field IDs.

    >>> from icepark.spec.types import PrimitiveType
    >>> to_arrow_type(PrimitiveType.decimal(9, 2))
    Decimal128Type(decimal128(9, 2))
    >>> to_arrow_type(TIMESTAMPTZ), to_arrow_type(TIMESTAMPTZ_NS)
    (TimestampType(timestamp[us, tz=UTC]), TimestampType(timestamp[ns, tz=UTC]))
    """
    return visit(t, _ToArrow())


def to_arrow_schema(schema: Schema) -> Any:
    """The Arrow schema of an Iceberg schema, ``PARQUET:field_id`` on every field at every level.

    >>> from icepark.spec.types import INT, STRING, MapType, NestedField
    >>> s = Schema.of(NestedField.optional(1, "m", MapType(2, STRING, 3, INT, False)))
    >>> print(to_arrow_schema(s).field("m").type)
    map<string, int32>
    """
    return pa.schema([to_arrow_field(f) for f in schema.fields])


def from_arrow_schema(arrow_schema: Any, schema_id: int = 0, *,
                      format_version: int = 2) -> Schema:
    """The Iceberg schema of an Arrow schema whose every field carries ``PARQUET:field_id``.

    Arrow types without an Iceberg counterpart and fields without an ID raise
    :class:`ValidationError` naming the field; unsigned integers wider than 16 bits and half
    floats are not accepted. The v3 types come only with ``format_version`` 3 ("using v3 types
    in v1 or v2 tables can break forward compatibility"), else :class:`UnsupportedFeature`:
    ``timestamp[ns]`` is ``timestamp_ns``, ``null`` is ``unknown``, a struct of binary
    ``metadata`` and ``value`` without field IDs is ``variant``, ``geoarrow.wkb`` is
    ``geometry`` or ``geography`` (by its edges).

    >>> import pyarrow as pa
    >>> from_arrow_schema(pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Arrow field 'id' has no field ID (metadata PARQUET:field_id); \
Iceberg needs an ID on every field
    >>> ns = pa.schema([pa.field("t", pa.timestamp("ns"), metadata=field_metadata(1))])
    >>> print(from_arrow_schema(ns, format_version=3))
    table {
      1: t: optional timestamp_ns
    }
    """
    return Schema(tuple(_from_arrow_field(f, f.name, format_version) for f in arrow_schema),
                  schema_id)


def infer_schema(arrow_schema: Any, *, format_version: int = 2) -> Schema:
    """A new table's schema for an Arrow schema, with fresh field IDs from 1 (any IDs the
    Arrow fields carry are ignored), assigned as for a new table (:func:`fresh_schema`).
    Types map as in :func:`from_arrow_schema`; a variant is a struct whose ``metadata`` field
    carries PySpark's variant mark (as :func:`to_arrow_schema` makes them).

    >>> import pyarrow as pa
    >>> print(infer_schema(pa.schema([pa.field("id", pa.int64(), nullable=False),
    ...                               pa.field("tags", pa.list_(pa.string()))])))
    table {
      1: id: required long
      2: tags: optional list<string>
    }
    """
    counter = iter(range(1, 2**31))

    def numbered(f: Any) -> Any:
        t = f.type
        if variant.is_variant_struct(t, marked=True):
            t = variant.arrow_type()
        elif pa.types.is_struct(t):
            t = pa.struct([numbered(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_map(t):
            t = pa.map_(numbered(t.key_field), numbered(t.item_field))
        elif any(check(t) for check in (pa.types.is_list, pa.types.is_large_list,
                                        pa.types.is_fixed_size_list)):
            t = pa.list_(numbered(t.value_field))
        return pa.field(f.name, t, f.nullable, field_metadata(next(counter)))

    placeholder = from_arrow_schema(pa.schema([numbered(f) for f in arrow_schema]),
                                    format_version=format_version)
    return fresh_schema(placeholder)[0]


def _field_id(f: Any, path: str) -> int:
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    if raw is None:
        raise ValidationError(f"Arrow field {path!r} has no field ID (metadata "
                              "PARQUET:field_id); Iceberg needs an ID on every field")
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"Arrow field {path!r} has an invalid field ID {raw!r}") from None


def _from_arrow_field(f: Any, path: str, version: int) -> NestedField:
    return NestedField(_field_id(f, path), f.name, _from_arrow_type(f.type, path, version),
                       not f.nullable)


def _v3(t: PrimitiveType, arrow_type: Any, path: str, version: int) -> PrimitiveType:
    """``t``, a v3 type, if the table is version 3."""
    if version < 3:
        what = "nanosecond timestamps are" if t.type_id in _NANO_TIMESTAMPS else "it is"
        raise UnsupportedFeature(f"Arrow field {path!r} is {arrow_type}: {what} the format "
                                 f"version 3 type {t}, and the table is version {version}")
    return t


def _from_arrow_type(t: Any, path: str, version: int) -> IcebergType:
    types = pa.types
    if types.is_dictionary(t):
        return _from_arrow_type(t.value_type, path, version)
    if variant.is_variant_struct(t):
        return _v3(VARIANT, t, path, version)
    if types.is_struct(t):
        return StructType(tuple(_from_arrow_field(t.field(i), f"{path}.{t.field(i).name}",
                                                  version) for i in range(t.num_fields)))
    if types.is_map(t):
        key, value = t.key_field, t.item_field
        return MapType(_field_id(key, f"{path}.key"),
                       _from_arrow_type(key.type, f"{path}.key", version),
                       _field_id(value, f"{path}.value"),
                       _from_arrow_type(value.type, f"{path}.value", version), not value.nullable)
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        element = t.value_field
        return ListType(_field_id(element, f"{path}.element"),
                        _from_arrow_type(element.type, f"{path}.element", version),
                        not element.nullable)
    return _from_arrow_primitive(t, path, version)


def _from_arrow_primitive(t: Any, path: str, version: int) -> PrimitiveType:
    types = pa.types
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return UUID
        if geo.is_wkb(t):
            return _v3(geo.iceberg_type(t, path), t, path, version)
        return _from_arrow_primitive(t.storage_type, path, version)
    checks: tuple[tuple[Any, PrimitiveType], ...] = (
        (types.is_boolean, BOOLEAN),
        (lambda x: types.is_int32(x) or types.is_int16(x) or types.is_int8(x)
         or types.is_uint8(x) or types.is_uint16(x), INT),
        (types.is_int64, LONG),
        (types.is_float32, FLOAT),
        (types.is_float64, DOUBLE),
        (lambda x: types.is_date32(x) or types.is_date64(x), DATE),
        (types.is_time, TIME),
        (lambda x: types.is_string(x) or types.is_large_string(x)
         or types.is_string_view(x), STRING),
        (lambda x: types.is_binary(x) or types.is_large_binary(x)
         or types.is_binary_view(x), BINARY),
    )
    for check, iceberg in checks:
        if check(t):
            return iceberg
    if types.is_timestamp(t):
        if t.unit not in _TIMESTAMP_UNITS:
            return _v3(TIMESTAMP_NS if t.tz is None else TIMESTAMPTZ_NS, t, path, version)
        return TIMESTAMP if t.tz is None else TIMESTAMPTZ
    if types.is_null(t):
        return _v3(UNKNOWN, t, path, version)
    if types.is_decimal(t):
        return PrimitiveType.decimal(t.precision, t.scale)
    if types.is_fixed_size_binary(t):
        return PrimitiveType.fixed(t.byte_width)
    raise ValidationError(f"Arrow field {path!r} has type {t}, which has no Iceberg type")


def conform_batch(batch: Any, schema: Schema, arrow_schema: Any | None = None) -> Any:
    """``batch`` matched to ``schema`` by field name and cast to its Arrow types.

    Columns and struct fields are matched by name at every level; a missing optional field
    is filled with nulls; a missing required field, a field the schema does not have, a null
    in a required field, a value that does not fit (e.g. an int64 beyond int32) or a type of
    another kind (e.g. strings for an int column) raises :class:`ValidationError` naming the
    column. Casts stay within a kind: integers to int/long, floats to float/double, decimals
    to decimal, any timestamp unit to microseconds (losing no digits), zoned timestamps to
    ``timestamptz`` only and zone-less ones to ``timestamp`` only, and binary of any
    width/offset size to binary, fixed or uuid.

    >>> import pyarrow as pa
    >>> from icepark.spec.types import INT, NestedField
    >>> s = Schema.of(NestedField.required(1, "n", INT))
    >>> conform_batch(pa.record_batch({"n": [1, 2]}), s).schema.field("n").type
    DataType(int32)
    >>> conform_batch(pa.record_batch({"n": [1, None]}), s)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Column 'n' is required but has 1 null value(s)
    """
    target = arrow_schema if arrow_schema is not None else to_arrow_schema(schema)
    names = batch.schema.names
    if len(set(names)) != len(names):
        raise ValidationError(f"Batch has duplicate column names: {names}")
    _reject_extra(set(names), schema.fields, "")
    columns = [_conform(batch.column(f.name) if f.name in names else None, f,
                        target.field(i).type, f.name, batch.num_rows)
               for i, f in enumerate(schema.fields)]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _reject_extra(names: set[str], fields: tuple[NestedField, ...], prefix: str) -> None:
    extra = names - {f.name for f in fields}
    if extra:
        shown = ", ".join(repr(prefix + n) for n in sorted(extra))
        raise ValidationError(f"Column(s) {shown} are not in the table schema")


def _conform(arr: Any, f: NestedField, target: Any, path: str, length: int) -> Any:
    if arr is None or pa.types.is_null(arr.type):
        if f.is_required and length:
            raise ValidationError(f"Column {path!r} is required but missing from the batch")
        return pa.nulls(length, target)
    if pa.types.is_null(target):  # unknown: "Must be optional with null defaults"
        if arr.null_count != len(arr):
            raise ValidationError(f"Column {path!r} has type unknown, whose only value is "
                                  f"null, but has {len(arr) - arr.null_count} non-null "
                                  "value(s)")
        return pa.nulls(length, target)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = f.field_type
    match t:
        case StructType():
            result = _conform_struct(arr, t, target, path)
        case ListType():
            result = _conform_list(arr, t, target, path)
        case MapType():
            result = _conform_map(arr, t, target, path)
        case PrimitiveType():
            result = _conform_primitive(arr, t, target, path)
    if f.is_required and result.null_count:
        raise ValidationError(f"Column {path!r} is required but has {result.null_count} "
                              "null value(s)")
    return result


def _conform_struct(arr: Any, t: StructType, target: Any, path: str) -> Any:
    if not pa.types.is_struct(arr.type):
        raise IncompatibleColumn(f"Column {path!r} must be a struct, not {arr.type}", path,
                                 str(arr.type), str(t))
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    _reject_extra(set(names), t.fields, f"{path}.")
    parent_nulls = arr.is_null() if arr.null_count else None
    flat = arr.flatten()  # children with the struct's own nulls merged in
    children = []
    for i, child in enumerate(t.fields):
        source = flat[names.index(child.name)] if child.name in names else None
        conformed = _conform(source, replace(child, is_required=False) if parent_nulls is not None
                             else child, target.field(i).type, f"{path}.{child.name}", len(arr))
        if child.is_required and parent_nulls is not None:
            orphans = pc.sum(pc.and_(conformed.is_null(), pc.invert(parent_nulls))).as_py()
            if orphans:
                raise ValidationError(f"Column '{path}.{child.name}' is required but has "
                                      f"{orphans} null value(s)")
            conformed = _without_validity(conformed)
        children.append(conformed)
    fields = [target.field(i) for i in range(target.num_fields)]
    return pa.StructArray.from_arrays(children, fields=fields, mask=parent_nulls)


def _without_validity(arr: Any) -> Any:
    """``arr`` with no null slots of its own, for a required field under a null parent.

    Arrow's Parquet writer rejects nulls in a non-nullable field even where the parent struct
    is null; those slots are never read, so their validity bits are simply dropped.
    """
    if arr.null_count == 0:
        return arr
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _without_validity(arr.storage))
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([arr.field(i) for i in range(t.num_fields)],
                                          fields=list(t))
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, arr.items, type=t)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(arr.offsets, arr.values, type=t)
    return pa.Array.from_buffers(t, len(arr), [None, *arr.buffers()[1:]], null_count=0,
                                 offset=arr.offset)


def _offsets(arr: Any) -> Any:
    lengths = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int64())
    return pa.concat_arrays([pa.array([0], pa.int64()),
                             pc.cumulative_sum(lengths)]).cast(pa.int32())


def _conform_list(arr: Any, t: ListType, target: Any, path: str) -> Any:
    types = pa.types
    if not (types.is_list(arr.type) or types.is_large_list(arr.type)
            or types.is_fixed_size_list(arr.type) or types.is_list_view(arr.type)):
        raise IncompatibleColumn(f"Column {path!r} must be a list, not {arr.type}", path,
                                 str(arr.type), str(t))
    values = arr.flatten()
    element = _conform(values, t.element_field, target.value_type, f"{path}.element",
                       len(values))
    if element is values and types.is_list(arr.type) and arr.type == target:
        return arr
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(_offsets(arr), element, type=target, mask=mask)


def _conform_map(arr: Any, t: MapType, target: Any, path: str) -> Any:
    if not pa.types.is_map(arr.type):
        raise IncompatibleColumn(f"Column {path!r} must be a map, not {arr.type}", path,
                                 str(arr.type), str(t))
    entries_type = pa.struct([arr.type.key_field, arr.type.item_field])
    as_list = arr.view(pa.list_(pa.field("entries", entries_type, nullable=False)))
    entries = as_list.flatten()
    keys, items = entries.field(0), entries.field(1)
    key = _conform(keys, t.key_field, target.key_type, f"{path}.key", len(keys))
    value = _conform(items, t.value_field, target.item_type, f"{path}.value", len(items))
    if key is keys and value is items and arr.type == target:
        return arr
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(_offsets(as_list), key, value, type=target, mask=mask)


def _same_kind(t: PrimitiveType, source: Any) -> bool:
    types = pa.types
    if isinstance(source, pa.BaseExtensionType):
        if t.type_id in _GEO:
            return geo.is_wkb(source)
        return t.type_id is TypeId.UUID and source.extension_name == "arrow.uuid"
    match t.type_id:
        case TypeId.BOOLEAN:
            return bool(types.is_boolean(source))
        case TypeId.INT | TypeId.LONG:
            return bool(types.is_integer(source))
        case TypeId.FLOAT | TypeId.DOUBLE:
            return bool(types.is_floating(source))
        case TypeId.DECIMAL:
            return bool(types.is_decimal(source))
        case TypeId.DATE:
            return bool(types.is_date(source))
        case TypeId.TIME:
            return bool(types.is_time(source))
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ | TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            zoned = t.type_id in (TypeId.TIMESTAMPTZ, TypeId.TIMESTAMPTZ_NS)
            return bool(types.is_timestamp(source)) and (source.tz is not None) == zoned
        case TypeId.STRING:
            return _is_string(source)
        case TypeId.UUID:  # also canonical strings and 16-byte binary, as Spark holds them
            return bool(types.is_fixed_size_binary(source) or _is_string(source)
                        or _is_binary(source))
        case TypeId.FIXED:  # also variable-length binary of the right length (Spark's form)
            return bool(types.is_fixed_size_binary(source) or _is_binary(source))
        case TypeId.GEOMETRY | TypeId.GEOGRAPHY:  # WKB as plain binary, or PySpark's struct
            return _is_binary(source) or geo.is_spark_struct(source)
        case _:  # binary
            return _is_binary(source) or bool(types.is_fixed_size_binary(source))


def _is_string(source: Any) -> bool:
    return bool(pa.types.is_string(source) or pa.types.is_large_string(source)
                or pa.types.is_string_view(source))


def _is_binary(source: Any) -> bool:
    return bool(pa.types.is_binary(source) or pa.types.is_large_binary(source)
                or pa.types.is_binary_view(source))


def _conform_primitive(arr: Any, t: PrimitiveType, target: Any, path: str) -> Any:
    if t.type_id is TypeId.VARIANT:
        return variant.conform(arr, path)
    if arr.type == target:
        return arr
    if not _same_kind(t, arr.type):
        raise IncompatibleColumn(f"Column {path!r} has Arrow type {arr.type}, which cannot be "
                                 f"written as Iceberg {t}", path, str(arr.type), str(t))
    if t.type_id in (TypeId.UUID, TypeId.FIXED) and not pa.types.is_fixed_size_binary(arr.type):
        storage = getattr(target, "storage_type", target)
        fixed = (uuids_from_strings(arr, path) if _is_string(arr.type)
                 else fixed_from_binary(arr, storage.byte_width, path, str(t)))
        return fixed if storage is target else pa.ExtensionArray.from_storage(target, fixed)
    if t.type_id in _GEO:
        return geo.wkb_array(arr, target)
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValidationError(f"Column {path!r}: cannot write {arr.type} values as Iceberg "
                              f"{t}: {e}") from None
