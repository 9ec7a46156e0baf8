"""Row positions as 64-bit Roaring bitmaps, and their "portable" serialization.

Spec, *deletion-vector-v1*: "The vector supports positive 64-bit positions (the most
significant bit must be 0), but is optimized for cases where most positions fit in 32 bits by
using a collection of 32-bit Roaring bitmaps. 64-bit positions are divided into a 32-bit "key"
using the most significant 4 bytes and a 32-bit sub-position using the least significant 4
bytes." The portable format is: "The number of 32-bit Roaring bitmaps, serialized as 8 bytes,
little-endian; For each 32-bit Roaring bitmap, ordered by unsigned comparison of the 32-bit
keys: The key stored as 4 bytes, little-endian; A 32-bit Roaring bitmap".

``pyroaring``'s ``BitMap64`` (CRoaring's ``roaring64``) reads and writes exactly that format;
conversions to and from numpy go through ``array('Q')`` buffers, with no loop in Python.

>>> bitmap = to_bitmap(np.array([7, 2**32 + 1, 3]))
>>> to_positions(bitmap)
array([         3,          7, 4294967297])
>>> data = serialize_portable(bitmap)
>>> data[:8], data[8:12]  # two 32-bit bitmaps, the first with key 0
(b'\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00', b'\\x00\\x00\\x00\\x00')
>>> deserialize_portable(data, "dv") == bitmap
True
>>> deserialize_portable(data + b"\\x00", "dv")
Traceback (most recent call last):
...
icepark.errors.CorruptFile: dv: 1 bytes follow the last Roaring bitmap
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap64

from icepark.errors import CorruptFile, ValidationError

MAX_POSITION = 2**63 - 1
"""The most significant bit of a position "must be 0". (The reference reader accepts keys up
to ``2**31 - 2`` only, so positions of ``2**63 - 2**32`` and more are readable here alone; no
data file has that many rows.)"""
_SERIAL_COOKIE_NO_RUNCONTAINER = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX_CARDINALITY = 4096
_BITSET_BYTES = 8192
_MAX_CONTAINERS = 1 << 16

Positions: TypeAlias = np.ndarray[Any, Any] | BitMap64 | Iterable[int]
"""Row positions: a numpy integer array, a ``BitMap64`` or any iterable of ints."""
PositionArray: TypeAlias = npt.NDArray[np.int64]
"""Row positions as read: ascending, unique, int64."""


def to_bitmap(positions: Positions) -> BitMap64:
    """``positions`` as a ``BitMap64`` (a ``BitMap64`` is returned as it is), checked to be
    non-negative 64-bit positions: else :class:`ValidationError`.

    >>> to_bitmap([-1])
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Row positions must be between 0 and 9223372036854775807 \
(the most significant bit must be 0): got -1
    """
    if isinstance(positions, BitMap64):
        if positions and positions.max() > MAX_POSITION:
            _out_of_range(positions.max())
        return positions
    values = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
    if values.size == 0:
        return BitMap64()
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValidationError(f"Row positions must be a 1-D array of integers, not "
                              f"{values.ndim}-D {values.dtype}")
    low, high = values.min(), values.max()
    if low < 0 or high > MAX_POSITION:
        _out_of_range(int(low if low < 0 else high))
    if values.size > 1 and np.any(values[1:] < values[:-1]):
        values = np.sort(values)  # CRoaring inserts sorted values many times faster
    words = array("Q")
    words.frombytes(np.ascontiguousarray(values, dtype=np.uint64).data.cast("B"))
    return BitMap64(words, optimize=False)


def _out_of_range(position: int) -> None:
    raise ValidationError(f"Row positions must be between 0 and {MAX_POSITION} (the most "
                          f"significant bit must be 0): got {position}")


def to_positions(bitmap: BitMap64) -> PositionArray:
    """The positions of ``bitmap``, ascending, as an int64 array (no copy after CRoaring's).
    Its positions must be at most :data:`MAX_POSITION`."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64).view(np.int64)


def serialize_portable(bitmap: BitMap64) -> bytes:
    """The portable serialization of ``bitmap``, run-length encoded first, as the reference
    writer does (run containers where they are smaller). Changes only how ``bitmap`` stores
    its positions, not which."""
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def deserialize_portable(data: bytes, where: str) -> BitMap64:
    """The bitmap of exactly ``data``; :class:`CorruptFile` naming ``where`` and the fault
    when ``data`` is not one portable 64-bit Roaring bitmap of non-negative positions."""
    end = _portable_length(memoryview(data), where)
    if end != len(data):
        raise CorruptFile(f"{where}: {len(data) - end} bytes follow the last Roaring bitmap")
    try:
        return BitMap64.deserialize(data)
    except ValueError as e:  # CRoaring's own validation of the containers
        raise CorruptFile(f"{where}: not a valid Roaring bitmap: {e}") from None


def _portable_length(data: memoryview, where: str) -> int:
    """How many bytes the portable bitmap at the start of ``data`` takes, from its headers;
    checks keys ascend and stay below 2**31 (positions' most significant bit is 0)."""
    count = _unpack("<Q", data, 0, where, "the bitmap count")
    pos, last_key = 8, -1
    for i in range(count):
        key = _unpack("<I", data, pos, where, f"the key of bitmap {i}")
        if key <= last_key:
            raise CorruptFile(f"{where}: bitmap keys must ascend: key {key} follows "
                              f"{last_key}")
        if key >= 2**31:
            raise CorruptFile(f"{where}: bitmap key {key:#x} sets the most significant bit of "
                              "its positions, which must be 0")
        pos = _bitmap32_end(data, pos + 4, where, f"bitmap {i} (key {key})")
        last_key = key
    return pos


def _bitmap32_end(data: memoryview, pos: int, where: str, which: str) -> int:
    """The end of the 32-bit Roaring bitmap at ``pos`` (RoaringFormatSpec, *General layout*:
    a cookie, then per container a 16-bit key and cardinality minus one, offsets, and the
    containers: arrays of 16-bit values up to 4096 values, else 8 KiB bitsets, or runs)."""
    cookie = _unpack("<I", data, pos, where, f"the cookie of {which}")
    pos += 4
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        containers = (cookie >> 16) + 1
        run_flags = bytes(data[pos:pos + (containers + 7) // 8])
        pos += (containers + 7) // 8
        has_offsets = containers >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUNCONTAINER:
        containers = _unpack("<I", data, pos, where, f"the container count of {which}")
        pos += 4
        run_flags, has_offsets = b"", True
        if containers > _MAX_CONTAINERS:
            raise CorruptFile(f"{where}: {which} claims {containers} containers, more than "
                              f"{_MAX_CONTAINERS}")
    else:
        raise CorruptFile(f"{where}: {which} has a bad cookie {cookie:#010x}")
    header = bytes(data[pos:pos + 4 * containers])
    if len(header) < 4 * containers:
        raise CorruptFile(f"{where}: {which} is truncated in its container headers")
    pos += 4 * containers * (2 if has_offsets else 1)
    keys_and_sizes = np.frombuffer(header, dtype="<u2")
    if np.any(np.diff(keys_and_sizes[0::2].astype(np.int32)) <= 0):
        raise CorruptFile(f"{where}: the container keys of {which} do not ascend")
    for i, size in enumerate(keys_and_sizes[1::2].tolist()):
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            runs = _unpack("<H", data, pos, where, f"the run count of {which}")
            pos += 2 + 4 * runs
        elif size < _ARRAY_MAX_CARDINALITY:  # cardinality - 1 < 4096: an array container
            pos += 2 * (size + 1)
        else:
            pos += _BITSET_BYTES
    if pos > len(data):
        raise CorruptFile(f"{where}: {which} is truncated: its containers end at byte {pos} "
                          f"of {len(data)}")
    return pos


def _unpack(fmt: str, data: memoryview, pos: int, where: str, what: str) -> int:
    size = struct.calcsize(fmt)
    if pos + size > len(data):
        raise CorruptFile(f"{where}: truncated at byte {pos}, reading {what}")
    value: int = struct.unpack_from(fmt, data, pos)[0]
    return value
