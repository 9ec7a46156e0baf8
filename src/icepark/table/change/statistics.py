"""Registering table and partition statistics files in table metadata.

Spec, *Table Statistics*: "Table statistics files are valid Puffin files. Statistics are
informational. A reader can choose to ignore statistics information. ... A table can contain
many statistics files associated with different table snapshots." *Partition Statistics*:
"Each table snapshot may be associated with at most one partition statistics file" and
"Partition statistics file must be registered in the table metadata file to be considered as a
valid statistics file for the reader."

:class:`StatisticsChange` sets (replacing the one of the same snapshot) and removes the entries
of ``statistics`` and ``partition-statistics``; every other change keeps them, and expiring a
snapshot removes its entries and deletes their files
(:mod:`icepark.table.maintenance.expire`). :func:`statistics_file` turns a Puffin file just
written (:class:`~icepark.io.puffin.writer.WrittenFile`) into its metadata entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from icepark.errors import ValidationError
from icepark.io.puffin.writer import WrittenFile
from icepark.spec.metadata import (
    BlobMetadata,
    PartitionStatisticsFile,
    StatisticsFile,
    TableMetadata,
)
from icepark.table.change import updates as u
from icepark.table.change.commit import Change
from icepark.table.change.schema_change import Changes, PendingUpdate, Submit


def statistics_file(written: WrittenFile, snapshot_id: int) -> StatisticsFile:
    """The ``statistics`` entry of a written Puffin file: its path, size, footer size ("Total
    size of the statistics file's footer (not the footer payload size)") and blob metadata
    ("Subset of Blob properties in the Puffin file")."""
    return StatisticsFile(
        snapshot_id=snapshot_id, statistics_path=written.location,
        file_size_in_bytes=written.file_size, file_footer_size_in_bytes=written.footer_size,
        blob_metadata=tuple(BlobMetadata(b.type, b.snapshot_id, b.sequence_number, b.fields,
                                         b.properties) for b in written.blobs))


@dataclass(frozen=True, slots=True)
class StatisticsChange:
    """Set and remove statistics entries. Each entry names a snapshot of the table (checked
    on every attempt: an expired snapshot cannot get statistics); no requirement, so
    concurrent commits of other kinds keep them."""

    set_table: tuple[StatisticsFile, ...] = ()
    removed_table: tuple[int, ...] = ()
    set_partition: tuple[PartitionStatisticsFile, ...] = ()
    removed_partition: tuple[int, ...] = ()

    def changes(self, base: TableMetadata) -> Changes:
        entries: list[StatisticsFile | PartitionStatisticsFile] = [*self.set_table,
                                                                   *self.set_partition]
        for entry in entries:
            if base.snapshot_by_id(entry.snapshot_id) is None:
                raise ValidationError(
                    f"Cannot register statistics file {entry.statistics_path}: snapshot "
                    f"{entry.snapshot_id} is not in the table")
        updates: list[u.TableUpdate] = [
            *map(u.SetStatistics, self.set_table),
            *map(u.RemoveStatistics, self.removed_table),
            *map(u.SetPartitionStatistics, self.set_partition),
            *map(u.RemovePartitionStatistics, self.removed_partition)]
        return [], updates

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the statistics files are the caller's."""


class UpdateStatistics(PendingUpdate):
    """Register and unregister statistics files; the methods chain, and the change commits
    on :meth:`commit` or on leaving the ``with`` block."""

    def __init__(self, metadata: TableMetadata, submit: Submit) -> None:
        super().__init__(metadata, submit)
        self._set: dict[int, StatisticsFile] = {}
        self._removed: list[int] = []
        self._set_partition: dict[int, PartitionStatisticsFile] = {}
        self._removed_partition: list[int] = []

    def set_statistics(self, statistics: StatisticsFile) -> Self:
        """Register a table statistics file, replacing the one of its snapshot."""
        self._check_open()
        self._set[statistics.snapshot_id] = statistics
        return self

    def remove_statistics(self, snapshot_id: int) -> Self:
        """Unregister the statistics file of a snapshot (the file itself is not deleted)."""
        self._check_open()
        self._removed.append(snapshot_id)
        return self

    def set_partition_statistics(self, statistics: PartitionStatisticsFile) -> Self:
        """Register a partition statistics file, replacing the one of its snapshot."""
        self._check_open()
        self._set_partition[statistics.snapshot_id] = statistics
        return self

    def remove_partition_statistics(self, snapshot_id: int) -> Self:
        """Unregister the partition statistics file of a snapshot."""
        self._check_open()
        self._removed_partition.append(snapshot_id)
        return self

    def _changes(self) -> list[Change]:
        both = sorted(set(self._set) & set(self._removed)) + sorted(
            set(self._set_partition) & set(self._removed_partition))
        if both:
            raise ValidationError(f"Cannot both set and remove the statistics of snapshot "
                                  f"{both[0]}")
        if not (self._set or self._removed or self._set_partition or self._removed_partition):
            return []
        return [StatisticsChange(tuple(self._set.values()), tuple(self._removed),
                                 tuple(self._set_partition.values()),
                                 tuple(self._removed_partition))]


__all__ = ["StatisticsChange", "UpdateStatistics", "statistics_file"]
