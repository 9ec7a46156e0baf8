"""Rows of a Spark DataFrame into data files of a table version: one entry point, two writers.

:func:`write_data_files` writes the rows of a DataFrame already conformed to the table layout
(the current schema's top-level columns in order, as :func:`icepark.spark.writer.write.conform` or a
read of the table gives them) to new data files of ``metadata``'s current schema and default
spec, and returns the records of the files with the means to delete them. It does not commit:
:func:`icepark.spark.writer.write.write` and the copy-on-write delete
(:mod:`icepark.spark.rowlevel.delete`) commit the files in their own snapshots.

Spec, Appendix A, *Parquet*: "Column IDs are required." The writer is chosen by
:func:`icepark.spark.writer.native.ineligibility` and by whether Spark can open the table's
data path (:func:`icepark.spark.storage.data_path`: an object store without its Hadoop
connector cannot be written by Spark's writer):

* the **native writer** (:class:`~icepark.spark.writer.native.NativeWriteJob`, Spark's own
  Parquet writer) where it gives every column its field ID and Appendix A type; the driver
  builds the records from the footers. ``write.target-file-size-bytes`` becomes Spark's
  ``maxRecordsPerFile`` (:mod:`icepark.spark.writer.file_size`);
* the **Python-worker writer** otherwise: the rows are distributed and sorted
  (:func:`distribute`) and ``mapInArrow`` tasks (:mod:`icepark.spark.writer.tasks`) write the
  files through the table's FileIO (its properties travel with the task) and return pickled
  ``DataFile`` records.

Cleanup contract: if the write itself fails, every file of the job is deleted (found by the job
UUID in the file names, or the native job's directory) before the error is raised; a task's
:class:`~icepark.errors.ValidationError` is raised as one on the driver. After a known commit
failure the caller deletes them with :meth:`WrittenFiles.abort`; after
:class:`~icepark.errors.CommitStateUnknown` it must delete nothing (the files may be live).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import CardinalityViolation, ValidationError
from icepark.expressions import Expr
from icepark.io.fileio import FileIO, file_io_properties
from icepark.spark.layout import file_columns
from icepark.spark.storage import data_path
from icepark.spark.transforms import partition_columns
from icepark.spark.writer.columns import CARDINALITY_PREFIX, VALIDATION_PREFIX
from icepark.spark.writer.distribution import distributed
from icepark.spark.writer.file_size import max_records_per_file
from icepark.spark.writer.native import NativeWriteJob, ineligibility
from icepark.spark.writer.tasks import (
    PARTITION_PREFIX,
    RECORD_COLUMN,
    WriteTask,
    collect_records,
    delete_job_files,
    map_function,
)
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import with_lineage
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot

RECORDS = T.StructType([T.StructField(RECORD_COLUMN, T.BinaryType())])
"""The Spark schema of write tasks' output (:func:`~icepark.spark.writer.tasks.records_batch`)."""
_TASK_ERRORS: dict[str, type[ValidationError]] = {
    VALIDATION_PREFIX: ValidationError, CARDINALITY_PREFIX: CardinalityViolation}
"""The error each message prefix a Spark job's check raises with is raised as on the driver."""
_TASK_ERROR = re.compile(
    f"({'|'.join(map(re.escape, _TASK_ERRORS))})" + r"(.*?)(?:\s+SQLSTATE: \w+)?$",
    re.MULTILINE)  # Spark appends the SQL state to a raised error


@dataclass(frozen=True)
class WrittenFiles:
    """The data files one write job wrote, not yet committed."""

    job_id: str
    """The job's UUID: in every file name (and the native job's directory name)."""
    data_path: str
    """The table's data path the job wrote below."""
    native: bool
    """Written by Spark's own Parquet writer (else by the Python workers)."""
    files: list[DataFile]

    def abort(self, file_io: FileIO, *, tasks_may_run: bool = False) -> None:
        """Delete every file of the job; best effort. Only after a known commit failure:
        after :class:`~icepark.errors.CommitStateUnknown` the files may be live. After the
        job itself failed (``tasks_may_run``), tasks it ran may still write files
        (:func:`~icepark.spark.writer.tasks.delete_job_files`)."""
        if self.native:
            NativeWriteJob(self.job_id, self.data_path).abort(
                file_io, [f.file_path for f in self.files])
        else:
            delete_job_files(file_io, self.data_path, self.job_id,
                             [f.file_path for f in self.files], tasks_may_run=tasks_may_run)


def write_data_files(
        df: DataFrame, metadata: TableMetadata, file_io: FileIO, *,
        row_filter: Expr | None = None, snapshot: Snapshot | None = None,
        row_bytes: float | None = None,
        io_properties: Mapping[str, str] | None = None,
        lineage: bool = False) -> WrittenFiles:
    """Write ``df`` (in the table layout of ``metadata``'s current schema) to new data files
    of its current schema and default spec (see the module docstring).

    ``row_filter``: every row must match it (checked in the Python workers). ``snapshot``: the
    snapshot the files will be committed on top of, whose data files give the expected row
    size on the native path unless ``row_bytes`` is given. ``io_properties``: FileIO
    properties of the Python workers (default: ``file_io``'s). With ``lineage``, ``df`` has
    the row lineage columns ``_row_id`` and ``_last_updated_sequence_number`` last, and the
    files store them
    (:func:`icepark.spec.reserved.with_lineage`: rows moved from other files keep their
    lineage).
    """
    schema = with_lineage(metadata.schema()) if lineage else metadata.schema()
    task = new_task(metadata, row_filter=row_filter, presorted=True,
                    io_properties=file_io_properties(file_io) if io_properties is None
                    else io_properties, schema=schema)
    native = (ineligibility(metadata, row_filter) is None
              and data_path(df.sparkSession, [task.data_path]) == "spark")
    written = WrittenFiles(task.job_id, task.data_path, native, [])
    try:
        if native:
            records = max_records_per_file(metadata, file_io, snapshot, row_bytes)
            files = NativeWriteJob(task.job_id, task.data_path).write(
                df, metadata, file_io, max_records_per_file=records, schema=schema)
        else:
            files = collect_files(distribute(df, metadata, schema).mapInArrow(
                map_function(task), RECORDS))
    except BaseException as e:
        written.abort(file_io, tasks_may_run=True)
        converted = task_error(e)
        if converted is e:
            raise
        raise converted from e
    return WrittenFiles(task.job_id, task.data_path, native, files)


def new_task(metadata: TableMetadata, *, row_filter: Expr | None = None,
             presorted: bool = False, case_sensitive: bool = True,
             io_properties: Mapping[str, str] | None = None,
             schema: Schema | None = None) -> WriteTask:
    """The task value of a new Python-worker write job to ``metadata``'s current schema (or
    ``schema``, the columns of the files: the current schema plus row lineage) and default
    spec."""
    order = metadata.sort_order()
    metadata.spec().check_writable()  # no unknown transforms: before any file is written
    order.check_writable()
    return WriteTask(
        job_id=str(uuid.uuid4()), table_location=metadata.location,
        properties=dict(metadata.properties), schema=schema or metadata.schema(),
        spec=metadata.spec(),
        sort_order_id=None if order.is_unsorted else order.order_id, presorted=presorted,
        row_filter=row_filter, case_sensitive=case_sensitive,
        io_properties=dict(io_properties or {}))


def distribute(df: DataFrame, metadata: TableMetadata,
               schema: Schema | None = None) -> DataFrame:
    """``df`` (in the table layout of ``schema``, default the current schema) with partition
    value columns appended, distributed by ``write.distribution-mode`` and sorted within each
    task by partition values and the default sort order
    (:func:`icepark.spark.writer.distribution.distributed`); then in the file layout (uuid as
    bytes) for the Python-worker writer."""
    schema, spec = schema or metadata.schema(), metadata.spec()
    parts = [(f"{PARTITION_PREFIX}{i}", c)
             for i, c in enumerate(partition_columns(spec, schema, df))]
    frame = distributed(df, metadata, parts)
    return frame.select(*file_columns(schema), *(F.col(name) for name, _ in parts))


def collect_files(rows: DataFrame) -> list[DataFile]:
    """The ``DataFile`` records a Python-worker write job returned."""
    files: list[DataFile] = collect_records(rows)
    return files


def task_error(error: BaseException) -> BaseException:
    """A task's :class:`ValidationError` (or :class:`CardinalityViolation`), re-raised on the
    driver as one (Spark wraps it); any other error as it is."""
    if isinstance(error, ValidationError):
        return error
    with contextlib.suppress(Exception):
        match = _TASK_ERROR.search(str(error))
        if match:
            return _TASK_ERRORS[match.group(1)](match.group(2).strip())
    return error


__all__ = ["WrittenFiles", "collect_files", "distribute", "new_task", "task_error",
           "write_data_files"]
