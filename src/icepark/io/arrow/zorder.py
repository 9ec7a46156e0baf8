"""Z-order values: several columns' values interleaved bit by bit into one sortable key.

Sorting rows by a Z-order (Morton) value clusters them by all its columns at once, so that a
filter on any of them skips files by their bounds. Each column's value is first mapped to 8
bytes whose unsigned big-endian order is the value's order (:func:`ordered_bytes`): integers,
dates, times and timestamps with their sign bit flipped; floating point numbers by the IEEE 754
order trick (negative numbers inverted, positive ones with the sign bit set); strings and binary
by their first 8 bytes; booleans as 0 or 1. Nulls map to all zero bytes (they sort first). The
key is then the first bit of every column, then the second bit of every column, and so on
(:func:`z_values`).

>>> import pyarrow as pa
>>> z = z_values([pa.array([0, 1, 2, 3]), pa.array([3, 2, 1, 0])])
>>> [v.hex()[-2:] for v in z.to_pylist()]
['05', '06', '09', '0a']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from icepark.errors import ValidationError

WIDTH = 8
"""Bytes of each column in a Z-order value."""
_SIGN = np.uint64(1 << 63)


def ordered_bytes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``values`` as an ``(n, 8)`` uint8 array whose rows, compared as unsigned big-endian
    bytes, are in the values' order (nulls: zeros, first)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    n = len(values)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _prefix_bytes(values.cast(pa.large_binary()))
    if pa.types.is_boolean(t):
        keys = values.cast(pa.uint8()).fill_null(0).to_numpy(zero_copy_only=False)
        key = keys.astype(np.uint64) << np.uint64(56)
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        floats = values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        bits = np.ascontiguousarray(floats, dtype=np.float64).view(np.uint64)
        key = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    elif (pa.types.is_integer(t) or pa.types.is_temporal(t)):
        longs = (values.cast(pa.int64()) if not pa.types.is_temporal(t)
                 else values.view(pa.int64()) if t.bit_width == 64
                 else values.view(pa.int32()).cast(pa.int64()))
        key = longs.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(
            np.uint64) ^ _SIGN
    else:
        raise ValidationError(f"Cannot Z-order a column of type {t}: Z-order takes numbers, "
                              "dates, times, timestamps, booleans, strings and binary")
    if values.null_count:
        key = np.where(values.is_valid().to_numpy(zero_copy_only=False), key, np.uint64(0))
    return np.ascontiguousarray(key.astype(">u8")).view(np.uint8).reshape(n, WIDTH)


def _prefix_bytes(values: pa.Array) -> np.ndarray:
    """The first 8 bytes of each value of a ``large_binary`` array, zero padded (nulls: zeros)."""
    n = len(values)
    _, offset_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int64)[values.offset:values.offset + n + 1]
    data = (np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None
            else np.zeros(0, dtype=np.uint8))
    starts, lengths = offsets[:-1], np.diff(offsets)
    if values.null_count:
        lengths = np.where(values.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    width = np.arange(WIDTH)
    present = width[None, :] < lengths[:, None]
    if not data.size:
        return np.zeros((n, WIDTH), dtype=np.uint8)
    index = np.minimum(starts[:, None] + width[None, :], data.size - 1)
    return np.where(present, data[index], 0).astype(np.uint8)


def z_values(columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """The Z-order value of each row of ``columns`` (equal lengths), as binary of
    ``8 * len(columns)`` bytes."""
    if not columns:
        raise ValidationError("Z-order needs at least one column")
    n = len(columns[0])
    bits = np.stack([np.unpackbits(ordered_bytes(c), axis=1) for c in columns], axis=2)
    packed = np.packbits(bits.reshape(n, WIDTH * 8 * len(columns)), axis=1)
    width = WIDTH * len(columns)
    fixed = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), n, [None, pa.py_buffer(np.ascontiguousarray(packed).tobytes())])
    return fixed.cast(pa.binary())


__all__ = ["WIDTH", "ordered_bytes", "z_values"]
