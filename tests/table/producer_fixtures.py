"""Shared helpers of the snapshot producer tests: tables in tmp_path, an in-memory committer,
data files with metrics, and raw manifest reads."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import fastavro

from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry, ManifestFile
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change.commit import (
    Change,
    CommitResult,
    Identifier,
    RetryPolicy,
    commit_with_retry,
)
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.change.updates import TableRequirement, TableUpdate
from tests.table import committer

IDENT: Identifier = ("db", "t")
SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "category", STRING),
)
NO_WAIT = RetryPolicy(num_retries=4, min_wait_ms=0, max_wait_ms=0)


def new_table(tmp_path: Path, *, format_version: FormatVersion = 2, partitioned: bool = True,
              properties: dict[str, str] | None = None) -> TableMetadata:
    """A table at ``tmp_path/t`` partitioned by identity(category) (field 1000) or not."""
    spec = PartitionSpecBuilder(SCHEMA).identity("category").build() if partitioned \
        else PartitionSpec()
    md, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"), spec=spec,
                                      properties=properties or {}, format_version=format_version)
    return md


class InMemoryCommitter(committer.InMemoryCommitter):
    """The shared in-memory committer holding one table, :data:`IDENT`; ``before_commit``
    hooks run (and ``failures`` are raised) at the start of the next commits, in order."""

    def __init__(self, metadata: TableMetadata) -> None:
        super().__init__()
        self.create(IDENT, metadata)
        self.before_commit: list[Callable[[], object]] = []
        self.failures: list[BaseException] = []

    def commit_table(self, identifier: Identifier, requirements: Sequence[TableRequirement],
                     updates: Sequence[TableUpdate]) -> CommitResult:
        if self.before_commit:
            self.before_commit.pop(0)()
        if self.failures:
            self.attempts += 1
            raise self.failures.pop(0)
        return super().commit_table(identifier, requirements, updates)

    @property
    def current(self) -> CommitResult:
        return self.load_metadata(IDENT)

    @current.setter
    def current(self, result: CommitResult) -> None:
        self.put(IDENT, result)

    @property
    def metadata(self) -> TableMetadata:
        return self.current.metadata

    def commit(self, change: Change, policy: RetryPolicy = NO_WAIT) -> TableMetadata:
        return commit_with_retry(self, IDENT, self.current, change, policy).metadata


def long_bound(value: int) -> bytes:
    return struct.pack("<q", value)


def data_file(path: str, category: str | None = "a", records: int = 10, *,
              spec_id: int = 0, size: int = 1000, id_range: tuple[int, int] | None = None,
              content: FileContent = FileContent.DATA,
              equality_ids: tuple[int, ...] | None = None,
              partition: tuple[Any, ...] | None = None) -> DataFile:
    """A data (or delete) file record; ``id_range`` sets the bounds of column ``id``."""
    bounds: dict[str, Any] = {}
    if id_range is not None:
        bounds = {"lower_bounds": {1: long_bound(id_range[0])},
                  "upper_bounds": {1: long_bound(id_range[1])},
                  "value_counts": {1: records}, "null_value_counts": {1: 0}}
    part = partition if partition is not None else ((category,) if spec_id == 0 else ())
    return DataFile(path, FileFormat.PARQUET, part, records, size, content, spec_id,
                    equality_ids=equality_ids, **bounds)


def manifests_of(io: ArrowFileIO, snapshot: Snapshot | None) -> list[ManifestFile]:
    assert snapshot is not None and snapshot.manifest_list is not None
    return read_manifest_list(io, snapshot.manifest_list)


def entries_of(io: ArrowFileIO, snapshot: Snapshot | None) -> Iterator[ManifestEntry]:
    for m in manifests_of(io, snapshot):
        yield from read_manifest(io, m)


def live_paths(io: ArrowFileIO, snapshot: Snapshot | None) -> set[str]:
    return {e.data_file.file_path for e in entries_of(io, snapshot) if e.is_live}


def raw_entries(path: str) -> list[dict[str, Any]]:
    """A manifest's records as written (no inheritance applied)."""
    with open(path, "rb") as f:
        return [cast(dict[str, Any], r) for r in fastavro.reader(f)]


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}
