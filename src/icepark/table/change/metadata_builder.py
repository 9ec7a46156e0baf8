"""The one place that turns table updates into new table metadata, enforcing every invariant.

Spec, *Table Metadata*: "Each table metadata change creates a new table metadata file that is
committed by an atomic operation." Every change, from a table's creation to a snapshot expiry,
is a list of :data:`~icepark.table.change.updates.TableUpdate` records applied here; the result is a
valid :class:`~icepark.spec.metadata.TableMetadata` or a :class:`ValidationError` that names the
broken rule. Nothing is written.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.metadata import (
    FORMAT_VERSION_PROPERTY,
    MAX_FORMAT_VERSION,
    FormatVersion,
    MetadataLogEntry,
    SnapshotLogEntry,
    TableMetadata,
    parse_format_version,
)
from icepark.spec.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from icepark.spec.properties import int_property
from icepark.spec.schema import Schema, check_format_version_types, fresh_schema, index_by_id
from icepark.spec.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotRef
from icepark.spec.sorting import UNSORTED, SortField, SortOrder
from icepark.spec.transforms import TransformKind
from icepark.spec.types import DATE, MAX_FIELD_ID
from icepark.table.change import updates as u

PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_MAX_DEFAULT = 100
# A snapshot may be stamped a little before the last update (clock skew between writers).
_TIMESTAMP_SKEW_MS = 60_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class MetadataBuilder:
    """Applies updates to a base metadata (or builds a new table) and validates the result."""

    def __init__(self, base: TableMetadata) -> None:
        self._base = base
        self._fields: dict[str, Any] = {
            name: getattr(base, name) for name in TableMetadata.__dataclass_fields__
            if not name.startswith("_")
        }
        self._fields["properties"] = dict(base.properties)
        self._fields["refs"] = dict(base.refs)
        self._last_added_schema: int | None = None
        self._last_added_spec: int | None = None
        self._last_added_order: int | None = None
        self._added_snapshots: dict[int, Snapshot] = {}
        self._updates: list[u.TableUpdate] = []

    # --------------------------------------------------------------------------- creation

    @staticmethod
    def new_table(schema: Schema, location: str, *, spec: PartitionSpec | None = None,
                  sort_order: SortOrder | None = None,
                  properties: Mapping[str, str] | None = None,
                  format_version: FormatVersion = 2,
                  table_uuid: uuid.UUID | None = None,
                  fresh_ids: bool = True) -> tuple[TableMetadata, list[u.TableUpdate]]:
        """Metadata of a new table, with fresh IDs as the reference implementation assigns them.

        Column IDs are renumbered from 1 (struct fields before their children) unless
        ``fresh_ids`` is False; the partition spec and sort order given against ``schema`` are
        rebound to the new IDs by column name, and partition field IDs start at 1000. Returns
        the metadata and the updates that create it (for catalogs that commit updates rather
        than files).
        """
        properties, format_version = _reserved_format_version(properties, format_version)
        fresh, last_column_id = (fresh_schema(schema) if fresh_ids
                                 else (schema, schema.highest_field_id))
        bound_spec = _rebind_spec(spec or PartitionSpec(), schema, fresh)
        bound_order = _rebind_order(sort_order or UNSORTED, schema, fresh)
        creation: list[u.TableUpdate] = [
            u.AssignUUID(table_uuid or uuid.uuid4()),
            u.UpgradeFormatVersion(format_version),
            u.AddSchema(fresh, last_column_id),
            u.SetCurrentSchema(u.LAST_ADDED),
            u.AddPartitionSpec(bound_spec),
            u.SetDefaultSpec(u.LAST_ADDED),
            u.AddSortOrder(bound_order),
            u.SetDefaultSortOrder(u.LAST_ADDED),
            u.SetLocation(location),
            u.SetProperties(properties),
        ]
        seed = TableMetadata(
            format_version=1, table_uuid=None, location=location, last_sequence_number=0,
            last_updated_ms=now_ms(), last_column_id=0, schemas=(Schema(()),),
            current_schema_id=0, partition_specs=(PartitionSpec(),), default_spec_id=0,
            last_partition_id=PARTITION_FIELD_ID_START - 1)
        builder = MetadataBuilder(seed)
        builder._fields["schemas"] = ()
        builder._fields["partition_specs"] = ()
        builder._fields["sort_orders"] = ()
        builder.apply_all(creation)
        return builder.build(), creation

    # --------------------------------------------------------------------------- updates

    def apply_all(self, changes: Iterable[u.TableUpdate]) -> MetadataBuilder:
        for change in changes:
            self.apply(change)
        return self

    def apply(self, change: u.TableUpdate) -> MetadataBuilder:
        """Apply one update; the single dispatch over every update kind."""
        f = self._fields
        match change:
            case u.AssignUUID(new_uuid):
                if f["table_uuid"] is not None and f["table_uuid"] != new_uuid:
                    raise ValidationError(
                        f"Cannot reassign the table UUID {f['table_uuid']} to {new_uuid}")
                f["table_uuid"] = new_uuid
            case u.UpgradeFormatVersion(version):
                if version not in (1, 2, 3):
                    raise ValidationError(f"Unsupported format version {version}: icepark "
                                          f"supports format versions 1 to {MAX_FORMAT_VERSION}")
                if version < f["format_version"]:
                    raise ValidationError(f"Cannot downgrade format version "
                                          f"{f['format_version']} to {version}")
                f["format_version"] = version
                if version >= 3 and f["next_row_id"] is None:
                    f["next_row_id"] = 0  # "Row Lineage for Upgraded Tables"
            case u.AddSchema(schema, last_column_id):
                self._add_schema(schema, last_column_id)
            case u.SetCurrentSchema(schema_id):
                f["current_schema_id"] = self._resolve(
                    schema_id, self._last_added_schema, f["schemas"], "schema_id", "schema")
            case u.AddPartitionSpec(spec):
                self._add_spec(spec)
            case u.SetDefaultSpec(spec_id):
                f["default_spec_id"] = self._resolve(
                    spec_id, self._last_added_spec, f["partition_specs"], "spec_id",
                    "partition spec")
            case u.AddSortOrder(order):
                self._add_sort_order(order)
            case u.SetDefaultSortOrder(order_id):
                f["default_sort_order_id"] = self._resolve(
                    order_id, self._last_added_order, f["sort_orders"], "order_id", "sort order")
            case u.AddSnapshot(snapshot):
                self._add_snapshot(snapshot)
            case u.SetSnapshotRef(name, ref):
                self._set_ref(name, ref)
            case u.RemoveSnapshotRef(name):
                self._remove_ref(name)
            case u.RemoveSnapshots(ids):
                self._remove_snapshots(set(ids))
            case u.SetLocation(location):
                if not location:
                    raise ValidationError("The table location cannot be empty")
                f["location"] = location.rstrip("/")
            case u.SetProperties(props):
                f["properties"].update(props)
            case u.RemoveProperties(keys):
                for key in keys:
                    f["properties"].pop(key, None)
            case u.SetStatistics(stats):
                f["statistics"] = (*(s for s in f["statistics"]
                                     if s.snapshot_id != stats.snapshot_id), stats)
            case u.RemoveStatistics(snapshot_id):
                f["statistics"] = tuple(s for s in f["statistics"]
                                        if s.snapshot_id != snapshot_id)
            case u.SetPartitionStatistics(stats):
                f["partition_statistics"] = (*(s for s in f["partition_statistics"]
                                               if s.snapshot_id != stats.snapshot_id), stats)
            case u.RemovePartitionStatistics(snapshot_id):
                f["partition_statistics"] = tuple(s for s in f["partition_statistics"]
                                                  if s.snapshot_id != snapshot_id)
        self._updates.append(change)
        return self

    @staticmethod
    def _resolve(requested: int, last_added: int | None, items: tuple[Any, ...], id_of: str,
                 what: str) -> int:
        if requested == u.LAST_ADDED:
            if last_added is None:
                raise ValidationError(f"Cannot set the last added {what}: none was added")
            return last_added
        if not any(getattr(item, id_of) == requested for item in items):
            raise ValidationError(f"Cannot set current {what} to unknown ID {requested}")
        return requested

    def _add_schema(self, schema: Schema, last_column_id: int) -> None:
        f = self._fields
        if last_column_id < f["last_column_id"]:
            raise ValidationError(f"Invalid last column ID {last_column_id}: must not be lower "
                                  f"than the table's {f['last_column_id']}")
        if schema.highest_field_id > last_column_id:
            raise ValidationError(
                f"Schema has field ID {schema.highest_field_id}, above the last column ID "
                f"{last_column_id}")
        if schema.highest_field_id > MAX_FIELD_ID:
            raise ValidationError(
                f"Field ID {schema.highest_field_id} is reserved: "
                f"\"Iceberg tables must not use field ids greater than {MAX_FIELD_ID}\"")
        if f["format_version"] < 3:
            _check_no_defaults(schema, f["format_version"])
            check_format_version_types(schema, f["format_version"])
        _check_partition_promotions(f, schema)
        f["last_column_id"] = last_column_id
        for existing in f["schemas"]:
            if existing.same_columns(schema):
                self._last_added_schema = existing.schema_id
                return
        new_id = max((s.schema_id for s in f["schemas"]), default=-1) + 1
        f["schemas"] = (*f["schemas"], schema.with_schema_id(new_id))
        self._last_added_schema = new_id

    def _add_spec(self, spec: PartitionSpec) -> None:
        f = self._fields
        schema = self._current_schema()
        spec.check_compatible(schema)
        for existing in f["partition_specs"]:
            if existing.compatible_with(spec):
                self._last_added_spec = existing.spec_id
                return
        new_id = max((s.spec_id for s in f["partition_specs"]), default=-1) + 1
        f["partition_specs"] = (*f["partition_specs"], replace(spec, spec_id=new_id))
        f["last_partition_id"] = max(f["last_partition_id"], spec.last_assigned_field_id)
        self._last_added_spec = new_id

    def _add_sort_order(self, order: SortOrder) -> None:
        f = self._fields
        order.check_compatible(self._current_schema())
        for existing in f["sort_orders"]:
            if existing.same_order(order):
                self._last_added_order = existing.order_id
                return
        new_id = 0 if order.is_unsorted else max(
            (o.order_id for o in f["sort_orders"]), default=0) + 1
        f["sort_orders"] = (*f["sort_orders"], replace(order, order_id=new_id))
        self._last_added_order = new_id

    def _current_schema(self) -> Schema:
        f = self._fields
        schema_id = (self._last_added_schema if self._last_added_schema is not None
                     else f["current_schema_id"])
        current: Schema = next(s for s in f["schemas"] if s.schema_id == schema_id)
        return current

    def _add_snapshot(self, snapshot: Snapshot) -> None:
        f = self._fields
        if any(s.snapshot_id == snapshot.snapshot_id for s in f["snapshots"]):
            raise ValidationError(f"Snapshot {snapshot.snapshot_id} already exists")
        if f["format_version"] >= 3:
            self._assign_row_ids(snapshot)
        if f["format_version"] >= 2:
            if snapshot.sequence_number <= f["last_sequence_number"]:
                raise ValidationError(
                    f"Cannot add snapshot {snapshot.snapshot_id} with sequence number "
                    f"{snapshot.sequence_number}: not above the last sequence number "
                    f"{f['last_sequence_number']}")
            if snapshot.manifest_list is None:
                raise ValidationError(
                    f"Snapshot {snapshot.snapshot_id} has no manifest list, required in v2")
            f["last_sequence_number"] = max(f["last_sequence_number"], snapshot.sequence_number)
        if snapshot.schema_id is not None and not any(
                s.schema_id == snapshot.schema_id for s in f["schemas"]):
            raise ValidationError(
                f"Snapshot {snapshot.snapshot_id} refers to unknown schema {snapshot.schema_id}")
        last_logged = max((e.timestamp_ms for e in f["snapshot_log"]), default=None)
        if last_logged is not None and snapshot.timestamp_ms < last_logged - _TIMESTAMP_SKEW_MS:
            raise ValidationError(
                f"Snapshot {snapshot.snapshot_id} is stamped {snapshot.timestamp_ms}, more than "
                "a minute before the last snapshot log entry")
        f["snapshots"] = (*f["snapshots"], snapshot)
        self._added_snapshots[snapshot.snapshot_id] = snapshot

    def _assign_row_ids(self, snapshot: Snapshot) -> None:
        """Spec (v3), *Table Metadata Fields*: "When a new snapshot is added, the table's
        ``next-row-id`` should be increased by the sum of ``record_count`` for all data files
        that will be assigned a ``first_row_id`` via inheritance in the snapshot" (its
        ``added-rows``), "even if the new snapshot is not in the main branch"; and *Snapshot
        Row IDs*: "The ``first-row-id`` field is required even if a commit does not assign
        any ID space"."""
        f = self._fields
        next_row_id = f["next_row_id"] or 0
        if snapshot.first_row_id is None or snapshot.added_rows is None:
            raise ValidationError(
                f"Cannot add snapshot {snapshot.snapshot_id} to a format version "
                f"{f['format_version']} table without first-row-id and added-rows: \"an "
                "Iceberg table must track row lineage fields for all newly created rows\"")
        if snapshot.first_row_id < next_row_id:
            raise ValidationError(
                f"Cannot add snapshot {snapshot.snapshot_id}: its first-row-id "
                f"{snapshot.first_row_id} is below the table's next-row-id {next_row_id}, so "
                "its row IDs could repeat assigned ones")
        f["next_row_id"] = snapshot.first_row_id + snapshot.added_rows

    def _set_ref(self, name: str, ref: SnapshotRef) -> None:
        f = self._fields
        snapshot = next((s for s in f["snapshots"] if s.snapshot_id == ref.snapshot_id), None)
        if snapshot is None:
            raise ValidationError(
                f"Cannot point {name!r} at unknown snapshot {ref.snapshot_id}")
        if name == MAIN_BRANCH:
            if ref.ref_type is not RefType.BRANCH:
                raise ValidationError("'main' must be a branch, not a tag")
            if f["current_snapshot_id"] != ref.snapshot_id:
                f["current_snapshot_id"] = ref.snapshot_id
                stamp = (snapshot.timestamp_ms if ref.snapshot_id in self._added_snapshots
                         else now_ms())
                f["snapshot_log"] = (*f["snapshot_log"],
                                     SnapshotLogEntry(ref.snapshot_id, stamp))
        f["refs"][name] = ref

    def _remove_ref(self, name: str) -> None:
        f = self._fields
        if f["refs"].pop(name, None) is not None and name == MAIN_BRANCH:
            f["current_snapshot_id"] = None

    def _remove_snapshots(self, ids: set[int]) -> None:
        """Expire snapshots; "When snapshots are expired from the list of valid snapshots, all
        entries before a snapshot that has expired should be removed" from the snapshot log."""
        f = self._fields
        if f["current_snapshot_id"] in ids:
            raise ValidationError(
                f"Cannot remove the current snapshot {f['current_snapshot_id']}")
        f["snapshots"] = tuple(s for s in f["snapshots"] if s.snapshot_id not in ids)
        for name in [n for n, r in f["refs"].items() if r.snapshot_id in ids]:
            del f["refs"][name]
        log: list[SnapshotLogEntry] = list(f["snapshot_log"])
        last_expired = max((i for i, e in enumerate(log) if e.snapshot_id in ids), default=-1)
        f["snapshot_log"] = tuple(log[last_expired + 1:])
        f["statistics"] = tuple(s for s in f["statistics"] if s.snapshot_id not in ids)
        f["partition_statistics"] = tuple(s for s in f["partition_statistics"]
                                          if s.snapshot_id not in ids)

    # --------------------------------------------------------------------------- result

    @property
    def updates(self) -> list[u.TableUpdate]:
        return list(self._updates)

    def build(self, previous_metadata_location: str | None = None,
              timestamp_ms: int | None = None) -> TableMetadata:
        """The new metadata. ``previous_metadata_location`` (the file this change replaces)
        is appended to the metadata log, which keeps at most
        ``write.metadata.previous-versions-max`` entries."""
        f = dict(self._fields)
        f["last_updated_ms"] = max(timestamp_ms or now_ms(), _last_timestamp(f))
        if previous_metadata_location is not None:
            entries = (*f["metadata_log"],
                       MetadataLogEntry(previous_metadata_location, self._base.last_updated_ms))
            keep = int_property(f["properties"], PREVIOUS_VERSIONS_MAX,
                                 PREVIOUS_VERSIONS_MAX_DEFAULT)
            f["metadata_log"] = entries[-keep:] if keep > 0 else ()
        schema = next((s for s in f["schemas"] if s.schema_id == f["current_schema_id"]), None)
        if schema is not None:
            _check_bound(f, schema)
        if f["format_version"] >= 3 and f["next_row_id"] is None:
            f["next_row_id"] = 0  # required in v3; earlier icepark releases left it out
        return TableMetadata(**f)


def _reserved_format_version(properties: Mapping[str, str] | None, format_version: FormatVersion
                             ) -> tuple[dict[str, str], FormatVersion]:
    """The table properties without ``format-version``, and the format version they ask for.

    As in the reference implementation, ``format-version`` given as a property at creation
    chooses the table's format version and is not kept as a property (it is part of the
    metadata itself). It must agree with ``format_version`` when that is not the default.
    """
    props = dict(properties or {})
    text = props.pop(FORMAT_VERSION_PROPERTY, None)
    if text is None:
        return props, format_version
    asked = parse_format_version(text)
    if asked is None:
        raise ValidationError(f"Invalid table property format-version={text!r}: "
                              f"write 1, 2 or {MAX_FORMAT_VERSION}")
    if format_version not in (2, asked):
        raise ValidationError(f"The table property format-version={text} contradicts "
                              f"format_version={format_version}")
    return props, asked


def _last_timestamp(f: Mapping[str, Any]) -> int:
    last: int = max([f["last_updated_ms"], *(e.timestamp_ms for e in f["snapshot_log"])])
    return last


def _check_no_defaults(schema: Schema, format_version: int) -> None:
    """Appendix E: "Default values are added to struct fields in v3"."""
    for f in index_by_id(schema).values():
        if f.initial_default is not None or f.write_default is not None:
            raise ValidationError(
                f"Field {schema.find_column_name(f.field_id)!r} has a default value, which needs "
                f"format version 3 (the table is version {format_version})")


def _check_bound(f: Mapping[str, Any], schema: Schema) -> None:
    """The default spec and sort order must still bind to the current schema, so a column
    they use (any of a multi-argument field's ``source-ids``) cannot be dropped while they use
    it."""
    spec = next(s for s in f["partition_specs"] if s.spec_id == f["default_spec_id"])
    for pf in spec.fields:
        for source in pf.sources:
            if schema.field_by_id(source) is None and not pf.transform.is_void:
                raise ValidationError(
                    f"Cannot drop the column with ID {source}: the partition field "
                    f"{pf.name!r} uses it; remove the partition field first")
    order = next(o for o in f["sort_orders"] if o.order_id == f["default_sort_order_id"])
    for sf in order.fields:
        for source in sf.sources:
            if schema.field_by_id(source) is None:
                raise ValidationError(
                    f"Cannot drop the column with ID {source}: the default sort order uses "
                    "it; replace the sort order first")


_DATE_PROMOTION_SAFE = frozenset({TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY,
                                  TransformKind.VOID})
"""Transforms whose value of a date equals their value of that date's midnight timestamp."""


def _check_partition_promotions(f: Mapping[str, Any], schema: Schema) -> None:
    """Spec (v3), *Schema Evolution*: "Type promotion is not allowed for a field that is
    referenced by ``source-id`` or ``source-ids`` of a partition field if the partition
    transform would produce a different value after promoting the type", which "may happen
    for ... ``date`` to ``timestamp`` or ``timestamp_ns``" (an identity or bucket of a date
    differs from that of its timestamp; year, month and day do not). Every spec counts: older
    files keep the values their spec gave them."""
    current = next((s for s in f["schemas"] if s.schema_id == f["current_schema_id"]), None)
    if current is None:
        return
    for spec in f["partition_specs"]:
        for pf in spec.fields:
            if pf.transform.kind in _DATE_PROMOTION_SAFE:
                continue
            for source in pf.sources:
                old, new = current.field_by_id(source), schema.field_by_id(source)
                if (old is not None and new is not None and old.field_type == DATE
                        and new.field_type != DATE):
                    raise ValidationError(
                        f"Cannot promote column {old.name!r} from date to {new.field_type}: "
                        f"partition field {pf.name!r} ({pf.transform}) of spec {spec.spec_id} "
                        "would give its rows other values (\"Type promotion is not allowed "
                        "for a field that is referenced by source-id or source-ids of a "
                        "partition field if the partition transform would produce a different "
                        "value\")")


def _rebound(ids: tuple[int, ...], old: Schema, new: Schema, what: str) -> tuple[int, ...]:
    """Column IDs of ``old`` as the IDs of the same columns (by name) in ``new``."""
    out = []
    for source in ids:
        name = old.find_column_name(source)
        if name is None:
            raise ValidationError(f"{what} has unknown source column {source}")
        out.append(new.find_field(name).field_id)
    return tuple(out)


def _rebind_spec(spec: PartitionSpec, old: Schema, new: Schema) -> PartitionSpec:
    fields = []
    for position, pf in enumerate(spec.fields):
        sources = _rebound(pf.sources, old, new, f"Partition field {pf.name!r}")
        fields.append(PartitionField(sources[0], PARTITION_FIELD_ID_START + position,
                                     pf.transform, pf.name,
                                     sources if pf.is_multi_argument else ()))
    return PartitionSpec(0, tuple(fields))


def _rebind_order(order: SortOrder, old: Schema, new: Schema) -> SortOrder:
    if order.is_unsorted:
        return UNSORTED
    fields = []
    for sf in order.fields:
        sources = _rebound(sf.sources, old, new, "Sort field")
        fields.append(SortField(sources[0], sf.transform, sf.direction, sf.null_order,
                                sources if sf.is_multi_argument else ()))
    return SortOrder(1, tuple(fields))
