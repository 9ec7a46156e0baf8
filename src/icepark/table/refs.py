"""Snapshot references: create, replace, remove and rename branches and tags; move ``main``
(set the current snapshot, roll back, cherry-pick) and fast-forward branches.

Spec, *Snapshot Reference*: "Iceberg tables keep track of branches and tags using snapshot
references. Tags are labels for individual snapshots. Branches are mutable named references
that can be updated by committing a new snapshot as the branch's referenced snapshot using the
Commit Conflict Resolution and Retry procedures." And, *Table Metadata Fields*: "There is always
a ``main`` branch reference pointing to the ``current-snapshot-id``".

Every operation is a small :class:`~icepark.table.commit.Change` value that validates itself
against the version it is applied to and asserts, with ``AssertRefSnapshotId``, that each
reference it reads or writes has not moved; a retry replays it on the refreshed table.
:class:`ManageSnapshots` records several operations and commits them atomically.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.snapshots import Snapshot
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> s1 = Snapshot(1, None, 1, md.last_updated_ms, "/t/metadata/snap-1.avro", None, 0)
>>> md = MetadataBuilder(md).apply(u.AddSnapshot(s1)).build()
>>> CreateRef("audit", SnapshotRef.tag(1)).changes(md)[1]
[SetSnapshotRef(ref_name='audit', ref=SnapshotRef(snapshot_id=1, ref_type=<RefType.TAG: \
'tag'>, min_snapshots_to_keep=None, max_snapshot_age_ms=None, max_ref_age_ms=None))]
>>> RemoveRef("main", RefType.BRANCH).changes(md)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Cannot remove the main branch: "There is always a main branch"
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from dataclasses import dataclass, replace

from icepark.errors import AlreadyExists, ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest import ManifestWriter, read_manifest
from icepark.io.manifest_list import snapshot_manifests, write_manifest_list
from icepark.spec.manifest import DataFile, EntryStatus, ManifestContent, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    Operation,
    RefType,
    Snapshot,
    SnapshotRef,
    Summary,
    ancestors_of,
)
from icepark.table import updates as u
from icepark.table.commit import Change
from icepark.table.metadata_builder import MetadataBuilder, now_ms
from icepark.table.schema_change import Changes, PendingUpdate, Submit

SOURCE_SNAPSHOT_ID = "source-snapshot-id"  # summary of a cherry-picked snapshot: its source
_CARRIED_TOTALS = ("total-delete-files", "total-position-deletes", "total-equality-deletes")


def _ref(base: TableMetadata, name: str, ref_type: RefType | None, action: str) -> SnapshotRef:
    ref = base.refs.get(name)
    if ref is None:
        raise ValidationError(f"Cannot {action}: there is no branch or tag named {name!r}")
    if ref_type is not None and ref.ref_type is not ref_type:
        raise ValidationError(f"Cannot {action}: {name!r} is a {ref.ref_type}, not a {ref_type}")
    return ref


def _snapshot(base: TableMetadata, snapshot_id: int, action: str) -> Snapshot:
    snapshot = base.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise ValidationError(f"Cannot {action}: the table has no snapshot {snapshot_id}")
    return snapshot


def _check_free(base: TableMetadata, name: str, action: str) -> None:
    """A new reference name: a non-empty string no branch or tag has."""
    if not isinstance(name, str) or not name:
        raise ValidationError(f"Cannot {action}: a reference name must be a non-empty string")
    existing = base.refs.get(name)
    if existing is not None:
        raise AlreadyExists(f"Cannot {action}: a {existing.ref_type} named {name!r} already "
                            "exists")


def _point(name: str, ref: SnapshotRef, snapshot_id: int) -> Changes:
    """Move an existing reference, keeping its retention settings."""
    if ref.snapshot_id == snapshot_id:
        return [], []
    return ([u.AssertRefSnapshotId(name, ref.snapshot_id)],
            [u.SetSnapshotRef(name, replace(ref, snapshot_id=snapshot_id))])


def _point_main(base: TableMetadata, snapshot_id: int) -> Changes:
    main = base.refs.get(MAIN_BRANCH)
    if main is None:
        return ([u.AssertRefSnapshotId(MAIN_BRANCH, None)],
                [u.SetSnapshotRef(MAIN_BRANCH, SnapshotRef.branch(snapshot_id))])
    return _point(MAIN_BRANCH, main, snapshot_id)


def _lineage(base: TableMetadata, snapshot_id: int | None) -> list[Snapshot]:
    return list(ancestors_of(snapshot_id, base.snapshots_by_id))  # newest first


class _MetadataOnly:
    """An operation that writes no files, so it has nothing to clean up."""

    __slots__ = ()

    def clean_up(self, committed: bool) -> None:
        pass


@dataclass(frozen=True, slots=True)
class CreateRef(_MetadataOnly):
    """Create a branch or tag; the name must be free (:class:`AlreadyExists`)."""

    name: str
    ref: SnapshotRef

    def changes(self, base: TableMetadata) -> Changes:
        action = f"create {self.ref.ref_type} {self.name!r}"
        _check_free(base, self.name, action)
        if self.name == MAIN_BRANCH and (not self.ref.is_branch or self.ref.max_ref_age_ms):
            raise ValidationError(f"Cannot {action}: main must be a branch, and \"The main "
                                  "branch never expires\"")
        _snapshot(base, self.ref.snapshot_id, action)
        return ([u.AssertRefSnapshotId(self.name, None)], [u.SetSnapshotRef(self.name, self.ref)])


@dataclass(frozen=True, slots=True)
class ReplaceRef(_MetadataOnly):
    """Point an existing branch (or tag) at another snapshot, keeping its retention settings."""

    name: str
    snapshot_id: int
    ref_type: RefType

    def changes(self, base: TableMetadata) -> Changes:
        action = f"replace {self.ref_type} {self.name!r}"
        ref = _ref(base, self.name, self.ref_type, action)
        _snapshot(base, self.snapshot_id, action)
        return _point(self.name, ref, self.snapshot_id)


@dataclass(frozen=True, slots=True)
class RemoveRef(_MetadataOnly):
    """Remove a branch or tag; "There is always a main branch", so main cannot be removed."""

    name: str
    ref_type: RefType

    def changes(self, base: TableMetadata) -> Changes:
        if self.name == MAIN_BRANCH:
            raise ValidationError(
                "Cannot remove the main branch: \"There is always a main branch\"")
        ref = _ref(base, self.name, self.ref_type, f"remove {self.ref_type} {self.name!r}")
        return ([u.AssertRefSnapshotId(self.name, ref.snapshot_id)],
                [u.RemoveSnapshotRef(self.name)])


@dataclass(frozen=True, slots=True)
class RenameBranch(_MetadataOnly):
    """Rename a branch (not main), keeping its snapshot and retention settings."""

    name: str
    new_name: str

    def changes(self, base: TableMetadata) -> Changes:
        action = f"rename branch {self.name!r} to {self.new_name!r}"
        if MAIN_BRANCH in (self.name, self.new_name):
            raise ValidationError(f"Cannot {action}: the main branch cannot be renamed or "
                                  "replaced by a rename")
        ref = _ref(base, self.name, RefType.BRANCH, action)
        _check_free(base, self.new_name, action)
        return ([u.AssertRefSnapshotId(self.name, ref.snapshot_id),
                 u.AssertRefSnapshotId(self.new_name, None)],
                [u.SetSnapshotRef(self.new_name, ref), u.RemoveSnapshotRef(self.name)])


@dataclass(frozen=True, slots=True)
class SetRetention(_MetadataOnly):
    """Set one retention setting of a reference (None: back to the table property default).

    ``min_snapshots_to_keep`` and ``max_snapshot_age_ms`` are "For branch type only";
    ``max_ref_age_ms`` is for "snapshot references except the main branch".
    """

    name: str
    setting: str
    value: int | None

    def changes(self, base: TableMetadata) -> Changes:
        action = f"set {self.setting} of {self.name!r}"
        ref = _ref(base, self.name, None, action)
        match self.setting:
            case "min_snapshots_to_keep":
                new = replace(ref, min_snapshots_to_keep=self.value)
            case "max_snapshot_age_ms":
                new = replace(ref, max_snapshot_age_ms=self.value)
            case "max_ref_age_ms" if self.name != MAIN_BRANCH or self.value is None:
                new = replace(ref, max_ref_age_ms=self.value)
            case _:
                raise ValidationError(f"Cannot {action}: unknown setting, or main (\"The main "
                                      "branch never expires\")")
        if new == ref:
            return [], []
        return ([u.AssertRefSnapshotId(self.name, ref.snapshot_id)],
                [u.SetSnapshotRef(self.name, new)])


@dataclass(frozen=True, slots=True)
class SetCurrentSnapshot(_MetadataOnly):
    """Point main at any snapshot of the table."""

    snapshot_id: int

    def changes(self, base: TableMetadata) -> Changes:
        _snapshot(base, self.snapshot_id, f"set the current snapshot to {self.snapshot_id}")
        return _point_main(base, self.snapshot_id)


@dataclass(frozen=True, slots=True)
class RollbackToSnapshot(_MetadataOnly):
    """Point main at an ancestor of the current snapshot."""

    snapshot_id: int

    def changes(self, base: TableMetadata) -> Changes:
        action = f"roll back to snapshot {self.snapshot_id}"
        _snapshot(base, self.snapshot_id, action)
        if all(s.snapshot_id != self.snapshot_id
               for s in _lineage(base, base.current_snapshot_id)):
            raise ValidationError(
                f"Cannot {action}: it is not an ancestor of the current snapshot "
                f"{base.current_snapshot_id}; use set_current_snapshot to move main anywhere")
        return _point_main(base, self.snapshot_id)


@dataclass(frozen=True, slots=True)
class RollbackToTimestamp(_MetadataOnly):
    """Point main at the latest ancestor of the current snapshot older than ``timestamp_ms``
    (its ``timestamp-ms`` strictly before it)."""

    timestamp_ms: int

    def changes(self, base: TableMetadata) -> Changes:
        target = next((s for s in _lineage(base, base.current_snapshot_id)
                       if s.timestamp_ms < self.timestamp_ms), None)
        if target is None:
            raise ValidationError(f"Cannot roll back to {self.timestamp_ms}: the current "
                                  "snapshot has no ancestor older than that")
        return _point_main(base, target.snapshot_id)


@dataclass(frozen=True, slots=True)
class FastForward(_MetadataOnly):
    """Move ``branch`` to the snapshot of the reference ``to``, only when the branch's
    snapshot is an ancestor of it (nothing on the branch is lost)."""

    branch: str
    to: str

    def changes(self, base: TableMetadata) -> Changes:
        action = f"fast-forward {self.branch!r} to {self.to!r}"
        ref = _ref(base, self.branch, RefType.BRANCH, action)
        target = _ref(base, self.to, None, action)
        if ref.snapshot_id == target.snapshot_id:
            return [], []
        if all(s.snapshot_id != ref.snapshot_id for s in _lineage(base, target.snapshot_id)):
            raise ValidationError(
                f"Cannot {action}: {self.branch!r} (snapshot {ref.snapshot_id}) is not an "
                f"ancestor of {self.to!r} (snapshot {target.snapshot_id})")
        requirements, updates = _point(self.branch, ref, target.snapshot_id)
        return [*requirements, u.AssertRefSnapshotId(self.to, target.snapshot_id)], updates


def new_snapshot_id(base: TableMetadata) -> int:
    """A random positive long ("A unique long ID") unused in ``base``."""
    while True:
        candidate = secrets.randbits(63)
        if candidate and base.snapshot_by_id(candidate) is None:
            return candidate


class CherryPick:
    """Apply a snapshot from another branch (or a staged one) to main.

    When the snapshot's parent is the current snapshot, main fast-forwards to it. Otherwise it
    must be an ``append`` ("Only data files were added and no files were removed"), and its
    added data files are appended to main as a new snapshot whose summary records
    ``source-snapshot-id``. The new manifests are written once and reused by retries
    ("a manifest can be written once and reused in commit retries. To change a sequence number
    for a retry, only the manifest list must be rewritten"). A snapshot that is already an
    ancestor of main, or was already picked into it, is rejected.
    """

    def __init__(self, snapshot_id: int, file_io: FileIO) -> None:
        self.snapshot_id = snapshot_id
        self._io = file_io
        self._new_id: int | None = None
        self._manifests: list[ManifestFile] | None = None
        self._added_size = 0
        self._written: list[str] = []
        self._kept: set[str] = set()

    def _plan(self, base: TableMetadata) -> tuple[Snapshot, bool]:
        """The picked snapshot and whether main can fast-forward to it."""
        action = f"cherry-pick snapshot {self.snapshot_id}"
        picked = _snapshot(base, self.snapshot_id, action)
        lineage = _lineage(base, base.current_snapshot_id)
        if any(s.snapshot_id == picked.snapshot_id for s in lineage):
            raise ValidationError(f"Cannot {action}: it is already an ancestor of the current "
                                  "snapshot")
        if any(s.summary is not None
               and s.summary.properties.get(SOURCE_SNAPSHOT_ID) == str(picked.snapshot_id)
               for s in lineage):
            raise ValidationError(f"Cannot {action}: it was already cherry-picked into main")
        if picked.parent_snapshot_id == base.current_snapshot_id:
            return picked, True
        if picked.operation is not Operation.APPEND:
            raise ValidationError(
                f"Cannot {action}: it is not based on the current snapshot, so it must be "
                f"re-applied, and only append snapshots can be (it is {picked.operation})")
        return picked, False

    def preview(self, base: TableMetadata) -> TableMetadata:
        """Validate against ``base``; the result of a fast-forward (else ``base``)."""
        picked, fast_forward = self._plan(base)
        if not fast_forward:
            return base
        return MetadataBuilder(base).apply_all(_point_main(base, picked.snapshot_id)[1]).build()

    def changes(self, base: TableMetadata) -> Changes:
        picked, fast_forward = self._plan(base)
        if fast_forward:
            self._kept = set()
            return _point_main(base, picked.snapshot_id)
        if self._manifests is None or self._new_id is None:
            self._new_id = new_snapshot_id(base)
            self._manifests = self._write_manifests(base, picked, self._new_id)
        if base.snapshot_by_id(self._new_id) is not None:
            raise ValidationError(f"Snapshot ID {self._new_id} was taken concurrently")
        parent = base.current_snapshot()
        sequence_number = base.last_sequence_number + 1 if base.format_version >= 2 else 0
        location = (f"{base.location}/metadata/snap-{self._new_id}-{len(self._written)}-"
                    f"{uuid.uuid4()}.avro")
        self._written.append(location)
        write_manifest_list(
            self._io, location, base.format_version, self._new_id,
            None if parent is None else parent.snapshot_id, sequence_number,
            [*self._manifests, *([] if parent is None else snapshot_manifests(self._io, parent))],
            properties=base.properties)
        self._kept = {location, *(m.manifest_path for m in self._manifests)}
        snapshot = Snapshot(self._new_id, None if parent is None else parent.snapshot_id,
                            sequence_number, now_ms(), location,
                            Summary(Operation.APPEND, self._summary(picked, parent)),
                            base.current_schema_id)
        _, updates = _point_main(base, snapshot.snapshot_id)
        return ([u.AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id)],
                [u.AddSnapshot(snapshot), *updates])

    def _write_manifests(self, base: TableMetadata, picked: Snapshot,
                         snapshot_id: int) -> list[ManifestFile]:
        """One new manifest per partition spec of the files ``picked`` added."""
        specs = {s.spec_id: s for s in base.partition_specs}
        added: dict[int, list[DataFile]] = {}
        for manifest in snapshot_manifests(self._io, picked):
            if (manifest.content is not ManifestContent.DATA
                    or manifest.added_snapshot_id != picked.snapshot_id):
                continue
            for entry in read_manifest(self._io, manifest, specs_by_id=specs,
                                       discard_deleted=True):
                if entry.status is EntryStatus.ADDED and entry.snapshot_id == picked.snapshot_id:
                    added.setdefault(manifest.partition_spec_id, []).append(entry.data_file)
        out: list[ManifestFile] = []
        for spec_id, files in added.items():
            spec = base.spec_by_id(spec_id)
            if spec is None:
                raise ValidationError(f"Cannot cherry-pick snapshot {picked.snapshot_id}: its "
                                      f"files use unknown partition spec {spec_id}")
            location = f"{base.location}/metadata/{uuid.uuid4()}-m{len(out)}.avro"
            self._written.append(location)
            with ManifestWriter(self._io, location, spec, base.schema(), base.format_version,
                                snapshot_id=snapshot_id, properties=base.properties) as writer:
                for data_file in files:
                    writer.add_file(data_file)
                    self._added_size += data_file.file_size_in_bytes
            out.append(writer.to_manifest_file())
        return out

    def _summary(self, picked: Snapshot, parent: Snapshot | None) -> dict[str, str]:
        manifests = self._manifests or []
        added = {"added-data-files": sum(m.added_files_count or 0 for m in manifests),
                 "added-records": sum(m.added_rows_count or 0 for m in manifests),
                 "added-files-size": self._added_size}
        props = {SOURCE_SNAPSHOT_ID: str(picked.snapshot_id),
                 **{key: str(value) for key, value in added.items()}}
        before = {} if parent is None or parent.summary is None else parent.summary.properties
        for total, key in (("total-data-files", "added-data-files"),
                           ("total-records", "added-records"),
                           ("total-files-size", "added-files-size")):
            previous = "0" if parent is None else before.get(total)
            if previous is not None and previous.isdigit():
                props[total] = str(int(previous) + added[key])
        props.update({key: before[key] for key in _CARRIED_TOTALS if key in before})
        return props

    def clean_up(self, committed: bool) -> None:
        """Delete what attempts wrote that the committed snapshot does not use."""
        keep = self._kept if committed else set()
        for location in self._written:
            if location not in keep:
                with contextlib.suppress(Exception):
                    self._io.delete(location)
        self._written = [loc for loc in self._written if loc in keep]


class ManageSnapshots(PendingUpdate):
    """Branch, tag and current-snapshot operations, checked as they are called and committed
    together (atomically) on :meth:`commit` or on leaving the ``with`` block."""

    def __init__(self, metadata: TableMetadata, submit: Submit, file_io: FileIO) -> None:
        super().__init__(metadata, submit)
        self._io = file_io
        self._ops: list[Change] = []
        self._state = metadata  # the version after the operations so far

    def _add(self, op: Change) -> ManageSnapshots:
        self._check_open()
        if isinstance(op, CherryPick):
            self._state = op.preview(self._state)
        else:
            _, updates = op.changes(self._state)
            self._state = MetadataBuilder(self._state).apply_all(updates).build()
        self._ops.append(op)
        return self

    def create_branch(self, name: str, snapshot_id: int | None = None, *,
                      min_snapshots_to_keep: int | None = None,
                      max_snapshot_age_ms: int | None = None,
                      max_ref_age_ms: int | None = None) -> ManageSnapshots:
        """A new branch at ``snapshot_id`` (default: the current snapshot)."""
        if snapshot_id is None:
            snapshot_id = self._state.current_snapshot_id
            if snapshot_id is None:
                raise ValidationError(f"Cannot create branch {name!r}: the table has no "
                                      "current snapshot; give a snapshot_id")
        return self._add(CreateRef(name, SnapshotRef.branch(
            snapshot_id, min_snapshots_to_keep=min_snapshots_to_keep,
            max_snapshot_age_ms=max_snapshot_age_ms, max_ref_age_ms=max_ref_age_ms)))

    def create_tag(self, name: str, snapshot_id: int,
                   max_ref_age_ms: int | None = None) -> ManageSnapshots:
        return self._add(CreateRef(name, SnapshotRef.tag(snapshot_id,
                                                         max_ref_age_ms=max_ref_age_ms)))

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        return self._add(ReplaceRef(name, snapshot_id, RefType.BRANCH))

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        return self._add(ReplaceRef(name, snapshot_id, RefType.TAG))

    def remove_branch(self, name: str) -> ManageSnapshots:
        return self._add(RemoveRef(name, RefType.BRANCH))

    def remove_tag(self, name: str) -> ManageSnapshots:
        return self._add(RemoveRef(name, RefType.TAG))

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        return self._add(RenameBranch(name, new_name))

    def set_min_snapshots_to_keep(self, branch: str, value: int | None) -> ManageSnapshots:
        return self._add(SetRetention(branch, "min_snapshots_to_keep", value))

    def set_max_snapshot_age_ms(self, branch: str, value: int | None) -> ManageSnapshots:
        return self._add(SetRetention(branch, "max_snapshot_age_ms", value))

    def set_max_ref_age_ms(self, name: str, value: int | None) -> ManageSnapshots:
        return self._add(SetRetention(name, "max_ref_age_ms", value))

    def set_current_snapshot(self, snapshot_id: int) -> ManageSnapshots:
        return self._add(SetCurrentSnapshot(snapshot_id))

    def rollback_to_snapshot(self, snapshot_id: int) -> ManageSnapshots:
        return self._add(RollbackToSnapshot(snapshot_id))

    def rollback_to_timestamp(self, timestamp_ms: int) -> ManageSnapshots:
        return self._add(RollbackToTimestamp(timestamp_ms))

    def fast_forward(self, branch: str, to: str) -> ManageSnapshots:
        return self._add(FastForward(branch, to))

    def cherry_pick(self, snapshot_id: int) -> ManageSnapshots:
        return self._add(CherryPick(snapshot_id, self._io))

    def _changes(self) -> list[Change]:
        return list(self._ops)
