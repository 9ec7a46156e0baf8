"""``write.delete.granularity`` on v2 merge-on-read deletes: ``file`` (the default, as the
reference's Spark writers) writes a delete file per data file, straight from the scan tasks that
found the positions; ``partition`` packs a partition's deletes into one file. Every reader sees
the same rows either way."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icepark.errors import CommitFailed, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spark.rowlevel import delete_tasks, dv_tasks, positions
from icepark.spark.rowlevel.delete import DeleteResult, delete_rows
from icepark.spark.rowlevel.update import update_rows
from icepark.spark.writer.tasks import abort_marker, mark_aborted
from icepark.spec.manifest import DataFile
from icepark.spec.reserved import FILE_PATH
from icepark.table.table import Table
from tests.spark.test_delete import ROWS, _check, _expected, _make

pytestmark = pytest.mark.spark

EVERY_4TH = "id IN ({})".format(", ".join(str(i) for i in range(0, 40, 4)))


def _deletes(table: Table) -> dict[str, DataFile]:
    """The live delete files, by path."""
    return {d.file_path: d for t in table.scan().plan_files() for d in t.delete_files}


def _new_deletes(table: Table, before: dict[str, DataFile]) -> list[DataFile]:
    return [d for p, d in _deletes(table).items() if p not in before]


def _scoped_to(delete_file: DataFile) -> str | None:
    """The one data file a position delete file covers (by its path bounds), or None."""
    low = (delete_file.lower_bounds or {}).get(FILE_PATH.field_id)
    high = (delete_file.upper_bounds or {}).get(FILE_PATH.field_id)
    return low.decode() if low is not None and low == high else None


@pytest.mark.parametrize("partitioned", [True, False])
def test_a_delete_file_per_data_file_by_default(spark: SparkSession, tmp_path: Path,
                                                partitioned: bool) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=partitioned)
    touched = {t.data_file.file_path for t in table.scan().plan_files()}
    before = _deletes(table)
    result = delete_rows(spark, table, EVERY_4TH)
    deletes = _new_deletes(table, before)
    assert result.delete_files == len(deletes) == len(touched)
    assert {_scoped_to(d) for d in deletes} == touched
    assert result.deleted_rows == sum(d.record_count for d in deletes) == 10
    _check(spark, table, _expected(lambda r: r["id"] % 4 != 0))


def test_partition_granularity_packs_a_partitions_deletes(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=True)
    table.set_properties({"write.delete.granularity": "partition"})
    before = _deletes(table)
    result = delete_rows(spark, table, EVERY_4TH)
    deletes = _new_deletes(table, before)
    assert result.delete_files == len(deletes) == 3  # one per partition of cat
    assert all(_scoped_to(d) is None for d in deletes)  # two data files in each
    _check(spark, table, _expected(lambda r: r["id"] % 4 != 0))


def test_file_granularity_for_an_update_too(spark: SparkSession, tmp_path: Path) -> None:
    """An UPDATE's positions are shuffled to their partition's task; each data file's run
    still gets a delete file of its own."""
    table = _make(tmp_path, "merge-on-read", partitioned=True)
    table.set_properties({"write.update.mode": "merge-on-read"})
    touched = {t.data_file.file_path for t in table.scan().plan_files()}
    before = _deletes(table)
    update_rows(spark, table, {"x": "-1"}, EVERY_4TH)
    deletes = _new_deletes(table, before)
    assert {_scoped_to(d) for d in deletes} == touched

    def updated(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["id"], r["cat"], -1 if r["id"] % 4 == 0 else r["x"], r["s"]["a"])

    _check(spark, table, sorted(updated(r) for r in ROWS), peers=False)


def test_an_unknown_granularity_fails_before_any_job(spark: SparkSession,
                                                     tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=False)
    table.set_properties({"write.delete.granularity": "row"})
    before = table.metadata.current_snapshot_id
    with pytest.raises(ValidationError, match=r"write\.delete\.granularity='row'"):
        delete_rows(spark, table, EVERY_4TH)
    assert table.refresh().metadata.current_snapshot_id == before


def test_a_data_file_split_between_tasks(spark: SparkSession, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark reads one file in several tasks when its row groups allow: each task writes the
    deletes it found, and a file all of whose rows go is removed whole, the delete files its
    tasks wrote deleted before the commit."""
    monkeypatch.setattr(positions, "DRIVER_POSITIONS", 0)  # written in the scan's tasks
    table = _make(tmp_path / "small", "merge-on-read", partitioned=False)
    catalog_root = tmp_path / "big"
    big = _make(catalog_root, "merge-on-read", partitioned=False)
    big.set_properties({"write.parquet.row-group-size-bytes": "2048"})
    rows = [{"id": i, "cat": "abc"[i % 3], "x": i, "s": {"a": i % 7}} for i in range(20_000)]
    big.delete("id >= 0")
    big.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(big.schema())))
    (data_file,) = [t.data_file for t in big.scan().plan_files()]
    conf = spark.conf
    before = {k: conf.get(k, None) for k in ("spark.sql.files.maxPartitionBytes",
                                             "spark.sql.files.openCostInBytes")}
    conf.set("spark.sql.files.maxPartitionBytes", str(data_file.file_size_in_bytes // 4))
    conf.set("spark.sql.files.openCostInBytes", "1")
    try:
        thousands = ", ".join(map(str, range(0, 20_000, 1000)))
        delete_rows(spark, big, f"id IN ({thousands})")
        deletes = _new_deletes(big, {})
        assert len(deletes) >= 2  # several tasks read the file, each wrote its positions
        assert {_scoped_to(d) for d in deletes} == {data_file.file_path}
        assert sum(d.record_count for d in deletes) == 20

        result = delete_rows(spark, big, "id >= 0")
    finally:
        for key, value in before.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)
    assert result.removed_files == 1 and result.deleted_rows == 20_000 - 20
    assert not list(big.scan().plan_files())
    # the files the second delete's tasks wrote for the removed file are gone: only the
    # first delete's, which its snapshot still references, are left
    on_disk = {p.name for p in catalog_root.rglob("*-deletes.parquet")}
    assert on_disk == {Path(d.file_path).name for d in deletes}
    assert table.scan().to_arrow().num_rows == len(ROWS)  # the other table is untouched


def _ids(path: str) -> tuple[int, ...]:
    """A data file of the table, known by its rows (file names are random)."""
    return tuple(sorted(pq.read_table(path, columns=["id"])["id"].to_pylist()))


def _outcome(table: Table, result: DeleteResult, before: dict[str, DataFile]
             ) -> tuple[DeleteResult, list[tuple[tuple[int, ...], int]], list[tuple[int, ...]]]:
    """The delete's result, its delete files (by the data file each covers, with their row
    counts) and the data files left."""
    deletes = sorted((_ids(_scoped_to(d) or ""), d.record_count)
                     for d in _new_deletes(table, before))
    left = sorted(_ids(t.data_file.file_path) for t in table.scan().plan_files())
    return dataclasses.replace(result, snapshot_id=None), deletes, left


Deleted = tuple[str, Callable[[dict[str, Any]], bool]]
"""A delete's filter, and the rows of :data:`ROWS` it deletes."""


@pytest.mark.parametrize(("partitioned", "case"), [
    (True, (EVERY_4TH, lambda r: r["id"] % 4 == 0)),
    (False, (EVERY_4TH, lambda r: r["id"] % 4 == 0)),
    # every row of the first file (ids 0-19): removed whole
    (False, ("x IS NULL OR x < 20", lambda r: r["x"] is None or r["x"] < 20)),
])
def test_positions_on_the_driver_or_in_tasks_delete_the_same(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        partitioned: bool, case: Deleted) -> None:
    """A delete whose files hold few rows writes its positions on the driver
    (``DRIVER_POSITIONS``), a larger one in the scan's tasks: the same delete files, data
    files removed whole and rows left either way."""
    where, deleted = case
    outcomes, names = [], []
    for limit, folder in ((positions.DRIVER_POSITIONS, "driver"), (0, "tasks")):
        monkeypatch.setattr(positions, "DRIVER_POSITIONS", limit)
        table = _make(tmp_path / folder, "merge-on-read", partitioned=partitioned)
        before = _deletes(table)
        outcomes.append(_outcome(table, delete_rows(spark, table, where), before))
        names.append({"-driver-" in Path(d.file_path).name for d in _new_deletes(table, before)})
        _check(spark, table, _expected(lambda r: not deleted(r)), peers=False)
    assert outcomes[0] == outcomes[1]
    assert names == [{True}, {False}]  # written on the driver, then by the tasks


def test_a_failed_write_on_the_driver_leaves_no_files(spark: SparkSession, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=True)
    files_before = {p for p in tmp_path.rglob("*") if p.is_file()}
    location = table.metadata_location
    finish = delete_tasks._GroupWriters.finish
    calls = []

    def fail_on_the_second(self: Any) -> list[DataFile]:
        written = finish(self)  # its file is on disk
        calls.append(written)
        if len(calls) == 2:
            raise OSError("injected")
        return written

    monkeypatch.setattr(delete_tasks._GroupWriters, "finish", fail_on_the_second)
    with pytest.raises(OSError, match="injected"):
        delete_rows(spark, table, EVERY_4TH)
    assert all(calls)  # files were written before the failure
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == files_before
    assert table.refresh().metadata_location == location


@pytest.mark.parametrize("version", [2, 3])
def test_delete_files_written_after_an_abort_are_deleted(spark: SparkSession, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         version: int) -> None:
    """A job marked aborted (the driver gave up on it while its tasks ran) by the time its
    position deletes (v2) or deletion vectors (v3) are written: they are deleted, and nothing
    is committed. The positions are written on the driver here, by the code its tasks run."""
    table = _make(tmp_path, "merge-on-read", partitioned=True, version=version)
    files_before = {p for p in tmp_path.rglob("*") if p.is_file()}
    location = table.metadata_location
    marked: list[str] = []

    def mark(file_io: Any, data_path: str, job_id: str) -> None:
        mark_aborted(file_io, data_path, job_id)
        marked.append(abort_marker(data_path, job_id).removeprefix("file://"))

    close = delete_tasks._GroupWriters.close

    def close_then_abort(self: Any) -> list[DataFile]:
        written = close(self)
        assert written
        mark(self.file_io, self._task.data_path, self._task.job_id)
        return written

    def write_then_abort(file_io: Any, puffin: str, vectors: Any) -> Any:
        written = write_deletion_vectors(file_io, puffin, vectors)
        data_path, name = puffin.rsplit("/", 1)
        mark(file_io, data_path, name[:36])  # the job's UUID
        return written

    monkeypatch.setattr(delete_tasks._GroupWriters, "close", close_then_abort)
    monkeypatch.setattr(dv_tasks, "write_deletion_vectors", write_then_abort)
    with pytest.raises(CommitFailed, match="was aborted"):
        delete_rows(spark, table, EVERY_4TH)
    assert len(marked) == 1
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == files_before | {Path(marked[0])}
    assert table.refresh().metadata_location == location
