"""Table.scan end to end: exact rows across filters, evolution, deletes and time travel, and the
same rows through pyiceberg and DuckDB."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.expressions import RowEvaluator, parse
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, NestedField
from icepark.table.table import Table
from tests.interop.peers import duckdb_connection

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "kind", STRING),
    NestedField.optional(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "n", LONG),
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KINDS = ["click", "view", None, "buy"]


def rows(ids: range) -> list[dict[str, Any]]:
    return [{"id": i, "kind": KINDS[i % 4],
             "ts": None if i % 11 == 0 else EPOCH + timedelta(hours=i * 5 - 120),
             "n": None if i % 7 == 0 else (i * 37) % 50 - 25} for i in ids]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseCatalog]:
    root = tmp_path_factory.mktemp("read")
    catalog = load_catalog("read", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    yield catalog


def new_table(catalog: BaseCatalog, data: list[dict[str, Any]]) -> Table:
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 4).build()
    table = catalog.create_table(f"db.t{uuid.uuid4().hex[:8]}", SCHEMA, partition_spec=spec)
    table.append(pa.Table.from_pylist(data, schema=to_arrow_schema(table.schema())))
    return table


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def expected_ids(data: list[dict[str, Any]], row_filter: str) -> list[int]:
    evaluator = RowEvaluator(SCHEMA, parse(row_filter))
    return sorted(r["id"] for r in data
                  if evaluator.eval(tuple(_stored(r[f.name]) for f in SCHEMA.fields)))


def _stored(value: Any) -> Any:
    if isinstance(value, datetime):
        delta = value - EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return value


@pytest.fixture(scope="module")
def table(catalog: BaseCatalog) -> Table:
    return new_table(catalog, rows(range(200)))


@pytest.mark.parametrize("row_filter", [
    "id = 17", "id < 0", "id >= 150", "kind = 'view'", "kind IS NULL", "kind IN ('buy', 'x')",
    "ts < '1970-01-01T00:00:00+00:00'", "ts >= '1970-01-05' AND n > 0", "ts IS NULL",
    "n IS NOT NULL AND n <= -20", "NOT (kind = 'click') OR id < 3", "kind LIKE 'vi%'",
    "kind NOT LIKE 'c%'", "n != 0",
])
def test_filters_return_exactly_the_matching_rows(table: Table, row_filter: str) -> None:
    scan = table.scan(row_filter)
    assert ids_of(scan.to_arrow()) == expected_ids(rows(range(200)), row_filter)
    assert scan.count() == len(expected_ids(rows(range(200)), row_filter))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.integers(-30, 230), high=st.integers(-30, 230), hours=st.integers(-200, 1200),
       kind=st.sampled_from(["click", "view", "buy", "nope"]))
def test_pruning_never_drops_a_matching_row(table: Table, low: int, high: int, hours: int,
                                            kind: str) -> None:
    at = (EPOCH + timedelta(hours=hours)).isoformat()
    row_filter = f"(id >= {low} AND id <= {high}) OR (ts < '{at}' AND kind = '{kind}')"
    assert ids_of(table.scan(row_filter).to_arrow()) == expected_ids(rows(range(200)),
                                                                      row_filter)


def test_projection_time_travel_and_evolution(catalog: BaseCatalog) -> None:
    data = rows(range(50))
    table = new_table(catalog, data)
    first = table.current_snapshot()
    assert first is not None
    with table.update_schema() as update:
        update.rename_column("kind", "category")
        update.add_column("note", STRING)
    more = [{**r, "category": r.pop("kind"), "note": "new"} for r in rows(range(50, 60))]
    table.append(pa.Table.from_pylist(more, schema=to_arrow_schema(table.schema())))
    with table.update_spec() as spec:
        spec.add_identity("category")
    table.append(pa.Table.from_pylist(
        [{**r, "category": r.pop("kind"), "note": None} for r in rows(range(60, 70))],
        schema=to_arrow_schema(table.schema())))

    now = table.scan(selected_fields=("id", "category", "note")).to_arrow()
    assert now.column_names == ["id", "category", "note"]
    by_id = {r["id"]: r for r in now.to_pylist()}
    assert len(by_id) == 70
    assert by_id[5]["category"] == "view" and by_id[5]["note"] is None
    assert by_id[55]["note"] == "new"
    assert ids_of(table.scan("category = 'buy'").to_arrow()) == [
        i for i in range(70) if KINDS[i % 4] == "buy"]
    old = table.scan(snapshot_id=first.snapshot_id).to_arrow()
    assert old.column_names == ["id", "kind", "ts", "n"] and old.num_rows == 50
    assert table.scan(as_of_timestamp=first.timestamp_ms).to_arrow().num_rows == 50


def _delete_files(table: Table, victims: list[int], kinds: list[str],
                  equal_ids: Sequence[int] = ()) -> list[DataFile]:
    """Position deletes for rows ``victims``, and equality deletes on ``kind`` (values
    ``kinds``) and on ``id`` (values ``equal_ids``), each in the partition of the data files
    they apply to."""
    spec, schema = table.spec(), table.schema()
    out: list[DataFile] = []
    counter = iter(range(10_000))

    def location(partition: tuple[Any, ...]) -> Any:
        return lambda: f"{table.location}/data/deletes-{next(counter)}-{uuid.uuid4()}.parquet"

    for task in table.scan().plan_files():
        file_rows = pa.parquet.read_table(task.data_file.file_path).column("id").to_pylist()
        positions = [p for p, i in enumerate(file_rows) if i in victims]
        if positions:
            writer = PositionDeleteWriter(table.io, location(task.data_file.partition), schema,
                                          spec, task.data_file.partition, table.properties)
            writer.write(position_deletes_batch({task.data_file.file_path: positions}))
            out += writer.close()
        for column, field_id, values, arrow_type in (("kind", 2, kinds, pa.string()),
                                                     ("id", 1, equal_ids, pa.int64())):
            if any((KINDS[i % 4] if column == "kind" else i) in values for i in file_rows):
                eq = EqualityDeleteWriter(table.io, location(task.data_file.partition), schema,
                                          spec, task.data_file.partition, table.properties,
                                          equality_ids=[field_id])
                eq.write(pa.table({column: pa.array(list(values), arrow_type)}))
                out += eq.close()
    return out


def test_position_and_equality_deletes_read_identically_everywhere(
        catalog: BaseCatalog) -> None:
    data = rows(range(80))
    table = new_table(catalog, data)
    victims = [3, 10, 41, 77]
    with table.new_row_delta() as delta:
        for f in _delete_files(table, victims, ["buy"]):
            delta.add_deletes(f)
    table.refresh()
    expected = sorted(r["id"] for r in data
                      if r["id"] not in victims and r["kind"] != "buy")
    assert ids_of(table.scan().to_arrow()) == expected
    assert table.scan().count() == len(expected)
    assert table.scan("id < 20").count() == len([i for i in expected if i < 20])


def test_duckdb_reads_our_position_and_equality_deletes(catalog: BaseCatalog) -> None:
    """DuckDB 1.5's iceberg extension fails an internal assertion ("Comparison on NULL
    values") when a delete file's partition holds a null value, and deletes rows whose column
    is null for an equality delete of a non-null value (``kind = 'buy'`` also removed rows
    with a null ``kind``: the spec matches null only to null). So this table has no null
    partition values and deletes by the required ``id``; our reader's handling of both is
    tested above."""
    data = [{**r, "ts": r["ts"] or EPOCH} for r in rows(range(80))]
    table = new_table(catalog, data)
    victims, equal = [3, 10, 41, 77], [5, 6, 60]
    with table.new_row_delta() as delta:
        for f in _delete_files(table, victims, [], equal):
            delta.add_deletes(f)
    table.refresh()
    expected = sorted(i for i in range(80) if i not in victims and i not in equal)
    assert ids_of(table.scan().to_arrow()) == expected
    with duckdb_connection() as con:
        got = con.execute("SELECT id FROM iceberg_scan(?) ORDER BY id",
                          [table.metadata_location]).fetchall()
    assert [i for (i,) in got] == expected


def test_pyiceberg_applies_our_position_deletes(catalog: BaseCatalog, tmp_path: Path) -> None:
    data = rows(range(40))
    table = new_table(catalog, data)
    victims = [0, 1, 2, 39]
    with table.new_row_delta() as delta:
        for f in _delete_files(table, victims, []):
            delta.add_deletes(f)
    table.refresh()
    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    expected = sorted(i for i in range(40) if i not in victims)
    assert ids_of(theirs) == expected == ids_of(table.scan().to_arrow())
