"""Deletion vectors: the ``deletion-vector-v1`` blob, Puffin files of them, their records.

Spec, *Deletion Vectors*: "Deletion vectors identify deleted rows of a file by encoding deleted
positions in a bitmap. A set bit at position P indicates that the row at position P is
deleted." The blob (Puffin spec, *deletion-vector-v1 blob type*) contains: "Combined length of
the vector and magic bytes stored as 4 bytes, big-endian; A 4-byte magic sequence, D1 D3 39 64;
The vector, serialized as described below; A CRC-32 checksum of the magic bytes and serialized
vector as 4 bytes, big-endian", the vector in the portable format of
:mod:`icepark.io.puffin.bitmap`.

"Multiple deletion vectors can be stored in the same file": :func:`write_deletion_vectors`
writes one Puffin file of many, with the blob metadata the reference writer gives them, and
:meth:`WrittenDeletionVectors.data_file` makes their ``DataFile`` records. "Delete manifests
track deletion vectors individually by the containing file location (``file_path``), starting
offset of the DV blob (``content_offset``), and total length of the blob
(``content_size_in_bytes``)": :func:`read_deletion_vector` reads just those bytes.

>>> blob = serialize_deletion_vector([1, 2, 5])
>>> blob[:4].hex(), blob[4:8].hex(), len(blob)  # length 38: the magic and a 34-byte vector
('00000026', 'd1d33964', 46)
>>> deserialize_deletion_vector(blob, "f.puffin")
array([1, 2, 5])
>>> deserialize_deletion_vector(blob[:-1] + b"\\x00", "f.puffin")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
icepark.errors.CorruptFile: Deletion vector in f.puffin: CRC-32 mismatch: stored ..., computed ...
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap64

from icepark.errors import CorruptFile, ValidationError
from icepark.io.fileio import FileIO
from icepark.io.puffin.bitmap import (
    PositionArray,
    Positions,
    deserialize_portable,
    serialize_portable,
    to_bitmap,
    to_positions,
)
from icepark.io.puffin.reader import PuffinReader
from icepark.io.puffin.writer import PuffinWriter
from icepark.spec.manifest import DataFile, FileContent, FileFormat

BLOB_TYPE = "deletion-vector-v1"
MAGIC = b"\xd1\xd3\x39\x64"
REFERENCED_DATA_FILE = "referenced-data-file"
"""Blob property: "the location of the data file the delete vector applies to; must be equal
to the data file's ``location`` in table metadata"."""
CARDINALITY = "cardinality"
"""Blob property: "the number of deleted rows (set positions) in the delete vector"."""
ROW_POSITION_FIELD_ID = 2147483645
"""The ``_pos`` metadata column (``Integer.MAX_VALUE - 2``): the reference writer lists it as
the blob's ``fields``."""
_FRAME = 12  # the length field, the magic and the CRC
_MAX_BLOB = 2**31 - 1


def serialize_deletion_vector(positions: Positions) -> bytes:
    """The ``deletion-vector-v1`` blob of ``positions`` (run-length encoded first, as the
    reference writer does); :class:`ValidationError` for a position below 0 or above
    ``2**63 - 1``."""
    body = MAGIC + serialize_portable(to_bitmap(positions))
    if len(body) + 8 > _MAX_BLOB:
        raise ValidationError(f"A deletion vector of {len(body) + 8} bytes is too large: "
                              "its length is stored as 4 bytes")
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def deserialize_deletion_vector(blob: bytes, location: str) -> PositionArray:
    """The positions (ascending, unique, int64) of a ``deletion-vector-v1`` blob;
    :class:`CorruptFile` naming ``location`` and the fault if the blob is malformed."""
    return to_positions(_decode(blob, f"Deletion vector in {location}"))


def _decode(blob: bytes, where: str) -> BitMap64:
    if len(blob) < _FRAME:
        raise CorruptFile(f"{where}: {len(blob)} bytes is too short for a deletion vector "
                          f"(its length, magic and CRC take {_FRAME})")
    (length,) = struct.unpack_from(">I", blob, 0)
    if length != len(blob) - 8:
        raise CorruptFile(f"{where}: the length field says {length} bytes of magic and vector, "
                          f"the blob holds {len(blob) - 8}")
    if blob[4:8] != MAGIC:
        raise CorruptFile(f"{where}: bad magic {blob[4:8].hex()}, expected {MAGIC.hex()}")
    (stored,) = struct.unpack_from(">I", blob, len(blob) - 4)
    computed = zlib.crc32(blob[4:-4])
    if stored != computed:
        raise CorruptFile(f"{where}: CRC-32 mismatch: stored {stored:#010x}, computed "
                          f"{computed:#010x}")
    return deserialize_portable(blob[8:-4], where)


@dataclass(frozen=True, slots=True)
class WrittenVector:
    """One deletion vector of a written Puffin file: the blob's ``offset`` and ``length``
    (its ``content_offset`` and ``content_size_in_bytes``) and ``cardinality``."""

    referenced_data_file: str
    offset: int
    length: int
    cardinality: int


@dataclass(frozen=True, slots=True)
class WrittenDeletionVectors:
    """A Puffin file of deletion vectors: its ``location``, ``file_size`` and vectors."""

    location: str
    file_size: int
    vectors: tuple[WrittenVector, ...]

    def data_file(self, vector: WrittenVector, *, spec_id: int,
                  partition: tuple[Any, ...]) -> DataFile:
        """The ``DataFile`` record of ``vector``, in ``partition`` of spec ``spec_id`` (those
        of the data file it references), as the reference writer makes it: position
        deletes in ``PUFFIN`` format, ``record_count`` the cardinality ("Number of records in
        this file, or the cardinality of a deletion vector"), the Puffin file's size, the
        referenced data file and the blob's offset and length ("these values are required
        and must exactly match the offset and length stored in the Puffin footer"), and no
        column metrics, sort order or split offsets."""
        return DataFile(
            file_path=self.location, file_format=FileFormat.PUFFIN, partition=partition,
            record_count=vector.cardinality, file_size_in_bytes=self.file_size,
            content=FileContent.POSITION_DELETES, spec_id=spec_id,
            referenced_data_file=vector.referenced_data_file, content_offset=vector.offset,
            content_size_in_bytes=vector.length)

    def data_files(self, referenced: Mapping[str, DataFile]) -> list[DataFile]:
        """The records of every vector, each in the spec and partition of its data file in
        ``referenced`` (by location); :class:`ValidationError` if one is missing."""
        files = []
        for vector in self.vectors:
            data = referenced.get(vector.referenced_data_file)
            if data is None:
                raise ValidationError(f"No data file {vector.referenced_data_file} given for "
                                      f"its deletion vector in {self.location}")
            files.append(self.data_file(vector, spec_id=data.spec_id, partition=data.partition))
        return files


def write_deletion_vectors(file_io: FileIO, location: str, vectors: Mapping[str, Positions],
                           *, overwrite: bool = False) -> WrittenDeletionVectors:
    """Write one Puffin file at ``location`` holding a deletion vector per data file location
    of ``vectors``, in their order.

    Each blob is what the Puffin spec asks for and the reference writer writes: type
    ``deletion-vector-v1``, ``fields`` ``[2147483645]`` (``_pos``), ``snapshot-id`` and
    ``sequence-number`` -1 ("Snapshot ID and sequence number are not known at the time the
    Puffin file is created"), properties ``referenced-data-file`` and ``cardinality``, no
    ``compression-codec`` ("deletion-vector-v1 is not compressed"). The file's only property
    is ``created-by``; its footer is not compressed.
    """
    if not vectors:
        raise ValidationError(f"No deletion vectors to write to {location}")
    written = []
    with PuffinWriter(file_io, location, overwrite=overwrite) as writer:
        for path, positions in vectors.items():
            if not path:
                raise ValidationError(f"A deletion vector for {location} names no data file")
            bitmap = to_bitmap(positions)
            cardinality = len(bitmap)
            blob = writer.add_blob(
                BLOB_TYPE, serialize_deletion_vector(bitmap), fields=(ROW_POSITION_FIELD_ID,),
                snapshot_id=-1, sequence_number=-1,
                properties={REFERENCED_DATA_FILE: path, CARDINALITY: str(cardinality)})
            written.append(WrittenVector(path, blob.offset, blob.length, cardinality))
    return WrittenDeletionVectors(location, writer.result.file_size, tuple(written))


def read_deletion_vector(file_io: FileIO, delete_file: DataFile) -> PositionArray:
    """The deleted positions of a deletion vector's record: the ``content_size_in_bytes``
    bytes at ``content_offset`` of its Puffin file, decoded and checked against its
    ``record_count``, "the cardinality of a deletion vector"."""
    if not delete_file.is_deletion_vector:
        raise ValidationError(
            f"{delete_file.file_path} is not a deletion vector: content "
            f"{delete_file.content.name}, format {delete_file.file_format}")
    offset, length = delete_file.content_offset, delete_file.content_size_in_bytes
    where = f"Deletion vector at offset {offset} of {delete_file.file_path}"
    if offset is None or length is None or offset < 0 or length < 0 \
            or offset + length > delete_file.file_size_in_bytes:
        raise CorruptFile(f"{where}: its length {length} does not fit the file of "
                          f"{delete_file.file_size_in_bytes} bytes its record names")
    with file_io.new_input(delete_file.file_path).open() as stream:
        stream.seek(offset)
        blob = bytes(stream.read(length))
    if len(blob) != length:
        raise CorruptFile(f"{where}: its length {length} reaches past the end of the file "
                          f"(read {len(blob)} bytes)")
    bitmap = _decode(blob, where)
    if len(bitmap) != delete_file.record_count:
        raise CorruptFile(f"{where}: the vector holds {len(bitmap)} positions but its record's "
                          f"record_count is {delete_file.record_count}")
    return to_positions(bitmap)


def read_deletion_vectors(file_io: FileIO, location: str,
                          file_size: int | None = None) -> dict[str, PositionArray]:
    """Every deletion vector of the Puffin file at ``location``, by referenced data file,
    found through its footer; each checked against its ``cardinality`` property."""
    vectors: dict[str, PositionArray] = {}
    with PuffinReader(file_io, location, file_size=file_size) as reader:
        for blob in reader.metadata.blobs:
            if blob.type != BLOB_TYPE:
                continue
            where = f"Deletion vector at offset {blob.offset} of {location}"
            path = blob.properties.get(REFERENCED_DATA_FILE)
            if not path:
                raise CorruptFile(f"{where}: its blob has no {REFERENCED_DATA_FILE!r} property")
            if blob.compression_codec is not None:
                raise CorruptFile(f"{where}: its blob is compressed ({blob.compression_codec}), "
                                  "but \"deletion-vector-v1 is not compressed\"")
            bitmap = _decode(reader.read_blob(blob), where)
            if str(len(bitmap)) != blob.properties.get(CARDINALITY):
                raise CorruptFile(f"{where}: the vector holds {len(bitmap)} positions but its "
                                  f"{CARDINALITY!r} property is "
                                  f"{blob.properties.get(CARDINALITY)!r}")
            vectors[path] = to_positions(bitmap)
    return vectors
