"""Overwrite, delete and rewrite: actions that remove whole files (and may add new ones).

Spec, *Snapshots*: ``overwrite`` -- "Data and delete files were added and removed in a logical
overwrite operation"; ``delete`` -- "Data files were removed and their contents logically
deleted"; ``replace`` -- "Data and delete files were added and removed without changing table
data; i.e., compaction, changing the data file format, or relocating data files."

Spec, *Commit Conflict Resolution and Retry*: "Replace operations must verify that the files
that will be deleted are still in the table." and "Delete operations must verify that specific
files to delete are still in the table. Delete operations based on expressions can always be
applied". Every file named for removal (by record or path) must be live in the refreshed
branch, or the attempt fails with :class:`ValidationError`.

Removing by a row filter removes whole files only: a data file is removed when every row must
match (strict projection of the filter on its partition, or the strict metrics evaluator), is
left alone when no row can match (inclusive projection and metrics), and otherwise the action
fails: "Cannot delete part of file X without row-level deletes" (write delete files with a
row delta instead). The filter applies to data files; delete files are left in place even when
they only apply to removed data files (they are harmless, and dropped by a later rewrite).

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.manifest import FileFormat
>>> from icepark.spec.partitioning import PartitionSpecBuilder
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.table.snapshot.append import FastAppend
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "c", STRING))
>>> md, _ = MetadataBuilder.new_table(schema, tempfile.mkdtemp(),
...                                   spec=PartitionSpecBuilder(schema).identity("c").build())
>>> def commit(change, md):
...     _, updates = change.changes(md)
...     change.clean_up(committed=True)
...     return MetadataBuilder(md).apply_all(updates).build()
>>> io = ArrowFileIO()
>>> files = [DataFile(f"/d/{c}.parquet", FileFormat.PARQUET, (c,), 5, 100) for c in "ab"]
>>> md = commit(FastAppend(io, md).append_files(files), md)
>>> md = commit(DeleteFiles(io, md).delete_where("c = 'a'"), md)
>>> s = md.current_snapshot().summary
>>> s.operation.value, s.properties["deleted-data-files"], s.properties["total-records"]
('delete', '1', '5')
>>> commit(DeleteFiles(io, md).delete_where("c = 'b' AND id > 3"), md)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Cannot delete part of file /d/b.parquet without row-level \
deletes: only some of its rows may match c = 'b' AND id > 3; delete whole partitions or write \
delete files with a row delta
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar, Self

from icepark.errors import ValidationError
from icepark.expressions import Expr, or_
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.spec.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.snapshot.append import MergingSnapshotProducer
from icepark.table.snapshot.producer import Attempt, has_live_files
from icepark.table.snapshot.validation import (
    DELETE_ISOLATION_LEVEL,
    OVERWRITE_ISOLATION_LEVEL,
    ConcurrentChanges,
    FileFilter,
    IsolationLevel,
    as_expr,
    isolation_level,
)


class _FilterDelete(MergingSnapshotProducer):
    """Removes files by record, path or row filter; optionally validates concurrent changes."""

    isolation_property: ClassVar[str] = OVERWRITE_ISOLATION_LEVEL

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None,
                 case_sensitive: bool = True) -> None:
        super().__init__(file_io, base, branch=branch, snapshot_properties=snapshot_properties)
        self._row_filter: Expr | None = None
        self._case_sensitive = case_sensitive
        self._filters: dict[int, FileFilter] = {}
        self._conflict: tuple[int | None, Expr | None] | None = None
        self._isolation: IsolationLevel | None = None

    def delete_file(self, data_file: DataFile | str) -> Self:
        """Remove a file (a data or delete file record, or a path); it must be live."""
        self._remove(data_file)
        return self

    def delete_files(self, data_files: Iterable[DataFile | str]) -> Self:
        for data_file in data_files:
            self._remove(data_file)
        return self

    def delete_where(self, row_filter: Expr | str) -> Self:
        """Remove every data file whose rows all match ``row_filter`` (see the module
        docstring); calling it again removes the rows matching either filter."""
        self._check_open()
        expr = as_expr(row_filter)
        FileFilter(self._planned, expr, self._case_sensitive)  # reject unknown columns now
        self._row_filter = expr if self._row_filter is None else or_(self._row_filter, expr)
        return self

    def validate_no_conflicting_appends(self, from_snapshot_id: int | None,
                                        conflict_filter: Expr | str | None = None) -> Self:
        """Fail the commit when snapshots committed after ``from_snapshot_id`` (the snapshot
        the caller read; None for an empty table) changed rows matching ``conflict_filter``
        (default: the row filter, else everything). Serializable: added data files conflict;
        both levels: added delete files and removed data files conflict."""
        self._check_open()
        self._conflict = (from_snapshot_id, None if conflict_filter is None
                          else as_expr(conflict_filter))
        return self

    def isolation_level(self, level: IsolationLevel | str) -> Self:
        """Override the table property's isolation level for this action."""
        self._isolation = IsolationLevel(level)
        return self

    # ------------------------------------------------------------------------ hooks

    def _filter(self, attempt: Attempt) -> FileFilter | None:
        if self._row_filter is None:
            return None
        found = self._filters.get(attempt.number)
        if found is None:
            found = FileFilter(attempt.base, self._row_filter, self._case_sensitive)
            self._filters = {attempt.number: found}
        return found

    def _may_remove_from(self, attempt: Attempt, manifest: ManifestFile) -> bool:
        if super()._may_remove_from(attempt, manifest):
            return True
        row_filter = self._filter(attempt)
        return (row_filter is not None and manifest.content is ManifestContent.DATA
                and has_live_files(manifest) and row_filter.may_match_manifest(manifest))

    def _should_remove(self, attempt: Attempt, manifest: ManifestFile,
                       entry: ManifestEntry) -> bool:
        if super()._should_remove(attempt, manifest, entry):
            return True
        row_filter = self._filter(attempt)
        data_file = entry.data_file
        if row_filter is None or data_file.content is not FileContent.DATA:
            return False
        if not row_filter.may_match(data_file):
            return False
        if row_filter.must_match(data_file):
            return True
        raise ValidationError(
            f"Cannot delete part of file {data_file.file_path} without row-level deletes: only "
            f"some of its rows may match {row_filter}; delete whole partitions or write delete "
            "files with a row delta")

    def _validate(self, attempt: Attempt) -> None:
        if self._conflict is None:
            return
        from_id, conflict_expr = self._conflict
        expr = conflict_expr or self._row_filter or as_expr(None)
        conflict = FileFilter(attempt.base, expr, self._case_sensitive)
        level = self._isolation or isolation_level(attempt.base.properties,
                                                   self.isolation_property)
        changes = ConcurrentChanges(self._io, attempt.base, attempt.parent, from_id)
        if level is IsolationLevel.SERIALIZABLE:
            changes.validate_added_data_files(conflict)
        changes.validate_no_new_delete_files(conflict)
        changes.validate_deleted_data_files(conflict)
        changes.validate_no_new_deletes_for([f for f in self._to_remove.values()
                                             if f is not None and f.content is FileContent.DATA])


class Overwrite(_FilterDelete):
    """``overwrite``: remove files (by record, path or row filter) and add new data files."""

    @property
    def operation(self) -> Operation:
        return Operation.OVERWRITE

    def add_file(self, data_file: DataFile) -> Self:
        """Add a new data file."""
        if data_file.is_delete:
            raise ValidationError(f"Cannot add delete file {data_file.file_path} in an "
                                  "overwrite: use a row delta")
        self._add(data_file)
        return self

    def add_files(self, data_files: Iterable[DataFile]) -> Self:
        for data_file in data_files:
            self.add_file(data_file)
        return self


class DeleteFiles(_FilterDelete):
    """``delete``: remove whole files by record, path or row filter."""

    isolation_property = DELETE_ISOLATION_LEVEL

    @property
    def operation(self) -> Operation:
        return Operation.DELETE


class RewriteFiles(MergingSnapshotProducer):
    """``replace``: the same rows in new files (compaction, format change, relocation).

    Every removed file must still be live, and no delete file added since the starting snapshot
    (:meth:`validate_from_snapshot`, default: the branch's snapshot when the action was created)
    may apply to a removed data file, or its deletes would be lost. "It is also possible to add
    a new file with data that logically belongs to an older sequence number. In that case, the
    data sequence number must be provided explicitly": pass the replaced files' data sequence
    number so that deletes committed after them still apply (and then concurrent equality
    deletes do not conflict).
    """

    @property
    def operation(self) -> Operation:
        return Operation.REPLACE

    def rewrite(self, removed: Iterable[DataFile | str], added: Iterable[DataFile],
                data_sequence_number: int | None = None) -> Self:
        """Replace ``removed`` (records or paths) with ``added``."""
        for data_file in removed:
            self.delete_file(data_file)
        for new in added:
            self.add_file(new, data_sequence_number)
        return self

    def delete_file(self, data_file: DataFile | str) -> Self:
        self._remove(data_file)
        return self

    def add_file(self, data_file: DataFile, data_sequence_number: int | None = None) -> Self:
        self._add(data_file, data_sequence_number)
        return self

    def _validate(self, attempt: Attempt) -> None:
        for data_file, seq in self._added:
            if seq is not None and seq > attempt.base.last_sequence_number:
                raise ValidationError(
                    f"Data sequence number {seq} of {data_file.file_path} is above the table's "
                    f"last sequence number {attempt.base.last_sequence_number}")
        removed = [f for f in self._removed_records(attempt) if f.content is FileContent.DATA]
        new_data = [seq for f, seq in self._added if not f.is_delete]
        changes = ConcurrentChanges(self._io, attempt.base, attempt.parent,
                                    self.starting_snapshot_id)
        changes.validate_no_new_deletes_for(
            removed, ignore_equality_deletes=bool(new_data) and None not in new_data)

    def _removed_records(self, attempt: Attempt) -> list[DataFile]:
        """The records of the removed files (paths are looked up in the starting snapshot)."""
        records = [f for f in self._to_remove.values() if f is not None]
        paths = {p for p, f in self._to_remove.items() if f is None}
        if paths:
            start = (None if self.starting_snapshot_id is None
                     else attempt.base.snapshot_by_id(self.starting_snapshot_id))
            for manifest in snapshot_manifests(self._io, start):
                if manifest.content is ManifestContent.DATA and has_live_files(manifest):
                    records += [e.data_file for e in self.read_entries(attempt, manifest)
                                if e.is_live and e.data_file.file_path in paths]
        return records
