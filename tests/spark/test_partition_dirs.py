"""Partition directories are the spec's human-readable partition paths, named by the partition
fields, alike for Spark's own writer, the Python-worker writer and the Arrow writer:
``data/ts_day=2024-03-05/country=us/``; the files' partition values stay exact."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import BaseCatalog, load_catalog
from icepark.spark.writer.native import NATIVE_WRITER_PROPERTY
from icepark.spark.writer.write import JOB_ID_PROPERTY, write
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, NestedField
from icepark.table.table import Table
from tests.spark.test_write import expected, live_files, rows

pytestmark = pytest.mark.spark

UTC = dt.UTC
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "country", STRING),
                   NestedField.optional(3, "ts", TIMESTAMPTZ))
SPEC = PartitionSpecBuilder(SCHEMA).day("ts", "ts_day").identity("country").build()
ROWS = [(1, "us", dt.datetime(2024, 3, 5, 10, tzinfo=UTC)),
        (2, "a b/c=d%", dt.datetime(2024, 3, 5, 23, tzinfo=UTC)),
        (3, None, dt.datetime(2024, 3, 6, 1, tzinfo=UTC)),
        (4, "", None)]
DIRS = {"ts_day=2024-03-05/country=us", "ts_day=2024-03-05/country=a%20b%2Fc%3Dd%25",
        "ts_day=2024-03-06/country=null", "ts_day=null/country="}
WRITERS = ["spark", "python", "arrow"]


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    cat = load_catalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                       warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _written(spark: SparkSession, catalog: BaseCatalog, writer: str) -> Table:
    table = catalog.create_table(f"db.{writer}", SCHEMA, partition_spec=SPEC)
    if writer == "python":
        table.set_properties({NATIVE_WRITER_PROPERTY: "false"})
    if writer == "arrow":
        table.append(pa.table({"id": [r[0] for r in ROWS], "country": [r[1] for r in ROWS],
                               "ts": pa.array([r[2] for r in ROWS], pa.timestamp("us", "UTC"))}))
    else:
        write(spark.createDataFrame(ROWS, "id long, country string, ts timestamp"), table)
    return table.refresh()


def _directories(table: Table) -> set[str]:
    data = Path(table.location.removeprefix("file://")) / "data"
    return {str(p.parent.relative_to(data)) for p in data.rglob("*") if p.is_file()}


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_names_directories_by_the_spec(spark: SparkSession,
                                                    catalog: BaseCatalog, writer: str) -> None:
    table = _written(spark, catalog, writer)
    assert _directories(table) == DIRS  # nothing else: no job directory, no checksum files
    files = live_files(table)
    assert {f.partition for f in files} == {(19787, "us"), (19787, "a b/c=d%"),
                                            (19788, None), (None, "")}
    for f in files:
        assert Path(f.file_path.removeprefix("file://")).is_file()
        assert "/".join(f.file_path.split("/")[-3:-1]) in DIRS
    assert rows(table) == expected([{"id": i, "country": c, "ts": ts} for i, c, ts in ROWS])


def test_spark_writer_moves_its_files_out_of_the_job_directory(spark: SparkSession,
                                                              catalog: BaseCatalog) -> None:
    table = _written(spark, catalog, "spark")
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    job = snapshot.summary.properties[JOB_ID_PROPERTY]
    data = Path(table.location.removeprefix("file://")) / "data"
    assert not (data / job).exists()
    assert all(f.file_path.rsplit("/", 1)[-1].startswith(f"{job}-") for f in live_files(table))


def test_transforms_name_their_values(spark: SparkSession, catalog: BaseCatalog) -> None:
    schema = Schema.of(*(NestedField.optional(i + 1, name, t) for i, (name, t) in enumerate(
        [("id", LONG), ("country", STRING), ("h", TIMESTAMPTZ), ("m", TIMESTAMPTZ),
         ("y", TIMESTAMPTZ), ("at", TIMESTAMPTZ)])))
    spec = (PartitionSpecBuilder(schema).hour("h").month("m").year("y")
            .bucket("id", 4, "id_bucket").truncate("country", 1, "c1").identity("at").build())
    table = catalog.create_table("db.t", schema, partition_spec=spec)
    ts = dt.datetime(2024, 3, 5, 10, tzinfo=UTC)
    write(spark.createDataFrame([(1, "us", ts, ts, ts, ts)],
                                "id long, country string, h timestamp, m timestamp, "
                                "y timestamp, at timestamp"), table)
    assert _directories(table.refresh()) == {
        "h_hour=2024-03-05-10/m_month=2024-03/y_year=2024/id_bucket=0/c1=u/"
        "at=2024-03-05T10%3A00%3A00%2B00%3A00"}
