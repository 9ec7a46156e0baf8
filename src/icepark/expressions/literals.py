"""Converting a predicate's literal to the value representation of the column it is bound to.

Values follow :mod:`icepark.spec.values`: days for ``date``, microseconds for ``time`` and the
timestamps, nanoseconds for ``timestamp_ns``/``timestamptz_ns``, ``Decimal`` at the column's
scale, ``uuid.UUID``, 32-bit-rounded ``float`` for ``float``. Strings are parsed for every type
that has a text form (dates, times, timestamps, numbers, UUIDs, booleans).

An ``int`` literal is a value in the column's own unit: days for a date, microseconds for a
timestamp, nanoseconds for a ``timestamp_ns``, so a bound predicate unbinds and binds again to
itself. (The Java reference reads a bare long as microseconds for ``timestamp_ns`` too; here a
``datetime``, a ``date`` or an ISO string says the instant whatever the unit.) Micro- and
nanosecond precision meet as the reference converts them: a ``datetime`` (microseconds) is
exact in nanoseconds, and a nanosecond string for a microsecond column falls in the
:class:`Gap` between two microseconds rather than being truncated.

Columns of ``unknown``, ``variant``, ``geometry`` and ``geography`` take no literal: unknown is
always null and the others have no order or equality icepark evaluates (only ``IS NULL`` and
``NOT NULL`` apply to them).

A literal no value of the type can equal is not an error: :func:`convert` returns the
:class:`Gap` it falls in, the two adjacent values of the type around it, so binding can rewrite
the comparison exactly (``int_col < 2.5`` is ``int_col <= 2``, ``int_col < 2**40`` holds for every
non-null value). Float columns round the literal to the column's precision instead, as the
reference implementations do, so ``float_col = 0.1`` finds the stored 32-bit ``0.1``.

>>> from icepark.spec.types import INT, TIMESTAMP, PrimitiveType
>>> convert(PrimitiveType.decimal(4, 2), Decimal("10.65"))
Decimal('10.65')
>>> convert(INT, Decimal("2.5")), convert(INT, 2**40)
(Gap(below=2, above=3), Gap(below=2147483647, above=None))
>>> convert(TIMESTAMP, "2024-01-01")
1704067200000000
>>> from icepark.spec.types import TIMESTAMP_NS
>>> convert(TIMESTAMP_NS, "2017-11-16T22:31:08.123456789")
1510871468123456789
>>> convert(TIMESTAMP, "1970-01-01T00:00:00.000000001")
Gap(below=0, above=1)
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from icepark.spec import datetimes as dt
from icepark.spec.bounds import UNORDERED, from_bytes
from icepark.spec.types import PrimitiveType, TypeId
from icepark.spec.values import check_value

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_INTEGER_RANGES = {
    TypeId.INT: _INT32, TypeId.LONG: _INT64, TypeId.DATE: _INT32,
    TypeId.TIME: (0, dt.MICROS_PER_DAY - 1), TypeId.TIMESTAMP: _INT64,
    TypeId.TIMESTAMPTZ: _INT64, TypeId.TIMESTAMP_NS: _INT64, TypeId.TIMESTAMPTZ_NS: _INT64,
}
_NO_LITERALS = frozenset({TypeId.UNKNOWN, TypeId.VARIANT, TypeId.GEOMETRY, TypeId.GEOGRAPHY})
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT_MAX = {TypeId.FLOAT: _FLOAT32_MAX, TypeId.DOUBLE: 1.7976931348623157e308}
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_INFINITIES = {"infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
               "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_TIME = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?", re.ASCII)
_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)"
    r"(Z|[+-]\d{2}:?\d{2})?)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class Gap:
    """A literal strictly between two adjacent values of the column type, ``below`` and
    ``above``; ``None`` where the literal is beyond the type's range on that side."""

    below: Any
    above: Any


def convert(t: PrimitiveType, value: Any) -> Any:
    """``value`` as a value of ``t``, or the :class:`Gap` it falls in.

    Raises ``ValueError`` (with the reason) when the literal cannot be compared with ``t``.
    """
    match t.type_id:
        case TypeId.BOOLEAN:
            return _boolean(value)
        case TypeId.INT | TypeId.LONG:
            return _grid(_number(value), 0, *_INTEGER_RANGES[t.type_id])
        case TypeId.DECIMAL:
            limit = 10**t.precision - 1
            return _grid(_number(value), t.scale, -limit, limit)
        case TypeId.FLOAT | TypeId.DOUBLE:
            return _float(t, value)
        case TypeId.DATE:
            return _date(value)
        case TypeId.TIME:
            return _time(value)
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            return _timestamp(value, zoned=t.type_id is TypeId.TIMESTAMPTZ, nanos=False)
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            return _timestamp(value, zoned=t.type_id is TypeId.TIMESTAMPTZ_NS, nanos=True)
        case tid if tid in _NO_LITERALS:
            raise ValueError("unknown values are always null; only IS NULL and NOT NULL apply"
                             if tid is TypeId.UNKNOWN else f"{t} values cannot be compared; only "
                             "IS NULL and NOT NULL apply")
        case TypeId.UUID:
            return _uuid(value)
        case TypeId.STRING:
            _expect(isinstance(value, str), "expected a string")
            check_value(t, value)
            return value
        case _:  # fixed, binary
            _expect(isinstance(value, bytes | bytearray | memoryview), "expected bytes")
            value = bytes(value)
            _expect(t.type_id is TypeId.BINARY or len(value) == t.length,
                    f"expected {t.length} bytes, got {len(value)}")
            return value


def value_range(t: PrimitiveType) -> tuple[Any, Any]:
    """The least and greatest values of ``t`` where it has them (else ``None``), for binding
    simplifications such as ``long_col < Long.MIN_VALUE`` being always false."""
    if t.type_id in _INTEGER_RANGES:
        return _INTEGER_RANGES[t.type_id]
    match t.type_id:
        case TypeId.DECIMAL:
            limit = 10**t.precision - 1
            return _decimal(-limit, t.scale), _decimal(limit, t.scale)
        case TypeId.STRING:
            return "", None
        case TypeId.BINARY:
            return b"", None
        case _:
            return None, None


def _expect(ok: bool, reason: str) -> None:
    if not ok:
        raise ValueError(reason)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("expected true or false")


def _number(value: Any) -> Decimal:
    """The exact value of a numeric literal: ``int``, ``Decimal``, ``float`` (its shortest
    repr, the number the user wrote) or a numeric string."""
    match value:
        case bool():
            raise ValueError("expected a number")
        case int() | Decimal():
            return Decimal(value)
        case float():
            return Decimal(repr(value))  # 'inf' and '-inf' give infinite Decimals
        case str() if _NUMBER.fullmatch(value.strip()):
            return Decimal(value.strip())
        case str() if value.strip().lower() in _INFINITIES:
            return Decimal(_INFINITIES[value.strip().lower()])
    raise ValueError("expected a number")


def _decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal(f"{unscaled}E{-scale}")


def _floor_ceil(value: Decimal, scale: int) -> tuple[int, int]:
    """The unscaled integers at ``scale`` just below and above ``value`` (equal if exact),
    in integer arithmetic: no rounding however many digits the literal has."""
    if value.is_infinite():
        huge = 10**100 if value > 0 else -(10**100)
        return huge, huge
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    coefficient = int("".join(map(str, digits))) * (-1 if sign else 1)
    if coefficient == 0:
        return 0, 0
    magnitude = value.adjusted() + scale
    if magnitude > 90:  # far beyond every type's range; avoid building enormous integers
        huge = 10**100 if coefficient > 0 else -(10**100)
        return huge, huge
    if magnitude < -2:  # strictly between -1 and 1 unscaled, and not zero
        return (0, 1) if coefficient > 0 else (-1, 0)
    shift = exponent + scale
    if shift >= 0:
        unscaled = coefficient * 10**shift
        return unscaled, unscaled
    quotient, remainder = divmod(coefficient, 10**-shift)
    return (quotient, quotient) if remainder == 0 else (quotient, quotient + 1)


def _grid(value: Decimal, scale: int, low: int, high: int) -> Any:
    """``value`` on the grid of multiples of ``10**-scale`` within ``[low, high]`` (unscaled),
    as an ``int`` (scale 0) or ``Decimal``, or the :class:`Gap` around it."""
    floor, ceil = _floor_ceil(value, scale)

    def make(unscaled: int | None) -> Any:
        if unscaled is None or scale == 0:
            return unscaled
        return _decimal(unscaled, scale)

    if floor == ceil and low <= floor <= high:
        return make(floor)
    below = min(floor, high) if floor >= low else None
    above = max(ceil, low) if ceil <= high else None
    return Gap(make(below), make(above))


def _round_float32(value: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _float(t: PrimitiveType, value: Any) -> Any:
    """Round to the column's float type; a finite literal beyond its range is a :class:`Gap`
    between the largest finite value and infinity."""
    if isinstance(value, float):
        exact, finite = value, math.isfinite(value)
    else:
        number = _number(value)
        finite = number.is_finite()
        exact = float(number)  # correctly rounded; infinite beyond the double range
    if math.isnan(exact):
        raise ValueError("NaN is not a literal; use is_nan or not_nan")
    result = _round_float32(exact) if t.type_id is TypeId.FLOAT else exact
    if finite and math.isinf(result):
        largest = _FLOAT_MAX[t.type_id]
        return Gap(largest, math.inf) if result > 0 else Gap(-math.inf, -largest)
    return result


def _integer(value: int, low: int, high: int) -> Any:
    return _grid(Decimal(value), 0, low, high)


def _date(value: Any) -> Any:
    match value:
        case bool() | datetime():
            raise ValueError("expected a date like '2017-11-16'")
        case int():
            return _integer(value, *_INTEGER_RANGES[TypeId.DATE])
        case date():
            return dt.date_to_days(value)
        case str():
            return dt.iso_to_days(value.strip())
    raise ValueError("expected a date like '2017-11-16'")


def _fraction(digits: str | None, unit_digits: int = 6) -> tuple[int, bool]:
    """A fraction of up to 9 digits in units of ``10**-unit_digits`` seconds (micros or nanos),
    and whether digits beyond them remain."""
    digits = (digits or "").ljust(9, "0")
    return int(digits[:unit_digits]), int(digits[unit_digits:] or "0") != 0


def _time(value: Any) -> Any:
    match value:
        case bool():
            raise ValueError("expected a time like '22:31:08.123456'")
        case int():
            return _integer(value, *_INTEGER_RANGES[TypeId.TIME])
        case time() if value.tzinfo is None:
            return dt.time_to_micros(value)
        case str() if m := _TIME.fullmatch(value.strip()):
            hour, minute, second, fraction = m.groups()
            micros, rest = _fraction(fraction)
            exact = dt.time_to_micros(time(int(hour), int(minute), int(second or 0), micros))
            if not rest:
                return exact
            return Gap(exact, exact + 1) if exact + 1 < dt.MICROS_PER_DAY else Gap(exact, None)
    raise ValueError("expected a time like '22:31:08.123456'")


def _timestamp(value: Any, zoned: bool, nanos: bool) -> Any:
    """A timestamp: an int in the column's unit, ``datetime``, ``date`` (midnight) or ISO text
    (a date alone means midnight; ``T`` or a space separates date and time; up to nanosecond
    digits), in micro- or nanoseconds as the column stores them.

    A zoned column's literal without zone is read as UTC; a literal with a zone offset for a
    column without zone is an error.
    """
    fraction = ".123456789" if nanos else ".123456"
    example = f"'2017-11-16T22:31:08{fraction}" + ("+00:00'" if zoned else "'")
    scale = dt.NANOS_PER_MICRO if nanos else 1
    limits = _INTEGER_RANGES[TypeId.TIMESTAMP]
    match value:
        case bool():
            raise ValueError(f"expected a timestamp like {example}")
        case int():
            return _integer(value, *limits)
        case datetime():
            if value.tzinfo is not None and not zoned:
                raise ValueError("a timestamp (without zone) cannot have a zone offset")
            return _integer(dt.timestamp_to_micros(value) * scale, *limits)
        case date():
            return _integer(dt.date_to_days(value) * dt.MICROS_PER_DAY * scale, *limits)
        case str() if m := _TIMESTAMP.fullmatch(value.strip()):
            day_text, time_text, offset = m.groups()
            if offset and not zoned:
                raise ValueError("a timestamp (without zone) cannot have a zone offset")
            stored = dt.iso_to_days(day_text) * dt.MICROS_PER_DAY * scale
            rest = False
            if time_text:
                hms, _, digits = time_text.partition(".")
                fraction_units, rest = _fraction(digits, 9 if nanos else 6)
                stored += dt.iso_to_time_micros(hms) * scale + fraction_units
            if offset and offset != "Z":
                hours, minutes = int(offset[1:3]), int(offset[-2:])
                shift = (hours * 60 + minutes) * 60 * dt.MICROS_PER_SECOND * scale
                stored += shift if offset[0] == "-" else -shift
            if rest:
                return Gap(stored, stored + 1)
            return _integer(stored, *limits)
    raise ValueError(f"expected a timestamp like {example}")


def _uuid(value: Any) -> uuid.UUID:
    match value:
        case uuid.UUID():
            return value
        case str():
            try:
                return uuid.UUID(value.strip())
            except ValueError:
                pass
        case bytes() if len(value) == 16:
            return uuid.UUID(bytes=value)
    raise ValueError("expected a UUID like 'f79c3e09-677c-4bbd-a479-3f349cb785e7'")


def decode_bounds(t: PrimitiveType, lower: bytes | None,
                  upper: bytes | None) -> tuple[Any, Any]:
    """Lower and upper bounds from their Appendix D bytes, ``None`` where absent or unusable.

    "NaNs are not permitted as lower or upper bounds", so a NaN bound is ignored; so are bounds
    out of order (``lower > upper``), which older writers produced for UUIDs by comparing
    signed longs. Comparing bounds with ``<`` is IEEE 754 for floats, which the spec's
    totalOrder bounds (-0.0 before 0.0) satisfy. Types without an order (variant, geometry,
    geography, unknown) have no usable bounds: geometry's are corner points of a bounding box
    (*Bounds for Variant, Geometry, and Geography*), never compared as values.
    """
    if t.type_id in UNORDERED:  # geometry and geography bounds are points, not values
        return None, None
    low = None if lower is None else from_bytes(t, lower)
    high = None if upper is None else from_bytes(t, upper)
    if isinstance(low, float) and math.isnan(low):
        low = None
    if isinstance(high, float) and math.isnan(high):
        high = None
    if low is not None and high is not None and low > high:
        return None, None
    return low, high
