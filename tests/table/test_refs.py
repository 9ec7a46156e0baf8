"""Branches, tags and moving main: every operation's happy path and rejections, replay after
conflicts, snapshot selection by ref and time, and cherry-pick with real manifests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from pyiceberg.table import StaticTable

from icepark.errors import AlreadyExists, CommitFailed, CommitStateUnknown, ValidationError
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.serde.metadata_json import table_metadata_to_json
from icepark.spec.snapshots import Operation, RefType, Snapshot, SnapshotRef
from icepark.table.change import updates as u
from icepark.table.change.cherry_pick import CherryPick
from icepark.table.change.manage_snapshots import ManageSnapshots
from icepark.table.change.metadata_builder import now_ms
from icepark.table.table import Table
from tests.table.committer import DAY_MS, InMemoryCommitter, land_snapshot, live_files, make_table


class History(NamedTuple):
    """main: s1 <- s2 <- s3; dev: s2 <- s4."""

    s1: Snapshot
    s2: Snapshot
    s3: Snapshot
    s4: Snapshot


@pytest.fixture
def history(table: Table, committer: InMemoryCommitter) -> History:
    start = now_ms() - 4 * DAY_MS
    s1 = land_snapshot(committer, table, ["a"], timestamp_ms=start)
    s2 = land_snapshot(committer, table, ["b"], timestamp_ms=start + DAY_MS)
    s3 = land_snapshot(committer, table, ["c"], timestamp_ms=start + 2 * DAY_MS)
    s4 = land_snapshot(committer, table, ["d"], branch="dev", parent_id=s2.snapshot_id,
                       timestamp_ms=start + 3 * DAY_MS)
    return History(s1, s2, s3, s4)


def manage(table: Table, edit: Callable[[ManageSnapshots], object]) -> Table:
    with table.manage_snapshots() as ms:
        edit(ms)
    return table


# ---------------------------------------------------------------------- branches and tags


def test_create_branch_at_the_current_snapshot_with_retention(table: Table,
                                                              history: History) -> None:
    manage(table, lambda ms: ms.create_branch("audit", min_snapshots_to_keep=2,
                                              max_snapshot_age_ms=1000, max_ref_age_ms=5000))
    assert table.refs()["audit"] == SnapshotRef.branch(
        history.s3.snapshot_id, min_snapshots_to_keep=2, max_snapshot_age_ms=1000,
        max_ref_age_ms=5000)
    assert table.snapshot_by_ref("audit") == history.s3


def test_create_tag(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.create_tag("v1", history.s1.snapshot_id, max_ref_age_ms=10))
    assert table.refs()["v1"] == SnapshotRef.tag(history.s1.snapshot_id, max_ref_age_ms=10)
    assert table.snapshot_by_ref("v1") == history.s1 and table.snapshot_by_ref("nope") is None


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        (lambda ms, h: ms.create_branch("dev"), AlreadyExists, "branch named 'dev'"),
        (lambda ms, h: ms.create_tag("dev", h.s1.snapshot_id), AlreadyExists, "already exists"),
        (lambda ms, h: ms.create_tag("t", 999), ValidationError, "no snapshot 999"),
        (lambda ms, h: ms.create_branch("b", 999), ValidationError, "no snapshot 999"),
        (lambda ms, h: ms.create_branch("", h.s1.snapshot_id), ValidationError, "non-empty"),
        (lambda ms, h: ms.create_branch("b", min_snapshots_to_keep=0), ValidationError,
         "positive"),
        (lambda ms, h: ms.create_tag("t", h.s1.snapshot_id).create_tag("t", h.s2.snapshot_id),
         AlreadyExists, "tag named 't'"),
        (lambda ms, h: ms.replace_tag("dev", h.s1.snapshot_id), ValidationError,
         "'dev' is a branch, not a tag"),
        (lambda ms, h: ms.replace_branch("nope", h.s1.snapshot_id), ValidationError,
         "no branch or tag named 'nope'"),
        (lambda ms, h: ms.replace_branch("dev", 999), ValidationError, "no snapshot 999"),
        (lambda ms, h: ms.remove_branch("main"), ValidationError, "main branch"),
        (lambda ms, h: ms.remove_tag("dev"), ValidationError, "is a branch, not a tag"),
        (lambda ms, h: ms.remove_branch("nope"), ValidationError, "no branch or tag"),
        (lambda ms, h: ms.rename_branch("main", "x"), ValidationError, "main branch"),
        (lambda ms, h: ms.rename_branch("dev", "main"), ValidationError, "main branch"),
        (lambda ms, h: ms.create_tag("t", h.s1.snapshot_id).rename_branch("t", "u"),
         ValidationError, "'t' is a tag, not a branch"),
        (lambda ms, h: ms.create_branch("b").rename_branch("b", "dev"), AlreadyExists,
         "named 'dev' already exists"),
        (lambda ms, h: ms.set_min_snapshots_to_keep("nope", 1), ValidationError,
         "no branch or tag"),
        (lambda ms, h: ms.create_tag("t", h.s1.snapshot_id).set_min_snapshots_to_keep("t", 2),
         ValidationError, "branch type only"),
        (lambda ms, h: ms.set_max_ref_age_ms("main", 1000), ValidationError, "never expires"),
        (lambda ms, h: ms.create_branch("b", max_snapshot_age_ms=-5), ValidationError,
         "positive"),
    ],
)
def test_rejections_raise_at_the_call(table: Table, committer: InMemoryCommitter,
                                      history: History, edit: object, *,
                                      error: type[Exception], message: str) -> None:
    refs = table.refs()
    attempts = committer.attempts
    with pytest.raises(error, match=message), table.manage_snapshots() as ms:
        edit(ms, history)  # type: ignore[operator]
    assert table.refresh().refs() == refs and committer.attempts == attempts


def test_replace_remove_and_rename(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.create_tag("t", history.s1.snapshot_id)
           .replace_tag("t", history.s2.snapshot_id)
           .set_max_snapshot_age_ms("dev", 7000).set_min_snapshots_to_keep("dev", 3)
           .replace_branch("dev", history.s3.snapshot_id))
    assert table.refs()["t"] == SnapshotRef.tag(history.s2.snapshot_id)
    assert table.refs()["dev"] == SnapshotRef.branch(
        history.s3.snapshot_id, min_snapshots_to_keep=3, max_snapshot_age_ms=7000)
    manage(table, lambda ms: ms.rename_branch("dev", "feature").remove_tag("t"))
    assert set(table.refs()) == {"main", "feature"}
    assert table.refs()["feature"].min_snapshots_to_keep == 3
    manage(table, lambda ms: ms.set_min_snapshots_to_keep("feature", None)
           .remove_branch("feature"))
    assert set(table.refs()) == {"main"}


def test_operations_commit_together(table: Table, committer: InMemoryCommitter,
                                    history: History) -> None:
    before = committer.commits
    manage(table, lambda ms: ms.create_branch("a").create_tag("b", history.s1.snapshot_id)
           .remove_branch("dev"))
    assert committer.commits == before + 1 and set(table.refs()) == {"main", "a", "b"}


def test_a_failing_operation_commits_none_of_them(table: Table, history: History) -> None:
    with pytest.raises(ValidationError), table.manage_snapshots() as ms:
        ms.create_branch("a")
        ms.remove_branch("main")
    assert "a" not in table.refresh().refs()


# -------------------------------------------------------------------------------- main


def test_set_current_snapshot_to_any_snapshot(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.set_current_snapshot(history.s4.snapshot_id))
    assert table.current_snapshot() == history.s4
    assert table.history()[-1].snapshot_id == history.s4.snapshot_id
    with pytest.raises(ValidationError, match="no snapshot 999"):
        table.manage_snapshots().set_current_snapshot(999)


def test_rollback_to_snapshot(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.rollback_to_snapshot(history.s1.snapshot_id))
    assert table.current_snapshot() == history.s1
    assert table.refs()["main"] == SnapshotRef.branch(history.s1.snapshot_id)


def test_rollback_rejections(table: Table, history: History) -> None:
    with pytest.raises(ValidationError, match="not an ancestor"):
        table.manage_snapshots().rollback_to_snapshot(history.s4.snapshot_id)
    with pytest.raises(ValidationError, match="no snapshot 999"):
        table.manage_snapshots().rollback_to_snapshot(999)
    with pytest.raises(ValidationError, match="no ancestor older"):
        table.manage_snapshots().rollback_to_timestamp(history.s1.timestamp_ms)


def test_rollback_to_timestamp_picks_the_latest_older_ancestor(table: Table,
                                                               history: History) -> None:
    manage(table, lambda ms: ms.rollback_to_timestamp(history.s3.timestamp_ms))
    assert table.current_snapshot() == history.s2
    manage(table, lambda ms: ms.set_current_snapshot(history.s3.snapshot_id)
           .rollback_to_timestamp(history.s2.timestamp_ms + 1))
    assert table.current_snapshot() == history.s2


def test_main_keeps_its_retention_settings_when_it_moves(table: Table,
                                                         history: History) -> None:
    manage(table, lambda ms: ms.set_min_snapshots_to_keep("main", 5))
    manage(table, lambda ms: ms.rollback_to_snapshot(history.s2.snapshot_id))
    assert table.refs()["main"] == SnapshotRef.branch(history.s2.snapshot_id,
                                                      min_snapshots_to_keep=5)


def test_fast_forward(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.create_branch("old", history.s1.snapshot_id)
           .fast_forward("old", "main").fast_forward("main", "main"))
    assert table.refs()["old"].snapshot_id == history.s3.snapshot_id
    with pytest.raises(ValidationError, match="is not an ancestor"):
        table.manage_snapshots().fast_forward("main", "dev")
    with pytest.raises(ValidationError, match="is a tag, not a branch"):
        table.manage_snapshots().create_tag("t", history.s1.snapshot_id).fast_forward("t", "main")
    with pytest.raises(ValidationError, match="no branch or tag named 'nope'"):
        table.manage_snapshots().fast_forward("main", "nope")


def test_fast_forward_to_a_tag(table: Table, history: History) -> None:
    manage(table, lambda ms: ms.create_tag("t", history.s4.snapshot_id)
           .create_branch("b", history.s2.snapshot_id).fast_forward("b", "t"))
    assert table.refs()["b"].snapshot_id == history.s4.snapshot_id


def test_empty_table_rejections(table: Table) -> None:
    with pytest.raises(ValidationError, match="no current snapshot"):
        table.manage_snapshots().create_branch("b")
    with pytest.raises(ValidationError, match="no ancestor older"):
        table.manage_snapshots().rollback_to_timestamp(now_ms())


# ------------------------------------------------------------------------------- retries


def test_rollback_replays_on_the_moved_main(table: Table, committer: InMemoryCommitter,
                                            history: History) -> None:
    committer.fail_next(1, lambda md: land_updates(md, history.s3))
    manage(table, lambda ms: ms.rollback_to_snapshot(history.s1.snapshot_id))
    assert table.current_snapshot() == history.s1 and committer.attempts == 2


def land_updates(md: object, parent: Snapshot) -> list[u.TableUpdate]:
    """A concurrent writer's snapshot on main (no files needed)."""
    snapshot = Snapshot(77, parent.snapshot_id, parent.sequence_number + 10, now_ms(),
                        "/elsewhere/snap-77.avro", None, 0)
    return [u.AddSnapshot(snapshot), u.SetSnapshotRef("main", SnapshotRef.branch(77))]


def test_rollback_replay_rejects_what_is_no_longer_an_ancestor(
        table: Table, committer: InMemoryCommitter, history: History) -> None:
    committer.fail_next(1, lambda md: [u.SetSnapshotRef("main", SnapshotRef.branch(
        history.s4.snapshot_id))])
    with pytest.raises(ValidationError, match="not an ancestor"):
        manage(table, lambda ms: ms.rollback_to_snapshot(history.s3.snapshot_id))


def test_concurrent_removal_fails_the_replayed_replace(
        table: Table, committer: InMemoryCommitter, history: History) -> None:
    committer.fail_next(1, lambda md: [u.RemoveSnapshotRef("dev")])
    with pytest.raises(ValidationError, match="no branch or tag named 'dev'"):
        manage(table, lambda ms: ms.replace_branch("dev", history.s3.snapshot_id))


def test_stale_tag_creation_fails_its_requirement_then_replays(
        table: Table, committer: InMemoryCommitter, history: History) -> None:
    stale = Table(table.identifier, committer.load_metadata(table.identifier), table.io,
                  committer)
    manage(table, lambda ms: ms.create_tag("t", history.s1.snapshot_id))
    with pytest.raises(AlreadyExists):
        manage(stale, lambda ms: ms.create_tag("t", history.s2.snapshot_id))
    stale.refresh()
    manage(table, lambda ms: ms.replace_branch("dev", history.s3.snapshot_id))
    manage(stale, lambda ms: ms.replace_branch("dev", history.s1.snapshot_id))  # replayed
    assert stale.refs()["dev"].snapshot_id == history.s1.snapshot_id


def test_commit_state_unknown_propagates(table: Table, committer: InMemoryCommitter,
                                         history: History) -> None:
    committer.unknown_next()
    with pytest.raises(CommitStateUnknown):
        manage(table, lambda ms: ms.create_tag("t", history.s1.snapshot_id))


# --------------------------------------------------------------------- reads by ref/time


def test_snapshot_as_of_uses_the_snapshot_log(table: Table, history: History) -> None:
    assert table.snapshot_as_of(history.s1.timestamp_ms - 1) is None
    assert table.snapshot_as_of(history.s1.timestamp_ms) == history.s1
    assert table.snapshot_as_of(history.s2.timestamp_ms + 1) == history.s2
    assert table.snapshot_as_of(now_ms()) == history.s3
    manage(table, lambda ms: ms.set_current_snapshot(history.s4.snapshot_id))
    assert table.snapshot_as_of(now_ms() + 1000) == history.s4


# ----------------------------------------------------------------------------- cherry-pick


def test_cherry_pick_fast_forwards_a_staged_snapshot(table: Table, committer: InMemoryCommitter,
                                                     history: History) -> None:
    staged = land_snapshot(committer, table, ["w"], branch=None,
                           parent_id=history.s3.snapshot_id)
    manage(table, lambda ms: ms.cherry_pick(staged.snapshot_id))
    assert table.current_snapshot() == staged


def test_cherry_pick_appends_the_files_as_a_new_snapshot(
        table: Table, committer: InMemoryCommitter, history: History, tmp_path: Path) -> None:
    manage(table, lambda ms: ms.cherry_pick(history.s4.snapshot_id))
    picked = table.current_snapshot()
    assert picked is not None and picked.parent_snapshot_id == history.s3.snapshot_id
    assert picked.operation is Operation.APPEND
    assert picked.summary is not None
    assert picked.summary.properties["source-snapshot-id"] == str(history.s4.snapshot_id)
    assert picked.summary.properties["added-data-files"] == "1"
    assert picked.sequence_number == table.metadata.last_sequence_number
    names = {p.rsplit("/", 1)[1] for p in live_files(table, picked)}
    assert names == {"a.parquet", "b.parquet", "c.parquet", "d.parquet"}
    with pytest.raises(ValidationError, match="already cherry-picked"):
        table.manage_snapshots().cherry_pick(history.s4.snapshot_id)
    with pytest.raises(ValidationError, match="already an ancestor"):
        table.manage_snapshots().cherry_pick(history.s2.snapshot_id)
    with pytest.raises(ValidationError, match="no snapshot 999"):
        table.manage_snapshots().cherry_pick(999)


def test_cherry_pick_only_rewrites_appends(table: Table, committer: InMemoryCommitter,
                                           history: History) -> None:
    removal = land_snapshot(committer, table, removed=["a"], branch="dev")
    with pytest.raises(ValidationError, match="only append snapshots"):
        table.manage_snapshots().cherry_pick(removal.snapshot_id)


def test_cherry_pick_retry_rewrites_only_the_manifest_list(
        table: Table, committer: InMemoryCommitter, history: History, tmp_path: Path) -> None:
    other = Table(table.identifier, committer.load_metadata(table.identifier), table.io,
                  committer)
    metadata_dir = Path(table.location) / "metadata"
    before = set(metadata_dir.iterdir())
    concurrent: list[Snapshot] = []

    def other_writer(md: object) -> list[u.TableUpdate]:
        concurrent.append(land_snapshot(committer, other, ["e"]))
        return []

    committer.fail_next(1, other_writer)
    manage(table, lambda ms: ms.cherry_pick(history.s4.snapshot_id))
    picked = table.current_snapshot()
    assert picked is not None and picked.parent_snapshot_id == concurrent[0].snapshot_id
    assert {p.rsplit("/", 1)[1] for p in live_files(table, picked)} == {
        "a.parquet", "b.parquet", "c.parquet", "d.parquet", "e.parquet"}
    ours = {p.name for p in set(metadata_dir.iterdir()) - before} - {
        f"snap-{concurrent[0].snapshot_id}.avro", f"m-{concurrent[0].snapshot_id}-data.avro"}
    assert len(ours) == 2  # one manifest (reused) and the committed manifest list
    assert picked.manifest_list is not None
    assert picked.manifest_list.rsplit("/", 1)[1] in ours


def test_failed_cherry_pick_deletes_what_it_wrote(committer: InMemoryCommitter,
                                                  tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"),
                       properties={"commit.retry.num-retries": "0"})
    land_snapshot(committer, table, ["a"])
    side = land_snapshot(committer, table, ["b"], branch="side", parent_id=None)
    metadata_dir = Path(table.location) / "metadata"
    before = set(metadata_dir.iterdir())
    committer.fail_next(1)
    with pytest.raises(CommitFailed):
        manage(table, lambda ms: ms.cherry_pick(side.snapshot_id))
    assert set(metadata_dir.iterdir()) == before


def test_cherry_pick_clean_up_after_a_fast_forward_retry(
        table: Table, committer: InMemoryCommitter, history: History) -> None:
    pick = CherryPick(history.s4.snapshot_id, table.io)
    requirements, updates = pick.changes(table.metadata)
    assert requirements == [u.AssertRefSnapshotId("main", history.s3.snapshot_id)]
    assert isinstance(updates[0], u.AddSnapshot)
    rewound = committer.land(table.identifier, [u.SetSnapshotRef(
        "main", SnapshotRef.branch(history.s2.snapshot_id))]).metadata
    _, updates = pick.changes(rewound)  # now main can fast-forward to the picked snapshot
    assert updates == [u.SetSnapshotRef("main", SnapshotRef.branch(history.s4.snapshot_id))]
    written = list(Path(table.location, "metadata").glob("*-m0.avro"))
    assert len(written) == 1
    pick.clean_up(committed=True)
    assert not written[0].exists()
    assert RefType.BRANCH is table.refs()["dev"].ref_type


def test_cherry_pick_on_a_v1_table(committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make_table(committer, str(tmp_path / "t"), format_version=1)
    base = land_snapshot(committer, table, ["a"])
    side = land_snapshot(committer, table, ["b"], branch="side", parent_id=None)
    land_snapshot(committer, table, ["c"])
    manage(table, lambda ms: ms.cherry_pick(side.snapshot_id))
    picked = table.current_snapshot()
    assert picked is not None and picked.sequence_number == 0
    assert {p.rsplit("/", 1)[1] for p in live_files(table, picked)} == {
        "a.parquet", "b.parquet", "c.parquet"}
    assert base.snapshot_id in {s.snapshot_id for s in table.snapshots()}


def test_unknown_cherry_pick_outcome_keeps_its_files(
        table: Table, committer: InMemoryCommitter, history: History) -> None:
    metadata_dir = Path(table.location) / "metadata"
    before = set(metadata_dir.iterdir())
    committer.unknown_next(applied=True)
    with pytest.raises(CommitStateUnknown):
        manage(table, lambda ms: ms.cherry_pick(history.s4.snapshot_id))
    assert len(set(metadata_dir.iterdir()) - before) == 2
    current = committer.load_metadata(table.identifier).metadata.current_snapshot()
    assert current is not None and current.manifest_list is not None
    assert Path(current.manifest_list).exists()



def _oracle(table: Table, history: History, tmp_path: Path) -> StaticTable:
    manage(table, lambda ms: ms.cherry_pick(history.s4.snapshot_id).remove_branch("dev"))
    table.expire_snapshots(retain_last=1, older_than_ms=now_ms())
    location = tmp_path / "v.metadata.json"
    location.write_text(table_metadata_to_json(table.metadata))
    return StaticTable.from_metadata(str(location))


def test_pyiceberg_reads_a_cherry_picked_and_expired_table(
        table: Table, history: History, tmp_path: Path) -> None:
    oracle = _oracle(table, history, tmp_path)
    current = table.current_snapshot()
    picked = oracle.current_snapshot()
    assert current is not None and picked is not None
    assert [s.snapshot_id for s in oracle.snapshots()] == [current.snapshot_id]
    assert picked.summary is not None
    assert picked.summary["source-snapshot-id"] == str(history.s4.snapshot_id)
    assert sorted(m.manifest_path for m in picked.manifests(oracle.io)) == sorted(
        m.manifest_path for m in snapshot_manifests(table.io, current))


def test_pyiceberg_plans_the_cherry_picked_files(table: Table, history: History,
                                                 tmp_path: Path) -> None:
    oracle = _oracle(table, history, tmp_path)
    current = table.current_snapshot()
    assert current is not None
    assert {t.file.file_path for t in oracle.scan().plan_files()} == live_files(table, current)
