"""Snapshot expiry: the spec's retention policy as a table of cases, then file deletion against
a tiny table with real manifest lists and manifests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.spec.metadata import StatisticsFile, TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot, SnapshotRef
from icepark.spec.types import LONG, NestedField
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import MetadataBuilder, now_ms
from icepark.table.maintenance.expire import ExpireSnapshots, ExpiryPlan, plan_expiry
from icepark.table.table import Table
from tests.table.committer import DAY_MS, InMemoryCommitter, data_path, land_snapshot, make_table

NOW = 100 * DAY_MS
# main: 1 (day 90) <- 2 (day 91) <- 3 (day 94) <- 4 (day 96) <- 5 (day 99)
MAIN_CHAIN = [(1, None, 90), (2, 1, 91), (3, 2, 94), (4, 3, 96), (5, 4, 99)]


def metadata(snapshots: Sequence[tuple[int, int | None, float]] = (),
             refs: dict[str, SnapshotRef] | None = None,
             properties: dict[str, str] | None = None) -> TableMetadata:
    """A table (no files) with snapshots (id, parent, day) and refs; main defaults to 5."""
    md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t",
                                      properties=properties)
    chain = [*MAIN_CHAIN, *snapshots]
    updates: list[u.TableUpdate] = [
        u.AddSnapshot(Snapshot(i, parent, seq, int(day * DAY_MS), f"/t/metadata/snap-{i}.avro",
                               None, 0))
        for seq, (i, parent, day) in enumerate(chain, start=1)]
    for name, ref in {"main": SnapshotRef.branch(5), **(refs or {})}.items():
        updates.append(u.SetSnapshotRef(name, ref))
    return MetadataBuilder(md).apply_all(updates).build()


class Case(NamedTuple):
    name: str
    md: TableMetadata
    kwargs: dict[str, Any]
    expired: tuple[int, ...]
    removed_refs: tuple[str, ...] = ()


CASES = [
    Case("defaults: 5 days, keep 1", metadata(), {}, (1, 2, 3)),
    Case("retain_last", metadata(), {"retain_last": 4}, (1,)),
    Case("older_than", metadata(), {"older_than_ms": 92 * DAY_MS}, (1, 2)),
    Case("both conditions must hold to stop", metadata(),
         {"older_than_ms": 92 * DAY_MS, "retain_last": 4}, (1,)),
    Case("property min-snapshots-to-keep",
         metadata(properties={"history.expire.min-snapshots-to-keep": "3"}), {}, (1, 2)),
    Case("property max-snapshot-age-ms",
         metadata(properties={"history.expire.max-snapshot-age-ms": str(2 * DAY_MS)}), {},
         (1, 2, 3, 4)),
    Case("a tag keeps its snapshot but not its ancestors",
         metadata(refs={"t": SnapshotRef.tag(2)}), {}, (1, 3)),
    Case("a branch keeps its own ancestors",
         metadata([(6, 2, 97)], {"b": SnapshotRef.branch(6, min_snapshots_to_keep=3)}), {},
         (3,)),
    Case("a branch's max-snapshot-age-ms overrides the default",
         metadata([(6, 2, 97)], {"b": SnapshotRef.branch(6, max_snapshot_age_ms=10 * DAY_MS)}),
         {}, (3,)),
    Case("a branch's min-snapshots-to-keep overrides retain_last",
         metadata(refs={"main": SnapshotRef.branch(5, min_snapshots_to_keep=1)}),
         {"retain_last": 4}, (1, 2, 3)),
    Case("a ref older than its max-ref-age-ms is removed",
         metadata(refs={"old": SnapshotRef.tag(1, max_ref_age_ms=5 * DAY_MS),
                        "new": SnapshotRef.tag(2, max_ref_age_ms=20 * DAY_MS)}),
         {}, (1, 3), ("old",)),
    Case("property max-ref-age-ms applies to branches and tags, never main",
         metadata([(6, 1, 92)], {"b": SnapshotRef.branch(6), "t": SnapshotRef.tag(2),
                                 "main": SnapshotRef.branch(3)},
                  {"history.expire.max-ref-age-ms": str(7 * DAY_MS)}),
         {}, (1, 2, 4, 5, 6), ("b", "t")),
    Case("a ref's own max-ref-age-ms overrides the property",
         metadata(refs={"t": SnapshotRef.tag(1, max_ref_age_ms=30 * DAY_MS)},
                  properties={"history.expire.max-ref-age-ms": "1"}), {}, (2, 3)),
    Case("a snapshot no ref reaches expires whatever its age",
         metadata([(6, 5, 99.5)]), {}, (1, 2, 3, 6)),
    Case("explicit IDs alone expire only them", metadata(), {"snapshot_ids": [2, 999]}, (2,)),
    Case("explicit IDs with the policy expire retained ancestors too", metadata(),
         {"snapshot_ids": [4], "retain_last": 1}, (1, 2, 3, 4)),
    Case("an explicit ID whose ref expires may go",
         metadata(refs={"old": SnapshotRef.tag(1, max_ref_age_ms=DAY_MS)}),
         {"snapshot_ids": [1], "retain_last": 1}, (1, 2, 3), ("old",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_retention_policy(case: Case) -> None:
    plan = plan_expiry(case.md, NOW, **case.kwargs)
    assert plan == ExpiryPlan(case.removed_refs, case.expired)


@pytest.mark.parametrize(
    ("md", "kwargs", "message"),
    [
        (metadata(), {"snapshot_ids": [5]}, "still referenced by 'main'"),
        (metadata(refs={"t": SnapshotRef.tag(2)}), {"snapshot_ids": [2], "retain_last": 1},
         "still referenced by 't'"),
        (metadata(), {"retain_last": 0}, "at least 1"),
        (metadata(properties={"history.expire.max-snapshot-age-ms": "soon"}), {},
         "positive integer"),
        (metadata(properties={"history.expire.min-snapshots-to-keep": "0"}), {},
         "positive integer"),
    ],
)
def test_retention_rejections(md: TableMetadata, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        plan_expiry(md, NOW, **kwargs)


def test_expiry_change_asserts_every_ref_and_removes() -> None:
    md = metadata(refs={"old": SnapshotRef.tag(1, max_ref_age_ms=DAY_MS)})
    requirements, updates = ExpireSnapshots(clock=lambda: NOW).changes(md)
    assert requirements == [u.AssertRefSnapshotId("main", 5), u.AssertRefSnapshotId("old", 1)]
    assert updates == [u.RemoveSnapshotRef("old"), u.RemoveSnapshots((1, 2, 3))]
    after = MetadataBuilder(md).apply_all(updates).build()
    assert sorted(after.snapshots_by_id) == [4, 5] and set(after.refs) == {"main"}


# ------------------------------------------------------------------------- with real files


class Files(NamedTuple):
    """main: s1 adds a, b (10 days ago) <- s2 adds c (9 days) <- s3 removes a (2 days) <- s4
    adds d and the position delete file x (1 day)."""

    s1: Snapshot
    s2: Snapshot
    s3: Snapshot
    s4: Snapshot


@pytest.fixture
def files(table: Table, committer: InMemoryCommitter) -> Files:
    now = now_ms()
    return Files(land_snapshot(committer, table, ["a", "b"], timestamp_ms=now - 10 * DAY_MS),
                 land_snapshot(committer, table, ["c"], timestamp_ms=now - 9 * DAY_MS),
                 land_snapshot(committer, table, removed=["a"], timestamp_ms=now - 2 * DAY_MS),
                 land_snapshot(committer, table, ["d"], deletes=["x"],
                               timestamp_ms=now - DAY_MS))


def exists(table: Table, *names: str) -> list[bool]:
    return [Path(data_path(table, n)).exists() for n in names]


def metadata_file(table: Table, name: str) -> str:
    return f"{table.location}/metadata/{name}"


def test_expire_deletes_only_unreachable_files(table: Table, committer: InMemoryCommitter,
                                               files: Files) -> None:
    result = table.expire_snapshots()
    assert result.expired_snapshot_ids == (1, 2) and result.removed_refs == ()
    assert sorted(table.metadata.snapshots_by_id) == [3, 4]
    assert committer.load_metadata(table.identifier).metadata is table.metadata
    assert result.deleted_data_files == (data_path(table, "a"),)
    assert result.deleted_delete_files == ()
    assert result.deleted_manifests == (metadata_file(table, "m-1-data.avro"),)
    assert result.deleted_manifest_lists == (metadata_file(table, "snap-1.avro"),
                                             metadata_file(table, "snap-2.avro"))
    assert result.error is None and result.failed == () and result.kept_outside_location == ()
    assert exists(table, "a", "b", "c", "d", "x") == [False, True, True, True, True]
    for name in ("snap-3.avro", "snap-4.avro", "m-2-data.avro", "m-3-1.avro",
                 "m-4-data.avro", "m-4-deletes.avro"):
        assert Path(metadata_file(table, name)).exists(), name
    for name in ("snap-1.avro", "snap-2.avro", "m-1-data.avro"):
        assert not Path(metadata_file(table, name)).exists(), name
    assert set(result.deleted_files) == {data_path(table, "a"), *(
        metadata_file(table, n) for n in ("m-1-data.avro", "snap-1.avro", "snap-2.avro"))}


def test_a_tag_keeps_its_snapshots_files(table: Table, committer: InMemoryCommitter,
                                         files: Files) -> None:
    table.manage_snapshots().create_tag("v1", files.s1.snapshot_id).commit()
    result = table.expire_snapshots()
    assert result.expired_snapshot_ids == (2,)
    assert result.deleted_manifest_lists == (metadata_file(table, "snap-2.avro"),)
    assert result.deleted_manifests == () and result.deleted_data_files == ()
    assert all(exists(table, "a", "b", "c"))


def test_unreachable_delete_files_are_deleted(table: Table, committer: InMemoryCommitter) -> None:
    land_snapshot(committer, table, ["a"], deletes=["x"], timestamp_ms=now_ms() - DAY_MS)
    land_snapshot(committer, table, removed=["x"])
    result = table.expire_snapshots(older_than_ms=now_ms())
    assert result.expired_snapshot_ids == (1,)
    assert result.deleted_delete_files == (data_path(table, "x"),)
    assert result.deleted_data_files == () and exists(table, "a", "x") == [True, False]


def test_nothing_is_deleted_when_the_commit_fails(committer: InMemoryCommitter,
                                                  tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"),
                       properties={"commit.retry.num-retries": "0"})
    land_snapshot(committer, table, ["a"], timestamp_ms=now_ms() - 10 * DAY_MS)
    land_snapshot(committer, table, removed=["a"])
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    committer.fail_next(1)
    with pytest.raises(CommitFailed):
        table.expire_snapshots()
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == before
    assert len(table.refresh().snapshots()) == 2


@pytest.mark.parametrize("applied", [False, True])
def test_nothing_is_deleted_when_the_outcome_is_unknown(
        table: Table, committer: InMemoryCommitter, files: Files, tmp_path: Path,
        applied: bool) -> None:
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    committer.unknown_next(applied=applied)
    with pytest.raises(CommitStateUnknown):
        table.expire_snapshots()
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == before


def test_retry_replans_and_keeps_what_a_concurrent_tag_references(
        table: Table, committer: InMemoryCommitter, files: Files) -> None:
    committer.fail_next(1, lambda md: [u.SetSnapshotRef("keep",
                                                        SnapshotRef.tag(files.s1.snapshot_id))])
    result = table.expire_snapshots()
    assert result.expired_snapshot_ids == (2,) and committer.attempts == 2
    assert all(exists(table, "a", "b", "c"))
    assert Path(metadata_file(table, "snap-1.avro")).exists()


def test_expired_refs_are_removed_and_their_files_deleted(
        table: Table, committer: InMemoryCommitter, files: Files) -> None:
    table.manage_snapshots().create_tag("old", files.s1.snapshot_id,
                                        max_ref_age_ms=DAY_MS).commit()
    result = table.expire_snapshots()
    assert result.removed_refs == ("old",) and result.expired_snapshot_ids == (1, 2)
    assert "old" not in table.refs() and exists(table, "a") == [False]


def test_files_outside_the_table_location_are_never_deleted(
        table: Table, committer: InMemoryCommitter, tmp_path: Path) -> None:
    outside = str(tmp_path / "elsewhere" / "o.parquet")
    land_snapshot(committer, table, ["a", outside], timestamp_ms=now_ms() - DAY_MS)
    land_snapshot(committer, table, removed=["a", outside])
    result = table.expire_snapshots(older_than_ms=now_ms())
    assert result.kept_outside_location == (outside,)
    assert result.deleted_data_files == (data_path(table, "a"),)
    assert Path(outside).exists()


def test_clean_files_false_only_updates_the_metadata(table: Table, files: Files) -> None:
    result = table.expire_snapshots(clean_files=False)
    assert result.expired_snapshot_ids == (1, 2) and result.deleted_files == ()
    assert all(exists(table, "a")) and Path(metadata_file(table, "snap-1.avro")).exists()


def test_nothing_to_expire_commits_nothing(table: Table, committer: InMemoryCommitter,
                                           files: Files) -> None:
    result = table.expire_snapshots(retain_last=10, older_than_ms=0)
    assert result.expired_snapshot_ids == () and committer.attempts == 0


def test_explicit_snapshot_ids(table: Table, files: Files) -> None:
    with pytest.raises(ValidationError, match="unknown snapshot 999"):
        table.expire_snapshots(snapshot_ids=[999])
    with pytest.raises(ValidationError, match="still referenced by 'main'"):
        table.expire_snapshots(snapshot_ids=[files.s4.snapshot_id])
    result = table.expire_snapshots(snapshot_ids=[files.s1.snapshot_id])
    assert result.expired_snapshot_ids == (1,)
    assert result.deleted_manifest_lists == (metadata_file(table, "snap-1.avro"),)
    assert result.deleted_manifests == ()  # m-1-data is still listed by s2


def test_statistics_files_of_expired_snapshots_are_deleted(
        table: Table, committer: InMemoryCommitter, files: Files) -> None:
    stats_path = metadata_file(table, "stats-1.puffin")
    Path(stats_path).write_bytes(b"puffin")
    committer.land(table.identifier, [u.SetStatistics(
        StatisticsFile(files.s1.snapshot_id, stats_path, 6, 2))])
    result = table.refresh().expire_snapshots()
    assert result.deleted_statistics_files == (stats_path,)
    assert not Path(stats_path).exists() and table.metadata.statistics == ()


def test_an_unreadable_retained_manifest_list_stops_all_deletion(
        table: Table, files: Files) -> None:
    Path(metadata_file(table, "snap-3.avro")).unlink()
    result = table.expire_snapshots()
    assert result.expired_snapshot_ids == (1, 2)
    assert result.error is not None and "no file was deleted" in result.error
    assert result.deleted_files == () and all(exists(table, "a"))
