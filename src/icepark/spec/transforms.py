"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour, void, and
the transforms icepark does not know.

Spec, *Partition Transforms*: a transform "is applied to the source column to produce a partition
value", and "All transforms must return ``null`` for a ``null`` input value."

The transforms are one closed set, so they are one value, :class:`Transform` (a kind plus its
parameter), computing on the Python values described in :mod:`icepark.spec.types`. Engine
versions (Spark Columns, Arrow kernels) live in their adapters and are tested against these.

A transform written by a newer or another writer (``zorder``, ``bucket_v2[8]``, ``h3[5]``) is
kind ``unknown``, keeping its text exactly: Appendix C, "All v3 readers are required to read
tables with unknown transforms, ignoring them". As the reference implementation's
``UnknownTransform`` does, it accepts any source, its result type is ``string`` ("the actual
result type is not known"), it projects no predicate and cannot be computed
(:class:`~icepark.errors.UnsupportedFeature`): "Writers are not allowed to commit files with a
partition spec that contains a field with an unknown transform." Only metadata reading
(:meth:`Transform.from_json`) makes one; :meth:`Transform.parse`, for what people write,
rejects a name it does not know.

Nanosecond timestamps (``timestamp_ns``, ``timestamptz_ns``; Python values are int nanoseconds
from the epoch) are accepted by identity, bucket, year, month, day, hour and void; bucket hashes
their microseconds: Appendix B, "Nanosecond timestamps must be converted to microsecond precision
before hashing to ensure timestamps have the same hash value" (:mod:`icepark.spec.hashing`).

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
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.datetimes import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    MICROS_PER_SECOND,
    days_to_date,
    days_to_iso,
    days_to_year_month,
    micros_to_time,
    micros_to_timestamp,
)
from icepark.spec.hashing import INT_LIKE, NANO_TIMESTAMPS, NANOS_PER_MICRO, hash_value, unscaled
from icepark.spec.types import (
    DATE,
    INT,
    STRING,
    IcebergType,
    PrimitiveType,
    TypeId,
)

_BUCKET_SOURCES = INT_LIKE | NANO_TIMESTAMPS | {TypeId.DECIMAL, TypeId.STRING, TypeId.UUID,
                                                 TypeId.FIXED, TypeId.BINARY}
# The spec lists int, long, decimal and string; binary is accepted too, as every reference
# implementation does, so tables they write can be read.
_TRUNCATE_SOURCES = frozenset({TypeId.INT, TypeId.LONG, TypeId.DECIMAL, TypeId.STRING,
                               TypeId.BINARY})
_HOUR_SOURCES = frozenset({TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ}) | NANO_TIMESTAMPS
_DATE_SOURCES = _HOUR_SOURCES | {TypeId.DATE}
_MAX_PARAM = 2_147_483_647


def _human_nanos(nanos: int, utc: bool) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` with nine fraction digits unless they are all zero (as Python's
    ``isoformat`` writes six for microseconds), ``+00:00`` appended if ``utc``.

    >>> _human_nanos(1_510_871_468_000_001_001, utc=False)
    '2017-11-16T22:31:08.000001001'
    >>> _human_nanos(-1, utc=True)
    '1969-12-31T23:59:59.999999999+00:00'
    """
    days, day_nanos = divmod(nanos, MICROS_PER_DAY * NANOS_PER_MICRO)
    seconds, fraction = divmod(day_nanos, MICROS_PER_SECOND * NANOS_PER_MICRO)
    minutes, second = divmod(seconds, 60)
    text = f"{days_to_iso(days)}T{minutes // 60:02d}:{minutes % 60:02d}:{second:02d}"
    return text + (f".{fraction:09d}" if fraction else "") + ("+00:00" if utc else "")


class TransformKind(StrEnum):
    IDENTITY = "identity"
    BUCKET = "bucket"
    TRUNCATE = "truncate"
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    HOUR = "hour"
    VOID = "void"
    UNKNOWN = "unknown"
    """A transform icepark does not know; :attr:`Transform.text` keeps what was written."""


_TIME_KINDS = frozenset({TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY,
                         TransformKind.HOUR})
# How fine each time transform is: a finer one's order satisfies a coarser one's.
_TIME_RANK = {TransformKind.YEAR: 0, TransformKind.MONTH: 1, TransformKind.DAY: 2,
              TransformKind.HOUR: 3}
_PARAM_RE = re.compile(r"(bucket|truncate)\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class Transform:
    """A partition or sort transform: its kind and, for bucket and truncate, N or W; an
    unknown transform's ``text`` is its JSON string as written (empty for the others)."""

    kind: TransformKind
    param: int = 0
    text: str = ""

    def __post_init__(self) -> None:
        if self.kind is TransformKind.UNKNOWN:
            if not isinstance(self.text, str) or not self.text.strip():
                raise ValidationError("An unknown transform needs its text, e.g. 'zorder'")
            if self.param:
                raise ValidationError(f"Unknown transform {self.text!r} takes no parameter "
                                      "apart from its text")
            return
        if self.text:
            raise ValidationError(f"Only an unknown transform has a text, not {self.kind.value}")
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
    def unknown(text: str) -> Transform:
        """A transform icepark does not know, written as ``text`` (kept exactly)."""
        return Transform(TransformKind.UNKNOWN, text=text)

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
        found = Transform.from_json(text)
        if found.is_unknown:
            if text.strip().lower() in (TransformKind.BUCKET, TransformKind.TRUNCATE):
                raise ValidationError(
                    f"Transform {text!r} needs a parameter, e.g. {text.strip().lower()}[16]")
            raise ValidationError(f"Unknown transform {text!r}")
        return found

    @staticmethod
    def from_json(text: str) -> Transform:
        """Read a transform's JSON string from metadata: a known one as :meth:`parse` reads it,
        anything else as an unknown transform keeping ``text`` exactly (Appendix C: "All v3
        readers are required to read tables with unknown transforms, ignoring them").

        A known name with an invalid parameter is still an error, as in the reference
        implementation.

        >>> Transform.from_json("zorder"), Transform.from_json("bucket_v2[8]").is_unknown
        (zorder, True)
        >>> Transform.from_json("bucket[0]")
        Traceback (most recent call last):
        ...
        icepark.errors.ValidationError: Invalid bucket[0]: the number of buckets must be positive
        """
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"Unknown transform {text!r}: a transform is a non-empty "
                                  "string such as 'identity' or 'bucket[16]'")
        lowered = text.strip().lower()
        if m := _PARAM_RE.fullmatch(lowered):
            return Transform(TransformKind(m.group(1)), int(m.group(2)))
        try:
            kind = TransformKind(lowered)
        except ValueError:
            return Transform.unknown(text)
        if kind in (TransformKind.BUCKET, TransformKind.TRUNCATE, TransformKind.UNKNOWN):
            return Transform.unknown(text)  # the reference reads "bucket" as unknown too
        return Transform(kind)

    def __str__(self) -> str:
        if self.kind is TransformKind.UNKNOWN:
            return self.text
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

    @property
    def is_unknown(self) -> bool:
        """Whether icepark does not know this transform (see the module docstring)."""
        return self.kind is TransformKind.UNKNOWN

    def check_computable(self, what: str = "") -> None:
        """Raise :class:`UnsupportedFeature` for an unknown transform, which icepark cannot
        compute; ``what`` names its field in the message."""
        if self.is_unknown:
            raise UnsupportedFeature(
                f"Cannot compute transform {self.text!r}{f' of {what}' if what else ''}: "
                "icepark does not know it (it reads tables using it, ignoring it for "
                "filtering, but cannot write them)")

    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec's *Source types* column admits ``source``; an unknown transform
        admits any (the reference: "assume the transform function can be applied for any
        type")."""
        if self.kind is TransformKind.UNKNOWN:
            return True
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
        An unknown transform yields ``string``, as the reference's does: "the actual result
        type is not known".
        """
        if self.kind is TransformKind.VOID:
            return source
        if self.kind is TransformKind.UNKNOWN:
            return STRING
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
        """Whether ``a <= b`` implies ``t(a) <= t(b)``: true for all but bucket, void and an
        unknown transform (of which nothing is known)."""
        return self.kind not in (TransformKind.BUCKET, TransformKind.VOID, TransformKind.UNKNOWN)

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
        partition value. An unknown transform raises :class:`UnsupportedFeature`."""
        self.check_computable()
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
        >>> Transform.unknown("zorder").to_human_string(DATE, b"\\x01\\x02")
        'AQI='
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
            case TransformKind.UNKNOWN:  # typed string, but other writers may store anything
                return base64.b64encode(value).decode("ascii") if isinstance(
                    value, bytes) else human_string(STRING, value)
            case _:
                return human_string(self.result_type(source), value)


def check_source_ids(transform: Transform, source_id: int, source_ids: tuple[int, ...],
                     what: str) -> None:
    """The rules of a partition or sort field's source IDs (``what`` names the field):
    ``source_ids`` is empty (a single-argument field, JSON ``source-id``) or starts with
    ``source_id`` (a multi-argument one, ``source-ids``), and only an unknown transform may
    have one: every transform icepark knows takes a single column.

    >>> check_source_ids(Transform.identity(), 3, (3, 4), "Sort field")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Sort field: identity takes one source column, not 2 \
(source-ids [3, 4])
    """
    if not source_ids:
        return
    listed = f"source-ids [{', '.join(map(str, source_ids))}]"
    if source_ids[0] != source_id:
        raise ValidationError(f"{what}: source ID {source_id} is not the first of its {listed}")
    if transform.is_unknown:
        return
    if len(source_ids) > 1:
        raise ValidationError(f"{what}: {transform} takes one source column, not "
                              f"{len(source_ids)} ({listed})")
    raise ValidationError(f"{what}: {transform} is a single-argument transform, written with "
                          "'source-id', not 'source-ids'")


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
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            return _human_nanos(value, utc=t.type_id is TypeId.TIMESTAMPTZ_NS)
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


def _unscaled_at(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at the column's ``scale``, in exact integer arithmetic
    (``Decimal.scaleb`` would round to the 28-digit context and corrupt decimal(38, s))."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = unscaled(value)  # at scale max(-exponent, 0)
    shift = min(exponent, 0) + scale
    factor: int = 10 ** abs(shift)
    if shift >= 0:
        return digits * factor
    quotient, remainder = divmod(digits, factor)
    if remainder:
        raise ValidationError(
            f"Cannot truncate {value}: it has more digits after the point than scale {scale}")
    return quotient


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
                digits = _unscaled_at(v, scale)
                return Decimal(f"{digits - digits % width}E{-scale}")  # exact, no rounding

            return truncate_decimal
        case _:  # string, binary
            return lambda v: None if v is None else v[:width]


def _time_function(kind: TransformKind, t: PrimitiveType) -> Callable[[Any], Any]:
    """year/month/day/hour: whole units since 1970-01-01, rounding down (so before 1970 too),
    of days, microseconds or nanoseconds."""
    is_date = t.type_id is TypeId.DATE
    per_micro = NANOS_PER_MICRO if t.type_id in NANO_TIMESTAMPS else 1
    per_day, per_hour = MICROS_PER_DAY * per_micro, MICROS_PER_HOUR * per_micro

    def days(v: int) -> int:
        return v if is_date else v // per_day

    match kind:
        case TransformKind.HOUR:
            return lambda v: None if v is None else v // per_hour
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


__all__ = ["Transform", "TransformKind", "check_source_ids", "hash_value", "human_string"]
