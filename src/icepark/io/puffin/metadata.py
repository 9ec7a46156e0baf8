"""The footer's ``FileMetadata`` and ``BlobMetadata``, as values.

Spec, *Footer Payload*: the footer payload is a "UTF-8 encoded JSON payload representing a
single ``FileMetadata`` object". Its JSON lives in :mod:`icepark.io.puffin.footer`; these are
its plain, picklable values with Python names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from icepark.spec.snapshots import FrozenMap

CREATED_BY = "created-by"
"""Spec, *Common properties*: "``created-by`` - human-readable identification of the
application writing the file, along with its version. Example "Trino version 381"."""


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """Spec, *BlobMetadata*: where a blob is and what it holds.

    ``type`` "See Blob types"; ``fields``: "List of field IDs the blob was computed for";
    ``snapshot_id`` and ``sequence_number``: of the "Iceberg table's snapshot the blob was
    computed from"; ``offset``: "The offset in the file where the blob contents start";
    ``length``: "The length of the blob stored in the file (after compression, if
    compressed)"; ``compression_codec``: "If omitted, the data is assumed to be uncompressed"
    (kept as written, so that a file naming an unknown codec still lists); ``properties``:
    "storage for arbitrary meta-information about the blob".

    >>> blob = BlobMetadata("deletion-vector-v1", (2147483645,), -1, -1, 4, 40)
    >>> blob.end, blob.properties
    (44, FrozenMap({}))
    """

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", FrozenMap(self.properties))

    @property
    def end(self) -> int:
        """The offset just past the blob."""
        return self.offset + self.length


@dataclass(frozen=True, slots=True)
class FileMetadata:
    """Spec, *FileMetadata*: the file's ``blobs`` and its ``properties``, "storage for
    arbitrary meta-information, like writer identification/version".

    >>> FileMetadata((), {"created-by": "icepark 0.1.0"}).created_by
    'icepark 0.1.0'
    """

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "blobs", tuple(self.blobs))
        object.__setattr__(self, "properties", FrozenMap(self.properties))

    @property
    def created_by(self) -> str | None:
        """The writer's ``created-by`` property, if it set one."""
        return self.properties.get(CREATED_BY)
