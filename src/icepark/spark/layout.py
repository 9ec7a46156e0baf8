"""DataFrames between the read layout and the table layout of a schema (see
:mod:`icepark.spark.schema`): uuid columns as 16 bytes or as their string, nanosecond
timestamps as exact ``LongType`` nanoseconds or as Spark timestamps, converted natively in the
projection (no Python worker), inside structs, lists and maps too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.spark.nanos import NANO_TYPES, micros_column
from icepark.spark.schema import Nanos, quote, read_schema, to_spark
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType, ListType, MapType, PrimitiveType, StructType, TypeId


def uuid_to_string(col: Column, column: str | None = None) -> Column:
    """16 uuid bytes (big endian, as stored) as the canonical lower-case uuid string
    (``column``, the name, is not needed: stored values are always 16 bytes)."""
    digits = F.lower(F.hex(col))
    return F.concat(*(F.substring(digits, start, length) if i == 0 else
                      F.concat(F.lit("-"), F.substring(digits, start, length))
                      for i, (start, length) in enumerate(_UUID_GROUPS)))


_UUID_GROUPS = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
_UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def uuid_to_bytes(col: Column, column: str | None = None) -> Column:
    """A uuid string as its 16 bytes; anything but ``8-4-4-4-12`` hex digits fails the job
    with a message naming the value (and ``column``, when given)."""
    where = f" in column {column!r}" if column is not None else ""
    return (F.when(col.isNull(), F.lit(None).cast(T.BinaryType()))
            .when(col.rlike(_UUID_PATTERN), F.unhex(F.regexp_replace(col, "-", "")))
            .otherwise(F.raise_error(F.concat(
                F.lit(f"Invalid uuid value{where} (write xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx): "),
                col))))


def read_columns(schema: Schema, *, timestamp_ns: Nanos = "nanos") -> list[Column]:
    """Columns that turn a DataFrame read with :func:`read_schema` into the table layout
    (uuid bytes become strings, also inside structs, lists and maps; nanosecond timestamps stay
    exact ``LongType`` nanoseconds, or with ``timestamp_ns="micros"`` become Spark timestamps
    truncated toward negative infinity); use with ``select``. The default is exact, so rows
    read and written back (a copy-on-write rewrite) keep every digit."""
    micros = timestamp_ns == "micros"

    def convert(col: Column, t: PrimitiveType, column: str) -> Column:
        if t.type_id is TypeId.UUID:
            return uuid_to_string(col, column)
        return micros_column(col, t) if micros and t.type_id in NANO_TYPES else col

    def touches(t: IcebergType) -> bool:
        return _holds(t, _READ_CONVERTED if micros else frozenset({TypeId.UUID}))

    return _convert_columns(schema, convert, touches, to_spark(schema, timestamp_ns=timestamp_ns))


def file_columns(schema: Schema) -> list[Column]:
    """The inverse of :func:`read_columns`: a table-layout DataFrame in the read layout
    (nanosecond timestamps are left as they are: the writers take both forms)."""
    def convert(col: Column, t: PrimitiveType, column: str) -> Column:
        return uuid_to_bytes(col, column) if t.type_id is TypeId.UUID else col

    return _convert_columns(schema, convert, has_uuid, read_schema(schema))


_READ_CONVERTED = frozenset({TypeId.UUID, *NANO_TYPES})


def _convert_columns(schema: Schema, convert: Callable[[Column, PrimitiveType, str], Column],
                     touches: Callable[[IcebergType], bool],
                     target: T.StructType) -> list[Column]:
    def named(name: str) -> Callable[[Column, PrimitiveType], Column]:
        return lambda col, t: convert(col, t, name)

    columns = []
    for f, spark_field in zip(schema.fields, target.fields, strict=True):
        col = F.col(quote(f.name))
        if touches(f.field_type):
            col = _convert(col, f.field_type, spark_field.dataType, named(f.name),
                           touches).alias(f.name, metadata=spark_field.metadata)
        columns.append(col)
    return columns


def has_uuid(t: IcebergType) -> bool:
    """Whether ``t`` is or holds a uuid, whose Spark layouts (read: 16 bytes, write: string)
    differ and so need converting."""
    return _holds(t, frozenset({TypeId.UUID}))


def _holds(t: IcebergType, kinds: frozenset[TypeId]) -> bool:
    """Whether ``t`` is or holds a primitive of one of the ``kinds``."""
    match t:
        case PrimitiveType():
            return t.type_id in kinds
        case StructType():
            return any(_holds(f.field_type, kinds) for f in t.fields)
        case ListType():
            return _holds(t.element_type, kinds)
        case _:
            return _holds(t.key_type, kinds) or _holds(t.value_type, kinds)


def _convert(col: Column, t: IcebergType, target: Any,
             convert: Callable[[Column, PrimitiveType], Column],
             touches: Callable[[IcebergType], bool]) -> Column:
    """``col`` with ``convert`` applied to every primitive in it that ``touches`` (structs,
    lists and maps too).

    A struct holding such a value is rebuilt field by field, each aliased with its metadata
    from the ``target`` Spark type (so the field IDs stay for Spark's Parquet writer), null
    where the struct is null.
    """
    match t:
        case PrimitiveType():
            return convert(col, t)
        case StructType():
            fields = []
            for f, spark_field in zip(t.fields, target.fields, strict=True):
                inner = col.getField(f.name)
                if touches(f.field_type):
                    inner = _convert(inner, f.field_type, spark_field.dataType, convert,
                                     touches)
                fields.append(inner.alias(f.name, metadata=spark_field.metadata))
            return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*fields))
        case ListType():
            element, element_target = t.element_type, target.elementType
            return F.transform(col, lambda e: _convert(e, element, element_target, convert,
                                                       touches))
        case MapType():
            if touches(t.key_type):
                key, key_target = t.key_type, target.keyType
                col = F.transform_keys(
                    col, lambda k, _: _convert(k, key, key_target, convert, touches))
            if touches(t.value_type):
                value, value_target = t.value_type, target.valueType
                col = F.transform_values(
                    col, lambda _, v: _convert(v, value, value_target, convert, touches))
            return col


__all__ = ["file_columns", "has_uuid", "read_columns", "uuid_to_bytes", "uuid_to_string"]
