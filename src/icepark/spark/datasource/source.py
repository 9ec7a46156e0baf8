"""The ``icepark`` Python data source: ``df.write.format("icepark")`` and
``spark.read.format("icepark")``, and as a stream ``df.writeStream.format("icepark")``
(:mod:`~icepark.spark.datasource.stream_writer`) and ``spark.readStream.format("icepark")``
(:mod:`~icepark.spark.datasource.stream_reader`).

The reader is :mod:`icepark.spark.datasource.reader` (the portable one; the fast read path is
:func:`icepark.spark.reader.read.read`); the writer is below. Options shared by both are parsed in
:mod:`icepark.spark.datasource.options`. :func:`register` also enables
``spark.sql.python.filterPushdown.enabled``, without which Spark refuses a reader that pushes
filters (``DATA_SOURCE_PUSHDOWN_DISABLED``).

>>> # spark.dataSource.register(IcebergDataSource)
>>> # (df.write.format("icepark").option("catalog.uri", "sqlite:///c.db")
>>> #    .option("catalog.warehouse", "/wh").mode("append").save("db.events"))

Writer options:

* ``catalog``: the catalog name (default ``default``); catalog properties as
  ``catalog.<key>`` (``catalog.uri``, ``catalog.warehouse``, ``catalog.type``) or bare ``uri``,
  ``warehouse``, ``type``; the table identifier is the ``save`` path;
* ``branch``: the branch to commit to (default ``main``);
* ``snapshot-property.<key>``: extra snapshot summary entries;
* with ``mode("overwrite")``: ``overwrite-mode`` ``dynamic`` replaces the partitions present in
  the written data, and ``overwrite-filter`` replaces the rows matching a filter (every written
  row must match it); without either, every row of the table is replaced.

Each task streams its Arrow batches into data file writers
(:func:`icepark.spark.writer.tasks.write_batches`, one open writer per partition: a data source
gets rows in their original order) and returns a commit message of ``DataFile`` records;
``commit`` runs once on the driver with every message and commits one snapshot
(:func:`icepark.spark.writer.write.commit_files`). ``abort`` deletes every file of the job -- those
in the messages and those found by the job UUID in the file names -- unless a snapshot of the
table records the job as committed (a commit whose outcome was unknown). Spec, *Optimistic
Concurrency*: "If the snapshot on which an update is based is no longer current, the writer
must retry the update based on the new current version", which the commit does.

The schema is checked by name before any task runs
(:func:`icepark.spark.writer.columns.check_schema`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from icepark.errors import ValidationError
from icepark.expressions import Expr
from icepark.io.fileio import file_io_properties
from icepark.spark.connect import tolerate_command_metrics
from icepark.spark.datasource.options import ReadOptions, WriteOptions
from icepark.spark.datasource.reader import IcebergReader, open_scan, spark_schema
from icepark.spark.datasource.stream_reader import IcebergStreamReader
from icepark.spark.datasource.stream_writer import IcebergStreamWriter
from icepark.spark.writer.columns import EVOLVE_SCHEMA, check_schema
from icepark.spark.writer.tasks import WriteTask, delete_job_files, write_batches
from icepark.spark.writer.write import commit_files, committed_job, head_id, new_task
from icepark.spec.manifest import DataFile
from icepark.table.snapshot.validation import as_expr


@dataclass(frozen=True)
class DataFilesMessage(WriterCommitMessage):
    """One task's commit message: the data files it wrote."""

    files: tuple[DataFile, ...]


class IcebergDataSource(DataSource):
    """``format("icepark")``: reads and writes an icepark catalog table (see the module
    docstring)."""

    @classmethod
    def name(cls) -> str:
        return "icepark"

    def schema(self) -> Any:
        """The table's (or the chosen snapshot's) schema as a Spark ``StructType``."""
        options = ReadOptions.parse(dict(self.options))
        scan, _ = open_scan(options)
        return spark_schema(scan, options.timestamp_ns, options.catalog.table)

    def reader(self, schema: Any) -> IcebergReader:
        return IcebergReader(ReadOptions.parse(dict(self.options)), schema)

    def writer(self, schema: Any, overwrite: bool) -> IcebergWriter:
        return IcebergWriter(WriteOptions.parse(dict(self.options)), schema, overwrite)

    def streamWriter(self, schema: Any, overwrite: bool) -> IcebergStreamWriter:  # noqa: N802 - PySpark's name
        """``writeStream``: :mod:`icepark.spark.datasource.stream_writer` (``overwrite`` is
        the ``complete`` output mode)."""
        return IcebergStreamWriter(WriteOptions.parse(dict(self.options)), schema, overwrite)

    def streamReader(self, schema: Any) -> IcebergStreamReader:  # noqa: N802 - PySpark's name
        """``readStream``: :mod:`icepark.spark.datasource.stream_reader`."""
        return IcebergStreamReader(dict(self.options), schema)


class IcebergWriter(DataSourceArrowWriter):
    """Writes in the tasks, commits once on the driver, deletes the job's files on abort."""

    def __init__(self, options: WriteOptions, schema: Any, overwrite: bool) -> None:
        self.options = options
        table = options.catalog.load_table()
        metadata = table.metadata
        check_schema(schema, metadata.schema(), extra=EVOLVE_SCHEMA)
        if overwrite:
            if options.overwrite_mode == "dynamic":
                if options.overwrite_filter is not None:
                    raise ValidationError("Use overwrite-filter or overwrite-mode=dynamic, "
                                          "not both")
                self.mode = "dynamic"
            else:
                self.mode = "overwrite"
        elif options.overwrite_filter is not None or options.overwrite_mode is not None:
            raise ValidationError("overwrite-filter and overwrite-mode need mode('overwrite')")
        else:
            self.mode = "append"
        row_filter: Expr | None = None
        if self.mode == "overwrite" and options.overwrite_filter is not None:
            row_filter = as_expr(options.overwrite_filter)
        self.row_filter = row_filter
        self.start_snapshot_id = head_id(metadata, options.branch)
        self.task: WriteTask = new_task(metadata, row_filter=row_filter,
                                        io_properties=file_io_properties(table.io))

    def write(self, iterator: Iterator[Any]) -> DataFilesMessage:
        return DataFilesMessage(tuple(write_batches(self.task, iterator)))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = _files(messages)
        table = self.options.catalog.load_table()
        commit_files(table, files, self.mode, self.row_filter, job_id=self.task.job_id,
                     start_snapshot_id=self.start_snapshot_id, branch=self.options.branch,
                     snapshot_properties=self.options.snapshot_properties)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the job's files, unless the table shows the job committed (or cannot be
        loaded to tell: then the outcome is unknown and nothing is deleted)."""
        try:
            table = self.options.catalog.load_table()
        except Exception:  # unknown state: keep every file
            return
        if committed_job(table.metadata, self.task.job_id):
            return
        with contextlib.suppress(Exception):  # a task that did not finish may still run
            delete_job_files(table.io, self.task.data_path, self.task.job_id,
                             [f.file_path for f in _files(messages)],
                             tasks_may_run=any(m is None for m in messages))


def _files(messages: list[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, DataFilesMessage) for f in m.files]


FILTER_PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register the ``icepark`` format with ``spark`` (a classic or a Spark Connect session)
    and enable Python data source filter pushdown (:data:`FILTER_PUSHDOWN`), which its reader
    needs.

    In a Spark Declarative Pipelines definition file the session's settings cannot be changed;
    the pipeline's ``configuration`` must set :data:`FILTER_PUSHDOWN` for a pipeline that reads
    ``icepark`` tables (a sink-only pipeline does not need it). For a Connect session the
    client is also made to skip metrics in command streams
    (:func:`icepark.spark.connect.tolerate_command_metrics`).
    """
    tolerate_command_metrics(spark)
    if str(spark.conf.get(FILTER_PUSHDOWN, "false")).lower() != "true":
        try:
            spark.conf.set(FILTER_PUSHDOWN, "true")
        except Exception as e:  # a pipeline's definitions: its configuration decides
            if "SESSION_MUTATION_IN_DECLARATIVE_PIPELINE" not in str(e):
                raise
    spark.dataSource.register(IcebergDataSource)
