"""Table scans: choosing a snapshot, projecting columns, and planning the files to read.

Spec, *Scan Planning*: "Scans are planned by reading the manifest files for the current
snapshot. Deleted entries in data and delete manifests (those marked with status "DELETED")
are not used in a scan." and "Manifests that contain no matching files, determined using either
file counts or partition summaries, may be skipped." Then "For each manifest, scan predicates,
which filter data rows, are converted to partition predicates, which filter data and delete
files. ... This conversion uses the partition spec used to write the manifest file." and "Scan
predicates are also used to filter data and delete files using column bounds and counts".

:class:`TableScan` reads the snapshot's manifest list once and hands its manifests to a
:class:`~icepark.table.scan.planner.ManifestPlanner`, which skips manifests by their partition
summaries, indexes the delete files and streams the matching live data files, each with its
delete files and its residual; only the metrics the filter needs are decoded (see
:meth:`TableScan.plan_files`). :meth:`TableScan.plan_tasks` splits and bin-packs those tasks
(:mod:`icepark.table.scan.tasks`).

Decisions where the spec is silent, following the reference implementation: a scan of a tag,
a snapshot ID or a timestamp uses the schema of that snapshot (``schema-id``: "ID of the
table's current schema when the snapshot was created"); a scan of a branch uses the table's
current schema. The row filter names columns of that schema.

>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG),
...     NestedField.optional(2, "name", STRING)), "/tmp/t")
>>> scan = TableScan(md, ArrowFileIO(), row_filter="id > 5").select("name")
>>> print(scan.projection())
table {
  2: name: optional string
}
>>> list(scan.plan_files()), scan.count()
([], 0)
>>> scan.with_filter("nope = 1").count()
Traceback (most recent call last):
...
icepark.errors.ValidationError: Cannot find column 'nope' in the schema
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Self

from icepark.errors import NoSuchSnapshot, ValidationError
from icepark.expressions import (
    ALWAYS_TRUE,
    AlwaysTrue,
    Expr,
    StrictMetricsEvaluator,
    and_,
    bind,
    parse,
    referenced_ids,
)
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.spec.datetimes import iso_ms
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot
from icepark.spec.types import NestedField, PrimitiveType, StructType
from icepark.table.scan.planner import ManifestPlanner, presence_columns
from icepark.table.scan.tasks import CombinedScanTask, FileScanTask, plan_tasks, split_settings

__all__ = ["ManifestPlanner", "TableScan", "as_expr", "presence_columns", "scan_schema",
           "select_columns", "select_snapshot"]


def as_expr(row_filter: str | Expr) -> Expr:
    """A row filter given as text (see :func:`~icepark.expressions.parse`) or expression."""
    return parse(row_filter) if isinstance(row_filter, str) else row_filter


# ----------------------------------------------------------------------------- snapshots


def select_snapshot(metadata: TableMetadata, snapshot_id: int | None = None,
                    ref: str | None = None,
                    as_of_timestamp: int | None = None) -> Snapshot | None:
    """The snapshot a scan reads: by ID, by branch or tag name, or the one that was current at
    ``as_of_timestamp`` (ms) by the ``snapshot-log`` ("timestamp and snapshot ID pairs that
    encodes changes to the current snapshot for the table"); by default the current snapshot.
    None for a table without snapshots.
    """
    given = [name for name, value in (("snapshot_id", snapshot_id), ("ref", ref),
                                      ("as_of_timestamp", as_of_timestamp)) if value is not None]
    if len(given) > 1:
        raise ValidationError(f"A scan reads one snapshot: give at most one of snapshot_id, "
                              f"ref and as_of_timestamp, not {' and '.join(given)}")
    if snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise NoSuchSnapshot(f"Cannot find snapshot {snapshot_id}: it does not exist or "
                                 "has expired")
        return snapshot
    if ref is not None:
        found = metadata.refs.get(ref)
        if found is None:
            if ref == MAIN_BRANCH and metadata.current_snapshot_id is None:
                return None  # a table without snapshots has an empty main branch
            raise NoSuchSnapshot(f"Cannot find branch or tag {ref!r} (refs: "
                                 f"{', '.join(sorted(metadata.refs)) or 'none'})")
        return metadata.snapshot_by_id(found.snapshot_id)
    if as_of_timestamp is not None:
        return _snapshot_as_of(metadata, as_of_timestamp)
    return metadata.current_snapshot()


def _snapshot_as_of(metadata: TableMetadata, timestamp_ms: int) -> Snapshot:
    entry = None
    for logged in metadata.snapshot_log:
        if logged.timestamp_ms <= timestamp_ms and (
                entry is None or logged.timestamp_ms >= entry.timestamp_ms):
            entry = logged
    if entry is None:
        first = min((e.timestamp_ms for e in metadata.snapshot_log), default=None)
        raise NoSuchSnapshot(
            f"No snapshot was current at {iso_ms(timestamp_ms)}: "
            + ("the table has no snapshot log" if first is None
               else f"the snapshot log starts at {iso_ms(first)}"))
    snapshot = metadata.snapshot_by_id(entry.snapshot_id)
    if snapshot is None:
        raise NoSuchSnapshot(f"Snapshot {entry.snapshot_id}, current at "
                             f"{iso_ms(timestamp_ms)}, has expired")
    return snapshot


def scan_schema(metadata: TableMetadata, snapshot: Snapshot | None, *,
                time_travel: bool) -> Schema:
    """The schema a scan reads with: the snapshot's (its ``schema-id``) for time travel to a
    snapshot ID, tag or timestamp, else the table's current schema."""
    if time_travel and snapshot is not None and snapshot.schema_id is not None:
        schema = metadata.schema_by_id(snapshot.schema_id)
        if schema is not None:
            return schema
    return metadata.schema()


def select_columns(schema: Schema, names: Sequence[str], case_sensitive: bool = True) -> Schema:
    """``schema`` pruned to the named columns (full dotted names; ``*`` selects all).

    Selecting a struct keeps all of its fields; selecting a field nested in a struct keeps the
    struct with only the selected fields; selecting a field inside a list or map keeps the whole
    list or map. An unknown name is a :class:`ValidationError`.
    """
    if "*" in names:
        return schema
    ids = {schema.find_field(name, case_sensitive).field_id for name in names}
    fields = tuple(f for f in (_prune(f, ids) for f in schema.fields) if f is not None)
    kept = index_by_id(StructType(fields))
    return Schema(fields, schema.schema_id,
                  tuple(i for i in schema.identifier_field_ids if i in kept))


def _prune(f: NestedField, ids: set[int]) -> NestedField | None:
    if f.field_id in ids:
        return f
    t = f.field_type
    if isinstance(t, StructType):
        children = tuple(c for c in (_prune(c, ids) for c in t.fields) if c is not None)
        return replace(f, field_type=StructType(children)) if children else None
    if not isinstance(t, PrimitiveType) and ids & set(index_by_id(t)):
        return f
    return None


# ----------------------------------------------------------------------------- the scan


class TableScan:
    """A scan of one snapshot of a table: a row filter, the columns to read, and options.

    Fluent methods return new scans: :meth:`filter` (also :meth:`with_filter`) adds a
    conjunct, :meth:`select` narrows the columns, :meth:`use_ref`, :meth:`use_snapshot` and
    :meth:`as_of` choose the snapshot, :meth:`with_case_sensitive`, :meth:`with_options`,
    :meth:`with_limit` and :meth:`update` change the rest. ``options`` override the table
    properties ``read.split.target-size``, ``read.split.open-file-cost`` and
    ``read.split.planning-lookback``.
    """

    def __init__(  # noqa: PLR0917 - the agreed positional API, as pyiceberg's
            self, metadata: TableMetadata, file_io: FileIO,
                 row_filter: str | Expr = ALWAYS_TRUE, selected_fields: tuple[str, ...] = ("*",),
                 case_sensitive: bool = True, snapshot_id: int | None = None,
                 ref: str | None = None, as_of_timestamp: int | None = None,
                 options: Mapping[str, str] | None = None, limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValidationError(f"A scan limit cannot be negative: {limit}")
        self.metadata, self.io = metadata, file_io
        self.row_filter = as_expr(row_filter)
        self.selected_fields = tuple(selected_fields)
        self.case_sensitive = case_sensitive
        self.snapshot_id, self.ref, self.as_of_timestamp = snapshot_id, ref, as_of_timestamp
        self.options: Mapping[str, str] = dict(options or {})
        self.limit = limit
        self._snapshot = select_snapshot(metadata, snapshot_id, ref, as_of_timestamp)

    def __repr__(self) -> str:
        return (f"TableScan(filter={self.row_filter}, fields={self.selected_fields}, "
                f"snapshot={None if self._snapshot is None else self._snapshot.snapshot_id})")

    # ------------------------------------------------------------------ fluent copies

    def update(self, **overrides: Any) -> Self:
        """A copy with some constructor arguments replaced."""
        args: dict[str, Any] = {
            "row_filter": self.row_filter, "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive, "snapshot_id": self.snapshot_id,
            "ref": self.ref, "as_of_timestamp": self.as_of_timestamp,
            "options": self.options, "limit": self.limit}
        args.update(overrides)
        return type(self)(self.metadata, self.io, **args)

    def filter(self, expr: str | Expr) -> Self:
        """Keep only rows matching ``expr`` as well."""
        return self.update(row_filter=and_(self.row_filter, as_expr(expr)))

    def with_filter(self, expr: str | Expr) -> Self:
        """Same as :meth:`filter`."""
        return self.filter(expr)

    def select(self, *field_names: str) -> Self:
        """Read only these columns (of those already selected)."""
        if "*" in self.selected_fields:
            return self.update(selected_fields=field_names)
        return self.update(selected_fields=tuple(
            n for n in self.selected_fields if n in set(field_names)))

    def with_case_sensitive(self, case_sensitive: bool = True) -> Self:
        return self.update(case_sensitive=case_sensitive)

    def use_ref(self, name: str) -> Self:
        """Scan the head of a branch or the snapshot of a tag."""
        return self.update(ref=name)

    def use_snapshot(self, snapshot_id: int) -> Self:
        return self.update(snapshot_id=snapshot_id)

    def as_of(self, timestamp_ms: int) -> Self:
        """Scan the snapshot that was current at ``timestamp_ms``."""
        return self.update(as_of_timestamp=timestamp_ms)

    def with_options(self, **options: str) -> Self:
        return self.update(options={**self.options, **options})

    def with_limit(self, limit: int | None) -> Self:
        return self.update(limit=limit)

    # ------------------------------------------------------------------ what is read

    def snapshot(self) -> Snapshot | None:
        """The snapshot this scan reads (None: the table has none)."""
        return self._snapshot

    def schema(self) -> Schema:
        """The schema of the scanned snapshot, all columns (see the module docstring)."""
        time_travel = self.snapshot_id is not None or self.as_of_timestamp is not None or (
            self.ref is not None and self.ref in self.metadata.refs
            and not self.metadata.refs[self.ref].is_branch)
        return scan_schema(self.metadata, self._snapshot, time_travel=time_travel)

    def projection(self) -> Schema:
        """The schema of the rows this scan returns: :meth:`schema` pruned to the selected
        fields."""
        return select_columns(self.schema(), self.selected_fields, self.case_sensitive)

    # ------------------------------------------------------------------ planning

    def planner(self, *, include_column_stats: bool = False,
                stats_columns: Iterable[int] = (), row_lineage: bool = False
                ) -> ManifestPlanner:
        """The planner of this scan's filter (binding it: an unknown column or a literal of the
        wrong type is a :class:`ValidationError`)."""
        self.projection()  # unknown selected columns fail too
        return ManifestPlanner(self.metadata, self.io, self.schema(), self.row_filter,
                               case_sensitive=self.case_sensitive,
                               include_column_stats=include_column_stats,
                               stats_columns=stats_columns, row_lineage=row_lineage)

    def filter_columns(self) -> frozenset[int]:
        """The IDs of the columns the scan's filter reads (whose metrics a caller asks
        :meth:`plan_files` for to test the planned files against the filter again)."""
        return frozenset(referenced_ids(bind(self.row_filter, self.schema(),
                                             self.case_sensitive)))

    def plan_files(self, *, include_column_stats: bool = False,
                   stats_columns: Iterable[int] = (),
                   row_lineage: bool = False) -> Iterator[FileScanTask]:
        """One task per live data file that may hold matching rows, with the delete files that
        apply to it and its residual. Streams: manifests are decoded as tasks are consumed.
        A manifest missing from storage raises ``FileNotFound`` naming it.

        The data files of the tasks carry the value, null and NaN counts and bounds of the
        equality delete columns, of the :func:`presence_columns` and of ``stats_columns``
        (column IDs) only, their other metrics None; the filter's columns' metrics may be
        left out too (they are when the manifest reader's own test of the filter decided the
        file: see :meth:`ManifestPlanner.data_stats
        <icepark.table.scan.planner.ManifestPlanner.data_stats>`), so a caller testing the
        files against the filter again passes :meth:`filter_columns`; with
        ``include_column_stats`` every metric map of every column. Decoding every column's
        metrics is most of the cost of reading a manifest. Delete files keep all of theirs.
        With ``row_lineage``, the data files carry their inherited ``first_row_id`` and the
        tasks their data sequence number (for reading ``_row_id`` and
        ``_last_updated_sequence_number``)."""
        planner = self.planner(include_column_stats=include_column_stats,
                               stats_columns=stats_columns, row_lineage=row_lineage)
        snapshot = self._snapshot
        if snapshot is None:
            return iter(())
        return planner.plan(snapshot_manifests(self.io, snapshot))

    def plan_tasks(self) -> list[CombinedScanTask]:
        """The planned files split at their split offsets and bin-packed into tasks of about
        ``read.split.target-size`` bytes (default 128 MiB), each file weighing at least
        ``read.split.open-file-cost`` (4 MiB), with ``read.split.planning-lookback`` (10) bins
        open."""
        return plan_tasks(self.plan_files(),
                          *split_settings({**self.metadata.properties, **self.options}))

    def count(self) -> int | None:
        """The number of rows the scan returns, from metadata alone: the sum of the planned
        files' record counts, when no delete file applies to any and every file's rows all
        match (no residual, or the file's metrics prove it holds). None otherwise: the rows
        must be read to be counted. At most ``limit``."""
        schema = self.schema()
        strict: dict[Expr, StrictMetricsEvaluator] = {}
        total = 0
        for task in self.plan_files(stats_columns=self.filter_columns()):
            if task.delete_files:
                return None
            residual = task.residual
            if not isinstance(residual, AlwaysTrue):
                evaluator = strict.get(residual)
                if evaluator is None:
                    evaluator = strict[residual] = StrictMetricsEvaluator(schema, residual)
                if not evaluator.eval(task.data_file):
                    return None
            total += task.data_file.record_count
        return total if self.limit is None else min(total, self.limit)
