"""``icepark ingest`` reads ISO-8601 timestamps and dates in CSV and JSON files as timestamps
and dates, as a Spark user expects, and converts text to an existing table's column types."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import BaseCatalog
from icepark.spec.schema import Schema
from icepark.spec.types import DATE, INT, TIMESTAMP, NestedField, PrimitiveType
from tests.cli.conftest import Run

pytestmark = pytest.mark.spark

UTC = dt.UTC
STAMPS = [  # (text, the instant it names)
    ("2024-03-05T10:00:00", dt.datetime(2024, 3, 5, 10, tzinfo=UTC)),
    ("2024-03-05 10:00:00", dt.datetime(2024, 3, 5, 10, tzinfo=UTC)),
    ("2024-03-05T10:00:00Z", dt.datetime(2024, 3, 5, 10, tzinfo=UTC)),
    ("2024-03-05T10:00:00.123456+02:00", dt.datetime(2024, 3, 5, 8, 0, 0, 123456, tzinfo=UTC)),
    ("2024-03-05 10:00:00.5", dt.datetime(2024, 3, 5, 10, 0, 0, 500000, tzinfo=UTC)),
]


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The ``icepark: error: ...`` line a Spark command ends with (after its progress lines)."""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("icepark: error: "), result.stderr
    return last.removeprefix("icepark: error: ")


def _columns(catalog: BaseCatalog) -> tuple[dict[str, str], dict[str, list[object]]]:
    table = catalog.load_table("db.t")
    types = {f.name: str(f.field_type) for f in table.schema().fields}
    data: pa.Table = table.scan().to_arrow()
    return types, {name: data.sort_by("id").column(name).to_pylist() for name in types}


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_iso_timestamps_and_dates_infer_as_times(icepark_cli: Run, tmp_path: Path,
                                                 default_catalog: BaseCatalog, fmt: str) -> None:
    rows = [{"id": i, "ts": text, "day": f"2024-03-0{i + 1}"}
            for i, (text, _) in enumerate(STAMPS)]
    path = tmp_path / f"events.{fmt}"
    if fmt == "csv":
        path.write_text("id,ts,day\n" + "".join(f"{r['id']},{r['ts']},{r['day']}\n"
                                                 for r in rows))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = icepark_cli("ingest", "db.t", str(path))
    assert result.returncode == 0, result.stderr
    types, values = _columns(default_catalog)
    assert types == {"id": "int" if fmt == "csv" else "long", "ts": "timestamptz",
                     "day": "date"}
    assert values["ts"] == [instant for _, instant in STAMPS]
    assert values["day"] == [dt.date(2024, 3, i + 1) for i in range(len(STAMPS))]


def test_text_is_read_in_an_existing_tables_types(icepark_cli: Run, tmp_path: Path,
                                                  default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.t", Schema.of(
        NestedField.optional(1, "id", INT), NestedField.optional(2, "ts", TIMESTAMP),
        NestedField.optional(3, "day", DATE),
        NestedField.optional(4, "amount", PrimitiveType.decimal(10, 2))))
    path = tmp_path / "in.csv"
    path.write_text("ID,ts,day,amount\n1,2024-03-05T10:00:00,2024-03-05,12.50\n"
                    "2,2024-03-05 11:00:00.25,2024-03-06,3\n")
    result = icepark_cli("ingest", "db.t", str(path))
    assert result.returncode == 0, result.stderr
    _, values = _columns(default_catalog)
    assert values == {"id": [1, 2],
                      "ts": [dt.datetime(2024, 3, 5, 10), dt.datetime(2024, 3, 5, 11, 0, 0,
                                                                         250000)],
                      "day": [dt.date(2024, 3, 5), dt.date(2024, 3, 6)],
                      "amount": [Decimal("12.50"), Decimal("3.00")]}

    bad = tmp_path / "bad.csv"
    bad.write_text("id,amount\n3,1.5\n4,12.505\n")
    failed = icepark_cli("ingest", "db.t", str(bad))
    assert failed.returncode == 2
    assert error_line(failed) == (
        f"Column 'amount': the value 12.505 does not fit the table's decimal(10,2) column "
        f"(in file://{bad})")
