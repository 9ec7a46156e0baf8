"""``uuid`` and ``fixed(L)`` values from the forms other engines hand them over in.

Spec, *Primitive Types*: ``uuid`` is a "Universally unique identifiers" type and ``fixed(L)``
a "Fixed-length byte array of length L"; Appendix A stores both as Parquet
``fixed_len_byte_array`` (``uuid`` with 16 bytes). Spark has neither type: icepark's Spark
schema shows a ``uuid`` as its canonical string (``f81d4fae-7dec-11d0-a765-00a0c91e6bf6``) and
a ``fixed(L)`` as binary, so a DataFrame read from a table, or a CSV column of UUIDs, arrives
as strings and variable-length binary. These kernels turn them into the spec's fixed-width
values, vectorized, and name the first row that does not fit.

>>> import pyarrow as pa
>>> uuids_from_strings(pa.array(["F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6", None]), "u")[0]
<pyarrow.FixedSizeBinaryScalar: b'\\xf8\\x1dO\\xae}\\xec\\x11\\xd0\\xa7e\\x00\\xa0\\xc9\\x1ek\\xf6'>
>>> fixed_from_binary(pa.array([b"ab", b"abc"]), 3, "f", "fixed[3]")
Traceback (most recent call last):
...
icepark.errors.ValidationError: Column 'f' is fixed[3], but row 0 holds 2 bytes
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import ValidationError

UUID_BYTES = 16
_CANONICAL_LENGTH = 36  # 32 hex digits and four hyphens: 8-4-4-4-12
_HYPHENS = (8, 13, 18, 23)
_NIBBLES = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLES[_c] = _i
for _i, _c in enumerate(b"ABCDEF", start=10):
    _NIBBLES[_c] = _i


def uuids_from_strings(arr: Any, path: str) -> Any:
    """UUID strings in the canonical 8-4-4-4-12 form (either case) as 16-byte values."""
    arr = arr.cast(pa.large_string()) if not pa.types.is_large_string(arr.type) else arr
    valid = arr.is_valid()
    filled = pc.if_else(valid, arr, "00000000-0000-0000-0000-000000000000")
    lengths = pc.utf8_length(filled).to_numpy(zero_copy_only=False)
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int64)[
        filled.offset:filled.offset + len(filled) + 1]
    data = np.frombuffer(filled.buffers()[2], dtype=np.uint8)
    bad = lengths != _CANONICAL_LENGTH
    if not bad.any():
        chars = data[offsets[0]:offsets[-1]].reshape(len(filled), _CANONICAL_LENGTH)
        bad = (chars[:, _HYPHENS] != ord("-")).any(axis=1)
        hex_digits = _NIBBLES[np.delete(chars, _HYPHENS, axis=1)]
        bad |= (hex_digits == 255).any(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"Column {path!r} is uuid, but row {row} holds "
                              f"{arr[row].as_py()!r}: write UUIDs as "
                              "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
    packed = (hex_digits[:, 0::2] << 4) | hex_digits[:, 1::2]
    result = pa.FixedSizeBinaryArray.from_buffers(pa.binary(UUID_BYTES), len(arr),
                                                  [None, pa.py_buffer(packed.tobytes())])
    return result if arr.null_count == 0 else pc.if_else(valid, result, None)


def fixed_from_binary(arr: Any, length: int, path: str, kind: str) -> Any:
    """Variable-length binary values of exactly ``length`` bytes as ``fixed(length)``; a
    value of another length is an error naming the column as ``kind``."""
    sizes = pc.binary_length(arr).to_numpy(zero_copy_only=False)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    bad = (sizes != length) & valid
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"Column {path!r} is {kind}, but row {row} holds "
                              f"{int(sizes[row])} bytes")
    return arr.cast(pa.binary(length))
