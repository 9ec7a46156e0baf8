"""Compaction through Spark (``rewrite_data_files``): the same rows in fewer files, sorted or
Z-ordered on request, deletes applied and row lineage kept, committed as ``replace`` snapshots
that never lose a concurrent delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.io.arrow.zorder import z_values
from icepark.spark.maintenance import compaction
from icepark.spark.maintenance.compaction import _Job, rewrite_data_files
from icepark.spark.reader.read import read
from icepark.spark.writer.data_files import write_data_files
from icepark.spec.manifest import FileContent
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.inspect.files import entries
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(2, "cat", STRING),
                   NestedField.optional(3, "a", LONG), NestedField.optional(4, "b", LONG))
SMALL = {"min-input-files": "2"}


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "cat": [("x", "y", "z")[i % 3] for i in ids],
                     "a": pa.array([(i * 7) % 13 for i in ids], pa.int64()),
                     "b": pa.array([(i * 5) % 11 if i % 10 else None for i in ids], pa.int64())})


def _table(tmp_path: Path, *, version: int = 2, partitioned: bool = False, appends: int = 6,
           name: str = "t", properties: dict[str, str] | None = None) -> Table:
    catalog = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                           warehouse=str(tmp_path / "wh"))
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build() if partitioned else None
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec,
                                 format_version=version,  # type: ignore[arg-type]
                                 properties=properties)
    for i in range(appends):
        table.append(_rows(range(i * 50, (i + 1) * 50)))
    return table


def _content(spark: SparkSession, table: Table, *extra: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in read(spark, table, metadata_columns=list(extra)).collect())


def _data_files(table: Table) -> list[Any]:
    return [t.data_file for t in table.scan().plan_files()]


def test_binpack_makes_one_file_of_many_and_keeps_every_row(
        spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = _content(spark, table)
    head = table.current_snapshot()
    assert head is not None and len(_data_files(table)) == 6
    old_bytes = sum(f.file_size_in_bytes for f in _data_files(table))
    result = ips.rewrite_data_files(spark, table, options=SMALL)
    assert (result.rewritten_data_files, result.added_data_files, result.groups) == (6, 1, 1)
    assert result.rewritten_bytes == old_bytes
    assert result.added_bytes == sum(f.file_size_in_bytes for f in _data_files(table))
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None and snapshot.operation is Operation.REPLACE
    assert result.snapshot_ids == (snapshot.snapshot_id,)
    assert _content(spark, table) == before
    # "a new file with data that logically belongs to an older sequence number"
    added = [e for e in entries(table).to_pylist() if e["status"] == 1]
    assert [e["sequence_number"] for e in added] == [head.sequence_number]
    # nothing left to do: one file below the minimum size is not worth a rewrite
    again = ips.rewrite_data_files(spark, table, options=SMALL)
    assert again.snapshot_ids == () and again.rewritten_data_files == 0


def test_default_thresholds_leave_few_files_alone(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, appends=4)  # fewer than min-input-files (5), all small
    result = rewrite_data_files(spark, table)
    assert result.snapshot_ids == () and len(_data_files(table)) == 4
    assert rewrite_data_files(spark, table, options={"rewrite-all": "true"}).groups == 1


def test_partitioned_groups_and_where(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, partitioned=True)
    before = _content(spark, table)
    assert len(_data_files(table)) == 18
    only_x = ips.rewrite_data_files(spark, table, where="cat = 'x'", options=SMALL)
    assert (only_x.rewritten_data_files, only_x.added_data_files) == (6, 1)
    per_partition: dict[Any, int] = {}
    for f in _data_files(table):
        per_partition[f.partition] = per_partition.get(f.partition, 0) + 1
    assert per_partition == {("x",): 1, ("y",): 6, ("z",): 6}
    rest = ips.rewrite_data_files(spark, table, options=SMALL)
    assert (rest.rewritten_data_files, rest.added_data_files, rest.groups) == (12, 2, 2)
    assert _content(spark, table) == before


def test_small_groups_share_one_job(spark: SparkSession, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups that each become one file are written by one Spark job, hash-distributed by
    partition: still one file per partition, sorted within it; under partial progress each
    commit replaces exactly its own partitions' files."""
    table = _table(tmp_path, partitioned=True)
    before = _content(spark, table)
    jobs: list[int] = []
    real = write_data_files

    def counted(*args: Any, **kwargs: Any) -> Any:
        jobs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compaction, "write_data_files", counted)  # the module's own name
    result = ips.rewrite_data_files(spark, table, strategy="sort", sort_order="a DESC, id",
                                    options=SMALL)
    assert (len(jobs), result.groups, result.added_data_files) == (1, 3, 3)
    assert _content(spark, table) == before
    files = _data_files(table)
    assert sorted(f.partition for f in files) == [("x",), ("y",), ("z",)]
    for f in files:
        rows = pq.read_table(f.file_path).select(["a", "id"]).to_pylist()
        assert rows == sorted(rows, key=lambda r: (-r["a"], r["id"]))

    for i in range(6, 10):
        table.append(_rows(range(i * 50, (i + 1) * 50)))
    jobs.clear()
    result = ips.rewrite_data_files(spark, table, options={
        **SMALL, "partial-progress.enabled": "true", "partial-progress.max-commits": "3"})
    assert (len(jobs), result.groups, len(result.snapshot_ids)) == (1, 3, 3)
    for snapshot_id in result.snapshot_ids:
        changed = [e for e in entries(table, snapshot_id).to_pylist()
                   if e["snapshot_id"] == snapshot_id and e["status"] in (1, 2)]
        added = {e["data_file"]["partition"]["cat"] for e in changed if e["status"] == 1}
        removed = {e["data_file"]["partition"]["cat"] for e in changed if e["status"] == 2}
        assert len(added) == 1 and added == removed, changed
    assert _content(spark, table.refresh())[:300] == before
    assert len(_data_files(table)) == 3


def test_sort_orders_each_file(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = _content(spark, table)
    ips.rewrite_data_files(spark, table, strategy="sort", sort_order="a DESC, id",
                           options=SMALL)
    assert _content(spark, table) == before
    (written,) = _data_files(table)
    assert written.sort_order_id is None  # an order the table does not have
    rows = pq.read_table(written.file_path).select(["a", "id"]).to_pylist()
    assert rows == sorted(rows, key=lambda r: (-r["a"], r["id"]))

    table.replace_sort_order().asc("b").commit()
    table.append(_rows(range(1000, 1010)))
    ips.rewrite_data_files(spark, table, strategy="sort", options=SMALL)
    (written,) = _data_files(table)
    assert written.sort_order_id == table.metadata.default_sort_order_id
    values = pq.read_table(written.file_path).column("b").to_pylist()
    assert values == sorted(values, key=lambda v: (v is not None, v))  # nulls first


def test_zorder_sorts_by_the_interleaved_value(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = _content(spark, table)
    result = ips.rewrite_data_files(spark, table, strategy="zorder", zorder_by=["a", "b"],
                                    options=SMALL)
    assert result.added_data_files == 1
    assert _content(spark, table) == before
    (written,) = _data_files(table)
    data = pq.read_table(written.file_path)
    z = z_values([data.column("a"), data.column("b")]).to_pylist()
    assert z == sorted(z)


def test_deletes_are_applied_and_deletion_vectors_go(spark: SparkSession,
                                                     tmp_path: Path) -> None:
    for version in (2, 3):
        table = _table(tmp_path, version=version, name=f"v{version}",
                       properties={"write.delete.mode": "merge-on-read"})
        lineage = ["_row_id", "_last_updated_sequence_number"] if version == 3 else []
        ips.delete(spark, table, "cat = 'x'")
        before = _content(spark, table, *lineage)
        assert any(t.delete_files for t in table.scan().plan_files())
        # v2: the new files take a new sequence number, so no position delete written before
        # can apply to them (with the starting one, a delete file whose file_path bounds
        # happen to span a new file's path is kept: it may apply)
        result = ips.rewrite_data_files(spark, table, options={
            **SMALL, "remove-dangling-deletes": str(version == 2).lower(),
            "use-starting-sequence-number": str(version == 3).lower()})
        assert result.rewritten_data_files == 6
        assert len(result.snapshot_ids) == (2 if version == 2 else 1)
        assert _content(spark, table, *lineage) == before  # row IDs and sequence numbers kept
        assert not any(t.delete_files for t in table.scan().plan_files())
        # v3: the deletion vectors of the replaced files went with them; v2: the position
        # deletes were dangling, and removed by a second snapshot
        live = [e for e in entries(table).to_pylist() if e["status"] != 2]
        assert all(e["data_file"]["content"] == FileContent.DATA.value for e in live)


def test_a_file_with_many_deletes_is_rewritten_alone(spark: SparkSession,
                                                     tmp_path: Path) -> None:
    table = _table(tmp_path, version=3, appends=1,
                   properties={"write.delete.mode": "merge-on-read"})
    ips.delete(spark, table, "id < 20")  # 40% of the only file
    result = ips.rewrite_data_files(spark, table)
    assert (result.rewritten_data_files, result.added_data_files) == (1, 1)
    assert not any(t.delete_files for t in table.scan().plan_files())
    assert sorted(r["id"] for r in read(spark, table).collect()) == list(range(20, 50))


def test_output_spec_moves_files_to_the_current_spec(spark: SparkSession,
                                                     tmp_path: Path) -> None:
    table = _table(tmp_path, appends=2)
    before = _content(spark, table)
    table.update_spec().add_field("cat", "identity").commit()
    result = ips.rewrite_data_files(spark, table)  # files of an older spec are rewritten
    assert result.rewritten_data_files == 2 and result.added_data_files == 3
    assert {t.spec_id for t in table.scan().plan_files()} == {table.metadata.default_spec_id}
    assert _content(spark, table) == before


def test_a_branch_is_compacted_alone(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    head = table.current_snapshot()
    assert head is not None
    table.manage_snapshots().create_branch("audit", head.snapshot_id).commit()
    ips.rewrite_data_files(spark, table, branch="audit", options=SMALL)
    table.refresh()
    assert table.current_snapshot() == head
    assert len([t for t in table.scan(ref="audit").plan_files()]) == 1


def test_bad_options_fail_before_any_file(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, appends=2)
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"options": {"nope": "1"}}, "Unknown rewrite_data_files option"),
        ({"options": {"min-input-files": "two"}}, "must be an integer"),
        ({"options": {"min-input-files": "0"}}, "must be positive"),
        ({"options": {"rewrite-all": "yes"}}, "true or false"),
        ({"options": {"min-file-size-bytes": "10", "target-file-size-bytes": "5"}}, "<="),
        ({"options": {"output-spec-id": "7"}}, "not a partition spec"),
        ({"options": {"delete-ratio-threshold": "2"}}, r"\(0, 1\]"),
        ({"strategy": "shuffle"}, "Unknown rewrite strategy"),
        ({"strategy": "sort"}, "needs a sort order"),
        ({"strategy": "sort", "sort_order": "nope"}, "no column 'nope'"),
        ({"strategy": "sort", "sort_order": "id sideways"}, "Invalid sort_order"),
        ({"strategy": "zorder"}, "needs zorder_by"),
        ({"strategy": "zorder", "zorder_by": ["nope"]}, "no column 'nope'"),
        ({"zorder_by": ["a"]}, "zorder_by is for"),
        ({"where": "nope = 1"}, "nope"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValidationError, match=message):
            rewrite_data_files(spark, table, **kwargs)
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} == files


def _concurrently(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """Run ``change`` (once) after the files are written and before the first commit."""
    original = _Job._commit
    done: list[bool] = []

    def commit(self: _Job, *args: Any) -> int:
        if not done:
            done.append(True)
            change()
        return original(self, *args)

    monkeypatch.setattr(_Job, "_commit", commit)


def test_a_concurrent_delete_fails_the_rewrite_and_loses_nothing(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path, properties={"write.delete.mode": "merge-on-read"})
    other = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=str(tmp_path / "wh")).load_table("db.t")
    _concurrently(monkeypatch, lambda: ips.delete(spark, other, "id = 7"))
    files = {p for p in (tmp_path / "wh").rglob("*.parquet")}
    with pytest.raises(ValidationError):
        rewrite_data_files(spark, table, options=SMALL)
    table.refresh()
    assert sorted(r["id"] for r in read(spark, table).collect()) == [
        i for i in range(300) if i != 7]  # the delete stands, nothing resurrected
    new = {p for p in (tmp_path / "wh").rglob("*.parquet")} - files
    written_by_delete = {f.file_path for t in table.scan().plan_files() for f in t.delete_files}
    assert {str(p) for p in new} <= written_by_delete  # the rewrite's files were deleted


def test_a_concurrent_append_is_kept(spark: SparkSession, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path)
    other = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=str(tmp_path / "wh")).load_table("db.t")
    _concurrently(monkeypatch, lambda: other.append(_rows(range(300, 310))))
    rewrite_data_files(spark, table, options=SMALL)
    assert sorted(r["id"] for r in read(spark, table.refresh()).collect()) == list(range(310))
    assert len(_data_files(table)) == 2


def test_partial_progress_commits_what_it_can(spark: SparkSession, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path, partitioned=True,
                   properties={"write.delete.mode": "merge-on-read"})
    other = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=str(tmp_path / "wh")).load_table("db.t")
    _concurrently(monkeypatch, lambda: ips.delete(spark, other, "id = 0 OR id = 1"))
    result = rewrite_data_files(spark, table, options={
        **SMALL, "partial-progress.enabled": "true", "partial-progress.max-commits": "3"})
    # ids 0 and 1 are in partitions x and y: those two groups conflict, z commits
    assert (result.groups, result.failed_data_files, len(result.snapshot_ids)) == (1, 12, 1)
    counts: dict[Any, int] = {}
    for f in _data_files(table.refresh()):
        counts[f.partition] = counts.get(f.partition, 0) + 1
    assert counts == {("x",): 6, ("y",): 6, ("z",): 1}
    assert sorted(r["id"] for r in read(spark, table).collect()) == list(range(2, 300))
