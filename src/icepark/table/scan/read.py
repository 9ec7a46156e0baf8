"""Reading a scan's rows: planning (:class:`~icepark.table.scan.scan.TableScan`) plus the Arrow
reader (:class:`~icepark.io.arrow.reader.ArrowReader`).

Spec, *Scan Planning*: a scan reads exactly the rows of one snapshot, "filtering data files and
delete files" with the row filter, and applies every delete file that applies to each data
file. The Arrow reader is the reference semantics of icepark; the Spark read path must return
the same rows for the same plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from icepark.io.arrow.name_mapping import name_mapping_from_properties
from icepark.io.arrow.reader import LINEAGE_COLUMN_NAMES, ArrowReader
from icepark.table.scan.scan import TableScan
from icepark.table.scan.tasks import FileScanTask


class DataScan(TableScan):
    """A :class:`TableScan` that can also read its rows as Arrow data."""

    def reader(self, metadata_columns: Sequence[str] = (),
               batch_size: int = 131072) -> ArrowReader:
        """The reader of this scan's projection, filter, name mapping and limit."""
        return ArrowReader(
            self.io, self.projection(), row_filter=self.row_filter,
            case_sensitive=self.case_sensitive,
            name_mapping=name_mapping_from_properties(self.metadata.properties),
            metadata_columns=metadata_columns, batch_size=batch_size, limit=self.limit,
            partition_specs={s.spec_id: s for s in self.metadata.partition_specs},
            full_schema=self.schema())

    def to_batches(self, metadata_columns: Sequence[str] = ()) -> Iterator[Any]:
        """Stream the rows as ``pyarrow.RecordBatch`` es, one planned task after another."""
        return self.reader(metadata_columns).read_tasks(self._tasks(metadata_columns))

    def to_arrow(self, metadata_columns: Sequence[str] = ()) -> Any:
        """All rows as one ``pyarrow.Table`` (metadata columns ``_file``, ``_pos``,
        ``_spec_id``, ``_partition``, ``_row_id`` and ``_last_updated_sequence_number`` on
        request)."""
        return self.reader(metadata_columns).to_table(self._tasks(metadata_columns))

    def to_arrow_batch_reader(self, metadata_columns: Sequence[str] = ()) -> Any:
        """The rows as a ``pyarrow.RecordBatchReader`` (bounded memory)."""
        reader = self.reader(metadata_columns)
        return pa.RecordBatchReader.from_batches(reader.arrow_schema,
                                                 reader.read_tasks(self._tasks(metadata_columns)))

    def _tasks(self, metadata_columns: Sequence[str]) -> Iterator[FileScanTask]:
        """The planned tasks, with row lineage when a lineage column is read."""
        return self.plan_files(row_lineage=bool(LINEAGE_COLUMN_NAMES & set(metadata_columns)))

    def count(self) -> int:
        """The number of rows the scan returns: from metadata when no delete file applies and
        no residual remains, else by reading one column plus those the deletes and filter need."""
        from_metadata = super().count()
        if from_metadata is not None:
            return from_metadata
        narrow = self.projection().fields[:1] or self.schema().fields[:1]
        reader = self.update(selected_fields=tuple(f.name for f in narrow)).reader()
        return sum(batch.num_rows for batch in reader.read_tasks(self.plan_files()))
