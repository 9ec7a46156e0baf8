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

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.errors import CommitStateUnknown, ValidationError
from icepark.expressions import Expr
from icepark.expressions.bound import bind, referenced_ids, rewrite_not
from icepark.spark.filters import spark_filter
from icepark.spark.layout import read_columns
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.scan_rows import FILE_NUMBER, ROW_POSITION, ScanRows, scan_rows
from icepark.spark.rowlevel import delete_tasks, dv_tasks
from icepark.spark.rowlevel.delete_tasks import GROUP_COLUMN, WHOLE_COLUMN, PositionDeleteTask
from icepark.spark.rowlevel.dv_tasks import DeletionVectorTask
from icepark.spark.writer.data_files import RECORDS, write_data_files
from icepark.spark.writer.tasks import delete_job_files
from icepark.spark.writer.write import JOB_ID_PROPERTY, head_id
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import LINEAGE_FIELDS
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.scan.delete_index import referenced_data_file
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

DELETE_MODE = "write.delete.mode"
"""Table property: ``copy-on-write`` (default) or ``merge-on-read``."""
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"


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
    """``write.delete.mode`` of a table: copy-on-write unless it says merge-on-read, which a
    v1 table cannot do ("Row-level deletes are not supported in v1")."""
    raw = metadata.properties.get(DELETE_MODE)
    mode = COPY_ON_WRITE if raw is None else raw.strip().lower()
    if mode not in (COPY_ON_WRITE, MERGE_ON_READ):
        raise ValidationError(f"Invalid table property {DELETE_MODE}={raw!r}: use "
                              f"{COPY_ON_WRITE} or {MERGE_ON_READ}")
    if mode == MERGE_ON_READ and metadata.format_version < 2:
        raise ValidationError(
            f"Cannot delete with {DELETE_MODE}={MERGE_ON_READ} on a v1 table: \"Row-level "
            "deletes are not supported in v1\"; upgrade the table to v2 or use "
            f"{COPY_ON_WRITE}")
    return mode


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
    plan = _plan(table, as_expr(where), branch)
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


def _plan(table: Table, expr: Expr, branch: str) -> _Plan | None:
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
    tasks = list(scan.plan_files(row_lineage=metadata.format_version >= 3))
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


def _all_match(task: FileScanTask, counts: Mapping[str, int]) -> bool:
    """Whether every row of a file without delete files matched."""
    count = counts.get(task.data_file.file_path, 0)
    return not task.delete_files and 0 < count == task.data_file.record_count


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
    removed = [*plan.whole, *(t for t in plan.partial if _all_match(t, counts))]
    rewritten = [t for t in plan.partial
                 if counts.get(t.data_file.file_path, 0) > 0 and not _all_match(t, counts)]
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
    try:
        (table.new_overwrite(branch=branch,
                             snapshot_properties={**properties, JOB_ID_PROPERTY: written.job_id})
         .delete_files([t.data_file for t in (*removed, *rewritten)]).add_files(written.files)
         .validate_no_conflicting_appends(plan.head_id, plan.expr)
         .isolation_level(isolation_level(metadata.properties, DELETE_ISOLATION_LEVEL))
         .commit())
    except CommitStateUnknown:
        raise
    except BaseException:
        written.abort(table.io)
        raise
    return DeleteResult(plan.deleted_rows(counts), len(removed), len(rewritten), 0,
                        head_id(table.metadata, branch))


def _merge_on_read(spark: SparkSession, table: Table, plan: _Plan, branch: str,
                   properties: dict[str, str]) -> DeleteResult:
    """Write the positions of the matching rows to position delete files (v2) or deletion
    vectors (v3), except those of files removed whole; one row delta adds them, removes the
    files removed whole and, on v3, the vectors and single-file position delete files the new
    vectors replace."""
    metadata = table.metadata
    # numbered in path order, so that the file numbers sort as the paths do
    to_read = sorted(plan.to_read, key=lambda t: t.data_file.file_path)
    scanned = _scan(spark, table, plan, to_read)
    vectors = metadata.format_version >= 3
    job_id, data_path, job = (_vector_job(spark, table, scanned, plan, to_read) if vectors
                              else _position_job(spark, metadata, scanned, plan, to_read))
    files: list[DataFile] = []
    try:
        files, whole, added = delete_tasks.collect(job)
        gone = {r.file_path for r in whole}
        removed = [*plan.whole, *(t for t in plan.partial if t.data_file.file_path in gone)]
        counts = {r.file_path: r.rows for r in whole}
        if not files:
            return _delete_whole_files(table, plan, removed, counts=counts, branch=branch,
                                       properties=properties)
        deleted = plan.deleted_rows(counts) + added
        unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
        referenced = [t.data_file.file_path for t in plan.partial
                      if t.data_file.file_path not in gone
                      and any(may_apply(d, t.data_file, unpartitioned) for d in files)]
        delta = table.new_row_delta(
            branch=branch, snapshot_properties={**properties, JOB_ID_PROPERTY: job_id})
        for f in files:
            delta.add_deletes(f)
        for t in removed:
            delta.remove_rows(t.data_file)
        for replaced in _replaced_deletes(files, to_read) if vectors else ():
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
        delete_job_files(table.io, data_path, job_id, [f.file_path for f in files])
        raise
    return DeleteResult(deleted, len(removed), 0, len(files), head_id(table.metadata, branch))


def _replaced_deletes(files: Sequence[DataFile], tasks: Sequence[FileScanTask]
                      ) -> list[DataFile]:
    """The live deletes that new deletion vectors replace: "there can be at most one deletion
    vector for a given data file", so the old vector goes; position delete files of that data
    file alone are merged into the vector and go too ("Position delete files that contain
    deletes for more than one data file need to be kept in table metadata until all deletes
    are replaced by DVs")."""
    by_path = {t.data_file.file_path: t for t in tasks}
    out: dict[object, DataFile] = {}
    for f in files:
        task = by_path.get(f.referenced_data_file or "")
        if task is None:
            continue
        for d in task.delete_files:
            if d.is_deletion_vector or (d.content is FileContent.POSITION_DELETES
                                        and referenced_data_file(d) == task.data_file.file_path):
                out[d.entry_key] = d
    return list(out.values())


def _position_job(spark: SparkSession, metadata: TableMetadata, scanned: ScanRows, plan: _Plan,
                  to_read: Sequence[FileScanTask]) -> tuple[str, str, DataFrame]:
    """The job writing position delete files (v2): its ID, data path and DataFrame."""
    task = _position_task(metadata, to_read)
    job = (_sorted_positions(spark, scanned, plan, to_read, task)
           .mapInArrow(delete_tasks.map_function(task), RECORDS))
    return task.job_id, task.data_path, job


def _vector_job(spark: SparkSession, table: Table, scanned: ScanRows, plan: _Plan,
                to_read: Sequence[FileScanTask]) -> tuple[str, str, DataFrame]:
    """The job writing deletion vectors (v3): its ID, data path and DataFrame."""
    metadata = table.metadata
    task = DeletionVectorTask(
        job_id=str(uuid.uuid4()), table_location=metadata.location,
        properties=dict(metadata.properties), schema=metadata.schema(),
        files={t.data_file.file_path: t.data_file for t in to_read},
        existing={t.data_file.file_path: tuple(
            d for d in t.delete_files if d.content is FileContent.POSITION_DELETES)
            for t in to_read},
        file_io=table.io)
    job = (_sorted_positions(spark, scanned, plan, to_read, None)
           .mapInArrow(dv_tasks.map_function(task), RECORDS))
    return task.job_id, task.data_path, job


def _position_task(metadata: TableMetadata, tasks: Sequence[FileScanTask]
                   ) -> PositionDeleteTask:
    """The write task, with one (spec, partition) group per partition of ``tasks``."""
    return PositionDeleteTask(
        job_id=str(uuid.uuid4()), table_location=metadata.location,
        properties=dict(metadata.properties), schema=metadata.schema(),
        specs={s.spec_id: s for s in metadata.partition_specs},
        groups=tuple(dict.fromkeys((t.data_file.spec_id, tuple(t.data_file.partition))
                                   for t in tasks)))


def _sorted_positions(spark: SparkSession, scanned: ScanRows, plan: _Plan,
                      tasks: Sequence[FileScanTask],
                      task: PositionDeleteTask | None) -> DataFrame:
    """``(group, file_path, pos, whole)`` of the matching live rows, sorted. With a position
    delete ``task``, each (spec, partition) group is in one Spark partition; without (for
    deletion vectors), each data file is. ``whole`` marks the rows of a file removed whole:
    one that planning found matching whole, or one without delete files whose matched rows
    are all its rows (counted per file by a window in the same job, without another scan)."""
    index = {} if task is None else {g: i for i, g in enumerate(task.groups)}
    number = {f.file_path: i for i, f in enumerate(scanned.files)}
    planned_whole = {t.data_file.file_path for t in plan.whole}
    keys = spark.createDataFrame(
        [(number[t.data_file.file_path], t.data_file.file_path,
          index.get((t.data_file.spec_id, tuple(t.data_file.partition)), 0),
          t.data_file.file_path in planned_whole,
          None if t.delete_files else t.data_file.record_count) for t in tasks],
        f"{FILE_NUMBER} int, file_path string, {GROUP_COLUMN} int, __icepark_planned boolean, "
        "__icepark_records long")
    spread = len(tasks) if task is None else len(task.groups)
    partitions = max(1, min(spread, spark.sparkContext.defaultParallelism))
    by = FILE_NUMBER if task is None else GROUP_COLUMN
    matched = F.count(F.lit(1)).over(Window.partitionBy(GROUP_COLUMN, FILE_NUMBER))
    return (scanned.rows.select(FILE_NUMBER, ROW_POSITION)
            .join(F.broadcast(keys), FILE_NUMBER)
            .repartition(partitions, by)
            .withColumn(WHOLE_COLUMN, F.col("__icepark_planned") | F.coalesce(
                matched == F.col("__icepark_records"), F.lit(False)))
            .sortWithinPartitions(GROUP_COLUMN, FILE_NUMBER, ROW_POSITION)
            .select(GROUP_COLUMN, "file_path", F.col(ROW_POSITION).alias("pos"),
                    WHOLE_COLUMN))


__all__ = ["COPY_ON_WRITE", "DELETE_MODE", "MERGE_ON_READ", "DeleteResult", "delete_mode",
           "delete_rows"]
