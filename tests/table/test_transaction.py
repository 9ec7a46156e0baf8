"""Transactions: staged changes replayed in order, committed once, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from icepark.errors import CommitStateUnknown, ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change import updates as u
from icepark.table.change.schema_change import Call, PropertiesChange, SchemaChange
from icepark.table.table import Table
from icepark.table.transaction import merge_requirements, replay
from tests.table.committer import InMemoryCommitter, land_snapshot, make_table


@dataclass
class RecordingChange:
    """A Change written by someone else: records the bases it saw and its clean-ups."""

    key: str
    fail_on_replay: bool = False
    bases: list[TableMetadata] = field(default_factory=list)
    cleanups: list[bool] = field(default_factory=list)

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        self.bases.append(base)
        if self.fail_on_replay and len(self.bases) > 1:
            raise ValidationError(f"{self.key} no longer applies")
        return [], [u.SetProperties({self.key: str(len(self.bases))})]

    def clean_up(self, committed: bool) -> None:
        self.cleanups.append(committed)


def test_transaction_commits_every_change_once(table: Table,
                                               committer: InMemoryCommitter) -> None:
    land_snapshot(committer, table, ["a"])
    with table.transaction() as tx:
        with tx.update_schema() as schema:
            schema.add_column("region", STRING)
        with tx.update_spec() as spec:
            spec.add_identity("region")  # sees the column staged before it
        tx.replace_sort_order().asc("region").commit()
        tx.set_properties(owner="me")
        tx.manage_snapshots().create_tag("v1", table.metadata.current_snapshot_id or 0).commit()
        assert tx.metadata.schema().find_field("region").field_id == 4
        assert table.metadata.current_schema_id == 0  # nothing committed yet
    assert committer.commits == 1
    md = table.metadata
    assert md.schema().find_field("region").field_id == 4
    assert [f.name for f in md.spec().fields] == ["region"]
    assert md.sort_order().fields[0].source_id == 4
    assert md.properties["owner"] == "me" and md.refs["v1"].snapshot_id == md.current_snapshot_id


def test_commit_transaction_returns_the_table(table: Table) -> None:
    tx = table.transaction().set_properties(a="1").remove_properties("a").set_properties(b="2")
    assert tx.commit_transaction() is table
    assert "a" not in table.properties and table.properties["b"] == "2"
    with pytest.raises(ValidationError, match="already committed"):
        tx.set_properties(c="3")
    with pytest.raises(ValidationError, match="already committed"):
        tx.commit_transaction()


def test_empty_transaction_commits_nothing(table: Table, committer: InMemoryCommitter) -> None:
    with table.transaction():
        pass
    assert committer.attempts == 0


def test_requirements_are_the_first_of_each_kind() -> None:
    md = _metadata()
    first = SchemaChange((Call("add_column", ("a", STRING)),))
    second = SchemaChange((Call("add_column", ("b", STRING)),))
    requirements, updates, result = replay([first, second], md)
    assert requirements == [u.AssertCurrentSchemaId(0), u.AssertLastAssignedFieldId(3)]
    assert len(updates) == 4 and result.last_column_id == 5
    assert [f.name for f in result.schema().fields][-2:] == ["a", "b"]


def test_ref_requirements_are_merged_per_ref() -> None:
    merged = merge_requirements([
        u.AssertRefSnapshotId("main", 1), u.AssertRefSnapshotId("b", None),
        u.AssertRefSnapshotId("main", 2), u.AssertRefSnapshotId("b", 2),
        u.AssertDefaultSpecId(0), u.AssertDefaultSpecId(1)])
    assert merged == [u.AssertRefSnapshotId("main", 1), u.AssertRefSnapshotId("b", None),
                      u.AssertDefaultSpecId(0)]


def test_branch_created_and_moved_in_one_transaction(table: Table,
                                                     committer: InMemoryCommitter) -> None:
    s1 = land_snapshot(committer, table, ["a"])
    s2 = land_snapshot(committer, table, ["b"])
    tx = table.transaction()
    tx.manage_snapshots().create_branch("dev", s1.snapshot_id).commit()
    tx.manage_snapshots().replace_branch("dev", s2.snapshot_id).commit()
    requirements, _ = tx.changes(table.metadata)
    assert requirements == [u.AssertRefSnapshotId("dev", None)]
    tx.commit_transaction()
    assert table.metadata.refs["dev"].snapshot_id == s2.snapshot_id


def test_added_changes_are_validated_at_once(table: Table) -> None:
    failing = SchemaChange((Call("delete_column", ("missing",)),))
    tx = table.transaction()
    with pytest.raises(ValidationError, match="missing"):
        tx.add(failing)
    assert tx.staged == ()
    other = RecordingChange("k")
    tx.add(other).commit_transaction()
    assert other.cleanups == [True] and table.properties["k"] == "1"


def test_a_rejected_change_is_cleaned_up_and_not_staged(table: Table) -> None:
    class Rejected(RecordingChange):
        def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                         list[u.TableUpdate]]:
            raise ValidationError("nope")

    change = Rejected("x")
    with pytest.raises(ValidationError, match="nope"):
        table.transaction().add(change)
    assert change.cleanups == [False]


def test_staged_changes_see_the_previous_ones(table: Table) -> None:
    first, second = RecordingChange("a"), RecordingChange("b")
    tx = table.transaction().add(first, second)
    assert second.bases[0].properties["a"] == "1"
    assert tx.metadata.properties["b"] == "1"


def test_retry_replays_every_change_on_the_refreshed_table(
        table: Table, committer: InMemoryCommitter) -> None:
    first, second = RecordingChange("a"), RecordingChange("b")
    committer.fail_next(1, lambda md: [u.SetProperties({"theirs": "1"})])
    with table.transaction() as tx:
        tx.add(first)
        tx.update_schema().add_column("x", LONG).commit()
        tx.add(second)
    assert len(first.bases) == 2 and first.bases[1].properties["theirs"] == "1"
    assert second.bases[1].schema().find_field("x").field_id == 4  # replayed after the schema
    assert first.cleanups == [True] and second.cleanups == [True]
    assert table.properties["theirs"] == "1" and table.properties["a"] == "2"
    assert committer.attempts == 2


def test_transaction_is_all_or_nothing_when_a_replay_fails(
        table: Table, committer: InMemoryCommitter) -> None:
    def clash(md: TableMetadata) -> list[u.TableUpdate]:
        schema = Schema((*md.schema().fields, NestedField.optional(4, "x", LONG)))
        return [u.AddSchema(schema, 4), u.SetCurrentSchema(u.LAST_ADDED)]

    other = RecordingChange("mine")
    committer.fail_next(1, clash)
    tx = table.transaction().add(other).set_properties(p="1")
    tx.update_schema().add_column("x", STRING).commit()
    with pytest.raises(ValidationError, match="already has a column named 'x'"):
        tx.commit_transaction()
    current = table.refresh().metadata
    assert "mine" not in current.properties and "p" not in current.properties
    assert current.schema().find_field("x").field_type == LONG
    assert other.cleanups == [False] and committer.commits == 0


def test_transaction_requirement_failure_replays(table: Table,
                                                 committer: InMemoryCommitter) -> None:
    stale = Table(table.identifier, committer.load_metadata(table.identifier), table.io,
                  committer)
    table.update_schema().add_column("a", STRING).commit()
    with stale.transaction() as tx:
        tx.update_schema().add_column("b", STRING).commit()
        tx.update_spec().add_identity("b").commit()
    assert [f.name for f in stale.schema().fields][-2:] == ["a", "b"]
    assert stale.spec().fields[0].source_id == 5
    assert committer.attempts == 3


def test_an_exception_in_the_block_abandons_the_transaction(
        table: Table, committer: InMemoryCommitter) -> None:
    change = RecordingChange("k")
    with pytest.raises(RuntimeError), table.transaction() as tx:
        tx.add(change)
        raise RuntimeError("boom")
    assert change.cleanups == [False] and committer.attempts == 0
    with pytest.raises(ValidationError, match="abandoned"):
        tx.add(RecordingChange("j"))


def test_commit_state_unknown_propagates_without_clean_up(
        table: Table, committer: InMemoryCommitter) -> None:
    change = RecordingChange("k")
    committer.unknown_next(applied=True)
    with pytest.raises(CommitStateUnknown), table.transaction() as tx:
        tx.add(change).set_properties(z="1")
    assert change.cleanups == []
    assert committer.load_metadata(table.identifier).metadata.properties["z"] == "1"


def test_replay_of_a_change_that_no_longer_applies_cleans_up(
        table: Table, committer: InMemoryCommitter) -> None:
    change = RecordingChange("k", fail_on_replay=True)
    committer.fail_next(1, lambda md: [u.SetProperties({"x": "1"})])
    with pytest.raises(ValidationError, match="no longer applies"):
        table.transaction().add(change).commit_transaction()
    assert change.cleanups == [False]


def test_table_commit_of_several_changes_is_one_transaction(
        table: Table, committer: InMemoryCommitter) -> None:
    table.commit(PropertiesChange({"a": "1"}), PropertiesChange({"b": "2"}))
    assert committer.commits == 1 and table.properties["b"] == "2"
    table.commit()
    assert committer.commits == 1


def _metadata() -> TableMetadata:
    return make_table(InMemoryCommitter(), "/nowhere/t").metadata
