"""The Spark read path returns exactly the rows of the Arrow reader (the reference)."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import BaseCatalog, load_catalog
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.spark.reader.read import read
from icepark.spark.schema import to_spark
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, TIMESTAMPTZ, UUID, NestedField
from icepark.table.scan.scan import select_columns
from icepark.table.table import Table

pytestmark = pytest.mark.spark

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING),
                   NestedField.optional(3, "ts", TIMESTAMPTZ),
                   NestedField.optional(4, "x", DOUBLE))
KINDS = ["click", "view", None, "buy"]


def _rows(ids: range) -> list[dict[str, Any]]:
    return [{"id": i, "kind": KINDS[i % 4],
             "ts": None if i % 11 == 0 else EPOCH + dt.timedelta(hours=i * 5),
             "x": float("nan") if i % 9 == 0 else None if i % 7 == 0 else i / 4}
            for i in ids]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Two snapshots: 40 rows, then a rename (kind -> category), an added uuid column and 20
    more rows; partitioned by day(ts) and bucket(id)."""
    root: Path = tmp_path_factory.mktemp("spark-read")
    catalog: BaseCatalog = load_catalog("r", uri=f"sqlite:///{root}/c.db",
                                        warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 2).build()
    t = catalog.create_table("db.t", SCHEMA, partition_spec=spec)
    t.append(pa.Table.from_pylist(_rows(range(40)), schema=to_arrow_schema(t.schema())))
    with t.update_schema() as update:
        update.rename_column("kind", "category")
        update.add_column("u", UUID)
    more = [{**{("category" if k == "kind" else k): v for k, v in r.items()},
             "u": uuid.UUID(int=r["id"] * 7919) if r["id"] % 3 else None}
            for r in _rows(range(40, 60))]
    t.append(pa.Table.from_pylist(more, schema=to_arrow_schema(t.schema())))
    return t.refresh()


def _norm(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat()
    if isinstance(value, uuid.UUID | bytes):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=value))
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _sorted(rows: list[dict[str, Any]]) -> list[list[tuple[str, Any]]]:
    return sorted(([(k, _norm(v)) for k, v in r.items()] for r in rows), key=repr)


def _same(spark: SparkSession, table: Table, row_filter: str | None = None,
          columns: tuple[str, ...] | None = None, **kw: Any) -> int:
    expected = table.scan(row_filter or "true", columns or ("*",), **kw).to_arrow()
    df = read(spark, table, row_filter, columns, **kw)
    assert df.columns == expected.column_names
    got = [r.asDict(recursive=True) for r in df.collect()]
    assert _sorted(got) == _sorted(expected.to_pylist())
    return len(got)


def test_read_equals_arrow_reader_after_rename_and_add(spark: SparkSession,
                                                        table: Table) -> None:
    assert _same(spark, table) == 60
    assert _same(spark, table, columns=("u", "id")) == 60


@pytest.mark.parametrize("row_filter", [
    "id < 10 OR category = 'buy'", "category IS NULL", "NOT (x > 3.0)", "x != 2.5",
    "category IN ('view', 'buy') AND ts >= '1970-01-02T00:00:00+00:00'",
    "category NOT IN ('view')", "category LIKE 'cl%'", "NOT (category LIKE 'cl%')",
    "x IS NAN", "x IS NOT NAN AND id > 30", "u IS NOT NULL", "false"])
def test_row_filters_match_arrow_reader(spark: SparkSession, table: Table,
                                        row_filter: str) -> None:
    _same(spark, table, row_filter, ("id", "x"))


def test_time_travel_by_snapshot_id(spark: SparkSession, table: Table) -> None:
    first = table.metadata.snapshots[0].snapshot_id
    df = read(spark, table, snapshot_id=first)
    assert df.columns == ["id", "kind", "ts", "x"]
    assert _same(spark, table, "id >= 5", snapshot_id=first) == 35


def test_position_deletes_apply_like_arrow_reader(spark: SparkSession, tmp_path: Path) -> None:
    catalog = load_catalog("d", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "w h%+"))
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).bucket("id", 2).build()
    t = catalog.create_table("db.d", SCHEMA, partition_spec=spec)
    t.append(pa.Table.from_pylist(_rows(range(30)), schema=to_arrow_schema(t.schema())))
    victims = {2, 5, 17, 29}
    counter = iter(range(100))
    with t.new_row_delta() as delta:
        for task in t.scan().plan_files():
            ids = pq.read_table(task.data_file.file_path).column("id").to_pylist()
            positions = [p for p, i in enumerate(ids) if i in victims]
            writer = PositionDeleteWriter(
                t.io, lambda: f"{t.location}/data/del-{next(counter)}.parquet", t.schema(),
                t.spec(), task.data_file.partition, t.properties)
            writer.write(position_deletes_batch({task.data_file.file_path: positions}))
            for f in writer.close():
                delta.add_deletes(f)
    t.refresh()
    assert _same(spark, t) == 30 - len(victims)
    assert _same(spark, t, "id < 20", ("id", "kind")) == 20 - 3

    task = next(iter(t.scan().plan_files()))
    eq = EqualityDeleteWriter(t.io, lambda: f"{t.location}/data/eq.parquet", t.schema(),
                              t.spec(), task.data_file.partition, t.properties,
                              equality_ids=[2])
    eq.write(pa.table({"kind": pa.array(["buy"])}))
    with t.new_row_delta() as delta:
        for f in eq.close():
            delta.add_deletes(f)
    t.refresh()
    assert _same(spark, t) < 30 - len(victims)  # 'buy' rows of one partition are gone
    assert _same(spark, t, "kind = 'buy' OR id < 3", ("kind",)) > 0


def test_empty_plan_has_the_projection_schema(spark: SparkSession, table: Table) -> None:
    df = read(spark, table, "id > 1000", ["category", "id"])
    assert df.columns == ["id", "category"] and df.count() == 0


def test_plain_read_is_the_file_scan_itself(spark: SparkSession, table: Table) -> None:
    """Columns read by field ID with nothing to convert need no projection over Spark's file
    scan (each one is analysed on the driver), and still carry the table layout's field IDs."""
    df = read(spark, table, "id < 10", ["id", "x"])
    plan = df._jdf.queryExecution().analyzed().toString()
    assert "Project" not in plan and "Filter" in plan
    layout = to_spark(select_columns(table.schema(), ["id", "x"]))
    assert [(f.name, f.dataType, f.metadata) for f in df.schema.fields] == \
        [(f.name, f.dataType, f.metadata) for f in layout.fields]
    assert _same(spark, table, "id < 10", ("id", "x")) == 10
    converted = read(spark, table, None, ["u", "id"])  # uuid bytes to strings: projected
    assert "Project" in converted._jdf.queryExecution().analyzed().toString()
