"""Column projection: a data file's Arrow columns resolved to a read schema by field ID.

Spec, *Column Projection*: "Columns in Iceberg data files are selected by field id. The table
schema's column names and order may change after a data file is written, and projection must
be done using field ids. If a field id is missing from a data file, its value for each row
should be ``null``." For example, "a file may be written with schema ``1: a int, 2: b string,
3: c double`` and read using projection schema ``3: measurement, 2: name, 4: a``. This must
select file columns ``c`` (renamed to ``measurement``), ``b`` (now called ``name``), and a
column of ``null`` values called ``a``; in that order."

What a projection does, at every level (struct fields, list elements, map keys and values):

* renames and reorders by field ID; a file's field IDs come from the file, or, for a file
  without any, from the table's name mapping (:mod:`icepark.io.arrow.name_mapping`);
* promotes types (*Schema Evolution*: "int to long, float to double, decimal(P, S) to
  decimal(P', S)") and normalises Arrow encodings (dictionaries, large strings, timestamp
  units, fixed(16) to uuid); any other type change is a :class:`ValidationError`;
* fills a missing field with, in order: the partition value of an identity-partitioned column
  (the ``constants``; the spec lets files omit identity-partitioned columns), the field's
  ``initial-default`` (*Default values*: "``initial-default`` is used to populate the field's
  value for all records that were written before the field was added to the schema"), null for
  an optional field; a missing required field without a default is a :class:`ValidationError`;
* reads an ``unknown`` field as null even where the file has its ID (Appendix A: "When reading
  an ``unknown`` column, any corresponding column must be ignored and replaced with ``null``
  values"), a ``variant`` group by name, unshredded or shredded
  (:mod:`icepark.io.arrow.variant`), and WKB as the table's geometry or geography type.

Reading is lazy: :class:`FileColumns` says which top-level file columns a projection needs, the
file is read with only those, and :meth:`Projection.apply` builds each batch without copying
values that need no conversion.

>>> import pyarrow as pa
>>> from icepark.io.arrow.schema import to_arrow_schema
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import DOUBLE, INT, LONG, STRING, NestedField
>>> written = Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(2, "b", STRING),
...                     NestedField.optional(3, "c", DOUBLE))
>>> batch = pa.RecordBatch.from_pydict({"a": [1], "b": ["x"], "c": [2.5]},
...                                    schema=to_arrow_schema(written))
>>> read = Schema.of(NestedField.optional(3, "measurement", DOUBLE),
...                  NestedField.optional(2, "name", STRING), NestedField.optional(4, "a", LONG))
>>> p = project(FileColumns(batch.schema), read)
>>> p.file_columns, p.apply(batch).to_pylist()
([1, 2], [{'measurement': 2.5, 'name': 'x', 'a': None}])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow import geo, variant
from icepark.io.arrow.name_mapping import NameMapping, apply_name_mapping, has_field_ids
from icepark.io.arrow.schema import (
    FIELD_ID_KEY,
    field_metadata,
    from_arrow_schema,
    to_arrow_schema,
    to_arrow_type,
)
from icepark.spec.schema import Schema
from icepark.spec.types import (
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
    is_promotion_allowed,
)

ArrayFn = Callable[[Any], Any]
"""Converts a file's Arrow array to the read type's."""


def field_id_of(f: Any) -> int | None:
    """The ``PARQUET:field_id`` of an Arrow field, or None."""
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ColumnPath:
    """Where a field nested only in structs sits in a file: the top-level column's index, the
    child indexes below it, the names along the way and the file's Arrow field."""

    top: int
    indexes: tuple[int, ...]
    names: tuple[str, ...]
    arrow_field: Any


class FileColumns:
    """A data file's Arrow schema with field IDs: the file's own or, if it has none, the name
    mapping's.

    Spec: name mappings "provide fallback field ids to be used when a data file does not
    contain field id information". A file with no IDs and no mapping cannot be projected.

    >>> import pyarrow as pa
    >>> FileColumns(pa.schema([pa.field("x", pa.int32())]), location="f.parquet")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Data file f.parquet has no field IDs and the table has no \
name mapping (schema.name-mapping.default) to assign them
    """

    def __init__(self, file_schema: Any, name_mapping: NameMapping | None = None,
                 location: str = "<data file>") -> None:
        if has_field_ids(file_schema):
            annotated = file_schema
        elif name_mapping is not None:
            annotated = apply_name_mapping(file_schema, name_mapping)
        else:
            raise ValidationError(
                f"Data file {location} has no field IDs and the table has no name mapping "
                "(schema.name-mapping.default) to assign them")
        self.location = location
        self.schema = annotated
        self._paths: dict[int, ColumnPath] = {}
        self._leaf_starts: list[int] = []
        leaves = 0
        for i, f in enumerate(annotated):
            self._index(f, ColumnPath(i, (), (f.name,), f))
            self._leaf_starts.append(leaves)
            leaves += _leaf_count(f.type)
        self._leaf_starts.append(leaves)

    def _index(self, f: Any, path: ColumnPath) -> None:
        fid = field_id_of(f)
        if fid is not None:
            self._paths.setdefault(fid, path)
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                child = f.type.field(i)
                self._index(child, ColumnPath(path.top, (*path.indexes, i),
                                              (*path.names, child.name), child))

    def top_level(self, field_id: int) -> ColumnPath | None:
        """The top-level column with ``field_id``, or None."""
        path = self._paths.get(field_id)
        return path if path is not None and not path.indexes else None

    def path(self, field_id: int) -> ColumnPath | None:
        """Where ``field_id`` is, if it is a column or a field nested only in structs."""
        return self._paths.get(field_id)

    def leaf_indices(self, tops: Iterable[int]) -> list[int]:
        """The Parquet leaf column indexes of the top-level columns ``tops`` (by index, so
        names with dots are never mistaken for paths)."""
        return [leaf for top in sorted(set(tops))
                for leaf in range(self._leaf_starts[top], self._leaf_starts[top + 1])]


def _leaf_count(t: Any) -> int:
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


@dataclass(frozen=True, slots=True)
class _Context:
    location: str
    constants: Mapping[int, Any]


class Projection:
    """A compiled projection of one file's batches onto a read schema."""

    def __init__(self, arrow_schema: Any, columns: list[tuple[int | None, ArrayFn]]) -> None:
        self.arrow_schema = arrow_schema
        self._columns = columns
        self.file_columns = sorted({i for i, _ in columns if i is not None})

    def apply(self, batch: Any, positions: Mapping[int, int] | None = None) -> Any:
        """The read-schema batch of a file batch.

        ``positions`` maps the file's top-level column indexes to the batch's; without it the
        batch holds every file column.
        """
        n = batch.num_rows
        arrays = [fn(batch.column(i if positions is None else positions[i]))
                  if i is not None else fn(n) for i, fn in self._columns]
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


def project(columns: FileColumns, schema: Schema,
            constants: Mapping[int, Any] | None = None) -> Projection:
    """Compile the projection of a file (``columns``) onto ``schema``.

    ``constants`` maps field IDs to values for fields the file lacks (identity partition
    values); they take precedence over ``initial-default``. Raises :class:`ValidationError` for
    a missing required field without a default and for a type the file cannot be read as.
    """
    ctx = _Context(columns.location, constants or {})
    compiled: list[tuple[int | None, ArrayFn]] = []
    for f in schema.fields:
        source = None if _is_unknown(f) else columns.top_level(f.field_id)
        if source is None:
            compiled.append((None, _missing(f, ctx, f.name, strict=True)))
        else:
            compiled.append((source.top, _reader(f, source.arrow_field, ctx, f.name)))
    return Projection(to_arrow_schema(schema), compiled)


def extract(columns: FileColumns, f: NestedField,
            constants: Mapping[int, Any] | None = None) -> tuple[int | None, ArrayFn]:
    """Read field ``f`` by ID wherever it sits in the file's structs, as one flat column.

    Returns the index of the top-level file column it needs (None if the file lacks it) and a
    function from that column (or, when None, the row count) to the values; a value is null
    where any struct holding it is null. A missing field reads as its constant,
    ``initial-default`` or null
    (this is for filters and delete keys, so a missing required field is not an error here).
    """
    ctx = _Context(columns.location, constants or {})
    path = None if _is_unknown(f) else columns.path(f.field_id)
    if path is None:
        return None, _missing(f, ctx, f.name, strict=False)
    convert = _reader(f, path.arrow_field, ctx, ".".join(path.names))
    indexes = path.indexes

    def read(column: Any) -> Any:
        for i in indexes:
            column = pc.struct_field(column, [i])
        return convert(column)

    return path.top, read


# --- compiling readers -----------------------------------------------------------------------


def _is_unknown(f: NestedField) -> bool:
    """Whether ``f`` is ``unknown``, read as null whatever the file holds under its ID."""
    return isinstance(f.field_type, PrimitiveType) and f.field_type.type_id is TypeId.UNKNOWN


def _reader(target: NestedField, source: Any, ctx: _Context, where: str) -> ArrayFn:
    """The conversion of file field ``source`` to ``target``'s type."""
    t = target.field_type
    st = source.type
    if pa.types.is_dictionary(st) and not isinstance(t, PrimitiveType):
        raise _cannot(ctx, where, st, t)
    match t:
        case StructType():
            if not pa.types.is_struct(st):
                raise _cannot(ctx, where, st, t)
            return _struct_reader(t, st, ctx, where)
        case ListType():
            if not (pa.types.is_list(st) or pa.types.is_large_list(st)):
                raise _cannot(ctx, where, st, t)
            return _list_reader(t, st, ctx, where)
        case MapType():
            if not pa.types.is_map(st):
                raise _cannot(ctx, where, st, t)
            return _map_reader(t, st, ctx, where)
        case PrimitiveType(type_id=TypeId.VARIANT):
            return variant.reader(st, f"{where!r} of {ctx.location}")
        case PrimitiveType():
            return primitive_converter(t, st, f"{where} of {ctx.location}")


def _cannot(ctx: _Context, where: str, source: Any, target: IcebergType) -> ValidationError:
    return ValidationError(f"Cannot read column {where!r} of {ctx.location}: the file's "
                           f"{source} cannot be read as {target}")


def _struct_reader(t: StructType, st: Any, ctx: _Context, where: str) -> ArrayFn:
    by_id = {field_id_of(st.field(i)): i for i in range(st.num_fields)}
    children: list[tuple[int | None, ArrayFn]] = []
    for f in t.fields:
        index = None if _is_unknown(f) else by_id.get(f.field_id)
        name = f"{where}.{f.name}"
        if index is None:
            children.append((None, _missing(f, ctx, name, strict=True)))
        else:
            children.append((index, _reader(f, st.field(index), ctx, name)))
    fields = list(to_arrow_type(t))

    def read(a: Any) -> Any:
        n = len(a)
        arrays = [fn(a.field(i)) if i is not None else fn(n) for i, fn in children]
        mask = a.is_null() if a.null_count else None
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)

    return read


def _list_reader(t: ListType, st: Any, ctx: _Context, where: str) -> ArrayFn:
    element = _collection_child(st.value_field, t.element_field, ctx, f"{where}.element")
    target = to_arrow_type(t)

    def read(a: Any) -> Any:
        offsets, values = _rebased(a.offsets, a.values)
        mask = a.is_null() if a.null_count else None
        return pa.ListArray.from_arrays(offsets.cast(pa.int32()), element(values), type=target,
                                        mask=mask)

    return read


def _map_reader(t: MapType, st: Any, ctx: _Context, where: str) -> ArrayFn:
    key = _collection_child(st.key_field, t.key_field, ctx, f"{where}.key")
    value = _collection_child(st.item_field, t.value_field, ctx, f"{where}.value")
    target = to_arrow_type(t)

    def read(a: Any) -> Any:
        offsets, entries = _rebased(a.offsets, a.values)
        mask = a.is_null() if a.null_count else None
        return pa.MapArray.from_arrays(offsets, key(entries.field(0)), value(entries.field(1)),
                                       type=target, mask=mask)

    return read


def _rebased(offsets: Any, values: Any) -> tuple[Any, Any]:
    """A list's offsets starting at 0 and the slice of its child they cover, so only the
    child values of these rows are converted and the offsets are a fresh array."""
    if len(offsets) == 0:
        return pa.array([0], offsets.type), values.slice(0, 0)
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, first), values.slice(first, last - first)


def _collection_child(source: Any, target: NestedField, ctx: _Context, where: str) -> ArrayFn:
    if field_id_of(source) != target.field_id:
        raise ValidationError(
            f"Cannot read {where!r} of {ctx.location}: the file's field ID is "
            f"{field_id_of(source)}, the table's {target.field_id} (list elements and map "
            "keys and values keep their IDs)")
    return _reader(target, source, ctx, where)


def _missing(f: NestedField, ctx: _Context, where: str, *, strict: bool) -> ArrayFn:
    """Values of a field the file does not have: constant, initial-default or null."""
    if f.field_id in ctx.constants:
        value = ctx.constants[f.field_id]
    elif f.initial_default is not None:
        value = f.initial_default
    elif f.is_required and strict:
        raise ValidationError(
            f"Field {where!r} (id {f.field_id}) is required but missing from data file "
            f"{ctx.location} and has no initial-default to fill it with")
    else:
        value = None
    arrow_type = to_arrow_type(f.field_type)
    if value is None:
        return lambda n: pa.nulls(n, arrow_type)
    one = arrow_values(f.field_type, [value])
    return lambda n: repeat(one, n)


def repeat(one: Any, n: int) -> Any:
    """A one-value array repeated ``n`` times."""
    return one.take(pa.array(np.zeros(n, dtype=np.int32)))


# --- primitives -----------------------------------------------------------------------------


def _iceberg_primitive(arrow_type: Any) -> IcebergType:
    """The Iceberg type of a file's Arrow primitive (timestamps of any unit included)."""
    if pa.types.is_timestamp(arrow_type):
        if arrow_type.unit == "ns":
            return TIMESTAMP_NS if arrow_type.tz is None else TIMESTAMPTZ_NS
        return TIMESTAMP if arrow_type.tz is None else TIMESTAMPTZ
    probe = pa.schema([pa.field("c", arrow_type, metadata=field_metadata(1))])
    return from_arrow_schema(probe, format_version=3).fields[0].field_type


_MICRO_TIMESTAMPS = frozenset({TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ})
_NANO_TIMESTAMPS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})


def primitive_converter(target: PrimitiveType, source: Any, where: str) -> ArrayFn:
    """The conversion of a file's Arrow ``source`` type to Iceberg primitive ``target``.

    Spec, *Schema Evolution*: "Valid type promotions are: int to long; float to double;
    decimal(P, S) to decimal(P', S) if P' > P", and (v3) ``date`` to ``timestamp`` or
    ``timestamp_ns``: a date reads as that day's midnight, and "values outside the promoted
    type's range must result in a runtime failure". ``fixed(16)`` reads as ``uuid`` (older
    pyarrow writes uuid without the logical type); timestamps of any unit read as microseconds
    or nanoseconds if no digit is lost, with or without zone exactly as the table type says;
    WKB (binary or any ``geoarrow.wkb``) reads as geometry or geography.

    >>> import pyarrow as pa
    >>> from icepark.spec.types import LONG, STRING
    >>> primitive_converter(LONG, pa.int32(), "x")(pa.array([1], pa.int32())).type
    DataType(int64)
    >>> primitive_converter(STRING, pa.int32(), "x")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot read x: the file's int cannot be read as string
    >>> primitive_converter(TIMESTAMP_NS, pa.date32(), "d")(pa.array([1], pa.date32()))[0]
    <pyarrow.TimestampScalar: '1970-01-02T00:00:00.000000000'>
    """
    target_arrow = to_arrow_type(target)
    if pa.types.is_dictionary(source):
        inner = primitive_converter(target, source.value_type, where)
        return lambda a: inner(a.dictionary_decode())
    if source == target_arrow:
        return lambda a: a
    if target.type_id in (TypeId.GEOMETRY, TypeId.GEOGRAPHY):
        if not (geo.is_wkb(source) or pa.types.is_binary(source)
                or pa.types.is_large_binary(source) or pa.types.is_binary_view(source)):
            raise ValidationError(f"Cannot read {where}: the file's {source} is not WKB "
                                  f"binary for {target}")
        return lambda a: geo.wkb_array(a, target_arrow)
    try:
        found = _iceberg_primitive(source)
    except (ValidationError, UnsupportedFeature) as e:
        raise ValidationError(f"Cannot read {where}: {e}") from None
    uuid_from_fixed = (target.type_id is TypeId.UUID and isinstance(found, PrimitiveType)
                       and found == PrimitiveType.fixed(16))
    # timestamps of another unit (same zone kind): exact, or an error when digits would go
    other_unit = isinstance(found, PrimitiveType) and (
        (found.type_id in _MICRO_TIMESTAMPS | _NANO_TIMESTAMPS)
        and target.type_id in _MICRO_TIMESTAMPS | _NANO_TIMESTAMPS
        and (found.type_id in (TypeId.TIMESTAMPTZ, TypeId.TIMESTAMPTZ_NS))
        == (target.type_id in (TypeId.TIMESTAMPTZ, TypeId.TIMESTAMPTZ_NS)))
    if not (is_promotion_allowed(found, target, format_version=3) or uuid_from_fixed
            or other_unit):
        raise ValidationError(f"Cannot read {where}: the file's {found} cannot be read as "
                              f"{target}")
    if isinstance(target_arrow, pa.BaseExtensionType):
        storage = target_arrow.storage_type

        def to_extension(a: Any) -> Any:
            if isinstance(a.type, pa.BaseExtensionType):
                a = a.storage
            return pa.ExtensionArray.from_storage(target_arrow, a.cast(storage))

        return to_extension
    if pa.types.is_date(source) and pa.types.is_timestamp(target_arrow):
        def midnight(a: Any) -> Any:
            try:
                return a.cast(target_arrow, safe=True)
            except pa.ArrowInvalid as e:
                raise ValidationError(f"Cannot read {where} as {target}: a date is outside "
                                      f"its range ({e})") from None

        return midnight
    return lambda a: a.cast(target_arrow, safe=True)


# --- Iceberg values as Arrow arrays ---------------------------------------------------------

_INT_STORAGE = {TypeId.DATE: pa.int32(), TypeId.TIME: pa.int64(),
                TypeId.TIMESTAMP: pa.int64(), TypeId.TIMESTAMPTZ: pa.int64(),
                TypeId.TIMESTAMP_NS: pa.int64(), TypeId.TIMESTAMPTZ_NS: pa.int64()}


def arrow_values(t: IcebergType, values: list[Any]) -> Any:
    """An Arrow array of Iceberg values of type ``t`` (:mod:`icepark.spec.values` form: days,
    microseconds, ``uuid.UUID``, structs as dicts by field ID, maps as dicts).

    A struct value missing a field uses that field's ``initial-default`` (spec: "If a field
    value is missing from a struct's ``initial-default``, the field's ``initial-default`` must
    be used for the field").

    >>> from icepark.spec.types import DATE, INT, NestedField, StructType
    >>> arrow_values(DATE, [17486, None]).to_pylist()
    [datetime.date(2017, 11, 16), None]
    >>> s = StructType((NestedField.optional(1, "a", INT, initial_default=7),))
    >>> arrow_values(s, [{}, None]).to_pylist()
    [{'a': 7}, None]
    """
    arrow_type = to_arrow_type(t)
    match t:
        case PrimitiveType():
            storage = _INT_STORAGE.get(t.type_id)
            if storage is not None:
                return pa.array(values, storage).cast(arrow_type)
            if t.type_id is TypeId.UUID:
                raw = pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
                if isinstance(arrow_type, pa.BaseExtensionType):
                    return pa.ExtensionArray.from_storage(arrow_type, raw)
                return raw
            if t.type_id in (TypeId.GEOMETRY, TypeId.GEOGRAPHY):
                return geo.wkb_array(pa.array(values, pa.binary()), arrow_type)
            if t.type_id is TypeId.VARIANT:
                parts = [(None, None) if v is None else v for v in values]
                return variant.conform(pa.StructArray.from_arrays(
                    [pa.array([p[0] for p in parts], pa.binary()),
                     pa.array([p[1] for p in parts], pa.binary())],
                    names=[variant.METADATA, variant.VALUE], mask=_null_mask(values)), "value")
            return pa.array(values, arrow_type)
        case StructType():
            children = [arrow_values(f.field_type, [
                None if v is None else v.get(f.field_id, f.initial_default) for v in values])
                for f in t.fields]
            return pa.StructArray.from_arrays(children, fields=list(arrow_type),
                                              mask=_null_mask(values))
        case ListType():
            flat = [e for v in values if v is not None for e in v]
            return pa.ListArray.from_arrays(_offsets(values), arrow_values(t.element_type, flat),
                                            type=arrow_type, mask=_null_mask(values))
        case MapType():
            pairs = [kv for v in values if v is not None for kv in dict(v).items()]
            return pa.MapArray.from_arrays(
                _offsets(values), arrow_values(t.key_type, [k for k, _ in pairs]),
                arrow_values(t.value_type, [x for _, x in pairs]), type=arrow_type,
                mask=_null_mask(values))


def _null_mask(values: list[Any]) -> Any:
    return pa.array([v is None for v in values], pa.bool_())


def _offsets(values: list[Any]) -> Any:
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + (0 if v is None else len(v)))
    return pa.array(offsets, pa.int32())

