"""Snapshot summaries: what a snapshot changed and the table totals after it.

Spec, *Snapshots*: ``summary`` is "A string map that summarizes the snapshot changes, including
``operation``". The spec names only ``operation``; the other keys are the ones the reference
implementation writes and every engine reads (``added-data-files``, ``total-records`` ...).
Change counts are written only when positive; ``changed-partition-count`` is always written;
each total is "the parent snapshot's total + added - removed", and is recomputed from the
parent's manifests when the parent's summary lacks it (a table written by a client that keeps
no totals). A total that would be negative (a parent summary that was wrong) is left out, so
the next snapshot recomputes it.

>>> from icepark.spec.manifest import DataFile, FileFormat
>>> from icepark.spec.snapshots import Operation
>>> b = SummaryBuilder()
>>> b.added_file(DataFile("/t/data/a.parquet", FileFormat.PARQUET, (), 10, 100))
>>> s = b.build(Operation.APPEND, EMPTY_TOTALS)
>>> s.properties["added-records"], s.properties["total-records"], s.properties["total-data-files"]
('10', '10', '1')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from icepark.errors import ValidationError
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.snapshots import Operation, Summary

ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_EQ_DELETE_FILES = "added-equality-delete-files"
REMOVED_EQ_DELETE_FILES = "removed-equality-delete-files"
ADDED_POS_DELETE_FILES = "added-position-delete-files"
REMOVED_POS_DELETE_FILES = "removed-position-delete-files"
ADDED_DVS = "added-dvs"
REMOVED_DVS = "removed-dvs"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILES_SIZE = "added-files-size"
REMOVED_FILES_SIZE = "removed-files-size"
ADDED_POS_DELETES = "added-position-deletes"
REMOVED_POS_DELETES = "removed-position-deletes"
ADDED_EQ_DELETES = "added-equality-deletes"
REMOVED_EQ_DELETES = "removed-equality-deletes"
CHANGED_PARTITION_COUNT = "changed-partition-count"
TOTAL_RECORDS = "total-records"
TOTAL_FILES_SIZE = "total-files-size"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
TOTAL_POS_DELETES = "total-position-deletes"
TOTAL_EQ_DELETES = "total-equality-deletes"

# total key -> (added key, removed key)
_TOTALS: dict[str, tuple[str, str]] = {
    TOTAL_RECORDS: (ADDED_RECORDS, DELETED_RECORDS),
    TOTAL_FILES_SIZE: (ADDED_FILES_SIZE, REMOVED_FILES_SIZE),
    TOTAL_DATA_FILES: (ADDED_DATA_FILES, DELETED_DATA_FILES),
    TOTAL_DELETE_FILES: (ADDED_DELETE_FILES, REMOVED_DELETE_FILES),
    TOTAL_POS_DELETES: (ADDED_POS_DELETES, REMOVED_POS_DELETES),
    TOTAL_EQ_DELETES: (ADDED_EQ_DELETES, REMOVED_EQ_DELETES),
}
TOTAL_KEYS: tuple[str, ...] = tuple(_TOTALS)
EMPTY_TOTALS: Mapping[str, str] = dict.fromkeys(TOTAL_KEYS, "0")
"""The totals "before" a table's first snapshot."""

# the change counters, in the order they are written
_CHANGE_KEYS = (
    ADDED_DATA_FILES, DELETED_DATA_FILES, ADDED_EQ_DELETE_FILES, REMOVED_EQ_DELETE_FILES,
    ADDED_POS_DELETE_FILES, REMOVED_POS_DELETE_FILES, ADDED_DVS, REMOVED_DVS,
    ADDED_DELETE_FILES, REMOVED_DELETE_FILES,
    ADDED_RECORDS, DELETED_RECORDS, ADDED_FILES_SIZE, REMOVED_FILES_SIZE, ADDED_POS_DELETES,
    REMOVED_POS_DELETES, ADDED_EQ_DELETES, REMOVED_EQ_DELETES,
)
RESERVED_KEYS = frozenset({"operation", *_CHANGE_KEYS, CHANGED_PARTITION_COUNT, *TOTAL_KEYS})
"""Keys computed by the builder; custom summary properties cannot set them."""
CUSTOM_PREFIX = "snapshot-property."
"""Write options named ``snapshot-property.<key>`` become summary entries ``<key>``."""

# per content: (file count key, row key) for added and removed files
_ADDED = {FileContent.DATA: (ADDED_DATA_FILES, ADDED_RECORDS),
          FileContent.POSITION_DELETES: (ADDED_POS_DELETE_FILES, ADDED_POS_DELETES),
          FileContent.EQUALITY_DELETES: (ADDED_EQ_DELETE_FILES, ADDED_EQ_DELETES)}
_REMOVED = {FileContent.DATA: (DELETED_DATA_FILES, DELETED_RECORDS),
            FileContent.POSITION_DELETES: (REMOVED_POS_DELETE_FILES, REMOVED_POS_DELETES),
            FileContent.EQUALITY_DELETES: (REMOVED_EQ_DELETE_FILES, REMOVED_EQ_DELETES)}


def custom_properties(properties: Mapping[str, str] | None) -> dict[str, str]:
    """Caller-given summary entries: a ``snapshot-property.`` prefix is dropped, and computed
    keys are refused.

    >>> custom_properties({"snapshot-property.app": "etl", "owner": "me"})
    {'app': 'etl', 'owner': 'me'}
    >>> custom_properties({"total-records": "0"})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot set snapshot summary property 'total-records': it \
is computed from the snapshot's changes
    """
    out: dict[str, str] = {}
    for key, value in (properties or {}).items():
        name = key.removeprefix(CUSTOM_PREFIX)
        if not isinstance(value, str) or not name:
            raise ValidationError(
                f"Snapshot summary property {key!r} must be a non-empty name with a string value")
        if name in RESERVED_KEYS:
            raise ValidationError(f"Cannot set snapshot summary property {name!r}: it is "
                                  "computed from the snapshot's changes")
        out[name] = value
    return out


@dataclass(slots=True)
class SummaryBuilder:
    """Accumulates the files a snapshot adds and removes; :meth:`build` makes the summary."""

    custom: Mapping[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_CHANGE_KEYS, 0))
    _partitions: set[tuple[int, tuple[object, ...]]] = field(default_factory=set)

    def added_file(self, data_file: DataFile) -> None:
        """Count a new data or delete file."""
        self._update(data_file, _ADDED[data_file.content], ADDED_DELETE_FILES, ADDED_FILES_SIZE)

    def removed_file(self, data_file: DataFile) -> None:
        """Count a data or delete file the snapshot removes."""
        self._update(data_file, _REMOVED[data_file.content], REMOVED_DELETE_FILES,
                     REMOVED_FILES_SIZE)

    def _update(self, data_file: DataFile, keys: tuple[str, str], any_delete: str,
                size: str) -> None:
        """Spec, Appendix F: deletion vectors count as ``added-dvs`` / ``removed-dvs`` (and
        as delete files, their rows as position deletes); a vector's size is its blob's, not
        its Puffin file's, which other vectors share."""
        files, rows = keys
        if data_file.is_deletion_vector:
            files = ADDED_DVS if files == ADDED_POS_DELETE_FILES else REMOVED_DVS
        self._counts[files] += 1
        self._counts[rows] += data_file.record_count
        if data_file.is_delete:
            self._counts[any_delete] += 1
        self._counts[size] += (data_file.content_size_in_bytes or 0
                               if data_file.is_deletion_vector else data_file.file_size_in_bytes)
        self._partitions.add((data_file.spec_id, tuple(data_file.partition)))

    def counts(self) -> dict[str, int]:
        """The change counters (zeros included)."""
        return dict(self._counts)

    def build(self, operation: Operation, previous_totals: Mapping[str, str]) -> Summary:
        """The summary: custom entries, positive change counts, ``changed-partition-count`` and
        every total that ``previous_totals`` (the parent's summary, or :data:`EMPTY_TOTALS`)
        has."""
        props: dict[str, str] = dict(custom_properties(self.custom))
        props.update((k, str(v)) for k, v in self._counts.items() if v > 0)
        props[CHANGED_PARTITION_COUNT] = str(len(self._partitions))
        for total, (added, removed) in _TOTALS.items():
            raw = previous_totals.get(total)
            try:
                before = int(raw) if raw is not None else None
            except ValueError:
                before = None
            if before is None:
                continue
            after = before + self._counts[added] - self._counts[removed]
            if after >= 0:
                props[total] = str(after)
        return Summary(operation, props)


def has_totals(summary: Summary | None) -> bool:
    """Whether a snapshot summary carries every total."""
    return summary is not None and all(k in summary.properties for k in TOTAL_KEYS)


def totals_of(live_files: Iterable[DataFile]) -> dict[str, str]:
    """The totals of a snapshot, from its live data and delete files.

    >>> from icepark.spec.manifest import DataFile, FileFormat, FileContent
    >>> totals_of([DataFile("a", FileFormat.PARQUET, (), 5, 50),
    ...            DataFile("d", FileFormat.PARQUET, (), 2, 20, FileContent.POSITION_DELETES)])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'total-records': '5', 'total-files-size': '70', 'total-data-files': '1',
     'total-delete-files': '1', 'total-position-deletes': '2', 'total-equality-deletes': '0'}
    """
    b = SummaryBuilder()
    for f in live_files:
        b.added_file(f)
    counts = b.counts()
    return {total: str(counts[added]) for total, (added, _) in _TOTALS.items()}
