"""Nanosecond timestamps (``timestamp_ns``, ``timestamptz_ns``) in Spark, which has none.

Spec, *Primitive Types* (v3): ``timestamp_ns`` is a "Timestamp, nanosecond precision, without
timezone", ``timestamptz_ns`` one "with timezone"; Appendix A stores them as ``int64``
``TIMESTAMP_NANOS`` ("Stores nanoseconds from 1970-01-01 00:00:00.000000000"). Spark's
``TimestampType`` and ``TimestampNTZType`` hold microseconds. Measured on PySpark 4.3:

* Spark's Parquet reader reads a ``TIMESTAMP(NANOS)`` column exactly as ``LongType``
  nanoseconds when the read schema says ``LongType`` (vectorized and not, with or without
  ``spark.sql.legacy.parquet.nanosAsLong``, which only matters when Spark infers the schema:
  without it inference fails with ``PARQUET_TYPE_ILLEGAL``); with ``TimestampNTZType`` or
  ``TimestampType`` in the read schema it fails (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``).
* ``TIMESTAMP_NTZ(9)`` exists only as a preview behind ``spark.sql.timestampNanosTypes.enabled``
  ("Parquet read ... may still fail"), and PySpark cannot even parse the type name.

So every Spark read reads these columns as ``LongType`` nanoseconds (the *read layout*), and
filters compare them exactly there. What a read returns is the read mode's (:data:`MODES`),
chosen per read (``timestamp_ns=`` of :func:`icepark.spark.read`, the data source option
``timestamp-ns``) or for the session (:data:`READ_MODE_CONF`):

* ``error`` (the default): a read that returns such a column raises
  :class:`~icepark.errors.UnsupportedFeature` naming it and both choices below -- never a
  silent truncation;
* ``micros``: Spark timestamps (``TimestampNTZType``/``TimestampType``), each value truncated
  toward negative infinity to the microsecond (1969-12-31T23:59:59.999999999 reads as
  ...59.999999, never as 1970-01-01);
* ``nanos``: exact, ``LongType`` nanoseconds since the epoch (UTC for ``timestamptz_ns``).

Writes are exact either way: Spark timestamps are microseconds, each one a whole number of
nanoseconds (times 1000), and a ``LongType`` column is taken as nanoseconds since the epoch
(what ``nanos`` reads), so a read-modify-write keeps every digit. Spark's own Parquet writer
can only write ``TIMESTAMP(MICROS)``, so these columns go through icepark's Parquet writer
in the tasks (:func:`as_nanosecond_batch` turns their ``int64`` values into Arrow
``timestamp[ns]`` first). Partition values and sort keys are computed on the exact
``LongType`` nanoseconds whichever form a write gives (:func:`nanos_column`;
:mod:`icepark.spark.transforms`).

>>> read_mode(None, "micros")
'micros'
>>> read_mode(None, "seconds")
Traceback (most recent call last):
...
icepark.errors.ValidationError: Invalid timestamp_ns read mode 'seconds': use error, micros \
or nanos
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType, ListType, MapType, PrimitiveType, StructType, TypeId

ReadMode = Literal["error", "micros", "nanos"]
MODES: tuple[ReadMode, ...] = ("error", "micros", "nanos")
READ_MODE_CONF = "spark.icepark.read.timestamp-ns"
"""Session setting of the read mode (``error``, ``micros`` or ``nanos``) for reads that do not
choose one; ``spark.``-prefixed so that ``spark-submit --conf`` passes it on."""
READ_MODE_OPTION = "timestamp-ns"
"""The ``icepark`` data source's read option of the same values."""
NANO_TYPES = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})
NANOS_PER_MICRO = 1000


def read_mode(session: Any, given: str | None) -> ReadMode:
    """The read mode: ``given``, else the session's :data:`READ_MODE_CONF`, else ``error``."""
    raw = given
    if raw is None and session is not None:
        raw = session.conf.get(READ_MODE_CONF, None)
    mode = "error" if raw is None else str(raw).strip().lower()
    for known in MODES:
        if mode == known:
            return known
    raise ValidationError(f"Invalid timestamp_ns read mode {raw!r}: use error, micros or nanos")


def nano_columns(t: Schema | IcebergType, path: str = "") -> Iterator[str]:
    """The dotted names of the ``timestamp_ns``/``timestamptz_ns`` columns in ``t``."""
    match t:
        case Schema():
            yield from nano_columns(t.as_struct())
        case StructType():
            for f in t.fields:
                yield from nano_columns(f.field_type, f"{path}{f.name}" if not path
                                        else f"{path}.{f.name}")
        case ListType():
            yield from nano_columns(t.element_type, f"{path}.element")
        case MapType():
            yield from nano_columns(t.key_type, f"{path}.key")
            yield from nano_columns(t.value_type, f"{path}.value")
        case PrimitiveType() if t.type_id in NANO_TYPES:
            yield path


def has_nanos(t: Schema | IcebergType) -> bool:
    """Whether ``t`` is or holds a nanosecond timestamp."""
    return next(nano_columns(t), None) is not None


def check_readable(schema: Schema, mode: ReadMode, table: str = "the table") -> None:
    """Raise :class:`UnsupportedFeature` if ``mode`` is ``error`` and ``schema`` (the columns a
    read returns) has a nanosecond timestamp, naming it and the two ways to read it."""
    if mode != "error":
        return
    found = next(nano_columns(schema), None)
    if found is not None:
        field_id = schema.find_field_id(found)
        t = schema.find_type(field_id) if field_id is not None else "a nanosecond timestamp"
        raise UnsupportedFeature(
            f"Column {found!r} of {table} is {t}, and Spark has no nanosecond timestamp type: "
            "read it as microseconds, truncated toward negative infinity, with "
            "timestamp_ns='micros' (data source option timestamp-ns=micros), or exactly as "
            f"long nanoseconds since the epoch with timestamp_ns='nanos'; {READ_MODE_CONF} "
            "sets the default for the session")


def micros_column(col: Column, t: PrimitiveType) -> Column:
    """``LongType`` nanoseconds as the Spark timestamp of ``t`` (``TimestampNTZType`` for
    ``timestamp_ns``, ``TimestampType`` for ``timestamptz_ns``), truncated toward negative
    infinity to the microsecond: ``n div 1000``, less one for a negative ``n`` it does not
    divide, is exact on longs (a division in doubles is not) and cannot overflow.
    ``timestamp_ntz`` values come from the UTC instant, as in
    :func:`icepark.spark.filters.spark_literal` (icepark sessions use UTC)."""
    per_micro = F.lit(NANOS_PER_MICRO)
    toward_zero = F.call_function("div", col, per_micro)
    below = (col < F.lit(0)) & (F.pmod(col, per_micro) != F.lit(0))
    stamp = F.timestamp_micros(toward_zero - below.cast(T.LongType()))
    return stamp if t.type_id is TypeId.TIMESTAMPTZ_NS else stamp.cast(T.TimestampNTZType())


def nanos_column(col: Column, given: T.DataType, name: str) -> Column:
    """A ``timestamp_ns``/``timestamptz_ns`` column a write gives as Spark type ``given``, as
    ``LongType`` nanoseconds since the epoch, the form the partition transforms and sort keys
    take (:func:`icepark.spark.transforms.source_column`): ``LongType`` is that already; a
    Spark timestamp (``TimestampNTZType``, ``TimestampType``) is its microseconds times 1000,
    exact, as the tasks write it (``unix_micros`` reads a ``timestamp_ntz``'s own value, not
    shifted by the session time zone). A timestamp beyond what a long of nanoseconds holds
    (1677-09-21 to 2262-04-11) fails the job naming it, whether or not ANSI mode is on;
    another type is a :class:`~icepark.errors.ValidationError` naming the column ``name``."""
    if isinstance(given, T.LongType):
        return col
    if not isinstance(given, (T.TimestampType, T.TimestampNTZType)):
        raise ValidationError(
            f"Column {name!r} is {given.simpleString()} in the data: a nanosecond timestamp is "
            "written from bigint nanoseconds since the epoch or a Spark timestamp")
    micros = F.unix_micros(col)
    low, high = _NANOSECOND_MICROS
    message = F.concat(F.lit("Cannot write "), col.cast(T.StringType()),
                       F.lit(f" to the nanosecond timestamp column {name!r}: a long of "
                             "nanoseconds since 1970 holds only 1677-09-21 to 2262-04-11"))
    return (F.when((micros < F.lit(low)) | (micros > F.lit(high)), F.raise_error(message))
            .otherwise(micros * F.lit(NANOS_PER_MICRO)))


_NANOSECOND_MICROS = (-(2**63 // NANOS_PER_MICRO), (2**63 - 1) // NANOS_PER_MICRO)
"""The microseconds whose nanoseconds fit a long."""


# ----------------------------------------------------------------------------- Arrow


def floor_micros(arr: Any, target: Any) -> Any:
    """Arrow ``timestamp[ns]`` values as ``target`` (``timestamp[us]``, zone or not), each
    truncated toward negative infinity (Arrow's own casts refuse to lose digits, and integer
    division truncates toward zero)."""
    nanos = arr.cast(pa.int64())
    quotient = pc.divide(nanos, NANOS_PER_MICRO)
    below = pc.less(nanos, pc.multiply(quotient, NANOS_PER_MICRO))
    floored = pc.if_else(below, pc.subtract(quotient, 1), quotient)
    return floored.cast(target)


def as_nanosecond_batch(batch: Any, schema: Schema) -> Any:
    """``batch`` (Spark's Arrow form of rows to write to ``schema``, matched by name) with every
    ``int64`` column at a nanosecond timestamp's place read as Arrow ``timestamp[ns]`` (UTC
    for ``timestamptz_ns``): the ``LongType`` nanoseconds a write may give, for the Parquet
    writer's conformer, which takes only timestamps there. Other columns are untouched."""
    types = {f.name: f.field_type for f in schema.fields}
    columns, changed = [], False
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        t = types.get(name)
        converted = column if t is None else _as_nanos(column, t)
        changed = changed or converted is not column
        columns.append(converted)
    if not changed:
        return batch
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def nanosecond_input_schema(arrow_schema: Any, schema: Schema) -> Any:
    """The Arrow schema :func:`as_nanosecond_batch` makes of batches of ``arrow_schema``."""
    empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in arrow_schema],
                                       schema=arrow_schema)
    return as_nanosecond_batch(empty, schema).schema


def _as_nanos(arr: Any, t: IcebergType) -> Any:
    if not has_nanos(t):
        return arr
    kind = arr.type
    match t:
        case PrimitiveType():
            if not pa.types.is_int64(kind):
                return arr
            zone = "UTC" if t.type_id is TypeId.TIMESTAMPTZ_NS else None
            return arr.cast(pa.timestamp("ns", tz=zone))
        case StructType() if pa.types.is_struct(kind):
            by_name = {f.name: f.field_type for f in t.fields}
            children = [arr.field(i) for i in range(kind.num_fields)]
            converted = [_as_nanos(c, by_name[kind.field(i).name])
                         if kind.field(i).name in by_name else c
                         for i, c in enumerate(children)]
            if all(a is b for a, b in zip(converted, children, strict=True)):
                return arr
            fields = [pa.field(kind.field(i).name, c.type, kind.field(i).nullable,
                               kind.field(i).metadata) for i, c in enumerate(converted)]
            return pa.StructArray.from_arrays(converted, fields=fields,
                                              mask=arr.is_null() if arr.null_count else None)
        case ListType() if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            values = _as_nanos(arr.values, t.element_type)
            if values is arr.values:
                return arr
            list_type = pa.list_(pa.field(kind.value_field.name, values.type,
                                          kind.value_field.nullable))
            return pa.ListArray.from_arrays(arr.offsets, values, type=list_type,
                                            mask=arr.is_null() if arr.null_count else None)
        case MapType() if pa.types.is_map(kind):
            keys, items = _as_nanos(arr.keys, t.key_type), _as_nanos(arr.items, t.value_type)
            if keys is arr.keys and items is arr.items:
                return arr
            map_type = pa.map_(pa.field(kind.key_field.name, keys.type, False),
                               pa.field(kind.item_field.name, items.type,
                                        kind.item_field.nullable))
            return pa.MapArray.from_arrays(arr.offsets, keys, items, type=map_type,
                                           mask=arr.is_null() if arr.null_count else None)
    return arr


__all__ = ["MODES", "NANO_TYPES", "READ_MODE_CONF", "READ_MODE_OPTION", "ReadMode",
           "as_nanosecond_batch", "check_readable", "floor_micros", "has_nanos",
           "micros_column", "nano_columns", "nanos_column", "nanosecond_input_schema",
           "read_mode"]
