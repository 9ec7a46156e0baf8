"""Table metadata: one version-neutral model of every format version's metadata file.

Spec, *Table Metadata*: "Table metadata is stored as JSON. Each table metadata change creates a
new table metadata file that is committed by an atomic operation." The JSON keys, which fields
each format version writes, and the defaults used when reading older versions all live in
:mod:`icepark.spec.serde`; this module holds the values and the invariants every version shares.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.spec.partitioning import UNPARTITIONED
>>> md = TableMetadata(
...     format_version=2, table_uuid=uuid.UUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
...     location="s3://b/t", last_sequence_number=0, last_updated_ms=1602638573590,
...     last_column_id=1, schemas=(Schema.of(NestedField.required(1, "x", LONG)),),
...     current_schema_id=0, partition_specs=(UNPARTITIONED,), default_spec_id=0,
...     last_partition_id=999)
>>> md.schema().find_column_name(1), md.current_snapshot(), md.property("owner", "nobody")
('x', None, 'nobody')
>>> from dataclasses import replace
>>> replace(md, current_schema_id=5)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Current schema ID 5 is not among the table's schemas (IDs: 0)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from icepark.errors import ValidationError
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    FrozenMap,
    RefType,
    Snapshot,
    SnapshotRef,
)
from icepark.spec.sorting import UNSORTED, SortOrder

FormatVersion = Literal[1, 2, 3]
MAX_FORMAT_VERSION = 3
FORMAT_VERSION_PROPERTY = "format-version"
"""The reserved table property that names the format version: a metadata field, not a
setting (the reference implementation reads it at creation and on ``SET TBLPROPERTIES``)."""
_FORMAT_VERSIONS: dict[str, FormatVersion] = {"1": 1, "2": 2, "3": 3}


def parse_format_version(text: str) -> FormatVersion | None:
    """The format version ``format-version`` property text names, or None if it names none.

    >>> parse_format_version(" 3"), parse_format_version("three")
    (3, None)
    """
    return _FORMAT_VERSIONS.get(text.strip())
SUPPORTED_FORMAT_VERSIONS: tuple[FormatVersion, ...] = (1, 2, 3)
"""Spec: "Implementations must throw an exception if a table's version is higher than the
supported version." icepark reads and writes v1, v2 and v3 metadata."""


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    """A ``snapshot-log`` entry: "timestamp and snapshot ID pairs that encodes changes to the
    current snapshot for the table"."""

    snapshot_id: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    """A ``metadata-log`` entry: "timestamp and metadata file location pairs that encodes
    changes to the previous metadata files for the table"."""

    metadata_file: str
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """Spec, *Table statistics*: a blob of a statistics file: its "Type of the blob", the
    snapshot and sequence number it "was computed from", the "Ordered list of fields, given by
    field ID, on which the statistic was calculated", and optional properties."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", FrozenMap(self.properties))


@dataclass(frozen=True, slots=True)
class StatisticsFile:
    """Spec, *Table statistics*: "Table statistics files are valid Puffin files. Statistics are
    informational." ``key_metadata`` is the decoded "implementation-specific key metadata for
    encryption"."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "blob_metadata", tuple(self.blob_metadata))


@dataclass(frozen=True, slots=True)
class PartitionStatisticsFile:
    """A partition statistics file of a snapshot (the reference implementation's
    ``partition-statistics`` list; outside the seed spec, kept so tables round-trip)."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int


def _unique_ids(items: Iterable[Any], id_of: str, what: str) -> dict[int, Any]:
    by_id: dict[int, Any] = {}
    for item in items:
        key = getattr(item, id_of)
        if key in by_id:
            raise ValidationError(f"Duplicate {what} ID {key}: {what} IDs must be unique")
        by_id[key] = item
    return by_id


def _ids(by_id: Mapping[int, Any]) -> str:
    return ", ".join(map(str, by_id)) or "none"


def _check_int(value: object, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{what} must be an integer, not {value!r}")


@dataclass(frozen=True, slots=True)
class TableMetadata:
    """The table's metadata, independent of the format version it is written in.

    Construction checks the invariants the spec states for every version:

    * the current schema, default partition spec and default sort order are among the lists,
      and IDs within each list are unique;
    * ``current_snapshot_id`` is a snapshot of the table and every reference points to one;
    * "There is always a ``main`` branch reference pointing to the ``current-snapshot-id``": a
      ``main`` ref must equal ``current_snapshot_id``, and when there is a current snapshot but
      no ``main`` ref, the ``main`` branch is added (the spec's implicit ref made explicit);
    * v2 and later: ``table-uuid`` "is now required", and ``last-sequence-number`` is "The
      table's highest assigned sequence number", so no snapshot's sequence number exceeds it;
    * v1 has no sequence numbers ("must default to 0"), and row lineage (``next_row_id``) is
      v3 only.

    ``properties`` and ``refs`` are stored read-only and are left out of the hash.
    """

    format_version: FormatVersion
    table_uuid: uuid.UUID | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    properties: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    sort_orders: tuple[SortOrder, ...] = (UNSORTED,)
    default_sort_order_id: int = 0
    refs: Mapping[str, SnapshotRef] = field(default_factory=FrozenMap, hash=False)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None
    _schemas_by_id: dict[int, Schema] = field(init=False, repr=False, compare=False, hash=False)
    _specs_by_id: dict[int, PartitionSpec] = field(
        init=False, repr=False, compare=False, hash=False)
    _orders_by_id: dict[int, SortOrder] = field(init=False, repr=False, compare=False, hash=False)
    _snapshots_by_id: dict[int, Snapshot] = field(
        init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.format_version not in SUPPORTED_FORMAT_VERSIONS:
            raise ValidationError(
                f"Unsupported format version {self.format_version}: icepark supports format "
                f"versions 1 to {MAX_FORMAT_VERSION}")
        for name in ("schemas", "partition_specs", "sort_orders", "snapshots", "snapshot_log",
                     "metadata_log", "statistics", "partition_statistics"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("last_sequence_number", "last_updated_ms", "last_column_id",
                     "current_schema_id", "default_spec_id", "last_partition_id",
                     "default_sort_order_id"):
            _check_int(getattr(self, name), name)
        if self.table_uuid is not None and not isinstance(self.table_uuid, uuid.UUID):
            raise ValidationError(f"table_uuid must be a UUID, not {self.table_uuid!r}")
        if not isinstance(self.location, str):
            raise ValidationError(f"location must be a string, not {self.location!r}")
        properties = FrozenMap(self.properties)
        for key, value in properties.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValidationError(
                    f"Table properties must map strings to strings, not {key!r} to {value!r}")
        object.__setattr__(self, "properties", properties)
        self._index()
        self._check_versioned_fields()
        object.__setattr__(self, "refs", self._checked_refs())

    def _index(self) -> None:
        schemas = _unique_ids(self.schemas, "schema_id", "schema")
        if self.current_schema_id not in schemas:
            raise ValidationError(
                f"Current schema ID {self.current_schema_id} is not among the table's schemas "
                f"(IDs: {_ids(schemas)})")
        specs = _unique_ids(self.partition_specs, "spec_id", "partition spec")
        if self.default_spec_id not in specs:
            raise ValidationError(
                f"Default spec ID {self.default_spec_id} is not among the table's partition "
                f"specs (IDs: {_ids(specs)})")
        orders = _unique_ids(self.sort_orders, "order_id", "sort order")
        if self.default_sort_order_id not in orders:
            raise ValidationError(
                f"Default sort order ID {self.default_sort_order_id} is not among the table's "
                f"sort orders (IDs: {_ids(orders)})")
        snapshots = _unique_ids(self.snapshots, "snapshot_id", "snapshot")
        if self.current_snapshot_id is not None and self.current_snapshot_id not in snapshots:
            raise ValidationError(
                f"Current snapshot ID {self.current_snapshot_id} is not among the table's "
                "snapshots")
        object.__setattr__(self, "_schemas_by_id", schemas)
        object.__setattr__(self, "_specs_by_id", specs)
        object.__setattr__(self, "_orders_by_id", orders)
        object.__setattr__(self, "_snapshots_by_id", snapshots)

    def _check_versioned_fields(self) -> None:
        if self.format_version >= 2:
            if self.table_uuid is None:
                raise ValidationError(
                    f"Table UUID is required in format version {self.format_version}")
            for s in self.snapshots:
                if s.sequence_number > self.last_sequence_number:
                    raise ValidationError(
                        f"Snapshot {s.snapshot_id} has sequence number {s.sequence_number}, "
                        f"higher than the last sequence number {self.last_sequence_number}")
        elif self.last_sequence_number != 0 or any(s.sequence_number for s in self.snapshots):
            raise ValidationError(
                "Format version 1 has no sequence numbers: the last sequence number and "
                "every snapshot's sequence number must be 0")
        if self.next_row_id is not None:
            _check_int(self.next_row_id, "next_row_id")
            if self.format_version < 3:
                raise ValidationError(
                    "next_row_id (row lineage) requires format version 3, not "
                    f"{self.format_version}")
            if self.next_row_id < 0:
                raise ValidationError(f"next_row_id must not be negative: {self.next_row_id}")

    def _checked_refs(self) -> FrozenMap[str, SnapshotRef]:
        refs = dict(self.refs)
        for name, ref in refs.items():
            if not isinstance(name, str) or not name:
                raise ValidationError(f"Reference names must be non-empty strings, not {name!r}")
            if not isinstance(ref, SnapshotRef):
                raise ValidationError(f"Reference {name!r} must be a SnapshotRef, not {ref!r}")
            if ref.snapshot_id not in self._snapshots_by_id:
                raise ValidationError(
                    f"Reference {name!r} points to snapshot {ref.snapshot_id}, which is not "
                    "among the table's snapshots")
        main = refs.get(MAIN_BRANCH)
        if main is None:
            if self.current_snapshot_id is None:
                return FrozenMap(refs)
            return FrozenMap({MAIN_BRANCH: SnapshotRef.branch(self.current_snapshot_id), **refs})
        if main.ref_type is not RefType.BRANCH:
            raise ValidationError("The 'main' reference must be a branch, not a tag")
        if main.snapshot_id != self.current_snapshot_id:
            raise ValidationError(
                f"The main branch points to snapshot {main.snapshot_id} but the current "
                f"snapshot ID is {self.current_snapshot_id}: \"There is always a main branch "
                "reference pointing to the current-snapshot-id\"")
        return FrozenMap(refs)

    # ------------------------------------------------------------------------- accessors

    def schema(self) -> Schema:
        """The current schema (``current-schema-id``)."""
        return self._schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema | None:
        """The schema with that ID, or None."""
        return self._schemas_by_id.get(schema_id)

    def spec(self) -> PartitionSpec:
        """The default partition spec: "ID of the "current" spec that writers should use by
        default"."""
        return self._specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        """The partition spec with that ID, or None."""
        return self._specs_by_id.get(spec_id)

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self._orders_by_id[self.default_sort_order_id]

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        """The sort order with that ID, or None."""
        return self._orders_by_id.get(order_id)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with that ID, or None (e.g. expired)."""
        return self._snapshots_by_id.get(snapshot_id)

    @property
    def snapshots_by_id(self) -> Mapping[int, Snapshot]:
        """Every snapshot by ID (a read-only view), e.g. for
        :func:`~icepark.spec.snapshots.ancestors_of`."""
        return FrozenMap(self._snapshots_by_id)

    def current_snapshot(self) -> Snapshot | None:
        """The current snapshot, or None for a table without one."""
        if self.current_snapshot_id is None:
            return None
        return self._snapshots_by_id[self.current_snapshot_id]

    def snapshot_by_ref(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points to, or None if there is no such reference."""
        ref = self.refs.get(name)
        return None if ref is None else self._snapshots_by_id[ref.snapshot_id]

    def property(self, name: str, default: str | None = None) -> str | None:
        """A table property, or ``default`` when it is not set."""
        return self.properties.get(name, default)
