"""Rewrite manifests (``replace``): clustering by partition, the target size, entries kept
EXISTING with their original snapshot IDs and sequence numbers, the same rows before and after
(and at older snapshots), and concurrent commits during the rewrite."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.errors import ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import FormatVersion
from icepark.spec.snapshots import Snapshot
from icepark.table.change.commit import RetryPolicy, commit_with_retry
from icepark.table.change.updates import TableUpdate
from icepark.table.snapshot.append import FastAppend
from icepark.table.snapshot.overwrite import DeleteFiles
from icepark.table.snapshot.rewrite_manifests import (
    RewriteManifests,
    partition_sort_key,
    plan_groups,
    value_sort_key,
)
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.table import Table
from tests.table.committer import InMemoryCommitter, make_table

CATS = ["d", "a", "c", "b", None]


def _table(tmp_path: Path, version: FormatVersion = 2,
           committer: InMemoryCommitter | None = None) -> Table:
    """A table partitioned by identity(data), five appends of rows in every partition: five
    manifests, each spanning every partition."""
    table = make_table(committer or InMemoryCommitter(), str(tmp_path / "t"),
                       format_version=version, partitioned=True,
                       properties={"commit.manifest-merge.enabled": "false"})
    schema = to_arrow_schema(table.schema())
    for round_ in range(5):
        rows = [{"id": round_ * 100 + i, "data": CATS[i % len(CATS)], "ts": None}
                for i in range(20)]
        table.append(pa.Table.from_pylist(rows, schema=schema))
    return table


def _manifests(table: Table, snapshot: Snapshot | None = None) -> list[ManifestFile]:
    snapshot = snapshot or table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    return read_manifest_list(table.io, snapshot.manifest_list)


def _entries(table: Table, manifests: list[ManifestFile]) -> list[ManifestEntry]:
    return [e for m in manifests for e in read_manifest(table.io, m)]


def _live(table: Table, snapshot: Snapshot | None = None) -> dict[str, tuple[Any, ...]]:
    """Live file -> (snapshot ID, data seq, file seq, first row ID) of the snapshot."""
    return {e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number,
                                    e.data_file.first_row_id)
            for e in _entries(table, _manifests(table, snapshot)) if e.is_live}


def _rows(table: Table, **scan: Any) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["data"]) for r in table.scan(**scan).to_arrow().to_pylist())


@pytest.mark.parametrize("version", [1, 2, 3])
def test_clusters_by_partition_keeping_every_entry_as_it_was(tmp_path: Path,
                                                               version: FormatVersion) -> None:
    table = _table(tmp_path, version)
    before = table.current_snapshot()
    assert before is not None
    live_before, rows_before = _live(table), _rows(table)
    lineage_before = (table.scan().to_arrow(["_row_id"]).to_pylist() if version == 3 else None)
    old = _manifests(table)
    assert len(old) == 5
    # a target of about two entries per manifest: 25 files in 13 manifests
    per_entry = sum(m.manifest_length for m in old) / 25
    result = table.rewrite_manifests(target_size_bytes=int(per_entry * 2) + 1)
    after = table.current_snapshot()
    assert after is not None and after.parent_snapshot_id == before.snapshot_id
    assert result.snapshot_id == after.snapshot_id
    assert (result.rewritten_manifests_count, result.added_manifests_count) == (5, 13)
    assert result.rewritten_entries_count == result.added_entries_count == 25
    assert after.summary is not None and after.summary.operation.value == "replace"
    props = after.summary.properties
    assert props["manifests-replaced"] == "5" and props["manifests-created"] == "13"
    for key in ("total-records", "total-data-files", "total-files-size"):
        assert props[key] == before.summary.properties[key]  # type: ignore[union-attr]
    new = _manifests(table)
    assert len(new) == 13 and not {m.manifest_path for m in new} & {
        m.manifest_path for m in old}
    entries = _entries(table, new)
    # every entry EXISTING, with its original snapshot ID and both sequence numbers
    assert {e.status for e in entries} == {EntryStatus.EXISTING}
    assert _live(table) == live_before
    # clustered: in manifest-list order, entries ascend by partition, null first
    keys = [partition_sort_key(e.data_file.partition, (0,)) for e in entries]
    assert keys == sorted(keys)
    assert [e.data_file.partition[0] for e in entries][:5] == [None] * 5
    # the same rows, now and at the older snapshot
    assert _rows(table) == rows_before
    assert _rows(table, snapshot_id=before.snapshot_id) == rows_before
    if version == 3:  # row IDs read the same: files keep their first_row_id
        assert sorted(map(str, table.scan().to_arrow(["_row_id"]).to_pylist())) == sorted(
            map(str, lineage_before or []))
        assert table.metadata.next_row_id is not None


def test_default_target_writes_one_manifest_and_then_nothing_to_do(tmp_path: Path) -> None:
    table = _table(tmp_path)
    result = table.rewrite_manifests()
    assert (result.rewritten_manifests_count, result.added_manifests_count) == (5, 1)
    snapshot_id = result.snapshot_id
    again = table.rewrite_manifests()  # one manifest under the target: left alone
    assert again.snapshot_id is None and again.added_manifests_count == 0
    assert table.current_snapshot().snapshot_id == snapshot_id  # type: ignore[union-attr]


def test_sort_by_orders_by_the_named_fields_first(tmp_path: Path) -> None:
    table = make_table(InMemoryCommitter(), str(tmp_path / "t"), partitioned=True)
    table.update_spec().add_identity("id").commit()
    spec = table.spec()
    names = [f.name for f in spec.fields]
    schema = to_arrow_schema(table.schema())
    for i in range(4):
        table.append(pa.Table.from_pylist(
            [{"id": (i * 7 + j) % 5, "data": "xy"[j % 2], "ts": None} for j in range(6)],
            schema=schema))
    change = RewriteManifests(table.io, table.metadata, sort_by=[names[1]],
                              target_size_bytes=1)
    table.commit(change)
    entries = _entries(table, _manifests(table))
    ids = [e.data_file.partition[1] for e in entries]
    assert ids == sorted(ids)
    assert all(len(m.manifest_path) and (m.existing_files_count == 1)
               for m in _manifests(table))  # target 1 byte: one entry each
    with pytest.raises(ValidationError, match="not one of its partition fields"):
        RewriteManifests(table.io, table.metadata, sort_by=["nope"])
    with pytest.raises(ValidationError, match="Unknown partition spec 9"):
        RewriteManifests(table.io, table.metadata, spec_id=9)


def test_spec_id_rewrites_only_that_specs_manifests(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.update_spec().add_identity("id").commit()
    schema = to_arrow_schema(table.schema())
    for i in range(2):
        table.append(pa.Table.from_pylist([{"id": i, "data": "a", "ts": None}], schema=schema))
    old = _manifests(table)
    result = table.rewrite_manifests(spec_id=1)
    assert result.rewritten_manifests_count == 2 and result.added_manifests_count == 1
    new = _manifests(table)
    assert sorted(m.partition_spec_id for m in new) == [0] * 5 + [1]
    assert {m.manifest_path for m in new if m.partition_spec_id == 0} == {
        m.manifest_path for m in old if m.partition_spec_id == 0}


def test_delete_manifests_are_clustered_too(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = {e.data_file.partition: e.data_file for e in _entries(table, _manifests(table))}
    for n in range(3):  # three row deltas: three delete manifests (files never read here)
        delta = RowDelta(table.io, table.metadata)
        for part, f in data.items():
            delta.add_deletes(DataFile(f"{table.location}/data/del-{n}-{part[0]}.parquet",
                                       FileFormat.PARQUET, part, 1, 10,
                                       FileContent.POSITION_DELETES, f.spec_id))
        table.commit(delta)
    live = _live(table)
    table.rewrite_manifests()
    manifests = _manifests(table)
    assert [m.content for m in manifests] == [ManifestContent.DATA, ManifestContent.DELETES]
    deletes = list(read_manifest(table.io, manifests[1]))
    assert len(deletes) == 15 and {e.status for e in deletes} == {EntryStatus.EXISTING}
    assert _live(table) == live


def _append_updates(table: Table, name: str) -> Any:
    def land(md: Any) -> list[TableUpdate]:
        f = DataFile(f"{table.location}/data/{name}.parquet", FileFormat.PARQUET, ("a",), 1, 10)
        change = FastAppend(ArrowFileIO(), md).append_files([f])
        _, updates = change.changes(md)
        change.clean_up(committed=True)
        return updates
    return land


def test_a_concurrent_append_is_kept(tmp_path: Path) -> None:
    committer = InMemoryCommitter()
    table = _table(tmp_path, committer=committer)
    live = _live(table)
    committer.fail_next(1, _append_updates(table, "late"))
    table.rewrite_manifests()
    now = _live(table.refresh())
    late = f"{table.location}/data/late.parquet"
    assert late in now and {k: v for k, v in now.items() if k != late} == live
    # the appended manifest was rewritten with the others on the retry
    assert {e.status for e in _entries(table, _manifests(table))} == {EntryStatus.EXISTING}


def test_a_concurrent_delete_is_not_undone(tmp_path: Path) -> None:
    committer = InMemoryCommitter()
    table = _table(tmp_path, committer=committer)
    victim = next(iter(_live(table)))

    def delete(md: Any) -> list[TableUpdate]:
        change = DeleteFiles(ArrowFileIO(), md).delete_file(victim)
        _, updates = change.changes(md)
        change.clean_up(committed=True)
        return updates

    committer.fail_next(1, delete)
    table.rewrite_manifests()
    assert victim not in _live(table.refresh())
    assert len(_live(table)) == 24


def test_manifests_written_elsewhere_fail_when_the_table_moved(tmp_path: Path) -> None:
    committer = InMemoryCommitter()
    table = _table(tmp_path, committer=committer)
    planner = RewriteManifests(table.io, table.metadata)
    group = planner.groups()[0]
    # write the replacement as a Spark task would, then let another writer change a manifest
    victim = next(iter(_live(table)))
    table.commit(DeleteFiles(table.io, table.metadata).delete_file(victim))
    change = RewriteManifests(table.io, planner._planned)  # planned before the delete
    entries = sorted((e for m in group.manifests for e in read_manifest(table.io, m)
                      if e.is_live), key=change.sort_key(table.spec()))
    from icepark.table.snapshot.rewrite_manifests import write_sorted  # noqa: PLC0415

    target = change.target(table.metadata, group, None)
    names = iter(range(100))
    added = write_sorted(table.io, target, entries,
                         lambda: f"{table.location}/metadata/ext-{next(names)}.avro")
    change.replace_manifests(group.manifests, added)
    with pytest.raises(ValidationError, match="no longer in branch 'main'"):
        commit_with_retry(committer, table.identifier, committer.load_metadata(
            table.identifier), change, RetryPolicy(num_retries=0))
    assert not any(Path(m.manifest_path).exists() for m in added)
    assert victim not in _live(table.refresh())


def test_replacement_must_keep_every_file(tmp_path: Path) -> None:
    table = _table(tmp_path)
    manifests = _manifests(table)
    with pytest.raises(ValidationError, match="must keep every file"):
        RewriteManifests(table.io, table.metadata).replace_manifests(manifests, manifests[:1])


def test_groups_and_sort_keys() -> None:
    m = [ManifestFile(f"m{i}", 100, spec, 1, content) for i, (spec, content) in enumerate(
        [(0, ManifestContent.DATA), (0, ManifestContent.DATA), (1, ManifestContent.DATA),
         (0, ManifestContent.DELETES)])]
    assert [g.paths for g in plan_groups(m, 1000)] == [("m0", "m1")]
    assert [g.paths for g in plan_groups(m, 50)] == [("m0", "m1"), ("m2",), ("m3",)]
    assert [g.paths for g in plan_groups(m, 50, spec_id=1)] == [("m2",)]
    for values in ([None, -(2**62), -1, 0, 3, 2**62], [None, -1e300, -1.5, -0.0, 2.5, 1e300],
                   [None, Decimal("-1.25"), Decimal("0.00"), Decimal("3.10")]):
        assert sorted(values[::-1], key=value_sort_key) == values
    assert sorted(["b", "", "a\x00", "a"], key=value_sort_key) == ["", "a", "a\x00", "b"]
    assert partition_sort_key(("a", 2), (1, 0)) < partition_sort_key(("a", 3), (1, 0))
