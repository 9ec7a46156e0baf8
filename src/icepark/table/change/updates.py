"""Changes as data: table updates and the requirements a commit checks before applying them.

Spec, *Optimistic Concurrency*: "Writers create table metadata files optimistically, assuming
that the current version will not be changed before the writer's commit." A commit is a list of
:data:`TableUpdate` records (what to change) and :data:`TableRequirement` records (what must
still hold of the table the change was based on). One builder
(:class:`icepark.table.change.metadata_builder.MetadataBuilder`) applies updates and enforces every
metadata invariant; one compare-and-swap in the catalog commits them. The records mirror the
Iceberg REST catalog's update and requirement types, so a REST catalog can send them as they are.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from icepark.errors import CommitFailed
from icepark.spec.metadata import (
    FormatVersion,
    PartitionStatisticsFile,
    StatisticsFile,
    TableMetadata,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot, SnapshotRef
from icepark.spec.sorting import SortOrder

LAST_ADDED = -1
"""``SetCurrentSchema``/``SetDefaultSpec``/``SetDefaultSortOrder`` with this ID select the
schema, spec or order added earlier in the same commit."""


@dataclass(frozen=True, slots=True)
class AssignUUID:
    uuid: uuid.UUID


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion:
    format_version: FormatVersion


@dataclass(frozen=True, slots=True)
class AddSchema:
    """Add a schema; ``last_column_id`` is the highest field ID assigned so far."""

    schema: Schema
    last_column_id: int


@dataclass(frozen=True, slots=True)
class SetCurrentSchema:
    schema_id: int


@dataclass(frozen=True, slots=True)
class AddPartitionSpec:
    spec: PartitionSpec


@dataclass(frozen=True, slots=True)
class SetDefaultSpec:
    spec_id: int


@dataclass(frozen=True, slots=True)
class AddSortOrder:
    sort_order: SortOrder


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder:
    sort_order_id: int


@dataclass(frozen=True, slots=True)
class AddSnapshot:
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class SetSnapshotRef:
    """Point a branch or tag at a snapshot; setting ``main`` changes the current snapshot."""

    ref_name: str
    ref: SnapshotRef


@dataclass(frozen=True, slots=True)
class RemoveSnapshots:
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef:
    ref_name: str


@dataclass(frozen=True, slots=True)
class SetLocation:
    location: str


@dataclass(frozen=True, slots=True)
class SetProperties:
    updates: Mapping[str, str] = field(hash=False)


@dataclass(frozen=True, slots=True)
class RemoveProperties:
    removals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetStatistics:
    statistics: StatisticsFile


@dataclass(frozen=True, slots=True)
class RemoveStatistics:
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class SetPartitionStatistics:
    partition_statistics: PartitionStatisticsFile


@dataclass(frozen=True, slots=True)
class RemovePartitionStatistics:
    snapshot_id: int


TableUpdate = (
    AssignUUID | UpgradeFormatVersion | AddSchema | SetCurrentSchema | AddPartitionSpec
    | SetDefaultSpec | AddSortOrder | SetDefaultSortOrder | AddSnapshot | SetSnapshotRef
    | RemoveSnapshots | RemoveSnapshotRef | SetLocation | SetProperties | RemoveProperties
    | SetStatistics | RemoveStatistics | SetPartitionStatistics | RemovePartitionStatistics
)


@dataclass(frozen=True, slots=True)
class AssertCreate:
    """The table must not exist yet."""


@dataclass(frozen=True, slots=True)
class AssertTableUUID:
    """"Implementations must throw an exception if a table's UUID does not match the expected
    UUID after refreshing metadata"."""

    uuid: uuid.UUID


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId:
    """The branch or tag must still point where it did (None: it must not exist)."""

    ref: str
    snapshot_id: int | None


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId:
    last_assigned_field_id: int


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId:
    """"Table schema updates ... must validate that the schema has not changed between the
    base version and the current version"."""

    current_schema_id: int


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId:
    last_assigned_partition_id: int


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId:
    default_spec_id: int


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId:
    default_sort_order_id: int


TableRequirement = (
    AssertCreate | AssertTableUUID | AssertRefSnapshotId | AssertLastAssignedFieldId
    | AssertCurrentSchemaId | AssertLastAssignedPartitionId | AssertDefaultSpecId
    | AssertDefaultSortOrderId
)


def check_requirement(requirement: TableRequirement, current: TableMetadata | None) -> None:
    """Raise :class:`CommitFailed` (retryable) when ``requirement`` no longer holds.

    >>> check_requirement(AssertCreate(), None)
    >>> check_requirement(AssertCurrentSchemaId(1), None)
    Traceback (most recent call last):
    ...
    icepark.errors.CommitFailed: Requirement failed: the table does not exist
    """
    if isinstance(requirement, AssertCreate):
        if current is not None:
            raise CommitFailed("Requirement failed: the table already exists")
        return
    if current is None:
        raise CommitFailed("Requirement failed: the table does not exist")
    match requirement:
        case AssertTableUUID(expected):
            _expect("table UUID", expected, current.table_uuid)
        case AssertRefSnapshotId(ref, snapshot_id):
            actual = current.refs.get(ref)
            if actual is None and snapshot_id is not None:
                raise CommitFailed(f"Requirement failed: branch or tag {ref!r} is missing, "
                                   f"expected snapshot {snapshot_id}")
            if actual is not None and snapshot_id is None:
                raise CommitFailed(f"Requirement failed: {ref!r} was created concurrently")
            if actual is not None:
                _expect(f"snapshot of {ref!r}", snapshot_id, actual.snapshot_id)
        case AssertLastAssignedFieldId(expected):
            _expect("last assigned field ID", expected, current.last_column_id)
        case AssertCurrentSchemaId(expected):
            _expect("current schema ID", expected, current.current_schema_id)
        case AssertLastAssignedPartitionId(expected):
            _expect("last assigned partition ID", expected, current.last_partition_id)
        case AssertDefaultSpecId(expected):
            _expect("default spec ID", expected, current.default_spec_id)
        case AssertDefaultSortOrderId(expected):
            _expect("default sort order ID", expected, current.default_sort_order_id)


def _expect(what: str, expected: object, actual: object) -> None:
    if expected != actual:
        raise CommitFailed(
            f"Requirement failed: {what} changed: expected {expected}, found {actual}")
