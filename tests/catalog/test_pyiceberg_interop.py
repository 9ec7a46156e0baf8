"""pyiceberg's SqlCatalog and ours open the same SQLite database and see the same tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icepark.catalog import SqlCatalog
from icepark.catalog.base import BaseCatalog
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.sorting import SortOrderBuilder
from icepark.table.change import updates as u
from icepark.table.table import Table
from tests.catalog.catalog_helpers import SCHEMA, live_rows

NAME = "test"
ROWS = pa.table({"id": pa.array([1, 2, 3, 40], pa.int64()),
                 "name": ["a", None, "c", "d"],
                 "ts": pa.array([0, -1, 86_400_000_000, None], pa.int64()).cast(
                     pa.timestamp("us"))})


@pytest.fixture
def pyiceberg(sql_catalog: BaseCatalog, warehouse: Path) -> Iterator[Any]:
    catalog = PyIcebergSqlCatalog(NAME, uri=f"sqlite:///{warehouse}/catalog.db",
                                  warehouse=f"file://{warehouse}")
    yield catalog
    catalog.close()


def _fields(schema: Any) -> list[tuple[int, str, str, bool]]:
    # icepark: ``is_required`` (``required`` is the named constructor); pyiceberg: ``required``
    return [(f.field_id, f.name, str(f.field_type),
             bool(f.is_required if hasattr(f, "is_required") else f.required))
            for f in schema.fields]


def _spec(spec: Any) -> list[tuple[int, int, str, str]]:
    return [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields]


def _snapshots(snapshots: Any) -> list[tuple[int, int | None, int, str | None]]:
    return [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.manifest_list)
            for s in snapshots]


def _ours_table(sql_catalog: BaseCatalog) -> Table:
    sql_catalog.create_namespace("db", {"owner": "ann"})
    sql_catalog.create_namespace("a.b")
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 4).build()
    order = SortOrderBuilder(SCHEMA).asc("name").build()
    table = sql_catalog.create_table("db.events", SCHEMA, partition_spec=spec, sort_order=order,
                                     properties={"k": "v"})
    sql_catalog.create_table("a.b.t", SCHEMA)
    table.append(ROWS)
    return table


def test_pyiceberg_reads_our_catalog(sql_catalog: BaseCatalog, pyiceberg: Any) -> None:
    ours = _ours_table(sql_catalog)
    assert sorted(pyiceberg.list_namespaces()) == [("a",), ("db",)]
    assert pyiceberg.list_namespaces("a") == [("a", "b")]
    assert pyiceberg.list_tables("db") == [("db", "events")]
    assert pyiceberg.list_tables("a.b") == [("a", "b", "t")]
    assert pyiceberg.load_namespace_properties("db")["owner"] == "ann"
    theirs = pyiceberg.load_table("db.events")
    assert theirs.metadata_location == ours.metadata_location
    assert _fields(theirs.schema()) == _fields(ours.schema())
    assert {i: _spec(s) for i, s in theirs.specs().items()} == {
        i: _spec(s) for i, s in ours.specs().items()}
    current = ours.current_snapshot()
    assert current is not None
    assert theirs.current_snapshot().snapshot_id == current.snapshot_id
    assert _snapshots(theirs.snapshots()) == _snapshots(ours.snapshots())
    assert [f.source_id for f in theirs.sort_order().fields] == [2]
    assert theirs.properties["k"] == "v"
    read = theirs.scan().to_arrow().sort_by("id")
    assert read.to_pylist() == ROWS.to_pylist() == sorted(live_rows(ours), key=lambda r: r["id"])
    assert theirs.scan(row_filter="id > 2").to_arrow().num_rows == 2


def test_pyiceberg_commits_on_our_table(sql_catalog: BaseCatalog, pyiceberg: Any) -> None:
    ours = _ours_table(sql_catalog)
    theirs = pyiceberg.load_table("db.events")
    with theirs.transaction() as tx:
        tx.set_properties(by="pyiceberg")
    ours.refresh()
    assert ours.properties["by"] == "pyiceberg"
    assert ours.metadata_log()[-1].metadata_file.rsplit("/", 1)[-1].startswith("00001-")
    assert sql_catalog.commit_table(("db", "events"), [], [u.SetProperties({"by": "us"})])
    assert pyiceberg.load_table("db.events").properties["by"] == "us"


def test_we_read_a_table_pyiceberg_wrote(sql_catalog: BaseCatalog, pyiceberg: Any) -> None:
    pyiceberg.create_namespace("shop")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "item": pa.array(["a", "b", None], pa.string())})
    theirs = pyiceberg.create_table("shop.orders", schema=rows.schema)
    theirs.append(rows)
    theirs.append(rows.slice(0, 1))
    theirs = pyiceberg.load_table("shop.orders")

    assert sql_catalog.list_namespaces() == [("shop",)]
    assert sql_catalog.list_tables("shop") == [("shop", "orders")]
    ours = sql_catalog.load_table("shop.orders")
    assert ours.metadata_location == theirs.metadata_location
    assert _fields(ours.schema()) == _fields(theirs.schema())
    assert {i: _spec(s) for i, s in ours.specs().items()} == {
        i: _spec(s) for i, s in theirs.specs().items()}
    assert _snapshots(ours.snapshots()) == _snapshots(theirs.snapshots())
    current = ours.current_snapshot()
    assert current is not None and current.snapshot_id == theirs.current_snapshot().snapshot_id

    result = sql_catalog.commit_table(("shop", "orders"), [], [u.SetProperties({"x": "1"})])
    assert result.metadata_location.rsplit("/", 1)[-1].startswith("00003-")
    again = pyiceberg.load_table("shop.orders")
    assert again.properties["x"] == "1"
    assert again.scan().to_arrow().num_rows == 4


def test_a_catalog_from_before_views_works(warehouse: Path) -> None:
    """A database whose ``iceberg_tables`` lacks ``iceberg_type`` (pyiceberg's v0 schema)."""
    warehouse.mkdir()
    engine = sa.create_engine(f"sqlite:///{warehouse}/catalog.db")
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace "
            "VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location "
            "VARCHAR(1000), previous_metadata_location VARCHAR(1000), PRIMARY KEY "
            "(catalog_name, table_namespace, table_name))"))
    engine.dispose()
    catalog = SqlCatalog(NAME, {"warehouse": str(warehouse)})
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    catalog.commit_table(("db", "t"), [], [u.SetProperties({"a": "b"})])
    assert catalog.load_table("db.t").metadata_log()[0].metadata_file == table.metadata_location
    catalog.close()
