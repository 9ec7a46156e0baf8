"""The compression codecs of Puffin blobs and footers.

Spec, *Compression codecs*: "The data can also be uncompressed. If it is compressed the codec
should be one of codecs listed below. For maximal interoperability, other codecs are not
supported." They are ``lz4``, a "Single LZ4 compression frame, with content size present",
and ``zstd``, a "Single Zstandard compression frame, with content size present".

Zstandard goes through pyarrow, whose frames carry their content size; LZ4 through the ``lz4``
package, because pyarrow's ``lz4`` codec writes frames without it. Reading is strict where
it must be and lenient where it can: a Zstandard frame needs its content size (pyarrow
decompresses into a buffer of that size), while an LZ4 frame without one still decodes (other
writers, such as iceberg-rust, omit it; so does liblz4 for empty input, where a content size
of 0 means "unknown").

>>> data = b"puffin " * 100
>>> [len(compress(codec, data)) < len(data) for codec in Codec]
[True, True]
>>> decompress(Codec.ZSTD, compress(Codec.ZSTD, data), "blob") == data
True
>>> decompress(Codec.LZ4, b"not a frame", "blob at offset 4 of f.puffin")
Traceback (most recent call last):
...
icepark.errors.CorruptFile: blob at offset 4 of f.puffin: bad lz4 frame: bad magic ...
"""

from __future__ import annotations

from enum import StrEnum

import lz4.frame  # type: ignore[import-untyped]  # lz4 ships no type hints
import pyarrow as pa

from icepark.errors import CorruptFile, UnsupportedFeature

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
# Errors the codec libraries raise for bad input: pyarrow's ArrowInvalid is a ValueError and
# ArrowIOError an OSError; the lz4 package raises RuntimeError; a huge declared content size
# ends in MemoryError.
_DECODE_ERRORS = (ValueError, OSError, RuntimeError, MemoryError)


class Codec(StrEnum):
    """The value of a blob's ``compression-codec``: "If omitted, the data is assumed to be
    uncompressed."

    >>> Codec.parse("zstd", "blob")
    <Codec.ZSTD: 'zstd'>
    >>> Codec.parse("snappy", "blob at offset 4 of f.puffin")
    Traceback (most recent call last):
    ...
    icepark.errors.UnsupportedFeature: blob at offset 4 of f.puffin: compression codec \
'snappy' is not a Puffin codec (lz4, zstd): "For maximal interoperability, other codecs are \
not supported"
    """

    LZ4 = "lz4"
    ZSTD = "zstd"

    @staticmethod
    def parse(name: str, where: str) -> Codec:
        """The codec called ``name``; :class:`UnsupportedFeature` naming ``where`` else."""
        try:
            return Codec(name)
        except ValueError:
            known = ", ".join(Codec)
            raise UnsupportedFeature(
                f"{where}: compression codec {name!r} is not a Puffin codec ({known}): \"For "
                "maximal interoperability, other codecs are not supported\"") from None


def compress(codec: Codec, data: bytes) -> bytes:
    """``data`` as one frame of ``codec``, with its content size (except an empty LZ4 frame,
    see the module docstring)."""
    match codec:
        case Codec.LZ4:
            return bytes(lz4.frame.compress(data, store_size=True, content_checksum=True))
        case Codec.ZSTD:
            return bytes(pa.compress(data, codec="zstd", asbytes=True))


def decompress(codec: Codec, data: bytes, where: str) -> bytes:
    """The content of the single ``codec`` frame ``data``; :class:`CorruptFile` naming
    ``where`` (the blob or footer and its file) if ``data`` is not one such frame."""
    try:
        match codec:
            case Codec.LZ4:
                return _lz4_decompress(data)
            case Codec.ZSTD:
                return _zstd_decompress(data)
    except _DECODE_ERRORS as e:
        raise CorruptFile(f"{where}: bad {codec} frame: {e}") from e


def _lz4_decompress(data: bytes) -> bytes:
    if data[:4] != _LZ4_MAGIC:
        raise ValueError(f"bad magic {data[:4].hex()}, expected {_LZ4_MAGIC.hex()}")
    content, used = lz4.frame.decompress(data, return_bytes_read=True)
    if used != len(data):
        raise ValueError(f"{len(data) - used} bytes follow it (one frame only)")
    return bytes(content)


def _zstd_decompress(data: bytes) -> bytes:
    size = zstd_content_size(data)
    if size is None:
        raise ValueError("it has no content size (the Puffin spec requires it: \"with content "
                         "size present\")")
    return bytes(pa.decompress(data, decompressed_size=size, codec="zstd", asbytes=True))


def zstd_content_size(frame: bytes) -> int | None:
    """The ``Frame_Content_Size`` of a Zstandard frame header, None if the header has none.

    Zstandard format, *Frame_Header*: a 4-byte magic ``0xFD2FB528`` (little-endian), then the
    ``Frame_Header_Descriptor`` byte (bits 7-6 ``Frame_Content_Size_flag``, bit 5
    ``Single_Segment_flag``, bit 3 reserved, bits 1-0 ``Dictionary_ID_flag``), the
    ``Window_Descriptor`` byte unless single-segment, the ``Dictionary_ID`` (0, 1, 2 or 4
    bytes), then the content size in 0 (1 if single-segment), 2 (plus 256), 4 or 8 bytes.

    >>> zstd_content_size(bytes.fromhex("28b52ffd2000010000"))  # zstd's frame of b""
    0
    """
    if len(frame) < 5 or frame[:4] != _ZSTD_MAGIC:
        raise ValueError(f"bad magic {frame[:4].hex()}, expected {_ZSTD_MAGIC.hex()}")
    descriptor = frame[4]
    if descriptor & 0x08:
        raise ValueError("the reserved bit of the frame header descriptor is set")
    single_segment = bool(descriptor & 0x20)
    size_bytes = ((1 if single_segment else 0), 2, 4, 8)[descriptor >> 6]
    if not size_bytes:
        return None
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    if len(frame) < start + size_bytes:
        raise ValueError("the frame header is truncated")
    size = int.from_bytes(frame[start:start + size_bytes], "little")
    return size + 256 if size_bytes == 2 else size
