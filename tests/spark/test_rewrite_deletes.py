"""Rewrite position delete files from Spark: v2 compaction, dangling deletes dropped, v3
conversion to deletion vectors; every reader returns the same rows before and after, and a
commit that meets a concurrent change fails cleanly and deletes what it wrote."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spark.maintenance import deletes as deletes_module
from icepark.spark.maintenance.deletes import rewrite_position_delete_files
from icepark.spark.rowlevel.delete import delete_rows
from icepark.spark.writer.tasks import mark_aborted
from icepark.spec.manifest import ManifestContent, ManifestEntry
from icepark.spec.reserved import FILE_PATH
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.table import Table
from tests.spark.test_delete import ROWS, _check, _expected, _files, _make

pytestmark = pytest.mark.spark
MOR = "merge-on-read"


def _delete_entries(table: Table) -> list[ManifestEntry]:
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    return [e for m in read_manifest_list(table.io, snapshot.manifest_list)
            if m.content is ManifestContent.DELETES
            for e in read_manifest(table.io, m, discard_deleted=True)]


def _three_deletes(spark: SparkSession, table: Table) -> Any:
    """Three merge-on-read deletes: three position delete files per partition."""
    for where in ("x > 30", "id < 6", "x BETWEEN 12 AND 15"):
        delete_rows(spark, table, where)
    return lambda r: not ((r["x"] or 0) > 30 or r["id"] < 6 or 12 <= (r["x"] or 0) <= 15)


def test_v2_compacts_each_partitions_delete_files(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=True)
    keep = _three_deletes(spark, table)
    before = _delete_entries(table)
    parts = {e.data_file.partition for e in before}
    assert len(before) == 3 * len(parts)
    nothing = rewrite_position_delete_files(spark, table)  # 3 files < min-input-files 5
    assert nothing.snapshot_ids == () and nothing.added_delete_files_count == 0
    result = rewrite_position_delete_files(spark, table, options={"min-input-files": "2"})
    assert result.rewritten_delete_files_count == len(before)
    assert result.added_delete_files_count == len(parts)
    assert result.rewritten_bytes_count == sum(e.data_file.file_size_in_bytes for e in before)
    assert result.dangling_deletes_removed == 0 and len(result.snapshot_ids) == 1
    after = _delete_entries(table)
    assert len(after) == len(parts) and {e.data_file.partition for e in after} == parts
    assert sum(e.data_file.record_count for e in after) == sum(
        e.data_file.record_count for e in before)
    # each new file keeps the largest sequence number of what it replaced
    assert {e.sequence_number for e in after} == {max(e.sequence_number or 0 for e in before)}
    head = table.current_snapshot()
    assert head is not None and head.summary is not None
    assert head.summary.operation.value == "replace"
    _check(spark, table, _expected(keep))


def test_v2_drops_dangling_deletes(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=False)
    keep = _three_deletes(spark, table)
    delete_rows(spark, table, "id = 21")  # a delete file of one data file only
    single = [e.data_file for e in _delete_entries(table) if e.data_file.record_count == 1]
    assert len(single) == 1
    gone = _data_file_of(single[0])
    only_gone = [e for e in _delete_entries(table) if _single_target(e.data_file) == gone]
    assert len(only_gone) == 2  # "id = 21" and "x > 30" touch that file only
    # remove that data file whole: its rows and every delete of it are dangling now
    table.delete_files([gone])
    dangling_rows = sum(1 for r in ROWS if r["id"] >= 20 and not keep(r)) + 1

    def alive(r: dict[str, Any]) -> bool:
        return bool(keep(r)) and r["id"] < 20

    result = rewrite_position_delete_files(spark, table, options={"rewrite-all": "true"})
    assert result.dangling_files_removed == len(only_gone)
    assert result.dangling_deletes_removed == dangling_rows
    after = _delete_entries(table)
    assert len(after) == 1
    assert after[0].data_file.record_count == sum(1 for r in ROWS if r["id"] < 20
                                                  and not keep(r))
    _check(spark, table, _expected(alive))


def _single_target(delete_file: Any) -> str | None:
    """The one data file a position delete file refers to (its equal file_path bounds)."""
    low, high = ((b or {}).get(FILE_PATH.field_id) for b in (delete_file.lower_bounds,
                                                            delete_file.upper_bounds))
    return str(low.decode()) if low is not None and low == high else None


def _data_file_of(delete_file: Any) -> str:
    found = _single_target(delete_file)
    assert found is not None
    return found


def test_v3_turns_leftover_position_deletes_into_vectors(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=True)
    keep = _three_deletes(spark, table)
    table = table.refresh().upgrade_format_version(3).refresh()
    delete_rows(spark, table, "id = 7")  # one vector, which absorbs that file's old deletes

    def kept(r: dict[str, Any]) -> bool:
        return bool(keep(r)) and r["id"] != 7

    _check(spark, table, _expected(kept), peers=False)
    before = _delete_entries(table)
    leftovers = [e for e in before if not e.data_file.is_deletion_vector]
    assert leftovers and any(e.data_file.is_deletion_vector for e in before)
    result = rewrite_position_delete_files(spark, table)
    assert result.rewritten_delete_files_count == len(leftovers)
    after = _delete_entries(table)
    assert after and all(e.data_file.is_deletion_vector for e in after)
    targets = [e.data_file.referenced_data_file for e in after]
    assert len(targets) == len(set(targets))  # one vector per data file
    assert sum(e.data_file.record_count for e in after) == sum(
        1 for r in ROWS if not kept(r))
    _check(spark, table, _expected(kept), peers=False)
    # a second run has nothing left to convert
    assert rewrite_position_delete_files(spark, table).snapshot_ids == ()


def test_a_concurrent_removal_of_a_referenced_file_fails_cleanly(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, MOR, partitioned=True)
    keep = _three_deletes(spark, table)
    before = _delete_entries(table)
    victim = next(t.data_file for t in table.scan().plan_files() if t.delete_files)
    files_before = _files(tmp_path)
    collect = deletes_module.collect_records  # type: ignore[attr-defined]  # patched below

    def collect_then_race(job: Any) -> Any:
        records = collect(job)
        other = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                             warehouse=str(tmp_path / "wh")).load_table("db.t")
        other.delete_files([victim.file_path])  # another writer removes a referenced file
        return records

    monkeypatch.setattr(deletes_module, "collect_records", collect_then_race)
    with pytest.raises(ValidationError, match="removed concurrently"):
        rewrite_position_delete_files(spark, table, options={"rewrite-all": "true"})
    new = {p for p in _files(tmp_path) - files_before if p.name.endswith("-deletes.parquet")}
    assert not new  # the rewrite's files were deleted
    table = table.refresh()  # only the other writer's removal was committed
    assert {e.data_file.file_path for e in _delete_entries(table)} == {
        e.data_file.file_path for e in before}
    live = {t.data_file.file_path for t in table.scan().plan_files()}
    assert victim.file_path not in live
    ids = {r["id"] for r in table.scan().to_arrow().to_pylist()}
    assert ids < {r["id"] for r in ROWS if keep(r)}


def test_bad_options_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, MOR, partitioned=False)
    with pytest.raises(ValidationError, match="Unknown option 'rewrite_all'"):
        rewrite_position_delete_files(spark, table, options={"rewrite_all": "true"})
    with pytest.raises(ValidationError, match="must be >= 1"):
        rewrite_position_delete_files(spark, table, options={"min-input-files": "0"})


@pytest.mark.parametrize("version", [2, 3])
def test_tasks_of_an_aborted_job_delete_what_they_wrote(spark: SparkSession, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        version: int) -> None:
    """The job marked aborted (as the driver marks a failed job) before its tasks finish:
    each deletes the delete files it wrote, the job fails and nothing is committed."""
    table = _make(tmp_path, MOR, partitioned=True)
    keep = _three_deletes(spark, table)
    if version == 3:  # v2 position deletes left, to turn into vectors
        table = table.refresh().upgrade_format_version(3).refresh()
    job = uuid.uuid4()
    monkeypatch.setattr(deletes_module, "uuid", SimpleNamespace(uuid4=lambda: job))
    data_path = LocationProvider.of(table.metadata).data_path
    mark_aborted(table.io, data_path, str(job))
    files_before = _files(tmp_path)
    location = table.metadata_location
    with pytest.raises(Exception, match=f"{job} was aborted"):
        rewrite_position_delete_files(spark, table, options={"rewrite-all": "true"})
    assert {p.name for p in _files(tmp_path) - files_before} == set()
    assert table.refresh().metadata_location == location
    _check(spark, table, _expected(keep))
