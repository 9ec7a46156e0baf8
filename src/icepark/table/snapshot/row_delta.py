"""Row delta: add row-level delete files (position and equality) together with data files.

Spec, *Row-level Deletes*: "Row-level deletes are stored in delete files." and *Delete Formats*:
"Row-level delete files are tracked by manifests, like data files. A separate set of manifests
is used for delete files, but the manifest schemas are identical." A manifest "may store either
data files or delete files, but not both", so new delete files go to delete manifests
(``content`` = deletes). "Row-level deletes are not supported in v1": adding a delete file to a
v1 table is a :class:`ValidationError`.

The operation is ``delete`` when no data file is added and delete files are added or data
files removed ("Data files were removed and their contents logically deleted and/or delete
files were added to delete rows"), ``append`` when only data files are added ("Only data files
were added and no files were removed"), and ``overwrite`` otherwise ("Data and delete files
were added and removed in a logical overwrite operation"), e.g. for an update or merge.

Validation since the starting snapshot (:meth:`~RowDelta.validate_from_snapshot`, default: the
branch's snapshot when the action was created), within :meth:`~RowDelta.conflict_detection_filter`
(default: everything), following ``write.delete.isolation-level``:

* :meth:`~RowDelta.validate_data_files_exist`: the data files that position deletes refer to
  were not removed concurrently (by any overwrite, delete or replace), else the deletes would
  point at nothing and their rows come back after a compaction re-added them;
* :meth:`~RowDelta.validate_no_conflicting_data_files`: serializable only -- no data file that
  may hold matching rows was added concurrently;
* :meth:`~RowDelta.validate_no_new_delete_files`: no delete file that may delete matching rows
  was added concurrently (both levels: two deletes of the same row conflict).

>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.manifest import FileContent, FileFormat
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> pos = DataFile("/t/data/p.parquet", FileFormat.PARQUET, (), 2, 10,
...                FileContent.POSITION_DELETES)
>>> RowDelta(ArrowFileIO(), md).add_deletes(pos).operation
<Operation.DELETE: 'delete'>
>>> RowDelta(ArrowFileIO(), md).add_deletes(pos).add_rows(DataFile(
...     "/t/data/d.parquet", FileFormat.PARQUET, (), 1, 10)).operation
<Operation.OVERWRITE: 'overwrite'>
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Self

from icepark.errors import ValidationError
from icepark.expressions import Expr
from icepark.io.fileio import FileIO
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.snapshot.append import MergingSnapshotProducer
from icepark.table.snapshot.producer import Attempt
from icepark.table.snapshot.validation import (
    DELETE_ISOLATION_LEVEL,
    ConcurrentChanges,
    FileFilter,
    IsolationLevel,
    as_expr,
    isolation_level,
)


class RowDelta(MergingSnapshotProducer):
    """Add data files and position/equality delete files in one snapshot."""

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None,
                 case_sensitive: bool = True) -> None:
        super().__init__(file_io, base, branch=branch, snapshot_properties=snapshot_properties)
        self._case_sensitive = case_sensitive
        self._referenced: set[str] = set()
        self._conflict_filter: Expr | None = None
        self._check_data = False
        self._check_deletes = False
        self._isolation: IsolationLevel | None = None
        self._removes_rows = False

    @property
    def operation(self) -> Operation:
        adds_data = any(not f.is_delete for f, _ in self._added)
        adds_deletes = any(f.is_delete for f, _ in self._added)
        if adds_data and not adds_deletes and not self._to_remove:
            return Operation.APPEND
        if not adds_data and (adds_deletes or self._removes_rows):
            return Operation.DELETE
        return Operation.OVERWRITE

    def add_rows(self, data_file: DataFile) -> Self:
        """Add a data file (e.g. the new versions of updated rows)."""
        if data_file.is_delete:
            raise ValidationError(f"{data_file.file_path} is a delete file: use add_deletes")
        self._add(data_file)
        return self

    def add_deletes(self, delete_file: DataFile) -> Self:
        """Add a position or equality delete file (v2 and later)."""
        if not delete_file.is_delete:
            raise ValidationError(f"{delete_file.file_path} is a data file: use add_rows")
        self._add(delete_file)
        return self

    def remove_rows(self, data_file: DataFile | str) -> Self:
        """Remove a data file whose rows are all deleted (it must be live), instead of adding
        position deletes for each of its rows."""
        if isinstance(data_file, DataFile) and data_file.is_delete:
            raise ValidationError(f"{data_file.file_path} is a delete file: use remove_deletes")
        self._remove(data_file)
        self._removes_rows = True
        return self

    def remove_deletes(self, delete_file: DataFile | str) -> Self:
        """Remove a delete file that is no longer needed (it must be live)."""
        if isinstance(delete_file, DataFile) and not delete_file.is_delete:
            raise ValidationError(f"{delete_file.file_path} is a data file, not a delete file")
        self._remove(delete_file)
        return self

    def add_files(self, files: Iterable[DataFile]) -> Self:
        """Add data and delete files, each to its kind of manifest."""
        for f in files:
            self._add(f)
        return self

    def conflict_detection_filter(self, row_filter: Expr | str) -> Self:
        """The rows this change read and wrote: only concurrent changes that may touch them
        conflict."""
        self._check_open()
        expr = as_expr(row_filter)
        FileFilter(self._planned, expr, self._case_sensitive)
        self._conflict_filter = expr
        return self

    def validate_data_files_exist(self, paths: Iterable[str]) -> Self:
        """Fail if any of these data files (the targets of position deletes) was removed
        concurrently."""
        self._check_open()
        self._referenced.update(paths)
        return self

    def validate_no_conflicting_data_files(self) -> Self:
        """Serializable isolation: fail if matching data files were added concurrently."""
        self._check_open()
        self._check_data = True
        return self

    def validate_no_new_delete_files(self) -> Self:
        """Fail if matching delete files were added concurrently."""
        self._check_open()
        self._check_deletes = True
        return self

    def isolation_level(self, level: IsolationLevel | str) -> Self:
        """Override ``write.delete.isolation-level`` for this action."""
        self._isolation = IsolationLevel(level)
        return self

    def _validate(self, attempt: Attempt) -> None:
        if not (self._referenced or self._check_data or self._check_deletes):
            return
        changes = ConcurrentChanges(self._io, attempt.base, attempt.parent,
                                    self.starting_snapshot_id)
        changes.validate_data_files_exist(self._referenced)
        conflict = FileFilter(attempt.base, as_expr(self._conflict_filter),
                              self._case_sensitive)
        level = self._isolation or isolation_level(attempt.base.properties,
                                                   DELETE_ISOLATION_LEVEL)
        if self._check_data and level is IsolationLevel.SERIALIZABLE:
            changes.validate_added_data_files(conflict)
        if self._check_deletes:
            changes.validate_no_new_delete_files(conflict)
