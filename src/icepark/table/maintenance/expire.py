"""Snapshot expiration: the spec's retention policy, and deleting the files only expired
snapshots reach.

Spec, *Snapshot Retention Policy*: "Table snapshots expire and are removed from metadata to
allow removed or replaced data files to be physically deleted." And: "When expiring snapshots,
retention policies in table and snapshot references are evaluated in the following way:

1. Start with an empty set of snapshots to retain
2. Remove any refs (other than main) where the referenced snapshot is older than
   ``max-ref-age-ms``
3. For each branch and tag, add the referenced snapshot to the retained set
4. For each branch, add its ancestors to the retained set until:
   1. The snapshot is older than ``max-snapshot-age-ms``, AND
   2. The snapshot is not one of the first ``min-snapshots-to-keep`` in the branch (including
      the branch's referenced snapshot)
5. Expire any snapshot not in the set of snapshots to retain."

The settings come from the reference ("Defaults to table property
``history.expire.min-snapshots-to-keep``", ...); ``older_than_ms`` and ``retain_last`` replace
the table property defaults, not a reference's own settings. As step 5 says, a snapshot no
branch or tag reaches expires whatever its age (the reference implementation keeps young ones).

Files are deleted only after the commit succeeded, and only those no retained snapshot can
reach (spec: "A data file must not be deleted from the file system until the last snapshot in
which it was listed is garbage collected"): manifest lists of expired snapshots, manifests only
expired snapshots list, and data and delete files listed in those manifests that are not live
in any retained snapshot. Files outside the table location are never deleted, and data and
delete files not at all when the table property ``gc.enabled`` is false (a table that does not
own its files).

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.snapshots import Snapshot
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> day = 86_400_000
>>> snaps = [Snapshot(i, i - 1 or None, i, i * day, f"/t/metadata/snap-{i}.avro", None, 0)
...          for i in (1, 2, 3)]
>>> md = MetadataBuilder(md).apply_all(
...     [*map(u.AddSnapshot, snaps), u.SetSnapshotRef("main", SnapshotRef.branch(3))]).build()
>>> plan_expiry(md, now_ms=10 * day, older_than_ms=int(2.5 * day))
ExpiryPlan(removed_refs=(), expired_snapshot_ids=(1, 2))
>>> plan_expiry(md, now_ms=10 * day, older_than_ms=int(2.5 * day), retain_last=2)
ExpiryPlan(removed_refs=(), expired_snapshot_ids=(1,))
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.manifest import ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import gc_enabled
from icepark.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, ancestors_of
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import now_ms as clock_ms

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000  # 5 days
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"  # default: forever


@dataclass(frozen=True, slots=True)
class ExpiryPlan:
    """What an expiry removes from the metadata."""

    removed_refs: tuple[str, ...]
    expired_snapshot_ids: tuple[int, ...]

    @property
    def is_empty(self) -> bool:
        return not self.removed_refs and not self.expired_snapshot_ids


def _positive_property(props: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = props.get(key)
    if raw is None:
        return default
    if not raw.strip().isdigit() or int(raw) <= 0:
        raise ValidationError(f"Table property {key} must be a positive integer, not {raw!r}")
    return int(raw)


def plan_expiry(metadata: TableMetadata, now_ms: int, *, older_than_ms: int | None = None,
                retain_last: int | None = None,
                snapshot_ids: Iterable[int] = ()) -> ExpiryPlan:
    """Apply the retention policy at time ``now_ms``.

    ``older_than_ms`` is the timestamp before which branch snapshots may expire (default:
    ``now_ms`` minus ``history.expire.max-snapshot-age-ms``), ``retain_last`` the number of
    snapshots each branch keeps (default ``history.expire.min-snapshots-to-keep``).
    ``snapshot_ids`` are expired as well, even when the policy would retain them as ancestors;
    given alone, only they expire. A snapshot a retained branch or tag points to cannot be
    expired; main never expires. Unknown IDs are ignored (a concurrent expiry removed them).
    """
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1, not {retain_last}: a branch "
                              "always keeps its referenced snapshot")
    explicit = set(snapshot_ids)
    use_policy = older_than_ms is not None or retain_last is not None or not explicit
    props = metadata.properties
    max_age = _positive_property(props, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
    min_keep = retain_last or _positive_property(props, MIN_SNAPSHOTS_TO_KEEP,
                                                 MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    max_ref_age = _positive_property(props, MAX_REF_AGE_MS, None)
    default_older_than = older_than_ms if older_than_ms is not None else now_ms - (max_age or 0)
    by_id = metadata.snapshots_by_id

    removed = []  # step 2
    for name, ref in metadata.refs.items():
        ref_age = ref.max_ref_age_ms or max_ref_age
        if (use_policy and name != MAIN_BRANCH and ref_age is not None
                and now_ms - by_id[ref.snapshot_id].timestamp_ms > ref_age):
            removed.append(name)
    kept = {name: ref for name, ref in metadata.refs.items() if name not in removed}

    retained = {ref.snapshot_id for ref in kept.values()}  # steps 1 and 3
    for snapshot_id in sorted(explicit & retained):
        holders = sorted(name for name, ref in kept.items() if ref.snapshot_id == snapshot_id)
        raise ValidationError(f"Cannot expire snapshot {snapshot_id}: it is still referenced "
                              f"by {', '.join(map(repr, holders))}; move or remove those first")
    if not use_policy:
        return ExpiryPlan((), tuple(sorted(explicit & set(by_id))))

    for ref in kept.values():  # step 4
        if ref.is_branch:
            retained |= _branch_retains(ref, by_id, now_ms, default_older_than, min_keep or 1)
    expired = (set(by_id) - retained) | (explicit & set(by_id))  # step 5
    return ExpiryPlan(tuple(sorted(removed)), tuple(sorted(expired)))


def _branch_retains(ref: SnapshotRef, by_id: Mapping[int, Snapshot], now_ms: int,
                    default_older_than: int, default_min_keep: int) -> set[int]:
    """Step 4: the branch's ancestors until one is both too old and beyond the first
    ``min-snapshots-to-keep``."""
    older_than = (default_older_than if ref.max_snapshot_age_ms is None
                  else now_ms - ref.max_snapshot_age_ms)
    min_keep = ref.min_snapshots_to_keep or default_min_keep
    kept: set[int] = set()
    for position, snapshot in enumerate(ancestors_of(ref.snapshot_id, by_id)):
        if snapshot.timestamp_ms < older_than and position >= min_keep:
            break
        kept.add(snapshot.snapshot_id)
    return kept


class ExpireSnapshots:
    """The expiry as a :class:`~icepark.table.change.commit.Change`: replanned on every attempt.

    It asserts that no branch or tag moved (``AssertRefSnapshotId`` for each), so a concurrent
    commit makes it replan on the refreshed table. It writes no files; the files it makes
    unreachable are deleted by :func:`delete_unreachable_files` after the commit.
    """

    def __init__(self, older_than_ms: int | None = None, retain_last: int | None = None,
                 snapshot_ids: Iterable[int] = (),
                 clock: Callable[[], int] = clock_ms) -> None:
        self.older_than_ms = older_than_ms
        self.retain_last = retain_last
        self.snapshot_ids = tuple(snapshot_ids)
        self._clock = clock
        self.last_base: TableMetadata | None = None
        self.last_plan = ExpiryPlan((), ())

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        plan = plan_expiry(base, self._clock(), older_than_ms=self.older_than_ms,
                           retain_last=self.retain_last, snapshot_ids=self.snapshot_ids)
        self.last_base, self.last_plan = base, plan
        if plan.is_empty:
            return [], []
        requirements: list[u.TableRequirement] = [
            u.AssertRefSnapshotId(name, ref.snapshot_id) for name, ref in base.refs.items()]
        updates: list[u.TableUpdate] = [u.RemoveSnapshotRef(n) for n in plan.removed_refs]
        if plan.expired_snapshot_ids:
            updates.append(u.RemoveSnapshots(plan.expired_snapshot_ids))
        return requirements, updates

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


@dataclass(frozen=True, slots=True)
class ExpireResult:
    """What an expiry removed: references and snapshots from the metadata, then files.

    ``kept_outside_location`` lists unreachable files that were not deleted because they are
    outside the table location; ``failed`` the deletes that raised; ``error`` why no file was
    deleted when the reachable files could not be determined.
    """

    expired_snapshot_ids: tuple[int, ...] = ()
    removed_refs: tuple[str, ...] = ()
    deleted_manifest_lists: tuple[str, ...] = ()
    deleted_manifests: tuple[str, ...] = ()
    deleted_data_files: tuple[str, ...] = ()
    deleted_delete_files: tuple[str, ...] = ()
    deleted_statistics_files: tuple[str, ...] = ()
    kept_outside_location: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    error: str | None = field(default=None)

    @property
    def deleted_files(self) -> tuple[str, ...]:
        return (*self.deleted_data_files, *self.deleted_delete_files, *self.deleted_manifests,
                *self.deleted_manifest_lists, *self.deleted_statistics_files)




def _inside(location: str, table_location: str) -> bool:
    return (location.startswith(table_location.rstrip("/") + "/")
            and ".." not in location.split("/"))


def delete_unreachable_files(file_io: FileIO, base: TableMetadata,
                             committed: TableMetadata) -> ExpireResult:
    """Delete the files of the snapshots of ``base`` that are gone from ``committed`` and that
    no snapshot of ``committed`` reaches.

    Reachable: the retained snapshots' manifest lists, every manifest they list, and every
    file live (added or existing) in those manifests. If any of these cannot be read, nothing
    is deleted. Expired snapshots whose manifest lists or manifests are already gone are
    skipped.
    """
    expired = [s for s in base.snapshots if committed.snapshot_by_id(s.snapshot_id) is None]
    specs = {s.spec_id: s for s in committed.partition_specs}
    try:
        lists = {s.manifest_list for s in committed.snapshots if s.manifest_list}
        manifests: dict[str, ManifestFile] = {}
        for snapshot in committed.snapshots:
            manifests.update((m.manifest_path, m) for m in snapshot_manifests(file_io, snapshot))
    except Exception as e:  # any failure means: delete nothing
        return ExpireResult(error=f"Cannot read the retained snapshots' manifests, so no file "
                                  f"was deleted: {type(e).__name__}: {e}")
    doomed_lists: list[str] = []
    doomed_manifests: dict[str, ManifestFile] = {}
    for snapshot in expired:
        try:
            own = snapshot_manifests(file_io, snapshot)
        except Exception:  # already gone: nothing of it to find
            continue
        if snapshot.manifest_list and snapshot.manifest_list not in lists:
            doomed_lists.append(snapshot.manifest_list)
        doomed_manifests.update((m.manifest_path, m) for m in own
                                if m.manifest_path not in manifests)
    doomed_files: dict[str, bool] = {}  # location -> is a delete file
    for manifest in doomed_manifests.values() if gc_enabled(committed.properties) else ():
        with contextlib.suppress(Exception):
            for entry in read_manifest(file_io, manifest, specs_by_id=specs):
                doomed_files[entry.data_file.file_path] = entry.data_file.is_delete
    if doomed_files:
        try:
            for manifest in manifests.values():
                for entry in read_manifest(file_io, manifest, specs_by_id=specs,
                                           discard_deleted=True):
                    doomed_files.pop(entry.data_file.file_path, None)
        except Exception as e:  # any failure means: delete nothing
            return ExpireResult(error=f"Cannot read the retained snapshots' manifests, so no "
                                      f"file was deleted: {type(e).__name__}: {e}")
    retained_stats = {s.statistics_path for s in committed.statistics} | {
        s.statistics_path for s in committed.partition_statistics}
    expired_ids = {s.snapshot_id for s in expired}
    stats = sorted({path for snapshot_id, path in (
        *((s.snapshot_id, s.statistics_path) for s in base.statistics),
        *((s.snapshot_id, s.statistics_path) for s in base.partition_statistics))
        if snapshot_id in expired_ids and path not in retained_stats})
    deleter = _Deleter(file_io, committed.location)
    return ExpireResult(
        deleted_data_files=deleter.delete(sorted(p for p, d in doomed_files.items() if not d)),
        deleted_delete_files=deleter.delete(sorted(p for p, d in doomed_files.items() if d)),
        deleted_manifests=deleter.delete(sorted(doomed_manifests)),
        deleted_manifest_lists=deleter.delete(sorted(doomed_lists)),
        deleted_statistics_files=deleter.delete(stats),
        kept_outside_location=tuple(deleter.outside), failed=tuple(deleter.failed))


class _Deleter:
    """Deletes files inside the table location, recording what it skipped or failed."""

    def __init__(self, file_io: FileIO, location: str) -> None:
        self._io, self._location = file_io, location
        self.outside: list[str] = []
        self.failed: list[str] = []

    def delete(self, locations: Iterable[str]) -> tuple[str, ...]:
        done = []
        for location in locations:
            if not _inside(location, self._location):
                self.outside.append(location)
                continue
            try:
                self._io.delete(location)
            except Exception:  # reported in the result
                self.failed.append(location)
                continue
            done.append(location)
        return tuple(done)
