"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour, void.

Spec, *Partition Transforms*: a transform "is applied to the source column to produce a partition
value", and "All transforms must return ``null`` for a ``null`` input value."

The transforms are one closed set, so they are one value, :class:`Transform` (a kind plus its
parameter), computing on the Python values described in :mod:`icepark.spec.types`. Engine
versions (Spark Columns, Arrow kernels) live in their adapters and are tested against these.

>>> from icepark.spec.types import LONG, STRING, TIMESTAMP
>>> t = Transform.parse("bucket[16]")
>>> str(t), t.result_type(LONG), t.apply(LONG, 34)
('bucket[16]', int, 3)
>>> Transform.truncate(3).apply(STRING, "iceberg")
'ice'
>>> Transform.day().to_human_string(TIMESTAMP, Transform.day().apply(TIMESTAMP, -1))
'1969-12-31'
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

import mmh3

from icepark.errors import ValidationError
from icepark.spec.datetimes import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    days_to_date,
    days_to_year_month,
    micros_to_time,
    micros_to_timestamp,
)
from icepark.spec.types import (
    DATE,
    INT,
    IcebergType,
    PrimitiveType,
    TypeId,
)

_INT_LIKE = frozenset({TypeId.INT, TypeId.LONG, TypeId.DATE, TypeId.TIME, TypeId.TIMESTAMP,
                       TypeId.TIMESTAMPTZ})
_BUCKET_SOURCES = _INT_LIKE | {TypeId.DECIMAL, TypeId.STRING, TypeId.UUID, TypeId.FIXED,
                               TypeId.BINARY}
# The spec lists int, long, decimal and string; binary is accepted too, as every reference
# implementation does, so tables they write can be read.
_TRUNCATE_SOURCES = frozenset({TypeId.INT, TypeId.LONG, TypeId.DECIMAL, TypeId.STRING,
                               TypeId.BINARY})
_DATE_SOURCES = frozenset({TypeId.DATE, TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ})
_HOUR_SOURCES = frozenset({TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ})
_MAX_PARAM = 2_147_483_647


class TransformKind(StrEnum):
    IDENTITY = "identity"
    BUCKET = "bucket"
    TRUNCATE = "truncate"
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    HOUR = "hour"
    VOID = "void"


_TIME_KINDS = frozenset({TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY,
                         TransformKind.HOUR})
# How fine each time transform is: a finer one's order satisfies a coarser one's.
_TIME_RANK = {TransformKind.YEAR: 0, TransformKind.MONTH: 1, TransformKind.DAY: 2,
              TransformKind.HOUR: 3}
_PARAM_RE = re.compile(r"(bucket|truncate)\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class Transform:
    """A partition or sort transform: its kind and, for bucket and truncate, N or W."""

    kind: TransformKind
    param: int = 0

    def __post_init__(self) -> None:
        if self.kind in (TransformKind.BUCKET, TransformKind.TRUNCATE):
            if not 0 < self.param <= _MAX_PARAM:
                what = "number of buckets" if self.kind is TransformKind.BUCKET else "width"
                raise ValidationError(
                    f"Invalid {self.kind.value}[{self.param}]: the {what} must be positive"
                    + (f" and at most {_MAX_PARAM}" if self.param > 0 else ""))
        elif self.param:
            raise ValidationError(f"{self.kind.value} takes no parameter")

    @staticmethod
    def identity() -> Transform:
        return Transform(TransformKind.IDENTITY)

    @staticmethod
    def bucket(num_buckets: int) -> Transform:
        return Transform(TransformKind.BUCKET, num_buckets)

    @staticmethod
    def truncate(width: int) -> Transform:
        return Transform(TransformKind.TRUNCATE, width)

    @staticmethod
    def year() -> Transform:
        return Transform(TransformKind.YEAR)

    @staticmethod
    def month() -> Transform:
        return Transform(TransformKind.MONTH)

    @staticmethod
    def day() -> Transform:
        return Transform(TransformKind.DAY)

    @staticmethod
    def hour() -> Transform:
        return Transform(TransformKind.HOUR)

    @staticmethod
    def void() -> Transform:
        return Transform(TransformKind.VOID)

    @staticmethod
    def parse(text: str) -> Transform:
        """Parse a transform's JSON string (Appendix C), e.g. ``"bucket[16]"`` or ``"day"``.

        >>> Transform.parse("truncate[0]")
        Traceback (most recent call last):
        ...
        icepark.errors.ValidationError: Invalid truncate[0]: the width must be positive
        >>> Transform.parse("zorder")
        Traceback (most recent call last):
        ...
        icepark.errors.ValidationError: Unknown transform 'zorder'
        """
        lowered = text.strip().lower()
        if m := _PARAM_RE.fullmatch(lowered):
            return Transform(TransformKind(m.group(1)), int(m.group(2)))
        try:
            kind = TransformKind(lowered)
        except ValueError:
            raise ValidationError(f"Unknown transform {text!r}") from None
        if kind in (TransformKind.BUCKET, TransformKind.TRUNCATE):
            raise ValidationError(f"Transform {text!r} needs a parameter, e.g. {kind.value}[16]")
        return Transform(kind)

    def __str__(self) -> str:
        if self.kind in (TransformKind.BUCKET, TransformKind.TRUNCATE):
            return f"{self.kind.value}[{self.param}]"
        return self.kind.value

    def __repr__(self) -> str:
        return str(self)

    @property
    def is_identity(self) -> bool:
        return self.kind is TransformKind.IDENTITY

    @property
    def is_void(self) -> bool:
        return self.kind is TransformKind.VOID

    @property
    def is_time(self) -> bool:
        """Whether this is year, month, day or hour."""
        return self.kind in _TIME_KINDS

    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec's *Source types* column admits ``source``."""
        if not isinstance(source, PrimitiveType):
            return self.kind is TransformKind.VOID
        tid = source.type_id
        match self.kind:
            case TransformKind.IDENTITY | TransformKind.VOID:
                return True
            case TransformKind.BUCKET:
                return tid in _BUCKET_SOURCES
            case TransformKind.TRUNCATE:
                return tid in _TRUNCATE_SOURCES
            case TransformKind.HOUR:
                return tid in _HOUR_SOURCES
            case _:
                return tid in _DATE_SOURCES

    def check_source(self, source: IcebergType) -> PrimitiveType:
        """The source as a primitive type, or a ValidationError naming the mismatch."""
        if not self.can_transform(source) or not isinstance(source, PrimitiveType):
            raise ValidationError(f"Cannot apply {self} to {source}")
        return source

    def result_type(self, source: IcebergType) -> IcebergType:
        """The partition value's type (spec, *Result type* column).

        ``day`` yields ``date``: the same stored int (days from 1970-01-01) as the spec's
        ``int``, typed as the reference implementations do so partition tuples match theirs.
        """
        if self.kind is TransformKind.VOID:
            return source
        self.check_source(source)
        match self.kind:
            case TransformKind.IDENTITY | TransformKind.TRUNCATE:
                return source
            case TransformKind.DAY:
                return DATE
            case _:
                return INT

    @property
    def preserves_order(self) -> bool:
        """Whether ``a <= b`` implies ``t(a) <= t(b)``: true for all but bucket and void."""
        return self.kind not in (TransformKind.BUCKET, TransformKind.VOID)

    def satisfies_order_of(self, other: Transform, source: IcebergType | None = None) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``.

        Two truncates depend on the source type: a number truncated to W is ordered by a
        multiple of W, a string or binary truncated to L by any length up to L. Without
        ``source`` only equal truncates are claimed.

        >>> from icepark.spec.types import INT, STRING
        >>> Transform.day().satisfies_order_of(Transform.month())
        True
        >>> Transform.truncate(10).satisfies_order_of(Transform.truncate(100), INT)
        True
        >>> Transform.truncate(10).satisfies_order_of(Transform.truncate(100), STRING)
        False
        """
        if self == other:
            return True
        if self.kind is TransformKind.IDENTITY:
            return other.preserves_order
        if self.kind in _TIME_KINDS and other.kind in _TIME_KINDS:
            return _TIME_RANK[self.kind] >= _TIME_RANK[other.kind]
        if (self.kind is TransformKind.TRUNCATE and other.kind is TransformKind.TRUNCATE
                and isinstance(source, PrimitiveType)):
            if source.type_id in (TypeId.STRING, TypeId.BINARY):
                return self.param >= other.param
            return other.param % self.param == 0
        return False

    def function(self, source: IcebergType) -> Callable[[Any], Any]:
        """Bind to a source type once; the returned function maps a value (or None) to its
        partition value."""
        if self.kind is TransformKind.VOID:
            return _void
        source_type = self.check_source(source)
        match self.kind:
            case TransformKind.IDENTITY:
                return _identity
            case TransformKind.BUCKET:
                return _bucket_function(source_type, self.param)
            case TransformKind.TRUNCATE:
                return _truncate_function(source_type, self.param)
            case _:
                return _time_function(self.kind, source_type)

    def apply(self, source: IcebergType, value: Any) -> Any:
        """The partition value of one source value."""
        return self.function(source)(value)

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """The readable form of a partition value, as used in data file paths.

        >>> from icepark.spec.types import DATE, TIMESTAMP
        >>> Transform.hour().to_human_string(TIMESTAMP, 420042)
        '2017-12-01-18'
        >>> Transform.month().to_human_string(DATE, -1)
        '1969-12'
        """
        if value is None:
            return "null"
        match self.kind:
            case TransformKind.YEAR:
                return f"{1970 + value:04d}"
            case TransformKind.MONTH:
                year, month = divmod(value, 12)
                return f"{1970 + year:04d}-{month + 1:02d}"
            case TransformKind.DAY:
                return days_to_date(value).isoformat()
            case TransformKind.HOUR:
                days, hour = divmod(value, 24)
                return f"{days_to_date(days).isoformat()}-{hour:02d}"
            case TransformKind.BUCKET:
                return str(value)
            case _:
                return human_string(self.result_type(source), value)


def human_string(t: IcebergType, value: Any) -> str:
    """The readable form of an identity (or truncate) partition value of type ``t``."""
    if value is None:
        return "null"
    if not isinstance(t, PrimitiveType):
        return str(value)
    match t.type_id:
        case TypeId.DATE:
            return days_to_date(value).isoformat()
        case TypeId.TIME:
            return micros_to_time(value).isoformat()
        case TypeId.TIMESTAMP:
            return micros_to_timestamp(value).isoformat()
        case TypeId.TIMESTAMPTZ:
            return micros_to_timestamp(value).isoformat() + "+00:00"
        case TypeId.BINARY | TypeId.FIXED:
            return base64.b64encode(value).decode("ascii")
        case TypeId.BOOLEAN:
            return "true" if value else "false"
        case TypeId.DECIMAL:
            return f"{value:f}"
        case _:
            return str(value)


def _identity(value: Any) -> Any:
    return value


def _void(value: Any) -> None:
    return None


# Appendix B: "The 32-bit hash implementation is 32-bit Murmur3 hash, x86 variant, seeded with 0."
def _hash_bytes(data: bytes) -> int:
    return int(mmh3.hash(data, 0, signed=True))


def _hash_long(value: int) -> int:
    return _hash_bytes(struct.pack("<q", value))


def _min_big_endian(unscaled: int) -> bytes:
    """Two's complement big-endian in the fewest bytes (Appendix B note 2)."""
    length = max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1)
    return unscaled.to_bytes(length, "big", signed=True)


def _unscaled(value: Decimal) -> int:
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0")
    unscaled = -unscaled if sign else unscaled
    return unscaled * 10**exponent if exponent > 0 else unscaled


def _unscaled_at(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at the column's ``scale``, in exact integer arithmetic
    (``Decimal.scaleb`` would round to the 28-digit context and corrupt decimal(38, s))."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    unscaled = _unscaled(value)  # at scale max(-exponent, 0)
    shift = min(exponent, 0) + scale
    factor: int = 10 ** abs(shift)
    if shift >= 0:
        return unscaled * factor
    quotient, remainder = divmod(unscaled, factor)
    if remainder:
        raise ValidationError(
            f"Cannot truncate {value}: it has more digits after the point than scale {scale}")
    return quotient


def hash_value(t: PrimitiveType, value: Any) -> int:
    """The Appendix B 32-bit hash of a non-null value.

    "Integer and long hash results must be identical for all integer values"; floats hash as
    doubles with NaN and -0.0 canonicalized (those types are not valid for bucketing, but the
    spec fixes their hash too).

    >>> from icepark.spec.types import LONG, STRING
    >>> hash_value(LONG, 34), hash_value(STRING, "iceberg")
    (2017239379, 1210000089)
    """
    match t.type_id:
        case tid if tid in _INT_LIKE:
            return _hash_long(value)
        case TypeId.BOOLEAN:
            return _hash_long(1 if value else 0)
        case TypeId.FLOAT | TypeId.DOUBLE:
            if math.isnan(value):  # canonical NaN bits 0x7ff8000000000000
                return _hash_bytes(struct.pack("<Q", 0x7FF8000000000000))
            return _hash_bytes(struct.pack("<d", 0.0 if value == 0 else value))
        case TypeId.DECIMAL:
            return _hash_bytes(_min_big_endian(_unscaled(value)))
        case TypeId.STRING:
            return _hash_bytes(value.encode("utf-8"))
        case TypeId.UUID:
            return _hash_bytes(value.bytes)
        case _:
            return _hash_bytes(bytes(value))


def _bucket_function(t: PrimitiveType, n: int) -> Callable[[Any], Any]:
    """Spec: ``bucket_N(x) = (murmur3_x86_32_hash(x) & Integer.MAX_VALUE) % N``."""

    def bucket(value: Any) -> int | None:
        if value is None:
            return None
        return (hash_value(t, value) & 0x7FFFFFFF) % n

    return bucket


def _truncate_function(t: PrimitiveType, width: int) -> Callable[[Any], Any]:
    """Spec, *Truncate Transform Details*: ``v - (v % W)`` with a positive remainder for
    integers, ``scaled_W = decimal(W, scale(v))`` for decimals, and for strings "a valid UTF-8
    string with no more than L code points" (a Python str is a sequence of code points, so no
    surrogate pair is ever split)."""
    match t.type_id:
        case TypeId.INT | TypeId.LONG:
            return lambda v: None if v is None else v - v % width
        case TypeId.DECIMAL:
            scale = t.scale

            def truncate_decimal(v: Decimal | None) -> Decimal | None:
                if v is None:
                    return None
                unscaled = _unscaled_at(v, scale)
                return Decimal(f"{unscaled - unscaled % width}E{-scale}")  # exact, no rounding

            return truncate_decimal
        case _:  # string, binary
            return lambda v: None if v is None else v[:width]


def _time_function(kind: TransformKind, t: PrimitiveType) -> Callable[[Any], Any]:
    """year/month/day/hour: whole units since 1970-01-01, rounding down (so before 1970 too)."""
    is_date = t.type_id is TypeId.DATE

    def days(v: int) -> int:
        return v if is_date else v // MICROS_PER_DAY

    match kind:
        case TransformKind.HOUR:
            return lambda v: None if v is None else v // MICROS_PER_HOUR
        case TransformKind.DAY:
            return lambda v: None if v is None else days(v)
        case TransformKind.MONTH:

            def month(v: int | None) -> int | None:
                if v is None:
                    return None
                year, month_of_year = days_to_year_month(days(v))
                return (year - 1970) * 12 + month_of_year - 1

            return month
        case _:
            return lambda v: None if v is None else days_to_year_month(days(v))[0] - 1970
