"""The Spark-powered commands run as a user would (five subprocesses, each starting a JVM):
``ingest`` creating a partitioned table and refusing a CSV whose columns do not fit, ``query``
with a filter, columns, a limit and time travel as JSON lines, ``create --from-file`` a Parquet
file, and ``delete --where`` then ``update --set --where``."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog import BaseCatalog
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, NestedField
from tests.cli.cli_helpers import json_out
from tests.cli.conftest import Run

pytestmark = pytest.mark.spark

PROGRESS = ("starting Spark", "reading ", "created ", "wrote ", "deleting ", "done ")
EVENTS = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING),
                   NestedField.optional(3, "ts", TIMESTAMPTZ))


def _quiet(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The stderr lines, checked to be icepark's own: progress and at most one error line,
    none of the JVM's banner or log."""
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    for line in lines[:-1] if result.returncode else lines:
        assert line.startswith(PROGRESS), result.stderr
    return lines


def _data_files(table_dir: Path) -> set[Path]:
    return set((table_dir / "data").rglob("*.parquet"))


def test_ingest_creates_a_table_and_rejects_a_csv_that_does_not_fit(
        icepark_cli: Run, tmp_path: Path, default_catalog: BaseCatalog) -> None:
    folder = tmp_path / "incoming"
    folder.mkdir()
    (folder / "a.csv").write_text("id,kind,ts\n1,click,2024-03-01 09:30:00\n"
                                  "2,view,2024-03-01 10:00:00\n", encoding="utf-8")
    (folder / "b.csv").write_text("id,kind,ts\n3,click,2024-03-02 00:00:00\n", encoding="utf-8")
    (folder / "_SUCCESS").write_text("", encoding="utf-8")

    result = icepark_cli("ingest", "db.events", str(folder),
                         "--partition-by", "day(ts),bucket(4,id)", process=True)
    assert result.returncode == 0, result.stderr
    progress = _quiet(result)
    assert progress[1] == "reading 2 csv files..."
    assert progress[-1].startswith("wrote ") and ", 3 rows in " in progress[-1]
    assert "3 rows in total" in result.stdout
    table = default_catalog.load_table("db.events")
    assert [(f.name, str(f.field_type)) for f in table.schema().fields] == [
        ("id", "int"), ("kind", "string"), ("ts", "timestamptz")]
    assert [f.name for f in table.spec().fields] == ["ts_day", "id_bucket"]
    rows = table.scan().to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["kind"]) for r in rows] == [(1, "click"), (2, "view"), (3, "click")]
    assert rows[0]["ts"] == dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC)

    bad = tmp_path / "bad.csv"
    bad.write_text("id,colour\n4,red\n", encoding="utf-8")
    files_before = _data_files(Path(table.location))
    rejected = icepark_cli("ingest", "db.events", str(bad))
    assert rejected.returncode == 2, rejected.stderr
    error = _quiet(rejected)[-1]
    assert error.startswith("icepark: error: ") and "colour" in error
    assert len(table.refresh().snapshots()) == 1
    assert _data_files(Path(table.location)) == files_before


def test_query_with_filter_columns_limit_and_time_travel(
        icepark_cli: Run, default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    table = default_catalog.create_table("db.events", EVENTS)
    at = pa.array([dt.datetime(2024, 3, 1, tzinfo=dt.UTC)] * 4, pa.timestamp("us", "UTC"))
    table.append(pa.table({"id": [1, 2, 3, 4], "kind": ["click", "view", "click", "click"],
                           "ts": at}))
    first = table.current_snapshot()
    assert first is not None
    table.append(pa.table({"id": [5, 6], "kind": ["click", "click"], "ts": at[:2]}))

    result = icepark_cli("query", "db.events", "--where", "kind = 'click' AND id > 1",
                         "--columns", "id,ts", "--as-of", str(first.timestamp_ms),
                         "--limit", "5", "--json", process=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress with --json, and nothing from the JVM
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(records, key=lambda r: r["id"]) == [
        {"id": 3, "ts": "2024-03-01T00:00:00+00:00"},
        {"id": 4, "ts": "2024-03-01T00:00:00+00:00"}]


def test_create_from_a_parquet_file(icepark_cli: Run, tmp_path: Path,
                                    default_catalog: BaseCatalog) -> None:
    data = tmp_path / "sample.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "name": ["a", "b"],
        "amount": pa.array([Decimal("1.50"), None], pa.decimal128(9, 2)),
        "day": pa.array([dt.date(2024, 3, 1)] * 2),
        "tags": pa.array([["x"], []], pa.list_(pa.string())),
    }), data)
    result = icepark_cli("create", "shop.orders", "--from-file", str(data),
                         "--partition-by", "month(day)", "--json")
    doc = json_out(result)
    assert doc["created"] == "shop.orders" and doc["columns"] == 5
    table = default_catalog.load_table("shop.orders")
    assert str(table.schema()) == (
        "table {\n  1: id: optional long\n  2: name: optional string\n"
        "  3: amount: optional decimal(9,2)\n  4: day: optional date\n"
        "  5: tags: optional list<string>\n}")
    assert [f.name for f in table.spec().fields] == ["day_month"]
    assert table.current_snapshot() is None


def test_delete_and_update_where(icepark_cli: Run, default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    table = default_catalog.create_table("db.events", EVENTS)
    at = pa.array([dt.datetime(2024, 3, 1, tzinfo=dt.UTC)] * 3, pa.timestamp("us", "UTC"))
    table.append(pa.table({"id": [1, 2, 3], "kind": ["a", "spam", "b"], "ts": at}))
    table.append(pa.table({"id": [4, 5, 6], "kind": ["spam", "spam", "c"], "ts": at}))

    result = icepark_cli("delete", "db.events", "--where", "kind = 'spam'", "--json")
    doc = json_out(result)
    assert doc["deleted_rows"] == 3 and doc["snapshot_id"] is not None
    remaining = table.refresh().scan().to_arrow().sort_by("id").column("id").to_pylist()
    assert remaining == [1, 3, 6]

    result = icepark_cli("update", "db.events", "--set", "kind = upper(kind)",
                         "--set", "id=id * 10", "--where", "id > 1", "--json")
    doc = json_out(result)
    assert doc["updated_rows"] == 2 and doc["snapshot_id"] is not None
    rows = table.refresh().scan().to_arrow().sort_by("id")
    assert rows.column("id").to_pylist() == [1, 30, 60]
    assert rows.column("kind").to_pylist() == ["a", "B", "C"]

    bad = icepark_cli("update", "db.events", "--set", "nope = 1")
    assert bad.returncode != 0 and "nope" in bad.stderr
    assert "starting Spark" not in bad.stderr  # checked before Spark starts
