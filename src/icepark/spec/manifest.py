"""Manifest records: data and delete files, manifest entries, manifest files, field summaries.

Spec, *Manifests*: "A manifest is an immutable Avro file that lists data files or delete files,
along with each file's partition data tuple, metrics, and tracking information." and *Manifest
Lists*: "Manifest list files store ``manifest_file``".

These are plain frozen values of primitives (picklable), so they can cross the Spark
driver/executor boundary. Their Avro encoding lives in ``icepark.io``; partition tuples hold the
Python values of :mod:`icepark.spec.types`, in the order of the partition spec's fields; metric
maps are keyed by field ID and bounds hold Appendix D binary values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import Any

from icepark.errors import ValidationError


class FileContent(IntEnum):
    """``134 content``: "0: DATA, 1: POSITION DELETES, 2: EQUALITY DELETES"."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class FileFormat(StrEnum):
    """``101 file_format``: "String file format name, avro, orc or parquet"."""

    AVRO = "AVRO"
    ORC = "ORC"
    PARQUET = "PARQUET"
    PUFFIN = "PUFFIN"
    """v3 deletion vectors: "These vectors are stored using the ``deletion-vector-v1`` blob
    definition from the Puffin spec"."""

    @staticmethod
    def parse(text: str) -> FileFormat:
        """Case-insensitive: writers use both "PARQUET" and "parquet".

        >>> FileFormat.parse("parquet")
        <FileFormat.PARQUET: 'PARQUET'>
        """
        try:
            return FileFormat(text.upper())
        except ValueError:
            raise ValidationError(f"Unknown file format {text!r}") from None


EntryKey = str | tuple[str, int]
"""What identifies a file among a snapshot's files (:attr:`DataFile.entry_key`)."""


class ManifestContent(IntEnum):
    """``517 content``: "0: data, 1: deletes"."""

    DATA = 0
    DELETES = 1


class EntryStatus(IntEnum):
    """``0 status``: "0: EXISTING 1: ADDED 2: DELETED"."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


@dataclass(frozen=True, slots=True)
class DataFile:
    """The ``data_file`` struct: one data or delete file with its partition tuple and metrics.

    ``spec_id`` is not stored in the struct; it is the ID of the partition spec of the manifest
    that lists the file (kept here so a file knows how to read its ``partition``).
    """

    file_path: str
    file_format: FileFormat
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    content: FileContent = FileContent.DATA
    spec_id: int = 0
    column_sizes: Mapping[int, int] | None = field(default=None, hash=False)
    value_counts: Mapping[int, int] | None = field(default=None, hash=False)
    null_value_counts: Mapping[int, int] | None = field(default=None, hash=False)
    nan_value_counts: Mapping[int, int] | None = field(default=None, hash=False)
    distinct_counts: Mapping[int, int] | None = field(default=None, hash=False)
    lower_bounds: Mapping[int, bytes] | None = field(default=None, hash=False)
    upper_bounds: Mapping[int, bytes] | None = field(default=None, hash=False)
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    referenced_data_file: str | None = None
    """``143 referenced_data_file``: "Fully qualified location (URI with FS scheme) of a data
    file that all deletes reference"; required for deletion vectors."""
    first_row_id: int | None = None
    """v3 ``142 first_row_id``: "The ``_row_id`` for the first row in the data file"; null for
    a new file ("it is not assigned until the snapshot is successfully committed") and for
    delete files, inherited when read (*First Row ID Inheritance*)."""
    content_offset: int | None = None
    """v3 ``144 content_offset``: "The offset in the file where the content starts" (a
    deletion vector's blob in its Puffin file)."""
    content_size_in_bytes: int | None = None
    """v3 ``145 content_size_in_bytes``: "The length of a referenced content stored in the
    file; required if ``content_offset`` is present"."""

    def __post_init__(self) -> None:
        if self.record_count < 0:
            raise ValidationError(f"{self.file_path}: record_count cannot be negative")
        if self.file_size_in_bytes < 0:
            raise ValidationError(f"{self.file_path}: file_size_in_bytes cannot be negative")
        if self.content is FileContent.EQUALITY_DELETES and not self.equality_ids:
            raise ValidationError(
                f"{self.file_path}: equality_ids are required when content=2 (equality deletes)")
        if self.split_offsets is not None and list(self.split_offsets) != sorted(
                self.split_offsets):
            raise ValidationError(f"{self.file_path}: split_offsets must be sorted ascending")
        if (self.content_offset is None) != (self.content_size_in_bytes is None):
            raise ValidationError(f"{self.file_path}: content_offset and content_size_in_bytes "
                                  "go together (\"required if content_offset is present\")")
        if self.is_deletion_vector and (self.referenced_data_file is None
                                        or self.content_offset is None):
            raise ValidationError(
                f"Deletion vector in {self.file_path} has no referenced_data_file or "
                "content_offset: \"Setting the referenced file is required for deletion "
                "vectors\" and the offsets \"are required\"")

    @property
    def is_delete(self) -> bool:
        return self.content is not FileContent.DATA

    @property
    def is_deletion_vector(self) -> bool:
        """A v3 deletion vector: position deletes in a Puffin blob."""
        return (self.content is FileContent.POSITION_DELETES
                and self.file_format is FileFormat.PUFFIN)

    @property
    def entry_key(self) -> EntryKey:
        """What identifies this file among a snapshot's files: its path, or for a deletion
        vector its Puffin file and blob offset ("Multiple deletion vectors can be stored in
        the same file")."""
        if self.content_offset is not None and self.file_format is FileFormat.PUFFIN:
            return (self.file_path, self.content_offset)
        return self.file_path


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """The ``manifest_entry`` struct: a file plus when it was added or deleted.

    "Values for these fields are inherited from manifest metadata when ``null``"; after
    :func:`inherit` they are always set.
    """

    status: EntryStatus
    data_file: DataFile
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None

    @property
    def is_live(self) -> bool:
        """Whether the entry's file is part of the snapshot (existing or added)."""
        return self.status is not EntryStatus.DELETED


def inherit(entry: ManifestEntry, manifest: ManifestFile) -> ManifestEntry:
    """Apply *Sequence Number Inheritance* from the manifest's list entry.

    "if the field is ``null`` for an entry, then the entry must inherit its value from the
    manifest file's metadata"; sequence numbers are inherited only when the status is ADDED,
    and "When reading v1 manifests with no sequence number column, sequence numbers for all
    files must default to 0" (the manifest's own sequence number is 0 for v1 lists).
    """
    snapshot_id = entry.snapshot_id
    if snapshot_id is None:
        snapshot_id = manifest.added_snapshot_id
    seq, file_seq = entry.sequence_number, entry.file_sequence_number
    if entry.status is EntryStatus.ADDED or manifest.sequence_number == 0:
        seq = manifest.sequence_number if seq is None else seq
        file_seq = manifest.sequence_number if file_seq is None else file_seq
    if (snapshot_id, seq, file_seq) == (
            entry.snapshot_id, entry.sequence_number, entry.file_sequence_number):
        return entry
    return replace(entry, snapshot_id=snapshot_id, sequence_number=seq,
                   file_sequence_number=file_seq)


class RowIdAssigner:
    """*First Row ID Inheritance* over the entries of one data manifest, in file order.

    "When reading, the ``first_row_id`` is assigned by replacing ``null`` with the manifest's
    ``first_row_id`` plus the sum of ``record_count`` for all data files that preceded the file
    in the manifest that also had a null ``first_row_id``." DELETED entries take no part (the
    manifest list counts only added and existing rows), as in the reference implementation. A
    manifest without a ``first_row_id`` (written before a table was upgraded to v3, or not
    committed yet) assigns none: "When ``first_row_id`` is null, inherited row ID values are
    also null"; its files keep what they store.

    >>> a = RowIdAssigner(1000)
    >>> [a.first_row_id(EntryStatus.ADDED, None, 50), a.first_row_id(EntryStatus.EXISTING, 800,
    ...  25), a.first_row_id(EntryStatus.ADDED, None, 50)]
    [1000, 800, 1050]
    """

    __slots__ = ("next_row_id",)

    def __init__(self, first_row_id: int | None) -> None:
        self.next_row_id = first_row_id

    def first_row_id(self, status: EntryStatus, stored: int | None, record_count: int
                     ) -> int | None:
        """The file's first row ID: ``stored`` if set, else the next unassigned one."""
        if self.next_row_id is None or stored is not None or status is EntryStatus.DELETED:
            return stored
        assigned = self.next_row_id
        self.next_row_id += record_count
        return assigned

    def assign(self, entry: ManifestEntry) -> ManifestEntry:
        """``entry`` with its data file's first row ID (the same entry if unchanged)."""
        f = entry.data_file
        if f.content is not FileContent.DATA:
            return entry
        assigned = self.first_row_id(entry.status, f.first_row_id, f.record_count)
        if assigned == f.first_row_id:
            return entry
        return replace(entry, data_file=replace(f, first_row_id=assigned))


@dataclass(frozen=True, slots=True)
class FieldSummary:
    """The ``field_summary`` struct of one partition field over a manifest."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """The ``manifest_file`` struct of a manifest list."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    added_snapshot_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int = 0
    min_sequence_number: int = 0
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None
    """v3 ``520 first_row_id``: "The starting ``_row_id`` to assign to rows added by ``ADDED``
    data files"; assigned when the manifest list is written (*First Row ID Assignment*), always
    null for delete manifests."""

    def has_added_files(self) -> bool:
        """"when ``null`` this is assumed to be non-zero"."""
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        return self.deleted_files_count is None or self.deleted_files_count > 0
