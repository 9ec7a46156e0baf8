"""A test double of the catalog: an in-memory :class:`TableCommitter`.

It checks requirements and applies updates with :class:`MetadataBuilder`, then swaps an
in-memory pointer with a real compare-and-swap. It can be told to fail the next commits with
:class:`CommitFailed` (after landing a concurrent change, as another writer would) or to raise
:class:`CommitStateUnknown` (after or without applying the commit).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path

from icepark.errors import CommitFailed, CommitStateUnknown, NoSuchTable
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import ManifestWriter, read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests, write_manifest_list
from icepark.spec.manifest import DataFile, FileContent, FileFormat, ManifestContent, ManifestFile
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef, Summary
from icepark.spec.types import LONG, STRING, TIMESTAMP, NestedField
from icepark.table.change import updates as u
from icepark.table.change.commit import CommitResult, Identifier
from icepark.table.change.metadata_builder import MetadataBuilder, now_ms
from icepark.table.change.updates import TableRequirement, TableUpdate, check_requirement
from icepark.table.table import Table

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "data", STRING),
    NestedField.optional(3, "ts", TIMESTAMP),
)
FAST_RETRIES = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"}
Concurrent = Callable[[TableMetadata], Sequence[TableUpdate]]


class InMemoryCommitter:
    """Holds each table's current :class:`CommitResult`; commits by compare-and-swap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[Identifier, CommitResult] = {}
        self._versions = 0
        self._fail_next = 0
        self._concurrent: list[Concurrent] = []
        self._unknown_next: bool | None = None
        self.attempts = 0
        self.commits = 0

    def create(self, identifier: Identifier, metadata: TableMetadata) -> CommitResult:
        result = CommitResult(metadata, self._location(metadata))
        self._tables[identifier] = result
        return result

    def put(self, identifier: Identifier, result: CommitResult) -> None:
        """Replace a table's current version in place: a test's shortcut, not a commit."""
        self._tables[identifier] = result

    def _location(self, metadata: TableMetadata) -> str:
        self._versions += 1
        return f"{metadata.location}/metadata/v{self._versions}.metadata.json"

    def fail_next(self, times: int = 1, *concurrent: Concurrent) -> None:
        """Fail the next ``times`` commits with CommitFailed, each time first landing the next
        of ``concurrent`` (a function of the current metadata returning updates)."""
        self._fail_next = times
        self._concurrent = list(concurrent)

    def unknown_next(self, applied: bool = False) -> None:
        """Raise CommitStateUnknown on the next commit, after applying it when ``applied``."""
        self._unknown_next = applied

    def load_metadata(self, identifier: Identifier) -> CommitResult:
        try:
            return self._tables[identifier]
        except KeyError:
            raise NoSuchTable(".".join(identifier)) from None

    def commit_lock(self, identifier: Identifier) -> AbstractContextManager[bool]:
        """No lock: the failures it is told to fail with stand for writers that take none."""
        return nullcontext(False)

    def land(self, identifier: Identifier, updates: Sequence[TableUpdate]) -> CommitResult:
        """Another writer's commit."""
        current = self.load_metadata(identifier)
        return self._swap(identifier, current, updates)

    def commit_table(self, identifier: Identifier, requirements: Sequence[TableRequirement],
                     updates: Sequence[TableUpdate]) -> CommitResult:
        self.attempts += 1
        if self._fail_next > 0:
            self._fail_next -= 1
            if self._concurrent:
                self.land(identifier, self._concurrent.pop(0)(self.load_metadata(
                    identifier).metadata))
            raise CommitFailed("Injected: another writer committed first")
        current = self.load_metadata(identifier)
        for requirement in requirements:
            check_requirement(requirement, current.metadata)
        if self._unknown_next is not None:
            applied, self._unknown_next = self._unknown_next, None
            if applied:
                self._swap(identifier, current, updates)
            raise CommitStateUnknown("Injected: the commit outcome is unknown")
        result = self._swap(identifier, current, updates)
        self.commits += 1
        return result

    def _swap(self, identifier: Identifier, expected: CommitResult,
              updates: Sequence[TableUpdate]) -> CommitResult:
        new = MetadataBuilder(expected.metadata).apply_all(updates).build(
            previous_metadata_location=expected.metadata_location)
        with self._lock:
            if self._tables[identifier].metadata_location != expected.metadata_location:
                raise CommitFailed("The table changed while committing")
            result = CommitResult(new, self._location(new))
            self._tables[identifier] = result
        return result


def make_table(committer: InMemoryCommitter, location: str, *, format_version: FormatVersion = 2,
               properties: dict[str, str] | None = None, partitioned: bool = False) -> Table:
    spec = PartitionSpecBuilder(SCHEMA).identity("data").build() if partitioned else None
    metadata, _ = MetadataBuilder.new_table(
        SCHEMA, location, spec=spec, format_version=format_version,
        properties={**FAST_RETRIES, **(properties or {})})
    identifier = ("db", "t")
    return Table(identifier, committer.create(identifier, metadata), ArrowFileIO(), committer)


DAY_MS = 86_400_000
HEAD = -1  # land_snapshot's default parent: the branch's snapshot


def data_path(table: Table, name: str) -> str:
    return f"{table.location}/data/{name}.parquet"


def land_snapshot(committer: InMemoryCommitter, table: Table, added: Sequence[str] = (),
                  removed: Sequence[str] = (), *, deletes: Sequence[str] = (),
                  branch: str | None = "main", parent_id: int | None = HEAD,
                  timestamp_ms: int | None = None,
                  operation: Operation | None = None) -> Snapshot:
    """Another writer's snapshot, with real manifests and a manifest list: ``added`` data files
    and ``deletes`` position delete files (names, or full paths) are created on disk in a new
    manifest; ``removed`` files are marked DELETED in rewritten manifests; other manifests of
    the parent are carried over. The snapshot becomes ``branch``'s head (None: no ref)."""
    md = table.refresh().metadata
    io = table.io
    head = md.refs.get(branch) if branch else None
    if parent_id == HEAD:
        parent_id = None if head is None else head.snapshot_id
    parent = None if parent_id is None else md.snapshot_by_id(parent_id)
    snapshot_id = max((s.snapshot_id for s in md.snapshots), default=0) + 1
    sequence_number = md.last_sequence_number + 1 if md.format_version >= 2 else 0
    gone = {_path(table, name) for name in removed}
    manifests: list[ManifestFile] = []
    for manifest in [] if parent is None else snapshot_manifests(io, parent):
        entries = [e for e in read_manifest(io, manifest) if e.is_live]
        if not gone & {e.data_file.file_path for e in entries}:
            manifests.append(manifest)
            continue
        location = f"{md.location}/metadata/m-{snapshot_id}-{len(manifests)}.avro"
        with ManifestWriter(io, location, md.spec(), md.schema(), md.format_version,
                            manifest.content, snapshot_id) as writer:
            for entry in entries:
                (writer.delete if entry.data_file.file_path in gone else writer.existing)(entry)
        manifests.append(writer.to_manifest_file())
    for names, content in ((added, FileContent.DATA), (deletes, FileContent.POSITION_DELETES)):
        if not names:
            continue
        kind = ManifestContent.DATA if content is FileContent.DATA else ManifestContent.DELETES
        location = f"{md.location}/metadata/m-{snapshot_id}-{kind.name.lower()}.avro"
        with ManifestWriter(io, location, md.spec(), md.schema(), md.format_version, kind,
                            snapshot_id) as writer:
            for name in names:
                path = _path(table, name)
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(b"x" * 10)
                writer.add_file(DataFile(path, FileFormat.PARQUET,
                                         tuple(None for _ in md.spec().fields), 1, 10, content,
                                         md.default_spec_id))
        manifests.insert(0, writer.to_manifest_file())
    list_location = f"{md.location}/metadata/snap-{snapshot_id}.avro"
    write_manifest_list(io, list_location, md.format_version, snapshot_id, parent_id,
                        sequence_number, manifests)
    if operation is None:
        operation = (Operation.APPEND if not removed and not deletes
                     else Operation.DELETE if not added else Operation.OVERWRITE)
    snapshot = Snapshot(snapshot_id, parent_id, sequence_number, timestamp_ms or now_ms(),
                        list_location, Summary(operation), md.current_schema_id)
    updates: list[TableUpdate] = [u.AddSnapshot(snapshot)]
    if branch is not None:
        ref = (SnapshotRef.branch(snapshot_id) if head is None
               else replace(head, snapshot_id=snapshot_id))
        updates.append(u.SetSnapshotRef(branch, ref))
    committer.land(table.identifier, updates)
    table.refresh()
    return snapshot


def _path(table: Table, name: str) -> str:
    return name if "/" in name else data_path(table, name)


def live_files(table: Table, snapshot: Snapshot) -> set[str]:
    """The data and delete files live in a snapshot."""
    return {e.data_file.file_path for m in snapshot_manifests(table.io, snapshot)
            for e in read_manifest(table.io, m, discard_deleted=True)}
