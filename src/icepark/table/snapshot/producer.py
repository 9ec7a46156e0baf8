"""The base of every action that commits a snapshot: append, overwrite, delete, rewrite, row delta.

Spec, *Sequence Numbers*: "When a snapshot is created for a commit, it is optimistically assigned
the next sequence number, and it is written into the snapshot's metadata. If the commit fails and
must be retried, the sequence number is reassigned and written into new snapshot metadata." and
"Inheriting the sequence number from manifest metadata allows writing a new manifest once and
reusing it in commit retries. To change a sequence number for a retry, only the manifest list
must be rewritten".

A :class:`SnapshotProducer` is a :class:`~icepark.table.change.commit.Change`. Each call of
:meth:`~SnapshotProducer.changes` is one attempt on a (refreshed) table version: it allocates a
new snapshot ID and the next sequence number, re-reads the branch's manifest list, runs the
action's validation, removes the files to delete from the manifests that hold them (rewriting
those manifests), writes a new manifest list and returns the requirements (the table UUID and
the branch's snapshot) and updates (the snapshot and the branch). The manifests of new files are
written once, on the first attempt, with ``null`` snapshot IDs and sequence numbers for every
attempt to inherit (v1 has no inheritance, so there they carry the attempt's snapshot ID and are
rewritten when it changes). :meth:`~SnapshotProducer.clean_up` deletes what attempts wrote that
the committed snapshot does not use, or everything on a known failure, including the files the
caller registered with :meth:`~SnapshotProducer.delete_on_failure`. Data files handed in by the
caller are never deleted otherwise.
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Self

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import remember_manifest_list, snapshot_manifests
from icepark.io.manifest.manifest import (
    UNASSIGNED_SEQUENCE_NUMBER,
    ManifestWriter,
    read_manifest,
)
from icepark.io.manifest.manifest_list import (
    assign_first_row_ids,
    assign_sequence_numbers,
    write_manifest_list,
)
from icepark.spec.manifest import (
    DataFile,
    EntryKey,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot, SnapshotRef
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import now_ms
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.summary import (
    EMPTY_TOTALS,
    SummaryBuilder,
    custom_properties,
    has_totals,
    totals_of,
)

_MAX_LONG = (1 << 63) - 1


def new_snapshot_id(taken: Mapping[int, object] | Iterable[int] = ()) -> int:
    """"A unique long ID": a random positive 63-bit integer not among ``taken``.

    >>> 0 < new_snapshot_id({1: None}) <= 2**63 - 1
    True
    """
    used = set(taken)
    while True:
        candidate = secrets.randbits(63)
        if candidate and candidate not in used:
            return candidate


def branch_head(metadata: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot a commit to ``branch`` builds on: the branch's snapshot, or, for a branch
    that does not exist yet, the table's current snapshot (the new branch forks from it)."""
    ref = metadata.refs.get(branch)
    if ref is None:
        return metadata.current_snapshot()
    if not ref.is_branch:
        raise ValidationError(f"Cannot commit to {branch!r}: it is a tag, not a branch")
    return metadata.snapshot_by_id(ref.snapshot_id)


def has_live_files(manifest: ManifestFile) -> bool:
    """Whether a manifest may hold added or existing files (unknown counts: yes)."""
    return manifest.has_added_files() or manifest.has_existing_files()


@dataclass(slots=True)
class Attempt:
    """One call of ``changes(base)``: the table version it applies to and what it allocated."""

    base: TableMetadata
    parent: Snapshot | None
    parent_manifests: list[ManifestFile]
    snapshot_id: int
    sequence_number: int
    number: int
    summary: SummaryBuilder
    own: set[str] = field(default_factory=set)
    """Manifests written for this attempt (new files, rewritten or merged manifests)."""

    @property
    def writer_snapshot_id(self) -> int | None:
        """The snapshot ID written into new entries: None (inherited) from v2 on, since "v2 ...
        makes the snapshot ID optional"; v1 entries require it."""
        return self.snapshot_id if self.base.format_version == 1 else None

    def is_own_entry(self, manifest: ManifestFile, entry: ManifestEntry) -> bool:
        """Whether an entry read from a manifest was added or deleted by this attempt."""
        return manifest.manifest_path in self.own and entry.snapshot_id in (
            UNASSIGNED_SEQUENCE_NUMBER, self.snapshot_id)


class SnapshotProducer(ABC):
    """A change that commits one new snapshot to a branch (see the module docstring).

    ``base`` is the table version the action was planned against: its branch snapshot is the
    default starting point of conflict validation. ``snapshot_properties`` are custom summary
    entries (a ``snapshot-property.`` prefix is dropped).
    """

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None) -> None:
        if not branch:
            raise ValidationError("The branch name cannot be empty")
        self._io = file_io
        self._planned = base
        self.branch = branch
        head = branch_head(base, branch)
        self.starting_snapshot_id: int | None = None if head is None else head.snapshot_id
        self.format_version = base.format_version
        self._custom = custom_properties(snapshot_properties)
        self.commit_uuid = str(uuid.uuid4())
        self._added: list[tuple[DataFile, int | None]] = []
        self._to_remove: dict[EntryKey, DataFile | None] = {}
        """Files to remove by :attr:`~icepark.spec.manifest.DataFile.entry_key` (a deletion
        vector by its Puffin file and offset), with their record when the caller gave it."""
        self._attempts = 0
        self._manifest_count = 0
        self._written: list[str] = []
        self._caller_files: list[str] = []
        self._last_files: set[str] = set()
        self._new_cache: dict[int | None, list[ManifestFile]] = {}
        self._rewrite_cache: dict[tuple[str, frozenset[EntryKey], int | None],
                                  ManifestFile] = {}
        self._done = False

    # --------------------------------------------------------------------- what to change

    @property
    @abstractmethod
    def operation(self) -> Operation:
        """The summary's ``operation``."""

    def _add(self, data_file: DataFile, data_sequence_number: int | None = None) -> None:
        self._check_open()
        if data_file.is_delete and self.format_version < 2:
            raise ValidationError(f"Cannot add delete file {data_file.file_path}: \"Row-level "
                                  "deletes are not supported in v1\"; upgrade the table to v2")
        if data_file.is_deletion_vector and self.format_version < 3:
            raise ValidationError(f"Cannot add the deletion vector in {data_file.file_path} to "
                                  f"a format version {self.format_version} table: \"Deletion "
                                  "vectors are added in v3 and are not supported in v2 or "
                                  "earlier\"")
        if (data_file.content is FileContent.POSITION_DELETES and self.format_version >= 3
                and not data_file.is_deletion_vector):
            raise ValidationError(f"Cannot add position delete file {data_file.file_path} to a "
                                  f"format version {self.format_version} table: \"Position "
                                  "delete files must not be added to v3 tables\"; write "
                                  "deletion vectors")
        if data_sequence_number is not None and data_sequence_number < 0:
            raise ValidationError(f"Invalid data sequence number {data_sequence_number}")
        self._added.append((data_file, data_sequence_number))

    def _remove(self, data_file: DataFile | str) -> None:
        self._check_open()
        if isinstance(data_file, str):
            self._to_remove.setdefault(data_file, None)
        else:
            self._to_remove[data_file.entry_key] = data_file

    def validate_from_snapshot(self, snapshot_id: int | None) -> Self:
        """Validate concurrent changes since this snapshot (the one the caller read; None for
        an empty branch) instead of the branch's snapshot when the action was created."""
        self._check_open()
        self.starting_snapshot_id = snapshot_id
        return self

    def delete_on_failure(self, *locations: str) -> None:
        """Files the caller wrote for this change (e.g. the data files of an append): they are
        deleted if the commit fails for a known reason, and kept once it succeeds or its
        outcome is unknown."""
        self._caller_files.extend(locations)

    @property
    def added_files(self) -> list[DataFile]:
        return [f for f, _ in self._added]

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError(
                f"This {type(self).__name__} was already committed or cleaned up; create a new one")

    # --------------------------------------------------------------------- Change protocol

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        """Apply the action to ``base`` (one commit attempt); see the module docstring."""
        self._check_open()
        self.format_version = base.format_version
        ref = base.refs.get(self.branch)
        parent = branch_head(base, self.branch)
        self._attempts += 1
        attempt = Attempt(
            base=base, parent=parent, parent_manifests=snapshot_manifests(self._io, parent),
            snapshot_id=new_snapshot_id(base.snapshots_by_id),
            sequence_number=base.last_sequence_number + 1 if base.format_version >= 2 else 0,
            number=self._attempts, summary=SummaryBuilder(self._custom))
        self._validate(attempt)
        new = self._new_manifests(attempt)
        kept = self._filter_manifests(attempt)
        for data_file, _ in self._added:
            attempt.summary.added_file(data_file)
        manifests = self._merge(attempt, new, kept)
        summary = attempt.summary.build(self.operation, self._previous_totals(attempt))
        location = LocationProvider.of(base).manifest_list_location(
            attempt.snapshot_id, attempt.number, self.commit_uuid)
        first_row_id = added_rows = None
        if base.format_version >= 3:
            # *Snapshot Row IDs*: "A snapshot's first-row-id is assigned to the table's current
            # next-row-id on each commit attempt"
            first_row_id = base.next_row_id or 0
            manifests, added_rows = assign_first_row_ids(manifests, first_row_id)
        self._written.append(location)
        write_manifest_list(self._io, location, base.format_version, attempt.snapshot_id,
                            None if parent is None else parent.snapshot_id,
                            attempt.sequence_number, manifests, properties=base.properties,
                            first_row_id=first_row_id)
        if base.format_version >= 2:  # a v1 list reads back with sequence numbers 0
            remember_manifest_list(location, assign_sequence_numbers(
                manifests, attempt.snapshot_id, attempt.sequence_number))
        self._last_files = {location, *(m.manifest_path for m in manifests)}
        snapshot = Snapshot(
            snapshot_id=attempt.snapshot_id,
            parent_snapshot_id=None if parent is None else parent.snapshot_id,
            sequence_number=attempt.sequence_number, timestamp_ms=now_ms(),
            manifest_list=location, summary=summary, schema_id=base.current_schema_id,
            first_row_id=first_row_id, added_rows=added_rows)
        new_ref = (SnapshotRef.branch(snapshot.snapshot_id) if ref is None
                   else replace(ref, snapshot_id=snapshot.snapshot_id))
        requirements: list[u.TableRequirement] = []
        if base.table_uuid is not None:
            requirements.append(u.AssertTableUUID(base.table_uuid))
        requirements.append(u.AssertRefSnapshotId(
            self.branch, None if ref is None else ref.snapshot_id))
        return requirements, [u.AddSnapshot(snapshot), u.SetSnapshotRef(self.branch, new_ref)]

    def clean_up(self, committed: bool) -> None:
        """Delete the manifests and manifest lists no committed snapshot uses: those of earlier
        attempts after a commit, all of them (and the caller's registered files) otherwise."""
        if self._done:
            return
        self._done = True
        if committed:
            doomed = [p for p in self._written if p not in self._last_files]
        else:
            doomed = [*self._written, *self._caller_files]
        for location in dict.fromkeys(doomed):
            with contextlib.suppress(Exception):
                self._io.delete(location)
        self._new_cache.clear()
        self._rewrite_cache.clear()

    # --------------------------------------------------------------------- hooks

    def _validate(self, attempt: Attempt) -> None:
        """Check that the action still applies to ``attempt.base`` (raise ValidationError);
        by default there is nothing to check ("Append operations have no requirements")."""
        return None

    def _may_remove_from(self, attempt: Attempt, manifest: ManifestFile) -> bool:
        """Whether the manifest may hold a file to remove (else it is not read)."""
        if not self._to_remove or not has_live_files(manifest):
            return False
        contents = {None if f is None else f.content is not FileContent.DATA
                    for f in self._to_remove.values()}
        return None in contents or (manifest.content is ManifestContent.DELETES) in contents

    def _should_remove(self, attempt: Attempt, manifest: ManifestFile,
                       entry: ManifestEntry) -> bool:
        """Whether a live entry's file is removed by this action."""
        return entry.data_file.entry_key in self._to_remove

    def _keep(self, attempt: Attempt, manifest: ManifestFile) -> bool:
        """Whether an unchanged manifest of the parent stays in the new snapshot: one holding
        only files deleted by earlier snapshots is dropped."""
        return has_live_files(manifest)

    def _merge(self, attempt: Attempt, new: list[ManifestFile],
               kept: list[ManifestFile]) -> list[ManifestFile]:
        """The new snapshot's manifests (merging producers bin-pack small ones)."""
        return [*new, *kept]

    # --------------------------------------------------------------------- helpers

    def _previous_totals(self, attempt: Attempt) -> Mapping[str, str]:
        parent = attempt.parent
        if parent is None:
            return EMPTY_TOTALS
        if has_totals(parent.summary):
            assert parent.summary is not None
            return parent.summary.properties
        return totals_of(e.data_file for m in attempt.parent_manifests
                         for e in self.read_entries(attempt, m) if e.is_live)

    def read_entries(self, attempt: Attempt, manifest: ManifestFile) -> Iterator[ManifestEntry]:
        """The entries of a manifest, with inherited snapshot IDs and sequence numbers."""
        specs = {s.spec_id: s for s in attempt.base.partition_specs}
        return read_manifest(self._io, manifest, specs_by_id=specs)

    def spec_of(self, attempt: Attempt, spec_id: int) -> tuple[PartitionSpec, Schema]:
        """A partition spec of the table and the newest schema it binds to (the current one
        unless a source column was dropped since)."""
        spec = attempt.base.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"Unknown partition spec {spec_id}: it is not among the "
                                  "table's partition specs")
        base = attempt.base
        for schema in (base.schema(), *reversed(base.schemas)):
            try:
                spec.partition_type(schema)
            except ValidationError:
                continue
            return spec, schema
        raise ValidationError(f"Partition spec {spec_id} binds to none of the table's schemas")

    def new_manifest_writer(self, attempt: Attempt, spec_id: int,
                            content: ManifestContent) -> ManifestWriter:
        """A writer of a new manifest of this commit; the file is deleted by :meth:`clean_up`
        when no committed snapshot uses it."""
        spec, schema = self.spec_of(attempt, spec_id)
        location = LocationProvider.of(attempt.base).manifest_location(
            self.commit_uuid, self._manifest_count)
        self._manifest_count += 1
        self._written.append(location)
        attempt.own.add(location)
        return ManifestWriter(self._io, location, spec, schema, attempt.base.format_version,
                              content, attempt.writer_snapshot_id,
                              properties=attempt.base.properties)

    def _new_manifests(self, attempt: Attempt) -> list[ManifestFile]:
        """One manifest per partition spec and content for the added files, written once and
        reused (v1: once per snapshot ID)."""
        key = attempt.writer_snapshot_id
        cached = self._new_cache.get(key)
        if cached is None:
            groups: dict[tuple[bool, int], list[tuple[DataFile, int | None]]] = {}
            for data_file, seq in self._added:
                groups.setdefault((data_file.is_delete, data_file.spec_id), []).append(
                    (data_file, seq))
            cached = []
            for (is_delete, spec_id), files in sorted(groups.items()):
                content = ManifestContent.DELETES if is_delete else ManifestContent.DATA
                with self.new_manifest_writer(attempt, spec_id, content) as writer:
                    for data_file, seq in files:
                        writer.add_file(data_file, seq)
                cached.append(writer.to_manifest_file())
            self._new_cache = {key: cached}
        attempt.own.update(m.manifest_path for m in cached)
        return list(cached)

    def _filter_manifests(self, attempt: Attempt) -> list[ManifestFile]:
        """The parent's manifests with this action's files removed: a manifest holding some is
        rewritten with them as DELETED ("its manifest entry fields store the snapshot ID in
        which the file was deleted and status 2") and its other live files as EXISTING.

        Data manifests go first: "When removing a data file, writers must also remove any
        deletion vector that applies to that data file from delete manifests", so the
        deletion vectors of the data files removed go too."""
        found: set[EntryKey] = set()
        removed_data: set[str] = set()
        parents = attempt.parent_manifests
        out: list[ManifestFile | None] = [None] * len(parents)
        for i in sorted(range(len(parents)),
                        key=lambda i: parents[i].content is ManifestContent.DELETES):
            manifest = parents[i]
            dangling = (removed_data if manifest.content is ManifestContent.DELETES
                        else frozenset())
            removed: list[ManifestEntry] = []
            entries: list[ManifestEntry] = []
            if self._may_remove_from(attempt, manifest) or (
                    dangling and has_live_files(manifest)):
                entries = list(self.read_entries(attempt, manifest))
                removed = [e for e in entries if e.is_live and (
                    self._should_remove(attempt, manifest, e)
                    or (e.data_file.is_deletion_vector
                        and e.data_file.referenced_data_file in dangling))]
            if not removed:
                if self._keep(attempt, manifest):
                    out[i] = manifest
                continue
            keys = frozenset(e.data_file.entry_key for e in removed)
            for e in removed:
                attempt.summary.removed_file(e.data_file)
                if e.data_file.content is FileContent.DATA:
                    removed_data.add(e.data_file.file_path)
            found |= keys
            out[i] = self._rewrite(attempt, manifest, entries, keys)
        missing = sorted(map(str, set(self._to_remove) - found))
        if missing:
            raise ValidationError(
                f"Cannot remove {len(missing)} file(s) that are no longer in the table: "
                f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} (\"Replace "
                "operations must verify that the files that will be deleted are still in the "
                "table\")")
        return [m for m in out if m is not None]

    def _rewrite(self, attempt: Attempt, manifest: ManifestFile, entries: Sequence[ManifestEntry],
                 removed: frozenset[EntryKey]) -> ManifestFile:
        key = (manifest.manifest_path, removed, attempt.writer_snapshot_id)
        cached = self._rewrite_cache.get(key)
        if cached is not None:
            attempt.own.add(cached.manifest_path)
            return cached
        with self.new_manifest_writer(attempt, manifest.partition_spec_id,
                                      manifest.content) as writer:
            for entry in entries:
                if entry.status is EntryStatus.DELETED:
                    continue  # deleted by an earlier snapshot: not carried forward
                if entry.data_file.entry_key in removed:
                    writer.delete(entry)
                else:
                    writer.existing(entry)
        result = writer.to_manifest_file()
        self._rewrite_cache[key] = result
        return result
