"""Incremental append scans: the data files appended between two snapshots.

Spec, *Snapshots*: the ``operation`` of a snapshot's summary "is used by some operations ... to
skip processing certain snapshots": ``append`` -- "Only data files were added and no files were
removed", ``replace`` -- "Data and delete files were added and removed without changing table
data", ``overwrite`` and ``delete`` change the table's rows. And *Manifest Entry Fields*:
"When a file is added to the dataset, its manifest entry should store the snapshot ID in which
the file was added and set status to 1 (added)."

An :class:`IncrementalAppendScan` plans the data files that the ``append`` snapshots after
``from_snapshot_id`` (exclusive) up to ``to_snapshot_id`` (inclusive) added, walking the parent
chain back from ``to_snapshot_id``: each snapshot's own manifests (those it wrote) are read once
and only their entries ADDED by an append in the range are kept. ``replace`` snapshots change no
rows and are skipped; an ``overwrite`` or ``delete`` in the range removes or deletes rows, which
an append-only change feed cannot express, so it is a :class:`ValidationError`. Delete files
never apply: a delete file applies only to data files at least as old as itself, and none was
added in the range.

>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/tmp/t")
>>> IncrementalAppendScan(md, ArrowFileIO(), from_snapshot_id=None).plan_files()
[]
>>> IncrementalAppendScan(md, ArrowFileIO(), from_snapshot_id=7)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Cannot find the starting snapshot 7: it does not exist or has \
expired
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from icepark.errors import ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr, and_
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.spec.manifest import ManifestContent, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot, ancestors_of
from icepark.table.scan.delete_index import DeleteIndex
from icepark.table.scan.scan import ManifestPlanner, as_expr, select_columns
from icepark.table.scan.tasks import CombinedScanTask, FileScanTask, plan_tasks, split_settings


class IncrementalAppendScan:
    """The data files appended in ``(from_snapshot_id, to_snapshot_id]`` (see the module
    docstring). ``from_snapshot_id`` None starts before the first snapshot of the chain;
    ``to_snapshot_id`` None is the current snapshot."""

    def __init__(  # noqa: PLR0917 - the agreed positional API
            self, metadata: TableMetadata, file_io: FileIO, from_snapshot_id: int | None,
                 to_snapshot_id: int | None = None, row_filter: str | Expr = ALWAYS_TRUE,
                 selected_fields: tuple[str, ...] = ("*",), case_sensitive: bool = True,
                 options: Mapping[str, str] | None = None) -> None:
        self.metadata, self.io = metadata, file_io
        self.row_filter = as_expr(row_filter)
        self.selected_fields = tuple(selected_fields)
        self.case_sensitive = case_sensitive
        self.options: Mapping[str, str] = dict(options or {})
        if from_snapshot_id is not None and metadata.snapshot_by_id(from_snapshot_id) is None:
            raise ValidationError(f"Cannot find the starting snapshot {from_snapshot_id}: it "
                                  "does not exist or has expired")
        if to_snapshot_id is None:
            to_snapshot_id = metadata.current_snapshot_id
        elif metadata.snapshot_by_id(to_snapshot_id) is None:
            raise ValidationError(f"Cannot find the end snapshot {to_snapshot_id}: it does not "
                                  "exist or has expired")
        self.from_snapshot_id, self.to_snapshot_id = from_snapshot_id, to_snapshot_id

    def filter(self, expr: str | Expr) -> IncrementalAppendScan:
        """Keep only rows matching ``expr`` as well."""
        return IncrementalAppendScan(
            self.metadata, self.io, self.from_snapshot_id, self.to_snapshot_id,
            and_(self.row_filter, as_expr(expr)), self.selected_fields, self.case_sensitive,
            self.options)

    def select(self, *field_names: str) -> IncrementalAppendScan:
        return IncrementalAppendScan(
            self.metadata, self.io, self.from_snapshot_id, self.to_snapshot_id,
            self.row_filter, field_names, self.case_sensitive, self.options)

    def schema(self) -> Schema:
        """The table's current schema (the appended rows are read as the table is now)."""
        return self.metadata.schema()

    def projection(self) -> Schema:
        return select_columns(self.schema(), self.selected_fields, self.case_sensitive)

    def snapshots(self) -> list[Snapshot]:
        """The append snapshots in the range, oldest first."""
        if self.to_snapshot_id is None or self.to_snapshot_id == self.from_snapshot_id:
            return []
        appends: list[Snapshot] = []
        reached = self.from_snapshot_id is None
        for snapshot in ancestors_of(self.to_snapshot_id, self.metadata.snapshots_by_id):
            if snapshot.snapshot_id == self.from_snapshot_id:
                reached = True
                break
            match snapshot.operation:
                case Operation.APPEND:
                    appends.append(snapshot)
                case Operation.REPLACE:
                    pass
                case Operation.OVERWRITE | Operation.DELETE as op:
                    raise ValidationError(
                        f"An incremental append scan cannot cross a {op.value} snapshot: "
                        f"snapshot {snapshot.snapshot_id} removed or deleted rows")
                case None:
                    raise ValidationError(
                        f"Snapshot {snapshot.snapshot_id} has no summary: an incremental "
                        "append scan cannot tell whether it only appended data")
        if not reached:
            raise ValidationError(
                f"Snapshot {self.from_snapshot_id} is not an ancestor of snapshot "
                f"{self.to_snapshot_id}: there is no linear history between them")
        return appends[::-1]

    def _manifests(self, appends: list[Snapshot]) -> list[ManifestFile]:
        """The data manifests the appends wrote, each once."""
        ids = {s.snapshot_id for s in appends}
        seen: set[str] = set()
        out = []
        for snapshot in appends:
            for m in snapshot_manifests(self.io, snapshot):
                if (m.content is ManifestContent.DATA and m.added_snapshot_id in ids
                        and m.manifest_path not in seen):
                    seen.add(m.manifest_path)
                    out.append(m)
        return out

    def plan_files_iter(self, *, row_lineage: bool = False) -> Iterator[FileScanTask]:
        """Stream the tasks of the appended data files that may hold matching rows (with
        ``row_lineage``, carrying what ``_row_id`` and ``_last_updated_sequence_number``
        need, as :meth:`TableScan.plan_files <icepark.table.scan.scan.TableScan.plan_files>`
        does)."""
        planner = ManifestPlanner(self.metadata, self.io, self.schema(), self.row_filter,
                                  case_sensitive=self.case_sensitive, row_lineage=row_lineage)
        self.projection()
        appends = self.snapshots()
        if not appends:
            return
        added_by = frozenset(s.snapshot_id for s in appends)
        empty = DeleteIndex.build(())
        for manifest in self._manifests(appends):
            if planner.manifest_may_match(manifest):
                yield from planner.tasks(manifest, empty, added_by)

    def plan_files(self, *, row_lineage: bool = False) -> list[FileScanTask]:
        """One task per appended data file that may hold matching rows, oldest first."""
        return list(self.plan_files_iter(row_lineage=row_lineage))

    def plan_tasks(self) -> list[CombinedScanTask]:
        """The planned files split and bin-packed as :meth:`TableScan.plan_tasks
        <icepark.table.scan.scan.TableScan.plan_tasks>` does."""
        return plan_tasks(self.plan_files_iter(), *split_settings(
            {**self.metadata.properties, **self.options}))
