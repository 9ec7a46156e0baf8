"""``uuid`` and ``fixed(L)`` columns written from Spark, where they are strings and binary: from
a DataFrame a user builds, from one ``read`` returned, and read back equal by every reader."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession
from pyspark.sql import types as T  # noqa: N812 - PySpark's conventional name

import icepark
import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, UUID, NestedField, PrimitiveType, StructType
from tests.interop.peers import duckdb_connection

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "u", UUID),
    NestedField.optional(3, "f", PrimitiveType.fixed(4)),
    NestedField.optional(4, "s", StructType((NestedField.optional(5, "inner", UUID),))),
)
U1, U2 = uuid.UUID("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"), uuid.uuid4()
ROWS = [(1, str(U1).upper(), b"abcd", (str(U2),)), (2, None, None, None),
        (3, str(U2), b"\x00\x01\x02\x03", (None,))]
SPARK_SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("u", T.StringType()),
    T.StructField("f", T.BinaryType()),
    T.StructField("s", T.StructType([T.StructField("inner", T.StringType())])),
])
EXPECTED = [(1, U1, b"abcd", U2), (2, None, None, None), (3, U2, b"\x00\x01\x02\x03", None)]


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> BaseCatalog:
    catalog = icepark.load_catalog("fixed", uri=f"sqlite:///{tmp_path}/c.db",
                                   warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    ips.configure(spark, catalog=catalog)
    return catalog


def _arrow_rows(table: object) -> list[tuple[object, ...]]:
    rows = table.scan().to_arrow().sort_by("id").to_pylist()  # type: ignore[attr-defined]
    return [(r["id"], r["u"], r["f"], (r["s"] or {}).get("inner")) for r in rows]


def test_uuid_and_fixed_columns_round_trip_through_spark(spark: SparkSession,
                                                         catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table = ips.write(spark.createDataFrame(ROWS, SPARK_SCHEMA), table)
    assert _arrow_rows(table) == EXPECTED
    back = ips.read(spark, table).orderBy("id").collect()
    assert [(r.id, r.u, r.f, r.s and r.s.inner) for r in back] == [
        (1, str(U1), bytearray(b"abcd"), str(U2)), (2, None, None, None),
        (3, str(U2), bytearray(b"\x00\x01\x02\x03"), None)]
    # what read() returned is written again as it is
    table = ips.write(ips.read(spark, table), table)
    assert _arrow_rows(table) == sorted(EXPECTED * 2, key=lambda r: r[0])


def test_peers_read_the_written_uuid_and_fixed_values(spark: SparkSession,
                                                      catalog: BaseCatalog) -> None:
    table = ips.write(spark.createDataFrame(ROWS, SPARK_SCHEMA),
                      catalog.create_table("db.t", SCHEMA))
    location = table.metadata_location
    expected = [(i, u, f) for i, u, f, _ in EXPECTED]
    peer = StaticTable.from_metadata(location).scan().to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], _as_uuid(r["u"]), r["f"]) for r in peer] == expected
    with duckdb_connection() as connection:
        found = connection.execute(
            f"SELECT id, u, f FROM iceberg_scan('{location}') ORDER BY id").fetchall()
    assert found == expected


def _as_uuid(value: object) -> object:
    return uuid.UUID(bytes=value) if isinstance(value, bytes) else value


@pytest.mark.parametrize(("row", "message"), [
    ((1, "not-a-uuid", None, None), "Invalid uuid value in column 'u' (write "
                                    "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx): not-a-uuid"),
    ((1, None, b"abc", None), "Column 'f' is fixed[4], but row 0 holds 3 bytes"),
])
def test_values_that_do_not_fit_name_the_column_and_row(
        spark: SparkSession, catalog: BaseCatalog, row: tuple[object, ...], message: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(Exception, match=re.escape(message)):
        ips.write(spark.createDataFrame([row], SPARK_SCHEMA), table)
    assert catalog.load_table("db.t").current_snapshot() is None
