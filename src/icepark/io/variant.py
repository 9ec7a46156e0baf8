r"""Parquet's Variant binary encoding, version 1: metadata dictionaries and values.

Spec, *Semi-structured Types*: "The variant type and binary encoding are defined in the Parquet
project (VariantEncoding.md), with support currently available for V1." A variant is two byte
strings: the *metadata*, a dictionary of the object keys ("The encoded metadata always starts
with a header byte" holding the version, ``sorted_strings`` and ``offset_size_minus_one``),
and the *value*, whose first byte holds a ``basic_type`` (primitive, short string, object,
array) and a 6-bit ``value_header``. Objects name their fields by index into the metadata
dictionary, and "The field ids and field offsets must be in lexicographical order of the
corresponding field names".

This module is the encoding alone: :func:`encode` turns a Python value into its
``(metadata, value)``, :func:`decode` turns them back, and the building blocks
(:func:`encode_object`, :func:`encode_array`, :func:`object_fields`, :func:`value_size`, the
primitive encoders) serve the Arrow reader, which rebuilds shredded variants
(:mod:`icepark.io.arrow.variant`). Malformed input raises
:class:`~icepark.errors.ValidationError` saying what is wrong.

Python values: ``None`` (variant null), ``bool``, ``int`` (the smallest of int8/16/32/64),
``float`` (double), ``decimal.Decimal`` (decimal4/8/16 by precision), ``str``, ``bytes``
(binary), ``datetime.date``, ``datetime.time`` (microseconds), naive ``datetime``
(timestamp_ntz) and aware ``datetime`` (timestamp, in UTC), :class:`Nanos` (the nanosecond
timestamps), ``uuid.UUID``, ``list`` and ``dict`` with ``str`` keys.

>>> metadata, value = encode({"b": 1, "a": [True, None, "x"]})
>>> metadata.hex(" "), value.hex(" ")
('11 02 00 01 02 61 62', '02 02 00 01 00 0a 0c 03 03 00 01 02 04 04 00 05 78 0c 01')
>>> decode(metadata, value)
{'a': [True, None, 'x'], 'b': 1}
"""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from enum import IntEnum
from itertools import pairwise
from typing import Any

from icepark.errors import ValidationError
from icepark.spec import datetimes as dt

VERSION = 1
NULL = b"\x00"
"""The variant null value: "basic type 0 (primitive) and physical type 0 (null)"."""
EMPTY_METADATA = b"\x01\x00\x00"
"""Metadata with an empty dictionary (version 1, one-byte offsets, no strings)."""
MAX_SHORT_STRING = 63


class BasicType(IntEnum):
    """The two low bits of a value's first byte."""

    PRIMITIVE = 0
    SHORT_STRING = 1
    OBJECT = 2
    ARRAY = 3


class Primitive(IntEnum):
    """The ``primitive_header`` of a primitive value (the *Encoding types* table)."""

    NULL = 0
    TRUE = 1
    FALSE = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    INT64 = 6
    DOUBLE = 7
    DECIMAL4 = 8
    DECIMAL8 = 9
    DECIMAL16 = 10
    DATE = 11
    TIMESTAMP = 12
    TIMESTAMP_NTZ = 13
    FLOAT = 14
    BINARY = 15
    STRING = 16
    TIME = 17
    TIMESTAMP_NANOS = 18
    TIMESTAMP_NTZ_NANOS = 19
    UUID = 20


# Fixed-size payloads: struct format of the value after the header byte.
FIXED_FORMATS = {
    Primitive.INT8: "<b", Primitive.INT16: "<h", Primitive.INT32: "<i", Primitive.INT64: "<q",
    Primitive.DOUBLE: "<d", Primitive.FLOAT: "<f", Primitive.DATE: "<i",
    Primitive.TIMESTAMP: "<q", Primitive.TIMESTAMP_NTZ: "<q", Primitive.TIME: "<q",
    Primitive.TIMESTAMP_NANOS: "<q", Primitive.TIMESTAMP_NTZ_NANOS: "<q",
}
_SIZES = {kind: struct.calcsize(fmt) for kind, fmt in FIXED_FORMATS.items()}
_SIZES.update({Primitive.NULL: 0, Primitive.TRUE: 0, Primitive.FALSE: 0, Primitive.UUID: 16,
               Primitive.DECIMAL4: 5, Primitive.DECIMAL8: 9, Primitive.DECIMAL16: 17})
_DECIMAL_WIDTHS = ((9, Primitive.DECIMAL4, 4), (18, Primitive.DECIMAL8, 8),
                   (38, Primitive.DECIMAL16, 16))
_INT_KINDS = ((8, Primitive.INT8), (16, Primitive.INT16), (32, Primitive.INT32),
              (64, Primitive.INT64))


@dataclass(frozen=True, slots=True)
class Nanos:
    """A nanosecond timestamp of a variant (``timestamp_nanos`` if ``utc``, else
    ``timestamp_ntz_nanos``): nanoseconds from the epoch, which ``datetime`` cannot hold."""

    nanos: int
    utc: bool


def header(basic: BasicType, value_header: int) -> int:
    """A value's first byte: "value_header | basic_type"."""
    return (value_header << 2) | basic


def primitive_header(kind: Primitive) -> bytes:
    return bytes((header(BasicType.PRIMITIVE, kind),))


def _fail(reason: str) -> ValidationError:
    return ValidationError(f"Invalid variant: {reason}")


def _width(largest: int) -> int:
    """The fewest bytes (1-4) of an unsigned little-endian integer up to ``largest``."""
    for size in (1, 2, 3, 4):
        if largest < 1 << (8 * size):
            return size
    raise _fail(f"offset {largest} does not fit 4 bytes")


def _uint(data: bytes, offset: int, size: int) -> int:
    if offset + size > len(data):
        raise _fail(f"truncated at byte {offset} of {len(data)}")
    return int.from_bytes(data[offset:offset + size], "little")


def _uints(values: Sequence[int], size: int) -> bytes:
    return b"".join(v.to_bytes(size, "little") for v in values)


# --- metadata --------------------------------------------------------------------------------


def encode_metadata(keys: Sequence[str]) -> bytes:
    """The metadata of a dictionary of ``keys``; ``sorted_strings`` is set when they are sorted
    and unique, as "strings in the dictionary must be unique and sorted in lexicographic
    order" then.

    >>> encode_metadata(["a", "b"]).hex(" ")
    '11 02 00 01 02 61 62'
    """
    encoded = [k.encode() for k in keys]
    offsets = [0]
    for k in encoded:
        offsets.append(offsets[-1] + len(k))
    size = _width(max(offsets[-1], len(encoded)))
    is_sorted = bool(encoded) and all(a < b for a, b in pairwise(encoded))
    first = VERSION | (int(is_sorted) << 4) | ((size - 1) << 6)
    return bytes((first,)) + _uints([len(encoded), *offsets], size) + b"".join(encoded)


def decode_metadata(data: bytes) -> tuple[str, ...]:
    """The dictionary of a metadata; "The ``version`` ... must always contain the value 1".

    >>> decode_metadata(bytes.fromhex("11 02 00 01 02 61 62"))
    ('a', 'b')
    >>> decode_metadata(bytes([2, 0]))
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid variant: metadata version 2, expected 1
    """
    if not data:
        raise _fail("empty metadata")
    if data[0] & 0x0F != VERSION:
        raise _fail(f"metadata version {data[0] & 0x0F}, expected {VERSION}")
    size = (data[0] >> 6) + 1
    count = _uint(data, 1, size)
    start = 1 + size * (count + 2)
    offsets = [_uint(data, 1 + size * (i + 1), size) for i in range(count + 1)]
    if start + offsets[-1] > len(data) or any(a > b for a, b in pairwise(offsets)):
        raise _fail("metadata offsets out of range")
    try:
        return tuple(data[start + a:start + b].decode() for a, b in pairwise(offsets))
    except UnicodeDecodeError as e:
        raise _fail(f"metadata string is not UTF-8 ({e.reason})") from None


# --- primitives ------------------------------------------------------------------------------


def encode_int(value: int) -> bytes:
    """The smallest exact integer type holding ``value``."""
    for bits, kind in _INT_KINDS:
        if -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            return primitive_header(kind) + struct.pack(FIXED_FORMATS[kind], value)
    raise _fail(f"integer {value} does not fit int64")


def encode_decimal(value: Decimal, precision: int | None = None) -> bytes:
    """decimal4/8/16: "1-byte scale in range [0, 38], followed by little-endian unscaled
    value", the width chosen by ``precision`` (default: the value's digits)."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int):
        raise _fail(f"decimal {value} is not finite")
    scale = max(-exponent, 0)
    unscaled = int(value.scaleb(scale))
    needed = max(precision or 0, len(str(abs(unscaled))), 1)
    for most, kind, width in _DECIMAL_WIDTHS:
        if needed <= most and scale <= 38:
            return (primitive_header(kind) + bytes((scale,))
                    + unscaled.to_bytes(width, "little", signed=True))
    raise _fail(f"decimal {value} has more than 38 digits")


def encode_string(value: str | bytes) -> bytes:
    """A short string (under 64 bytes) or a long one: "4-byte little-endian size, followed
    by UTF-8 encoded bytes"."""
    data = value.encode() if isinstance(value, str) else value
    if len(data) <= MAX_SHORT_STRING:
        return bytes((header(BasicType.SHORT_STRING, len(data)),)) + data
    return primitive_header(Primitive.STRING) + struct.pack("<I", len(data)) + data


def encode_binary(value: bytes) -> bytes:
    return primitive_header(Primitive.BINARY) + struct.pack("<I", len(value)) + value


def encode_fixed(kind: Primitive, value: Any) -> bytes:
    """A primitive of fixed size (integers, floats, date, time, timestamps) as its ``kind``."""
    return primitive_header(kind) + struct.pack(FIXED_FORMATS[kind], value)


def encode_uuid(value: uuid.UUID | bytes) -> bytes:
    """uuid: "16-byte big-endian"."""
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    return primitive_header(Primitive.UUID) + raw


# --- objects and arrays ----------------------------------------------------------------------


def encode_object(fields: Sequence[tuple[int, bytes]]) -> bytes:
    """An object of ``(field id, encoded value)`` pairs, given in the lexicographic order of
    their names (the caller sorts them: the ids index its metadata)."""
    offsets = [0]
    for _, value in fields:
        offsets.append(offsets[-1] + len(value))
    id_size = _width(max((fid for fid, _ in fields), default=0))
    offset_size = _width(offsets[-1])
    large = len(fields) > 0xFF
    first = header(BasicType.OBJECT,
                   (offset_size - 1) | ((id_size - 1) << 2) | (int(large) << 4))
    count = len(fields).to_bytes(4 if large else 1, "little")
    return (bytes((first,)) + count + _uints([fid for fid, _ in fields], id_size)
            + _uints(offsets, offset_size) + b"".join(v for _, v in fields))


def encode_array(elements: Sequence[bytes]) -> bytes:
    """An array of encoded values."""
    offsets = [0]
    for value in elements:
        offsets.append(offsets[-1] + len(value))
    offset_size = _width(offsets[-1])
    large = len(elements) > 0xFF
    first = header(BasicType.ARRAY, (offset_size - 1) | (int(large) << 2))
    count = len(elements).to_bytes(4 if large else 1, "little")
    return bytes((first,)) + count + _uints(offsets, offset_size) + b"".join(elements)


def _container(data: bytes, offset: int) -> tuple[int, int, int, int, int]:
    """An object's or array's (count, id size, offset size, start of the ids, start of the
    offsets); arrays have id size 0."""
    first = data[offset]
    basic, value_header = first & 0x03, first >> 2
    offset_size = (value_header & 0x03) + 1
    if basic == BasicType.OBJECT:
        id_size, large = ((value_header >> 2) & 0x03) + 1, (value_header >> 4) & 1
    else:
        id_size, large = 0, (value_header >> 2) & 1
    count_size = 4 if large else 1
    count = _uint(data, offset + 1, count_size)
    ids = offset + 1 + count_size
    return count, id_size, offset_size, ids, ids + count * id_size


def object_fields(data: bytes, offset: int = 0) -> list[tuple[int, bytes]]:
    """The ``(field id, encoded value)`` pairs of the object at ``offset``, in its order."""
    if not data or data[offset] & 0x03 != BasicType.OBJECT:
        raise _fail("expected an object")
    count, id_size, offset_size, ids, offsets = _container(data, offset)
    values = offsets + (count + 1) * offset_size
    out = []
    for i in range(count):
        fid = _uint(data, ids + i * id_size, id_size)
        start = values + _uint(data, offsets + i * offset_size, offset_size)
        out.append((fid, data[start:start + value_size(data, start)]))
    return out


def array_elements(data: bytes, offset: int = 0) -> list[bytes]:
    """The encoded elements of the array at ``offset``."""
    if not data or data[offset] & 0x03 != BasicType.ARRAY:
        raise _fail("expected an array")
    count, _, offset_size, _, offsets = _container(data, offset)
    values = offsets + (count + 1) * offset_size
    bounds = [_uint(data, offsets + i * offset_size, offset_size) for i in range(count + 1)]
    return [data[values + a:values + b] for a, b in pairwise(bounds)]


def value_size(data: bytes, offset: int = 0) -> int:
    """The number of bytes of the encoded value starting at ``offset``."""
    if offset >= len(data):
        raise _fail(f"truncated at byte {offset} of {len(data)}")
    first = data[offset]
    basic, value_header = first & 0x03, first >> 2
    match basic:
        case BasicType.SHORT_STRING:
            size = 1 + value_header
        case BasicType.PRIMITIVE if value_header in (Primitive.BINARY, Primitive.STRING):
            size = 5 + _uint(data, offset + 1, 4)
        case BasicType.PRIMITIVE:
            try:
                size = 1 + _SIZES[Primitive(value_header)]
            except ValueError:
                raise _fail(f"unknown primitive type {value_header}") from None
        case _:  # "The last field_offset points to the byte after the end of the last value"
            count, _, offset_size, _, offsets = _container(data, offset)
            values = offsets + (count + 1) * offset_size
            size = values + _uint(data, offsets + count * offset_size, offset_size) - offset
    if offset + size > len(data):
        raise _fail(f"truncated value at byte {offset} of {len(data)}")
    return size


# --- Python values ---------------------------------------------------------------------------


def encode(value: Any) -> tuple[bytes, bytes]:
    """The ``(metadata, value)`` of a Python value (see the module docstring); object keys
    go into one sorted dictionary.

    >>> [part.hex(" ") for part in encode(34)]
    ['01 00 00', '0c 22']
    """
    keys: set[str] = set()
    _collect_keys(value, keys)
    ordered = sorted(keys)
    ids = {k: i for i, k in enumerate(ordered)}
    return encode_metadata(ordered), _encode_value(value, ids)


def _collect_keys(value: Any, keys: set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise _fail(f"object keys must be strings, not {type(k).__name__}")
            keys.add(k)
            _collect_keys(v, keys)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_keys(v, keys)


def _encode_value(value: Any, ids: dict[str, int]) -> bytes:
    match value:
        case None:
            return NULL
        case bool():
            return primitive_header(Primitive.TRUE if value else Primitive.FALSE)
        case int():
            return encode_int(value)
        case float():
            return encode_fixed(Primitive.DOUBLE, value)
        case Decimal():
            return encode_decimal(value)
        case str():
            return encode_string(value)
        case bytes() | bytearray() | memoryview():
            return encode_binary(bytes(value))
        case datetime() if value.tzinfo is None:
            return encode_fixed(Primitive.TIMESTAMP_NTZ, dt.timestamp_to_micros(value))
        case datetime():
            return encode_fixed(Primitive.TIMESTAMP, dt.timestamp_to_micros(value))
        case date():
            return encode_fixed(Primitive.DATE, dt.date_to_days(value))
        case time() if value.tzinfo is None:
            return encode_fixed(Primitive.TIME, dt.time_to_micros(value))
        case Nanos():
            kind = Primitive.TIMESTAMP_NANOS if value.utc else Primitive.TIMESTAMP_NTZ_NANOS
            return encode_fixed(kind, value.nanos)
        case uuid.UUID():
            return encode_uuid(value)
        case list() | tuple():
            return encode_array([_encode_value(v, ids) for v in value])
        case dict():
            return encode_object([(ids[k], _encode_value(value[k], ids)) for k in sorted(value)])
    raise _fail(f"cannot encode a {type(value).__name__} as a variant")


def decode(metadata: bytes, value: bytes) -> Any:
    """The Python value of an encoded variant (see the module docstring).

    >>> decode(EMPTY_METADATA, bytes.fromhex("20 02 39 30 00 00"))  # decimal4 123.45
    Decimal('123.45')
    """
    return _decode(decode_metadata(metadata), value, 0)


def _decode(keys: tuple[str, ...], data: bytes, offset: int) -> Any:
    value_size(data, offset)  # checks the whole value is there
    first = data[offset]
    basic, value_header = first & 0x03, first >> 2
    body = offset + 1
    match basic:
        case BasicType.SHORT_STRING:
            return _text(data[body:body + value_header])
        case BasicType.OBJECT:
            out = {}
            for fid, field_value in object_fields(data, offset):
                if fid >= len(keys):
                    raise _fail(f"field id {fid} is not in the metadata of {len(keys)} keys")
                out[keys[fid]] = _decode(keys, field_value, 0)
            return out
        case BasicType.ARRAY:
            return [_decode(keys, e, 0) for e in array_elements(data, offset)]
    kind = Primitive(value_header)  # value_size checked it is one
    match kind:
        case Primitive.NULL:
            return None
        case Primitive.TRUE | Primitive.FALSE:
            return kind is Primitive.TRUE
        case Primitive.STRING:
            return _text(data[body + 4:body + 4 + _uint(data, body, 4)])
        case Primitive.BINARY:
            return data[body + 4:body + 4 + _uint(data, body, 4)]
        case Primitive.DECIMAL4 | Primitive.DECIMAL8 | Primitive.DECIMAL16:
            width = _SIZES[kind] - 1
            unscaled = int.from_bytes(data[body + 1:body + 1 + width], "little", signed=True)
            return Decimal(unscaled).scaleb(-data[body])
        case Primitive.UUID:
            return uuid.UUID(bytes=data[body:body + 16])
    raw = struct.unpack_from(FIXED_FORMATS[kind], data, body)[0]
    match kind:
        case Primitive.DATE:
            return dt.days_to_date(raw)
        case Primitive.TIME:
            return dt.micros_to_time(raw)
        case Primitive.TIMESTAMP:
            return dt.micros_to_timestamptz(raw).astimezone(UTC)
        case Primitive.TIMESTAMP_NTZ:
            return dt.micros_to_timestamp(raw)
        case Primitive.TIMESTAMP_NANOS | Primitive.TIMESTAMP_NTZ_NANOS:
            return Nanos(raw, kind is Primitive.TIMESTAMP_NANOS)
        case Primitive.FLOAT | Primitive.DOUBLE:
            return float(raw) if not math.isnan(raw) else math.nan
    return raw  # integers


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise _fail(f"string is not UTF-8 ({e.reason})") from None
