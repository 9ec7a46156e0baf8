"""The ``icepark`` streaming source: ``spark.readStream.format("icepark").load("db.events")``.

>>> # (spark.readStream.format("icepark").option("catalog", "prod")
>>> #    .option("stream-from-timestamp", "1767225600000").load("db.events"))

The rows each snapshot appends, snapshot by snapshot (:mod:`icepark.table.streams.offsets`):
without ``stream-from-timestamp`` (ms) the first micro-batches read every row of the current
snapshot, then each later append; ``replace`` snapshots (compaction) are skipped, and a
``delete`` or ``overwrite`` snapshot fails the stream unless
``streaming-skip-delete-snapshots`` / ``streaming-skip-overwrite-snapshots`` is ``true``.

Admission control: ``streaming-max-files-per-micro-batch`` and
``streaming-max-rows-per-micro-batch`` bound each micro-batch (whole files, at least one) as
the source's default read limit; under ``Trigger.AvailableNow`` the stream reads what the table
held when the query started, in batches of that size, and stops. Offsets are JSON values in the
query's checkpoint, so a restarted query resumes where it stopped.

Planning runs in the driver's Python process Spark keeps for the source; each micro-batch's files
are split and bin-packed as a batch read's are (``read.split.*``) and read by the executors with
the Arrow reader (:func:`icepark.spark.datasource.reader.read_partition`), in the table's schema
when the query started.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import types as T  # noqa: N812
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from icepark.expressions import ALWAYS_TRUE
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY
from icepark.spark.datasource.options import CatalogOptions
from icepark.spark.datasource.reader import (
    ReadContext,
    ScanPartition,
    io_properties,
    read_partition,
)
from icepark.table.scan.tasks import plan_tasks, split_settings
from icepark.table.streams.offsets import (
    BEFORE_FIRST,
    StreamOffset,
    StreamOptions,
    StreamPlanner,
)


class IcebergStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches in the driver, reads them in the executors."""

    def __init__(self, options: Mapping[str, str], schema: T.StructType) -> None:
        self.catalog = CatalogOptions.parse(options)
        self.stream = StreamOptions.parse(options)
        self.schema = schema
        self.until: int | None = None
        table = self.catalog.load_table()  # fail now on an unknown table
        self.table_schema = table.metadata.schema()

    def _planner(self) -> tuple[StreamPlanner, dict[str, str], Any]:
        catalog = self.catalog.load()
        table = self.catalog.table_in(catalog)
        return StreamPlanner(table.metadata, table.io, self.stream), io_properties(catalog), table

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - PySpark's name
        planner, _, _ = self._planner()
        return planner.initial_offset().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - PySpark's name
        """``streaming-max-files-per-micro-batch`` or else ``-rows-``; both apply in
        :meth:`latestOffset` whenever Spark does not ask for everything."""
        if self.stream.max_files < StreamOptions().max_files:
            return ReadMaxFiles(self.stream.max_files)
        if self.stream.max_rows < StreamOptions().max_rows:
            return ReadMaxRows(self.stream.max_rows)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802 - PySpark's name
        planner, _, _ = self._planner()
        max_files: int | None = None
        max_rows: int | None = None
        if not isinstance(limit, ReadAllAvailable):
            max_files, max_rows = self.stream.max_files, self.stream.max_rows
            if isinstance(limit, ReadMaxFiles):
                max_files = min(max_files, limit.max_files)
            elif isinstance(limit, ReadMaxRows):
                max_rows = min(max_rows, limit.max_rows)
        end = planner.latest_offset(StreamOffset.from_json(start), max_files=max_files,
                                    max_rows=max_rows, until=self.until)
        return end.to_json()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - PySpark's name
        """``Trigger.AvailableNow``: read no snapshot newer than the current one."""
        table = self.catalog.load_table()
        current = table.metadata.current_snapshot_id
        self.until = BEFORE_FIRST if current is None else current

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planner, properties, table = self._planner()
        tasks = planner.planned_files(StreamOffset.from_json(start), StreamOffset.from_json(end))
        if not tasks:
            return []
        metadata = table.metadata
        context = ReadContext(properties, self.table_schema, ALWAYS_TRUE,
                              tuple(metadata.partition_specs),
                              metadata.properties.get(NAME_MAPPING_PROPERTY))
        bins = plan_tasks(tasks, *split_settings(metadata.properties))
        return [ScanPartition(context, combined) for combined in bins]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ScanPartition):
            return iter(())
        return read_partition(partition, self.schema)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the offsets are all the state."""


__all__ = ["IcebergStreamReader"]
