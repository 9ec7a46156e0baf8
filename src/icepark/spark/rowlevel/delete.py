"""Row-level deletes through Spark: ``DELETE FROM table WHERE ...`` in one snapshot.

Planning is icepark's: ``table.scan(where).plan_files()`` on the branch gives the live data
files that may hold matching rows, with the delete files that apply to each. A file whose rows
all match (the strict projection of the filter on its partition, or its metrics:
:meth:`icepark.table.snapshot.validation.FileFilter.must_match`, the test ``table.delete`` uses) is
removed whole; the others are read by :func:`icepark.spark.reader.scan_rows.scan_rows` (the reader
of :func:`icepark.spark.reader.read.read`: by field ID or name mapping, with partition and default
fills, without the rows existing position and equality deletes already delete), and the live
rows matching the filter are counted per file. A file with no delete files whose every row
matches (matched count = ``record_count``) is removed whole too.

The table property ``write.delete.mode`` chooses what happens to the other files holding
matching rows (the reference implementation's names and default):

* ``copy-on-write`` (the default): they are rewritten without those rows by the writers of
  :func:`icepark.spark.writer.write.write`
  (:func:`icepark.spark.writer.data_files.write_data_files`:
  Spark's own Parquet writer where the schema allows, the Python workers otherwise; on the
  native path ``write.target-file-size-bytes`` is applied with the bytes per row of the files
  rewritten), and one ``overwrite`` snapshot removes them, the files removed whole, and adds
  the new files. As SQL's ``DELETE``, a row where the filter is null
  (``x > 5`` with ``x`` null) is kept.
* ``merge-on-read`` (v2 and later; spec: "Row-level deletes are not supported in v1"): the
  positions of their matching rows (file number and ``_metadata.row_index`` per row) are
  written in Spark tasks. On a v2 table they go to position delete files
  (:mod:`icepark.spark.rowlevel.delete_tasks`), "sorted by file_path then pos", one set per spec
  and partition of the data files. On a v3 table, where "Position delete files must not be
  added", each data file gets one deletion vector holding its new positions and those its
  earlier vector or position delete files deleted (:mod:`icepark.spark.rowlevel.dv_tasks`: one
  Puffin file per task); the vectors and single-file position delete files they replace are
  removed in the same commit. One row delta adds the delete files and removes the files
  removed whole (:meth:`icepark.table.snapshot.row_delta.RowDelta.remove_rows`), whose deletion
  vectors go with them. One Spark job does it all: the matched count per file is a window
  over the sorted positions, and the tasks drop (and report) the positions of the files that
  match whole instead of writing them.

On v3 tables a copy-on-write rewrite writes each moved row's ``_row_id`` and
``_last_updated_sequence_number`` into the new files (spec, *Row lineage assignment*).

When every file that holds matching rows is removed whole, no delete file is written: one
``delete`` snapshot removes them (both modes). Concurrent changes are validated from the
snapshot the delete read, with the filter as conflict filter, by
``write.delete.isolation-level`` (spec, *Commit Conflict Resolution and Retry*: "Delete
operations must verify that specific files to delete are still in the table"). On a task
failure or a known commit failure every file the job wrote is deleted (found by the job UUID in
their names or directory); on :class:`~icepark.errors.CommitStateUnknown` nothing is. When
nothing matches, nothing is committed.

Non-Parquet files are not supported (:class:`~icepark.errors.UnsupportedFeature`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.errors import CommitStateUnknown
from icepark.expressions import Expr
from icepark.expressions.bound import bind, referenced_ids, rewrite_not
from icepark.spark.filters import spark_filter
from icepark.spark.layout import read_columns
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.planning import plan_files
from icepark.spark.reader.scan_rows import FILE_NUMBER, ScanRows, scan_rows
from icepark.spark.rowlevel.changes import commit_rewrite
from icepark.spark.rowlevel.modes import (
    COPY_ON_WRITE,
    DELETE_MODE,
    MERGE_ON_READ,
    delete_granularity,
    row_level_mode,
)
from icepark.spark.rowlevel.positions import all_rows_match, write_deletes
from icepark.spark.writer.data_files import write_data_files
from icepark.spark.writer.write import JOB_ID_PROPERTY, head_id
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import LINEAGE_FIELDS
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.scan.tasks import FileScanTask
from icepark.table.snapshot.producer import branch_head
from icepark.table.snapshot.validation import (
    DELETE_ISOLATION_LEVEL,
    FileFilter,
    as_expr,
    isolation_level,
    may_apply,
)
from icepark.table.table import Table


@dataclass(frozen=True)
class DeleteResult:
    """What :func:`delete_rows` did."""

    deleted_rows: int
    """Rows removed from the table's current state."""
    removed_files: int
    """Data files removed whole."""
    rewritten_files: int
    """Data files rewritten (copy-on-write)."""
    delete_files: int
    """Position delete files (v2) or deletion vectors (v3) added (merge-on-read)."""
    snapshot_id: int | None
    """The new snapshot; None when nothing matched (no commit)."""


NOTHING = DeleteResult(0, 0, 0, 0, None)


def delete_mode(metadata: TableMetadata) -> str:
    """``write.delete.mode`` of a table (:func:`icepark.spark.rowlevel.modes.row_level_mode`)."""
    return row_level_mode(metadata, DELETE_MODE)


@dataclass(frozen=True)
class _Plan:
    """The files a delete touches and the filter as a Spark condition."""

    schema: Schema
    expr: Expr
    condition: Column
    filter_names: list[str]
    """The columns the filter reads."""
    whole: list[FileScanTask]
    """Files whose rows all match (by planning)."""
    partial: list[FileScanTask]
    """Files some of whose rows may match."""
    head_id: int | None

    @property
    def to_read(self) -> list[FileScanTask]:
        """The files whose matching live rows must be counted: the partial ones, and the
        whole ones with delete files (their live rows are not known from metadata)."""
        return [*self.partial, *(t for t in self.whole if t.delete_files)]

    def deleted_rows(self, counts: Mapping[str, int]) -> int:
        """Rows deleted, from the matched ``counts`` of :attr:`to_read`."""
        return sum(counts.values()) + sum(t.data_file.record_count for t in self.whole
                                          if not t.delete_files)


def delete_rows(spark: SparkSession, table: Table, where: str | Expr, *,
                branch: str = MAIN_BRANCH,
                snapshot_properties: Mapping[str, str] | None = None,
                progress: ProgressCallback | None = None) -> DeleteResult:
    """Delete the rows of ``table`` matching ``where`` on ``branch`` in one snapshot (see the
    module docstring); ``table`` is refreshed to the new version. ``progress`` receives the
    progress of its Spark jobs (:func:`icepark.spark.progress.track`)."""
    with track(spark, progress):
        return _delete_rows(spark, table, where, branch, snapshot_properties)


def _delete_rows(spark: SparkSession, table: Table, where: str | Expr, branch: str,
                 snapshot_properties: Mapping[str, str] | None) -> DeleteResult:
    mode = delete_mode(table.metadata)
    if mode == MERGE_ON_READ:
        delete_granularity(table.metadata)  # a bad value fails before any job
    plan = _plan(spark, table, as_expr(where), branch)
    if plan is None:
        return NOTHING
    properties = dict(snapshot_properties or {})
    if not plan.partial:
        to_read = plan.to_read
        counts = _matched_counts(_scan(spark, table, plan, to_read)) if to_read else {}
        return _delete_whole_files(table, plan, plan.whole, counts=counts, branch=branch,
                                   properties=properties)
    if mode == MERGE_ON_READ:
        return _merge_on_read(spark, table, plan, branch, properties)
    return _copy_on_write(spark, table, plan, branch, properties)


def _plan(spark: SparkSession, table: Table, expr: Expr, branch: str) -> _Plan | None:
    """Bind and translate the filter (unknown columns and untranslatable predicates fail
    here, before any job), then plan the files; None when no file may match."""
    metadata = table.metadata
    head = branch_head(metadata, branch)
    scan = table.scan(expr, ref=branch) if branch in metadata.refs else table.scan(expr)
    schema = scan.schema()
    bound = rewrite_not(bind(expr, schema))
    condition = spark_filter(bound, schema)
    if head is None or condition is False:
        return None
    names = sorted(n for i in referenced_ids(bound) if (n := schema.find_column_name(i)))
    # v3: the rows a rewrite moves keep their lineage, so their files' first row IDs and
    # data sequence numbers are planned too
    # the files' metrics of the filter's columns tell which files match entirely
    tasks = list(plan_files(spark, scan, stats_columns=referenced_ids(bound),
                            row_lineage=metadata.format_version >= 3))
    if not tasks:
        return None
    matches = FileFilter(metadata, expr)
    whole: list[FileScanTask] = []
    partial: list[FileScanTask] = []
    for t in tasks:
        (whole if matches.must_match(t.data_file) else partial).append(t)
    return _Plan(schema, expr, F.lit(condition) if isinstance(condition, bool) else condition,
                 names or [schema.fields[0].name], whole, partial, head.snapshot_id)


def _scan(spark: SparkSession, table: Table, plan: _Plan,
          tasks: Sequence[FileScanTask]) -> ScanRows:
    """The live rows of ``tasks`` matching the filter, with their file number and position."""
    return scan_rows(spark, table, tasks, plan.schema, plan.filter_names,
                     condition=plan.condition, positions=True)


def _matched_counts(scanned: ScanRows) -> dict[str, int]:
    """Rows per data file path of ``scanned.rows``; files without any are left out."""
    if not scanned.files:
        return {}
    counted = scanned.rows.groupBy(FILE_NUMBER).count().collect()
    return {scanned.files[row[0]].file_path: int(row[1]) for row in counted}


# ----------------------------------------------------------------------------- modes


def _delete_whole_files(table: Table, plan: _Plan, removed: Sequence[FileScanTask], *,
                        counts: Mapping[str, int], branch: str,
                        properties: dict[str, str]) -> DeleteResult:
    """Every file holding matching rows matches whole: remove them in a ``delete`` snapshot."""
    if not removed:
        return NOTHING
    (table.new_delete(branch=branch, snapshot_properties=properties)
     .delete_files([t.data_file for t in removed])
     .validate_no_conflicting_appends(plan.head_id, plan.expr)
     .isolation_level(isolation_level(table.metadata.properties, DELETE_ISOLATION_LEVEL))
     .commit())
    return DeleteResult(plan.deleted_rows(counts), len(removed), 0, 0,
                        head_id(table.metadata, branch))


def _copy_on_write(spark: SparkSession, table: Table, plan: _Plan, branch: str,
                   properties: dict[str, str]) -> DeleteResult:
    """Rewrite the files holding matching rows without them; remove the whole matches."""
    metadata = table.metadata
    counts = _matched_counts(_scan(spark, table, plan, plan.to_read))
    removed = [*plan.whole, *(t for t in plan.partial if all_rows_match(t, counts))]
    rewritten = [t for t in plan.partial
                 if counts.get(t.data_file.file_path, 0) > 0 and not all_rows_match(t, counts)]
    if not rewritten:
        return _delete_whole_files(table, plan, removed, counts=counts, branch=branch,
                                       properties=properties)
    schema = metadata.schema()
    # v3, *Row lineage assignment*: "The row's existing non-null ``_row_id`` must be copied
    # into the new data file" and, as the rows are not modified, "the existing non-null
    # ``_last_updated_sequence_number`` value must be copied to the new data file"
    lineage = [f.name for f in LINEAGE_FIELDS] if metadata.format_version >= 3 else []
    kept = scan_rows(spark, table, rewritten, schema, ["*"],
                     condition=~F.coalesce(plan.condition, F.lit(False)),
                     metadata_columns=lineage)
    old = [t.data_file for t in rewritten]  # their bytes per row predict the new files'
    row_bytes = sum(f.file_size_in_bytes for f in old) / sum(f.record_count for f in old)
    written = write_data_files(kept.rows.select(*read_columns(schema), *lineage), metadata,
                               table.io, row_bytes=row_bytes, lineage=bool(lineage))
    commit_rewrite(table, [t.data_file for t in (*removed, *rewritten)], written,
                   branch=branch, properties=properties, head_id=plan.head_id,
                   conflict_filter=plan.expr,
                   isolation=isolation_level(metadata.properties, DELETE_ISOLATION_LEVEL))
    return DeleteResult(plan.deleted_rows(counts), len(removed), len(rewritten), 0,
                        head_id(table.metadata, branch))


def _merge_on_read(spark: SparkSession, table: Table, plan: _Plan, branch: str,
                   properties: dict[str, str]) -> DeleteResult:
    """Write the positions of the matching rows to position delete files (v2) or deletion
    vectors (v3), except those of files removed whole
    (:func:`icepark.spark.rowlevel.positions.write_deletes`); one row delta adds them, removes
    the files removed whole and, on v3, the vectors and single-file position delete files the
    new vectors replace."""
    metadata = table.metadata
    # numbered in path order, so that the file numbers sort as the paths do
    to_read = sorted(plan.to_read, key=lambda t: t.data_file.file_path)
    scanned = _scan(spark, table, plan, to_read)
    written = write_deletes(spark, table, scanned.rows, scanned.files, to_read,
                            planned_whole={t.data_file.file_path for t in plan.whole},
                            from_scan=True)
    try:
        gone = {r.file_path for r in written.whole}
        removed = [*plan.whole, *(t for t in plan.partial if t.data_file.file_path in gone)]
        counts = {r.file_path: r.rows for r in written.whole}
        if not written.files:
            return _delete_whole_files(table, plan, removed, counts=counts, branch=branch,
                                       properties=properties)
        deleted = plan.deleted_rows(counts) + written.deleted_rows
        unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
        referenced = [t.data_file.file_path for t in plan.partial
                      if t.data_file.file_path not in gone
                      and any(may_apply(d, t.data_file, unpartitioned) for d in written.files)]
        delta = table.new_row_delta(
            branch=branch, snapshot_properties={**properties, JOB_ID_PROPERTY: written.job_id})
        for f in written.files:
            delta.add_deletes(f)
        for t in removed:
            delta.remove_rows(t.data_file)
        for replaced in written.replaced:
            delta.remove_deletes(replaced)
        (delta.validate_from_snapshot(plan.head_id)
         .validate_data_files_exist(referenced)
         .conflict_detection_filter(plan.expr)
         .validate_no_conflicting_data_files()
         .validate_no_new_delete_files()
         .commit())
    except CommitStateUnknown:
        raise
    except BaseException:
        written.abort(table)
        raise
    return DeleteResult(deleted, len(removed), 0, len(written.files),
                        head_id(table.metadata, branch))


__all__ = ["COPY_ON_WRITE", "DELETE_MODE", "MERGE_ON_READ", "DeleteResult", "delete_mode",
           "delete_rows"]
