"""A MERGE whose source's join columns fit a broadcast drops the target rows no source row
matches before the join (a left semi join with the broadcast source): the table holds what
SQL's MERGE leaves either way, and the cardinality check still sees every match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import CardinalityViolation
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spark.rowlevel.merge import MergeBuilder, merge
from icepark.spark.rowlevel.merge_keys import aggregating_tasks
from icepark.spark.session import default_parallelism, scoped_conf
from icepark.table.table import Table
from tests.spark.test_merge import SCHEMA, SOURCE_SCHEMA, Row, When, _sorted, reference

pytestmark = pytest.mark.spark

# more distinct source keys than merge_keys.IN_LIST_LIMIT: the target is pruned by their range
TARGET: list[Row] = [{"id": i, "cat": "abc"[i % 3], "x": i, "s": {"a": i % 4}}
                     for i in range(3000)]
SOURCE: list[Row] = [{"id": i, "cat": "abc"[i % 3], "x": 10_000 + i, "s": {"a": 9},
                      "op": "ud"[i // 2 % 2]} for i in range(1500, 4000, 2)]
CLAUSES = [When("matched", "delete", "s.op = 'd'", lambda t, s: s is not None and s["op"] == "d"),
           When("matched", "update", None, None),
           When("not matched", "insert", None, None)]
THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


def _make(tmp_path: Path, mode: str, name: str) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    table = catalog.create_table(f"db.{name}", SCHEMA, properties={
        "write.merge.mode": mode})
    arrow_schema = to_arrow_schema(table.schema())
    for start in (0, 1000, 2000):  # three files, the source's keys in the last two
        table.append(pa.Table.from_pylist(TARGET[start:start + 1000], schema=arrow_schema))
    return table


def _builder(spark: SparkSession, table: Table, source: list[Row]) -> MergeBuilder:
    builder = merge(spark, table, spark.createDataFrame(source, SOURCE_SCHEMA), "t.id = s.id")
    for clause in CLAUSES:
        builder = clause.add(builder)
    return builder


def _plan(spark: SparkSession, table: Table) -> str:
    changes = _builder(spark, table, SOURCE)._changes(table.metadata, "main")
    return str(changes.rows._jdf.queryExecution().optimizedPlan().toString())


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_a_broadcast_source_narrows_the_target_and_changes_nothing_else(
        spark: SparkSession, tmp_path: Path, mode: str) -> None:
    narrow, wide = _make(tmp_path, mode, "narrow"), _make(tmp_path, mode, "wide")
    assert "LeftSemi" in _plan(spark, narrow)
    expected = _sorted(reference(TARGET, SOURCE, CLAUSES))
    result = _builder(spark, narrow, SOURCE).execute()
    assert (result.updated_rows, result.deleted_rows, result.inserted_rows) == (375, 375, 500)
    assert _sorted(narrow.scan().to_arrow().to_pylist()) == expected

    before = str(spark.conf.get(THRESHOLD))
    spark.conf.set(THRESHOLD, "-1")  # no broadcasts: the join shuffles every target row
    try:
        assert "LeftSemi" not in _plan(spark, wide)
        other = _builder(spark, wide, SOURCE).execute()
    finally:
        spark.conf.set(THRESHOLD, before)
    assert (other.updated_rows, other.deleted_rows, other.inserted_rows) == (375, 375, 500)
    assert _sorted(wide.scan().to_arrow().to_pylist()) == expected


def test_not_matched_by_source_reads_every_target_row(spark: SparkSession,
                                                      tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", "t")
    builder = (merge(spark, table, spark.createDataFrame(SOURCE, SOURCE_SCHEMA), "t.id = s.id")
               .when_matched_update_all().when_not_matched_by_source_delete())
    plan = builder._changes(table.metadata, "main").rows._jdf.queryExecution()
    assert "LeftSemi" not in str(plan.optimizedPlan().toString())


def test_the_cardinality_check_sees_every_match(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", "t")
    twice: list[Any] = [*SOURCE, {**SOURCE[3], "x": -1}]  # two source rows for one target row
    before = table.metadata.current_snapshot_id
    with pytest.raises(CardinalityViolation):
        _builder(spark, table, twice).execute()
    assert table.refresh().metadata.current_snapshot_id == before


def test_key_bounds_of_a_small_source_are_aggregated_in_one_task(spark: SparkSession) -> None:
    source = spark.createDataFrame(SOURCE, SOURCE_SCHEMA)
    many = default_parallelism(spark)
    assert aggregating_tasks(source) == many  # rows from the driver: Spark knows no size
    source.cache().count()
    try:
        small = source.select("*")  # a new plan, reading the built cache: its measured size
        assert aggregating_tasks(small) == 1  # one stage, no exchange to combine results
        with scoped_conf(spark, {THRESHOLD: "-1"}):  # broadcasts off: no size is small
            assert aggregating_tasks(small) == many
    finally:
        source.unpersist()
    assert aggregating_tasks(spark.range(10**9)) == many  # 8 GB by Spark's estimate
