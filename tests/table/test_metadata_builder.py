"""The metadata builder: every change goes through it, and it keeps every invariant."""

from __future__ import annotations

import uuid

import pytest

from icepark.errors import CommitFailed, ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef, Summary
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DATE,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    NestedField,
    StructType,
)
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import MetadataBuilder

SCHEMA = Schema.of(
    NestedField.required(10, "id", LONG),
    NestedField.optional(20, "ts", TIMESTAMP),
    NestedField.optional(30, "info", StructType((NestedField.optional(40, "name", STRING),))),
    identifier_field_ids=[10],
)


def new_table(**kw: object) -> TableMetadata:
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 16).build()
    order = SortOrderBuilder(SCHEMA).asc("info.name").build()
    md, _ = MetadataBuilder.new_table(SCHEMA, "file:///wh/t", spec=spec, sort_order=order,
                                      properties={"owner": "me"}, **kw)  # type: ignore[arg-type]
    return md


def snapshot(snapshot_id: int, seq: int, parent: int | None = None,
             ts: int | None = None) -> Snapshot:
    return Snapshot(snapshot_id, parent, seq, ts or 1_700_000_000_000 + seq,
                    f"file:///wh/t/metadata/snap-{snapshot_id}.avro",
                    Summary(Operation.APPEND), 0)


def test_new_table_assigns_fresh_ids_and_rebinds_spec_and_order() -> None:
    md = new_table()
    schema = md.schema()
    assert [f.field_id for f in schema.fields] == [1, 2, 3]
    assert schema.find_field("info.name").field_id == 4
    assert schema.identifier_field_ids == (1,)
    assert md.last_column_id == 4
    spec = md.spec()
    assert [(f.source_id, f.field_id, f.name) for f in spec.fields] == [
        (2, 1000, "ts_day"), (1, 1001, "id_bucket")]
    assert md.last_partition_id == 1001
    assert md.sort_order().order_id == 1 and md.sort_order().fields[0].source_id == 4
    assert md.format_version == 2 and md.table_uuid is not None
    assert md.properties == {"owner": "me"} and md.current_snapshot() is None


def test_identical_schema_is_reused_and_new_schema_gets_next_id() -> None:
    md = new_table()
    same = MetadataBuilder(md).apply(u.AddSchema(md.schema(), 4)).apply(
        u.SetCurrentSchema(u.LAST_ADDED)).build()
    assert [s.schema_id for s in same.schemas] == [0]
    wider = Schema((*md.schema().fields, NestedField.optional(5, "extra", LONG)))
    md2 = MetadataBuilder(md).apply(u.AddSchema(wider, 5)).apply(
        u.SetCurrentSchema(u.LAST_ADDED)).build()
    assert md2.current_schema_id == 1 and md2.last_column_id == 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (u.AddSchema(Schema.of(NestedField.optional(9, "x", LONG)), 4), "above the last column"),
        (u.AddSchema(SCHEMA, 3), "must not be lower"),
        (u.AddSchema(Schema.of(NestedField.optional(2_147_483_500, "x", LONG)), 2_147_483_500),
         "is reserved"),
        (u.AddSchema(Schema.of(NestedField.optional(5, "x", LONG, initial_default=1)), 5),
         "needs format version 3"),
        (u.SetCurrentSchema(7), "unknown ID 7"),
        (u.SetDefaultSpec(u.LAST_ADDED), "none was added"),
        (u.UpgradeFormatVersion(1), "Cannot downgrade"),
        (u.AssignUUID(uuid.UUID(int=1)), "Cannot reassign the table UUID"),
        (u.SetSnapshotRef("main", SnapshotRef.branch(99)), "unknown snapshot 99"),
    ],
)
def test_invalid_changes_are_rejected(change: u.TableUpdate, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MetadataBuilder(new_table()).apply(change).build()


def test_dropping_a_partition_source_column_is_rejected() -> None:
    md = new_table()
    without_ts = Schema(tuple(f for f in md.schema().fields if f.name != "ts"),
                        identifier_field_ids=(1,))
    with pytest.raises(ValidationError, match="partition field 'ts_day' uses it"):
        MetadataBuilder(md).apply(u.AddSchema(without_ts, 4)).apply(
            u.SetCurrentSchema(u.LAST_ADDED)).build()


def test_snapshots_refs_and_logs() -> None:
    md = new_table()
    b = MetadataBuilder(md)
    b.apply(u.AddSnapshot(snapshot(1, 1))).apply(u.SetSnapshotRef("main", SnapshotRef.branch(1)))
    b.apply(u.AddSnapshot(snapshot(2, 2, parent=1)))
    b.apply(u.SetSnapshotRef("main", SnapshotRef.branch(2)))
    b.apply(u.SetSnapshotRef("v1", SnapshotRef.tag(1)))
    md2 = b.build(previous_metadata_location="file:///wh/t/metadata/00000-a.metadata.json")
    assert md2.current_snapshot_id == 2 and md2.last_sequence_number == 2
    assert [e.snapshot_id for e in md2.snapshot_log] == [1, 2]
    assert md2.snapshot_log[0].timestamp_ms == snapshot(1, 1).timestamp_ms
    assert md2.refs["v1"] == SnapshotRef.tag(1)
    assert [e.metadata_file for e in md2.metadata_log] == [
        "file:///wh/t/metadata/00000-a.metadata.json"]

    expired = MetadataBuilder(md2).apply(u.RemoveSnapshots((1,))).build()
    assert [s.snapshot_id for s in expired.snapshots] == [2]
    assert "v1" not in expired.refs  # a tag on an expired snapshot goes with it
    assert [e.snapshot_id for e in expired.snapshot_log] == [2]
    with pytest.raises(ValidationError, match="Cannot remove the current snapshot"):
        MetadataBuilder(md2).apply(u.RemoveSnapshots((2,)))
    stale = MetadataBuilder(md2)
    with pytest.raises(ValidationError, match="not above the last sequence number"):
        stale.apply(u.AddSnapshot(snapshot(3, 2, parent=2)))
    unset = MetadataBuilder(md2).apply(u.RemoveSnapshotRef("main")).build()
    assert unset.current_snapshot_id is None


def test_metadata_log_keeps_previous_versions_max() -> None:
    md = MetadataBuilder(new_table()).apply(
        u.SetProperties({"write.metadata.previous-versions-max": "2"})).build()
    for i in range(4):
        md = MetadataBuilder(md).apply(u.SetProperties({"n": str(i)})).build(
            previous_metadata_location=f"m{i}.json")
    assert [e.metadata_file for e in md.metadata_log] == ["m2.json", "m3.json"]
    md = MetadataBuilder(md).apply(u.RemoveProperties(("n", "absent"))).build()
    assert "n" not in md.properties


def test_v3_defaults_and_format_upgrade() -> None:
    md = MetadataBuilder(new_table(format_version=1)).apply(u.UpgradeFormatVersion(3)).build()
    with_default = Schema((*md.schema().fields,
                           NestedField.optional(5, "x", LONG, initial_default=7,
                                                write_default=7)))
    md3 = MetadataBuilder(md).apply(u.AddSchema(with_default, 5)).apply(
        u.SetCurrentSchema(u.LAST_ADDED)).build()
    assert md3.schema().find_field("x").initial_default == 7


def test_requirements() -> None:
    md = new_table()
    u.check_requirement(u.AssertTableUUID(md.table_uuid), md)  # type: ignore[arg-type]
    u.check_requirement(u.AssertRefSnapshotId("main", None), md)
    u.check_requirement(u.AssertCurrentSchemaId(0), md)
    cases: list[tuple[u.TableRequirement, str]] = [
        (u.AssertCreate(), "already exists"),
        (u.AssertTableUUID(uuid.UUID(int=5)), "table UUID changed"),
        (u.AssertRefSnapshotId("main", 4), "is missing"),
        (u.AssertLastAssignedFieldId(3), "last assigned field ID changed"),
        (u.AssertCurrentSchemaId(1), "current schema ID changed"),
        (u.AssertLastAssignedPartitionId(999), "partition ID changed"),
        (u.AssertDefaultSpecId(1), "default spec ID changed"),
        (u.AssertDefaultSortOrderId(0), "default sort order ID changed"),
    ]
    for failing, message in cases:
        with pytest.raises(CommitFailed, match=message):
            u.check_requirement(failing, md)
    with_main = MetadataBuilder(md).apply(u.AddSnapshot(snapshot(1, 1))).apply(
        u.SetSnapshotRef("main", SnapshotRef.branch(1))).build()
    with pytest.raises(CommitFailed, match="created concurrently"):
        u.check_requirement(u.AssertRefSnapshotId("main", None), with_main)


# ------------------------------------------------------------------ format version 3 rules


DATES = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "d", DATE),
                  NestedField.optional(3, "e", DATE))


def _promoted(md: TableMetadata, name: str) -> TableMetadata:
    schema = Schema(tuple(f if f.name != name else NestedField(
        f.field_id, f.name, TIMESTAMP, f.is_required) for f in md.schema().fields))
    return MetadataBuilder(md).apply_all([u.AddSchema(schema, md.last_column_id),
                                          u.SetCurrentSchema(u.LAST_ADDED)]).build()


def test_v3_types_need_a_v3_table() -> None:
    """Spec (v3), *Primitive Types*: "using v3 types in v1 or v2 tables can break forward
    compatibility"."""
    schema = Schema.of(NestedField.optional(1, "t", TIMESTAMP_NS))
    with pytest.raises(ValidationError, match="needs format version 3"):
        MetadataBuilder.new_table(schema, "/t", format_version=2)
    md, _ = MetadataBuilder.new_table(schema, "/t", format_version=3)
    assert md.schema().fields[0].field_type == TIMESTAMP_NS


def test_date_promotion_is_refused_where_a_partition_value_would_change() -> None:
    """"Type promotion is not allowed for a field that is referenced by source-id or
    source-ids of a partition field if the partition transform would produce a different
    value after promoting the type": identity and bucket of a date do, day does not."""
    spec = PartitionSpecBuilder(DATES).identity("d").day("e").build()
    md, _ = MetadataBuilder.new_table(DATES, "/t", spec=spec, format_version=3)
    assert _promoted(md, "e").schema().find_field("e").field_type == TIMESTAMP
    with pytest.raises(ValidationError, match=r"Cannot promote column 'd' from date to "
                                              r"timestamp: partition field 'd' \(identity\)"):
        _promoted(md, "d")


def test_multi_argument_fields_keep_their_sources() -> None:
    """A new table rebinds every ``source-ids`` column, and none of them can be dropped
    while the default spec or sort order uses it."""
    spec = PartitionSpec(0, (PartitionField.of_sources((2, 3), 1000, Transform.unknown("zorder"),
                                                       "de_zorder"),))
    md, _ = MetadataBuilder.new_table(DATES, "/t", spec=spec, format_version=3)
    assert md.spec().fields[0].sources == (2, 3)
    without_e = Schema(tuple(f for f in md.schema().fields if f.name != "e"))
    with pytest.raises(ValidationError, match="Cannot drop the column with ID 3: the partition "
                                              "field 'de_zorder' uses it"):
        MetadataBuilder(md).apply_all([u.AddSchema(without_e, md.last_column_id),
                                       u.SetCurrentSchema(u.LAST_ADDED)]).build()
