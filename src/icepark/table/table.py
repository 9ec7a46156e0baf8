"""The Table facade: a table's current version plus the ways to read and change it.

A :class:`Table` is a snapshot of the catalog's pointer: ``metadata`` does not change until
:meth:`Table.refresh` or a commit through this object. Every change goes through
:func:`icepark.table.change.commit.commit_with_retry`, which replays it on the refreshed table
after a
conflict.

Changes open as builders that commit on ``commit()`` or on leaving a ``with`` block:
``update_schema()``, ``update_spec()``, ``replace_sort_order()``, ``update_properties()`` and
``manage_snapshots()``; ``transaction()`` stages any number of changes and commits them at once.

Rows are written with the API of :class:`TableWrites` (also available on
transactions): ``append(data)``, ``overwrite(data, filter)``, ``delete(filter)``,
``delete_files(paths)`` and ``append_data_files(files)`` each commit one snapshot, to ``main`` or
the ``branch`` given; ``new_append()``, ``new_overwrite()``, ``new_delete()``, ``new_rewrite()``
and ``new_row_delta()`` open the snapshot producers themselves, bound to this table.
Reads pick a version by reference (:meth:`Table.snapshot_by_ref`) or by time
(:meth:`Table.snapshot_as_of`, from the snapshot log: "timestamp and snapshot ID pairs that
encodes changes to the current snapshot for the table").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Self

from icepark.errors import ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr
from icepark.io.fileio import FileIO
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import MetadataLogEntry, SnapshotLogEntry, TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef
from icepark.spec.sorting import SortOrder
from icepark.table.change.commit import (
    Change,
    CommitResult,
    Identifier,
    TableCommitter,
    commit_with_retry,
)
from icepark.table.change.manage_snapshots import ManageSnapshots
from icepark.table.change.schema_change import (
    FormatVersionChange,
    PropertiesChange,
    ReplaceSortOrder,
    UpdateProperties,
    UpdateSchema,
    UpdateSpec,
)
from icepark.table.change.statistics import UpdateStatistics
from icepark.table.maintenance.expire import ExpireResult, ExpireSnapshots, delete_unreachable_files
from icepark.table.scan.read import DataScan
from icepark.table.snapshot.append import merge_enabled
from icepark.table.snapshot.rewrite_manifests import RewriteManifests, RewriteManifestsResult
from icepark.table.snapshot.writes import (
    BoundDeleteFiles,
    BoundFastAppend,
    BoundMergeAppend,
    BoundOverwrite,
    BoundRewriteFiles,
    BoundRowDelta,
    WriteData,
    append_change,
    bind,
    overwrite_change,
)
from icepark.table.transaction import Transaction


class TableWrites:
    """The write API of :class:`~icepark.table.table.Table` and of its transactions: each
    method builds its change on ``metadata`` and hands it to ``_submit`` (commit, or stage)."""

    @property
    def io(self) -> FileIO:
        raise NotImplementedError

    @property
    def metadata(self) -> TableMetadata:
        raise NotImplementedError

    def _submit(self, changes: Sequence[Change]) -> None:
        raise NotImplementedError

    def append(self, data: WriteData, *, branch: str = MAIN_BRANCH,
               snapshot_properties: Mapping[str, str] | None = None) -> Self:
        """Append rows (see :mod:`icepark.table.snapshot.writes`): one ``append`` snapshot."""
        self._submit([append_change(self.io, self.metadata, data, branch=branch,
                                    snapshot_properties=snapshot_properties)])
        return self

    def append_data_files(self, files: Iterable[DataFile], *, branch: str = MAIN_BRANCH,
                          snapshot_properties: Mapping[str, str] | None = None) -> Self:
        """Register data files already written (they are never deleted by this call)."""
        self._submit([self.new_append(branch=branch, snapshot_properties=snapshot_properties)
                      .append_files(files)])
        return self

    def overwrite(self, data: WriteData, overwrite_filter: str | Expr = ALWAYS_TRUE, *,
                  branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None,
                  case_sensitive: bool = True) -> Self:
        """Replace the rows matching ``overwrite_filter`` (default: all) with ``data``, whose
        rows must all match it; whole files are removed (one ``overwrite`` snapshot)."""
        self._submit([overwrite_change(self.io, self.metadata, data, overwrite_filter,
                                       branch=branch, snapshot_properties=snapshot_properties,
                                       case_sensitive=case_sensitive)])
        return self

    def delete(self, delete_filter: str | Expr, *, branch: str = MAIN_BRANCH,
               snapshot_properties: Mapping[str, str] | None = None,
               case_sensitive: bool = True) -> Self:
        """Delete the rows matching ``delete_filter`` by removing whole data files; a file only
        partly matching fails with a :class:`ValidationError` (row-level deletes need a row
        delta)."""
        self._submit([self.new_delete(branch=branch, snapshot_properties=snapshot_properties,
                                      case_sensitive=case_sensitive).delete_where(delete_filter)])
        return self

    def delete_files(self, paths: Iterable[DataFile | str], *, branch: str = MAIN_BRANCH,
                     snapshot_properties: Mapping[str, str] | None = None) -> Self:
        """Remove files (records or paths) from the table; each must be live."""
        self._submit([self.new_delete(branch=branch, snapshot_properties=snapshot_properties)
                      .delete_files(paths)])
        return self

    def new_append(self, *, branch: str = MAIN_BRANCH,
                   snapshot_properties: Mapping[str, str] | None = None
                   ) -> BoundMergeAppend | BoundFastAppend:
        """The table's default append action, to fill and :meth:`~_Bound.commit`."""
        kind = BoundMergeAppend if merge_enabled(self.metadata.properties) else BoundFastAppend
        return bind(kind(self.io, self.metadata, branch=branch,
                          snapshot_properties=snapshot_properties), self._submit)

    def new_overwrite(self, *, branch: str = MAIN_BRANCH,
                      snapshot_properties: Mapping[str, str] | None = None,
                      case_sensitive: bool = True) -> BoundOverwrite:
        return bind(BoundOverwrite(self.io, self.metadata, branch=branch,
                                    snapshot_properties=snapshot_properties,
                                    case_sensitive=case_sensitive), self._submit)

    def new_delete(self, *, branch: str = MAIN_BRANCH,
                   snapshot_properties: Mapping[str, str] | None = None,
                   case_sensitive: bool = True) -> BoundDeleteFiles:
        return bind(BoundDeleteFiles(self.io, self.metadata, branch=branch,
                                      snapshot_properties=snapshot_properties,
                                      case_sensitive=case_sensitive), self._submit)

    def new_rewrite(self, *, branch: str = MAIN_BRANCH,
                    snapshot_properties: Mapping[str, str] | None = None) -> BoundRewriteFiles:
        return bind(BoundRewriteFiles(self.io, self.metadata, branch=branch,
                                       snapshot_properties=snapshot_properties), self._submit)

    def new_row_delta(self, *, branch: str = MAIN_BRANCH,
                      snapshot_properties: Mapping[str, str] | None = None,
                      case_sensitive: bool = True) -> BoundRowDelta:
        return bind(BoundRowDelta(self.io, self.metadata, branch=branch,
                                   snapshot_properties=snapshot_properties,
                                   case_sensitive=case_sensitive), self._submit)


class TableTransaction(Transaction["Table"], TableWrites):
    """A :class:`~icepark.table.transaction.Transaction` that also stages writes: data files
    are written at once against the staged metadata, and committed with the rest."""

    def __enter__(self) -> Self:
        return self

    @property
    def io(self) -> FileIO:
        return self._table.io


class Table(TableWrites):
    """An Iceberg table in a catalog.

    >>> import tempfile, pyarrow as pa
    >>> from icepark.catalog import FilesystemCatalog
    >>> from icepark.spec.types import LONG, STRING, NestedField
    >>> catalog = FilesystemCatalog("demo", {"warehouse": tempfile.mkdtemp()})
    >>> catalog.create_namespace("db")
    >>> table = catalog.create_table("db.t", Schema.of(NestedField.required(1, "id", LONG),
    ...                                                NestedField.optional(2, "s", STRING)))
    >>> table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", None]})).current_snapshot(
    ...     ).summary.properties["added-records"]
    '3'
    >>> table.delete("id >= 0").current_snapshot().summary.operation.value
    'delete'
    """

    def __init__(self, identifier: Identifier, current: CommitResult, file_io: FileIO,
                 committer: TableCommitter) -> None:
        self._identifier = identifier
        self._current = current
        self._file_io = file_io
        self._committer = committer

    def __repr__(self) -> str:
        return f"Table({'.'.join(self._identifier)!r}, {self.metadata_location!r})"

    @property
    def identifier(self) -> Identifier:
        return self._identifier

    @property
    def name(self) -> str:
        return ".".join(self._identifier)

    @property
    def metadata(self) -> TableMetadata:
        return self._current.metadata

    @property
    def metadata_location(self) -> str:
        return self._current.metadata_location

    @property
    def io(self) -> FileIO:
        return self._file_io

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties

    def schema(self) -> Schema:
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.metadata.snapshots)

    def history(self) -> list[SnapshotLogEntry]:
        return list(self.metadata.snapshot_log)

    def metadata_log(self) -> list[MetadataLogEntry]:
        return list(self.metadata.metadata_log)

    def refresh(self) -> Table:
        """Load the catalog's current version into this object."""
        self._current = self._committer.load_metadata(self._identifier)
        return self

    def refs(self) -> dict[str, SnapshotRef]:
        """Every branch and tag by name."""
        return dict(self.metadata.refs)

    def snapshot_by_ref(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points to; None if there is no such reference."""
        return self.metadata.snapshot_by_ref(name)

    def scan(self, row_filter: str | Expr = ALWAYS_TRUE, selected_fields: tuple[str, ...] = ("*",),
             *,
             case_sensitive: bool = True, snapshot_id: int | None = None,
             ref: str | None = None, as_of_timestamp: int | None = None,
             options: Mapping[str, str] | None = None, limit: int | None = None) -> DataScan:
        """A scan of the current snapshot (or of ``snapshot_id``, a branch or tag ``ref``, or
        the snapshot current at ``as_of_timestamp`` ms): ``.to_arrow()``, ``.to_batches()``,
        ``.count()``, ``.plan_files()``."""
        return DataScan(self.metadata, self.io, row_filter, selected_fields, case_sensitive,
                        snapshot_id, ref, as_of_timestamp, options, limit)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The table's current snapshot at ``timestamp_ms``, from the snapshot log: the last
        entry at or before that time. None when the log has no entry that old; an error when
        the snapshot current then has expired."""
        entry = None
        for logged in self.metadata.snapshot_log:
            if logged.timestamp_ms <= timestamp_ms:
                entry = logged
        if entry is None:
            return None
        snapshot = self.metadata.snapshot_by_id(entry.snapshot_id)
        if snapshot is None:
            raise ValidationError(f"The snapshot current at {timestamp_ms}, "
                                  f"{entry.snapshot_id}, has expired")
        return snapshot

    # ------------------------------------------------------------------------- changes

    def commit(self, *changes: Change) -> Table:
        """Commit ``changes`` atomically (replayed on the refreshed table after conflicts)."""
        if not changes:
            return self
        change = changes[0] if len(changes) == 1 else Transaction(self, changes)
        self._current = commit_with_retry(self._committer, self._identifier, self._current,
                                          change)
        return self

    def _submit(self, changes: Sequence[Change]) -> None:
        self.commit(*changes)

    def transaction(self) -> TableTransaction:
        """Stage changes (writes too) and commit them all at once."""
        return TableTransaction(self)

    def update_schema(self, allow_incompatible_changes: bool = False,
                      case_sensitive: bool = True) -> UpdateSchema:
        """Evolve the schema; methods as
        :class:`~icepark.spec.evolution.schema_update.SchemaUpdate`.
        """
        return UpdateSchema(self.metadata, self._submit,
                            allow_incompatible_changes=allow_incompatible_changes,
                            case_sensitive=case_sensitive)

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """Evolve the partition spec; methods as
        :class:`~icepark.spec.evolution.spec_update.SpecUpdate`."""
        return UpdateSpec(self.metadata, self._submit, case_sensitive=case_sensitive)

    def replace_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """A new default sort order, built with ``asc``/``desc``."""
        return ReplaceSortOrder(self.metadata, self._submit, case_sensitive=case_sensitive)

    def update_properties(self, updates: Mapping[str, str] | None = None,
                          removals: Sequence[str] = ()) -> UpdateProperties:
        """Set and remove properties (``set``/``remove``); commits on ``commit()`` or on
        leaving the ``with`` block."""
        return UpdateProperties(self.metadata, self._submit, updates, removals)

    def set_properties(self, updates: Mapping[str, str] | None = None,
                       **kwargs: str) -> Table:
        """Set table properties now."""
        return self._commit_if_needed(PropertiesChange({**(updates or {}), **kwargs}))

    def remove_properties(self, *keys: str) -> Table:
        """Remove table properties now (missing keys are ignored)."""
        return self._commit_if_needed(PropertiesChange({}, keys))

    def upgrade_format_version(self, format_version: int) -> Table:
        """Upgrade the format version now, keeping everything the table holds."""
        return self._commit_if_needed(FormatVersionChange(format_version))

    def _commit_if_needed(self, change: Change) -> Table:
        """Commit a metadata-only change unless it changes nothing in the current version
        (validating it either way)."""
        if not change.changes(self.metadata)[1]:
            return self
        return self.commit(change)

    def update_statistics(self) -> UpdateStatistics:
        """Register or unregister table and partition statistics files (spec, *Table
        Statistics*); commits on ``commit()`` or on leaving the ``with`` block. Expiring a
        snapshot deletes its statistics files."""
        return UpdateStatistics(self.metadata, self._submit)

    def manage_snapshots(self) -> ManageSnapshots:
        """Branch, tag and current-snapshot operations, committed together."""
        return ManageSnapshots(self.metadata, self._submit, self._file_io)

    def expire_snapshots(self, older_than_ms: int | None = None, retain_last: int | None = None,
                         snapshot_ids: Iterable[int] = (), *,
                         clean_files: bool = True) -> ExpireResult:
        """Expire snapshots by the retention policy (see :mod:`icepark.table.maintenance.expire`),
        then,
        once the commit succeeded, delete the files no retained snapshot reaches (unless
        ``clean_files`` is False). Nothing is deleted when the commit fails or its outcome is
        unknown."""
        ids = tuple(snapshot_ids)
        unknown = [i for i in ids if self.metadata.snapshot_by_id(i) is None]
        if unknown:
            raise ValidationError(f"Cannot expire unknown snapshot {unknown[0]}")
        change = ExpireSnapshots(older_than_ms, retain_last, ids)
        if not change.changes(self.metadata)[1]:
            return ExpireResult()
        self.commit(change)
        plan, base = change.last_plan, change.last_base or self.metadata
        result = (delete_unreachable_files(self._file_io, base, self.metadata) if clean_files
                  else ExpireResult())
        return replace(result, expired_snapshot_ids=plan.expired_snapshot_ids,
                       removed_refs=plan.removed_refs)

    def rewrite_manifests(self, *, spec_id: int | None = None,
                          sort_by: Sequence[str] | None = None,
                          target_size_bytes: int | None = None,
                          branch: str = MAIN_BRANCH) -> RewriteManifestsResult:
        """Rewrite the branch's manifests clustered by partition in one ``replace`` snapshot
        (see :mod:`icepark.table.snapshot.rewrite_manifests`); nothing is committed when no
        manifest needs it."""
        change = RewriteManifests(self.io, self.metadata, branch=branch, spec_id=spec_id,
                                  sort_by=sort_by, target_size_bytes=target_size_bytes)
        if not change.groups():
            return RewriteManifestsResult()
        self.commit(change)
        head = self.snapshot_by_ref(branch)
        return change.result(None if head is None else head.snapshot_id)
