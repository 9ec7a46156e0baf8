"""Iceberg schemas as Spark ``StructType``s whose fields carry their Iceberg field IDs, and back.

Spec, *Schemas and Data Types*: "A table's schema is a list of named columns. All data types are
either primitives or nested types, which are maps, lists, or structs." *Nested Types*: every
struct field, list element, map key and map value "has an integer id that is unique in the table
schema".

Field IDs live in ``StructField`` metadata under ``parquet.field.id``, the key Spark's Parquet
reader resolves columns by when ``spark.sql.parquet.fieldId.read.enabled`` is set (spec,
*Column Projection*: "Columns in Iceberg data files are selected by field id"). Spark keeps
metadata only on struct fields, so the ID of a list element or map key/value is kept in the
metadata of the ``StructField`` that holds the list or map, under ``icepark.element``,
``icepark.key`` and ``icepark.value``: each a dict of the same shape (its own
``parquet.field.id``, its own type marker, and its own children if it is a list or map).
A field's doc is Spark's ``comment``; defaults are their Appendix D JSON text under
``icepark.initial-default`` / ``icepark.write-default``; an identifier field is marked
``icepark.identifier`` (its position among the identifier fields). So :func:`to_iceberg` of
:func:`to_spark` gives the schema back exactly.

Type mapping (the *table layout*, what DataFrames of a table look like):

* boolean, int, long, float, double, decimal(P,S), date, string, binary: Spark's types of the
  same name; timestamp is ``TimestampNTZType``, timestamptz ``TimestampType`` (UTC session).
* time is ``TimeType(6)``. PySpark 4.1+ has it, behind ``spark.sql.timeType.enabled`` (off by
  default; with it off any use fails with ``UNSUPPORTED_TIME_TYPE``). Measured on 4.3: with it
  on, Spark's Parquet reader reads Iceberg's ``int64 TIME_MICROS`` columns into it, vectorized
  and not, and its writer writes ``TIME(MICROS, adjustToUtc=false)`` as the spec requires.
* uuid is ``StringType`` (``f79c3e09-677c-4bbd-a479-3f349cb785e7``), as Iceberg's Spark runtime
  exposes it, marked ``icepark.type: uuid``. Measured: Spark's Parquet reader cannot read
  ``FIXED_LEN_BYTE_ARRAY(16) UUID`` as a string (the vectorized reader fails, the other returns
  the raw bytes as text), but reads it as ``BinaryType`` (except that the row-based reader,
  used when the vectorized one is off or the schema is too wide for it, fails on a uuid inside
  a list). So the *read layout* (:func:`read_schema`) has uuid as ``BinaryType`` and
  :func:`icepark.spark.layout.read_columns` turns it into the string in the same projection
  (``lower(hex(b))`` and four dashes: native, no Python worker);
  :func:`~icepark.spark.layout.file_columns` is the inverse, for writers that need the 16
  bytes.
* fixed(L) is ``BinaryType`` marked ``icepark.type: fixed[L]`` (Spark has no fixed-length binary;
  its reader reads ``FIXED_LEN_BYTE_ARRAY`` as binary).
* The v3 types (spec, *Primitive Types* and *Semi-structured Types*):

  * timestamp_ns and timestamptz_ns are marked ``icepark.type`` and held as Spark
    timestamps (``TimestampNTZType``, ``TimestampType``: microseconds, the form writes take)
    or, with ``timestamp_ns="nanos"``, as ``LongType`` nanoseconds since the epoch; the read
    layout is always the ``LongType`` Spark's Parquet reader reads ``TIMESTAMP(NANOS)`` as
    exactly, and :func:`~icepark.spark.layout.read_columns` converts
    (:mod:`icepark.spark.nanos`);
  * unknown is ``NullType`` ("Must be optional with ``null`` defaults; not stored in data
    files"); the reader never reads it from a file (:mod:`icepark.spark.reader.files`);
  * variant is ``VariantType``: measured on 4.3, Spark's Parquet reader reads the spec's
    ``group`` of ``metadata`` and ``value`` (and shredded groups) by the group's field ID;
  * geometry and geography are ``GeometryType``/``GeographyType`` where Spark has their CRS,
    else ``BinaryType`` WKB, marked ``icepark.type`` (:mod:`icepark.spark.geo`).

* list is ``ArrayType(containsNull=not element_required)``, map is
  ``MapType(valueContainsNull=not value_required)`` (Spark map keys are never null: "Map keys
  are required"), struct is ``StructType``; ``nullable`` is ``not required``.

>>> from icepark.spec.types import LONG, STRING, UUID, ListType, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG, doc="key"),
...                    NestedField.optional(2, "tags", ListType(3, UUID, element_required=False)))
>>> spark = to_spark(schema)
>>> spark["id"].metadata
{'parquet.field.id': 1, 'comment': 'key'}
>>> spark["tags"].dataType.simpleString(), spark["tags"].metadata["icepark.element"]
('array<string>', {'parquet.field.id': 3, 'icepark.type': 'uuid'})
>>> read_schema(schema)["tags"].dataType.simpleString()
'array<binary>'
>>> to_iceberg(spark) == schema
True
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow import schema_like
from icepark.io.arrow.transforms import from_python_values
from icepark.spark import geo
from icepark.spark.nanos import NANO_TYPES
from icepark.spec.schema import (
    Schema,
    SchemaVisitor,
    assign_fresh_ids,
    index_by_name,
    visit,
)
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
    TIMESTAMPTZ,
    UNKNOWN,
    VARIANT,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
    parse_primitive,
)
from icepark.spec.values import from_json, to_json

FIELD_ID = "parquet.field.id"
"""The metadata key Spark's Parquet reader and writer use for a column's field ID."""
DOC = "comment"
TYPE = "icepark.type"
INITIAL_DEFAULT = "icepark.initial-default"
WRITE_DEFAULT = "icepark.write-default"
IDENTIFIER = "icepark.identifier"
ELEMENT = "icepark.element"
KEY = "icepark.key"
VALUE = "icepark.value"

Layout = Literal["table", "read"]
Nanos = Literal["micros", "nanos"]
"""How the table layout holds ``timestamp_ns``/``timestamptz_ns``: Spark timestamps (whole
microseconds) or ``LongType`` nanoseconds (:mod:`icepark.spark.nanos`)."""
_Meta = dict[str, Any]

_PRIMITIVES: Mapping[TypeId, T.DataType] = {
    TypeId.BOOLEAN: T.BooleanType(),
    TypeId.INT: T.IntegerType(),
    TypeId.LONG: T.LongType(),
    TypeId.FLOAT: T.FloatType(),
    TypeId.DOUBLE: T.DoubleType(),
    TypeId.DATE: T.DateType(),
    TypeId.TIME: T.TimeType(6),
    TypeId.TIMESTAMP: T.TimestampNTZType(),
    TypeId.TIMESTAMPTZ: T.TimestampType(),
    TypeId.STRING: T.StringType(),
    TypeId.BINARY: T.BinaryType(),
    TypeId.UNKNOWN: T.NullType(),
    TypeId.VARIANT: T.VariantType(),
}
_MICROS_TYPES: Mapping[TypeId, T.DataType] = {
    TypeId.TIMESTAMP_NS: T.TimestampNTZType(), TypeId.TIMESTAMPTZ_NS: T.TimestampType()}


def to_spark(schema: Schema | StructType, *, timestamp_ns: Nanos = "micros") -> T.StructType:
    """The table layout of ``schema``: a ``StructType`` with every ID in field metadata;
    nanosecond timestamps as ``timestamp_ns`` says (:data:`Nanos`)."""
    return _struct_to_spark(schema, "table", timestamp_ns)


def read_schema(schema: Schema | StructType) -> T.StructType:
    """The read layout of ``schema``, to pass to ``spark.read.schema(...)``: as
    :func:`to_spark`, but uuid is ``BinaryType`` and nanosecond timestamps are ``LongType``
    (what Spark's Parquet reader can read)."""
    return _struct_to_spark(schema, "read", "nanos")


def to_spark_type(t: IcebergType, layout: Layout = "table", *,
                  timestamp_ns: Nanos = "micros") -> T.DataType:
    """The Spark type of an Iceberg type (metadata only on the struct fields inside it).

    >>> to_spark_type(PrimitiveType.decimal(9, 2)).simpleString()
    'decimal(9,2)'
    >>> from icepark.spec.types import TIMESTAMP_NS
    >>> to_spark_type(TIMESTAMP_NS), to_spark_type(TIMESTAMP_NS, "read")
    (TimestampNTZType(), LongType())
    """
    data_type, _ = visit(t, _ToSpark(layout, nanos=timestamp_ns))
    assert isinstance(data_type, T.DataType)
    return data_type


def _struct_to_spark(schema: Schema | StructType, layout: Layout, nanos: Nanos) -> T.StructType:
    identifiers = schema.identifier_field_ids if isinstance(schema, Schema) else ()
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    result, _ = visit(struct, _ToSpark(layout, {fid: i for i, fid in enumerate(identifiers)},
                                       nanos))
    assert isinstance(result, T.StructType)
    return result


# The visitor's result: a Spark type (or StructField) and the metadata describing the type's
# list/map children and type marker, which the enclosing field's metadata takes in.
_Result = tuple[Any, _Meta]


class _ToSpark(SchemaVisitor[_Result]):
    def __init__(self, layout: Layout, identifiers: Mapping[int, int] | None = None,
                 nanos: Nanos = "micros") -> None:
        self.layout = layout
        self.identifiers = identifiers or {}  # field ID -> position among identifier fields
        self.nanos = nanos

    def struct(self, struct: StructType, field_results: list[_Result]) -> _Result:
        return T.StructType([f for f, _ in field_results]), {}

    def field(self, f: NestedField, field_result: _Result) -> _Result:
        data_type, type_meta = field_result
        metadata: _Meta = {FIELD_ID: f.field_id, **type_meta}
        if f.doc is not None:
            metadata[DOC] = f.doc
        if f.field_id in self.identifiers:
            metadata[IDENTIFIER] = self.identifiers[f.field_id]
        for key, default in ((INITIAL_DEFAULT, f.initial_default),
                             (WRITE_DEFAULT, f.write_default)):
            if default is not None:
                metadata[key] = json.dumps(to_json(f.field_type, default))
        return T.StructField(f.name, data_type, not f.is_required, metadata), {}

    def list(self, list_type: ListType, element_result: _Result) -> _Result:
        element, meta = element_result
        return (T.ArrayType(element, not list_type.element_required),
                {ELEMENT: {FIELD_ID: list_type.element_id, **meta}})

    def map(self, map_type: MapType, key_result: _Result, value_result: _Result) -> _Result:
        (key, key_meta), (value, value_meta) = key_result, value_result
        return (T.MapType(key, value, not map_type.value_required),
                {KEY: {FIELD_ID: map_type.key_id, **key_meta},
                 VALUE: {FIELD_ID: map_type.value_id, **value_meta}})

    def primitive(self, primitive: PrimitiveType) -> _Result:
        match primitive.type_id:
            case TypeId.DECIMAL:
                if not 0 <= primitive.scale <= primitive.precision:
                    raise UnsupportedFeature(
                        f"Cannot represent {primitive} in Spark: Spark decimals need "
                        f"0 <= scale <= precision")
                return T.DecimalType(primitive.precision, primitive.scale), {}
            case TypeId.UUID:
                spark_type = T.BinaryType() if self.layout == "read" else T.StringType()
                return spark_type, {TYPE: str(primitive)}
            case TypeId.FIXED:
                return T.BinaryType(), {TYPE: str(primitive)}
            case tid if tid in NANO_TYPES:
                exact = self.layout == "read" or self.nanos == "nanos"
                return (T.LongType() if exact else _MICROS_TYPES[tid]), {TYPE: str(primitive)}
            case tid if tid in geo.GEO_TYPES:
                return geo.spark_type(primitive) or T.BinaryType(), {TYPE: str(primitive)}
            case tid if tid in _PRIMITIVES:
                return _PRIMITIVES[tid], {}
        raise UnsupportedFeature(f"Type {primitive} has no Spark type in icepark")


def to_iceberg(struct: T.StructType, *, fresh_ids: bool = False, schema_id: int = 0) -> Schema:
    """The Iceberg schema of a Spark ``StructType``.

    Field IDs, docs, defaults, identifier fields and the uuid/fixed markers are read from the
    metadata :func:`to_spark` writes. A Spark schema without any field ID (a DataFrame's, to
    create a table from), or any schema with ``fresh_ids``, gets new IDs from 1, assigned as
    :func:`icepark.spec.schema.assign_fresh_ids` does. A schema with only some IDs is an error.
    Spark's ``ByteType``/``ShortType`` become int and ``CharType``/``VarcharType`` string.

    >>> print(to_iceberg(T.StructType([T.StructField("a", T.ArrayType(T.ShortType(), False)),
    ...                                T.StructField("b", T.DateType())])))
    table {
      1: a: optional list<int>
      2: b: optional date
    }
    """
    given = list(_given_ids(struct))
    present = [i is not None for i in given]
    if any(present) and not all(present) and not fresh_ids:
        raise ValidationError(
            "Cannot convert a Spark schema where only some fields carry "
            f"{FIELD_ID!r} metadata; pass fresh_ids=True to assign new IDs to all of them")
    fresh = fresh_ids or not any(present)
    converter = _ToIceberg(fresh)
    converted = converter.struct(struct)
    identifiers = [fid for _, fid in sorted(converter.identifiers)]
    if fresh:
        counter = itertools.count(1)
        renumbered = assign_fresh_ids(converted, lambda: next(counter))
        assert isinstance(renumbered, StructType)
        old_names = {fid: name for name, fid in index_by_name(converted).items()}
        new_ids = index_by_name(renumbered)
        identifiers = [new_ids[old_names[i]] for i in identifiers]
        converted = renumbered
    return Schema(converted.fields, schema_id, tuple(identifiers))


def _given_ids(struct: T.StructType) -> Iterator[Any]:
    """The field ID (or None) of every struct field, list element and map key/value."""
    for f in struct.fields:
        yield f.metadata.get(FIELD_ID)
        yield from _child_ids(f.dataType, f.metadata)


def _child_ids(data_type: T.DataType, metadata: Mapping[str, Any]) -> Iterator[Any]:
    match data_type:
        case T.StructType():
            yield from _given_ids(data_type)
        case T.ArrayType():
            element = metadata.get(ELEMENT, {})
            yield element.get(FIELD_ID)
            yield from _child_ids(data_type.elementType, element)
        case T.MapType():
            for key, child in ((KEY, data_type.keyType), (VALUE, data_type.valueType)):
                meta = metadata.get(key, {})
                yield meta.get(FIELD_ID)
                yield from _child_ids(child, meta)


class _ToIceberg:
    """Converts Spark types; with ``fresh`` every ID is a unique negative placeholder."""

    def __init__(self, fresh: bool) -> None:
        self.fresh = fresh
        self.placeholders = itertools.count(-1, -1)
        self.identifiers: list[tuple[int, int]] = []  # (position, field ID)

    def field_id(self, metadata: Mapping[str, Any]) -> int:
        if self.fresh:
            return next(self.placeholders)
        value = metadata[FIELD_ID]
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValidationError(f"Invalid {FIELD_ID} {value!r}: must be an integer")
        return value

    def struct(self, struct: T.StructType) -> StructType:
        fields = []
        for f in struct.fields:
            fid = self.field_id(f.metadata)
            position = f.metadata.get(IDENTIFIER)
            if position is not None and position is not False:
                self.identifiers.append((int(position), fid))
            field_type = self.type(f.dataType, f.metadata, f.name)
            initial, write = (_default(field_type, f.metadata.get(key), f.name)
                              for key in (INITIAL_DEFAULT, WRITE_DEFAULT))
            fields.append(NestedField(fid, f.name, field_type, not f.nullable,
                                      f.metadata.get(DOC), initial, write))
        return StructType(tuple(fields))

    def type(self, data_type: T.DataType, metadata: Mapping[str, Any],
             name: str) -> IcebergType:
        marker = metadata.get(TYPE)
        if marker is not None:
            return _marked(data_type, marker, name)
        match data_type:
            case T.StructType():
                return self.struct(data_type)
            case T.ArrayType():
                element = metadata.get(ELEMENT, {})
                return ListType(self.field_id(element),
                                self.type(data_type.elementType, element, name),
                                not data_type.containsNull)
            case T.MapType():
                key, value = metadata.get(KEY, {}), metadata.get(VALUE, {})
                key_id = self.field_id(key)
                key_type = self.type(data_type.keyType, key, name)
                value_id = self.field_id(value)
                return MapType(key_id, key_type, value_id,
                               self.type(data_type.valueType, value, name),
                               not data_type.valueContainsNull)
            case T.DecimalType():
                return PrimitiveType.decimal(data_type.precision, data_type.scale)
            case T.GeometryType() | T.GeographyType():
                return geo.iceberg_type(data_type, name)
            case _:
                found = _ICEBERG_PRIMITIVES.get(type(data_type))
                if found is None:
                    raise UnsupportedFeature(
                        f"Cannot convert column {name!r} of Spark type "
                        f"{data_type.simpleString()} to an Iceberg type")
                return found


def _default(t: IcebergType, text: Any, name: str) -> Any:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValidationError(f"Invalid default of {name!r}: expected JSON text, got {text!r}")
    return from_json(t, json.loads(text))


_ICEBERG_PRIMITIVES: Mapping[type[T.DataType], PrimitiveType] = {
    T.BooleanType: BOOLEAN, T.ByteType: INT, T.ShortType: INT, T.IntegerType: INT,
    T.LongType: LONG, T.FloatType: FLOAT, T.DoubleType: DOUBLE, T.DateType: DATE,
    T.TimeType: TIME, T.TimestampNTZType: TIMESTAMP, T.TimestampType: TIMESTAMPTZ,
    T.StringType: STRING, T.CharType: STRING, T.VarcharType: STRING, T.BinaryType: BINARY,
    T.NullType: UNKNOWN, T.VariantType: VARIANT,
}


_MARKED: Mapping[TypeId, tuple[type[T.DataType], ...]] = {
    TypeId.UUID: (T.StringType, T.BinaryType),
    TypeId.FIXED: (T.BinaryType,),
    TypeId.TIMESTAMP_NS: (T.TimestampNTZType, T.LongType),
    TypeId.TIMESTAMPTZ_NS: (T.TimestampType, T.LongType),
    TypeId.GEOMETRY: (T.GeometryType, T.BinaryType),
    TypeId.GEOGRAPHY: (T.GeographyType, T.BinaryType),
}
"""The types an ``icepark.type`` marker names, and the Spark types that may hold them."""


def _marked(data_type: T.DataType, marker: Any, name: str) -> PrimitiveType:
    """A uuid, fixed, nanosecond timestamp, geometry or geography type from its
    ``icepark.type`` marker, checked against the Spark type."""
    try:
        t = parse_primitive(marker) if isinstance(marker, str) else None
    except ValidationError:
        t = None
    allowed = _MARKED.get(t.type_id, ()) if t is not None else ()
    if t is None or not isinstance(data_type, allowed):
        raise ValidationError(
            f"Column {name!r} of Spark type {data_type.simpleString()} cannot have "
            f"{TYPE}={marker!r}: uuid is string or binary, fixed[L] is binary, "
            "timestamp_ns timestamp_ntz or bigint, timestamptz_ns timestamp or bigint, "
            "geometry and geography their Spark type or binary")
    return t


def quote(name: str) -> str:
    """``name`` as one Spark column name: in backticks, backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def default_column(f: NestedField, data_type: T.DataType) -> Column:
    """A literal of ``f``'s ``write-default`` (null without one) as Spark type ``data_type``,
    for a column the written rows lack; a uuid default is given as its string (table layout),
    a nanosecond timestamp's as ``LongType`` nanoseconds (exact, whatever ``data_type``).
    """
    if f.write_default is None:
        return F.lit(None).cast(data_type)
    if isinstance(f.field_type, PrimitiveType) and f.field_type.type_id in NANO_TYPES:
        return F.lit(f.write_default).cast(T.LongType())  # nanoseconds: writes take them
    value = from_python_values([f.write_default], f.field_type).to_pylist()[0]
    if isinstance(f.field_type, PrimitiveType) and f.field_type.type_id is TypeId.UUID:
        value = str(value)
    return F.lit(value).cast(data_type)


def _as_table_schema(struct: T.StructType, keep_field_ids: bool) -> Schema:
    """A new table's schema from a Spark ``StructType``
    (:func:`icepark.io.arrow.schema_like.to_schema`)."""
    if keep_field_ids and not any(i is not None for i in _given_ids(struct)):
        raise ValidationError(f"keep_field_ids=True, but the Spark schema carries no field IDs "
                              f"({FIELD_ID!r} metadata); leave it False to assign fresh IDs")
    return to_iceberg(struct, fresh_ids=not keep_field_ids)


schema_like.register(T.StructType, _as_table_schema)
