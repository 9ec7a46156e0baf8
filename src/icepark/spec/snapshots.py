"""Snapshots, their summaries, and snapshot references (branches and tags).

Spec, *Snapshots*: "The state of a table at some point in time, including the set of all data
files." A snapshot has "A unique long ID", an optional parent, a sequence number ("A
monotonically increasing long that tracks the order of changes to a table"), a timestamp, the
location of its manifest list and a summary "including ``operation``".

Spec, *Snapshot Reference*: "Tags are labels for individual snapshots. Branches are mutable named
references that can be updated by committing a new snapshot as the branch's referenced
snapshot."

These are version-neutral values; how each format version writes them lives in
:mod:`icepark.spec.serde`.

>>> s1 = Snapshot(1, None, 1, 1000, "s3://b/snap-1.avro", Summary(Operation.APPEND), 0)
>>> s2 = Snapshot(2, 1, 2, 2000, "s3://b/snap-2.avro", Summary(Operation.DELETE), 0)
>>> [s.snapshot_id for s in ancestors_of(2, {1: s1, 2: s2})]
[2, 1]
>>> SnapshotRef.tag(1, max_ref_age_ms=86_400_000).ref_type
<RefType.TAG: 'tag'>
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from icepark.errors import ValidationError

MAIN_BRANCH = "main"

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """A read-only, picklable mapping: how spec values hold string maps without leaking a
    mutable ``dict``. Equal to any mapping with the same items; not hashable (fields holding
    one are excluded from their dataclass's hash).

    >>> m = FrozenMap({"a": "1"})
    >>> m["a"], m == {"a": "1"}, dict(m)
    ('1', True, {'a': '1'})
    """

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._data,))


def _check_long(value: object, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{what} must be an integer, not {value!r}")


def _check_string_map(values: Mapping[Any, Any], what: str) -> None:
    for key, value in values.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValidationError(
                f"{what} must map strings to strings, not {key!r} to {value!r}")


class Operation(StrEnum):
    """Spec: "Possible ``operation`` values are" append, replace, overwrite and delete.

    * ``append`` -- "Only data files were added and no files were removed."
    * ``replace`` -- "Data and delete files were added and removed without changing table data"
    * ``overwrite`` -- "Data and delete files were added and removed in a logical overwrite"
    * ``delete`` -- "Data files were removed and their contents logically deleted and/or delete
      files were added to delete rows."
    """

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Summary:
    """"A string map that summarizes the snapshot changes, including ``operation``".

    ``properties`` holds every other summary entry (``added-data-files``, ``total-records``
    ...); it never contains ``operation``.

    >>> Summary(Operation.APPEND, {"added-records": "3"}).properties["added-records"]
    '3'
    >>> Summary(Operation.APPEND, {"operation": "append"})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Summary properties must not contain 'operation': it is the \
operation field
    """

    operation: Operation
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.operation, Operation):
            raise ValidationError(f"Unknown snapshot operation {self.operation!r}")
        props = FrozenMap(self.properties)
        _check_string_map(props, "Snapshot summary")
        if "operation" in props:
            raise ValidationError(
                "Summary properties must not contain 'operation': it is the operation field")
        object.__setattr__(self, "properties", props)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One snapshot of a table (spec, *Snapshots*).

    ``manifests`` is the v1-only inline manifest list: "A list of manifest file locations. Must
    be omitted if ``manifest-list`` is present". ``first_row_id`` and ``added_rows`` are the v3
    row-lineage fields; icepark keeps them so tables written by others round-trip.
    """

    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str | None
    summary: Summary | None
    schema_id: int | None
    manifests: tuple[str, ...] = ()
    first_row_id: int | None = None
    added_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "manifests", tuple(self.manifests))
        _check_long(self.snapshot_id, "Snapshot ID")
        _check_long(self.sequence_number, f"Sequence number of snapshot {self.snapshot_id}")
        _check_long(self.timestamp_ms, f"Timestamp of snapshot {self.snapshot_id}")
        if self.sequence_number < 0:
            raise ValidationError(
                f"Sequence number of snapshot {self.snapshot_id} must not be negative: "
                f"{self.sequence_number}")
        if self.manifest_list is not None and self.manifests:
            raise ValidationError(
                f"Snapshot {self.snapshot_id} has both a manifest list and inline manifests: "
                "manifests \"Must be omitted if manifest-list is present\"")
        if self.parent_snapshot_id == self.snapshot_id:
            raise ValidationError(f"Snapshot {self.snapshot_id} cannot be its own parent")
        for name in ("first_row_id", "added_rows"):
            value = getattr(self, name)
            if value is not None:
                _check_long(value, f"{name} of snapshot {self.snapshot_id}")
                if value < 0:
                    raise ValidationError(
                        f"{name} of snapshot {self.snapshot_id} must not be negative: {value}")

    @property
    def operation(self) -> Operation | None:
        """The summary's operation, or None for a v1 snapshot without a summary."""
        return None if self.summary is None else self.summary.operation


class RefType(StrEnum):
    """"Type of the reference, ``tag`` or ``branch``"."""

    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A named reference to a snapshot with its retention policy (spec, *Snapshot Reference*).

    ``min_snapshots_to_keep`` and ``max_snapshot_age_ms`` are "For ``branch`` type only, a
    positive number"; ``max_ref_age_ms`` is "a positive number for the max age of the snapshot
    reference to keep while expiring snapshots". ``None`` means the table property default.

    >>> SnapshotRef.branch(7, min_snapshots_to_keep=0)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: min-snapshots-to-keep must be a positive number, not 0
    >>> SnapshotRef(7, RefType.TAG, min_snapshots_to_keep=2)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Tags cannot have min-snapshots-to-keep: it is "For branch \
type only"
    """

    snapshot_id: int
    ref_type: RefType
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        _check_long(self.snapshot_id, "Reference snapshot ID")
        if not isinstance(self.ref_type, RefType):
            raise ValidationError(f"Unknown reference type {self.ref_type!r}: "
                                  "must be 'branch' or 'tag'")
        for key, value in (("min-snapshots-to-keep", self.min_snapshots_to_keep),
                           ("max-snapshot-age-ms", self.max_snapshot_age_ms),
                           ("max-ref-age-ms", self.max_ref_age_ms)):
            if value is None:
                continue
            _check_long(value, key)
            if value <= 0:
                raise ValidationError(f"{key} must be a positive number, not {value}")
            if self.ref_type is RefType.TAG and key != "max-ref-age-ms":
                raise ValidationError(f'Tags cannot have {key}: it is "For branch type only"')

    @staticmethod
    def branch(snapshot_id: int, *, min_snapshots_to_keep: int | None = None,
               max_snapshot_age_ms: int | None = None,
               max_ref_age_ms: int | None = None) -> SnapshotRef:
        """A branch: "mutable named references that can be updated by committing"."""
        return SnapshotRef(snapshot_id, RefType.BRANCH, min_snapshots_to_keep,
                           max_snapshot_age_ms, max_ref_age_ms)

    @staticmethod
    def tag(snapshot_id: int, *, max_ref_age_ms: int | None = None) -> SnapshotRef:
        """A tag: "labels for individual snapshots"."""
        return SnapshotRef(snapshot_id, RefType.TAG, None, None, max_ref_age_ms)

    @property
    def is_branch(self) -> bool:
        return self.ref_type is RefType.BRANCH


def ancestors_of(snapshot_id: int | None,
                 snapshots_by_id: Mapping[int, Snapshot]) -> Iterator[Snapshot]:
    """The snapshot ``snapshot_id`` and then its parents, newest first.

    The walk stops at a snapshot with no parent or whose parent is no longer in the table
    (expired); a parent cycle is a :class:`ValidationError`.

    >>> list(ancestors_of(None, {}))
    []
    """
    seen: set[int] = set()
    current = None if snapshot_id is None else snapshots_by_id.get(snapshot_id)
    while current is not None:
        if current.snapshot_id in seen:
            raise ValidationError(
                f"Snapshot {current.snapshot_id} is its own ancestor: the parent chain has a cycle")
        seen.add(current.snapshot_id)
        yield current
        parent = current.parent_snapshot_id
        current = None if parent is None else snapshots_by_id.get(parent)
