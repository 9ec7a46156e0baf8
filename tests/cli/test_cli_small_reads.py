"""``query`` and ``count`` read small tables without Spark, with the same results as Spark:
rows of every kind of column, time travel, deletes, filters, and which path ran on stderr."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog import BaseCatalog
from icepark.cli.main import main
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.table import Table
from tests.cli.cli_helpers import json_out, one_error_line
from tests.cli.conftest import Run

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.required(2, "kind", STRING),
    NestedField.optional(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "amount", PrimitiveType.decimal(9, 2)),
    NestedField.optional(5, "day", DATE),
    NestedField.optional(6, "tags", ListType(7, STRING, element_required=False)),
    NestedField.optional(8, "attrs", MapType(9, STRING, 10, LONG, value_required=False)),
    NestedField.optional(11, "info", StructType((NestedField.optional(12, "a", INT),
                                                 NestedField.optional(13, "b", STRING)))),
    NestedField.optional(14, "raw", BINARY),
    NestedField.optional(15, "u", UUID),
    NestedField.optional(16, "score", DOUBLE))
KINDS = ("click", "view", "spam")
DELETED_ID = 6
"""Removed by an equality delete file in the ``click`` partition."""


def _row(i: int) -> dict[str, Any]:
    return {"id": i, "kind": KINDS[i % 3],
            "ts": dt.datetime(2024, 3, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
            "amount": None if i % 4 == 0 else Decimal(i) / 4, "day": dt.date(2024, 3, i),
            "tags": [f"t{i}", None] if i % 2 else [], "attrs": [("n", i), ("m", None)],
            "info": {"a": i * 10, "b": None if i % 5 == 0 else f"b{i}"},
            "raw": bytes([i, 255]), "u": uuid.UUID(int=i).bytes,
            "score": float("nan") if i == 7 else i / 3}


def _append(table: Table, ids: range) -> None:
    table.append(pa.Table.from_pylist([_row(i) for i in ids], schema=to_arrow_schema(SCHEMA)))


def _events(catalog: BaseCatalog) -> tuple[Table, int]:
    """``db.events`` partitioned by kind: ids 1-6, then 7-12, then id 6 deleted by an
    equality delete; also the first snapshot's ID."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", SCHEMA, partition_spec=["kind"])
    _append(table, range(1, 7))
    first = table.current_snapshot()
    assert first is not None
    time.sleep(0.01)  # the second snapshot is not current at the first's millisecond
    _append(table, range(7, 13))
    writer = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                  table.schema(), table.spec(), ("click",), table.properties,
                                  equality_ids=[1])
    writer.write(pa.table({"id": pa.array([DELETED_ID], pa.int64())}))
    with table.new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    return table.refresh(), first.snapshot_id


def _stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stderr.strip().splitlines()


def _took(line: str, pattern: str) -> None:
    """``line`` is ``pattern`` with its ``{s}`` some seconds."""
    assert re.fullmatch(re.escape(pattern).replace(r"\{s\}", r"\d+\.\d s"), line), line


@pytest.mark.spark
def test_query_shows_the_same_rows_with_arrow_and_with_spark(
        icepark_cli: Run, default_catalog: BaseCatalog) -> None:
    _, first = _events(default_catalog)
    args = ("query", "db.events", "--where", "id > 2 AND kind <> 'spam'", "--all")
    arrow, spark = icepark_cli(*args), icepark_cli(*args, "--local-max", "0")
    _took(_stderr_lines(arrow)[0], "6 rows in {s}, read with Arrow")
    lines = _stderr_lines(spark)
    assert lines[:3] == ["reading with Spark: the planned files weigh more than 0 B "
                         "(--local-max)", "starting Spark (local[*])...", "reading db.events..."]
    _took(lines[3], "6 rows in {s}, read with Spark")
    assert sorted(arrow.stdout.splitlines()) == sorted(spark.stdout.splitlines())
    assert sorted(int(line.split()[0]) for line in arrow.stdout.splitlines()[2:]) == [
        3, 4, 7, 9, 10, 12]  # not 6: deleted
    assert '{"a":70,"b":"b7"}' in arrow.stdout and '{"n":7,"m":null}' in arrow.stdout

    travel = ("query", "db.events", "--as-of", str(
        default_catalog.load_table("db.events").snapshot(first).timestamp_ms),  # type: ignore[union-attr]
              "--columns", "id,info.b,u,score,raw", "--json")
    arrow, spark = icepark_cli(*travel), icepark_cli(*travel, "--spark")
    assert arrow.stderr == spark.stderr == ""
    rows = sorted((json.loads(line) for line in arrow.stdout.splitlines()),
                  key=lambda r: r["id"])
    assert rows == sorted((json.loads(line) for line in spark.stdout.splitlines()),
                          key=lambda r: r["id"])
    assert rows[3] == {"id": 4, "info": {"b": "b4"}, "raw": "04ff",
                       "score": 1.3333333333333333,
                       "u": "00000000-0000-0000-0000-000000000004"}  # before the delete
    assert len(rows) == 6


@pytest.mark.spark
def test_count_from_metadata_arrow_or_spark(icepark_cli: Run,
                                            default_catalog: BaseCatalog) -> None:
    _, first = _events(default_catalog)
    cases = {  # arguments -> (count, what read it)
        (): (11, "arrow"),  # the click files have an equality delete: read
        ("--where", "kind = 'view'"): (4, "metadata"),
        ("--where", "kind IN ('view', 'spam')"): (8, "metadata"),
        ("--where", "id > 3"): (8, "arrow"),  # rows of 4 through 12, but 4
        ("--snapshot", str(first)): (6, "metadata"),
        ("--where", "id > 3", "--snapshot", str(first)): (3, "arrow"),
    }
    for args, (rows, how) in cases.items():
        doc = json_out(icepark_cli("count", "db.events", *args, "--json"))
        assert (doc["count"], doc["read_with"]) == (rows, how), args

    spark = icepark_cli("count", "db.events", "--where", "id > 3", "--spark")
    assert spark.stdout == "8\n"
    assert _stderr_lines(spark)[:2] == ["starting Spark (local[*])...",
                                        "counting the rows of db.events..."]
    _took(_stderr_lines(spark)[2], "counted with Spark in {s}")


def test_count_and_query_in_process_without_spark(
        tmp_path: Path, default_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _events(default_catalog)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("ICEPARK_CATALOG", "ICEPARK_CONFIG", "ICEPARK_LOCAL_READ_MAX"):
        monkeypatch.delenv(name, raising=False)

    assert main(["count", "db.events", "--where", "kind = 'view'"]) == 0
    out, err = capsys.readouterr()
    assert out == "4\n"
    _took(err.strip(), "counted with metadata in {s}")

    assert main(["query", "db.events", "--columns", "id,kind", "--limit", "3"]) == 0
    out, err = capsys.readouterr()
    header, _, *rows = out.splitlines()
    assert header == "id  kind" and len(rows) == 3
    _took(err.strip(), "3 rows in {s}, read with Arrow (the first 3; --limit N or --all for more)")

    monkeypatch.setenv("ICEPARK_LOCAL_READ_MAX", "lots")
    assert main(["count", "db.events"]) == 2
    assert capsys.readouterr().err == ("icepark: error: Invalid $ICEPARK_LOCAL_READ_MAX 'lots': "
                                       "write a size such as 256M, 2G or 0\n")


def test_a_bad_local_max_fails_before_any_read(icepark_cli: Run,
                                               default_catalog: BaseCatalog) -> None:
    _events(default_catalog)
    result = icepark_cli("query", "db.events", "--local-max", "1 GB?")
    assert result.returncode == 2
    assert one_error_line(result) == "Invalid --local-max '1 GB?': write a size such as 256M, " \
                                     "2G or 0"
