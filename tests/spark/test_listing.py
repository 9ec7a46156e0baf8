"""A scan's many local files are listed on the driver, not in a Spark job; a session keeps the
relations it resolved over the same files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

import icepark.spark as ips
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.reader.listing import (
    LISTING_THRESHOLD,
    SPARK_LISTING_THRESHOLD,
    Relations,
    read_parquet,
)
from icepark.spark.reader.scan_rows import scan_rows

pytestmark = pytest.mark.spark

FILES = SPARK_LISTING_THRESHOLD + 8
R = TypeVar("R")


def _jobs_while(spark: SparkSession, group: str, build: Callable[[], R]) -> tuple[R, list[int]]:
    """What ``build()`` returned, and the Spark jobs it ran (by a job group of its own)."""
    context = spark.sparkContext
    context.setJobGroup(group, "listing test")
    try:
        built = build()
    finally:
        context.setJobGroup("", "")
    return built, list(context.statusTracker().getJobIdsForGroup(group))


def test_many_local_files_are_read_without_a_listing_job(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    catalog = FilesystemCatalog("c", {"warehouse": str(tmp_path)})
    catalog.create_namespace("db")
    rows = spark.range(0, FILES * 5, 1, FILES).selectExpr("id", "id * 2 AS x")
    table = catalog.create_table("db.t", ips.to_iceberg(rows.schema))
    table = ips.write(rows, table)
    assert sum(1 for _ in table.scan().plan_files()) == FILES
    own = spark.conf.get(LISTING_THRESHOLD)

    frame, jobs = _jobs_while(spark, "icepark-listing", lambda: ips.read(spark, table))
    assert jobs == []  # Spark lists more than 32 paths in a job of its own unless told not to
    assert spark.conf.get(LISTING_THRESHOLD) == own  # the session's setting is back
    assert frame.selectExpr("count(*)", "sum(x)").collect()[0] == (FILES * 5, sum(
        2 * i for i in range(FILES * 5)))


def test_a_relation_over_the_same_files_is_resolved_once(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    catalog = FilesystemCatalog("c", {"warehouse": str(tmp_path)})
    catalog.create_namespace("db")
    rows = spark.range(0, 40, 1, 4).selectExpr("id", "id * 2 AS x")
    table = ips.write(rows, catalog.create_table("db.t", ips.to_iceberg(rows.schema)))
    paths = [t.data_file.file_path for t in table.scan().plan_files()]
    read_type = T.StructType([T.StructField("x", T.LongType())])

    first = read_parquet(spark, read_type, paths)
    assert read_parquet(spark, read_type, list(paths)) is first  # the same relation, kept
    assert read_parquet(spark, read_type, paths[:2]) is not first  # other files
    other_type = T.StructType([T.StructField("id", T.LongType())])
    assert read_parquet(spark, other_type, paths) is not first  # another read schema
    assert read_parquet(spark.newSession(), read_type, paths) is not first  # per session

    assert ips.read(spark, table).selectExpr("sum(x)").collect()[0][0] == 2 * sum(range(40))
    table = ips.write(spark.range(40, 50, 1, 1).selectExpr("id", "id * 2 AS x"), table)
    # the appended file makes another relation: the new rows are read
    assert ips.read(spark, table).selectExpr("sum(x)").collect()[0][0] == 2 * sum(range(50))
    assert ips.read(spark, table, snapshot_id=table.metadata.snapshots[0].snapshot_id) \
        .selectExpr("sum(x)").collect()[0][0] == 2 * sum(range(40))


def test_rows_of_a_kept_relation_know_their_schema(spark: SparkSession, tmp_path: Path) -> None:
    """The rows of one relation the session keeps, filtered or not, have its schema: known
    without asking Spark again; rows that are more than the relation do not claim one."""
    catalog = FilesystemCatalog("c", {"warehouse": str(tmp_path)})
    catalog.create_namespace("db")
    rows = spark.range(0, 40, 1, 4).selectExpr("id", "id * 2 AS x")
    table = ips.write(rows, catalog.create_table("db.t", ips.to_iceberg(rows.schema)))
    tasks = list(table.scan().plan_files())
    schema = table.schema()
    for condition in (None, F.col("x") < 20):
        scanned = scan_rows(spark, table, tasks, schema, ["*"], condition=condition)
        assert scanned.relation is not None
        assert scanned.spark_schema == scanned.rows.schema  # names, types, field IDs
        assert scanned.rows.count() == (40 if condition is None else 10)
    positions = scan_rows(spark, table, tasks, schema, ["*"], positions=True)
    assert positions.relation is None
    assert positions.spark_schema == positions.rows.schema
    only_x = scan_rows(spark, table, tasks, schema, ["x"], metadata_columns=["_pos"])
    assert only_x.relation is None
    assert only_x.spark_schema == only_x.rows.schema
    frame = ips.read(spark, table, row_filter="x < 20")
    assert [f.name for f in frame.schema.fields] == ["id", "x"]
    assert frame.count() == 10


def test_relations_are_bounded_by_entries_and_paths() -> None:
    relations = Relations(entries=2, paths=5)
    frames = [cast(DataFrame, object()) for _ in range(4)]  # stand-ins: kept as they are
    relations.put(("s", ("a",)), frames[0])
    relations.put(("s", ("b",)), frames[1])
    assert relations.get(("s", ("a",))) is frames[0]  # now the most recently used
    relations.put(("s", ("c",)), frames[2])
    assert relations.get(("s", ("b",))) is None  # the least recently used went
    assert relations.get(("s", ("a",))) is frames[0]
    relations.put(("s", ("d", "e", "f", "g")), frames[3])  # 3 entries: the oldest goes
    assert relations.get(("s", ("c",))) is None
    assert len(relations) == 2  # ("a",) and the 4 paths: 5 paths, as many as allowed
    relations.put(("s", ("h",)), frames[1])  # 6 paths: the least recently used goes
    assert relations.get(("s", ("a",))) is None
    assert relations.get(("s", ("d", "e", "f", "g"))) is frames[3]
    relations.put(("s", tuple("uvwxyz")), frames[0])
    assert relations.get(("s", tuple("uvwxyz"))) is None  # more paths than all: never kept
    assert relations.get(("s", ("h",))) is frames[1]
