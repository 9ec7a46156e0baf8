"""How a position delete job spreads the positions it sorts over Spark partitions."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

import icepark.spark as ips
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.reader.deletes import FILE_NUMBER
from icepark.spark.reader.scan_rows import ROW_POSITION
from icepark.spark.rowlevel.modes import DELETE_GRANULARITY
from icepark.spark.rowlevel.positions import _position_task, sorted_positions
from icepark.spark.session import default_parallelism

pytestmark = pytest.mark.spark

FILES = 4


@pytest.mark.parametrize(("granularity", "partitions"), [("file", 2), ("partition", 1)])
def test_file_scoped_positions_are_spread_over_tasks_a_file_in_one(
        spark: SparkSession, tmp_path: Path, granularity: str, partitions: int) -> None:
    assert default_parallelism(spark) == 2  # the test session's local[2]
    catalog = FilesystemCatalog("c", {"warehouse": str(tmp_path)})
    catalog.create_namespace("db")
    rows = spark.range(0, FILES * 10, 1, FILES).selectExpr("id")
    table = catalog.create_table("db.t", ips.to_iceberg(rows.schema),
                                 properties={DELETE_GRANULARITY: granularity})
    table = ips.write(rows, table)
    tasks = sorted(table.scan().plan_files(), key=lambda t: t.data_file.file_path)
    files = [t.data_file for t in tasks]
    assert len(files) == FILES
    positions = spark.createDataFrame([(n, p) for n in range(FILES) for p in (7, 1, 4)],
                                      f"{FILE_NUMBER} int, {ROW_POSITION} long")
    out = sorted_positions(spark, positions, files, tasks, _position_task(table, tasks), ())
    found = out.select(F.spark_partition_id().alias("part"), "file_path", "pos").collect()
    by_file: dict[str, set[int]] = {}
    for row in found:
        by_file.setdefault(row.file_path, set()).add(row.part)
    # a file's positions in one partition, in order: its delete file is written by one task
    assert sorted(by_file) == [f.file_path for f in files]
    assert all(len(parts) == 1 for parts in by_file.values())
    assert len({p for parts in by_file.values() for p in parts}) == partitions
    for part in {row.part for row in found}:
        mine = [(row.file_path, row.pos) for row in found if row.part == part]
        assert mine == sorted(mine)
