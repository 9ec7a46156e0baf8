"""Fast and merge appends: manifests, manifest lists, sequence number inheritance, merging,
branches, retries and clean-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import ManifestWriter
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spec.manifest import EntryStatus, FileContent, ManifestContent, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef
from icepark.table.change import updates as u
from icepark.table.change.commit import RetryPolicy
from icepark.table.change.metadata_builder import MetadataBuilder, now_ms
from icepark.table.snapshot.append import FastAppend, MergeAppend, new_append, pack_from_end
from icepark.table.snapshot.locations import LocationProvider
from tests.table.producer_fixtures import (
    InMemoryCommitter,
    data_file,
    entries_of,
    files_under,
    live_paths,
    manifests_of,
    new_table,
    raw_entries,
)

IO = ArrowFileIO()


def fast(c: InMemoryCommitter, *paths: str, branch: str = "main") -> FastAppend:
    change = FastAppend(IO, c.metadata, branch=branch)
    for p in paths:
        change.append_file(data_file(p, category=p[-1]))
    return change


def test_fast_append_v2_writes_one_manifest_with_inherited_sequence_numbers(
        tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    md = c.commit(fast(c, "/d/a", "/d/b"))
    snap = md.current_snapshot()
    assert snap is not None and snap.sequence_number == 1 and snap.parent_snapshot_id is None
    assert snap.operation is Operation.APPEND and snap.schema_id == md.current_schema_id
    assert Path(snap.manifest_list or "").name.startswith(f"snap-{snap.snapshot_id}-1-")
    [m] = manifests_of(IO, snap)
    assert (m.added_snapshot_id, m.sequence_number, m.min_sequence_number) == (
        snap.snapshot_id, 1, 1)
    assert (m.added_files_count, m.added_rows_count, m.content) == (2, 20, ManifestContent.DATA)
    assert m.manifest_path.startswith(str(tmp_path / "t" / "metadata"))
    raw = raw_entries(m.manifest_path)
    assert [(r["status"], r["snapshot_id"], r["sequence_number"], r["file_sequence_number"])
            for r in raw] == [(1, None, None, None)] * 2
    entries = list(entries_of(IO, snap))
    assert {(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries} == {
        (snap.snapshot_id, 1, 1)}

    md2 = c.commit(fast(c, "/d/c"))
    snap2 = md2.current_snapshot()
    assert snap2 is not None and snap2.sequence_number == 2
    assert snap2.parent_snapshot_id == snap.snapshot_id
    ms = manifests_of(IO, snap2)
    assert [mf.sequence_number for mf in ms] == [2, 1]
    assert ms[1].manifest_path == m.manifest_path
    assert live_paths(IO, snap2) == {"/d/a", "/d/b", "/d/c"}


def test_fast_append_v1_writes_snapshot_ids_and_no_sequence_numbers(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path, format_version=1))
    md = c.commit(fast(c, "/d/a"))
    c.commit(fast(c, "/d/b"))
    snap = md.current_snapshot()
    assert snap is not None and snap.sequence_number == 0
    [m] = manifests_of(IO, snap)
    assert m.sequence_number == 0
    [raw] = raw_entries(m.manifest_path)
    assert raw["snapshot_id"] == snap.snapshot_id
    assert "sequence_number" not in raw and "file_sequence_number" not in raw
    assert c.metadata.last_sequence_number == 0
    assert {e.sequence_number for e in entries_of(IO, c.metadata.current_snapshot())} == {0}


def test_summary_and_custom_properties(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    change = FastAppend(IO, c.metadata, snapshot_properties={"snapshot-property.app": "etl"})
    change.append_file(data_file("/d/a", "x", records=5, size=100))
    snap = c.commit(change).current_snapshot()
    assert snap is not None and snap.summary is not None
    assert dict(snap.summary.properties) == {
        "app": "etl", "added-data-files": "1", "added-records": "5", "added-files-size": "100",
        "changed-partition-count": "1", "total-records": "5", "total-files-size": "100",
        "total-data-files": "1", "total-delete-files": "0", "total-position-deletes": "0",
        "total-equality-deletes": "0"}


def test_append_rejects_delete_files_and_unknown_specs(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    with pytest.raises(ValidationError, match="use a row delta"):
        FastAppend(IO, c.metadata).append_file(
            data_file("/d/x", content=FileContent.POSITION_DELETES))
    change = FastAppend(IO, c.metadata).append_file(data_file("/d/y", spec_id=7))
    with pytest.raises(ValidationError, match="Unknown partition spec 7"):
        c.commit(change)
    assert files_under(tmp_path) == set()


def test_merge_append_merges_at_min_count(tmp_path: Path) -> None:
    props = {"commit.manifest.min-count-to-merge": "3"}
    c = InMemoryCommitter(new_table(tmp_path, properties=props))
    for p in ("/d/a", "/d/b"):
        c.commit(MergeAppend(IO, c.metadata).append_file(data_file(p)))
    first, second = c.metadata.snapshots
    assert len(manifests_of(IO, c.metadata.current_snapshot())) == 2
    md = c.commit(MergeAppend(IO, c.metadata).append_file(data_file("/d/c")))
    snap = md.current_snapshot()
    assert snap is not None
    [m] = manifests_of(IO, snap)
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 2, 0)
    assert (m.sequence_number, m.min_sequence_number, m.added_snapshot_id) == (
        3, 1, snap.snapshot_id)
    raw = {r["data_file"]["file_path"]: r for r in raw_entries(m.manifest_path)}
    assert (raw["/d/c"]["status"], raw["/d/c"]["sequence_number"]) == (1, None)
    assert (raw["/d/a"]["status"], raw["/d/a"]["snapshot_id"], raw["/d/a"]["sequence_number"],
            raw["/d/a"]["file_sequence_number"]) == (0, first.snapshot_id, 1, 1)
    assert (raw["/d/b"]["snapshot_id"], raw["/d/b"]["sequence_number"]) == (
        second.snapshot_id, 2)
    assert {e.data_file.file_path: e.sequence_number for e in entries_of(IO, snap)} == {
        "/d/a": 1, "/d/b": 2, "/d/c": 3}


def test_merge_append_respects_target_size(tmp_path: Path) -> None:
    props = {"commit.manifest.min-count-to-merge": "2", "commit.manifest.target-size-bytes": "1"}
    c = InMemoryCommitter(new_table(tmp_path, properties=props))
    for p in ("/d/a", "/d/b", "/d/c"):
        c.commit(MergeAppend(IO, c.metadata).append_file(data_file(p)))
    ms = manifests_of(IO, c.metadata.current_snapshot())
    assert [m.added_files_count for m in ms] == [1, 1, 1]


def test_merge_disabled_and_default_append(tmp_path: Path) -> None:
    md = new_table(tmp_path, properties={"commit.manifest-merge.enabled": "false"})
    assert isinstance(new_append(IO, md), FastAppend)
    assert isinstance(new_append(IO, new_table(tmp_path)), MergeAppend)


def test_pack_from_end_underfills_the_newest_bin() -> None:
    ms = [ManifestFile(f"m{i}", 10, 0, 1) for i in range(5)]
    assert [len(b) for b in pack_from_end(ms, 20)] == [1, 2, 2]
    assert [len(b) for b in pack_from_end(ms, 1000)] == [5]


def test_append_to_a_branch_leaves_main_alone(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    c.commit(fast(c, "/d/a"))
    main_id = c.metadata.current_snapshot_id
    assert main_id is not None
    c.commit(_BranchAt("dev", main_id))
    c.commit(fast(c, "/d/b", branch="dev"))
    c.commit(fast(c, "/d/c", branch="dev"))
    md = c.metadata
    assert md.current_snapshot_id == main_id
    dev = md.snapshot_by_ref("dev")
    assert dev is not None and dev.sequence_number == 3
    parent = md.snapshot_by_id(dev.parent_snapshot_id or 0)
    assert parent is not None and parent.parent_snapshot_id == main_id
    assert live_paths(IO, dev) == {"/d/a", "/d/b", "/d/c"}
    assert live_paths(IO, md.current_snapshot()) == {"/d/a"}
    assert dev.summary is not None and dev.summary.properties["total-data-files"] == "3"


def test_append_creates_a_new_branch(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    md = c.commit(fast(c, "/d/a", branch="audit"))
    assert md.current_snapshot_id is None
    assert live_paths(IO, md.snapshot_by_ref("audit")) == {"/d/a"}


def test_cannot_commit_to_a_tag(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    md = c.commit(fast(c, "/d/a"))
    c.commit(_Tag("v1", md.current_snapshot_id or 0))
    with pytest.raises(ValidationError, match="is a tag"):
        c.commit(fast(c, "/d/b", branch="v1"))


def test_retry_reuses_new_manifest_with_new_snapshot_id_and_sequence(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    mine = _Spy(IO, c.metadata).append_file(data_file("/d/mine"))
    c.before_commit.append(lambda: _concurrent_append(c, "/d/theirs"))
    md = c.commit(mine)
    lists, manifests, ids = mine.lists, mine.manifests, mine.ids
    assert len(lists) == 2 and ids[0][0] != ids[1][0]
    assert [seq for _, seq in ids] == [1, 2]
    assert not Path(lists[0]).exists() and Path(lists[1]).exists()
    assert Path(lists[1]).name.split("-")[2] == "2"  # the attempt number
    assert manifests[1][0] == manifests[0][0]  # the new-files manifest is reused
    snap = md.current_snapshot()
    assert snap is not None and snap.snapshot_id == ids[1][0]
    assert live_paths(IO, snap) == {"/d/mine", "/d/theirs"}
    assert {e.sequence_number for e in entries_of(IO, snap)
            if e.data_file.file_path == "/d/mine"} == {2}


def test_v1_retry_rewrites_the_new_manifest(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path, format_version=1))
    mine = fast(c, "/d/mine")
    c.before_commit.append(lambda: _concurrent_append(c, "/d/theirs"))
    md = c.commit(mine)
    snap = md.current_snapshot()
    assert snap is not None
    [entry] = [e for e in entries_of(IO, snap) if e.data_file.file_path == "/d/mine"]
    assert entry.snapshot_id == snap.snapshot_id and entry.status is EntryStatus.ADDED
    theirs = md.snapshot_by_id(snap.parent_snapshot_id or 0)
    assert theirs is not None
    referenced = {s.manifest_list for s in (snap, theirs)} | {
        m.manifest_path for s in (snap, theirs) for m in manifests_of(IO, s)}
    assert {p for p in files_under(tmp_path) if "metadata" in p} == referenced


def test_known_failure_deletes_everything_including_caller_files(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    caller_file = tmp_path / "t" / "data" / "x.parquet"
    caller_file.parent.mkdir(parents=True)
    caller_file.write_bytes(b"data")
    handed_in = tmp_path / "handed-in.parquet"
    handed_in.write_bytes(b"data")
    change = fast(c, str(caller_file), str(handed_in))
    change.delete_on_failure(str(caller_file))
    c.failures = [CommitFailed("lost"), CommitFailed("lost again")]
    with pytest.raises(CommitFailed):
        c.commit(change, RetryPolicy(num_retries=1, min_wait_ms=0, max_wait_ms=0))
    assert files_under(tmp_path) == {str(handed_in)}
    assert c.attempts == 2


def test_commit_state_unknown_deletes_nothing(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    caller_file = tmp_path / "x.parquet"
    caller_file.write_bytes(b"data")
    change = fast(c, str(caller_file))
    change.delete_on_failure(str(caller_file))
    c.failures = [CommitStateUnknown("timeout")]
    with pytest.raises(CommitStateUnknown):
        c.commit(change)
    written = files_under(tmp_path)
    assert str(caller_file) in written
    assert len([p for p in written if Path(p).name.startswith("snap-")]) == 1
    assert len([p for p in written if "-m0.avro" in p]) == 1


def test_committed_producer_cannot_be_reused(tmp_path: Path) -> None:
    c = InMemoryCommitter(new_table(tmp_path))
    change = fast(c, "/d/a")
    c.commit(change)
    with pytest.raises(ValidationError, match="already committed"):
        change.append_file(data_file("/d/b"))


def test_data_and_metadata_paths_follow_properties(tmp_path: Path) -> None:
    meta_dir = tmp_path / "elsewhere"
    md = new_table(tmp_path, properties={"write.metadata.path": str(meta_dir),
                                         "write.data.path": str(tmp_path / "d")})
    c = InMemoryCommitter(md)
    snap = c.commit(fast(c, "/d/a")).current_snapshot()
    assert snap is not None and Path(snap.manifest_list or "").parent == meta_dir
    loc = LocationProvider.of(md)
    namer = loc.data_file_namer(md.spec(), md.schema(), ("a b",))
    assert namer().startswith(f"{tmp_path / 'd'}/category=a%20b/")
    assert namer().endswith(".parquet") and namer() != namer()
    with pytest.raises(ValidationError, match=r"\.\."):
        LocationProvider("/t", {"write.data.path": "/t/../x"})


# ----------------------------------------------------------------------------- helpers


def _concurrent_append(c: InMemoryCommitter, path: str) -> None:
    c.commit(FastAppend(IO, c.metadata).append_file(data_file(path)))


class _Spy(FastAppend):
    """Records each attempt's manifest list, manifests and snapshot ID/sequence number."""

    def __init__(self, io: ArrowFileIO, base: TableMetadata) -> None:
        super().__init__(io, base)
        self.lists: list[str] = []
        self.manifests: list[list[str]] = []
        self.ids: list[tuple[int, int]] = []

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        req, upd = super().changes(base)
        add = next(x for x in upd if isinstance(x, u.AddSnapshot))
        path = add.snapshot.manifest_list or ""
        self.lists.append(path)
        self.manifests.append([m.manifest_path for m in read_manifest_list(IO, path)])
        self.ids.append((add.snapshot.snapshot_id, add.snapshot.sequence_number))
        return req, upd


class _BranchAt:
    def __init__(self, name: str, snapshot_id: int) -> None:
        self.name, self.snapshot_id = name, snapshot_id

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        return [], [u.SetSnapshotRef(self.name, SnapshotRef.branch(self.snapshot_id))]

    def clean_up(self, committed: bool) -> None:
        pass


class _Tag(_BranchAt):
    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        return [], [u.SetSnapshotRef(self.name, SnapshotRef.tag(self.snapshot_id))]


def test_v1_parent_with_inline_manifests(tmp_path: Path) -> None:
    md = new_table(tmp_path, format_version=1)
    path = str(tmp_path / "t" / "metadata" / "inline-m0.avro")
    with ManifestWriter(IO, path, md.spec(), md.schema(), 1, snapshot_id=5) as writer:
        writer.add_file(data_file("/d/old", "a"))
    inline = Snapshot(5, None, 0, now_ms(), None, None, None, manifests=(path,))
    c = InMemoryCommitter(MetadataBuilder(md).apply_all([
        u.AddSnapshot(inline), u.SetSnapshotRef("main", SnapshotRef.branch(5))]).build())
    snap = c.commit(fast(c, "/d/new")).current_snapshot()
    assert snap is not None and snap.parent_snapshot_id == 5
    assert live_paths(IO, snap) == {"/d/old", "/d/new"}
    assert snap.summary is not None and snap.summary.properties["total-data-files"] == "2"
