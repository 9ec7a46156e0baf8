"""Rewrite position deletes: compaction of position delete files (v2), deletion vectors in place
of leftover position delete files (v3), and no more deletes for files that are gone.

Spec, *Position Delete Files*: "Position-based delete files identify deleted rows by file and
position in one or more data files" and *Scan Planning*: "A position delete file must be
applied to a data file when all of the following are true: The data file's file_path is equal
to the delete file's file_path; The data file's data sequence number is less than or equal to
the delete file's data sequence number; The data file's partition (both spec and partition
values) is equal to the delete file's partition". A delete whose data file is no longer live,
or whose data file is newer than it, deletes nothing: it is *dangling*, and is dropped here.

Spec (v3), *Delete Formats*: "Position delete files must not be added to v3 tables" and
"Writers must ensure that there is at most one deletion vector per data file and must merge new
deletes with existing vectors or position delete files"; *Deletion Vectors*: "If a DV is
written for a data file, it must replace all previously written position delete files so that
when a DV is present, readers can safely ignore matching position delete files." and "Position
delete files that contain deletes for more than one data file need to be kept in table metadata
until all deletes are replaced by DVs."

The plan (:func:`plan`), per partition of the branch's snapshot:

* **v2**: position delete files none of whose rows can apply to a live data file (by their
  ``file_path`` bounds and sequence numbers) are removed unread. The others are bin-packed into
  groups as the reference implementation does, with its options and defaults
  (:class:`DeleteRewriteOptions`): files outside [``min-file-size-bytes``,
  ``max-file-size-bytes``] are candidates (all with ``rewrite-all``), packed into groups of at
  most ``max-file-group-size-bytes``, and a group is rewritten when it has at least
  ``min-input-files`` files, or more than ``target-file-size-bytes``, or more than the maximum
  size. A rewritten group's live deletes are written sorted into files of the target size.
* **v3**: every position delete file of the partition goes; each live data file some of whose
  rows they delete, and which has no deletion vector, gets one vector with those positions. A
  data file that has a vector keeps it: the vector replaced its position deletes already, and
  readers ignore them. Vectors whose data file is no longer live are removed.

New files keep the sequence number of what they replace (the largest of their group's inputs:
"It is also possible to add a new file with data that logically belongs to an older sequence
number"), so they apply to exactly the data files the old ones did. The commit is one
``replace`` snapshot (:class:`RewritePositionDeletes`) that fails when, since the plan, a data
file the new deletes reference was removed or a delete file that may apply to it was added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.manifest import DataFile, FileContent, ManifestContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import FILE_PATH
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.snapshot.append import MergingSnapshotProducer
from icepark.table.snapshot.producer import Attempt, branch_head
from icepark.table.snapshot.validation import ConcurrentChanges, FileFilter

DELETE_TARGET_FILE_SIZE_BYTES = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT = 64 * 1024 * 1024
_GB = 1024 ** 3
_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")


def _int(options: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValidationError(f"Option {key!r} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ValidationError(f"Option {key!r} is {value} but must be >= {minimum}")
    return value


def _bool(options: Mapping[str, str], key: str) -> bool:
    raw = str(options.get(key, "false")).strip().lower()
    if raw not in {"true", "false"}:
        raise ValidationError(f"Option {key!r} must be true or false, not {options[key]!r}")
    return raw == "true"


@dataclass(frozen=True, slots=True)
class DeleteRewriteOptions:
    """The options of ``rewrite_position_delete_files``, with the reference's names and
    defaults.

    >>> o = DeleteRewriteOptions.parse({"min-input-files": "2"}, {})
    >>> o.target_file_size_bytes, o.min_file_size_bytes, o.max_file_size_bytes, o.min_input_files
    (67108864, 50331648, 120795955, 2)
    >>> DeleteRewriteOptions.parse({"min-input-file": "2"}, {})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Unknown option 'min-input-file'; the options are \
max-concurrent-file-group-rewrites, max-file-group-size-bytes, max-file-size-bytes, \
max-files-to-rewrite, min-file-size-bytes, min-input-files, partial-progress.enabled, \
partial-progress.max-commits, rewrite-all, rewrite-job-order, target-file-size-bytes
    """

    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    min_input_files: int = 5
    rewrite_all: bool = False
    max_file_group_size_bytes: int = 100 * _GB
    max_files_to_rewrite: int | None = None
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = 10
    max_concurrent_file_group_rewrites: int = 5
    rewrite_job_order: str = "none"

    NAMES = ("max-concurrent-file-group-rewrites", "max-file-group-size-bytes",
             "max-file-size-bytes", "max-files-to-rewrite", "min-file-size-bytes",
             "min-input-files", "partial-progress.enabled", "partial-progress.max-commits",
             "rewrite-all", "rewrite-job-order", "target-file-size-bytes")

    @staticmethod
    def parse(options: Mapping[str, str], properties: Mapping[str, str]) -> DeleteRewriteOptions:
        """Options given as text (unknown names and bad values raise :class:`ValidationError`);
        the target defaults to the table's ``write.delete.target-file-size-bytes`` (64 MiB)."""
        unknown = sorted(set(options) - set(DeleteRewriteOptions.NAMES))
        if unknown:
            raise ValidationError(f"Unknown option {unknown[0]!r}; the options are "
                                  f"{', '.join(DeleteRewriteOptions.NAMES)}")
        default_target = _int(properties, DELETE_TARGET_FILE_SIZE_BYTES,
                              DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT, 1)
        target = _int(options, "target-file-size-bytes", default_target, 1)
        low = _int(options, "min-file-size-bytes", int(target * 0.75), 0)
        high = _int(options, "max-file-size-bytes", int(target * 1.80), 1)
        if not low < target < high:
            raise ValidationError(f"Need min-file-size-bytes ({low}) < target-file-size-bytes "
                                  f"({target}) < max-file-size-bytes ({high})")
        order = options.get("rewrite-job-order", "none").strip().lower()
        if order not in _ORDERS:
            raise ValidationError(f"Option 'rewrite-job-order' must be one of {_ORDERS}, not "
                                  f"{order!r}")
        most = options.get("max-files-to-rewrite")
        return DeleteRewriteOptions(
            target, low, high, _int(options, "min-input-files", 5, 1),
            _bool(options, "rewrite-all"),
            _int(options, "max-file-group-size-bytes", 100 * _GB, 1),
            None if most is None else _int(options, "max-files-to-rewrite", 0, 1),
            _bool(options, "partial-progress.enabled"),
            _int(options, "partial-progress.max-commits", 10, 1),
            _int(options, "max-concurrent-file-group-rewrites", 5, 1), order)

    @property
    def write_max_file_size(self) -> int:
        """The size new files roll at, as the reference's: halfway from target to maximum."""
        return self.target_file_size_bytes + (
            self.max_file_size_bytes - self.target_file_size_bytes) // 2


@dataclass(frozen=True, slots=True)
class Live:
    """A live file of the snapshot and its data sequence number."""

    file: DataFile
    seq: int


@dataclass(frozen=True, slots=True)
class DeleteGroup:
    """Position delete files of one partition to read together, and the live data files
    their rows may still apply to (v3: only those without a deletion vector)."""

    spec_id: int
    partition: tuple[Any, ...]
    deletes: tuple[Live, ...]
    targets: Mapping[str, Live]

    @property
    def size(self) -> int:
        return sum(d.file.file_size_in_bytes for d in self.deletes)

    @property
    def sequence_number(self) -> int:
        return max(d.seq for d in self.deletes)

    def applies(self, delete: Live, path: str) -> bool:
        """Whether ``delete``'s rows for data file ``path`` delete live rows."""
        target = self.targets.get(path)
        return target is not None and target.seq <= delete.seq


@dataclass(slots=True)
class DeletePlan:
    """What to rewrite: groups to read and write, and files to remove unread."""

    format_version: int
    snapshot_id: int | None
    groups: list[DeleteGroup] = field(default_factory=list)
    dangling: list[DataFile] = field(default_factory=list)


def _path_bounds(f: DataFile) -> tuple[bytes | None, bytes | None]:
    return ((f.lower_bounds or {}).get(FILE_PATH.field_id),
            (f.upper_bounds or {}).get(FILE_PATH.field_id))


def _may_reference(delete: DataFile, path: str) -> bool:
    low, high = _path_bounds(delete)
    raw = path.encode("utf-8")
    return (low is None or low <= raw) and (high is None or raw <= high)


def live_files(file_io: FileIO, metadata: TableMetadata, branch: str = MAIN_BRANCH
               ) -> tuple[int | None, list[Live], list[Live]]:
    """The branch's snapshot ID, its live data files and its live position delete files
    (vectors included), with their data sequence numbers."""
    head = branch_head(metadata, branch)
    specs = {s.spec_id: s for s in metadata.partition_specs}
    data: list[Live] = []
    deletes: list[Live] = []
    for manifest in snapshot_manifests(file_io, head):
        for entry in read_manifest(file_io, manifest, specs_by_id=specs, discard_deleted=True):
            seq = entry.sequence_number or 0
            if manifest.content is ManifestContent.DATA:
                data.append(Live(entry.data_file, seq))
            elif entry.data_file.content is FileContent.POSITION_DELETES:
                deletes.append(Live(entry.data_file, seq))
    return None if head is None else head.snapshot_id, data, deletes


def plan(file_io: FileIO, metadata: TableMetadata, options: DeleteRewriteOptions,
         where: str | None = None, branch: str = MAIN_BRANCH) -> DeletePlan:
    """The rewrite of the branch's position deletes (see the module docstring); ``where``
    limits it to the partitions whose rows may match that filter."""
    snapshot_id, data, deletes = live_files(file_io, metadata, branch)
    out = DeletePlan(metadata.format_version, snapshot_id)
    scope = None if where is None else FileFilter(metadata, where)
    by_partition: dict[tuple[int, tuple[Any, ...]], list[Live]] = {}
    for d in data:
        by_partition.setdefault((d.file.spec_id, tuple(d.file.partition)), []).append(d)
    vectors = {d.file.referenced_data_file: d for d in deletes if d.file.is_deletion_vector}
    live_paths = {d.file.file_path: d for d in data}
    for path, dv in vectors.items():  # a vector whose data file is gone, or newer than it
        target = live_paths.get(path or "")
        if (target is None or target.seq > dv.seq) and (
                scope is None or scope.may_match(dv.file)):
            out.dangling.append(dv.file)
    files: dict[tuple[int, tuple[Any, ...]], list[Live]] = {}
    for d in deletes:
        if not d.file.is_deletion_vector and (scope is None or scope.may_match(d.file)):
            files.setdefault((d.file.spec_id, tuple(d.file.partition)), []).append(d)
    v3 = metadata.format_version >= 3
    for (spec_id, partition), found in sorted(files.items(), key=lambda kv: repr(kv[0])):
        targets = {d.file.file_path: d for d in by_partition.get((spec_id, partition), [])
                   if not (v3 and _has_vector(d, vectors))}
        group = DeleteGroup(spec_id, partition, (), targets)
        kept = []
        for d in found:
            if any(group.applies(d, p) for p in targets if _may_reference(d.file, p)):
                kept.append(d)
            else:
                out.dangling.append(d.file)
        if v3:  # every leftover position delete file is converted
            if kept:
                out.groups.append(DeleteGroup(spec_id, partition, tuple(kept), targets))
            continue
        out.groups += [DeleteGroup(spec_id, partition, tuple(g), targets)
                       for g in _select(kept, options)]
    out.groups = _order(out.groups, options)
    if options.max_files_to_rewrite is not None:
        out.groups = _limit(out.groups, options.max_files_to_rewrite)
    return out


def _has_vector(data: Live, vectors: Mapping[str | None, Live]) -> bool:
    dv = vectors.get(data.file.file_path)
    return dv is not None and dv.seq >= data.seq


def _select(files: Sequence[Live], options: DeleteRewriteOptions) -> list[list[Live]]:
    """The groups of one partition to rewrite, by the reference's size rules."""
    candidates = list(files) if options.rewrite_all else [
        d for d in files if not options.min_file_size_bytes <= d.file.file_size_in_bytes
        <= options.max_file_size_bytes]
    groups: list[list[Live]] = []
    size = 0
    for d in sorted(candidates, key=lambda d: -d.file.file_size_in_bytes):
        if not groups or size + d.file.file_size_in_bytes > options.max_file_group_size_bytes:
            groups.append([])
            size = 0
        groups[-1].append(d)
        size += d.file.file_size_in_bytes
    if options.rewrite_all:
        return groups

    def worth(group: list[Live]) -> bool:
        total = sum(d.file.file_size_in_bytes for d in group)
        return ((len(group) > 1 and (len(group) >= options.min_input_files
                                    or total > options.target_file_size_bytes))
                or total > options.max_file_size_bytes)

    return [g for g in groups if worth(g)]


def _order(groups: list[DeleteGroup], options: DeleteRewriteOptions) -> list[DeleteGroup]:
    match options.rewrite_job_order:
        case "bytes-asc":
            return sorted(groups, key=lambda g: g.size)
        case "bytes-desc":
            return sorted(groups, key=lambda g: -g.size)
        case "files-asc":
            return sorted(groups, key=lambda g: len(g.deletes))
        case "files-desc":
            return sorted(groups, key=lambda g: -len(g.deletes))
        case _:
            return groups


def _limit(groups: list[DeleteGroup], most: int) -> list[DeleteGroup]:
    out, taken = [], 0
    for g in groups:
        if taken + len(g.deletes) > most:
            break
        out.append(g)
        taken += len(g.deletes)
    return out


@dataclass(frozen=True, slots=True)
class GroupResult:
    """What rewriting one group wrote: new delete files, the files they replace, the data
    files they reference and the rows read, written and dropped as dangling."""

    removed: tuple[DataFile, ...]
    added: tuple[DataFile, ...]
    sequence_number: int
    referenced: tuple[DataFile, ...]
    rows_read: int
    dangling_rows: int


class RewritePositionDeletes(MergingSnapshotProducer):
    """``replace``: position delete files swapped for compacted ones or deletion vectors, and
    dangling ones removed (see the module docstring)."""

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None) -> None:
        super().__init__(file_io, base, branch=branch, snapshot_properties=snapshot_properties)
        self._referenced: dict[str, DataFile] = {}
        self._own: frozenset[int] = frozenset()

    def ignore_snapshots(self, snapshot_ids: Iterable[int]) -> Self:
        """Snapshots of the same rewrite committed earlier (partial progress): not concurrent
        changes."""
        self._own = frozenset(snapshot_ids)
        return self

    @property
    def operation(self) -> Operation:
        return Operation.REPLACE

    def rewrite(self, removed: Iterable[DataFile], added: Iterable[DataFile],
                sequence_number: int | None = None,
                referenced: Iterable[DataFile] = ()) -> Self:
        """Replace the delete files ``removed`` with ``added`` (data sequence number
        ``sequence_number``: that of what they replace) whose rows delete rows of
        ``referenced`` data files; those must stay live, with no new delete for them."""
        for f in removed:
            if not f.is_delete:
                raise ValidationError(f"{f.file_path} is a data file: only delete files are "
                                      "rewritten here")
            self._remove(f)
        for f in added:
            if f.content is not FileContent.POSITION_DELETES:
                raise ValidationError(f"{f.file_path} is not a position delete file")
            self._add(f, sequence_number)
        self._referenced.update((f.file_path, f) for f in referenced)
        return self

    def _validate(self, attempt: Attempt) -> None:
        for data_file, seq in self._added:
            if seq is not None and seq > attempt.base.last_sequence_number:
                raise ValidationError(
                    f"Data sequence number {seq} of {data_file.file_path} is above the table's "
                    f"last sequence number {attempt.base.last_sequence_number}")
        if not self._referenced:
            return
        changes = ConcurrentChanges(self._io, attempt.base, attempt.parent,
                                    self.starting_snapshot_id)
        changes.snapshots = [s for s in changes.snapshots if s.snapshot_id not in self._own]
        changes.validate_data_files_exist(self._referenced)
        changes.validate_no_new_deletes_for(list(self._referenced.values()))
