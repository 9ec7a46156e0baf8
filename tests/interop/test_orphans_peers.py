"""After icepark removes a table's orphan files, the peers read exactly the rows they read
before: pyiceberg, DuckDB and the Java reference runtime (Iceberg 1.10.2), on a v2 table that
both engines wrote to (icepark's appends and position deletes, the reference's INSERT with its
``.crc`` side files and its metadata versions). The reference's own ``remove_orphan_files``
(a dry run) finds the same orphans before, and none after."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.spark.maintenance.orphans import remove_orphan_files
from icepark.table.table import Table
from tests.interop.conftest import Shared
from tests.interop.peers import duckdb_connection

pytestmark = pytest.mark.spark
DAY_MS = 86_400_000

Row = tuple[Any, ...]


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def _backdate(root: str, days: int) -> None:
    """Make every file ``days`` old: the reference's procedure refuses a cutoff within a day."""
    then = time.time() - days * 86_400
    for path in _files(root):
        os.utime(path, (then, then))


def _peer_rows(spark: SparkSession, shared: Shared, name: str, table: Table
               ) -> dict[str, list[Row]]:
    location = table.refresh().metadata_location
    arrow = StaticTable.from_metadata(location).scan().to_arrow()
    with duckdb_connection() as con:
        duck = con.execute("SELECT id, g, s FROM iceberg_scan(?)", [location]).fetchall()
    java = shared.reference.rows(f"SELECT id, g, s FROM {shared.ref(name)}")
    return {
        "icepark": sorted(tuple(r) for r in ips.read(spark, table).select("id", "g", "s")
                          .collect()),
        "pyiceberg": sorted(zip(*(arrow.column(c).to_pylist() for c in ("id", "g", "s")),
                                strict=True)),
        "duckdb": sorted(tuple(r) for r in duck),
        "java": sorted((r["id"], r["g"], r["s"]) for r in java)}


def _reference_orphans(shared: Shared, name: str) -> set[str]:
    """The paths the reference's ``remove_orphan_files`` would delete (a dry run)."""
    cutoff = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    found = shared.reference.rows(
        f"CALL ref.system.remove_orphan_files(table => '{shared.ident(name)}', "
        f"older_than => TIMESTAMP '{cutoff}', dry_run => true)")
    return {urlsplit(r["orphan_file_location"]).path for r in found}


def test_peers_read_the_same_rows_after_orphan_removal(spark: SparkSession,
                                                       shared: Shared) -> None:
    name = "orphans"
    ips.configure(spark, catalog=shared.ours)
    df = spark.range(120).selectExpr("id", "id % 12 AS g", "concat('r', id) AS s")
    table = ips.write(df, shared.ident(name), create=True, partition_by=["g"],
                      properties={"write.delete.mode": "merge-on-read"})
    shared.reference.sql(f"INSERT INTO {shared.ref(name)} VALUES (500, 2, 'java'), "
                         "(501, 13, 'java')")
    ips.delete(spark, table.refresh(), "id < 30")  # position delete files
    table = table.refresh()
    head = table.current_snapshot()
    assert head is not None and head.manifest_list is not None
    data = sorted(p for p in _files(f"{table.location}/data") if p.endswith(".parquet"))
    manifests = sorted(p for p in _files(f"{table.location}/metadata")
                       if p.endswith(".avro") and "snap-" not in os.path.basename(p))
    leftovers = {f"{table.location}/data/g=4/{uuid.uuid4()}.parquet": data[0],
                 f"{table.location}/data/g=77/{uuid.uuid4()}.parquet": data[-1],
                 f"{table.location}/metadata/{uuid.uuid4()}-m0.avro": manifests[0],
                 f"{table.location}/metadata/snap-7-1-{uuid.uuid4()}.avro": head.manifest_list,
                 f"{table.location}/metadata/{uuid.uuid4()}.metadata.json":
                     table.metadata_location}
    for target, source in leftovers.items():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
    _backdate(table.location, 2)

    before = _peer_rows(spark, shared, name, table)
    expected = sorted([(i, i % 12, f"r{i}") for i in range(30, 120)]
                      + [(500, 2, "java"), (501, 13, "java")])
    assert before == dict.fromkeys(before, expected)
    assert _reference_orphans(shared, name) == set(leftovers)

    kept = _files(table.location) - set(leftovers)
    result = remove_orphan_files(spark, table, older_than_ms=int(time.time() * 1000) - DAY_MS)
    assert set(result.orphan_file_locations) == set(leftovers)
    assert _files(table.location) == kept
    assert _peer_rows(spark, shared, name, table) == before
    assert _reference_orphans(shared, name) == set()
