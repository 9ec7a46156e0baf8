"""Column names resolve as Spark resolves them: ignoring case unless
``spark.sql.caseSensitive`` is true, for writes (top level, nested, ``merge_schema``) and reads
(columns and filters); two names differing only by case are a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import BaseCatalog, load_catalog
from icepark.errors import ValidationError
from icepark.spark.writer.write import write
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, STRING, ListType, NestedField, StructType
from tests.spark.test_write import expected, rows

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "name", STRING),
                   NestedField.optional(3, "point", StructType((
                       NestedField.optional(4, "x", INT), NestedField.optional(5, "y", INT)))))


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    cat = load_catalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                       warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.fixture
def case_sensitive(spark: SparkSession) -> Iterator[None]:
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_columns_match_ignoring_case_by_default(spark: SparkSession,
                                                catalog: BaseCatalog) -> None:
    assert spark.conf.get("spark.sql.caseSensitive") == "false"
    table = catalog.create_table("db.t", SCHEMA)
    df = spark.createDataFrame([(1, "a", (2, 3))],
                               "ID long, Name string, POINT struct<X:int,y:int>")
    write(df, table)
    assert rows(table) == expected([{"id": 1, "name": "a", "point": {"x": 2, "y": 3}}])
    assert [f.name for f in table.schema().fields] == ["id", "name", "point"]


def test_case_sensitive_sessions_match_exactly(spark: SparkSession, catalog: BaseCatalog,
                                               case_sensitive: None) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    df = spark.createDataFrame([(1, "a")], "ID long, name string")
    with pytest.raises(ValidationError) as raised:
        write(df, table)
    assert str(raised.value) == ("Column(s) 'ID' are not in the table schema; add them with "
                                 "merge_schema=True or drop them")


def test_columns_differing_only_by_case_are_ambiguous(spark: SparkSession,
                                                      catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    df = spark.createDataFrame([(1, (2, 3))], "id long, point struct<x:int, X:int>")
    with pytest.raises(ValidationError) as raised:
        write(df, table)
    assert str(raised.value) == (
        "Columns 'point.x' and 'point.X' of the data differ only by case, and "
        "spark.sql.caseSensitive is false: rename or drop one")


def test_merge_schema_matches_ignoring_case(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    df = spark.createDataFrame([(1, "a", "new")], "Id long, NAME string, Extra string")
    write(df, table, merge_schema=True)
    assert [f.name for f in table.schema().fields] == ["id", "name", "point", "Extra"]
    assert rows(table) == expected([{"id": 1, "name": "a", "point": None, "Extra": "new"}])


def test_reads_resolve_columns_and_filters_ignoring_case(spark: SparkSession,
                                                         catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string"), table)
    df = ips.read(spark, table, "ID > 1", columns=["NAME"])
    assert df.columns == ["name"]
    assert [r.name for r in df.collect()] == ["b"]


def test_case_sensitive_reads_reject_other_spellings(spark: SparkSession,
                                                     catalog: BaseCatalog,
                                                     case_sensitive: None) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match="ID"):
        ips.read(spark, table, "ID > 1")


def test_fields_inside_lists_match_ignoring_case(spark: SparkSession,
                                                 catalog: BaseCatalog) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(
        2, "tags", ListType(3, StructType((NestedField.optional(4, "k", INT),)), False)))
    table = catalog.create_table("db.lists", schema)  # a list: the Python-worker writer
    write(spark.createDataFrame([(1, [(5,)])], "ID long, Tags array<struct<K:int>>"), table)
    assert rows(table) == expected([{"id": 1, "tags": [{"k": 5}]}])
