"""Merge-on-read delete files from the positions of rows: the Spark side shared by DELETE,
UPDATE and MERGE.

A row-level change that removes rows without rewriting their files writes where they are:
each removed row's data file (a number into the scanned files) and position
(``_metadata.row_index``, "position in the data file, starting at 0", as position deletes
count). On a v2 table they go to position delete files (:mod:`icepark.spark.rowlevel.delete_tasks`:
"sorted by file_path then pos"), one per data file or one set per spec and partition of the
data files, as ``write.delete.granularity`` says (:mod:`icepark.spark.rowlevel.modes`). On a v3
table, where "Position delete files must not be added", each data file gets one deletion vector
holding its new positions and those its earlier vector or position delete files deleted
(:mod:`icepark.spark.rowlevel.dv_tasks`: one Puffin file per task); the vectors and
single-file position delete files they replace are removed in the same commit
(:func:`replaced_deletes`).

A data file none of whose rows survives (every row removed, no earlier deletes) is removed whole
instead: the tasks report it (:class:`~icepark.spark.rowlevel.delete_tasks.RemovedFile`) and
write nothing for it. The count of removed rows per file is a window over the sorted positions,
in the same job.

A DELETE's positions on v2 with ``file`` granularity skip the shuffle that sorts them: they come
from a scan, so each scan task writes the delete files of the data files it read
(:func:`~icepark.spark.rowlevel.delete_tasks.write_file_deletes`), and the driver adds up the
counts per file to find the files removed whole (a large file may be split between tasks;
the delete files written for a file removed whole are deleted before the commit). Where the
files scanned hold few rows (:data:`DRIVER_POSITIONS`), a DELETE's positions (v2 ``file``
granularity, v3 deletion vectors) are collected to the driver as Arrow instead and the same
function a task runs writes them there: a Spark job's exchange with its Python workers (and,
for vectors, the shuffle that sorts the positions) costs more than writing a few small files.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.io.fileio import file_io_properties
from icepark.spark.frames import sql_literal, with_lookup
from icepark.spark.reader.scan_rows import FILE_NUMBER, ROW_POSITION
from icepark.spark.rowlevel import delete_tasks, dv_tasks
from icepark.spark.rowlevel.delete_tasks import (
    GROUP_COLUMN,
    WHOLE_COLUMN,
    PositionDeleteTask,
    RemovedFile,
)
from icepark.spark.rowlevel.dv_tasks import DeletionVectorTask
from icepark.spark.rowlevel.modes import FILE_GRANULARITY, delete_granularity
from icepark.spark.session import SMALL_JOB_SETTINGS, default_parallelism, scoped_conf
from icepark.spark.writer.columns import CARDINALITY_PREFIX
from icepark.spark.writer.data_files import RECORDS
from icepark.spark.writer.tasks import collect_records, delete_job_files
from icepark.spec.manifest import DataFile, FileContent
from icepark.table.scan.delete_index import referenced_data_file
from icepark.table.scan.tasks import FileScanTask
from icepark.table.table import Table

DRIVER_POSITIONS = 4 * 1024 * 1024
"""A DELETE's positions (v2 ``file`` granularity, or v3 deletion vectors) are written on the
driver when the data files it scans hold at most this many rows, so that it can find no more
positions than that: 12 bytes each in Arrow (the file number and the position), 48 MiB at
most. Above it the scan's tasks write them, through Python workers: for 19,074 positions in
2,000,000 rows (``benchmarks/bench_spark_delete.py``, v2, in turns) the whole delete took
0.35 s that way and 0.28 s with them written here."""


@dataclass(frozen=True)
class WrittenDeletes:
    """What a delete file job wrote and found, not yet committed."""

    job_id: str
    data_path: str
    files: list[DataFile]
    """New position delete files (v2) or deletion vectors (v3)."""
    whole: list[RemovedFile]
    """Data files every row of which was removed: to remove, not to cover with deletes."""
    deleted_rows: int
    """Rows the new delete files delete."""
    replaced: list[DataFile]
    """Live deletion vectors and single-file position delete files the new vectors replace
    (v3): to remove in the same commit."""

    def abort(self, table: Table) -> None:
        """Delete every file of the job; best effort, after a known failure only."""
        delete_job_files(table.io, self.data_path, self.job_id,
                         [f.file_path for f in self.files])


def write_deletes(spark: SparkSession, table: Table, positions: DataFrame,
                  files: Sequence[DataFile], tasks: Sequence[FileScanTask], *,
                  planned_whole: Collection[str] = (), from_scan: bool = False,
                  unique: str | None = None) -> WrittenDeletes:
    """Write the delete files for ``positions`` (a DataFrame of :data:`FILE_NUMBER`, an index
    into ``files``, numbered in path order, and :data:`ROW_POSITION`; each pair once) of the
    data files of ``tasks`` (planned with their delete files). ``planned_whole``: paths of
    data files known to be removed whole. ``from_scan``: the positions come straight from a
    scan of the files (a file's positions in few tasks), so on v2 with ``file`` granularity
    each task writes its own (:func:`_write_file_deletes`), with no shuffle. ``unique``
    (the operation, e.g. ``MERGE``): a pair given twice fails the job with a
    :class:`~icepark.errors.CardinalityViolation` (:func:`sorted_positions`) instead of being
    assumed away. On a failure every file of the job is deleted."""
    metadata = table.metadata
    vectors = metadata.format_version >= 3
    if from_scan and unique is None and vectors and \
            sum(f.record_count for f in files) <= DRIVER_POSITIONS:
        return _write_vectors_here(spark, table, positions, files, tasks,
                                   planned_whole=planned_whole)
    if from_scan and unique is None and not vectors and \
            delete_granularity(metadata) == FILE_GRANULARITY:
        return _write_file_deletes(spark, table, positions, files, tasks,
                                   planned_whole=planned_whole)
    if vectors:
        dv = _vector_task(table, tasks)
        job_id, data_path = dv.job_id, dv.data_path
        job = (sorted_positions(spark, positions, files, tasks, None, planned_whole, unique)
               .mapInArrow(dv_tasks.map_function(dv), RECORDS))
    else:
        pos = _position_task(table, tasks)
        job_id, data_path = pos.job_id, pos.data_path
        job = (sorted_positions(spark, positions, files, tasks, pos, planned_whole, unique)
               .mapInArrow(delete_tasks.map_function(pos), RECORDS))
    try:
        with scoped_conf(spark, SMALL_JOB_SETTINGS):
            written, whole, added = delete_tasks.collect(job)
    except BaseException:
        delete_job_files(table.io, data_path, job_id, [], tasks_may_run=True)
        raise
    replaced = replaced_deletes(written, tasks) if vectors else []
    return WrittenDeletes(job_id, data_path, written, whole, added, replaced)


def all_rows_match(task: FileScanTask, counts: Mapping[str, int]) -> bool:
    """Whether every row of a file without delete files matched, by ``counts`` of matched rows
    per data file path."""
    count = counts.get(task.data_file.file_path, 0)
    return not task.delete_files and 0 < count == task.data_file.record_count


def _write_file_deletes(spark: SparkSession, table: Table, positions: DataFrame,
                        files: Sequence[DataFile], tasks: Sequence[FileScanTask], *,
                        planned_whole: Collection[str]) -> WrittenDeletes:
    """A delete file per data file, written by the scan tasks that found the positions, or on
    the driver where ``files`` hold at most :data:`DRIVER_POSITIONS` rows; the files every row
    of which was deleted (their counts added up over the tasks) are removed whole instead, and
    the delete files written for them deleted."""
    pos = _position_task(table, tasks)
    index = {g: i for i, g in enumerate(pos.groups)}
    scanned = tuple(delete_tasks.ScanFile(
        f.file_path, index.get((f.spec_id, tuple(f.partition)), 0), f.file_path in planned_whole)
        for f in files)
    found_positions = positions.select(FILE_NUMBER, ROW_POSITION)
    here = sum(f.record_count for f in files) <= DRIVER_POSITIONS
    try:
        with scoped_conf(spark, SMALL_JOB_SETTINGS):
            if here:
                written_here, found_here = delete_tasks.write_file_deletes(
                    pos, scanned, found_positions.toArrow().to_batches(), table.io, "driver")
                records: list[object] = [*written_here, *found_here]
            else:
                records = collect_records(found_positions.mapInArrow(
                    delete_tasks.file_map_function(pos, scanned), RECORDS))
    except BaseException:
        delete_job_files(table.io, pos.data_path, pos.job_id, [], tasks_may_run=not here)
        raise
    written = [r for r in records if isinstance(r, DataFile)]
    found = [r for r in records if isinstance(r, delete_tasks.FilePositions)]
    counts: Counter[str] = Counter()
    for r in found:
        counts[r.file_path] += r.rows
    by_path = {t.data_file.file_path: t for t in tasks}
    whole = [RemovedFile(path, n) for path, n in counts.items()
             if path in planned_whole or all_rows_match(by_path[path], counts)]
    gone = {r.file_path for r in whole}
    dropped = {d for r in found if r.file_path in gone for d in r.delete_files}
    try:
        for path in dropped:  # written for a file removed whole: never committed
            table.io.delete(path)
    except BaseException:
        delete_job_files(table.io, pos.data_path, pos.job_id, [f.file_path for f in written])
        raise
    return WrittenDeletes(pos.job_id, pos.data_path,
                          [f for f in written if f.file_path not in dropped], whole,
                          sum(n for path, n in counts.items() if path not in gone), [])


def _write_vectors_here(spark: SparkSession, table: Table, positions: DataFrame,
                        files: Sequence[DataFile], tasks: Sequence[FileScanTask], *,
                        planned_whole: Collection[str]) -> WrittenDeletes:
    """A DELETE's deletion vectors (v3), from positions collected to the driver where
    ``files`` hold at most :data:`DRIVER_POSITIONS` rows, written there as one task of the
    job would write them (:func:`~icepark.spark.rowlevel.dv_tasks.write_vectors`)."""
    dv = _vector_task(table, tasks)
    try:
        with scoped_conf(spark, SMALL_JOB_SETTINGS):
            found = positions.select(FILE_NUMBER, ROW_POSITION).toArrow()
        written, whole, counts = dv_tasks.write_vectors(
            dv, [_sorted_here(found, files, tasks, planned_whole)], "driver")
    except BaseException:
        delete_job_files(table.io, dv.data_path, dv.job_id, [])
        raise
    return WrittenDeletes(dv.job_id, dv.data_path, written, whole,
                          sum(c.rows for c in counts), replaced_deletes(written, tasks))


def _sorted_here(found: pa.Table, files: Sequence[DataFile], tasks: Sequence[FileScanTask],
                 planned_whole: Collection[str]) -> pa.RecordBatch:
    """``found`` (file numbers into ``files`` and positions) as :func:`sorted_positions` gives
    them to a deletion vector task: ``file_path``, ``pos`` and whether the file goes whole,
    sorted by file and position."""
    order = pc.sort_indices(found, [(FILE_NUMBER, "ascending"), (ROW_POSITION, "ascending")])
    numbers = found.column(FILE_NUMBER).take(order).combine_chunks()
    matched = np.bincount(numbers.to_numpy(), minlength=len(files))
    by_path = {t.data_file.file_path: t for t in tasks}
    whole = [f.file_path in planned_whole or (
        (t := by_path.get(f.file_path)) is not None and not t.delete_files
        and int(n) == f.record_count) for f, n in zip(files, matched, strict=True)]
    return pa.record_batch({
        "file_path": pa.array([f.file_path for f in files], pa.string()).take(numbers),
        "pos": found.column(ROW_POSITION).take(order).combine_chunks(),
        WHOLE_COLUMN: pa.array(whole, pa.bool_()).take(numbers)})


def replaced_deletes(files: Sequence[DataFile], tasks: Sequence[FileScanTask]
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


def _vector_task(table: Table, tasks: Sequence[FileScanTask]) -> DeletionVectorTask:
    """The task value of a deletion vector job (v3)."""
    metadata = table.metadata
    return DeletionVectorTask(
        job_id=str(uuid.uuid4()), table_location=metadata.location,
        properties=dict(metadata.properties), schema=metadata.schema(),
        files={t.data_file.file_path: t.data_file for t in tasks},
        existing={t.data_file.file_path: tuple(
            d for d in t.delete_files if d.content is FileContent.POSITION_DELETES)
            for t in tasks},
        file_io=table.io)


def _position_task(table: Table, tasks: Sequence[FileScanTask]) -> PositionDeleteTask:
    """The task value of a position delete job (v2), with one (spec, partition) group per
    partition of ``tasks``; its files are written through the table's FileIO."""
    metadata = table.metadata
    return PositionDeleteTask(
        job_id=str(uuid.uuid4()), table_location=metadata.location,
        properties=dict(metadata.properties), schema=metadata.schema(),
        specs={s.spec_id: s for s in metadata.partition_specs},
        groups=tuple(dict.fromkeys((t.data_file.spec_id, tuple(t.data_file.partition))
                                   for t in tasks)),
        io_properties=file_io_properties(table.io),
        file_scoped=delete_granularity(metadata) == FILE_GRANULARITY)


def _unique_position(operation: str) -> Column:
    """:data:`ROW_POSITION`, failing the job where a data file's position comes twice: a
    window over the positions' sort, in one SQL expression (one call into the JVM)."""
    before, between, after = (CARDINALITY_PREFIX + cardinality_message(
        operation, "\0", " (e.g. the row at position \0)")).split("\0")
    group, number, position = (f"`{c}`" for c in (GROUP_COLUMN, FILE_NUMBER, ROW_POSITION))
    message = (f"concat({sql_literal(before, 'string')}, file_path, "
               f"{sql_literal(between, 'string')}, CAST({position} AS STRING), "
               f"{sql_literal(after, 'string')})")
    return F.expr(f"CASE WHEN count(1) OVER (PARTITION BY {group}, {number}, {position}) > 1 "
                  f"THEN CAST(raise_error({message}) AS BIGINT) ELSE {position} END")


def cardinality_message(operation: str, file_path: str, where: str) -> str:
    """Why a row-level change that matched a row of ``file_path`` (``where`` in it, e.g. its
    position) more than once fails."""
    return (f"{operation} matched a target row of {file_path}{where} with more than one source "
            "row, and an update or delete applies to it: which source row should win is "
            "undefined (SQL's cardinality violation). Make the source unique on the merge key, "
            "e.g. with dropDuplicates or a window; nothing was written")


def sorted_positions(  # noqa: PLR0917 - the positions, their files and how to group them
        spark: SparkSession, positions: DataFrame, files: Sequence[DataFile],
        tasks: Sequence[FileScanTask], task: PositionDeleteTask | None,
        planned_whole: Collection[str], unique: str | None = None) -> DataFrame:
    """``(group, file_path, pos, whole)`` of ``positions``, sorted. With a position delete
    ``task`` of ``partition`` granularity, each (spec, partition) group is in one Spark
    partition, whose task writes its delete files; otherwise (``file`` granularity, or
    deletion vectors without a ``task``), each data file is, and the files are spread over as
    many tasks as run at once (a 300-file merge's 300 delete files were written by one task
    when grouped by partition). ``whole`` marks the rows of a file removed whole: one in
    ``planned_whole``, or one without delete files whose removed rows are all its rows
    (counted per file by a window in the same job, without another scan). With ``unique``
    (the operation), a position given twice fails the job (another window over the same
    sort) with a :class:`~icepark.errors.CardinalityViolation`."""
    index = {} if task is None else {g: i for i, g in enumerate(task.groups)}
    number = {f.file_path: i for i, f in enumerate(files)}
    rows = [(number[t.data_file.file_path], t.data_file.file_path,
             index.get((t.data_file.spec_id, tuple(t.data_file.partition)), 0),
             t.data_file.file_path in planned_whole,
             None if t.delete_files else t.data_file.record_count) for t in tasks]
    ddl = (f"{FILE_NUMBER} int, file_path string, {GROUP_COLUMN} int, "
           "__icepark_planned boolean, __icepark_records long")
    # a position of a file number not planned is a bug: fail the job rather than lose it
    keyed = with_lookup(spark, positions, FILE_NUMBER, rows, ddl,
                        keep=(FILE_NUMBER, ROW_POSITION), otherwise={
                            "file_path": F.raise_error(F.concat(
                                F.lit("icepark: a position of an unplanned data file number "),
                                F.col(FILE_NUMBER).cast("string"))).cast("string")})
    if task is None or task.file_scoped:
        spread, by = len(tasks), FILE_NUMBER
    else:
        spread, by = len(task.groups), GROUP_COLUMN
    partitions = max(1, min(spread, default_parallelism(spark)))
    # the window needs its rows clustered and sorted by (group, file): the sort gives both,
    # and the window keeps the order
    matched = F.count(F.lit(1)).over(Window.partitionBy(GROUP_COLUMN, FILE_NUMBER))
    position = F.col(ROW_POSITION) if unique is None else _unique_position(unique)
    return (keyed.repartition(partitions, by)
            .sortWithinPartitions(GROUP_COLUMN, FILE_NUMBER, ROW_POSITION)
            .select(GROUP_COLUMN, "file_path", position.alias("pos"),
                    (F.col("__icepark_planned") | F.coalesce(
                        matched == F.col("__icepark_records"), F.lit(False))
                     ).alias(WHOLE_COLUMN)))


__all__ = ["DRIVER_POSITIONS", "WrittenDeletes", "all_rows_match", "cardinality_message",
           "replaced_deletes", "sorted_positions", "write_deletes"]
