"""Rewrite manifests: the same files, listed again in manifests clustered by partition.

Spec, *Snapshots*: ``replace`` -- "Data and delete files were added and removed without changing
table data"; and "Large tables can be split across multiple manifests so that implementations
can parallelize job planning or reduce the cost of rewriting a manifest." Spec, *Manifest Lists*:
"Manifest lists include summary metadata that can be used to avoid scanning all of the manifests
in a snapshot when planning a table scan. This includes [...] partition value ranges", which
only narrow when a manifest holds few partitions: hence the clustering.

Spec, *Manifest Entry Fields*: "When a file is replaced or deleted from the dataset, its manifest
entry fields store the snapshot ID in which the file was deleted and status 2 (deleted)." and
*Sequence Number Inheritance*: "When writing an existing file to a new manifest or marking an
existing file as deleted, the data and file sequence numbers must be non-null and set to the
original values that were either inherited or provided at the commit time." Every live entry of a
rewritten manifest is written EXISTING with its original snapshot ID and both sequence numbers;
entries already DELETED are dropped (the snapshots that deleted them keep their own manifests,
so time travel still reads them). Data files of a v3 table keep their ``first_row_id``
explicitly: the new manifests' ``first_row_id`` ranges cover existing rows too (*First Row ID
Assignment*), so no file's row IDs change.

The manifests of each (content, partition spec) group of the branch's snapshot are read, their
live entries sorted by :func:`partition_sort_key` (the partition tuple, or the fields named by
``sort_by`` first) and written into manifests of about ``commit.manifest.target-size-bytes``
(default 8 MiB): the number of entries per manifest is estimated from the bytes per entry of the
manifests read. As in the reference implementation, a group of a single manifest that fits the
target is left alone, and ``spec_id`` restricts the rewrite to one spec (None: every spec).

Conflicts (*Commit Conflict Resolution and Retry*): each attempt plans on the refreshed branch.
Manifests written here are reused while the manifests they replace are all still in the branch;
when a concurrent commit replaced one (a delete, a compaction), the group is rewritten from the
new manifests, so its change is kept and never undone; a concurrent append's manifest joins the
rewrite. Manifests written elsewhere (:meth:`RewriteManifests.replace_manifests`, e.g. by Spark
tasks) cannot be redone here: the attempt fails with :class:`ValidationError` instead, and the
caller's manifests are deleted (:meth:`~SnapshotProducer.delete_on_failure`).
"""

from __future__ import annotations

import math
import struct
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Self

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import ManifestWriter
from icepark.spec.manifest import ManifestContent, ManifestEntry, ManifestFile
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.properties import int_property
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH, Operation
from icepark.table.snapshot.append import (
    MANIFEST_TARGET_SIZE_BYTES,
    MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
)
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.producer import Attempt, SnapshotProducer, branch_head


def target_size(properties: Mapping[str, str], override: int | None = None) -> int:
    """The manifest target size: ``override``, else ``commit.manifest.target-size-bytes``.

    >>> target_size({}), target_size({"commit.manifest.target-size-bytes": "1024"}, 10)
    (8388608, 10)
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override <= 0:
            raise ValidationError(f"The manifest target size must be a positive number of "
                                  f"bytes, not {override!r}")
        return override
    return int_property(properties, MANIFEST_TARGET_SIZE_BYTES,
                        MANIFEST_TARGET_SIZE_BYTES_DEFAULT, minimum=1)


# ----------------------------------------------------------------------------- clustering

def _escaped(raw: bytes) -> bytes:
    """Bytes that sort as ``raw`` does and end a field: each 0x00 doubled as 0x00 0xFF, then
    0x00 0x00."""
    return raw.replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def value_sort_key(value: Any) -> bytes:
    """An order-preserving byte string of one partition value: byte strings compare as the
    values do (null first), and each is self-delimiting, so a concatenation compares as the
    tuple does. Spark sorts binary columns the same way, unsigned and bytewise.

    >>> sorted([3, -2, None, 10], key=value_sort_key)
    [None, -2, 3, 10]
    >>> value_sort_key("a") < value_sort_key("a\\x00") < value_sort_key("ab")
    True
    """
    match value:
        case None:
            return b"\x00"
        case bool():
            return b"\x01\x01" if value else b"\x01\x00"
        case int():
            return b"\x01" + (value + (1 << 127)).to_bytes(16, "big")
        case float():
            bits: int = struct.unpack(">Q", struct.pack(">d", value))[0]
            bits = bits ^ ((1 << 64) - 1) if bits >> 63 else bits | (1 << 63)
            return b"\x01" + bits.to_bytes(8, "big")
        case Decimal():  # one field's values share a scale: compare unscaled
            unscaled = int(value.scaleb(-int(value.as_tuple().exponent)))
            return b"\x01" + (unscaled + (1 << 127)).to_bytes(16, "big")
        case str():
            return b"\x01" + _escaped(value.encode("utf-8"))
        case bytes() | bytearray():
            return b"\x01" + _escaped(bytes(value))
        case uuid_module.UUID():
            return b"\x01" + value.bytes
        case _:
            return b"\x01" + _escaped(repr(value).encode("utf-8"))


def sort_positions(spec: PartitionSpec, sort_by: Sequence[str] | None) -> tuple[int, ...]:
    """The positions in the partition tuple to sort by: the fields named in ``sort_by`` (names
    of the spec's partition fields), then the spec's other fields in order."""
    names = [f.name for f in spec.fields]
    chosen: list[int] = []
    for name in sort_by or ():
        if name not in names:
            raise ValidationError(
                f"Cannot sort manifests of partition spec {spec.spec_id} by {name!r}: it is not "
                f"one of its partition fields {names}")
        if names.index(name) not in chosen:
            chosen.append(names.index(name))
    return (*chosen, *(i for i in range(len(names)) if i not in chosen))


def partition_sort_key(partition: Sequence[Any], positions: Sequence[int]) -> bytes:
    """The clustering key of an entry: its partition values at ``positions``, encoded by
    :func:`value_sort_key`."""
    return b"".join(value_sort_key(partition[i] if i < len(partition) else None)
                    for i in positions)


def entries_per_manifest(manifests: Sequence[ManifestFile], target_bytes: int) -> int:
    """How many entries fit a manifest of ``target_bytes``, by the bytes per entry of
    ``manifests`` (every entry counts, deleted ones too: they took the bytes)."""
    entries = sum((m.added_files_count or 0) + (m.existing_files_count or 0)
                  + (m.deleted_files_count or 0) for m in manifests)
    size = sum(m.manifest_length for m in manifests)
    if entries <= 0 or size <= 0:
        return 1 << 30
    return max(1, int(target_bytes // (size / entries)))


@dataclass(frozen=True, slots=True)
class ManifestGroup:
    """The manifests of one content and partition spec to rewrite together."""

    content: ManifestContent
    spec_id: int
    manifests: tuple[ManifestFile, ...]

    @property
    def size(self) -> int:
        return sum(m.manifest_length for m in self.manifests)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(m.manifest_path for m in self.manifests)


def plan_groups(manifests: Sequence[ManifestFile], target_bytes: int,
                spec_id: int | None = None) -> list[ManifestGroup]:
    """The groups of ``manifests`` worth rewriting: those of ``spec_id`` (None: any), by content
    and spec, leaving out a group of one manifest that already fits ``target_bytes``."""
    groups: dict[tuple[ManifestContent, int], list[ManifestFile]] = {}
    for m in manifests:
        if spec_id is None or m.partition_spec_id == spec_id:
            groups.setdefault((m.content, m.partition_spec_id), []).append(m)
    out = []
    for (content, sid), group in sorted(groups.items()):
        if len(group) == 1 and math.ceil(group[0].manifest_length / target_bytes) <= 1:
            continue
        out.append(ManifestGroup(content, sid, tuple(group)))
    return out


@dataclass(frozen=True, slots=True)
class ManifestTarget:
    """What writing one group's manifests needs: plain, picklable values (Spark tasks get it)."""

    spec: PartitionSpec
    schema: Schema
    format_version: FormatVersion
    content: ManifestContent
    properties: Mapping[str, str]
    per_manifest: int
    snapshot_id: int | None = None


def write_sorted(file_io: FileIO, target: ManifestTarget, entries: Iterable[ManifestEntry],
                 new_location: Callable[[], str]) -> list[ManifestFile]:
    """Write ``entries`` (live, in clustering order) as EXISTING entries into consecutive
    manifests of at most ``target.per_manifest`` entries each; on an error, every manifest
    written is deleted."""
    written: list[ManifestFile] = []
    writer: ManifestWriter | None = None
    count = 0
    try:
        for entry in entries:
            if writer is None or count >= target.per_manifest:
                if writer is not None:
                    writer.close()
                    written.append(writer.to_manifest_file())
                writer = ManifestWriter(file_io, new_location(), target.spec, target.schema,
                                        target.format_version, target.content,
                                        target.snapshot_id, properties=target.properties)
                count = 0
            writer.existing(entry)
            count += 1
        if writer is not None:
            writer.close()
            written.append(writer.to_manifest_file())
    except BaseException:
        if writer is not None:
            writer.abort()
        for m in written:
            file_io.delete(m.manifest_path)
        raise
    return written


def live_entries(entries: Iterable[ManifestEntry]) -> Iterator[ManifestEntry]:
    """The live (added or existing) entries: those a rewritten manifest carries."""
    return (e for e in entries if e.is_live)


@dataclass(frozen=True, slots=True)
class RewriteManifestsResult:
    """What a manifest rewrite did: manifests and entries read and written, and the snapshot
    it committed (None when there was nothing to rewrite)."""

    rewritten_manifests_count: int = 0
    added_manifests_count: int = 0
    rewritten_entries_count: int = 0
    added_entries_count: int = 0
    snapshot_id: int | None = None


@dataclass(slots=True)
class _Rewrite:
    """The manifests one attempt replaces and those it adds."""

    rewritten: list[ManifestFile] = field(default_factory=list)
    added: list[ManifestFile] = field(default_factory=list)


def _entries(manifests: Iterable[ManifestFile]) -> int:
    return sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in manifests)


class RewriteManifests(SnapshotProducer):
    """``replace``: the branch's manifests rewritten, clustered by partition (see the module
    docstring)."""

    def __init__(self, file_io: FileIO, base: TableMetadata, *, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None,
                 spec_id: int | None = None, sort_by: Sequence[str] | None = None,
                 target_size_bytes: int | None = None) -> None:
        super().__init__(file_io, base, branch=branch, snapshot_properties=snapshot_properties)
        if spec_id is not None and base.spec_by_id(spec_id) is None:
            raise ValidationError(f"Unknown partition spec {spec_id}: the table's specs are "
                                  f"{sorted(s.spec_id for s in base.partition_specs)}")
        self.spec_id = spec_id
        self.sort_by = tuple(sort_by or ())
        # names are checked against the spec rewritten (default: the current one); the
        # manifests of other specs sort by those of the names they have, then their own fields
        rewritten = base.spec() if spec_id is None else base.spec_by_id(spec_id)
        sort_positions(rewritten or base.spec(), self.sort_by)
        self.target_size_bytes = target_size(base.properties, target_size_bytes)
        self._external: _Rewrite | None = None
        self._cache: dict[tuple[tuple[str, ...], int | None], list[ManifestFile]] = {}
        self.last = _Rewrite()
        """The manifests the last attempt replaced and added."""

    @property
    def operation(self) -> Operation:
        return Operation.REPLACE

    def replace_manifests(self, rewritten: Iterable[ManifestFile],
                          added: Iterable[ManifestFile]) -> Self:
        """Replace ``rewritten`` (manifests of the branch's snapshot) with ``added``, written
        by the caller with the same live files as EXISTING entries. ``added`` are deleted if
        the commit fails for a known reason."""
        self._check_open()
        old, new = list(rewritten), list(added)
        if _entries(old) != _entries(new):
            raise ValidationError(
                f"The new manifests list {_entries(new)} live files but the manifests they "
                f"replace list {_entries(old)}: a manifest rewrite must keep every file")
        self._external = _Rewrite(old, new)
        self.delete_on_failure(*(m.manifest_path for m in new))
        return self

    def result(self, snapshot_id: int | None) -> RewriteManifestsResult:
        """What the last attempt did, as committed in ``snapshot_id``."""
        return RewriteManifestsResult(len(self.last.rewritten), len(self.last.added),
                                      _entries(self.last.rewritten), _entries(self.last.added),
                                      snapshot_id)

    def groups(self, metadata: TableMetadata | None = None) -> list[ManifestGroup]:
        """The groups a rewrite of ``metadata`` (default: the planned version) would replace."""
        head = branch_head(metadata or self._planned, self.branch)
        return plan_groups(snapshot_manifests(self._io, head), self.target_size_bytes,
                           self.spec_id)

    def target(self, attempt_base: TableMetadata, group: ManifestGroup,
               snapshot_id: int | None) -> ManifestTarget:
        """How to write the manifests of ``group`` (spec, schema, entries per manifest)."""
        spec = attempt_base.spec_by_id(group.spec_id)
        if spec is None:
            raise ValidationError(f"Unknown partition spec {group.spec_id}")
        schema = _binding_schema(attempt_base, spec)
        return ManifestTarget(spec, schema, attempt_base.format_version, group.content,
                              dict(attempt_base.properties),
                              entries_per_manifest(group.manifests, self.target_size_bytes),
                              snapshot_id)

    def sort_key(self, spec: PartitionSpec) -> Callable[[ManifestEntry], bytes]:
        positions = sort_positions(spec, [n for n in self.sort_by
                                          if n in {f.name for f in spec.fields}])
        return lambda e: partition_sort_key(e.data_file.partition, positions) + \
            e.data_file.file_path.encode("utf-8")

    # ------------------------------------------------------------------------ hooks

    def _merge(self, attempt: Attempt, new: list[ManifestFile],
               kept: list[ManifestFile]) -> list[ManifestFile]:
        if self._external is not None:
            rewrite = self._external
            present = {m.manifest_path for m in attempt.parent_manifests}
            gone = [m.manifest_path for m in rewrite.rewritten if m.manifest_path not in present]
            if gone:
                raise ValidationError(
                    f"Cannot rewrite manifests: {len(gone)} of them are no longer in branch "
                    f"{self.branch!r} (a concurrent commit changed their files): "
                    f"{', '.join(gone[:3])}; run the rewrite again")
        else:
            rewrite = _Rewrite()
            for group in plan_groups(attempt.parent_manifests, self.target_size_bytes,
                                     self.spec_id):
                rewrite.rewritten += group.manifests
                rewrite.added += self._write_group(attempt, group)
        attempt.own.update(m.manifest_path for m in rewrite.added)
        replaced = {m.manifest_path for m in rewrite.rewritten}
        self.last = rewrite
        attempt.summary.custom = {
            **attempt.summary.custom,
            "manifests-created": str(len(rewrite.added)),
            "manifests-replaced": str(len(rewrite.rewritten)),
            "manifests-kept": str(sum(1 for m in kept if m.manifest_path not in replaced)),
            "entries-processed": str(_entries(rewrite.added))}
        return [*new, *rewrite.added, *(m for m in kept if m.manifest_path not in replaced)]

    def _write_group(self, attempt: Attempt, group: ManifestGroup) -> list[ManifestFile]:
        key = (group.paths, attempt.writer_snapshot_id)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        target = self.target(attempt.base, group, attempt.writer_snapshot_id)
        order = self.sort_key(target.spec)
        entries = sorted((e for m in group.manifests
                          for e in live_entries(self.read_entries(attempt, m))), key=order)

        written = write_sorted(self._io, target, entries,
                               lambda: self._new_location(attempt))
        self._cache[key] = written
        return written

    def _new_location(self, attempt: Attempt) -> str:
        """A new manifest location of this commit, deleted by :meth:`clean_up` when no
        committed snapshot uses it."""
        location = LocationProvider.of(attempt.base).manifest_location(
            self.commit_uuid, self._manifest_count)
        self._manifest_count += 1
        self._written.append(location)
        attempt.own.add(location)
        return location

    def clean_up(self, committed: bool) -> None:
        super().clean_up(committed)
        self._cache.clear()


def _binding_schema(metadata: TableMetadata, spec: PartitionSpec) -> Schema:
    """The newest schema ``spec`` binds to (the current one unless a source column was
    dropped since)."""
    for schema in (metadata.schema(), *reversed(metadata.schemas)):
        try:
            spec.partition_type(schema)
        except ValidationError:
            continue
        return schema
    raise ValidationError(f"Partition spec {spec.spec_id} binds to none of the table's schemas")
