"""The ``icepark`` streaming sink: ``df.writeStream.format("icepark").start("db.events")``.

>>> # (df.writeStream.format("icepark").option("catalog", "prod")
>>> #    .option("checkpointLocation", "/ckpt/events").start("db.events"))

Each micro-batch is written by the tasks (:func:`icepark.spark.writer.tasks.write_batches`: one
open writer per partition, fanning rows out to their partitions in any order, each file rolled
at ``write.target-file-size-bytes``) and committed by the driver as **one snapshot**: an
``append`` in the ``append`` output mode, an ``overwrite`` of every row in the ``complete``
mode (the result table replaces the table's rows).

**Exactly once.** The snapshot carries the query's ID and the batch's ID in its summary
(:mod:`icepark.table.streams.epochs`). Spark records a batch as done only after the sink's
commit returns, so a query killed in between replays the batch when it restarts from the same
checkpoint: the commit then finds the batch in the table and commits nothing (and deletes the
replay's files, which nothing references). A batch whose tasks or commit fail deletes its
files (:meth:`IcebergStreamWriter.abort`); files a killed executor left behind are orphans
that :func:`icepark.spark.remove_orphan_files` removes.

Spark gives the query ID to the tasks (the local property ``sql.streaming.queryId``), not to
the commit, so every task's commit message carries it.

Small files: each task of each micro-batch writes at least one file per partition it sees, so
a stream with short triggers makes many small files. Fewer tasks per batch
(``df.coalesce(n)`` before ``writeStream``, or fewer source partitions) and longer triggers
make fewer files; :func:`icepark.spark.rewrite_data_files` (for example with
``where`` on recent partitions, run between batches or from another job: its commit is
validated against the stream's appends, which never conflict with it) compacts what remains.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from icepark.errors import ValidationError
from icepark.io.fileio import file_io_properties
from icepark.spark.datasource.options import WriteOptions
from icepark.spark.writer.columns import EVOLVE_SCHEMA, check_schema
from icepark.spark.writer.tasks import WriteTask, write_batches
from icepark.spark.writer.write import commit_files, head_id, new_task
from icepark.spec.manifest import DataFile
from icepark.table.streams.epochs import committed, epoch_properties

QUERY_ID_KEY = "sql.streaming.queryId"
"""The Spark local property naming the streaming query of a task."""


@dataclass(frozen=True)
class StreamFilesMessage(WriterCommitMessage):
    """One task's commit message: the files it wrote, the write job that named them and its
    streaming query's ID."""

    files: tuple[DataFile, ...]
    query_id: str | None
    job_id: str


class IcebergStreamWriter(DataSourceStreamArrowWriter):
    """Writes each micro-batch in the tasks, commits it once (see the module docstring)."""

    def __init__(self, options: WriteOptions, schema: Any, overwrite: bool) -> None:
        if options.overwrite_filter is not None or options.overwrite_mode is not None:
            raise ValidationError(
                "A streaming write appends (outputMode 'append') or replaces every row "
                "(outputMode 'complete'); overwrite-filter and overwrite-mode are for batch "
                "writes")
        self.options = options
        table = options.catalog.load_table()
        metadata = table.metadata
        check_schema(schema, metadata.schema(), extra=EVOLVE_SCHEMA)
        self.mode = "overwrite" if overwrite else "append"
        self.task: WriteTask = new_task(metadata, io_properties=file_io_properties(table.io))

    def write(self, iterator: Iterator[Any]) -> StreamFilesMessage:
        from pyspark import TaskContext  # noqa: PLC0415 - only meaningful inside a task

        context = TaskContext.get()
        query_id = None if context is None else context.getLocalProperty(QUERY_ID_KEY)
        return StreamFilesMessage(tuple(write_batches(self.task, iterator)), query_id,
                                  self.task.job_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Commit the batch's files in one snapshot, unless the table already holds batch
        ``batchId`` of this query (a replay after a restart): then delete them."""
        files = _files(messages)
        query_id = _query_id(messages)
        table = self.options.catalog.load_table()
        branch = self.options.branch
        if query_id is not None and committed(table.metadata, branch, query_id, batchId):
            _delete(table.io, files)
            return
        if not files and self.mode == "append":
            return  # an empty batch changes nothing: no snapshot
        properties = dict(self.options.snapshot_properties)
        if query_id is not None:
            properties.update(epoch_properties(query_id, batchId))
        jobs = sorted({m.job_id for m in messages if isinstance(m, StreamFilesMessage)})
        commit_files(table, files, self.mode, None, job_id=",".join(jobs) or self.task.job_id,
                     start_snapshot_id=head_id(table.metadata, branch), branch=branch,
                     snapshot_properties=properties)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Delete the batch's files, unless the table shows the batch committed (or cannot be
        loaded to tell: then nothing is deleted)."""
        try:
            table = self.options.catalog.load_table()
        except Exception:  # unknown state: keep every file
            return
        query_id = _query_id(messages)
        if query_id is not None and committed(table.metadata, self.options.branch, query_id,
                                              batchId):
            return
        _delete(table.io, _files(messages))


def _files(messages: list[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, StreamFilesMessage) for f in m.files]


def _query_id(messages: list[WriterCommitMessage | None]) -> str | None:
    found = {m.query_id for m in messages if isinstance(m, StreamFilesMessage)} - {None}
    if len(found) > 1:
        raise ValidationError(f"One micro-batch came from several streaming queries: {found}")
    return next(iter(found), None)


def _delete(file_io: Any, files: list[DataFile]) -> None:
    for data_file in files:
        with contextlib.suppress(Exception):
            file_io.delete(data_file.file_path)


__all__ = ["QUERY_ID_KEY", "IcebergStreamWriter", "StreamFilesMessage"]
