"""Partition transforms as Spark Column expressions, bit-exact with ``Transform.function``.

Spec, *Partition Transforms*: a transform "is applied to the source column to produce a partition
value"; "All transforms must return ``null`` for a ``null`` input value." The reference semantics
are :meth:`icepark.spec.transforms.Transform.function` on Python values; a parity test runs
both on random values. Columns are expected in the table layout of
:func:`icepark.spark.schema.to_spark` (uuid as its string, time as ``TimeType``), nanosecond
timestamps as ``LongType`` nanoseconds since the epoch (see below; :func:`source_column` takes
them from a DataFrame in either form a write gives).

How each transform is computed (every expression is safe under ``spark.sql.ansi.enabled``,
Spark 4's default: no intermediate value overflows, and a partition value that does not fit
its result type fails the job with ``raise_error``, as the Arrow kernels raise
``ValidationError``):

* ``bucket[N]``: "``(murmur3_x86_32_hash(x) & Integer.MAX_VALUE) % N``", the hash "32-bit
  Murmur3 hash, x86 variant, seeded with 0" (Appendix B). Spark's ``hash()`` is Murmur3 x86 32
  seeded with 42, and ``hash(a, b)`` hashes ``b`` seeded with ``hash(a)``. Murmur3 of one int
  is a bijection, so one int, :data:`ZERO_SEED_KEY`, hashes to 0, and
  ``hash(ZERO_SEED_KEY, x)`` is Murmur3 of ``x`` seeded with 0, natively. For a long Spark
  hashes exactly the spec's 8 little-endian bytes, so int, long, date, time, timestamp and
  timestamptz are ``hash(ZERO_SEED_KEY, long_value)`` (~20M rows/s on 2 cores, as fast as
  Spark's own ``hash``), and so are ``timestamp_ns``/``timestamptz_ns`` of their microseconds
  (Appendix B: "Nanosecond timestamps must be converted to microsecond precision before
  hashing to ensure timestamps have the same hash value"): ``floor(ns / 1000)``, as the
  spec's ``hashLong(microsecsFromUnixEpoch(v))`` (``2017-11-16T22:31:08.000001001`` hashes
  as ``...08.000001``, ``-1`` ns as ``-1`` µs). For bytes Spark's hash equals Murmur3 only
  when the length is a multiple of 4 (it mixes each trailing byte as a block of its own), so
  uuid (16 bytes) and fixed[4k] are native too. string, binary and other fixed lengths go
  through an Arrow UDF calling ``mmh3`` (~3M rows/s); decimals through an Arrow UDF running
  a numpy Murmur3 of "``minBigEndian(unscaled(v))``" on Arrow's decimal128 storage (~2.5M
  rows/s, any precision).
  Measured alternatives for strings, 5M rows, local[2], best of 5 on a loaded machine:
  Arrow UDF + ``mmh3`` 1.6 s (short) / 2.6 s (~140 bytes); native hash of the whole 4-byte
  blocks plus a numpy UDF finishing the tail, 1.8 s / 2.9 s; pandas UDF + ``mmh3`` ~2 s / 2.8 s;
  the whole Murmur3 tail in Column arithmetic 12 s plus 20 s to plan (its xor-shifts and
  multiplications copy their input, so the expression tree grows exponentially), 68 s with
  the copies bound by higher-order functions (interpreted); Spark's own ``hash()`` 0.5 s.
  Decimals: a pandas UDF calling the spec's ``hash_value`` takes 14 s for decimal(38,10),
  the numpy kernel 2.1 s.
* ``truncate[W]``: "``v - (((v % W) + W) % W)``" is ``v - pmod(v, W)`` for int and long, and for
  decimals with ``scaled_W = decimal(W, scale(v))``: on the unscaled long up to precision 18
  (~10M rows/s), on decimals above (Spark's decimal remainder is slow: ~0.3M rows/s); a
  decimal(38, S>6) difference would lose its last digit to Spark's precision rules, so that
  one is computed on the unscaled integer. Strings: ``substring(v, 1, L)`` counts code points
  ("a valid UTF-8 string with no more than L code points"; measured: a non-BMP character
  counts as one); binary counts bytes.
* ``year``/``month``/``day``/``hour``: days and hours are floor divisions of
  ``unix_date``/``unix_micros``, or of the nanoseconds (so 1969-12-31T23:00 is hour -1, and
  1969-12-31T23:59:59.999999999 is day -1 and hour -1); year and month come from Spark's
  proleptic Gregorian ``year``/``month`` of that day, which match the spec's civil calendar
  for every int day. Nothing depends on the session time zone.
* ``identity`` is the column (a nanosecond timestamp's long nanoseconds, which the writer
  stores as the ``timestamp_ns`` partition value); ``void`` a typed null ("Always produces
  ``null``"; a null long for a nanosecond timestamp).
* A transform icepark does not know raises :class:`~icepark.errors.UnsupportedFeature`.

Nanosecond timestamps (``timestamp_ns``, ``timestamptz_ns``): Spark has no type of their
precision, so the transforms take them as ``LongType`` nanoseconds since the epoch
(:mod:`icepark.spark.nanos`), the "``timestamp_ns``, ``timestamptz_ns``" sources of every
time transform and of ``bucket[N]``; a write may give Spark timestamps instead (whole
microseconds), which :func:`source_column` turns into their exact nanoseconds first, so
partition values and sort keys (:mod:`icepark.spark.writer.distribution`) are computed on
one form, to the nanosecond. No quotient of a long of nanoseconds overflows its result type
(+-106,752 days, +-2.6 million hours).

>>> import mmh3, struct
>>> mmh3.hash(struct.pack("<i", ZERO_SEED_KEY), 42)
0
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812
from pyspark.sql.pandas import functions as pandas_functions

from icepark.errors import ValidationError
from icepark.spark.layout import uuid_to_bytes
from icepark.spark.nanos import nanos_column
from icepark.spark.schema import FIELD_ID, quote, to_spark_type
from icepark.spec.datetimes import MICROS_PER_DAY, MICROS_PER_HOUR
from icepark.spec.hashing import NANO_TIMESTAMPS, NANOS_PER_MICRO
from icepark.spec.partitioning import PartitionSpec, check_partition_source
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, TransformKind
from icepark.spec.types import INT, IcebergType, PrimitiveType, TypeId

_MASK32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593  # Murmur3 x86 32 block constants
_M1, _M2 = 0x85EBCA6B, 0xC2B2AE35  # its final-mix constants
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_INT_LIKE = frozenset({TypeId.INT, TypeId.LONG, TypeId.DATE, TypeId.TIME, TypeId.TIMESTAMP,
                       TypeId.TIMESTAMPTZ}) | NANO_TIMESTAMPS


def _rotr(x: int, r: int) -> int:
    return ((x >> r) | (x << (32 - r))) & _MASK32


def _inverse(odd: int) -> int:
    """The multiplicative inverse modulo 2^32 (odd numbers have one)."""
    return pow(odd, -1, 1 << 32)


def _zero_seed_key(seed: int = 42) -> int:
    """The int whose Murmur3 x86 32 hash with ``seed`` is 0: run the hash of one 4-byte block
    backwards from 0 (the final mix maps 0 to 0, so the state before it is the length, 4)."""
    state = ((4 - 0xE6546B64) * _inverse(5)) & _MASK32  # h = rotl(h ^ k, 13) * 5 + 0xe6546b64
    k = _rotr(state, 13) ^ seed
    k = _rotr((k * _inverse(_C2)) & _MASK32, 15)  # k = rotl(k * c1, 15) * c2
    k = (k * _inverse(_C1)) & _MASK32
    return k - (1 << 32) if k >= 1 << 31 else k


ZERO_SEED_KEY = _zero_seed_key()
"""``hash(ZERO_SEED_KEY, x)`` in Spark is Murmur3 x86 32 of ``x`` seeded with 0."""


def transform_column(transform: Transform, source_type: IcebergType, col: Column) -> Column:
    """The partition values of ``col`` (of ``source_type``; a nanosecond timestamp as
    ``LongType`` nanoseconds) under ``transform``, typed as ``transform.result_type(source_type)``
    in Spark (``day`` is a date; a nanosecond timestamp a long)."""
    transform.check_computable()
    if transform.is_void:
        result = transform.result_type(source_type)
        return F.lit(None).cast(to_spark_type(result, timestamp_ns="nanos"))
    source = transform.check_source(source_type)
    match transform.kind:
        case TransformKind.IDENTITY:
            return col
        case TransformKind.BUCKET:
            return _bucket(source, transform.param, col)
        case TransformKind.TRUNCATE:
            return _truncate(source, transform.param, col)
        case TransformKind.DAY if source.type_id is TypeId.DATE:
            return col
        case TransformKind.DAY:
            value, per_micro = _since_epoch(source, col)
            return F.date_from_unix_date(_floor_div(value, MICROS_PER_DAY * per_micro)
                                         .cast(T.IntegerType()))
        case TransformKind.HOUR:
            return _hour(source, col)
        case kind:
            day = col if source.type_id is TypeId.DATE else transform_column(
                Transform.day(), source, col)
            years = F.year(day) - 1970
            if kind is TransformKind.YEAR:
                return years
            return years * 12 + F.month(day) - 1


def partition_columns(spec: PartitionSpec, schema: Schema, df: DataFrame) -> list[Column]:
    """One column per partition field of ``spec``, named by the partition field (with its field
    ID in the metadata), computed from ``df``'s columns in the table layout of ``schema``.

    Spec: "The source column, selected by id, must be a primitive type and cannot be contained
    in a map or list, but may be nested in a struct." A spec with an unknown transform raises
    :class:`~icepark.errors.UnsupportedFeature` (:meth:`PartitionSpec.check_writable`). Sources
    are taken by :func:`source_column` (nanosecond timestamps as their exact nanoseconds).
    """
    spec.check_writable()
    columns = []
    for f in spec.fields:
        if f.transform.is_void and schema.field_by_id(f.source_id) is None:
            column = transform_column(f.transform, INT, F.lit(None))  # a dropped source
        else:
            source = check_partition_source(schema, f.source_id, f.transform, f.name)
            column = transform_column(f.transform, source, source_column(df, schema,
                                                                         f.source_id))
        columns.append(column.alias(f.name, metadata={FIELD_ID: f.field_id}))
    return columns


def source_column(df: DataFrame, schema: Schema, field_id: int) -> Column:
    """The column of ``df`` (in the table layout of ``schema``) holding the field ``field_id``,
    nested in structs too, as the transforms take it: a ``timestamp_ns``/``timestamptz_ns``
    as ``LongType`` nanoseconds whether ``df`` has those or Spark timestamps
    (:func:`icepark.spark.nanos.nanos_column`), so partition values and sort keys are exact."""
    names: list[str] = []
    current: int | None = field_id
    while current is not None:
        names.append(schema.find_field(current).name)
        current = schema.parent_id(current)
    path = ".".join(reversed(names))
    col = df[quote(names.pop())]
    while names:
        col = col.getField(names.pop())
    t = schema.find_field(field_id).field_type
    if isinstance(t, PrimitiveType) and t.type_id in NANO_TIMESTAMPS:
        given = df.select(col).schema.fields[0].dataType  # as Spark resolves the path
        return nanos_column(col, given, path)
    return col


def hash_column(source_type: PrimitiveType, col: Column) -> Column:
    """The Appendix B 32-bit hash of each value of a bucket source type, as an int column.

    Appendix B: "The 32-bit hash implementation is 32-bit Murmur3 hash, x86 variant, seeded
    with 0", of the value's 8 little-endian bytes for int-like types, its UTF-8 bytes, its 16
    big-endian bytes (uuid), its bytes (fixed, binary), or "``minBigEndian(unscaled(v))``";
    a nanosecond timestamp (``LongType`` nanoseconds) is hashed as its microseconds: "Nanosecond
    timestamps must be converted to microsecond precision before hashing".
    """
    tid = source_type.type_id
    if tid in _INT_LIKE:
        value = _long_value(source_type, col)
        return F.when(value.isNotNull(), F.hash(F.lit(ZERO_SEED_KEY), value))
    if tid is TypeId.UUID or (tid is TypeId.FIXED and source_type.length % 4 == 0):
        data = uuid_to_bytes(col) if tid is TypeId.UUID else col
        return F.when(data.isNotNull(), F.hash(F.lit(ZERO_SEED_KEY), data))
    match tid:
        case TypeId.DECIMAL:
            return _decimal_hash_udf(col)
        case TypeId.STRING | TypeId.FIXED | TypeId.BINARY:
            return _bytes_hash_udf(col)
    raise ValidationError(f"Cannot hash {source_type} for bucketing")


def _bucket(source: PrimitiveType, n: int, col: Column) -> Column:
    """Spec: "The hash mod ``N`` must produce a positive value by first discarding the sign bit
    of the hash value"."""
    return hash_column(source, col).bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(n)


def _long_value(t: PrimitiveType, col: Column) -> Column:
    """The long an int-like value is hashed as: the int, days, or microseconds (of a
    nanosecond timestamp, ``floor(ns / 1000)``: "``hashLong(microsecsFromUnixEpoch(v))``")."""
    match t.type_id:
        case TypeId.DATE:
            return F.unix_date(col).cast(T.LongType())
        case TypeId.TIME:
            return F.time_to_micros(col)
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            return F.unix_micros(col)
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            return _floor_div(col, NANOS_PER_MICRO)
        case _:
            return col.cast(T.LongType())


def _since_epoch(t: PrimitiveType, col: Column) -> tuple[Column, int]:
    """A timestamp's long since 1970-01-01T00:00 and how many of its units make a
    microsecond: ``unix_micros`` (1), or the ``LongType`` nanoseconds of a nanosecond
    timestamp (1000)."""
    if t.type_id in NANO_TIMESTAMPS:
        return col, NANOS_PER_MICRO
    return F.unix_micros(col), 1


def _np_fmix(h: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    h = h ^ (h >> 16)
    h = h * np.uint32(_M1)
    h = h ^ (h >> 13)
    h = h * np.uint32(_M2)
    result: np.ndarray[Any, Any] = h ^ (h >> 16)
    return result


def _np_mix_k1(k: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    k = k * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    return k * np.uint32(_C2)


def _np_mix_h1(h: np.ndarray[Any, Any], k: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    h = h ^ _np_mix_k1(k)
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    result: np.ndarray[Any, Any] = h * np.uint32(5) + np.uint32(0xE6546B64)
    return result


def decimal_hashes(unscaled: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Murmur3 x86 32 (int32) of "``minBigEndian(unscaled(v))``" for rows of 16 bytes, each an
    unscaled value as Arrow's decimal128 stores it (two's complement, little endian).

    The big-endian bytes less the leading ones that only extend the sign (a ``00`` before a
    byte below 0x80, an ``FF`` before one from 0x80) are hashed in up to four whole blocks and
    a tail of up to three bytes, every row at once.

    >>> from decimal import Decimal
    >>> from icepark.spec.transforms import hash_value
    >>> from icepark.spec.types import PrimitiveType
    >>> rows = np.array([list((1420).to_bytes(16, "little", signed=True))], np.uint8)
    >>> int(decimal_hashes(rows)[0]) == hash_value(PrimitiveType.decimal(4, 2), Decimal("14.20"))
    True
    """
    big_endian = unscaled[:, ::-1].astype(np.uint32)
    negative = big_endian[:, :1] >= 0x80
    redundant = ((big_endian[:, :15] == np.where(negative, 0xFF, 0))
                 & ((big_endian[:, 1:] >= 0x80) == negative))
    start = np.cumprod(redundant, axis=1).sum(axis=1)  # leading sign-extension bytes
    length = (16 - start).astype(np.uint32)

    def word(first: np.ndarray[Any, Any], count: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Up to 4 bytes from ``first`` as a little-endian int; bytes past ``count`` are 0."""
        offsets = np.arange(4)
        columns = np.minimum(first[:, None] + offsets, 15)
        data = np.take_along_axis(big_endian, columns, axis=1)
        data = np.where(offsets < count[:, None], data, 0)
        result: np.ndarray[Any, Any] = (data << (offsets * 8).astype(np.uint32)).sum(
            axis=1, dtype=np.uint32)
        return result

    h = np.zeros(len(unscaled), np.uint32)
    blocks = length // 4
    four = np.full(len(unscaled), 4)
    for block in range(4):
        mixed = _np_mix_h1(h, word(start + 4 * block, four))
        h = np.where(blocks > block, mixed, h)
    h = h ^ _np_mix_k1(word(start + 4 * blocks, length % 4))
    return _np_fmix(h ^ length).view(np.int32)


def _bytes_hash_arrow(values: pa.Array) -> pa.Array:
    """Murmur3 of each string's UTF-8 bytes or each binary value, with ``mmh3``."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        values = values.cast(pa.large_binary())
    hash_bytes = mmh3.hash
    return pa.array([None if v is None else hash_bytes(v, 0) for v in values.to_pylist()],
                    pa.int32())


def _decimal_hash_arrow(decimals: pa.Array) -> pa.Array:
    data = np.frombuffer(decimals.buffers()[1], np.uint8)
    rows = data[decimals.offset * 16:(decimals.offset + len(decimals)) * 16].reshape(-1, 16)
    return pa.array(decimal_hashes(rows), pa.int32(), mask=_null_mask(decimals))


def _null_mask(array: pa.Array) -> np.ndarray[Any, Any] | None:
    return array.is_null().to_numpy(zero_copy_only=False) if array.null_count else None


# PySpark 4.1+'s Arrow-native scalar UDF (pa.Array in and out); its stub is untyped.
_arrow_udf: Callable[..., Callable[[Column], Column]] = pandas_functions.arrow_udf
_bytes_hash_udf = _arrow_udf(_bytes_hash_arrow, T.IntegerType())
_decimal_hash_udf = _arrow_udf(_decimal_hash_arrow, T.IntegerType())


def _unscaled_long(t: PrimitiveType, col: Column) -> Column:
    """The unscaled value of a decimal(P <= 18, S): exact, the product is decimal(P+S+2, S)."""
    return (col * F.lit(Decimal(10**t.scale))).cast(T.LongType())


def _unscaled_decimal(col: Column) -> Column:
    """A decimal's unscaled value as decimal(38, 0): its plain string without the point
    (exact; arithmetic by 10^S would round decimal(38, S) to fit Spark's precision rules)."""
    return F.regexp_replace(col.cast(T.StringType()), r"\.", "").cast(T.DecimalType(38, 0))


def _truncate(t: PrimitiveType, width: int, col: Column) -> Column:
    """Spec, *Truncate Transform Details*: "The remainder, ``v % W``, must be positive"."""
    match t.type_id:
        case TypeId.INT | TypeId.LONG:
            smallest = _INT_RANGE[0] if t.type_id is TypeId.INT else _LONG_RANGE[0]
            remainder = F.pmod(col, F.lit(width))
            return _check(col < F.lit(smallest) + remainder, col - remainder,
                          f"truncate[{width}] of {t} value", col, f"is below the smallest {t}")
        case TypeId.DECIMAL:
            return _truncate_decimal(t, width, col)
        case _:  # string: code points; binary: bytes
            return F.substring(col, 1, width)


def _truncate_decimal(t: PrimitiveType, width: int, col: Column) -> Column:
    """"``scaled_W = decimal(W, scale(v))``; ``v - (v % scaled_W)``", in exact arithmetic:
    on the unscaled long up to precision 18 (Spark's decimal remainder is ten times slower),
    in decimals above, on the unscaled integer for decimal(38, S>6) (whose difference Spark
    would round to fit its precision rules)."""
    precision, scale = t.precision, t.scale
    result_type = T.DecimalType(precision, scale)
    what, reason = f"truncate[{width}] of {t} value", f"does not fit {t}"
    if precision <= 18:
        unscaled = _unscaled_long(t, col)
        remainder = F.pmod(unscaled, F.lit(width))
        truncated = (unscaled - remainder).cast(T.DecimalType(precision, 0))
        if scale:
            truncated = truncated * F.lit(Decimal(f"1E-{scale}"))
        return _check(unscaled < F.lit(1 - 10**precision) + remainder,
                      truncated.cast(result_type), what, col, reason)
    if precision < 38 or scale <= 6:  # v - r is exact in decimal(P+1, S) (capped at 38)
        scaled = F.lit(Decimal(f"{width}E{-scale}")).cast(
            T.DecimalType(max(scale, len(str(width))), scale))
        smallest = F.lit(Decimal(f"{1 - 10**precision}E{-scale}")).cast(result_type)
        remainder = F.pmod(col, scaled)
        return _check(col < smallest + remainder, (col - remainder).cast(result_type),
                      what, col, reason)
    unscaled = _unscaled_decimal(col)
    remainder = F.pmod(unscaled, F.lit(Decimal(width)).cast(T.DecimalType(10, 0)))
    smallest = F.lit(Decimal(1 - 10**38)).cast(T.DecimalType(38, 0))
    digits = (unscaled - remainder).cast(T.StringType())
    sign = F.regexp_extract(digits, "^-?", 0)
    padded = F.concat(F.lit("0" * scale), F.regexp_replace(digits, "^-", ""))  # lpad cuts
    text = F.concat(sign, F.regexp_replace(padded, f"([0-9]{{{scale}}})$", ".$1"))
    return _check(unscaled < smallest + remainder, text.cast(result_type), what, col, reason)


def _hour(t: PrimitiveType, col: Column) -> Column:
    """Hours from 1970-01-01T00:00, rounded down; beyond an int (245,000 years) is an error
    (a long of nanoseconds never is: +-2.6 million hours)."""
    value, per_micro = _since_epoch(t, col)
    if per_micro != 1:
        return _floor_div(value, MICROS_PER_HOUR * per_micro).cast(T.IntegerType())
    micros = value
    low, high = (_INT_RANGE[0] * MICROS_PER_HOUR, (_INT_RANGE[1] + 1) * MICROS_PER_HOUR)
    return _check((micros < F.lit(low)) | (micros >= F.lit(high)),
                  _floor_div(micros, MICROS_PER_HOUR).cast(T.IntegerType()),
                  f"hour of {t} value", micros, "does not fit an int")


def _floor_div(col: Column, divisor: int) -> Column:
    """``floor(col / divisor)`` for a positive divisor, in long arithmetic (never overflows)."""
    quotient = F.call_function("div", col, F.lit(divisor))
    return F.when(col % F.lit(divisor) < 0, quotient - 1).otherwise(quotient)


def _check(fails: Column, value: Column, what: str, col: Column, reason: str) -> Column:
    """``value``, or a failed job naming the offending value where ``fails`` holds."""
    message = F.concat(F.lit(f"Cannot compute {what} "), col.cast(T.StringType()),
                       F.lit(f": the result {reason}"))
    return F.when(fails, F.raise_error(message)).otherwise(value)
