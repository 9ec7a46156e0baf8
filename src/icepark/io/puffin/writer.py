"""Writing a Puffin file: the magic, the blobs as they come, then the footer.

Spec, *File structure*: ``Magic Blob1 Blob2 ... BlobN Footer``. The writer streams: each
:meth:`PuffinWriter.add_blob` writes its blob at once and returns its ``BlobMetadata``; the
footer, which lists them, is written by :meth:`PuffinWriter.finish`.

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> location = f"{tempfile.mkdtemp()}/stats.puffin"
>>> with PuffinWriter(ArrowFileIO(), location, properties={"k": "v"}) as writer:
...     blob = writer.add_blob("some-blob", b"abc", fields=(1,), snapshot_id=7,
...                            sequence_number=3)
>>> blob.offset, blob.length  # after the magic
(4, 3)
>>> writer.result.file_size == 4 + 3 + writer.result.footer_size
True
>>> writer.result.properties["created-by"] == f"icepark {__version__}"
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from icepark import __version__
from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.puffin.codec import Codec, compress
from icepark.io.puffin.footer import MAGIC, encode_footer
from icepark.io.puffin.metadata import CREATED_BY, BlobMetadata, FileMetadata
from icepark.spec.snapshots import FrozenMap


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A finished Puffin file: its ``file_size`` and ``footer_size`` (the whole footer,
    magic to magic, as table metadata's ``file-footer-size-in-bytes`` records it), its blobs
    and file properties."""

    location: str
    file_size: int
    footer_size: int
    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)


class PuffinWriter:
    """Writes one Puffin file through ``file_io``; a context manager that finishes the file
    on a clean exit and, on an error, closes and deletes the partial file.

    ``properties`` are the file's; ``created-by`` defaults to ``icepark <version>`` (spec,
    *Common properties*: "it is recommended to set" it). ``compress_footer`` writes the
    footer payload as an LZ4 frame and sets flag bit 0. ``overwrite`` replaces an existing
    file; by default an existing file is ``AlreadyExists``.
    """

    def __init__(self, file_io: FileIO, location: str, *,
                 properties: Mapping[str, str] | None = None, compress_footer: bool = False,
                 overwrite: bool = False) -> None:
        self._file_io = file_io
        self.location = location
        self._properties = {CREATED_BY: f"icepark {__version__}", **(properties or {})}
        self._compress_footer = compress_footer
        self._blobs: list[BlobMetadata] = []
        self._result: WrittenFile | None = None
        self._out: Any = file_io.new_output(location).create(overwrite=overwrite)
        self._position = 0
        self._write(MAGIC)

    def add_blob(self, blob_type: str, data: bytes, *, fields: Sequence[int],
                 snapshot_id: int, sequence_number: int,
                 properties: Mapping[str, str] | None = None,
                 compression: Codec | None = None) -> BlobMetadata:
        """Write one blob (compressed with ``compression`` if given) and return its metadata,
        with the ``offset`` where it starts and its ``length`` "after compression, if
        compressed"."""
        if self._result is not None:
            raise ValidationError(f"Cannot add a blob to {self.location}: it is finished")
        if not blob_type:
            raise ValidationError(f"Cannot add a blob to {self.location}: its type is empty")
        codec = None if compression is None else self._codec(compression)
        stored = data if codec is None else compress(codec, data)
        blob = BlobMetadata(blob_type, tuple(fields), snapshot_id, sequence_number,
                            self._position, len(stored), None if codec is None else str(codec),
                            properties or {})
        self._write(stored)
        self._blobs.append(blob)
        return blob

    def finish(self) -> WrittenFile:
        """Write the footer and close the file; again, return the same result."""
        if self._result is None:
            metadata = FileMetadata(tuple(self._blobs), self._properties)
            footer = encode_footer(metadata, self._compress_footer)
            self._write(footer)
            self._out.close()
            self._result = WrittenFile(self.location, self._position, len(footer),
                                       metadata.blobs, metadata.properties)
        return self._result

    @property
    def result(self) -> WrittenFile:
        """The result of :meth:`finish`; ``ValidationError`` before it."""
        if self._result is None:
            raise ValidationError(f"Puffin file {self.location} is not finished yet")
        return self._result

    def abort(self) -> None:
        """Close the unfinished file and delete it (best effort)."""
        if self._result is None:
            with contextlib.suppress(Exception):
                self._out.close()
            with contextlib.suppress(Exception):
                self._file_io.delete(self.location)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.finish()
        else:
            self.abort()

    def _codec(self, name: str) -> Codec:
        try:
            return Codec(name)
        except ValueError:
            raise ValidationError(
                f"Cannot compress a blob of {self.location} with {name!r}: Puffin codecs are "
                f"{', '.join(Codec)}") from None

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._position += len(data)
