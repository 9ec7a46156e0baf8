"""Where a table's new files go: data files, manifests and manifest lists.

Spec, *Manifest Lists*: "A new manifest list is written for each attempt to commit a snapshot",
so a manifest list's name carries the snapshot ID and the attempt; spec, *Optimistic
Concurrency*: "Writers create table metadata files optimistically", so every name is unique
(a random UUID) and no file is ever overwritten ("In-place write -- Files are not moved or
altered once they are written").

Layout, following the reference implementation's table properties:

* data files: ``<write.data.path>/<partition path>/<uuid>.parquet``, where ``write.data.path``
  defaults to ``<table location>/data`` and the partition path is the spec's
  ``name=value/...`` path (nothing for an unpartitioned spec);
* manifests: ``<write.metadata.path>/<commit uuid>-m<N>.avro``;
* manifest lists: ``<write.metadata.path>/snap-<snapshot id>-<attempt>-<commit uuid>.avro``,
  where ``write.metadata.path`` defaults to ``<table location>/metadata``.

>>> loc = LocationProvider("s3://b/t", {})
>>> loc.manifest_location("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 0)
's3://b/t/metadata/1b4e28ba-2fa1-11d2-883f-0016d3cca427-m0.avro'
>>> loc.manifest_list_location(42, 1, "1b4e28ba-2fa1-11d2-883f-0016d3cca427")
's3://b/t/metadata/snap-42-1-1b4e28ba-2fa1-11d2-883f-0016d3cca427.avro'
>>> LocationProvider("s3://b/t/", {"write.data.path": "s3://other/d/"}).data_path
's3://other/d'
>>> loc.new_data_location("x=1").startswith("s3://b/t/data/x=1/")
True
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema

WRITE_DATA_PATH = "write.data.path"
"""Table property: the base location of new data files (default ``<location>/data``)."""
WRITE_METADATA_PATH = "write.metadata.path"
"""Table property: the base location of new metadata files (default ``<location>/metadata``)."""


def _base(value: str, what: str) -> str:
    if not value:
        raise ValidationError(f"The {what} cannot be empty")
    stripped = value.rstrip("/") or "/"
    if ".." in stripped.split("/"):
        raise ValidationError(f"The {what} {value!r} must not contain '..' segments")
    return stripped


class LocationProvider:
    """Names new files of one table from its location and properties."""

    __slots__ = ("data_path", "metadata_path", "table_location")

    def __init__(self, table_location: str, properties: Mapping[str, str]) -> None:
        self.table_location = _base(table_location, "table location")
        self.data_path = _base(properties.get(WRITE_DATA_PATH) or
                               f"{self.table_location}/data", WRITE_DATA_PATH)
        self.metadata_path = _base(properties.get(WRITE_METADATA_PATH) or
                                   f"{self.table_location}/metadata", WRITE_METADATA_PATH)

    @staticmethod
    def of(metadata: TableMetadata) -> LocationProvider:
        """The provider of a table version (its location and current properties)."""
        return LocationProvider(metadata.location, metadata.properties)

    def __repr__(self) -> str:
        return f"LocationProvider({self.data_path!r}, {self.metadata_path!r})"

    def new_data_location(self, partition_path: str = "", extension: str = "parquet") -> str:
        """A fresh data file location: ``<data path>/<partition path>/<uuid>.<extension>``."""
        directory = f"{self.data_path}/{partition_path}" if partition_path else self.data_path
        return f"{directory}/{uuid.uuid4()}.{extension}"

    def data_file_namer(self, spec: PartitionSpec, schema: Schema, partition: Sequence[Any],
                        extension: str = "parquet") -> Callable[[], str]:
        """A ``location_provider`` for :class:`icepark.io.parquet.data_writer.DataFileWriter`: each
        call names a new file in the partition's directory."""
        path = spec.partition_path(partition, schema) if spec.fields else ""
        return lambda: self.new_data_location(path, extension)

    def metadata_file(self, name: str) -> str:
        """A file directly under the metadata path."""
        if not name or "/" in name:
            raise ValidationError(f"Invalid metadata file name {name!r}")
        return f"{self.metadata_path}/{name}"

    def manifest_location(self, commit_uuid: str, number: int) -> str:
        """``<metadata>/<commit uuid>-m<N>.avro``: the ``N``-th manifest of one commit."""
        return self.metadata_file(f"{commit_uuid}-m{number}.avro")

    def manifest_list_location(self, snapshot_id: int, attempt: int, commit_uuid: str) -> str:
        """``<metadata>/snap-<snapshot id>-<attempt>-<commit uuid>.avro``."""
        return self.metadata_file(f"snap-{snapshot_id}-{attempt}-{commit_uuid}.avro")
