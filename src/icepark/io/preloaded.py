"""A :class:`~icepark.io.fileio.FileIO` that serves files already read into memory.

Scan planning reads the bytes of each data manifest in the planning process and hands them to a
forked worker process to decode (:mod:`icepark.table.scan.planner`): the worker then never opens a
file system client (an object store's SDK, with its own threads and connections, is not safe to
use across a ``fork``). Every other location goes to the wrapped FileIO.

>>> from icepark.io.fileio import ArrowFileIO
>>> io = PreloadedFileIO(ArrowFileIO(), {"s3://b/m.avro": b"Obj\\x01"})
>>> f = io.new_input("s3://b/m.avro")
>>> f.read(), f.length(), f.exists(), f.open().read(3)
(b'Obj\\x01', 4, True, b'Obj')
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icepark.io.fileio import FileInfo, FileIO, InputFile, OutputFile


@dataclass(frozen=True, slots=True)
class PreloadedInput:
    """:class:`~icepark.io.fileio.InputFile` of bytes in memory."""

    location: str
    data: bytes

    def length(self) -> int:
        return len(self.data)

    def exists(self) -> bool:
        return True

    def open(self) -> Any:
        return pa.BufferReader(self.data)

    def read(self) -> bytes:
        return self.data


class PreloadedFileIO:
    """The ``files`` (location -> contents) from memory, anything else from ``file_io``."""

    def __init__(self, file_io: FileIO, files: Mapping[str, bytes]) -> None:
        self.file_io, self.files = file_io, dict(files)

    def new_input(self, location: str) -> InputFile:
        data = self.files.get(location)
        return self.file_io.new_input(location) if data is None else PreloadedInput(location,
                                                                                    data)

    def new_output(self, location: str) -> OutputFile:
        return self.file_io.new_output(location)

    def exists(self, location: str) -> bool:
        return location in self.files or self.file_io.exists(location)

    def delete(self, location: str) -> None:
        self.files.pop(location, None)
        self.file_io.delete(location)

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        return self.file_io.list_prefix(prefix)
