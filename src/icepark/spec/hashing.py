"""Appendix B, *32-bit Hash Requirements*: the hash behind ``bucket[N]``.

"The 32-bit hash implementation is 32-bit Murmur3 hash, x86 variant, seeded with 0", of a
value's bytes as the table in Appendix B gives them per type. "Nanosecond timestamps must be
converted to microsecond precision before hashing to ensure timestamps have the same hash
value": :func:`nanos_to_micros` rounds down, as the reference implementation's ``floorDiv``.

>>> from icepark.spec.types import LONG, TIMESTAMP_NS
>>> hash_value(LONG, 34), hash_value(TIMESTAMP_NS, 1_510_871_468_000_001_001)
(2017239379, -1207196810)
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

import mmh3

from icepark.spec.types import PrimitiveType, TypeId

NANOS_PER_MICRO = 1_000
NANO_TIMESTAMPS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})
"""The nanosecond timestamp types (v3): Python values are int nanoseconds from the epoch."""
INT_LIKE = frozenset({TypeId.INT, TypeId.LONG, TypeId.DATE, TypeId.TIME, TypeId.TIMESTAMP,
                      TypeId.TIMESTAMPTZ})
"""Types whose values are stored integers, hashed as longs."""


def nanos_to_micros(nanos: int) -> int:
    """Microseconds of a nanosecond timestamp, rounded down, so ``-1`` ns is ``-1`` µs.

    >>> nanos_to_micros(1_510_871_468_000_001_001), nanos_to_micros(-1)
    (1510871468000001, -1)
    """
    return nanos // NANOS_PER_MICRO


def _hash_bytes(data: bytes) -> int:
    return int(mmh3.hash(data, 0, signed=True))


def _hash_long(value: int) -> int:
    return _hash_bytes(struct.pack("<q", value))


def _min_big_endian(number: int) -> bytes:
    """Two's complement big-endian in the fewest bytes (Appendix B note 2)."""
    length = max(1, (number + (number < 0)).bit_length() // 8 + 1)
    return number.to_bytes(length, "big", signed=True)


def unscaled(value: Decimal) -> int:
    """The unscaled integer of a decimal at its own scale (``max(-exponent, 0)``)."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    result = int("".join(map(str, digits)) or "0")
    result = -result if sign else result
    return result * 10**exponent if exponent > 0 else result


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
        case tid if tid in INT_LIKE:
            return _hash_long(value)
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:  # Appendix B note 3
            return _hash_long(nanos_to_micros(value))
        case TypeId.BOOLEAN:
            return _hash_long(1 if value else 0)
        case TypeId.FLOAT | TypeId.DOUBLE:
            if math.isnan(value):  # canonical NaN bits 0x7ff8000000000000
                return _hash_bytes(struct.pack("<Q", 0x7FF8000000000000))
            return _hash_bytes(struct.pack("<d", 0.0 if value == 0 else value))
        case TypeId.DECIMAL:
            return _hash_bytes(_min_big_endian(unscaled(value)))
        case TypeId.STRING:
            return _hash_bytes(value.encode("utf-8"))
        case TypeId.UUID:
            return _hash_bytes(value.bytes)
        case _:
            return _hash_bytes(bytes(value))
