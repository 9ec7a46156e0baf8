"""Row-level deletes through Spark on format version 3 tables: deletion vectors.

Spec (v3), *Delete Formats*: "Position delete files must not be added to v3 tables", "Writers
must ensure that there is at most one deletion vector per data file and must merge new deletes
with existing vectors or position delete files", and *Deletion Vectors*: "If a DV is written
for a data file, it must replace all previously written position delete files". The rows every
icepark reader returns afterwards are what SQL's DELETE leaves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.errors import CommitFailed, CommitStateUnknown
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.io.parquet.delete_writer import PositionDeleteWriter
from icepark.spark.rowlevel import positions
from icepark.spark.rowlevel.delete import delete_rows
from icepark.spec.manifest import DataFile, ManifestContent
from icepark.table.table import Table
from tests.spark.test_delete import ROWS, _check, _expected, _files, _make
from tests.spark.test_delete_granularity import _ids

pytestmark = pytest.mark.spark
MOR = "merge-on-read"


def live_deletes(table: Table) -> list[DataFile]:
    table = table.refresh()
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    return [e.data_file for m in read_manifest_list(table.io, snapshot.manifest_list)
            if m.content is ManifestContent.DELETES
            for e in read_manifest(table.io, m, discard_deleted=True)]


def summary(table: Table) -> dict[str, str]:
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return dict(snapshot.summary.properties)


@pytest.mark.parametrize("partitioned", [True, False])
def test_merge_on_read_writes_one_vector_per_data_file_and_merges_them(
        spark: SparkSession, tmp_path: Path, partitioned: bool) -> None:
    table = _make(tmp_path, MOR, partitioned, version=3)
    first = delete_rows(spark, table, "x > 30")
    matched = sum(1 for r in ROWS if (r["x"] or 0) > 30)
    assert first.deleted_rows == matched and first.delete_files >= 1
    dvs = live_deletes(table)
    assert dvs and all(d.is_deletion_vector for d in dvs)
    assert len({d.referenced_data_file for d in dvs}) == len(dvs)
    assert sum(d.record_count for d in dvs) == matched
    assert not [p for p in _files(tmp_path) if p.name.endswith("-deletes.parquet")]

    def kept(r: dict[str, Any]) -> bool:
        return (r["x"] or 0) <= 30

    _check(spark, table, _expected(kept), peers=False)
    # a second delete on the same files: still one vector per file, holding both deletes
    second = delete_rows(spark, table, "id < 10 OR x > 25")
    again = [r for r in ROWS if kept(r) and (r["id"] < 10 or (r["x"] or 0) > 25)]
    assert second.deleted_rows == len(again)
    dvs = live_deletes(table)
    assert len({d.referenced_data_file for d in dvs}) == len(dvs)
    assert sum(d.record_count for d in dvs) == matched + len(again)
    assert int(summary(table)["removed-dvs"]) >= 1
    assert summary(table)["total-position-deletes"] == str(matched + len(again))
    _check(spark, table, _expected(
        lambda r: kept(r) and not (r["id"] < 10 or (r["x"] or 0) > 25)), peers=False)


def test_a_file_deleted_whole_takes_its_vector_with_it(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=False, version=3)
    delete_rows(spark, table, "id IN (3, 4)")  # the first file gets a vector
    [dv] = live_deletes(table)
    result = delete_rows(spark, table, "id < 20")  # the first file matches whole
    assert result.removed_files == 1 and result.deleted_rows == 18
    assert live_deletes(table) == []
    assert summary(table)["removed-dvs"] == "1"
    _check(spark, table, _expected(lambda r: r["id"] >= 20), peers=False)
    assert dv.file_path  # the Puffin file stays until the snapshot that used it expires


def test_copy_on_write_removes_the_vectors_of_the_files_it_rewrites(spark: SparkSession,
                                                                    tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=False, version=3)
    delete_rows(spark, table, "id IN (3, 4, 25)")  # both files get a vector
    table = table.refresh().set_properties({"write.delete.mode": "copy-on-write"}).refresh()
    result = delete_rows(spark, table, "id = 5")
    assert result.rewritten_files == 1
    remaining = live_deletes(table)
    assert [d.record_count for d in remaining] == [1]  # the other file's vector (id 25)
    _check(spark, table, _expected(lambda r: r["id"] not in (3, 4, 5, 25)), peers=False)


def test_a_vector_absorbs_the_position_deletes_of_an_upgraded_table(spark: SparkSession,
                                                                    tmp_path: Path) -> None:
    """The v2 position delete file of one data file goes with the vector that replaces it;
    one that covers two data files stays ("need to be kept in table metadata until all
    deletes are replaced by DVs") and no longer applies where a vector does."""
    table = _make(tmp_path, MOR, partitioned=False, version=2)
    [a] = [t.data_file for t in table.scan("id = 0").plan_files()]  # ids 0-19, in order
    [b] = [t.data_file for t in table.scan("id = 39").plan_files()]  # ids 20-39
    spec = table.spec()

    def position_file(name: str, rows: list[tuple[str, int]]) -> DataFile:
        writer = PositionDeleteWriter(table.io, lambda: f"{table.location}/data/{name}",
                                      table.schema(), spec, (), table.properties)
        rows = sorted(rows)
        writer.write(pa.record_batch({"file_path": [p for p, _ in rows],
                                      "pos": pa.array([n for _, n in rows], pa.int64())}))
        [written] = writer.close()
        return written

    single = position_file("single.parquet", [(a.file_path, 0)])
    shared = position_file("shared.parquet", [(a.file_path, 1), (b.file_path, 2)])
    table.new_row_delta().add_deletes(single).add_deletes(shared).commit()
    gone_ids = {0, 1, 22}
    table = table.refresh().upgrade_format_version(3).refresh()
    _check(spark, table, _expected(lambda r: r["id"] not in gone_ids), peers=False)
    result = delete_rows(spark, table, "id = 5")  # a row of the first file
    assert result.deleted_rows == 1
    live = live_deletes(table)
    assert {d.file_path.rsplit("/", 1)[-1] for d in live if not d.is_deletion_vector} == {
        "shared.parquet"}
    [dv] = [d for d in live if d.is_deletion_vector]
    assert dv.referenced_data_file == a.file_path and dv.record_count == 3  # 0, 1 and 5
    _check(spark, table, _expected(lambda r: r["id"] not in gone_ids | {5}), peers=False)


def test_failed_commit_leaves_no_puffin_file(spark: SparkSession, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, MOR, partitioned=True, version=3)
    before, location = _files(tmp_path), table.metadata_location

    def fail(self: Table, *changes: Any) -> Table:
        raise CommitFailed("injected")

    monkeypatch.setattr(Table, "commit", fail)
    with pytest.raises(CommitFailed, match="injected"):
        delete_rows(spark, table, "x > 30")
    assert _files(tmp_path) == before
    assert table.refresh().metadata_location == location

    def unknown(self: Table, *changes: Any) -> Table:
        raise CommitStateUnknown("injected")

    monkeypatch.setattr(Table, "commit", unknown)
    with pytest.raises(CommitStateUnknown):
        delete_rows(spark, table, "x > 30")
    new = _files(tmp_path) - before
    assert new and all(p.name.endswith("-deletes.puffin") for p in new)


def _vectors(table: Table) -> list[tuple[tuple[int, ...], int]]:
    """The live deletion vectors, by the rows of the data file each covers (file names are
    random), with how many rows each deletes."""
    return sorted((_ids(d.referenced_data_file or ""), d.record_count)
                  for d in live_deletes(table))


@pytest.mark.parametrize("partitioned", [True, False])
def test_vectors_written_on_the_driver_or_in_tasks_are_the_same(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        partitioned: bool) -> None:
    """A delete whose files hold few rows writes its vectors on the driver
    (``DRIVER_POSITIONS``), a larger one in tasks: the same vectors (merged with the earlier
    ones), files removed whole and rows left either way."""
    # the first-appended files go whole, then vectors, then vectors merged with them
    wheres = ["x IS NULL OR x < 20", "x > 30", "id < 10 OR x > 25"]
    outcomes, names = [], []
    for limit, folder in ((positions.DRIVER_POSITIONS, "driver"), (0, "tasks")):
        monkeypatch.setattr(positions, "DRIVER_POSITIONS", limit)
        table = _make(tmp_path / folder, MOR, partitioned, version=3)
        steps = []
        for where in wheres:
            result = delete_rows(spark, table, where)
            steps.append((dataclasses.replace(result, snapshot_id=None), _vectors(table),
                          sorted(_ids(t.data_file.file_path)
                                 for t in table.refresh().scan().plan_files())))
        outcomes.append(steps)
        names.append({"-driver-" in Path(d.file_path).name for d in live_deletes(table)})
        _check(spark, table, _expected(lambda r: not (
            (r["x"] or 0) > 30 or r["id"] < 10 or (r["x"] or 0) > 25
            or r["x"] is None or r["x"] < 20)), peers=False)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0][0].removed_files > 0 and outcomes[0][2][0].delete_files > 0
    assert names == [{True}, {False}]  # written on the driver, then by the tasks
