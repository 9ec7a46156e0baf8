"""Reading a Puffin file: its footer, then any blob by its metadata.

The footer is found from the end of the file (spec, *Footer structure*: ``Magic FooterPayload
FooterPayloadSize Flags Magic``): the reader fetches the last :data:`TAIL_GUESS` bytes at once,
which hold the whole footer of most files, and reads again only for a larger one. Given the
file's size (a manifest or table metadata records it), it never asks the file system for it.

Every malformed file raises :class:`~icepark.errors.CorruptFile` naming the file and the fault;
a missing file raises the FileIO's :class:`~icepark.errors.FileNotFound`.

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.io.puffin.writer import PuffinWriter
>>> io, location = ArrowFileIO(), f"{tempfile.mkdtemp()}/stats.puffin"
>>> with PuffinWriter(io, location, compress_footer=True) as writer:
...     _ = writer.add_blob("a", b"x" * 1000, fields=(1,), snapshot_id=1, sequence_number=1,
...                         compression=Codec.ZSTD)
>>> with PuffinReader(io, location) as reader:
...     [(b.type, b.compression_codec) for b in reader.metadata.blobs]
...     reader.read_blob(reader.metadata.blobs[0]) == b"x" * 1000
[('a', 'zstd')]
True
>>> io.new_output(location).write(b"PFA1 not a footer", overwrite=True)
>>> read_file_metadata(io, location)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
icepark.errors.CorruptFile: Puffin file .../stats.puffin: 17 bytes is too short ...
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from icepark.errors import CorruptFile
from icepark.io.fileio import FileIO
from icepark.io.puffin.codec import Codec, decompress
from icepark.io.puffin.footer import (
    MAGIC,
    MIN_FILE_LENGTH,
    MIN_FOOTER_LENGTH,
    TAIL_LENGTH,
    decode_footer,
    decode_tail,
)
from icepark.io.puffin.metadata import BlobMetadata, FileMetadata

TAIL_GUESS = 16 * 1024
"""How many bytes from the end of the file the first read of the footer fetches."""


def read_file_metadata(file_io: FileIO, location: str, file_size: int | None = None,
                       footer_size: int | None = None) -> FileMetadata:
    """The footer of the Puffin file at ``location``."""
    with PuffinReader(file_io, location, file_size=file_size, footer_size=footer_size) as r:
        return r.metadata


class PuffinReader:
    """Reads one Puffin file; a context manager that closes its stream.

    ``file_size`` and ``footer_size`` (the whole footer, as table metadata's
    ``file-footer-size-in-bytes``), when known, spare a request each.
    """

    def __init__(self, file_io: FileIO, location: str, *, file_size: int | None = None,
                 footer_size: int | None = None) -> None:
        self.location = location
        self._input = file_io.new_input(location)
        self._file_size = file_size
        self._footer_size = footer_size
        self._stream: Any = None
        self._metadata: FileMetadata | None = None

    @property
    def file_size(self) -> int:
        if self._file_size is None:
            self._file_size = self._input.length()
        return self._file_size

    @property
    def metadata(self) -> FileMetadata:
        """The file's footer, read once; blobs are checked to lie between the magic and the
        footer."""
        if self._metadata is None:
            self._metadata = self._read_metadata()
        return self._metadata

    def read_blob(self, blob: BlobMetadata) -> bytes:
        """The content of ``blob``, decompressed if its ``compression-codec`` says so."""
        data = self._read(blob.offset, blob.length, f"blob {blob.type!r}")
        if blob.compression_codec is None:
            return data
        where = f"Puffin file {self.location}: blob at offset {blob.offset}"
        return decompress(Codec.parse(blob.compression_codec, where), data, where)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _read_metadata(self) -> FileMetadata:
        size = self.file_size
        if size < MIN_FILE_LENGTH:
            raise self._corrupt(f"{size} bytes is too short for a Puffin file (at least "
                                f"{MIN_FILE_LENGTH}: the magic and an empty footer)")
        if self._footer_size is not None and not (
                MIN_FOOTER_LENGTH <= self._footer_size <= size - len(MAGIC)):
            raise self._corrupt(f"the given footer size {self._footer_size} does not fit a "
                                f"{size}-byte file")
        tail_start = size - (self._footer_size or min(size, TAIL_GUESS))
        tail = self._read(tail_start, size - tail_start, "the footer")
        payload_size, compressed = decode_tail(tail[-TAIL_LENGTH:], self.location)
        footer_size = MIN_FOOTER_LENGTH + payload_size
        if footer_size > size - len(MAGIC):
            raise self._corrupt(f"footer payload size {payload_size} reaches past the start of "
                                f"the file ({size} bytes)")
        if self._footer_size is not None and footer_size != self._footer_size:
            raise self._corrupt(f"footer payload size {payload_size} does not match the given "
                                f"footer size {self._footer_size}")
        footer_start = size - footer_size
        if footer_start < tail_start:
            tail = self._read(footer_start, tail_start - footer_start, "the footer") + tail
            tail_start = footer_start
        head = tail[:len(MAGIC)] if tail_start == 0 else self._read(0, len(MAGIC), "the magic")
        if head != MAGIC:
            raise self._corrupt(f"bad magic at the start of the file: {head.hex()}, expected "
                                f"{MAGIC.hex()}")
        metadata = decode_footer(tail[footer_start - tail_start:], self.location, compressed)
        for i, blob in enumerate(metadata.blobs):
            if blob.offset < len(MAGIC) or blob.end > footer_start:
                raise self._corrupt(
                    f"blob {i} ({blob.type}, offset {blob.offset}, length {blob.length}) lies "
                    f"outside the blobs, which span offsets {len(MAGIC)} to {footer_start}")
        return metadata

    def _read(self, offset: int, length: int, what: str) -> bytes:
        if self._file_size is not None and offset + length > self._file_size:
            raise self._corrupt(f"{what} at offset {offset}, length {length} reaches past the "
                                f"end of the file ({self._file_size} bytes)")
        if self._stream is None:
            self._stream = self._input.open()
        self._stream.seek(offset)
        data = bytes(self._stream.read(length))
        if len(data) != length:
            raise self._corrupt(f"{what} at offset {offset}, length {length} reaches past the "
                                f"end of the file (read {len(data)} bytes)")
        return data

    def _corrupt(self, problem: str) -> CorruptFile:
        return CorruptFile(f"Puffin file {self.location}: {problem}")
