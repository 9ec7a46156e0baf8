"""Decoding Avro's zig-zag varints from bytes in memory.

Avro spec, *Binary Encoding*: "int and long values are written using variable-length zig-zag
coding". A long takes at most 10 bytes (64 bits, 7 to a byte); a longer varint is corrupt.
:func:`read_long` serves the container file reader's block framing and the generated decoders
of :mod:`icepark.io.avro.codegen` (which decode varints of up to three bytes inline and call it
for longer ones).

>>> read_long(b"\\x96\\x01\\x01", 0)
(75, 2)
>>> read_long(b"\\x96\\x01\\x01", 2)
(-1, 3)
"""

from __future__ import annotations


def read_long(data: bytes, p: int) -> tuple[int, int]:
    """The zig-zag varint at ``data[p]`` and the position after it; ``IndexError`` past the
    end of ``data`` (a truncated value), ``ValueError`` for a varint longer than 10 bytes."""
    shift = value = 0
    while True:
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), p
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at {p}")


__all__ = ["read_long"]
