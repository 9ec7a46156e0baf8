"""``remove_orphan_files`` through Spark: a partitioned table whose data directory is wide
enough for the listing to go to Spark tasks, on format versions 2 (position delete files) and
3 (deletion vectors in Puffin files). What crashed writers left is deleted, nothing the table
references is, and Spark reads the same rows afterwards."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import Catalog, load_catalog
from icepark.errors import ValidationError
from icepark.spark.maintenance import orphans as spark_orphans
from icepark.spark.maintenance.orphans import remove_orphan_files
from icepark.spark.progress import Progress
from icepark.spec.manifest import DataFile, FileFormat
from icepark.table.change.metadata_builder import now_ms
from icepark.table.imports.add_files import add_files
from icepark.table.maintenance.orphans import walk
from icepark.table.table import Table

pytestmark = pytest.mark.spark
GROUPS = 12  # partition directories: more than the driver lists itself
LATER = 60_000


def files_under(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def rows(spark: SparkSession, table: str | Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in ips.read(spark, table).collect())


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> Iterator[Catalog]:
    catalog = load_catalog("orphans", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    ips.configure(spark, catalog=catalog)
    yield catalog


def make(spark: SparkSession, name: str, version: int, *, history: bool = True) -> Table:
    """``GROUPS`` partitions; with ``history``, two appends, a merge-on-read delete (delete
    files) and a tag on the first append."""
    df = spark.range(240).selectExpr("id", f"id % {GROUPS} AS g", "concat('r', id) AS s")
    table = ips.write(df.where("id < 120") if history else df, f"db.{name}", create=True,
                      partition_by=["g"],
                      format_version=version,  # type: ignore[arg-type] # 2 or 3
                      properties={"write.delete.mode": "merge-on-read"})
    first = table.current_snapshot()
    assert first is not None
    if not history:
        return table
    ips.write(df.where("id >= 120"), table)
    ips.delete(spark, table, "id < 35")
    table.refresh().manage_snapshots().create_tag("first", first.snapshot_id).commit()
    return table.refresh()


def leftovers(table: Table) -> set[str]:
    """A data file in an existing and in a new partition directory, a manifest, a manifest
    list and a metadata file, as writers that died before committing leave them."""
    head = table.current_snapshot()
    assert head is not None and head.manifest_list is not None
    data = sorted(p for p in files_under(f"{table.location}/data") if p.endswith(".parquet"))
    manifest = sorted(p for p in files_under(f"{table.location}/metadata")
                      if p.endswith(".avro") and not os.path.basename(p).startswith("snap-"))
    os.makedirs(f"{table.location}/data/g=99", exist_ok=True)
    made = {f"{table.location}/data/g=3/{uuid.uuid4()}.parquet": data[0],
            f"{table.location}/data/g=99/{uuid.uuid4()}.parquet": data[-1],
            f"{table.location}/metadata/{uuid.uuid4()}-m1.avro": manifest[0],
            f"{table.location}/metadata/snap-9-1-{uuid.uuid4()}.avro": head.manifest_list,
            f"{table.location}/metadata/{uuid.uuid4()}.metadata.json": table.metadata_location}
    for target, source in made.items():
        shutil.copyfile(source, target)
    return set(made)


@pytest.mark.parametrize("version", [2, 3])
def test_crashed_writers_leftovers_go_and_the_table_reads_the_same(
        spark: SparkSession, catalog: Catalog, version: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = make(spark, f"t{version}", version)
    before = rows(spark, table)
    assert len(before) == 240 - 35
    referenced = files_under(table.location)
    assert any(p.endswith(".puffin") for p in referenced) == (version == 3)
    made = leftovers(table)
    handed: list[str] = []

    def recording_walk(*args: Any, **kwargs: Any) -> Any:
        files, pending = walk(*args, **kwargs)
        handed.extend(pending)
        return files, pending

    monkeypatch.setattr(spark_orphans, "walk", recording_walk)
    monkeypatch.setattr(spark_orphans, "DRIVER_DELETES", 2)  # the deletes in Spark tasks too
    reports: list[Progress] = []
    result = remove_orphan_files(spark, f"db.t{version}", older_than_ms=now_ms() + LATER,
                                 progress=reports.append)
    assert f"{table.location}/data/g=3" in handed  # listed by a Spark task
    assert set(result.orphan_file_locations) == made
    assert result.deleted_files == len(made) and result.failed == ()
    assert files_under(table.location) == referenced
    assert reports and reports[-1].done
    assert rows(spark, f"db.t{version}") == before
    tagged = ips.read(spark, table.refresh(), snapshot_id=table.refs()["first"].snapshot_id)
    assert tagged.count() == 120


def test_dry_run_lists_the_same_files_and_deletes_nothing(spark: SparkSession,
                                                          catalog: Catalog) -> None:
    table = make(spark, "dry", 2, history=False)
    made = leftovers(table)
    cutoff = now_ms() + LATER
    dry = remove_orphan_files(spark, table, older_than_ms=cutoff, dry_run=True)
    assert set(dry.orphan_file_locations) == made and dry.dry_run and dry.deleted_files == 0
    assert all(os.path.exists(p) for p in made)
    real = remove_orphan_files(spark, table, older_than_ms=cutoff)
    assert real.orphan_file_locations == dry.orphan_file_locations
    assert real.orphan_bytes == dry.orphan_bytes > 0
    assert not any(os.path.exists(p) for p in made)


def test_a_young_file_is_kept_for_the_commit_about_to_reference_it(
        spark: SparkSession, catalog: Catalog) -> None:
    table = make(spark, "young", 2, history=False)
    path = f"{table.location}/data/g=5/in-flight.parquet"
    pq.write_table(pa.table({"id": pa.array([1000], pa.int64()), "s": ["new"]}), path)
    written = os.stat(path).st_mtime_ns // 1_000_000
    result = remove_orphan_files(spark, table, older_than_ms=written - 1)
    assert path not in result.orphan_file_locations and os.path.exists(path)
    add_files(table.refresh(), path)
    assert (1000, 5, "new") in rows(spark, "db.young")


def test_a_location_outside_the_table_is_refused(spark: SparkSession, catalog: Catalog,
                                                 tmp_path: Path) -> None:
    table = make(spark, "where", 2, history=False)
    made = leftovers(table)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.parquet").write_bytes(b"x")
    with pytest.raises(ValidationError, match="not inside the table location"):
        remove_orphan_files(spark, table, older_than_ms=now_ms() + LATER,
                            location=str(elsewhere))
    assert (elsewhere / "keep.parquet").exists() and all(os.path.exists(p) for p in made)
    inside = remove_orphan_files(spark, table, older_than_ms=now_ms() + LATER,
                                 location=f"{table.location}/metadata")
    assert set(inside.orphan_file_locations) == {p for p in made if "/metadata/" in p}


def test_prefix_mismatch_modes_and_equal_authorities(spark: SparkSession,
                                                     catalog: Catalog) -> None:
    """A data file referenced as ``file://otherhost/...``: the same path, another authority."""
    table = make(spark, "prefix", 2, history=False)
    path = f"{table.location}/data/g=7/shared.parquet"
    pq.write_table(pa.table({"id": pa.array([7000], pa.int64()), "s": ["x"]}), path)
    table.refresh().append_data_files([DataFile(
        f"file://otherhost{path}", FileFormat.PARQUET, (7,), 1, os.path.getsize(path))])
    cutoff = now_ms() + LATER
    with pytest.raises(ValidationError, match="referenced as file://otherhost"):
        remove_orphan_files(spark, table, older_than_ms=cutoff)
    assert os.path.exists(path)
    ignored = remove_orphan_files(spark, table, older_than_ms=cutoff,
                                  prefix_mismatch_mode="IGNORE")
    assert ignored.orphan_file_locations == () and os.path.exists(path)
    with pytest.raises(ValidationError, match="another scheme or authority"):
        remove_orphan_files(spark, table, older_than_ms=cutoff,
                            equal_authorities={"otherhost": "localhost"})
    same = remove_orphan_files(spark, table, older_than_ms=cutoff,
                               equal_authorities={"otherhost,localhost": ""})
    assert same.orphan_file_locations == () and os.path.exists(path)
    deleted = remove_orphan_files(spark, table, older_than_ms=cutoff,
                                  prefix_mismatch_mode="delete")
    assert deleted.orphan_file_locations == (path,) and not os.path.exists(path)
