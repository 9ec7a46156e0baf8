"""Field IDs for a cached frame without a projection (``DataFrame.to``), and the footer check
that keeps files without the table's field IDs out of it."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T  # noqa: N812

from icepark.catalog import BaseCatalog
from icepark.spark.schema import to_spark
from icepark.spark.writer import file_columns, native
from icepark.spark.writer.file_columns import cached_schema, file_frame
from icepark.spark.writer.native_files import MissingFieldIds
from icepark.spark.writer.write import write
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UNKNOWN,
    NestedField,
    StructType,
)
from icepark.table.table import Table
from tests.spark.test_write import (
    assert_field_ids_everywhere,
    catalog,
    data_files_on_disk,
    live_files,
)

pytestmark = pytest.mark.spark
__all__ = ["catalog"]  # the fixture, shared with test_write

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "s", STRING),
    NestedField.optional(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "n", INT),
    NestedField.optional(5, "x", DOUBLE))
ROWS = [(i, f"s{i}", dt.datetime(2024, 1, 1 + i % 28, tzinfo=dt.UTC), None if i % 7 else i,
         float("nan") if i == 5 else i / 4) for i in range(100)]


@pytest.fixture
def cached(spark: SparkSession) -> Iterator[DataFrame]:
    """The rows in the table's Spark types, cached with their columns in another order."""
    df = spark.createDataFrame(ROWS, to_spark(SCHEMA)).select("ts", "n", "x", "s", "id").cache()
    df.count()
    yield df
    df.unpersist()


def _table(catalog: BaseCatalog, schema: Schema = SCHEMA) -> Table:
    return catalog.create_table("db.t", schema)


def _nan_as_text(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)


EXPECTED = [_nan_as_text(r) for r in ROWS]


def _rows(table: Table) -> list[tuple[Any, ...]]:
    found = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    return [_nan_as_text((r["id"], r["s"], r["ts"], r["n"], r["x"])) for r in found]


def _parquet_files(table: Table) -> list[str]:
    return [str(p) for p in data_files_on_disk(table)]


def test_cached_frame_gets_field_ids_without_a_projection(
        cached: DataFrame, catalog: BaseCatalog, capsys: pytest.CaptureFixture[str]) -> None:
    frame, framed = file_frame(cached, SCHEMA)
    assert framed
    assert frame.columns == ["id", "s", "ts", "n", "x"]  # the table's order
    assert [f.metadata["parquet.field.id"] for f in frame.schema.fields] == [1, 2, 3, 4, 5]
    frame.explain()
    plan = capsys.readouterr().out  # the scan at the top: no projection copies the rows
    assert plan.split("== Physical Plan ==")[1].strip().startswith("InMemoryTableScan"), plan
    table = write(cached, _table(catalog))
    files = live_files(table)
    assert files and sorted(f.file_path for f in files) == _parquet_files(table)
    for f in files:
        assert_field_ids_everywhere(f.file_path)
        assert [c.name for c in pq.read_schema(f.file_path)] == ["id", "s", "ts", "n", "x"]
    assert _rows(table) == EXPECTED
    assert sum(f.record_count for f in files) == len(ROWS)
    assert all(f.lower_bounds and 1 in f.lower_bounds for f in files)  # metrics by field ID
    assert sum((f.nan_value_counts or {}).get(5, 0) for f in files) == 1


def _other_type(df: DataFrame) -> DataFrame:
    return df.withColumn("id", df["id"].cast("int"))


def _nullable_id(df: DataFrame) -> DataFrame:
    fields = [T.StructField(f.name, f.dataType, True, f.metadata) for f in df.schema.fields]
    return df.sparkSession.createDataFrame(df.rdd, T.StructType(fields))


@pytest.mark.parametrize("change", [_other_type, _nullable_id],
                         ids=["another type", "nullable required column"])
def test_cached_frames_unlike_the_table_get_aliases(cached: DataFrame,
                                                    change: Any) -> None:
    other = change(cached).cache()
    try:
        other.count()
        assert other.storageLevel.useMemory
        assert cached_schema(other, SCHEMA) is None
        assert file_frame(other, SCHEMA)[1] is False
    finally:
        other.unpersist()


def test_uncached_frames_and_unknown_columns_get_aliases(spark: SparkSession,
                                                         cached: DataFrame) -> None:
    assert cached_schema(cached, SCHEMA) is not None
    assert cached_schema(spark.createDataFrame(ROWS, to_spark(SCHEMA)), SCHEMA) is None
    assert cached_schema(cached.filter("id > 3"), SCHEMA) is None  # not cached as it is
    with_unknown = Schema.of(*SCHEMA.fields, NestedField.optional(6, "u", UNKNOWN))
    assert cached_schema(cached, with_unknown) is None


def test_struct_columns_get_aliases(spark: SparkSession, catalog: BaseCatalog) -> None:
    """``DataFrame.to`` rebuilds a struct column in a projection of its own."""
    schema = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(
        2, "st", StructType((NestedField.optional(3, "a", INT),))))
    df = spark.createDataFrame([(1, (2,)), (3, None)], to_spark(schema)).cache()
    try:
        df.count()
        assert cached_schema(df, schema) is None
        table = write(df, catalog.create_table("db.s", schema))
        for f in live_files(table):
            assert_field_ids_everywhere(f.file_path)
        assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "st": {"a": 2}}, {"id": 3, "st": None}]
    finally:
        df.unpersist()


def _without_ids(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` in the table's column order, its columns bare of metadata: what Spark writes
    when it drops the IDs a frame gave."""
    bare = df.select(*(f.name for f in schema.fields))
    return bare.sparkSession.createDataFrame(bare.rdd, T.StructType(
        [T.StructField(f.name, f.dataType, f.nullable) for f in bare.schema.fields]))


def test_ids_dropped_from_a_cached_frame_are_written_again_with_aliases(
        cached: DataFrame, catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    dropped: set[str] = set()
    monkeypatch.setattr(file_columns, "_DROPPED_BY", dropped)
    monkeypatch.setattr(native, "file_frame",
                        lambda df, schema: (_without_ids(df, schema), True))
    table = write(cached, _table(catalog))
    files = live_files(table)
    assert sorted(f.file_path for f in files) == _parquet_files(table)  # nothing else left
    for f in files:
        assert_field_ids_everywhere(f.file_path)
    assert _rows(table) == EXPECTED
    assert dropped == {cached.sparkSession.version}
    assert cached_schema(cached, SCHEMA) is None  # aliases from now on


def test_files_without_field_ids_are_never_committed(
        cached: DataFrame, catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "file_frame",
                        lambda df, schema: (_without_ids(df, schema), False))
    table = _table(catalog)
    with pytest.raises(MissingFieldIds, match="without the table's field IDs of column"):
        write(cached, table)
    assert table.refresh().current_snapshot() is None
    assert _parquet_files(table) == []
