"""Managing snapshots: branch, tag, current-snapshot and cherry-pick operations committed together.

Each operation is a :class:`~icepark.table.change.commit.Change` of
:mod:`icepark.table.change.refs` or :mod:`icepark.table.change.cherry_pick`; the builder checks
each against the version the ones before it produce, and commits them atomically.
"""

from __future__ import annotations

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import RefType, SnapshotRef
from icepark.table.change.cherry_pick import CherryPick
from icepark.table.change.commit import Change
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.change.refs import (
    CreateRef,
    FastForward,
    RemoveRef,
    RenameBranch,
    ReplaceRef,
    RollbackToSnapshot,
    RollbackToTimestamp,
    SetCurrentSnapshot,
    SetRetention,
)
from icepark.table.change.schema_change import PendingUpdate, Submit


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
