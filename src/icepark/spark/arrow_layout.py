"""Arrow batches of icepark's Arrow reader in the Arrow form Spark expects of a Python worker's
output (a data source's ``read``, ``mapInArrow``) for a Spark schema of the table.

The Arrow reader returns the spec's Arrow form of each type (:mod:`icepark.io.arrow.schema`);
Spark's differs for a few: a uuid is its canonical string in the table layout
(:mod:`icepark.spark.schema`) and its 16 bytes as ``binary`` in the read layout; ``fixed`` is
``binary``; nanosecond timestamps are microsecond timestamps truncated toward negative infinity
or exact ``int64`` nanoseconds; a variant is Spark's ``struct<value, metadata>``; geometry and
geography are Spark's spatial structs or WKB; and Spark names list and map children its own
way. :func:`spark_batch` converts a whole batch, :func:`spark_array` one column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T  # noqa: N812
from pyspark.sql.pandas.types import to_arrow_schema as spark_arrow_schema

from icepark.spark import geo
from icepark.spark.nanos import NANO_TYPES, floor_micros
from icepark.spec.schema import Schema
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StructType,
    TypeId,
)


def arrow_schema(schema: T.StructType) -> Any:
    """The Arrow schema Spark expects of Python workers' batches for ``schema``."""
    return spark_arrow_schema(schema, timezone="UTC")




def spark_batch(batch: Any, schema: Schema, target: Any) -> Any:
    """An Arrow reader batch of ``schema`` in Spark's Arrow layout ``target``: uuid values as
    canonical strings, fixed as binary, time in nanoseconds, Spark's field names and
    nullability at every level.

    >>> import uuid
    >>> from icepark.io.arrow.schema import to_arrow_schema
    >>> from icepark.spark.schema import to_spark
    >>> from icepark.spec.types import UUID, ListType, NestedField
    >>> s = Schema.of(NestedField.optional(1, "u", ListType(2, UUID, element_required=False)))
    >>> u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    >>> elements = pa.array([u.bytes, None], pa.binary(16))
    >>> lists = pa.ListArray.from_arrays([0, 2, 2], elements, mask=pa.array([False, True]))
    >>> batch = pa.record_batch([lists], ["u"])
    >>> spark_batch(batch, s, arrow_schema(to_spark(s))).to_pylist()
    [{'u': ['f79c3e09-677c-4bbd-a479-3f349cb785e7', None]}, {'u': None}]
    """
    columns = [spark_array(batch.column(i), f.field_type, target.field(i).type)
               for i, f in enumerate(schema.fields)]
    return pa.RecordBatch.from_arrays(columns, schema=target)


_CONVERTED = frozenset({TypeId.UUID, TypeId.VARIANT, *NANO_TYPES, *geo.GEO_TYPES})
"""The types whose Arrow reader form is not cast to Spark's but converted."""


def _special(t: IcebergType) -> bool:
    match t:
        case PrimitiveType():
            return t.type_id in _CONVERTED
        case StructType():
            return any(_special(f.field_type) for f in t.fields)
        case ListType():
            return _special(t.element_type)
        case _:
            return _special(t.key_type) or _special(t.value_type)


def _primitive(arr: Any, t: PrimitiveType, target: Any) -> Any:
    """One column of a converted type in Spark's form ``target``."""
    match t.type_id:
        case TypeId.UUID:  # the table layout's string, or the read layout's 16 bytes
            if pa.types.is_binary(target):
                storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
                return storage.cast(pa.binary())
            return uuid_strings(arr)
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            return floor_micros(arr, target) if pa.types.is_timestamp(target) \
                else arr.cast(pa.int64())
        case TypeId.VARIANT:  # Spark's order (value, metadata) and marks, by name
            parts = {arr.type.field(i).name: pc.fill_null(child, b"")
                     for i, child in enumerate(arr.flatten())}
            return pa.StructArray.from_arrays([parts[f.name] for f in target], fields=list(target),
                                              mask=arr.is_null() if arr.null_count else None)
        case _:
            return geo.spark_arrow(arr, target)


def spark_array(arr: Any, t: IcebergType, target: Any) -> Any:
    """``arr`` (of Iceberg type ``t``) as Arrow type ``target``: a cast, except that uuids
    (no Arrow cast to their string form), nanosecond timestamps, variants and WKB are
    converted where they are, rebuilding the structs, lists and maps around them.

    >>> from icepark.spec.types import UUID
    >>> u = pa.array([bytes(range(16)), None], pa.binary(16))
    >>> spark_array(u, UUID, pa.string()).to_pylist()  # the table layout
    ['00010203-0405-0607-0809-0a0b0c0d0e0f', None]
    >>> spark_array(u, UUID, pa.binary()).to_pylist() == [bytes(range(16)), None]  # read layout
    True
    """
    if not _special(t):
        return arr if arr.type == target else arr.cast(target)
    mask = arr.is_null() if arr.null_count else None
    match t:
        case PrimitiveType():
            return _primitive(arr, t, target)
        case StructType():
            children = [spark_array(arr.field(i), f.field_type, target.field(i).type)
                        for i, f in enumerate(t.fields)]
            return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
        case ListType():
            values = spark_array(arr.values, t.element_type, target.value_type)
            return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=mask)
        case MapType():
            keys = spark_array(arr.keys, t.key_type, target.key_type)
            items = spark_array(arr.items, t.value_type, target.item_type)
            return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_DASH_AT = (8, 13, 18, 23)
_DIGIT_AT = np.array([i for i in range(36) if i not in _DASH_AT])


def uuid_strings(arr: Any) -> Any:
    """16-byte uuid values (``arrow.uuid`` or ``fixed_size_binary(16)``) as their canonical
    lower-case strings (RFC 4122: ``8-4-4-4-12`` hex digits), nulls kept.

    >>> uuid_strings(pa.array([bytes(range(16)), None], pa.binary(16))).to_pylist()
    ['00010203-0405-0607-0809-0a0b0c0d0e0f', None]
    """
    storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
    n = len(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    data = raw[storage.offset * 16:(storage.offset + n) * 16].reshape(n, 16)
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[data >> 4]
    digits[:, 1::2] = _HEX[data & 15]
    text[:, _DIGIT_AT] = digits
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(36), n,
                                                 [None, pa.py_buffer(text.tobytes())])
    strings = fixed.cast(pa.binary()).cast(pa.string())
    if not storage.null_count:
        return strings
    return pc.if_else(storage.is_null(), pa.scalar(None, pa.string()), strings)
