"""Changelog planning: for each snapshot of a range, the data files it changed, read before and
after it.

Spec, *Snapshots*: a snapshot's manifests record "the snapshot ID in which the file was added"
(status 1, added) and deleted (status 2); *Row-level deletes*: "A data row is deleted if there
is an entry in a position delete file for the row's file and position", "... if there is an
entry in an equality delete file, and the row's values are equal", and a deletion vector
marks positions of one ``referenced_data_file``. So the rows a snapshot ``S`` changed are in
the data files it touched:

* the data files ``S`` added or removed (appends, overwrites, copy-on-write rewrites);
* the data files the delete files ``S`` added apply to: the ``referenced_data_file`` of a
  deletion vector or position delete file that names one, else every data file of the delete
  file's partition (every data file for an equality delete file of an unpartitioned spec,
  which "applies to all data files").

The changes of ``S`` are the multiset difference of those files' live rows before ``S`` (as of
its parent, with the parent's deletes) and after it (as of ``S``): rows only before are
deleted, rows only after inserted. A row a copy-on-write rewrite carried over unchanged is in
both and drops out, as the reference's changelog removes carry-over rows. ``replace``
snapshots ("without changing table data") are left out.

A :class:`ChangelogSnapshot` holds the two task lists of one snapshot; the Spark side
(:mod:`icepark.spark.streams.changes`) reads and compares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.manifest import DataFile, EntryStatus, FileContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.snapshots import Operation, Snapshot, ancestors_of
from icepark.table.scan.scan import TableScan
from icepark.table.scan.tasks import FileScanTask


@dataclass(frozen=True, slots=True)
class ChangelogSnapshot:
    """One snapshot's changed files: their tasks before it and after it."""

    snapshot: Snapshot
    ordinal: int
    """The snapshot's place in the range, from 0 (the reference's ``_change_ordinal``)."""
    before: tuple[FileScanTask, ...]
    after: tuple[FileScanTask, ...]


def changelog_snapshots(metadata: TableMetadata, start_snapshot_id: int | None,
                        end_snapshot_id: int | None) -> list[Snapshot]:
    """The snapshots after ``start_snapshot_id`` (exclusive; None: from the first) up to
    ``end_snapshot_id`` (inclusive; None: the current one), oldest first, along the end's
    history; ``replace`` snapshots are left out."""
    end = metadata.current_snapshot_id if end_snapshot_id is None else end_snapshot_id
    if end is None:
        return []
    if metadata.snapshot_by_id(end) is None:
        raise ValidationError(f"Cannot find the end snapshot {end}: it does not exist or has "
                              "expired")
    if start_snapshot_id is not None and metadata.snapshot_by_id(start_snapshot_id) is None:
        raise ValidationError(f"Cannot find the start snapshot {start_snapshot_id}: it does "
                              "not exist or has expired")
    chain: list[Snapshot] = []
    reached = start_snapshot_id is None
    for snapshot in ancestors_of(end, metadata.snapshots_by_id):
        if snapshot.snapshot_id == start_snapshot_id:
            reached = True
            break
        chain.append(snapshot)
    if not reached:
        raise ValidationError(f"Snapshot {start_snapshot_id} is not an ancestor of snapshot "
                              f"{end}: there is no linear history between them")
    return [s for s in reversed(chain) if s.operation is not Operation.REPLACE]


def plan_changelog(metadata: TableMetadata, file_io: FileIO,
                   snapshots: Sequence[Snapshot]) -> list[ChangelogSnapshot]:
    """The changed files of each of ``snapshots`` (see the module docstring)."""
    specs = {s.spec_id: s for s in metadata.partition_specs}
    planned_scans: dict[int, list[FileScanTask]] = {}  # one's "after" is its child's "before"

    def tasks(snapshot_id: int) -> list[FileScanTask]:
        if snapshot_id not in planned_scans:
            planned_scans[snapshot_id] = list(TableScan(
                metadata, file_io, snapshot_id=snapshot_id).plan_files(
                row_lineage=metadata.format_version >= 3))
        return planned_scans[snapshot_id]

    planned = []
    for ordinal, snapshot in enumerate(snapshots):
        added, removed, deletes = _own_entries(file_io, snapshot, specs)
        parent = snapshot.parent_snapshot_id
        before_all = (tasks(parent)
                      if parent is not None and metadata.snapshot_by_id(parent) is not None
                      else [])
        after_all = tasks(snapshot.snapshot_id)
        touched = {f.file_path for f in (*added, *removed)}
        for delete_file in deletes:
            touched |= _applies_to(delete_file, before_all)
        planned.append(ChangelogSnapshot(
            snapshot, ordinal,
            tuple(t for t in before_all if t.data_file.file_path in touched),
            tuple(t for t in after_all if t.data_file.file_path in touched)))
    return planned


def _own_entries(file_io: FileIO, snapshot: Snapshot, specs: Mapping[int, PartitionSpec]
                 ) -> tuple[list[DataFile], list[DataFile], list[DataFile]]:
    """The data files ``snapshot`` added and removed, and the delete files it added."""
    added: list[DataFile] = []
    removed: list[DataFile] = []
    deletes: list[DataFile] = []
    for manifest in snapshot_manifests(file_io, snapshot):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue  # entries another snapshot wrote: none is this one's change
        for entry in read_manifest(file_io, manifest, specs_by_id=specs):
            if entry.snapshot_id != snapshot.snapshot_id:
                continue
            data_file = entry.data_file
            if entry.status is EntryStatus.ADDED:
                if data_file.content is FileContent.DATA:
                    added.append(data_file)
                else:
                    deletes.append(data_file)
            elif entry.status is EntryStatus.DELETED and data_file.content is FileContent.DATA:
                removed.append(data_file)
    return added, removed, deletes


def _applies_to(delete_file: DataFile, candidates: Iterable[FileScanTask]) -> set[str]:
    """The paths of the data files among ``candidates`` that ``delete_file`` may apply to."""
    if delete_file.referenced_data_file is not None:
        return {delete_file.referenced_data_file}
    unpartitioned = delete_file.partition == () and delete_file.content is \
        FileContent.EQUALITY_DELETES
    return {t.data_file.file_path for t in candidates
            if unpartitioned or (t.data_file.spec_id == delete_file.spec_id
                                 and t.data_file.partition == delete_file.partition)}


__all__ = ["ChangelogSnapshot", "changelog_snapshots", "plan_changelog"]
