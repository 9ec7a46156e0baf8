"""Opening Parquet data and delete files for reading: pyarrow's decoding errors become
:class:`~icepark.errors.CorruptFile` naming the file.

Spec, *Appendix A, Parquet*: data and delete files "must use valid Iceberg formats". A file
that is not Parquet at all, truncated, or whose footer, pages or compressed data do not decode
makes pyarrow raise ``ArrowInvalid`` ("Parquet magic bytes not found in footer"), an ``OSError``
("Couldn't deserialize thrift", "Corrupt snappy compressed data", "Unexpected end of stream")
or even a ``UnicodeDecodeError``; every reader here turns them into one typed error that names
the file, so a user learns *which* file of a table is broken:

``Data file /wh/db/t/data/a.parquet is not a valid Parquet file: Parquet magic bytes not
found in footer ...``

A missing file stays :class:`~icepark.errors.FileNotFound` (raised by the FileIO on open), and
an ``OSError`` that carries an ``errno`` (a real I/O error of the operating system, such as a
permission or device error) is left as it is: only decoding errors mean the file is corrupt.
Errors icepark raises itself (:class:`~icepark.errors.IcebergError`) pass through unchanged.

>>> import pyarrow as pa
>>> open_parquet(pa.BufferReader(b"not parquet"), "/t/d.parquet")
Traceback (most recent call last):
...
icepark.errors.CorruptFile: Data file /t/d.parquet is not a valid Parquet file: Parquet magic \
bytes not found in footer. Either the file is corrupted or this is not a parquet file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeGuard

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.errors import CorruptFile, IcebergError
from icepark.io.fileio import storage_error

DATA_FILE = "Data file"
POSITION_DELETE_FILE = "Position delete file"
EQUALITY_DELETE_FILE = "Equality delete file"


_STORE_FAILURE = "AWS Error "
"""How pyarrow's S3 file system words every failure of a request ("AWS Error <code> during
<operation> operation: ..."): an errno-less ``OSError`` like a decoding error's, but the
store's, not the file's."""


def _is_store_failure(error: BaseException) -> TypeGuard[OSError]:
    return (isinstance(error, OSError) and not isinstance(error, IcebergError)
            and _STORE_FAILURE in str(error))


def _is_decoding_error(error: BaseException) -> bool:
    if isinstance(error, IcebergError | FileNotFoundError) or _is_store_failure(error):
        return False
    if isinstance(error, pa.ArrowException | ValueError):  # ArrowInvalid, UnicodeDecodeError
        return True
    return isinstance(error, OSError) and error.errno is None


@contextmanager
def decoding(location: str, what: str = DATA_FILE) -> Iterator[None]:
    """Raise a decoding error of the block as :class:`CorruptFile` naming ``location``
    (``what`` says which kind of file it is: "Data file", "Position delete file" ...), and a
    read the object store failed (a connection cut mid-file) as
    :class:`~icepark.errors.StorageError`, not as a corrupt file."""
    try:
        yield
    except Exception as e:
        if _is_store_failure(e):
            raise storage_error("read", location, e) from None
        if not _is_decoding_error(e):
            raise
        reason = str(e).strip() or type(e).__name__
        raise CorruptFile(f"{what} {location} is not a valid Parquet file: {reason}") from e


def open_parquet(source: Any, location: str, what: str = DATA_FILE,
                 metadata: Any | None = None) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` of ``source`` (an open file) with its footer and Arrow
    schema decoded, or :class:`CorruptFile`. ``metadata``: the footer, if already read."""
    with decoding(location, what):
        parquet = pq.ParquetFile(source, metadata=metadata)
        parquet.schema_arrow  # noqa: B018 - decode the schema now, inside the guard
        return parquet


def read_footer(source: Any, location: str, what: str = DATA_FILE) -> Any:
    """The footer (``pyarrow.parquet.FileMetaData``) of ``source``, or :class:`CorruptFile`."""
    with decoding(location, what):
        footer = pq.read_metadata(source)
        footer.schema.to_arrow_schema()
        return footer


def read_arrow_schema(source: Any, location: str, what: str = DATA_FILE) -> Any:
    """The Arrow schema of ``source``'s footer, or :class:`CorruptFile`."""
    with decoding(location, what):
        return pq.read_schema(source)


def decoded_batches(reader: Iterable[Any], location: str, what: str = DATA_FILE) -> Iterator[Any]:
    """The batches of ``reader`` (e.g. ``ParquetFile.iter_batches``); a page that does not
    decode is :class:`CorruptFile`. Only pyarrow's reading is guarded: errors of the code that
    consumes the batches are not relabelled."""
    it = iter(reader)
    while True:
        with decoding(location, what):
            try:
                batch = next(it)
            except StopIteration:
                return
        yield batch
