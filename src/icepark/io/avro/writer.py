"""Writing Avro object container files from columns.

Avro spec, *Object Container Files*: "A file consists of: A file header, followed by one or more
file data blocks." The header is written by :mod:`icepark.io.avro.header`; a block is "a long
indicating the count of objects in this block", "a long indicating the size in bytes of the
serialized objects in the current block, after any codec is applied", the serialized objects,
and the sync marker.

Rows are encoded with :mod:`icepark.io.avro.encoder` and the blocks compressed on helper threads
(numpy, zlib and zstd release the GIL) while the caller prepares the next rows; blocks are
written in order.

The example of :mod:`icepark.io.avro.reader` writes a file and reads it back.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from icepark.errors import UnsupportedFeature
from icepark.io.avro.encoder import RecordEncoder, StructColumn, zigzag_varint
from icepark.io.avro.header import encode_header

DEFAULT_BLOCK_BYTES = 1 << 20
DEFAULT_DEFLATE_LEVEL = 3
"""Used unless ``write.avro.compression-level`` is set. The spec leaves the level to writers
(Java Iceberg uses 9, zlib's default is 6): on manifests, zlib's levels above 3 switch to lazy
matching and cost about 3x the CPU for files about 3% smaller."""
CODEC_PROPERTY = "write.avro.compression-codec"
LEVEL_PROPERTY = "write.avro.compression-level"
_WORKERS = min(2, os.cpu_count() or 1)  # row batches encoded and compressed at once
# Iceberg's codec names (table property values) and Avro's own, to Avro's.
_CODECS = {"gzip": "deflate", "deflate": "deflate", "zstd": "zstandard",
           "zstandard": "zstandard", "uncompressed": "null", "null": "null"}


def avro_codec(name: str | None) -> str:
    """The Avro codec for a ``write.avro.compression-codec`` value (default ``gzip``).

    >>> avro_codec("gzip"), avro_codec("zstd"), avro_codec(None)
    ('deflate', 'zstandard', 'deflate')
    """
    codec = _CODECS.get((name or "gzip").lower())
    if codec is None:
        raise UnsupportedFeature(
            f"Unsupported Avro compression codec {name!r}: use one of {sorted(_CODECS)}")
    return codec


def _compressor(codec: str, level: int | None) -> Any:
    if codec == "null":
        return None
    if codec == "deflate":
        lvl = DEFAULT_DEFLATE_LEVEL if level is None else level

        def deflate(data: bytes) -> bytes:
            c = zlib.compressobj(lvl, zlib.DEFLATED, -15)  # raw deflate: RFC 1951
            return c.compress(data) + c.flush()

        return deflate
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, only for this codec
    except ImportError:
        raise UnsupportedFeature("The zstandard codec needs the 'zstandard' package") from None
    zstd_level = 3 if level is None else level
    local = threading.local()

    def zstd(data: bytes) -> bytes:
        # "ZstdCompressor instances are not thread safe": blocks are compressed on several
        # threads at once, so each thread keeps its own.
        compressor = getattr(local, "compressor", None)
        if compressor is None:
            compressor = local.compressor = zstandard.ZstdCompressor(level=zstd_level)
        return bytes(compressor.compress(data))

    return zstd


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _block_pool() -> ThreadPoolExecutor:
    """One pool of block encoders for every writer: starting threads per manifest cost more
    than encoding a small manifest."""
    global _POOL  # noqa: PLW0603 - a lazily created process-wide pool
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_WORKERS, thread_name_prefix="avro-block")
        return _POOL


class AvroWriter:
    """Writes an Avro container file of ``schema`` records to ``stream``, in blocks of about
    ``block_bytes`` uncompressed bytes. The caller closes ``stream`` after :meth:`close`."""

    def __init__(self, stream: Any, schema: Any, metadata: Mapping[str, str], *,
                 codec: str = "deflate", level: int | None = None,
                 block_bytes: int = DEFAULT_BLOCK_BYTES) -> None:
        self._stream = stream
        self._schema = schema
        self._encoder = RecordEncoder(schema)
        self._compress = _compressor(codec, level)
        self._block_bytes = block_bytes
        self._sync = os.urandom(16)
        self._pending: deque[Future[list[bytes]]] = deque()
        self.bytes_written = 0
        self.closed = False
        header = {"avro.schema": json.dumps(schema, separators=(",", ":")).encode(),
                  "avro.codec": codec.encode()}
        header.update((k, v.encode()) for k, v in metadata.items())
        self._write(encode_header(header, self._sync))

    def _write(self, data: bytes) -> None:
        self._stream.write(data)
        self.bytes_written += len(data)

    def write_rows(self, rows: StructColumn) -> None:
        """Encode ``rows`` and write them as one or more blocks (on a helper thread: the
        caller may prepare the next rows meanwhile; blocks are written in order)."""
        if rows.length == 0:
            return
        self._pending.append(_block_pool().submit(self._blocks, rows))
        while len(self._pending) > _WORKERS:
            self._write_pending()

    def _blocks(self, rows: StructColumn) -> list[bytes]:
        """The encoded, compressed blocks of ``rows``, cut at row boundaries every
        ``block_bytes`` or so."""
        n = rows.length
        data, offsets = self._encoder.encode(rows)
        blocks = []
        start = 0
        while start < n:
            end = int(np.searchsorted(offsets, offsets[start] + self._block_bytes, "right")) - 1
            end = min(max(end, start + 1), n)
            block = data[offsets[start]:offsets[end]].tobytes()
            if self._compress is not None:
                block = self._compress(block)
            blocks.append(b"".join((zigzag_varint(end - start), zigzag_varint(len(block)),
                                    block, self._sync)))
            start = end
        return blocks

    def _write_pending(self) -> None:
        for block in self._pending.popleft().result():
            self._write(block)

    def close(self) -> None:
        """Write the last block (the stream stays open)."""
        if self.closed:
            return
        self.closed = True
        try:
            while self._pending:
                self._write_pending()
        finally:
            self._pending.clear()


__all__ = ["CODEC_PROPERTY", "DEFAULT_BLOCK_BYTES", "DEFAULT_DEFLATE_LEVEL", "LEVEL_PROPERTY",
           "AvroWriter", "avro_codec"]
