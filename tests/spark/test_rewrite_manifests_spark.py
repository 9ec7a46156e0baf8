"""Rewrite manifests from Spark: in the driver and in Spark tasks, the same files clustered by
partition in one ``replace`` snapshot; the rows every reader returns do not change; a commit
that lost to a concurrent change deletes the manifests its tasks wrote."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spark.maintenance import manifests as manifests_module
from icepark.spark.maintenance.manifests import _write_in_spark, rewrite_manifests
from icepark.spark.reader.read import read
from icepark.spark.writer.tasks import mark_aborted
from icepark.spec.manifest import EntryStatus, ManifestEntry
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.rewrite_manifests import RewriteManifests, partition_sort_key
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "cat", STRING))
CATS = ["c", "a", None, "b"]


def _make(tmp_path: Path, appends: int = 6) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, partition_spec=PartitionSpecBuilder(SCHEMA).identity("cat").build(),
        properties={"commit.manifest-merge.enabled": "false"})
    schema = to_arrow_schema(table.schema())
    for n in range(appends):
        table.append(pa.Table.from_pylist(
            [{"id": n * 10 + i, "cat": CATS[i % 4]} for i in range(8)], schema=schema))
    return table


def _entries(table: Table) -> list[ManifestEntry]:
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    return [e for m in read_manifest_list(table.io, snapshot.manifest_list)
            for e in read_manifest(table.io, m)]


def _rows(spark: SparkSession, table: Table) -> list[tuple[Any, ...]]:
    ours = sorted((r["id"], r["cat"]) for r in table.scan().to_arrow().to_pylist())
    theirs = sorted((r["id"], r["cat"]) for r in read(spark, table).collect())
    assert ours == theirs
    return ours


@pytest.mark.parametrize("distributed", [True, False])
def test_rewrite_clusters_and_keeps_rows(spark: SparkSession, tmp_path: Path,
                                         distributed: bool) -> None:
    table = _make(tmp_path)
    before = _rows(spark, table)
    old = {e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
           for e in _entries(table)}
    first = table.current_snapshot()
    assert first is not None and len(old) == 24
    result = rewrite_manifests(spark, table, target_size_bytes=1, distributed=distributed)
    # a target of 1 byte: one entry per manifest
    assert (result.rewritten_manifests_count, result.added_manifests_count) == (6, 24)
    assert result.rewritten_entries_count == result.added_entries_count == 24
    head = table.refresh().current_snapshot()
    assert head is not None and head.snapshot_id == result.snapshot_id
    assert head.summary is not None and head.summary.operation.value == "replace"
    entries = _entries(table)
    assert {e.status for e in entries} == {EntryStatus.EXISTING}
    assert {e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
            for e in entries} == old
    keys = [partition_sort_key(e.data_file.partition, (0,)) for e in entries]
    assert keys == sorted(keys)
    assert _rows(spark, table) == before
    assert sorted((r["id"], r["cat"]) for r in table.scan(
        snapshot_id=first.snapshot_id).to_arrow().to_pylist()) == before
    # one manifest under the target afterwards: nothing to do
    assert rewrite_manifests(spark, table, distributed=distributed).added_manifests_count == 1
    assert rewrite_manifests(spark, table, distributed=distributed).snapshot_id is None


def test_sort_by_and_a_bad_field(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, appends=3)
    with pytest.raises(ValidationError, match="not one of its partition fields"):
        rewrite_manifests(spark, table, sort_by=["id"])
    result = rewrite_manifests(spark, table, sort_by=["cat"], distributed=True)
    assert result.added_manifests_count == 1 and result.added_entries_count == 12


def test_a_concurrent_change_fails_the_commit_and_deletes_the_new_manifests(
        spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, appends=4)
    before = table.current_snapshot()
    change = RewriteManifests(table.io, table.metadata, target_size_bytes=1)
    _write_in_spark(spark, table, change, change.groups())
    assert change._external is not None
    added = [m.manifest_path for m in change._external.added]
    assert len(added) == 16 and all(Path(p).exists() for p in added)
    victim = _entries(table)[0].data_file.file_path
    other = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "wh")).load_table("db.t")
    other.delete_files([victim])
    with pytest.raises(ValidationError, match="no longer in branch"):
        table.commit(change)
    assert not [p for p in added if Path(p).exists()]
    head = table.refresh().current_snapshot()
    assert before is not None and head is not None
    assert head.parent_snapshot_id == before.snapshot_id  # only the delete was committed
    assert victim not in {e.data_file.file_path for e in _entries(table) if e.is_live}


def test_tasks_of_an_aborted_job_delete_the_manifests_they_wrote(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job marked aborted (as the driver marks a failed job) before its tasks finish:
    each deletes the manifests it wrote, the job fails and nothing is committed."""
    table = _make(tmp_path, appends=4)
    job = uuid.uuid4()
    monkeypatch.setattr(manifests_module, "uuid", SimpleNamespace(uuid4=lambda: job))
    metadata_path = LocationProvider.of(table.metadata).metadata_path
    mark_aborted(table.io, metadata_path, str(job))
    files_before = {p for p in tmp_path.rglob("*") if p.is_file()}
    location = table.metadata_location
    with pytest.raises(Exception, match=f"{job} was aborted"):
        rewrite_manifests(spark, table, target_size_bytes=1, distributed=True)
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == files_before
    assert table.refresh().metadata_location == location
