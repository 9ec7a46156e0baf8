r"""Bounds: the Appendix D binary form of single values, and the order bounds follow.

Spec, Appendix D: binary single-value serialization "is for storing single values as individual
binary values in the lower and upper bounds maps of manifest files". Values are those of
:mod:`icepark.spec.values` (checked with :func:`~icepark.spec.values.check_value`).

>>> from icepark.spec.types import INT
>>> to_bytes(INT, 34)
b'"\x00\x00\x00'
>>> from_bytes(INT, b'"\x00\x00\x00')
34
"""

from __future__ import annotations

import math
import operator
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from icepark.errors import ValidationError
from icepark.spec import datetimes as dt
from icepark.spec.types import PrimitiveType, TypeId
from icepark.spec.values import check_value, scaled_decimal, unscaled_int

# Appendix D: "Stored as 4-byte little-endian" (int, float, date) or 8-byte (long, double, time,
# timestamp, timestamptz, timestamp_ns, timestamptz_ns).
_FORMATS = {
    TypeId.INT: "<i", TypeId.LONG: "<q", TypeId.FLOAT: "<f", TypeId.DOUBLE: "<d",
    TypeId.DATE: "<i", TypeId.TIME: "<q", TypeId.TIMESTAMP: "<q", TypeId.TIMESTAMPTZ: "<q",
    TypeId.TIMESTAMP_NS: "<q", TypeId.TIMESTAMPTZ_NS: "<q",
}
_NOT_SERIALIZED = frozenset({TypeId.STRUCT, TypeId.LIST, TypeId.MAP, TypeId.UNKNOWN,
                             TypeId.VARIANT})
GEO = frozenset({TypeId.GEOMETRY, TypeId.GEOGRAPHY})
UNORDERED = frozenset({TypeId.STRUCT, TypeId.LIST, TypeId.MAP, TypeId.UNKNOWN, TypeId.VARIANT,
                       TypeId.GEOMETRY, TypeId.GEOGRAPHY})
"""Types whose values have no order, so no bound is a least or greatest value: nested types,
unknown, and variant, geometry and geography, whose bounds are of another kind (*Bounds for
Variant, Geometry, and Geography*)."""
# Days of a date bound before date -> timestamp/timestamp_ns, in the promoted unit.
_DATE_SCALE = {TypeId.TIMESTAMP: dt.MICROS_PER_DAY, TypeId.TIMESTAMP_NS: dt.NANOS_PER_DAY}


@dataclass(frozen=True, slots=True)
class GeoPoint:
    """A bound of a geometry or geography column: "points of the following coordinates X, Y,
    Z, and M ... which are the lower / upper bound of all objects in the file"; ``z`` and
    ``m`` are None where the dimension is omitted."""

    x: float
    y: float
    z: float | None = None
    m: float | None = None

    def to_bytes(self) -> bytes:
        r"""Appendix D, *Bound serialization*: "A single point, encoded as a x:y:z:m
        concatenation of its 8-byte little-endian IEEE 754 coordinate values. x and y are
        mandatory. This becomes x:y if z and m are both unset, x:y:z if only m is unset, and
        x:y:NaN:m if only z is unset."

        >>> GeoPoint(1.0, 2.0, m=4.0).to_bytes().hex(":", 8)
        '000000000000f03f:0000000000000040:000000000000f87f:0000000000001040'
        """
        coordinates = [self.x, self.y]
        if self.z is not None or self.m is not None:
            coordinates.append(math.nan if self.z is None else self.z)
        if self.m is not None:
            coordinates.append(self.m)
        return struct.pack(f"<{len(coordinates)}d", *coordinates)

    @staticmethod
    def from_bytes(data: bytes) -> GeoPoint:
        """Decode a geometry or geography bound (16, 24 or 32 bytes; a NaN z is unset)."""
        if not isinstance(data, bytes | bytearray | memoryview) or len(data) not in (16, 24, 32):
            size = len(data) if isinstance(data, bytes | bytearray | memoryview) else "non-bytes"
            raise ValidationError(f"Cannot decode a geospatial bound from {size} bytes: "
                                  "expected 16, 24 or 32 (x:y[:z][:m])")
        values = struct.unpack(f"<{len(data) // 8}d", bytes(data))
        z = values[2] if len(values) > 2 and not math.isnan(values[2]) else None
        return GeoPoint(values[0], values[1], z, values[3] if len(values) > 3 else None)

def to_bytes(t: PrimitiveType, value: Any) -> bytes:
    r"""Appendix D binary single-value serialization of a checked value (bounds maps).

    "decimal(P, S): Stores unscaled value as two's-complement big-endian binary, using the
    minimum number of bytes for the value"; "uuid: 16-byte big-endian value".

    >>> from decimal import Decimal
    >>> from icepark.spec.types import UUID, PrimitiveType
    >>> to_bytes(PrimitiveType.decimal(3, 2), Decimal("-1.00"))
    b'\x9c'
    >>> to_bytes(UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")).hex(" ").upper()
    'F7 9C 3E 09 67 7C 4B BD A4 79 3F 34 9C B7 85 E7'
    """
    if t.type_id in _NOT_SERIALIZED:
        raise ValidationError(f"Binary serialization of {t} is not supported (Appendix D)")
    check_value(t, value)
    match t.type_id:
        case TypeId.BOOLEAN:
            return b"\x01" if value else b"\x00"
        case TypeId.STRING:
            return bytes(value.encode())
        case TypeId.UUID:
            return bytes(value.bytes)
        case TypeId.FIXED | TypeId.BINARY | TypeId.GEOMETRY | TypeId.GEOGRAPHY:
            return bytes(value)  # geometry and geography: "WKB format"
        case TypeId.DECIMAL:
            unscaled = unscaled_int(value)
            size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
            return unscaled.to_bytes(size, "big", signed=True)
        case _:
            return struct.pack(_FORMATS[t.type_id], value)


def from_bytes(t: PrimitiveType, data: bytes) -> Any:
    r"""Decode an Appendix D binary single value, e.g. a lower or upper bound.

    boolean: "0x00 for false, non-zero byte for true". Type promotion leaves old bounds alone,
    so, as the reference implementations do, a 4-byte ``long`` decodes as a little-endian int
    and a 4-byte ``double`` as a float (bounds written before int->long or float->double), and
    a 4-byte ``timestamp``/``timestamp_ns`` as a date, at midnight in the promoted unit (*Schema
    Evolution*: "timestamp_ns, 4 bytes: date"). A ``fixed(L)`` value may be shorter than L:
    bounds may be truncated. Any other length is an error; struct, list, map, unknown and
    variant are "Not supported"; geometry and geography decode as WKB (their *bounds* are
    :class:`GeoPoint` values).

    >>> from icepark.spec.types import INT, LONG
    >>> from_bytes(LONG, to_bytes(INT, -5))
    -5
    >>> from icepark.spec.types import DATE, TIMESTAMP_NS
    >>> from_bytes(TIMESTAMP_NS, to_bytes(DATE, 1))
    86400000000000
    >>> from_bytes(INT, b"\x01\x02\x03")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot decode int from 3 bytes: expected 4
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ValidationError(f"Cannot decode {t} from {type(data).__name__}: expected bytes")
    data, size = bytes(data), len(data)
    match t.type_id:
        case tid if tid in _NOT_SERIALIZED:
            raise ValidationError(f"Binary serialization of {t} is not supported (Appendix D)")
        case TypeId.BOOLEAN:
            _expect_size(t, data, 1)
            return data[0] != 0
        case TypeId.STRING:
            try:
                return data.decode()
            except UnicodeDecodeError as e:
                raise ValidationError(f"Cannot decode {t}: invalid UTF-8 ({e.reason})") from e
        case TypeId.UUID:
            _expect_size(t, data, 16)
            return uuid.UUID(bytes=data)
        case TypeId.FIXED if size > t.length:
            raise ValidationError(f"Cannot decode {t} from {size} bytes: expected {t.length}")
        case TypeId.FIXED | TypeId.BINARY | TypeId.GEOMETRY | TypeId.GEOGRAPHY:
            return data
        case TypeId.DECIMAL if size == 0:
            raise ValidationError(f"Cannot decode {t} from 0 bytes: expected at least 1")
        case TypeId.DECIMAL:
            return scaled_decimal(int.from_bytes(data, "big", signed=True), t.scale)
        case TypeId.LONG | TypeId.DOUBLE if size == 4:  # written before int->long, float->double
            return struct.unpack("<i" if t.type_id is TypeId.LONG else "<f", data)[0]
        case TypeId.TIMESTAMP | TypeId.TIMESTAMP_NS if size == 4:  # written before date->ts
            days: int = struct.unpack("<i", data)[0]
            return days * _DATE_SCALE[t.type_id]
        case _:
            fmt = _FORMATS[t.type_id]
            _expect_size(t, data, struct.calcsize(fmt))
            return struct.unpack(fmt, data)[0]


def _expect_size(t: PrimitiveType, data: bytes, size: int) -> None:
    if len(data) != size:
        raise ValidationError(f"Cannot decode {t} from {len(data)} bytes: expected {size}")


def sort_key(t: PrimitiveType) -> Callable[[Any], Any]:
    """A key function ordering values of ``t`` as the spec and the reference implementation do.

    Floats: "-NaN < -Infinity < -value < -0 < 0 < value < Infinity < NaN", i.e. IEEE 754
    totalOrder, from the sign-folded bit pattern. Strings sort by code point, which is the
    UTF-8 byte order; fixed and binary by unsigned bytes. UUIDs sort by their 16 big-endian
    bytes, unsigned (RFC 4122/9562, as Parquet's UUID order and newer Iceberg Java); older
    Java compared two signed longs, so its bounds may disagree for UUIDs whose first or ninth
    byte is 0x80 or more.

    >>> from icepark.spec.types import DOUBLE
    >>> sorted([1.0, math.nan, -0.0, -math.inf, 0.0, -math.nan], key=sort_key(DOUBLE))
    [nan, -inf, -0.0, 0.0, 1.0, nan]
    """
    match t.type_id:
        case tid if tid in UNORDERED:
            raise ValidationError(f"Values of {t} have no order for bounds")
        case TypeId.FLOAT | TypeId.DOUBLE:
            return _float_order
        case TypeId.UUID:
            return operator.attrgetter("bytes")
        case _:
            return lambda value: value


def _float_order(value: float) -> int:
    bits: int = struct.unpack("<q", struct.pack("<d", value))[0]
    return bits if bits >= 0 else bits ^ 0x7FFF_FFFF_FFFF_FFFF


def _bound_candidates(t: PrimitiveType, values: Iterable[Any]) -> Iterator[Any]:
    floats = t.type_id in {TypeId.FLOAT, TypeId.DOUBLE}
    return (v for v in values if v is not None and not (floats and math.isnan(v)))


def lower_bound(t: PrimitiveType, values: Iterable[Any]) -> Any | None:
    """The least non-null, non-NaN value, or None if there is none.

    Spec, *Manifests*: "For float and double, the value -0.0 must precede +0.0, as in the IEEE
    754 totalOrder predicate. NaNs are not permitted as lower or upper bounds."

    >>> from icepark.spec.types import DOUBLE
    >>> lower_bound(DOUBLE, [0.0, None, math.nan, -0.0])
    -0.0
    """
    return min(_bound_candidates(t, values), key=sort_key(t), default=None)


def upper_bound(t: PrimitiveType, values: Iterable[Any]) -> Any | None:
    """The greatest non-null, non-NaN value, or None if there is none (see :func:`lower_bound`).

    >>> from icepark.spec.types import DOUBLE
    >>> upper_bound(DOUBLE, [-0.0, math.nan, 0.0])
    0.0
    """
    return max(_bound_candidates(t, values), key=sort_key(t), default=None)
