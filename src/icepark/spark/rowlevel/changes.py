"""Applying row-level changes in one snapshot: the engine behind UPDATE and MERGE.

An UPDATE or MERGE first computes, as one Spark DataFrame, every row it changes
(:class:`RowChanges`): each updated row with its new values and the data file number and
position of the row it replaces, each deleted row's file number and position, each inserted
row's values. This module does the rest, with the driver holding file lists and counts, never
rows. The changes are persisted (memory, else disk) so that the join computing them runs once,
then:

1. one aggregation per file counts the changes and checks that no target row was changed
   twice. SQL's MERGE: a target row "matched by more than one source row" where an update or
   delete applies is a **cardinality violation**
   (:class:`~icepark.errors.CardinalityViolation`), and nothing is written. A merge-on-read
   MERGE skips this job where it can (:func:`_counted_by_writes`: its source's row count,
   known from its key bounds, sizes the new rows' files; its delete files each name their
   data file; at most :data:`UNCOUNTED_FILES_LIMIT` files were read): its position delete job
   checks that no position comes twice, and the totals come from what the jobs wrote (with a
   count by kind run beside them when the clauses update, delete and insert). The job it
   saves is two shuffles over the changes, about a fifth of a small MERGE's time.
2. by the table's row-level mode (``write.update.mode``, ``write.merge.mode``; the reference
   implementation's names and default):

   * ``copy-on-write``: the data files holding changed rows are rewritten with their unchanged
     rows and the new rows by :func:`icepark.spark.writer.data_files.write_data_files`, and one
     ``overwrite`` snapshot removes the old files and adds the new ones. An operation that can
     compute the files' new contents itself (:attr:`RowChanges.rewrite`: MERGE, whose join
     already carries every target row) gives them in one pass: the changes are then not
     persisted, and the count above reads only the columns it needs. Otherwise the files are
     read again and their unchanged rows found by an anti-join on file number and position;
   * ``merge-on-read`` (v2 and later): the positions of the replaced and deleted rows go to
     position delete files (v2) or deletion vectors (v3) by
     :func:`icepark.spark.rowlevel.positions.write_deletes`, the new rows to new data files, and
     one row delta commits both, removing files none of whose rows survive and the deletion
     vectors the new ones replace.

Row lineage (v3), spec *Row lineage assignment*: "When an existing row is moved to a different
data file for any reason, writers should write ``_row_id`` and ``_last_updated_sequence_number``":
the row ID is copied, and "If the write has modified the row, the ``_last_updated_sequence_number``
field must be set to ``null``" while an unchanged row copied by a rewrite keeps its value.
Inserted rows have both null, so readers assign them from the new file.

Concurrency, spec *Commit Conflict Resolution and Retry*: the commit validates changes since the
snapshot the operation read, within its conflict filter, at the operation's isolation level
(``write.update.isolation-level``, ``write.merge.isolation-level``): ``serializable`` fails when
a concurrent commit added data files that may hold matching rows, both levels fail when one
removed a data file the change read or added delete files for its rows. A commit that loses a
race with a non-conflicting one is replayed on the new metadata (the snapshot producers retry).
On a job failure or a known commit failure every file the operation wrote is deleted; after
:class:`~icepark.errors.CommitStateUnknown` nothing is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.errors import CardinalityViolation, CommitStateUnknown, ValidationError
from icepark.expressions import Expr
from icepark.io.parquet.data_writer import ParquetWriteOptions
from icepark.spark.frames import local_frame
from icepark.spark.jobs import run_together
from icepark.spark.layout import read_columns
from icepark.spark.reader.deletes import BROADCAST_POSITIONS
from icepark.spark.reader.scan_rows import FILE_NUMBER, ROW_POSITION, scan_rows
from icepark.spark.rowlevel.modes import (
    COPY_ON_WRITE,
    FILE_GRANULARITY,
    MERGE_ON_READ,
    delete_granularity,
)
from icepark.spark.rowlevel.positions import WrittenDeletes, cardinality_message, write_deletes
from icepark.spark.schema import quote
from icepark.spark.session import default_parallelism
from icepark.spark.writer.data_files import WrittenFiles, task_error, write_data_files
from icepark.spark.writer.write import JOB_ID_PROPERTY, head_id
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from icepark.table.scan.delete_index import referenced_data_file
from icepark.table.scan.tasks import FileScanTask
from icepark.table.snapshot.validation import IsolationLevel, may_apply
from icepark.table.table import Table

KIND = "__icepark_kind"
"""The column saying what a changed row is: :data:`UPDATE`, :data:`DELETE` or :data:`INSERT`;
:data:`KEEP` for an unchanged row a copy-on-write rewrite copies."""
KEEP, UPDATE, DELETE, INSERT = 0, 1, 2, 3
NEW_ROW_ID = "__icepark_new_row_id"
"""The ``_row_id`` a new row is written with (v3): the replaced row's, null for an insert."""
NEW_SEQUENCE = "__icepark_new_seq"
"""The ``_last_updated_sequence_number`` a new row is written with (v3): null, "so that the
modification's sequence number replaces the current value"."""
UNCOUNTED_FILES_LIMIT = 1000
"""Merge-on-read changes of at most this many files read are counted by the jobs that write
them (:func:`_counted_by_writes`); beyond, a counting job first finds the files that change,
so that only those are handed to the position delete job."""


@dataclass(frozen=True)
class RowChanges:
    """The rows a row-level operation changes, and where they come from."""

    rows: DataFrame
    """The table's columns (table layout: :func:`icepark.spark.layout.read_columns`) holding
    the new values of updated and inserted rows, then :data:`FILE_NUMBER` and
    :data:`ROW_POSITION` of the replaced or deleted row (null for inserts), :data:`KIND`,
    :data:`NEW_ROW_ID` and :data:`NEW_SEQUENCE`."""
    files: tuple[DataFile, ...]
    """The target data files read, in path order: :data:`FILE_NUMBER` indexes them."""
    tasks: Sequence[FileScanTask]
    """Their planned tasks (with their delete files, and row lineage on v3)."""
    conflict_filter: Expr
    """The rows the operation read: what concurrent commits are checked against."""
    head_id: int | None
    """The branch head the operation read."""
    rewrite: Callable[[Sequence[int]], DataFrame] | None = None
    """For copy-on-write: given the numbers of the files that change, a DataFrame shaped as
    :attr:`rows` holding every row of those files (the unchanged ones as :data:`KEEP`, with
    their own lineage values) and the inserted rows. None: the files are read again."""
    kinds: frozenset[int] = frozenset({UPDATE, DELETE, INSERT})
    """The kinds of change :attr:`rows` can hold (a MERGE's: its clauses' actions)."""
    new_rows_estimate: int | None = None
    """About how many new rows :attr:`rows` holds, when known without a Spark job (a MERGE's
    source row count, which its key bounds counted): merge-on-read can then count the changes
    in the jobs that write them (the module docstring). None: they are counted first."""


@dataclass(frozen=True)
class ChangeResult:
    """What a row-level operation did."""

    inserted_rows: int
    updated_rows: int
    deleted_rows: int
    rewritten_files: int
    """Data files replaced by new ones (copy-on-write) or removed whole."""
    added_data_files: int
    added_delete_files: int
    """Position delete files (v2) or deletion vectors (v3) added (merge-on-read)."""
    snapshot_id: int | None
    """The new snapshot; None when nothing changed (no commit)."""

    @property
    def changed_rows(self) -> int:
        return self.inserted_rows + self.updated_rows + self.deleted_rows


@dataclass(frozen=True)
class _Counts:
    inserted: int
    updated: dict[int, int]
    deleted: dict[int, int]

    @property
    def touched(self) -> set[int]:
        return {n for n, c in (*self.updated.items(), *self.deleted.items()) if c}


def lineage_columns(metadata: TableMetadata) -> list[str]:
    """The row lineage columns a table's rewrites carry: both on v3, none before."""
    return [f.name for f in LINEAGE_FIELDS] if metadata.format_version >= 3 else []


def apply_changes(
        spark: SparkSession, table: Table, changes: RowChanges, *, mode: str,
        isolation: IsolationLevel, branch: str, operation: str,
        snapshot_properties: Mapping[str, str] | None = None) -> ChangeResult:
    """Commit ``changes`` to ``table`` in one snapshot by ``mode`` (see the module docstring);
    ``operation`` (``MERGE``, ``UPDATE``) names it in errors. ``table`` is refreshed. A value
    the tasks refuse (one that does not fit its column) is raised as the
    :class:`ValidationError` the task raised, not as Spark's wrapping of it."""
    try:
        return _apply(spark, table, changes, mode=mode, isolation=isolation, branch=branch,
                      operation=operation, snapshot_properties=snapshot_properties)
    except Exception as e:
        converted = task_error(e)
        if converted is e:
            raise
        raise converted from None


def _apply(
        spark: SparkSession, table: Table, changes: RowChanges, *, mode: str,
        isolation: IsolationLevel, branch: str, operation: str,
        snapshot_properties: Mapping[str, str] | None) -> ChangeResult:
    if mode not in {COPY_ON_WRITE, MERGE_ON_READ}:
        raise ValidationError(f"Unknown row-level mode {mode!r}")
    properties = dict(snapshot_properties or {})
    if mode == COPY_ON_WRITE and changes.rewrite is not None:
        counts = _count(changes.rows, changes.files, operation)
        if not (counts.inserted or counts.touched):
            return ChangeResult(0, 0, 0, 0, 0, 0, None)
        new = _new_rows(changes.rewrite(sorted(counts.touched)), table.metadata)
        return _copy_on_write(spark, table, changes, new, counts, isolation=isolation,
                              branch=branch, properties=properties)
    rows = changes.rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if mode == MERGE_ON_READ and _counted_by_writes(table.metadata, changes):
            return _merge_on_read(spark, table, changes, rows, None, operation=operation,
                                  isolation=isolation, branch=branch, properties=properties)
        counts = _count(rows, changes.files, operation)
        if not (counts.inserted or counts.touched):
            return ChangeResult(0, 0, 0, 0, 0, 0, None)
        if mode == COPY_ON_WRITE:
            new = _new_rows(rows, table.metadata)
            if counts.touched:
                new = _kept_rows(spark, table, changes, rows, counts).unionByName(new)
            return _copy_on_write(spark, table, changes, new, counts, isolation=isolation,
                                  branch=branch, properties=properties)
        return _merge_on_read(spark, table, changes, rows, counts, operation=operation,
                              isolation=isolation, branch=branch, properties=properties)
    finally:
        rows.unpersist()


def _count(rows: DataFrame, files: Sequence[DataFile], operation: str) -> _Counts:
    """Changed rows per file (one job), failing on a target row changed more than once."""
    per_row = rows.groupBy(FILE_NUMBER, ROW_POSITION).agg(
        F.count(F.lit(1)).alias("n"), *(_kind_count(k) for k in (UPDATE, DELETE, INSERT)))
    per_file = per_row.groupBy(FILE_NUMBER).agg(
        F.max("n").alias("most"), *(F.sum(f"k{k}").alias(f"k{k}")
                                    for k in (UPDATE, DELETE, INSERT))).collect()
    inserted, updated, deleted = 0, {}, {}
    for r in per_file:
        number = r[FILE_NUMBER]
        if number is None:
            inserted = int(r[f"k{INSERT}"])
            continue
        if r["most"] > 1:
            twice = per_row.where((F.col(FILE_NUMBER) == F.lit(number)) & (F.col("n") > 1))
            first = twice.select(ROW_POSITION).first()
            where = "" if first is None else f" (e.g. the row at position {first[0]})"
            raise CardinalityViolation(
                cardinality_message(operation, files[number].file_path, where))
        updated[number], deleted[number] = int(r[f"k{UPDATE}"]), int(r[f"k{DELETE}"])
    return _Counts(inserted, updated, deleted)


def _counted_by_writes(metadata: TableMetadata, changes: RowChanges) -> bool:
    """Whether a merge-on-read change can be counted by the jobs that write it: the number of
    new rows is known well enough to size their files (:attr:`RowChanges.new_rows_estimate`),
    the delete files written name the one data file each covers (deletion vectors, or v2
    position deletes of ``file`` granularity), so the files changed are known from them, and
    few enough files were read (:data:`UNCOUNTED_FILES_LIMIT`) to hand them all to the
    position delete job."""
    return (changes.new_rows_estimate is not None
            and len(changes.tasks) <= UNCOUNTED_FILES_LIMIT
            and (metadata.format_version >= 3
                 or delete_granularity(metadata) == FILE_GRANULARITY))


def _totals(kinds: frozenset[int], positions: int, new_rows: int,
            found: Mapping[int, int] | None) -> tuple[int, int, int]:
    """(inserted, updated, deleted) of changes of ``kinds`` that deleted ``positions`` rows
    (updated and deleted ones) and wrote ``new_rows`` (updated and inserted ones); ``found``:
    the rows counted by kind, when all three kinds can occur and two totals cannot tell them.

    >>> _totals(frozenset({UPDATE, INSERT}), 20, 50, None)
    (30, 20, 0)
    >>> _totals(frozenset({UPDATE, DELETE}), 20, 5, None)
    (0, 5, 15)
    """
    if found is not None:
        return found.get(INSERT, 0), found.get(UPDATE, 0), found.get(DELETE, 0)
    if DELETE not in kinds:
        return new_rows - positions, positions, 0
    if UPDATE not in kinds:
        return new_rows, 0, positions
    return 0, new_rows, positions - new_rows


def _kind_count(kind: int) -> Column:
    return F.sum((F.col(KIND) == F.lit(kind)).cast("long")).alias(f"k{kind}")


def _table_columns(metadata: TableMetadata) -> list[Column]:
    """The table's columns of changed rows, then their lineage columns on v3."""
    columns = [F.col(quote(f.name)) for f in metadata.schema().fields]
    if metadata.format_version >= 3:
        columns += [F.col(NEW_ROW_ID).alias(ROW_ID.name),
                    F.col(NEW_SEQUENCE).alias(LAST_UPDATED_SEQUENCE_NUMBER.name)]
    return columns


def _new_rows(rows: DataFrame, metadata: TableMetadata) -> DataFrame:
    return rows.where(F.col(KIND) != F.lit(DELETE)).select(*_table_columns(metadata))


def _row_bytes(files: Sequence[DataFile]) -> float | None:
    records = sum(f.record_count for f in files)
    return sum(f.file_size_in_bytes for f in files) / records if records else None


def _in_tasks_for(spark: SparkSession, new: DataFrame, metadata: TableMetadata, rows: int,
                  row_bytes: float | None) -> DataFrame:
    """``new`` (``rows`` rows) in as many tasks as files of ``write.target-file-size-bytes``
    they fill at ``row_bytes`` (the files read), at most the default parallelism, where the
    write does not distribute them itself (an unpartitioned, unsorted table): the changes of
    a join come in ``spark.sql.shuffle.partitions`` partitions, and a few thousand new rows
    would otherwise be written as that many small files, a task each."""
    if row_bytes is None or not metadata.spec().is_unpartitioned or \
            not metadata.sort_order().is_unsorted:
        return new
    target = ParquetWriteOptions.from_properties(metadata.properties).target_file_bytes
    return new.coalesce(max(1, min(default_parallelism(spark),
                                   math.ceil(rows * row_bytes / target))))


def _touched_tasks(changes: RowChanges, counts: _Counts) -> list[FileScanTask]:
    by_path = {t.data_file.file_path: t for t in changes.tasks}
    return [by_path[changes.files[n].file_path] for n in sorted(counts.touched)]


def _kept_rows(spark: SparkSession, table: Table, changes: RowChanges, rows: DataFrame,
               counts: _Counts) -> DataFrame:
    """The unchanged rows of the files holding changed rows, read again (table layout and
    lineage columns)."""
    metadata = table.metadata
    schema = metadata.schema()
    touched = sorted(counts.touched)
    lineage = lineage_columns(metadata)
    again = scan_rows(spark, table, _touched_tasks(changes, counts), schema, ["*"],
                      positions=True, metadata_columns=lineage)
    renumbered = {changes.files[n].file_path: n for n in touched}
    numbers = local_frame(
        spark,
        [(i, renumbered[f.file_path]) for i, f in enumerate(again.files)],
        f"{FILE_NUMBER} int, __icepark_old int")
    replaced = rows.where(F.col(KIND) != F.lit(INSERT)).select(
        F.col(FILE_NUMBER).alias("__icepark_old"), ROW_POSITION)
    # as the reader applies position deletes: a broadcast anti-join while the positions
    # are few enough, so the rewritten files' rows are not shuffled
    small = sum(counts.updated.values()) + sum(counts.deleted.values()) \
        <= BROADCAST_POSITIONS
    return (again.rows.join(F.broadcast(numbers), FILE_NUMBER)
            .join(F.broadcast(replaced) if small else replaced,
                  ["__icepark_old", ROW_POSITION], "left_anti")
            .select(*read_columns(schema), *lineage))


def _copy_on_write(
        spark: SparkSession, table: Table, changes: RowChanges, new: DataFrame,
        counts: _Counts, *, isolation: IsolationLevel, branch: str,
        properties: dict[str, str]) -> ChangeResult:
    """Write ``new`` (the changed files' new contents and the inserted rows) and replace the
    files holding changed rows with it."""
    metadata = table.metadata
    old = [t.data_file for t in _touched_tasks(changes, counts)]
    written = write_data_files(new, metadata, table.io,
                               row_bytes=_row_bytes(old) if old else None,
                               lineage=metadata.format_version >= 3)
    commit_rewrite(table, old, written, branch=branch, properties=properties,
                   head_id=changes.head_id, conflict_filter=changes.conflict_filter,
                   isolation=isolation)
    return ChangeResult(counts.inserted, sum(counts.updated.values()),
                        sum(counts.deleted.values()), len(old), len(written.files), 0,
                        head_id(table.metadata, branch))


def commit_rewrite(
        table: Table, removed: Sequence[DataFile], written: WrittenFiles, *, branch: str,
        properties: Mapping[str, str], head_id: int | None, conflict_filter: Expr,
        isolation: IsolationLevel) -> None:
    """Commit a copy-on-write rewrite: one ``overwrite`` snapshot removing ``removed`` and
    adding the ``written`` files, validated from ``head_id`` within ``conflict_filter``; on a
    known failure the written files are deleted (after :class:`CommitStateUnknown` not)."""
    try:
        (table.new_overwrite(branch=branch,
                             snapshot_properties={**properties, JOB_ID_PROPERTY: written.job_id})
         .delete_files(removed).add_files(written.files)
         .validate_no_conflicting_appends(head_id, conflict_filter)
         .isolation_level(isolation)
         .commit())
    except CommitStateUnknown:
        raise
    except BaseException:
        written.abort(table.io)
        raise


def _merge_on_read(
        spark: SparkSession, table: Table, changes: RowChanges, rows: DataFrame,
        counts: _Counts | None, *, operation: str, isolation: IsolationLevel, branch: str,
        properties: dict[str, str]) -> ChangeResult:
    """Delete the replaced rows by position and add the new rows in new data files. Without
    ``counts`` (:func:`_counted_by_writes`), the position delete job is given every file read
    and fails on a position given twice, and the totals come from what the jobs wrote."""
    metadata = table.metadata
    tasks: Sequence[FileScanTask]
    if counts is None:
        tasks = changes.tasks
        new_rows = changes.new_rows_estimate or 0
        writes_rows = bool(changes.kinds & {UPDATE, INSERT})
    else:
        touched = counts.touched
        number = {f.file_path: i for i, f in enumerate(changes.files)}
        tasks = [t for t in changes.tasks if number[t.data_file.file_path] in touched]
        new_rows = counts.inserted + sum(counts.updated.values())
        writes_rows = new_rows > 0
    deletes: WrittenDeletes | None = None
    written: WrittenFiles | None = None
    found: dict[int, int] | None = None

    def write_positions() -> WrittenDeletes:
        positions = rows.where(F.col(KIND) != F.lit(INSERT)).select(FILE_NUMBER, ROW_POSITION)
        return write_deletes(spark, table, positions, changes.files, tasks,
                             unique=operation if counts is None else None)

    def write_rows() -> WrittenFiles:
        return write_data_files(
            _in_tasks_for(spark, _new_rows(rows, metadata), metadata, new_rows,
                          _row_bytes(changes.files)),
            metadata, table.io, lineage=metadata.format_version >= 3)

    def count_kinds() -> dict[int, int]:
        return {int(r[0]): int(r[1]) for r in rows.groupBy(KIND).count().collect()}

    try:
        # the jobs read the persisted changes and need nothing of each other: at once
        actions: list[Callable[[], WrittenDeletes | WrittenFiles | dict[int, int]]] = [
            *([write_positions] if tasks and changes.kinds & {UPDATE, DELETE} else []),
            *([write_rows] if writes_rows else []),
            *([count_kinds] if counts is None and changes.kinds >= {UPDATE, DELETE, INSERT}
              else [])]
        outcomes = run_together(spark, actions)
        for outcome in outcomes:
            if isinstance(outcome.value, WrittenDeletes):
                deletes = outcome.value
            elif isinstance(outcome.value, WrittenFiles):
                written = outcome.value
            elif isinstance(outcome.value, dict):
                found = outcome.value
        failed = next((o.error for o in outcomes if o.error is not None), None)
        if failed is not None:
            raise failed
        if counts is None:
            positions, changed = 0, set[str | None]()
            if deletes is not None:  # the files changed are those the new deletes name
                positions = deletes.deleted_rows + sum(r.rows for r in deletes.whole)
                changed = {*(referenced_data_file(d) for d in deletes.files),
                           *(r.file_path for r in deletes.whole)}
            inserted, updated, deleted = _totals(
                changes.kinds, positions,
                sum(f.record_count for f in written.files) if written else 0, found)
            tasks = [t for t in tasks if t.data_file.file_path in changed]
            if not (inserted or updated or deleted):
                return ChangeResult(0, 0, 0, 0, 0, 0, None)
        else:
            inserted, updated = counts.inserted, sum(counts.updated.values())
            deleted = sum(counts.deleted.values())
        job_ids = [w.job_id for w in (deletes, written) if w is not None]
        delta = table.new_row_delta(
            branch=branch, snapshot_properties={**properties,
                                                JOB_ID_PROPERTY: ",".join(job_ids)})
        gone = {r.file_path for r in deletes.whole} if deletes else set()
        delete_files = deletes.files if deletes else []
        for f in delete_files:
            delta.add_deletes(f)
        for f in written.files if written else []:
            delta.add_rows(f)
        for path in gone:
            delta.remove_rows(path)
        for replaced in deletes.replaced if deletes else []:
            delta.remove_deletes(replaced)
        unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
        referenced = [t.data_file.file_path for t in tasks
                      if t.data_file.file_path not in gone
                      and any(may_apply(d, t.data_file, unpartitioned) for d in delete_files)]
        (delta.validate_from_snapshot(changes.head_id)
         .validate_data_files_exist(referenced)
         .conflict_detection_filter(changes.conflict_filter)
         .validate_no_conflicting_data_files()
         .validate_no_new_delete_files()
         .isolation_level(isolation)
         .commit())
    except CommitStateUnknown:
        raise
    except BaseException:
        if deletes is not None:
            deletes.abort(table)
        if written is not None:
            written.abort(table.io)
        raise
    return ChangeResult(inserted, updated, deleted, len(gone),
                        len(written.files) if written else 0, len(delete_files),
                        head_id(table.metadata, branch))


__all__ = ["DELETE", "INSERT", "KEEP", "KIND", "NEW_ROW_ID", "NEW_SEQUENCE", "UPDATE",
           "ChangeResult", "RowChanges", "apply_changes", "commit_rewrite",
           "lineage_columns"]
