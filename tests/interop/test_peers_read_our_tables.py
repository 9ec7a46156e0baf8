"""Tables icepark writes are real Iceberg tables: pyiceberg and DuckDB read exactly our rows.

The table has nested struct/list/map columns and every primitive type, is partitioned by
identity, bucket, truncate and day, and is evolved between appends (a nested field renamed, a
column added), so the peers must resolve columns by field ID across schema versions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.types import STRING
from icepark.table.table import Table
from tests.interop.events import SCHEMA, rows
from tests.interop.peers import duckdb_connection


def arrow(table: Table, data: list[dict[str, Any]]) -> pa.Table:
    schema = to_arrow_schema(table.schema())
    return pa.Table.from_pylist(data, schema=schema)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[BaseCatalog, Table, list[dict[str, Any]]]]:
    """A table with two appends around a schema change, and the rows it must hold."""
    tmp_path = tmp_path_factory.mktemp("peers")
    catalog = load_catalog("interop", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    spec = (PartitionSpecBuilder(SCHEMA).identity("flag").bucket("id", 8)
            .truncate("name", 2).day("ts").build())
    table = catalog.create_table("db.events", SCHEMA, partition_spec=spec)
    first = rows(range(0, 40))
    table.append(arrow(table, first))
    with table.update_schema() as update:
        update.rename_column("device.os", "os_name")
        update.add_column("country", STRING)
    second = rows(range(40, 70), with_country=True)
    for row in second:
        row["device"] = None if row["device"] is None else {
            "os_name": row["device"]["os"], "version": row["device"]["version"]}
    table.append(arrow(table, second))
    expected = [{**r, "country": None} for r in first] + second
    for row in expected[:40]:
        if row["device"] is not None:
            row["device"] = {"os_name": row["device"]["os"], "version": row["device"]["version"]}
    yield catalog, table, expected


def _normalized(row: dict[str, Any]) -> dict[str, Any]:
    """One form for values the engines return differently (uuid as bytes or UUID, maps as
    pair lists or dicts, aware or naive UTC timestamps)."""
    out = dict(row)
    if isinstance(out["key"], bytes):
        out["key"] = uuid.UUID(bytes=out["key"])
    if isinstance(out["metrics"], list):
        out["metrics"] = dict(out["metrics"])
    if isinstance(out["metrics"], dict) and set(out["metrics"]) == {"key", "value"}:
        out["metrics"] = dict(zip(out["metrics"]["key"], out["metrics"]["value"], strict=True))
    if isinstance(out["ts"], datetime) and out["ts"].tzinfo is None:
        out["ts"] = out["ts"].replace(tzinfo=UTC)
    if isinstance(out["ts"], datetime):
        out["ts"] = out["ts"].astimezone(UTC)
    return out


def _by_id(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((_normalized(r) for r in data), key=lambda r: r["id"])


def test_pyiceberg_reads_exactly_our_rows(
        written: tuple[BaseCatalog, Table, list[dict[str, Any]]]) -> None:
    catalog, table, expected = written
    peer = PySqlCatalog("interop", uri=catalog.properties["uri"],
                        warehouse=catalog.properties["warehouse"])
    theirs = peer.load_table("db.events")
    assert theirs.metadata_location == table.metadata_location
    for name in ("device.os_name", "country", "tags.element", "metrics.value"):
        assert theirs.schema().find_field(name).field_id == table.schema().find_field(
            name).field_id
    got = theirs.scan().to_arrow().to_pylist()
    assert _by_id(got) == _by_id(expected)


def test_duckdb_reads_exactly_our_rows(
        written: tuple[BaseCatalog, Table, list[dict[str, Any]]]) -> None:
    _, table, expected = written
    with duckdb_connection() as con:
        result = con.execute("SELECT * FROM iceberg_scan(?)", [table.metadata_location])
        names = [d[0] for d in result.description]
        got = [dict(zip(names, values, strict=True)) for values in result.fetchall()]
    assert _by_id(got) == _by_id(expected)


def test_duckdb_prunes_with_our_partition_metadata(
        written: tuple[BaseCatalog, Table, list[dict[str, Any]]]) -> None:
    _, table, expected = written
    with duckdb_connection() as con:
        count = con.execute("SELECT count(*) FROM iceberg_scan(?) WHERE name = 'beta' "
                            "AND id >= 10", [table.metadata_location]).fetchone()
    assert count is not None
    assert count[0] == sum(1 for r in expected if r["name"] == "beta" and r["id"] >= 10)
