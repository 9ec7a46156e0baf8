"""Schema, partition spec, sort order, property and format version changes through the Table
facade: happy paths, rejections, and retries that replay the change on the refreshed table."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.serde.metadata_json import table_metadata_to_json
from icepark.spec.sorting import NullOrder, SortDirection
from icepark.spec.transforms import Transform
from icepark.spec.types import INT, LONG, STRING, NestedField
from icepark.table.change import updates as u
from icepark.table.change.schema_change import (
    Call,
    FormatVersionChange,
    PropertiesChange,
    SchemaChange,
    SortOrderChange,
    SpecChange,
)
from icepark.table.table import Table
from tests.table.committer import InMemoryCommitter, land_snapshot, make_table


def added_column(name: str, field_id: int) -> object:
    """A concurrent writer's schema change, as updates."""
    def updates(md: TableMetadata) -> list[u.TableUpdate]:
        schema = Schema((*md.schema().fields, NestedField.optional(field_id, name, LONG)))
        return [u.AddSchema(schema, field_id), u.SetCurrentSchema(u.LAST_ADDED)]
    return updates


def column_names(table: Table) -> list[str]:
    return [f.name for f in table.schema().fields]


# ------------------------------------------------------------------------------------ schema


def test_update_schema_commits_on_leaving_the_block(table: Table,
                                                    committer: InMemoryCommitter) -> None:
    with table.update_schema() as update:
        update.add_column("extra", STRING, doc="more").rename_column("data", "payload")
    assert column_names(table) == ["id", "payload", "ts", "extra"]
    assert table.schema().find_field("extra").field_id == 4
    assert table.metadata.current_schema_id == 1 and table.metadata.last_column_id == 4
    assert committer.commits == 1
    assert committer.load_metadata(table.identifier).metadata is table.metadata


def test_update_schema_commit_call_and_preview(table: Table) -> None:
    update = table.update_schema().add_column("n", INT).move_first("n")
    schema, last_column_id = update.apply()
    assert schema.fields[0].name == "n" and last_column_id == 4
    assert column_names(table) == ["id", "data", "ts"]  # nothing committed yet
    update.commit()
    assert column_names(table) == ["n", "id", "data", "ts"]
    with pytest.raises(ValidationError, match="already committed"):
        update.add_column("m", INT)
    with pytest.raises(ValidationError, match="already committed"):
        update.commit()


def test_type_promotion_and_identifier_fields(table: Table) -> None:
    with table.update_schema() as update:
        update.update_column("id", required=True).set_identifier_fields("id")
    assert table.schema().identifier_field_ids == (1,)
    (table.update_schema().add_column("f", INT).commit())
    table.update_schema().update_column("f", LONG).commit()
    assert table.schema().find_field("f").field_type == LONG


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.add_column("data", STRING), "already has a column"),
        (lambda s: s.delete_column("missing"), "missing"),
        (lambda s: s.update_column("id", STRING), "promote"),
        (lambda s: s.add_column("req", LONG, required=True), "initial default"),
        (lambda s: s.rename_column("data", "id"), "already has a column"),
        (lambda s: s.update_column("data", required=True), "optional column required"),
    ],
)
def test_schema_rejections_raise_at_the_call_and_commit_nothing(
        table: Table, committer: InMemoryCommitter, edit: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message), table.update_schema() as update:
        edit(update)  # type: ignore[operator]
    assert committer.attempts == 0 and table.metadata.current_schema_id == 0


def test_incompatible_changes_need_the_flag(table: Table) -> None:
    with table.update_schema(allow_incompatible_changes=True) as update:
        update.add_column("req", LONG, required=True).update_column("data", required=True)
    assert table.schema().find_field("req").is_required
    assert table.schema().find_field("data").is_required


def test_case_insensitive_schema_update(table: Table) -> None:
    with pytest.raises(ValidationError):
        table.update_schema().rename_column("DATA", "payload")
    table.update_schema(case_sensitive=False).rename_column("DATA", "payload").commit()
    assert column_names(table) == ["id", "payload", "ts"]


def test_an_exception_in_the_block_commits_nothing(table: Table,
                                                   committer: InMemoryCommitter) -> None:
    with pytest.raises(RuntimeError), table.update_schema() as update:
        update.add_column("x", STRING)
        raise RuntimeError("boom")
    assert committer.attempts == 0 and column_names(table) == ["id", "data", "ts"]


def test_an_empty_update_commits_nothing(table: Table, committer: InMemoryCommitter) -> None:
    with table.update_schema():
        pass
    with table.update_spec():
        pass
    assert committer.attempts == 0


def test_retry_replays_the_schema_change_on_the_new_schema(
        table: Table, committer: InMemoryCommitter) -> None:
    committer.fail_next(1, added_column("other", 4))  # type: ignore[arg-type]
    table.update_schema().add_column("mine", STRING).commit()
    assert column_names(table) == ["id", "data", "ts", "other", "mine"]
    assert table.schema().find_field("mine").field_id == 5  # reassigned on replay
    assert table.metadata.last_column_id == 5 and committer.attempts == 2


def test_retry_revalidates_a_schema_change_that_now_conflicts(
        table: Table, committer: InMemoryCommitter) -> None:
    committer.fail_next(1, added_column("clash", 4))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="already has a column named 'clash'"):
        table.update_schema().add_column("clash", STRING).commit()
    assert committer.attempts == 1
    current = committer.load_metadata(table.identifier).metadata
    assert current.schema().find_field("clash").field_type == LONG  # the other writer's


def test_stale_table_fails_the_schema_requirement_and_replays(
        table: Table, committer: InMemoryCommitter) -> None:
    stale = Table(table.identifier, committer.load_metadata(table.identifier), table.io,
                  committer)
    table.update_schema().add_column("a", STRING).commit()
    stale.update_schema().add_column("b", STRING).commit()  # AssertCurrentSchemaId fails once
    assert column_names(stale) == ["id", "data", "ts", "a", "b"]
    assert committer.attempts == 3 and committer.commits == 2


def test_stale_table_delete_of_a_column_renamed_concurrently_is_revalidated(
        table: Table, committer: InMemoryCommitter) -> None:
    stale = Table(table.identifier, committer.load_metadata(table.identifier), table.io,
                  committer)
    table.update_schema().rename_column("data", "payload").commit()
    with pytest.raises(ValidationError, match="data"):
        stale.update_schema().delete_column("data").commit()
    assert column_names(table.refresh()) == ["id", "payload", "ts"]


def test_commit_state_unknown_propagates(table: Table, committer: InMemoryCommitter) -> None:
    committer.unknown_next()
    with pytest.raises(CommitStateUnknown):
        table.update_schema().add_column("x", STRING).commit()
    assert committer.attempts == 1 and column_names(table) == ["id", "data", "ts"]


def test_retries_are_bounded(committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"),
                       properties={"commit.retry.num-retries": "1"})
    committer.fail_next(5)
    with pytest.raises(CommitFailed):
        table.update_schema().add_column("x", STRING).commit()
    assert committer.attempts == 2


def test_schema_change_requirements_and_noop() -> None:
    md = _metadata()
    assert SchemaChange(()).changes(md) == ([], [])
    requirements, updates = SchemaChange((Call("delete_column", ("data",)),)).changes(md)
    assert requirements == [u.AssertCurrentSchemaId(0), u.AssertLastAssignedFieldId(3)]
    assert isinstance(updates[0], u.AddSchema) and updates[1] == u.SetCurrentSchema(-1)


def _metadata() -> TableMetadata:
    committer = InMemoryCommitter()
    return make_table(committer, "/nowhere/t").metadata


# -------------------------------------------------------------------------- partition spec


def test_update_spec_adds_renames_and_removes_fields(table: Table) -> None:
    with table.update_spec() as update:
        update.add_field("id", "bucket[4]").add_identity("data")
    assert [(f.name, f.field_id) for f in table.spec().fields] == [
        ("id_bucket_4", 1000), ("data", 1001)]
    assert table.metadata.default_spec_id == 1 and table.metadata.last_partition_id == 1001
    table.update_spec().rename_field("data", "d").remove_field("id_bucket_4").commit()
    assert [(f.name, f.field_id) for f in table.spec().fields] == [("d", 1001)]
    assert table.metadata.default_spec_id == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.add_field("missing", "identity"), "cannot find source column"),
        (lambda s: s.remove_field("nope"), "Cannot find partition field"),
        (lambda s: s.add_field("data", "day"), "day"),
        (lambda s: s.rename_field("nope", "x"), "Cannot find partition field"),
    ],
)
def test_spec_rejections(table: Table, edit: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        edit(table.update_spec())  # type: ignore[operator]


def test_spec_change_retry_sees_a_concurrent_schema_change(
        table: Table, committer: InMemoryCommitter) -> None:
    def drop_data(md: TableMetadata) -> list[u.TableUpdate]:
        schema = Schema(tuple(f for f in md.schema().fields if f.name != "data"))
        return [u.AddSchema(schema, md.last_column_id), u.SetCurrentSchema(u.LAST_ADDED)]

    committer.fail_next(1, drop_data)
    with pytest.raises(ValidationError, match="data"):
        table.update_spec().add_identity("data").commit()
    assert table.refresh().spec().is_unpartitioned
    table.update_spec().add_identity("id").commit()
    assert [f.name for f in table.spec().fields] == ["id"]


def test_spec_change_requirements() -> None:
    md = _metadata()
    requirements, updates = SpecChange((Call("add_identity", ("data",)),)).changes(md)
    assert requirements == [u.AssertCurrentSchemaId(0), u.AssertDefaultSpecId(0),
                            u.AssertLastAssignedPartitionId(999)]
    assert updates[1] == u.SetDefaultSpec(u.LAST_ADDED)
    assert SpecChange(()).changes(md) == ([], [])


# ------------------------------------------------------------------------------ sort order


def test_replace_sort_order(table: Table) -> None:
    with table.replace_sort_order() as order:
        order.asc("id").desc("data", NullOrder.NULLS_FIRST, transform=Transform.truncate(2))
    fields = table.sort_order().fields
    assert [(f.source_id, f.direction, f.null_order, str(f.transform)) for f in fields] == [
        (1, SortDirection.ASC, NullOrder.NULLS_FIRST, "identity"),
        (2, SortDirection.DESC, NullOrder.NULLS_FIRST, "truncate[2]")]
    assert table.metadata.default_sort_order_id == 1
    table.replace_sort_order().commit()  # no fields: unsorted
    assert table.sort_order().is_unsorted and table.metadata.default_sort_order_id == 0


def test_sort_order_rejections_keep_the_builder_usable(table: Table) -> None:
    order = table.replace_sort_order()
    with pytest.raises(ValidationError, match="Cannot find source column"):
        order.asc("missing")
    with pytest.raises(ValidationError, match="does not accept"):
        order.asc("data", transform="year")
    order.desc("ts", transform="day").commit()
    assert [str(f.transform) for f in table.sort_order().fields] == ["day"]


def test_sort_order_replay_fails_when_the_column_was_dropped(
        table: Table, committer: InMemoryCommitter) -> None:
    def drop_ts(md: TableMetadata) -> list[u.TableUpdate]:
        schema = Schema(tuple(f for f in md.schema().fields if f.name != "ts"))
        return [u.AddSchema(schema, md.last_column_id), u.SetCurrentSchema(u.LAST_ADDED)]

    committer.fail_next(1, drop_ts)
    with pytest.raises(ValidationError, match="ts"):
        table.replace_sort_order().asc("ts").commit()


def test_sort_order_change_requirements() -> None:
    md = _metadata()
    requirements, _ = SortOrderChange((Call("asc", ("id",)),)).changes(md)
    assert requirements == [u.AssertCurrentSchemaId(0), u.AssertDefaultSortOrderId(0)]
    assert SortOrderChange(()).changes(md) == ([], [])


# ------------------------------------------------------------------------------ properties


def test_update_properties_builder_and_shortcuts(table: Table) -> None:
    with table.update_properties({"a": "1", "b": "2"}) as props:
        props.set("c", "3")
    assert {k: table.properties[k] for k in "abc"} == {"a": "1", "b": "2", "c": "3"}
    table.update_properties(removals=["a"]).remove("b", "missing").commit()
    assert "a" not in table.properties and "b" not in table.properties
    table.set_properties({"x": "1"}, y="2").remove_properties("c")
    assert table.properties["x"] == "1" and table.properties["y"] == "2"
    assert "c" not in table.properties


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.update_properties({"a": "1"}, ["a"]), "set in this update"),
        (lambda t: t.update_properties(removals=["a"]).set("a", "1"), "removed in this"),
        (lambda t: t.update_properties({"format-version": "3"}), "upgrade_format_version"),
        (lambda t: t.update_properties({"a": 1}), "must be a string"),
        (lambda t: t.update_properties({"": "x"}), "non-empty"),
        (lambda t: t.update_properties({"commit.retry.num-retries": "-1"}), "non-negative"),
        (lambda t: t.set_properties({"history.expire.min-snapshots-to-keep": "x"}), "integer"),
    ],
)
def test_property_rejections(table: Table, committer: InMemoryCommitter, edit: object,
                             message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        edit(table)  # type: ignore[operator]
    assert committer.attempts == 0


def test_property_change_succeeds_after_a_concurrent_change(
        table: Table, committer: InMemoryCommitter) -> None:
    committer.fail_next(1, lambda md: [u.SetProperties({"theirs": "1", "both": "theirs"})])
    table.set_properties({"mine": "1", "both": "mine"})
    assert table.properties["theirs"] == "1" and table.properties["mine"] == "1"
    assert table.properties["both"] == "mine" and committer.attempts == 2


def test_properties_change_has_no_requirements() -> None:
    change = PropertiesChange({"a": "1"}, ("b",))
    assert change.changes(_metadata()) == (
        [], [u.SetProperties({"a": "1"}), u.RemoveProperties(("b",))])


# -------------------------------------------------------------------------- format version


def test_upgrade_v1_to_v2_keeps_everything_and_then_writes_v2(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"), format_version=1, partitioned=True,
                       properties={"owner": "me"})
    first = land_snapshot(committer, table, ["a"])
    before = table.metadata
    table.upgrade_format_version(2)
    after = table.metadata
    assert after.format_version == 2
    for name in ("table_uuid", "location", "schemas", "current_schema_id", "partition_specs",
                 "default_spec_id", "last_partition_id", "sort_orders", "snapshots",
                 "snapshot_log", "last_column_id", "current_snapshot_id", "refs"):
        assert getattr(after, name) == getattr(before, name), name
    assert after.properties == before.properties and after.last_sequence_number == 0
    written = json.loads(table_metadata_to_json(after))
    assert written["format-version"] == 2 and written["last-sequence-number"] == 0
    assert "schema" not in written and "partition-spec" not in written
    assert written["snapshots"][0]["sequence-number"] == 0  # v1 snapshots read as 0
    second = land_snapshot(committer, table, ["b"])
    assert second.sequence_number == 1 and table.metadata.last_sequence_number == 1
    assert json.loads(table_metadata_to_json(table.metadata))["snapshots"][1][
        "sequence-number"] == 1
    assert first.snapshot_id in table.metadata.snapshots_by_id


def test_upgrade_gives_a_v1_table_without_uuid_one(committer: InMemoryCommitter,
                                                   tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"), format_version=1)
    md = replace(table.metadata, table_uuid=None)
    committer.create(table.identifier, md)
    table.refresh().upgrade_format_version(2)
    assert isinstance(table.metadata.table_uuid, uuid.UUID)


def test_upgrade_rejections_and_noop(table: Table, committer: InMemoryCommitter) -> None:
    table.upgrade_format_version(2)
    assert committer.attempts == 0  # nothing to do
    with pytest.raises(ValidationError, match="downgrade"):
        table.upgrade_format_version(1)
    with pytest.raises(ValidationError, match="Unsupported format version 4"):
        table.upgrade_format_version(4)
    table.upgrade_format_version(3)
    assert table.metadata.format_version == 3
    assert FormatVersionChange(3).changes(table.metadata) == ([], [])


def test_upgrade_replays_after_a_concurrent_change(table: Table,
                                                   committer: InMemoryCommitter) -> None:
    committer.fail_next(1, lambda md: [u.SetProperties({"x": "1"})])
    table.upgrade_format_version(3)
    assert table.metadata.format_version == 3 and table.properties["x"] == "1"
