"""Snapshot references: create, replace, remove and rename branches and tags; move ``main``
(set the current snapshot, roll back) and fast-forward branches. Cherry-picking is in
:mod:`icepark.table.change.cherry_pick`, and :class:`~icepark.table.change.manage_snapshots.
ManageSnapshots` records several operations and commits them atomically.

Spec, *Snapshot Reference*: "Iceberg tables keep track of branches and tags using snapshot
references. Tags are labels for individual snapshots. Branches are mutable named references
that can be updated by committing a new snapshot as the branch's referenced snapshot using the
Commit Conflict Resolution and Retry procedures." And, *Table Metadata Fields*: "There is always
a ``main`` branch reference pointing to the ``current-snapshot-id``".

Every operation is a small :class:`~icepark.table.change.commit.Change` value that validates itself
against the version it is applied to and asserts, with ``AssertRefSnapshotId``, that each
reference it reads or writes has not moved; a retry replays it on the refreshed table.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.snapshots import Snapshot
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
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

import secrets
from dataclasses import dataclass, replace

from icepark.errors import AlreadyExists, ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    RefType,
    Snapshot,
    SnapshotRef,
    ancestors_of,
)
from icepark.table.change import updates as u
from icepark.table.change.schema_change import Changes

SOURCE_SNAPSHOT_ID = "source-snapshot-id"  # summary of a cherry-picked snapshot: its source
CARRIED_TOTALS = ("total-delete-files", "total-position-deletes", "total-equality-deletes")


def _ref(base: TableMetadata, name: str, ref_type: RefType | None, action: str) -> SnapshotRef:
    ref = base.refs.get(name)
    if ref is None:
        raise ValidationError(f"Cannot {action}: there is no branch or tag named {name!r}")
    if ref_type is not None and ref.ref_type is not ref_type:
        raise ValidationError(f"Cannot {action}: {name!r} is a {ref.ref_type}, not a {ref_type}")
    return ref


def snapshot_of(base: TableMetadata, snapshot_id: int, action: str) -> Snapshot:
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


def point_main(base: TableMetadata, snapshot_id: int) -> Changes:
    main = base.refs.get(MAIN_BRANCH)
    if main is None:
        return ([u.AssertRefSnapshotId(MAIN_BRANCH, None)],
                [u.SetSnapshotRef(MAIN_BRANCH, SnapshotRef.branch(snapshot_id))])
    return _point(MAIN_BRANCH, main, snapshot_id)


def main_lineage(base: TableMetadata, snapshot_id: int | None) -> list[Snapshot]:
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
        snapshot_of(base, self.ref.snapshot_id, action)
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
        snapshot_of(base, self.snapshot_id, action)
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
        snapshot_of(base, self.snapshot_id, f"set the current snapshot to {self.snapshot_id}")
        return point_main(base, self.snapshot_id)


@dataclass(frozen=True, slots=True)
class RollbackToSnapshot(_MetadataOnly):
    """Point main at an ancestor of the current snapshot."""

    snapshot_id: int

    def changes(self, base: TableMetadata) -> Changes:
        action = f"roll back to snapshot {self.snapshot_id}"
        snapshot_of(base, self.snapshot_id, action)
        if all(s.snapshot_id != self.snapshot_id
               for s in main_lineage(base, base.current_snapshot_id)):
            raise ValidationError(
                f"Cannot {action}: it is not an ancestor of the current snapshot "
                f"{base.current_snapshot_id}; use set_current_snapshot to move main anywhere")
        return point_main(base, self.snapshot_id)


@dataclass(frozen=True, slots=True)
class RollbackToTimestamp(_MetadataOnly):
    """Point main at the latest ancestor of the current snapshot older than ``timestamp_ms``
    (its ``timestamp-ms`` strictly before it)."""

    timestamp_ms: int

    def changes(self, base: TableMetadata) -> Changes:
        target = next((s for s in main_lineage(base, base.current_snapshot_id)
                       if s.timestamp_ms < self.timestamp_ms), None)
        if target is None:
            raise ValidationError(f"Cannot roll back to {self.timestamp_ms}: the current "
                                  "snapshot has no ancestor older than that")
        return point_main(base, target.snapshot_id)


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
        if all(s.snapshot_id != ref.snapshot_id for s in main_lineage(base, target.snapshot_id)):
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
