"""Partition transforms as Arrow kernels, and Arrow tables split by partition or sorted.

Spec, *Partition Transforms*: a transform "is applied to the source column to produce a partition
value", and "All transforms must return ``null`` for a ``null`` input value." Spec,
*Partitioning*: "Partition values for a data file must be the same for all records stored in
the data file."

:func:`transform_array` computes, for a whole Arrow column, what
:meth:`icepark.spec.transforms.Transform.function` computes on one Python value (a parity test
ties them, value for value). The work is vectorized: integer-like sources (int, long, date,
time, timestamp, timestamptz) are hashed with a numpy Murmur3 of their 8-byte little-endian
encoding ("Integer and long hash results must be identical for all integer values"), byte-like
sources (string, binary, fixed, uuid, decimal) hash each distinct value once with ``mmh3``;
truncation and the time transforms are numpy integer arithmetic with floor semantics, so
values before 1970 round down ("-1 -> -10" for ``truncate[10]``, 1969-12-31 is day ``-1``).
A partition value that does not fit its result type (``truncate`` of a value next to the
smallest long, ``hour`` of a timestamp 245,000 years away) raises :class:`ValidationError`, as
writing that partition tuple would. Nanosecond timestamp columns (``timestamp('ns')``) work as
microsecond ones with nanosecond units; bucket hashes their microseconds (Appendix B, "Nanosecond
timestamps must be converted to microsecond precision before hashing"). A transform icepark does
not know cannot be computed: :class:`~icepark.errors.UnsupportedFeature`.

:func:`partition_batches` groups the rows of a table by their partition tuple with one
dictionary encoding per partition field and one stable sort, yielding each tuple (values in the
Python representation of :mod:`icepark.spec.types`: ``day`` is int days, ``identity`` of a uuid
a ``uuid.UUID``) with a zero-copy slice of the sorted rows; :func:`sort_table` sorts rows by a
sort order's transforms.

>>> import pyarrow as pa
>>> from icepark.spec.transforms import Transform
>>> from icepark.spec.types import DATE, LONG, STRING
>>> transform_array(Transform.bucket(16), LONG, pa.array([34, None])).to_pylist()
[3, None]
>>> transform_array(Transform.truncate(10), LONG, pa.array([1, -1])).to_pylist()
[0, -10]
>>> to_python_values(transform_array(Transform.month(), DATE, pa.array([-1], pa.int32())
...     .cast(pa.date32())), Transform.month().result_type(DATE))
[-1]
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import ValidationError
from icepark.io.arrow.schema import to_arrow_type
from icepark.spec.datetimes import MICROS_PER_DAY, MICROS_PER_HOUR
from icepark.spec.hashing import NANO_TIMESTAMPS, NANOS_PER_MICRO
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.sorting import NullOrder, SortDirection, SortOrder
from icepark.spec.transforms import Transform, TransformKind
from icepark.spec.types import IcebergType, PrimitiveType, StructType, TypeId

_INT_LIKE = frozenset({TypeId.INT, TypeId.LONG, TypeId.DATE, TypeId.TIME, TypeId.TIMESTAMP,
                       TypeId.TIMESTAMPTZ}) | NANO_TIMESTAMPS
_STORAGE: dict[TypeId, Any] = {TypeId.DATE: pa.int32(), TypeId.TIME: pa.int64(),
                               TypeId.TIMESTAMP: pa.int64(), TypeId.TIMESTAMPTZ: pa.int64(),
                               TypeId.TIMESTAMP_NS: pa.int64(), TypeId.TIMESTAMPTZ_NS: pa.int64()}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN = -(2**63)

# Murmur3 x86_32 constants (Appendix B: "32-bit Murmur3 hash, x86 variant, seeded with 0").
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_N, _F1, _F2 = np.uint32(0xE6546B64), np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)


# ----------------------------------------------------------------------------- transforms


def transform_array(transform: Transform, source_type: IcebergType,
                    array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The partition values of every element of ``array`` (a column of ``source_type`` in the
    Arrow types of :mod:`icepark.io.arrow.schema`), as an Arrow array of the transform's
    result type; nulls stay null.

    >>> from icepark.spec.types import STRING, TIMESTAMP_NS
    >>> transform_array(Transform.truncate(3), STRING, pa.array(["iceberg", "ab"])).to_pylist()
    ['ice', 'ab']
    >>> ns = pa.array([1_510_871_468_000_001_001, -1], pa.timestamp("ns"))
    >>> transform_array(Transform.hour(), TIMESTAMP_NS, ns).to_pylist()
    [419686, -1]
    """
    if isinstance(array, pa.ChunkedArray):
        chunks = array.chunks or [pa.array([], array.type)]
        results = [transform_array(transform, source_type, c) for c in chunks]
        return results[0] if len(results) == 1 else pa.concat_arrays(results)
    transform.check_computable()
    if transform.kind is TransformKind.VOID:
        if _is_nanos(source_type):  # void keeps the source type: the column's own
            return pa.nulls(len(array), array.type)
        return pa.nulls(len(array), to_arrow_type(transform.result_type(source_type)))
    source = transform.check_source(source_type)
    match transform.kind:
        case TransformKind.IDENTITY:
            return array
        case TransformKind.BUCKET:
            return _bucket(array, source, transform.param)
        case TransformKind.TRUNCATE:
            return _truncate(array, source, transform.param)
        case kind:
            return _time(array, source, kind)


def _is_nanos(t: IcebergType) -> bool:
    return isinstance(t, PrimitiveType) and t.type_id in NANO_TIMESTAMPS


def _mask(arr: pa.Array) -> np.ndarray[Any, Any] | None:
    """Where ``arr`` is null (None when nowhere)."""
    return arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None


def _int64s(arr: pa.Array, t: PrimitiveType) -> np.ndarray[Any, Any]:
    """The stored integers of an int-like column (nulls as 0): days, micros, nanos or the
    value."""
    storage = _STORAGE.get(t.type_id)
    plain = arr.cast(storage) if storage is not None else arr
    return np.asarray(plain.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _int32_result(values: np.ndarray[Any, Any], mask: np.ndarray[Any, Any] | None,
                  what: str, arrow_type: Any = None) -> pa.Array:
    valid = values if mask is None else values[~mask]
    if valid.size and (valid.min() < _INT32_MIN or valid.max() > _INT32_MAX):
        bad = valid[(valid < _INT32_MIN) | (valid > _INT32_MAX)][0]
        raise ValidationError(f"{what} {int(bad)} is out of range for int: the partition "
                              "value must be a 32-bit integer")
    out = pa.array(values.astype(np.int32), type=pa.int32(), mask=mask)
    return out if arrow_type is None else out.cast(arrow_type)


def murmur3_longs(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The signed 32-bit Murmur3 hash of each int64's 8-byte little-endian encoding
    (Appendix B: ``hashBytes(littleEndianBytes(v))``), vectorized.

    >>> murmur3_longs(np.array([34], dtype=np.int64)).tolist()
    [2017239379]
    """
    words = np.ascontiguousarray(values, dtype="<i8").view("<u4").reshape(-1, 2)
    h = np.zeros(len(words), dtype=np.uint32)
    for column in (0, 1):
        k = words[:, column].astype(np.uint32) * _C1
        k = ((k << np.uint32(15)) | (k >> np.uint32(17))) * _C2
        h ^= k
        h = ((h << np.uint32(13)) | (h >> np.uint32(19))) * np.uint32(5) + _N
    h ^= np.uint32(8)
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


def _hash_distinct(arr: pa.Array, as_bytes: Callable[[pa.Array], Sequence[bytes]]
                   ) -> np.ndarray[Any, Any]:
    """Hash each distinct value once (``hashBytes`` of its byte form) and spread the results."""
    encoded = arr.dictionary_encode()
    keys = as_bytes(encoded.dictionary)
    hashes = np.fromiter((mmh3.hash(k, 0, signed=True) for k in keys), dtype=np.int32,
                         count=len(keys))
    if not len(hashes):
        return np.zeros(len(arr), dtype=np.int32)
    spread: np.ndarray[Any, Any] = hashes[encoded.indices.fill_null(0).to_numpy(
        zero_copy_only=False)]
    return spread


def _unscaled(arr: pa.Array) -> list[int]:
    """The unscaled integers of a decimal128 array (16-byte little-endian two's complement)."""
    raw = arr.buffers()[1].to_pybytes()
    start = arr.offset * 16
    return [int.from_bytes(raw[start + 16 * i:start + 16 * i + 16], "little", signed=True)
            for i in range(len(arr))]


def _min_big_endian(unscaled: int) -> bytes:
    """Appendix B note 2: "the minimum number of bytes required to hold the unscaled value as
    a two's complement big-endian"."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def _byte_values(arr: pa.Array, t: PrimitiveType) -> Sequence[bytes]:
    match t.type_id:
        case TypeId.DECIMAL:
            return [_min_big_endian(u) for u in _unscaled(arr)]
        case TypeId.STRING:  # "hashBytes(utf8Bytes(v))": Arrow strings are UTF-8 already
            target = pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary()
            return list(arr.cast(target).to_pylist())
        case _:
            return list(arr.to_pylist())


def _bucket(arr: pa.Array, t: PrimitiveType, n: int) -> pa.Array:
    """Spec: ``bucket_N(x) = (murmur3_x86_32_hash(x) & Integer.MAX_VALUE) % N``."""
    if t.type_id in NANO_TIMESTAMPS:  # Appendix B note 3: micros, rounded down
        hashes = murmur3_longs(_int64s(arr, t) // NANOS_PER_MICRO)
    elif t.type_id in _INT_LIKE:
        hashes = murmur3_longs(_int64s(arr, t))
    else:
        storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
        hashes = _hash_distinct(storage, lambda d: _byte_values(d, t))
    buckets = (hashes.astype(np.int64) & 0x7FFFFFFF) % n
    return pa.array(buckets.astype(np.int32), type=pa.int32(), mask=_mask(arr))


def _truncate(arr: pa.Array, t: PrimitiveType, width: int) -> pa.Array:
    """Spec, *Truncate Transform Details*: ``v - (v % W)`` with a positive remainder for int and
    long, ``scaled_W = decimal(W, scale(v))`` for decimals (on the unscaled value), "a valid
    UTF-8 string with no more than L code points" for strings and the first L bytes of binary."""
    match t.type_id:
        case TypeId.INT | TypeId.LONG:
            values = _int64s(arr, t)
            mask = _mask(arr)
            remainder = np.mod(values, width)  # numpy's % floors: the remainder is positive
            if t.type_id is TypeId.INT:
                return _int32_result(values - remainder, mask, f"truncate[{width}]")
            valid = np.ones(len(values), bool) if mask is None else ~mask
            overflow = valid & (values < _INT64_MIN + remainder)
            if overflow.any():
                raise ValidationError(f"truncate[{width}] of {int(values[overflow][0])} is out "
                                      "of range for long")
            return pa.array(values - remainder, type=pa.int64(), mask=mask)
        case TypeId.DECIMAL:
            return _truncate_decimal(arr, t, width)
        case TypeId.STRING:
            return pc.utf8_slice_codeunits(arr, 0, width)  # counts code points, not bytes
        case _:
            return pc.binary_slice(arr, 0, width)


def _decimal_array(unscaled: Sequence[int], arrow_type: Any) -> pa.Array:
    data = b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled)
    return pa.Array.from_buffers(arrow_type, len(unscaled), [None, pa.py_buffer(data)])


def _check_precision(t: PrimitiveType, width: int, unscaled: int) -> None:
    if abs(unscaled) >= 10**t.precision:
        raise ValidationError(f"truncate[{width}] of a {t} value gives unscaled {unscaled}, "
                              f"which has more than {t.precision} digits")


def _truncate_decimal(arr: pa.Array, t: PrimitiveType, width: int) -> pa.Array:
    arrow_type = arr.type
    if t.precision <= 18:  # the unscaled value is the low 64-bit word
        words = np.frombuffer(arr.buffers()[1], dtype="<i8",
                              count=2 * (arr.offset + len(arr)))[2 * arr.offset::2]
        result = words - np.mod(words, width)
        mask = _mask(arr)
        valid = result if mask is None else result[~mask]
        if valid.size and np.abs(valid).max() >= 10**t.precision:
            _check_precision(t, width, int(valid[np.abs(valid) >= 10**t.precision][0]))
        data = np.column_stack([result, result >> 63]).astype("<i8").tobytes()
        out = pa.Array.from_buffers(arrow_type, len(arr), [None, pa.py_buffer(data)])
        if mask is None:
            return out
        return pc.if_else(pa.array(mask), pa.scalar(None, arrow_type), out)
    encoded = arr.dictionary_encode()  # wide decimals: Python integers, once per value
    truncated = [u - u % width for u in _unscaled(encoded.dictionary)]
    for u in truncated:
        _check_precision(t, width, u)
    return _decimal_array(truncated, arrow_type).take(encoded.indices)


def civil_year_month(days: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any],
                                                          np.ndarray[Any, Any]]:
    """Proleptic Gregorian (year, month) of each day count from 1970-01-01 (civil-from-days in
    integer arithmetic, for any day an int64 timestamp can reach).

    >>> [a.tolist() for a in civil_year_month(np.array([17486, -1, -719468]))]
    [[2017, 1969, 0], [11, 12, 3]]
    """
    z = days.astype(np.int64) + 719_468  # days since 0000-03-01
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month


def _time(arr: pa.Array, t: PrimitiveType, kind: TransformKind) -> pa.Array:
    """year/month/day/hour: whole units since 1970-01-01, rounding down (floor division), of
    days, microseconds or nanoseconds."""
    values = _int64s(arr, t)
    mask = _mask(arr)
    per_micro = NANOS_PER_MICRO if t.type_id in NANO_TIMESTAMPS else 1
    if kind is TransformKind.HOUR:
        return _int32_result(values // (MICROS_PER_HOUR * per_micro), mask, "hour")
    days = values if t.type_id is TypeId.DATE else values // (MICROS_PER_DAY * per_micro)
    if kind is TransformKind.DAY:
        return _int32_result(days, mask, "day", pa.date32())
    year, month = civil_year_month(days)
    if kind is TransformKind.YEAR:
        return _int32_result(year - 1970, mask, "year")
    return _int32_result((year - 1970) * 12 + month - 1, mask, "month")


# ----------------------------------------------------------------------------- values


def to_python_values(array: pa.Array | pa.ChunkedArray, t: IcebergType) -> list[Any]:
    """The elements of an Arrow column of primitive type ``t`` as the Python values of
    :mod:`icepark.spec.types` (int days for dates, int microseconds for times and timestamps,
    ``uuid.UUID``, ``Decimal``, ``bytes``); None for null.

    >>> from icepark.spec.types import TIMESTAMP
    >>> to_python_values(pa.array([1, None], pa.int64()).cast(pa.timestamp("us")), TIMESTAMP)
    [1, None]
    """
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"Cannot convert Arrow values of nested type {t} to partition "
                              "values: only primitive columns are partition or filter sources")
    storage = _STORAGE.get(t.type_id)
    if storage is not None:
        return list(array.cast(storage).to_pylist())
    if t.type_id is TypeId.UUID:
        return [v if v is None or isinstance(v, uuid.UUID) else uuid.UUID(bytes=v)
                for v in array.to_pylist()]
    return list(array.to_pylist())


def from_python_values(values: Sequence[Any], t: IcebergType) -> pa.Array:
    """An Arrow array of type ``t`` (as :func:`icepark.io.arrow.schema.to_arrow_type` maps it)
    from Python values of :mod:`icepark.spec.types`; structs are dicts keyed by field ID.

    >>> from icepark.spec.types import DATE
    >>> from_python_values([0, None], DATE).to_pylist()
    [datetime.date(1970, 1, 1), None]
    """
    arrow_type = to_arrow_type(t)
    if isinstance(t, StructType):
        mask = pa.array([v is None for v in values], pa.bool_())
        children = [from_python_values([None if v is None else v.get(f.field_id)
                                        for v in values], f.field_type) for f in t.fields]
        return pa.StructArray.from_arrays(children, fields=list(arrow_type), mask=mask)
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"Cannot build Arrow values of type {t} from Python values: "
                              "only primitives and structs are supported")
    storage = _STORAGE.get(t.type_id)
    if storage is not None:
        return pa.array(values, storage).cast(arrow_type)
    if t.type_id is TypeId.UUID:
        raw = pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
        return (pa.ExtensionArray.from_storage(arrow_type, raw)
                if isinstance(arrow_type, pa.BaseExtensionType) else raw)
    return pa.array(values, arrow_type)


# ----------------------------------------------------------------------------- partitioning


def source_column(table: pa.Table, schema: Schema, field_id: int) -> pa.ChunkedArray:
    """The column of ``table`` holding field ``field_id`` of ``schema``, found by name and
    nested only in structs; a null struct makes its fields null.

    >>> from icepark.spec.types import LONG, NestedField, StructType
    >>> point = StructType((NestedField.optional(2, "x", LONG),))
    >>> s = Schema.of(NestedField.optional(1, "p", point))
    >>> source_column(pa.table({"p": [{"x": 1}, None]}), s, 2).to_pylist()
    [1, None]
    """
    names: list[str] = []
    current: int | None = field_id
    while current is not None:
        found = schema.field_by_id(current)
        if found is None:
            raise ValidationError(f"Cannot find field {field_id} in the schema")
        names.append(found.name)
        current = schema.parent_id(current)
    names.reverse()
    if names[0] not in table.column_names:
        raise ValidationError(f"Column {names[0]!r} is missing from the data")
    column = table.column(names[0])
    for depth, name in enumerate(names[1:], start=1):
        index = (column.type.get_field_index(name) if pa.types.is_struct(column.type) else -1)
        if index < 0:
            raise ValidationError(f"Column {'.'.join(names[:depth + 1])!r} is missing from "
                                  "the data (only struct fields can be partition sources)")
        column = pc.struct_field(column, [index])
    return column


def _storage(arr: pa.Array) -> pa.Array:
    return arr.storage if isinstance(arr, pa.ExtensionArray) else arr


def partition_batches(table: pa.Table, schema: Schema, spec: PartitionSpec
                      ) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """Split ``table`` (columns named as in ``schema``) into one slice per partition tuple of
    ``spec``, each with its tuple, in the order the partitions first occur; rows keep their
    order within a partition. An unpartitioned
    spec yields the whole table with ``()``; an empty table yields nothing.

    >>> from icepark.spec.partitioning import PartitionSpecBuilder
    >>> from icepark.spec.types import LONG, NestedField
    >>> s = Schema.of(NestedField.required(1, "id", LONG))
    >>> spec = PartitionSpecBuilder(s).truncate("id", 10).build()
    >>> [(p, t["id"].to_pylist()) for p, t in
    ...  partition_batches(pa.table({"id": [1, 15, -3, 12]}), s, spec)]
    [((0,), [1]), ((10,), [15, 12]), ((-10,), [-3])]
    """
    if table.num_rows == 0:
        return
    if not spec.fields:
        yield (), table
        return
    spec.check_writable()
    result_types = [f.field_type for f in spec.partition_type(schema).fields]
    codes: list[np.ndarray[Any, Any]] = []
    dictionaries: list[list[Any]] = []
    for f, result_type in zip(spec.fields, result_types, strict=True):
        source = schema.find_field(f.source_id)
        values = transform_array(f.transform, source.field_type,
                                 source_column(table, schema, f.source_id))
        encoded = _storage(values).dictionary_encode()
        dictionaries.append(to_python_values(encoded.dictionary, result_type))
        codes.append(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                     .astype(np.int64))
    stacked = np.vstack(codes)
    changes = np.any(stacked[:, 1:] != stacked[:, :-1], axis=0)
    if not changes.any():  # one partition: no copy
        yield tuple(_value(d, int(c[0])) for d, c in zip(dictionaries, codes, strict=True)), table
        return
    order = np.lexsort(stacked[::-1])  # stable; the first field is the primary key
    stacked = stacked[:, order]
    starts = np.concatenate([[0], np.nonzero(np.any(
        stacked[:, 1:] != stacked[:, :-1], axis=0))[0] + 1, [table.num_rows]])
    ordered = table.take(pa.array(order))
    for start, end in itertools.pairwise(starts):
        partition = tuple(_value(d, int(stacked[i, start])) for i, d in enumerate(dictionaries))
        yield partition, ordered.slice(int(start), int(end - start))


def _value(dictionary: list[Any], code: int) -> Any:
    return None if code < 0 else dictionary[code]


def sort_table(table: pa.Table, schema: Schema, order: SortOrder) -> pa.Table:
    """``table`` (columns named as in ``schema``) sorted by ``order``: spec, *Sorting*, each
    field's "transform that is used to produce values to be sorted on from the source column",
    in its "sort direction", with "a null order that describes the order of null values when
    sorted"; the sort is stable.

    >>> from icepark.spec.sorting import SortOrderBuilder
    >>> from icepark.spec.types import LONG, NestedField
    >>> s = Schema.of(NestedField.optional(1, "n", LONG))
    >>> order = SortOrderBuilder(s).desc("n", NullOrder.NULLS_FIRST).build()
    >>> sort_table(pa.table({"n": [1, None, 3]}), s, order)["n"].to_pylist()
    [None, 3, 1]
    """
    if order.is_unsorted or table.num_rows < 2:
        return table
    order.check_writable()
    keys: dict[str, Any] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, f in enumerate(order.fields):
        source = schema.find_field(f.source_id)
        values = _storage(transform_array(f.transform, source.field_type,
                                          source_column(table, schema, f.source_id)))
        keys[f"n{i}"], keys[f"v{i}"] = values.is_null(), values
        nulls_first = f.null_order is NullOrder.NULLS_FIRST
        sort_keys += [(f"n{i}", "descending" if nulls_first else "ascending"),
                      (f"v{i}", "ascending" if f.direction is SortDirection.ASC
                       else "descending")]
    return table.take(pc.sort_indices(pa.table(keys), sort_keys=sort_keys))
