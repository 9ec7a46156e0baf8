"""A scan's many local files are listed on the driver, not in a Spark job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.reader.listing import LISTING_THRESHOLD, SPARK_LISTING_THRESHOLD

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
