r"""Single values of Iceberg types: checking, conversion from Python objects, and the
Appendix D JSON form (the binary form and bound order are in :mod:`icepark.spec.bounds`).

Python values follow :mod:`icepark.spec.types`: ``bool``; ``int`` for int/long; ``float``;
``decimal.Decimal`` whose exponent is ``-S``; days from 1970-01-01 for date; microseconds from
midnight for time and from the epoch for timestamp/timestamptz; nanoseconds from the epoch for
timestamp_ns/timestamptz_ns; ``str``; ``uuid.UUID``; ``bytes`` for fixed/binary and WKB
``bytes`` for geometry/geography; ``(metadata, value)`` bytes for variant;
``dict[int, value]`` keyed by field ID for struct (absent fields are simply missing); ``list``
for list; ``dict`` for map. ``None`` is null and is only allowed where the field, element or map
value is optional; it is the only value of ``unknown``.

Spec, Appendix D: binary single-value serialization "is for storing single values as individual
binary values in the lower and upper bounds maps of manifest files"; JSON single values are used
for default values and partition data.

>>> from icepark.spec.types import INT, PrimitiveType
>>> to_json(PrimitiveType.decimal(4, 2), Decimal("14.20"))
'14.20'
>>> from_json(PrimitiveType.decimal(4, 2), "14.2")
Traceback (most recent call last):
...
icepark.errors.ValidationError: Invalid decimal(4,2) value Decimal('14.2'): scale must be 2
"""

from __future__ import annotations

import math
import re
import reprlib
import struct
import uuid
from collections.abc import Hashable
from datetime import date, datetime, time
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from icepark.errors import IcebergError, UnsupportedFeature, ValidationError
from icepark.spec import datetimes as dt
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)

JsonValue = Any  # what json.loads returns: None, bool, int, float, str, list or dict

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
# Inclusive ranges of the integer-valued types: 32/64-bit signed, time within one day.
_RANGES = {
    TypeId.INT: _INT32, TypeId.LONG: _INT64, TypeId.DATE: _INT32,
    TypeId.TIME: (0, dt.MICROS_PER_DAY - 1), TypeId.TIMESTAMP: _INT64, TypeId.TIMESTAMPTZ: _INT64,
    TypeId.TIMESTAMP_NS: _INT64, TypeId.TIMESTAMPTZ_NS: _INT64,
}
NANO_TIMESTAMPS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})
ZONED_TIMESTAMPS = frozenset({TypeId.TIMESTAMPTZ, TypeId.TIMESTAMPTZ_NS})
_TIMESTAMPS = frozenset({TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ}) | NANO_TIMESTAMPS
NESTED = frozenset({TypeId.STRUCT, TypeId.LIST, TypeId.MAP})
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_HEX_RE = re.compile(r"(?:[0-9a-fA-F]{2})*")
_EXAMPLES = {TypeId.DATE: "'2017-11-16'", TypeId.TIME: "'22:31:08.123456'",
             TypeId.TIMESTAMP: "'2017-11-16T22:31:08.123456'",
             TypeId.TIMESTAMPTZ: "'2017-11-16T22:31:08.123456+00:00'",
             TypeId.TIMESTAMP_NS: "'2017-11-16T22:31:08.123456789'",
             TypeId.TIMESTAMPTZ_NS: "'2017-11-16T22:31:08.123456789+00:00'"}
_GEO = frozenset({TypeId.GEOMETRY, TypeId.GEOGRAPHY})
_SURROGATE = re.compile("[\ud800-\udfff]")  # the only code points UTF-8 cannot encode
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_WIDE = Context(prec=200)  # exact quantize for any decimal(P <= 38, |S| <= 38)


def _invalid(t: IcebergType, value: Any, reason: str) -> ValidationError:
    return ValidationError(f"Invalid {t} value {reprlib.repr(value)}: {reason}")


def _require(ok: bool, t: IcebergType, value: Any, reason: str) -> None:
    if not ok:
        raise _invalid(t, value, reason)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _round_float32(value: float) -> float:
    """The nearest 32-bit float (an infinity beyond the 32-bit range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _is_float32(value: float) -> bool:
    return math.isnan(value) or _round_float32(value) == value


def unscaled_int(value: Decimal) -> int:
    sign, digits, _ = value.as_tuple()
    unscaled = int("".join(map(str, digits)))
    return -unscaled if sign else unscaled


def scaled_decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal(f"{unscaled}E{-scale}")  # exact: the string constructor never rounds


def check_value(t: IcebergType, value: Any) -> None:
    """Raise :class:`ValidationError` unless ``value`` is a valid Python value of ``t``.

    int is "32-bit signed", long "64-bit signed"; a decimal's exponent must be ``-S`` ("Scale is
    fixed") and its unscaled value have at most P digits; fixed(L) holds exactly L bytes; a
    float must be exactly a 32-bit IEEE 754 value (:func:`from_python` rounds to one).

    >>> from icepark.spec.types import BOOLEAN, PrimitiveType
    >>> check_value(BOOLEAN, 1)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid boolean value 1: expected a bool
    >>> check_value(PrimitiveType.decimal(3, 2), Decimal("12.34"))
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid decimal(3,2) value Decimal('12.34'): more than 3 digits
    """
    match t:
        case StructType():
            _require(isinstance(value, dict), t, value, "expected a dict keyed by field ID")
            unknown = set(value) - {f.field_id for f in t.fields}
            _require(not unknown, t, value, f"no field with ID {sorted(unknown, key=str)}")
            for f in t.fields:
                if f.field_id in value:
                    _check_nullable(f, value[f.field_id])
        case ListType():
            _require(isinstance(value, list), t, value, "expected a list")
            for element in value:
                _check_nullable(t.element_field, element)
        case MapType():
            _require(isinstance(value, dict), t, value, "expected a dict")
            for k, v in value.items():
                _check_nullable(t.key_field, k)
                _check_nullable(t.value_field, v)
        case PrimitiveType(type_id=TypeId.BOOLEAN):
            _require(isinstance(value, bool), t, value, "expected a bool")
        case PrimitiveType(type_id=TypeId.FLOAT | TypeId.DOUBLE):
            _require(isinstance(value, float), t, value, "expected a float")
            _require(t.type_id is TypeId.DOUBLE or _is_float32(value), t, value,
                     "not a 32-bit float; use from_python to round it")
        case PrimitiveType(type_id=TypeId.DECIMAL):
            _require(isinstance(value, Decimal) and value.is_finite(), t, value,
                     "expected a finite decimal.Decimal")
            _, digits, exponent = value.as_tuple()
            _require(exponent == -t.scale, t, value, f"scale must be {t.scale}")
            _require(len(digits) <= t.precision, t, value, f"more than {t.precision} digits")
        case PrimitiveType(type_id=TypeId.STRING):
            _require(isinstance(value, str), t, value, "expected a str")
            _require(not _SURROGATE.search(value), t, value, "not encodable as UTF-8")
        case PrimitiveType(type_id=TypeId.UUID):
            _require(isinstance(value, uuid.UUID), t, value, "expected a uuid.UUID")
        case PrimitiveType(type_id=TypeId.FIXED | TypeId.BINARY | TypeId.GEOMETRY
                           | TypeId.GEOGRAPHY):
            _require(isinstance(value, bytes), t, value,
                     "expected WKB bytes" if t.type_id in _GEO else "expected bytes")
            _require(t.type_id is not TypeId.FIXED or len(value) == t.length, t, value,
                     f"expected {t.length} bytes, got {len(value)}")
        case PrimitiveType(type_id=TypeId.UNKNOWN):
            raise _invalid(t, value, "the only value of unknown is null")
        case PrimitiveType(type_id=TypeId.VARIANT):
            _require(isinstance(value, tuple) and len(value) == 2
                     and all(isinstance(part, bytes) for part in value), t, value,
                     "expected the (metadata, value) bytes of the Variant encoding")
            _require(len(value[0]) > 0 and value[0][0] & 0x0F == 1 and len(value[1]) > 0, t,
                     value, "the metadata must start with version 1 and the value be non-empty")
        case PrimitiveType():  # the integer-valued types: int, long, date, time, timestamps
            low, high = _RANGES[t.type_id]
            _require(_is_int(value), t, value, "expected an int")
            _require(low <= value <= high, t, value, f"out of range [{low}, {high}]")


def _check_nullable(f: NestedField, value: Any) -> None:
    if value is None:
        if f.is_required:
            raise ValidationError(f"Invalid null for required field {f}")
    else:
        check_value(f.field_type, value)


def to_json(t: IcebergType, value: Any) -> JsonValue:
    """Appendix D JSON single-value serialization of a checked value.

    Decimal: "for values with a positive scale, the number of digits to the right of the decimal
    point is used to indicate scale, for values with a negative scale, the scientific notation
    is used and the exponent must equal the negated scale". Times and timestamps always carry
    six fraction digits; a timestamptz "must include a zone offset and it must be '+00:00'".
    A float is written as the shortest decimal that reads back as the same 32-bit float. NaN
    and infinities stay Python floats, which :func:`json.dumps` writes as the non-standard
    tokens ``NaN``/``Infinity`` (strict JSON has no form for them; :func:`from_json` also
    accepts them as strings, the form Jackson quotes them in by default).

    >>> from icepark.spec.types import FLOAT, TIMESTAMPTZ, PrimitiveType
    >>> to_json(PrimitiveType.decimal(1, -20), Decimal("2E+20"))
    '2E+20'
    >>> to_json(TIMESTAMPTZ, 1510871468123456)
    '2017-11-16T22:31:08.123456+00:00'
    >>> to_json(FLOAT, from_python(FLOAT, 0.1))
    0.1
    """
    check_value(t, value)
    return _to_json(t, value)


def _to_json(t: IcebergType, value: Any) -> JsonValue:
    match t:
        case StructType():
            return {str(f.field_id): _to_json_nullable(f.field_type, value[f.field_id])
                    for f in t.fields if f.field_id in value}
        case ListType():
            return [_to_json_nullable(t.element_type, e) for e in value]
        case MapType():
            return {"keys": [_to_json(t.key_type, k) for k in value],
                    "values": [_to_json_nullable(t.value_type, v) for v in value.values()]}
        case PrimitiveType(type_id=TypeId.FLOAT):
            return _shortest_float32(value)
        case PrimitiveType(type_id=TypeId.DECIMAL):
            return _decimal_str(unscaled_int(value), t.scale)
        case PrimitiveType(type_id=TypeId.TIME):
            return dt.micros_to_iso_time(value)
        case PrimitiveType(type_id=tid) if tid is TypeId.DATE or tid in _TIMESTAMPS:
            try:
                if t.type_id is TypeId.DATE:
                    return dt.days_to_iso(value)
                if t.type_id in NANO_TIMESTAMPS:
                    return dt.nanos_to_iso_timestamp(value, utc=t.type_id in ZONED_TIMESTAMPS)
                return dt.micros_to_iso_timestamp(value, utc=t.type_id in ZONED_TIMESTAMPS)
            except OverflowError as e:
                raise UnsupportedFeature(f"Cannot write {t} value {value} as JSON: only the "
                                         "years 1-9999 are supported") from e
        case PrimitiveType(type_id=TypeId.UUID):
            return str(value)
        case PrimitiveType(type_id=TypeId.FIXED | TypeId.BINARY):
            return value.hex()
        case PrimitiveType(type_id=tid) if tid in _GEO or tid is TypeId.VARIANT:
            raise _no_json(t)
        case _:  # boolean, int, long, double, non-finite float, string: as they are
            return value


def _no_json(t: PrimitiveType) -> IcebergError:
    """Appendix D: geometry and geography are "Stored using WKT representation", which icepark
    does not convert (their defaults must be null, so no default needs it); variant has no
    JSON single-value form."""
    if t.type_id is TypeId.VARIANT:
        return ValidationError("variant values have no JSON single-value form (Appendix D)")
    return UnsupportedFeature(f"{t} values are WKT in JSON (Appendix D), which icepark does "
                              "not convert; their only default is null")


def _to_json_nullable(t: IcebergType, value: Any) -> JsonValue:
    return None if value is None else _to_json(t, value)


def _shortest_float32(value: float) -> float:
    """The double with the fewest significant digits that rounds to the 32-bit ``value``."""
    if not math.isfinite(value):
        return value
    for digits in range(1, 9):
        candidate = float(f"{value:.{digits}g}")
        if _round_float32(candidate) == value:
            return candidate
    return float(f"{value:.9g}")  # 9 significant digits always identify a 32-bit float


def _decimal_str(unscaled: int, scale: int) -> str:
    if scale <= 0:
        return f"{unscaled}E+{-scale}" if scale else str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return f"{'-' if unscaled < 0 else ''}{digits[:-scale]}.{digits[-scale:]}"


def from_json(t: IcebergType, data: JsonValue) -> Any:
    """Decode an Appendix D JSON single value (a default value or partition value).

    Struct fields are looked up by field ID ("using the field ID as the JSON field name"); a
    missing field is absent from the result, an unknown ID is an error. A time may omit seconds
    or have 0-6 fraction digits. A timestamp "must not include a zone offset"; a timestamptz
    "must include a zone offset": ``Z`` and offsets other than ``+00:00`` are converted to UTC.
    Floats accept any JSON number and the strings "NaN", "Infinity", "-Infinity".

    >>> from icepark.spec.types import INT, STRING, MapType, TIMESTAMPTZ
    >>> from_json(MapType(1, STRING, 2, INT), {"keys": ["a", "b"], "values": [1, 2]})
    {'a': 1, 'b': 2}
    >>> from_json(TIMESTAMPTZ, "2017-11-16T14:31:08.123456-08:00")
    1510871468123456
    >>> from_json(INT, "34")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid int value '34': expected a JSON integer
    """
    value: Any
    match t:
        case StructType():
            _require(isinstance(data, dict), t, data, "expected a JSON object keyed by field ID")
            unknown = set(data) - {str(f.field_id) for f in t.fields}
            _require(not unknown, t, data, f"no field with ID {sorted(unknown, key=str)}")
            return {f.field_id: _from_json_nullable(f, data[str(f.field_id)])
                    for f in t.fields if str(f.field_id) in data}
        case ListType():
            _require(isinstance(data, list), t, data, "expected a JSON array")
            return [_from_json_nullable(t.element_field, e) for e in data]
        case MapType():
            _require(isinstance(data, dict) and set(data) == {"keys", "values"}
                     and isinstance(data["keys"], list) and isinstance(data["values"], list)
                     and len(data["keys"]) == len(data["values"]), t, data,
                     'expected {"keys": [...], "values": [...]} of one length')
            keys = [_from_json_nullable(t.key_field, k) for k in data["keys"]]
            _require(all(isinstance(k, Hashable) for k in keys), t, data,
                     f"keys of type {t.key_type} cannot be dict keys")
            _require(len(set(keys)) == len(keys), t, data, "duplicate keys")
            values = [_from_json_nullable(t.value_field, v) for v in data["values"]]
            return dict(zip(keys, values, strict=True))
        case PrimitiveType(type_id=TypeId.FLOAT | TypeId.DOUBLE):
            value = _as_float(t, _NON_FINITE.get(data, data) if isinstance(data, str) else data)
        case PrimitiveType(type_id=TypeId.BOOLEAN | TypeId.STRING):
            value = data
        case PrimitiveType(type_id=TypeId.INT | TypeId.LONG):
            _require(_is_int(data), t, data, "expected a JSON integer")
            value = data
        case PrimitiveType(type_id=tid) if tid in _TIMESTAMPS or tid in (TypeId.DATE,
                                                                          TypeId.TIME):
            value = _parse_datetime(t, data)
        case PrimitiveType(type_id=tid) if tid in _GEO or tid is TypeId.VARIANT:
            raise _no_json(t)
        case PrimitiveType(type_id=TypeId.UNKNOWN):
            raise _invalid(t, data, "the only value of unknown is null")
        case PrimitiveType() if not isinstance(data, str):
            raise _invalid(t, data, "expected a JSON string")
        case PrimitiveType(type_id=TypeId.DECIMAL):
            try:
                value = Decimal(data)
            except InvalidOperation as e:
                raise _invalid(t, data, "not a decimal number") from e
        case PrimitiveType(type_id=TypeId.UUID):
            _require(bool(_UUID_RE.fullmatch(data)), t, data, "expected a UUID like "
                     "'f79c3e09-677c-4bbd-a479-3f349cb785e7'")
            value = uuid.UUID(data)
        case PrimitiveType():  # fixed, binary
            _require(bool(_HEX_RE.fullmatch(data)), t, data, "expected a hexadecimal string")
            value = bytes.fromhex(data)
    check_value(t, value)
    return value


def _from_json_nullable(f: NestedField, data: JsonValue) -> Any:
    if data is None:
        _check_nullable(f, None)
        return None
    return from_json(f.field_type, data)


def _parse_datetime(t: PrimitiveType, data: JsonValue) -> int:
    """Parse a date, time or timestamp ISO-8601 string to its stored integer."""
    example = _EXAMPLES[t.type_id]
    _require(isinstance(data, str), t, data, f"expected an ISO-8601 string like {example}")
    try:
        if t.type_id is TypeId.DATE:
            return dt.iso_to_days(data)
        if t.type_id is TypeId.TIME:
            return dt.iso_to_time_micros(data)
        if t.type_id in NANO_TIMESTAMPS:
            stored, zoned = dt.iso_to_timestamp_nanos(data)
        else:
            stored, zoned = dt.iso_to_timestamp_micros(data)
    except ValueError as e:
        raise _invalid(t, data, f"expected an ISO-8601 string like {example}") from e
    if zoned != (t.type_id in ZONED_TIMESTAMPS):
        raise _invalid(t, data, f"a {t} must not include a zone offset" if zoned
                       else f"a {t} must include a zone offset, e.g. +00:00")
    return stored


def _as_float(t: PrimitiveType, value: Any) -> float:
    """An int or float as a double, or rounded to the nearest 32-bit float for ``float``."""
    _require(isinstance(value, float) or _is_int(value), t, value, "expected a JSON number")
    try:
        result = float(value)
    except OverflowError as e:  # an int beyond the double range
        raise _invalid(t, value, "out of range") from e
    if t.type_id is TypeId.FLOAT:
        result = _round_float32(result)
    _require(math.isfinite(result) or not math.isfinite(value), t, value, "out of range")
    return result


def from_python(t: IcebergType, value: Any) -> Any:
    """Convert a natural Python object to the value representation of ``t``, then check it.

    date -> days, time -> micros from midnight, datetime -> micros from the epoch (timestamptz
    needs an aware datetime and converts it to UTC; timestamp needs a naive one), str -> UUID,
    int/float/str -> Decimal quantized to scale S (losing a digit is an error), int/float ->
    float (rounded to 32 bits for ``float``), bytearray/memoryview -> bytes. Values already in
    the representation pass through.

    >>> from datetime import timedelta, timezone
    >>> from icepark.spec.types import DATE, TIMESTAMPTZ, PrimitiveType
    >>> from_python(DATE, date(2017, 11, 16))
    17486
    >>> from_python(TIMESTAMPTZ, datetime(2017, 11, 16, 14, 31, 8, 123456,
    ...                                   tzinfo=timezone(timedelta(hours=-8))))
    1510871468123456
    >>> from_python(PrimitiveType.decimal(4, 2), 14.2)
    Decimal('14.20')
    """
    match t, value:
        case StructType(), dict():
            value = {k: _from_python_nullable(t.field_by_id(k), v) for k, v in value.items()}
        case ListType(), list() | tuple():
            value = [_from_python_nullable(t.element_field, e) for e in value]
        case MapType(), dict():
            try:
                value = {_from_python_nullable(t.key_field, k):
                         _from_python_nullable(t.value_field, v) for k, v in value.items()}
            except TypeError as e:
                raise _invalid(t, value, f"keys of type {t.key_type} cannot be dict keys") from e
        case PrimitiveType(type_id=TypeId.FLOAT | TypeId.DOUBLE), float() | int():
            value = _as_float(t, value)
        case PrimitiveType(type_id=TypeId.DECIMAL), int() | float() | str() | Decimal():
            value = _quantize(t, value)
        case PrimitiveType(type_id=TypeId.DATE), date() if not isinstance(value, datetime):
            value = dt.date_to_days(value)
        case PrimitiveType(type_id=TypeId.TIME), time():
            _require(value.tzinfo is None, t, value, "a time of day has no time zone")
            value = dt.time_to_micros(value)
        case PrimitiveType(type_id=tid), datetime() if tid in _TIMESTAMPS:
            if (value.tzinfo is None) == (tid in ZONED_TIMESTAMPS):
                raise _invalid(t, value, f"{t} needs an aware datetime" if value.tzinfo
                               is None else f"{t} (without zone) needs a naive datetime")
            value = dt.timestamp_to_micros(value)
            if tid in NANO_TIMESTAMPS:
                value *= dt.NANOS_PER_MICRO
        case PrimitiveType(type_id=TypeId.UUID), str():
            try:
                value = uuid.UUID(value)
            except ValueError as e:
                raise _invalid(t, value, "not a UUID") from e
        case PrimitiveType(type_id=TypeId.FIXED | TypeId.BINARY | TypeId.GEOMETRY
                           | TypeId.GEOGRAPHY), bytearray() | memoryview():
            value = bytes(value)
    check_value(t, value)
    return value


def _from_python_nullable(f: NestedField | None, value: Any) -> Any:
    if f is None:  # an unknown struct field ID: check_value reports it
        return value
    return None if value is None else from_python(f.field_type, value)


def _quantize(t: PrimitiveType, value: int | float | str | Decimal) -> Decimal:
    _require(not isinstance(value, bool), t, value, "expected a number")
    try:
        exact = Decimal(repr(value) if isinstance(value, float) else value)
        if not exact.is_finite():
            raise _invalid(t, value, "expected a finite number")
        quantized = exact.quantize(scaled_decimal(1, t.scale), context=_WIDE)
    except InvalidOperation as e:
        raise _invalid(t, value, f"not a decimal number with scale {t.scale}") from e
    _require(quantized == exact, t, value, f"has more than {t.scale} digits after the point")
    return quantized
