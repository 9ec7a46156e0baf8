"""Appends: fast append (a new manifest per commit) and merge append (small manifests merged).

Spec, *Snapshots*: "Appends can add a new manifest to minimize the amount of data written,
instead of adding new records by rewriting and appending to an existing manifest. (This is
called a "fast append".)" and "Large tables can be split across multiple manifests so that
implementations can parallelize job planning or reduce the cost of rewriting a manifest."
Spec, *Commit Conflict Resolution and Retry*: "Append operations have no requirements and can
always be applied."

Merging (:class:`MergingSnapshotProducer`, the base of every action but the fast append) follows
the reference implementation's table properties: ``commit.manifest-merge.enabled`` (default
true), ``commit.manifest.min-count-to-merge`` (default 100) and
``commit.manifest.target-size-bytes`` (default 8 MiB). Manifests are grouped by content and
partition spec ("A manifest stores files for a single partition spec"); each group, newest
first, is packed into bins of at most the target size, filled from the oldest end so that the
newest bin is the under-filled one. A bin of one manifest is kept; the bin holding the group's
newest manifest (this commit's new files) is merged only once it holds at least
min-count-to-merge manifests; any other bin is merged. In a merged manifest this snapshot's new
files stay ADDED, its removed files stay DELETED, every other live file becomes EXISTING with its
sequence numbers written out ("When a data or delete file is written to a new manifest (as
"existing"), the inherited sequence number is written"), and files deleted by earlier snapshots
are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Self

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import UNASSIGNED_SEQUENCE_NUMBER
from icepark.spec.manifest import DataFile, EntryStatus, ManifestEntry, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import int_property
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.snapshot.producer import Attempt, SnapshotProducer

MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MERGE_ENABLED_DEFAULT = True
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024


def merge_enabled(properties: Mapping[str, str]) -> bool:
    """``commit.manifest-merge.enabled`` (default true).

    >>> merge_enabled({}), merge_enabled({"commit.manifest-merge.enabled": "false"})
    (True, False)
    """
    raw = properties.get(MANIFEST_MERGE_ENABLED)
    if raw is None:
        return MANIFEST_MERGE_ENABLED_DEFAULT
    value = raw.strip().lower()
    if value not in {"true", "false"}:
        raise ValidationError(f"Table property {MANIFEST_MERGE_ENABLED} must be true or false, "
                              f"not {raw!r}")
    return value == "true"


def new_append(file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
               snapshot_properties: Mapping[str, str] | None = None) -> MergeAppend | FastAppend:
    """The table's default append: a :class:`MergeAppend` unless
    ``commit.manifest-merge.enabled`` is false, then a :class:`FastAppend`."""
    kind = MergeAppend if merge_enabled(base.properties) else FastAppend
    return kind(file_io, base, branch=branch, snapshot_properties=snapshot_properties)


def pack_from_end(manifests: Sequence[ManifestFile], target_size: int) -> list[list[ManifestFile]]:
    """Split ``manifests`` (newest first) into consecutive bins of at most ``target_size``
    bytes, filled from the oldest end, keeping their order; a manifest larger than the target
    gets a bin of its own.

    >>> ms = [ManifestFile(f"m{i}", size, 0, 1) for i, size in enumerate([3, 4, 4, 5])]
    >>> [[m.manifest_path for m in b] for b in pack_from_end(ms, 8)]
    [['m0'], ['m1', 'm2'], ['m3']]
    """
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    size = 0
    for manifest in reversed(manifests):
        if current and size + manifest.manifest_length > target_size:
            bins.append(current)
            current, size = [], 0
        current.append(manifest)
        size += manifest.manifest_length
    if current:
        bins.append(current)
    return [list(reversed(b)) for b in reversed(bins)]


class MergingSnapshotProducer(SnapshotProducer):
    """A snapshot producer that merges small manifests (see the module docstring)."""

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None) -> None:
        super().__init__(file_io, base, branch=branch, snapshot_properties=snapshot_properties)
        self._merge_cache: dict[tuple[tuple[str, ...], int | None], ManifestFile | None] = {}

    def _merge(self, attempt: Attempt, new: list[ManifestFile],
               kept: list[ManifestFile]) -> list[ManifestFile]:
        props = attempt.base.properties
        if not merge_enabled(props):
            return [*new, *kept]
        min_count = int_property(props, MANIFEST_MIN_MERGE_COUNT,
                                 MANIFEST_MIN_MERGE_COUNT_DEFAULT, minimum=0)
        target = int_property(props, MANIFEST_TARGET_SIZE_BYTES,
                              MANIFEST_TARGET_SIZE_BYTES_DEFAULT, minimum=0)
        groups: dict[tuple[int, int], list[ManifestFile]] = {}
        for manifest in (*new, *kept):
            groups.setdefault((manifest.content, manifest.partition_spec_id), []).append(manifest)
        out: list[ManifestFile] = []
        for _, group in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
            newest = group[0]
            for bin_ in pack_from_end(group, target):
                if len(bin_) == 1 or (newest in bin_ and len(bin_) < min_count):
                    out.extend(bin_)
                    continue
                merged = self._merged(attempt, bin_)
                if merged is not None:
                    out.append(merged)
        return out

    def _merged(self, attempt: Attempt, bin_: list[ManifestFile]) -> ManifestFile | None:
        """One manifest with the entries of ``bin_`` (None if none is left)."""
        key = (tuple(m.manifest_path for m in bin_), attempt.writer_snapshot_id)
        if key in self._merge_cache:
            cached = self._merge_cache[key]
            if cached is not None:
                attempt.own.add(cached.manifest_path)
            return cached
        first = bin_[0]
        with self.new_manifest_writer(attempt, first.partition_spec_id,
                                      first.content) as writer:
            for manifest in bin_:
                for entry in self.read_entries(attempt, manifest):
                    own = attempt.is_own_entry(manifest, entry)
                    if entry.status is EntryStatus.DELETED:
                        if own:
                            writer.add(ManifestEntry(
                                EntryStatus.DELETED, entry.data_file, attempt.writer_snapshot_id,
                                entry.sequence_number, entry.file_sequence_number))
                    elif entry.status is EntryStatus.ADDED and own:
                        seq = entry.sequence_number
                        writer.add(ManifestEntry(
                            EntryStatus.ADDED, entry.data_file, attempt.writer_snapshot_id,
                            None if seq == UNASSIGNED_SEQUENCE_NUMBER else seq, None))
                    else:
                        writer.existing(entry)
        result: ManifestFile | None = writer.to_manifest_file()
        assert result is not None
        if not (result.added_files_count or result.existing_files_count
                or result.deleted_files_count):
            result = None
        self._merge_cache[key] = result
        return result

    def clean_up(self, committed: bool) -> None:
        super().clean_up(committed)
        self._merge_cache.clear()


class FastAppend(SnapshotProducer):
    """``append``: one new manifest per partition spec; every existing manifest is kept."""

    @property
    def operation(self) -> Operation:
        return Operation.APPEND

    def append_file(self, data_file: DataFile) -> Self:
        """Add a data file ("Only data files were added and no files were removed")."""
        _check_data(data_file)
        self._add(data_file)
        return self

    def append_files(self, data_files: Iterable[DataFile]) -> Self:
        for data_file in data_files:
            self.append_file(data_file)
        return self

    def _keep(self, attempt: Attempt, manifest: ManifestFile) -> bool:
        return True


class MergeAppend(MergingSnapshotProducer):
    """``append`` that merges small manifests: the default append, as in the reference
    implementation."""

    @property
    def operation(self) -> Operation:
        return Operation.APPEND

    def append_file(self, data_file: DataFile) -> Self:
        """Add a data file ("Only data files were added and no files were removed")."""
        _check_data(data_file)
        self._add(data_file)
        return self

    def append_files(self, data_files: Iterable[DataFile]) -> Self:
        for data_file in data_files:
            self.append_file(data_file)
        return self


def _check_data(data_file: DataFile) -> None:
    if data_file.is_delete:
        raise ValidationError(f"Cannot append delete file {data_file.file_path}: an append "
                              "adds data files only; use a row delta")
