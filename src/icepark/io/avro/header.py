"""The header of an Avro object container file: encoding it, and reading it from a stream.

Avro spec, *Object Container Files*: the header is the magic ``Obj\\x01``, "file metadata,
including the schema" (a ``map<bytes>`` holding ``avro.schema`` and ``avro.codec`` next to user
keys) and "the 16-byte, randomly-generated sync marker for this file". The writer
(:mod:`icepark.io.avro.writer`) encodes one; the reader (:mod:`icepark.io.avro.reader`) reads
one, and encodes another for fastavro.

>>> import io
>>> data = encode_header({"avro.schema": b'"int"', "k": b"v"}, bytes(16))
>>> data[:4] == MAGIC, data[4:-16]
(True, b'\\x04\\x16avro.schema\\n"int"\\x02k\\x02v\\x00')
>>> header = read_header(io.BytesIO(data))
>>> header["avro.schema"], header["k"], header["avro.sync"] == bytes(16)
(b'"int"', b'v', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icepark.errors import ValidationError
from icepark.io.avro.encoder import zigzag_varint

MAGIC = b"Obj\x01"


def encode_header(metadata: Mapping[str, bytes], sync: bytes) -> bytes:
    """The header of a file with ``metadata`` (its map, written as one block) and the ``sync``
    marker."""
    out = [MAGIC, zigzag_varint(len(metadata))] if metadata else [MAGIC]
    for key, value in metadata.items():
        k = key.encode()
        out += [zigzag_varint(len(k)), k, zigzag_varint(len(value)), value]
    out += [b"\x00", sync]
    return b"".join(out)


def _read_exact(stream: Any, n: int) -> bytes:
    """``n`` bytes; a length that is negative or longer than the rest of the file is found
    before reading (never allocated)."""
    if n < 0:
        raise ValueError(f"negative length {n}")
    if n > 1 and hasattr(stream, "size") and n > stream.size() - stream.tell():
        raise EOFError(f"a length of {n} bytes runs past the end of the file")
    data = bytes(stream.read(n))
    if len(data) != n:
        raise EOFError(f"a length of {n} bytes runs past the end of the file")
    return data


def _read_long(stream: Any) -> int:
    """The zig-zag varint at the stream's position (as :func:`~icepark.io.avro.varint.read_long`
    reads one from bytes in memory)."""
    shift = result = 0
    while True:
        byte = _read_exact(stream, 1)[0]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def read_header(stream: Any) -> dict[str, bytes]:
    """The header's metadata map, plus the sync marker under ``avro.sync``, read from the
    start of ``stream`` (left at the first block); ``EOFError``, ``ValueError`` or
    ``ValidationError`` (no ``avro.schema``) if it holds none."""
    if _read_exact(stream, 4) != MAGIC:
        raise ValueError("bad magic bytes")
    entries: dict[str, bytes] = {}
    while (count := _read_long(stream)) != 0:
        if count < 0:  # a negative count is followed by the block's byte size
            count = -count
            _read_long(stream)
        for _ in range(count):
            key = _read_exact(stream, _read_long(stream)).decode()
            entries[key] = _read_exact(stream, _read_long(stream))
    if "avro.schema" not in entries:
        raise ValidationError("no avro.schema in the header")
    entries["avro.sync"] = _read_exact(stream, 16)
    return entries


__all__ = ["MAGIC", "encode_header", "read_header"]
