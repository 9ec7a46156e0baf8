"""UPDATE through Spark: the rows afterwards are what SQL's UPDATE leaves (a row whose filter is
null is not updated), in both row-level modes, v2 and v3, as every reader reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

import icepark.spark as ips
from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.spark.reader.read import read
from tests.spark.test_merge import TARGET, _check, _make

pytestmark = pytest.mark.spark


def _updated(row: dict[str, Any]) -> dict[str, Any]:
    s = row["s"]
    return {**row, "x": row["x"] * 2, "cat": row["cat"].upper(),
            "s": {"a": 7} if s is None else {**s, "a": 7}}


@pytest.mark.parametrize(("mode", "version"), [("copy-on-write", 3), ("merge-on-read", 2),
                                               ("merge-on-read", 3)])
def test_update_where(spark: SparkSession, tmp_path: Path, mode: str, version: int) -> None:
    table = _make(tmp_path, "copy-on-write", version, partitioned=True)
    table.update_properties().set("write.update.mode", mode).commit()
    lineage = ["_row_id"] if version == 3 else []
    before = {r["id"]: r for r in read(spark, table, metadata_columns=lineage).collect()}
    # id > 20 holds for 21..23 and is null for the two rows without an id: those are kept
    result = ips.update(spark, table, {"x": "x * 2", "cat": F.upper(F.col("cat")), "s.a": "7"},
                        "id > 20 OR id < 2")
    assert result.updated_rows == 5 and result.snapshot_id is not None
    expected = [_updated(r) if r["id"] is not None and (r["id"] > 20 or r["id"] < 2) else r
                for r in TARGET]
    _check(spark, table, expected, peers=True)
    if version == 3:
        after = read(spark, table, metadata_columns=lineage).collect()
        assert {r["id"]: r["_row_id"] for r in after} == {
            i: r["_row_id"] for i, r in before.items()}  # every row keeps its row ID


def test_update_every_row_and_nothing(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "copy-on-write", 2, partitioned=False)
    nothing = ips.update(spark, table, {"x": "0"}, "id > 1000")
    assert nothing.snapshot_id is None and nothing.updated_rows == 0
    result = ips.update(spark, table, {"x": "coalesce(x, 0) + 1"})
    assert result.updated_rows == len(TARGET)
    got = sorted(r["x"] for r in read(spark, table).collect())
    assert got == sorted((r["x"] or 0) + 1 for r in TARGET)


def test_bad_updates_fail_before_any_file(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    cases: list[tuple[dict[str, Any], str | None, str]] = [
        ({"nope": "1"}, None, "no column 'nope'"),
        ({"x": "nope + 1"}, None, "cannot be resolved|nope"),
        ({"x": "'text'"}, None, "string"),
        ({"x": "1"}, "nope = 1", "nope"),
        ({}, None, "non-empty"),
    ]
    for assignments, where, message in cases:
        with pytest.raises(ValidationError, match=message):
            ips.update(spark, table, assignments, where)
    v1 = _make(tmp_path, "copy-on-write", 1, partitioned=False, name="v1")
    v1.update_properties().set("write.update.mode", "merge-on-read").commit()
    with pytest.raises(ValidationError, match="v1"):
        ips.update(spark, v1, {"x": "1"})
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()
            and "/v1/" not in str(p)} == files


def test_narrowing_values_over_deleted_rows(spark: SparkSession, tmp_path: Path) -> None:
    """A SET value that must be narrowed to the column's type (``amount + 1`` widens a decimal)
    is checked for overflow also where the table already has delete files (the rows are then
    read joined with them) and in a merge (joined with its source); a value that does not fit
    fails naming the column."""
    cat = load_catalog("u", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                       warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    rows = spark.sql("SELECT id, CAST(id * 1.5 AS DECIMAL(9, 1)) AS amount FROM range(100)")
    table = ips.write(rows, cat.create_table(
        "db.t", ips.to_iceberg(rows.schema),
        properties={"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
                    "write.merge.mode": "merge-on-read"}))
    ips.delete(spark, table, "id < 10")  # position deletes: later reads join them
    ips.update(spark, table, {"amount": "amount + 1"}, "id >= 90")
    source = spark.sql("SELECT id, CAST(0 AS DECIMAL(9, 1)) AS amount FROM range(40, 45)")
    (ips.merge(table, source, on="t.id = s.id")
     .when_matched_update(set={"amount": "t.amount + s.amount + 2"}).execute())
    got = {r["id"]: float(r["amount"]) for r in read(spark, table.refresh()).collect()}
    assert got == {i: i * 1.5 + (1 if i >= 90 else 2 if 40 <= i < 45 else 0)
                   for i in range(10, 100)}
    with pytest.raises(ValidationError, match=r"'amount'.*does not fit"):
        ips.update(spark, table, {"amount": "amount * 100000000"}, "id = 99")
