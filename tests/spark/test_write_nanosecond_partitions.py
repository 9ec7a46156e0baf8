"""Spark writes to v3 tables partitioned and sorted by nanosecond timestamps, end to end.

``icepark.spark.write`` computes the partition values as Spark Columns on the exact nanoseconds
(:mod:`icepark.spark.transforms`); the Arrow writer (``table.append``) computes them with its
kernels. For the same rows both give the same partitions, the Spark files are sorted by the
exact nanoseconds (sub-microsecond differences too), and the rows read back exactly: from
``LongType`` nanoseconds and from Spark timestamps alike."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

import icepark.spark as ips
from icepark.catalog import BaseCatalog, load_catalog
from icepark.io.arrow.transforms import to_python_values
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder, SortOrderBuilder
from icepark.spec.types import LONG, TIMESTAMP_NS, TIMESTAMPTZ_NS, NestedField
from icepark.table.table import Table

pytestmark = pytest.mark.spark

NS = 1_510_871_468_000_001_001  # 2017-11-16T22:31:08.000001001
DAY, HOUR = 86_400 * 10**9, 3_600 * 10**9
MAX, MIN = 2**63 - 1, -(2**63)
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "ts", TIMESTAMP_NS),
                   NestedField.optional(3, "tz", TIMESTAMPTZ_NS))
# Several values in one microsecond, given out of order (one bucket, one day: one file that
# must come out sorted by the nanoseconds); 1969-12-31T23:59:59.999999999 (day -1); day edges.
NANOS: list[int | None] = [
    NS + 2, NS, NS + 1, NS - 1001, NS + 998, NS - 1,
    -1, -1002, -1500, -1001, -1999, -1000, 0, 1, 999,
    -DAY, -DAY - 1, DAY - 1, DAY, -HOUR - 1, MAX, MIN, MAX - 1, MIN + 1, None,
]


MICROS: list[int | None] = [1_510_871_468_000_001, -1, -1001, 0, 3_599_999_999, -3_600_000_001,
                            None, 9_223_372_036_854_775, -9_223_372_036_854_775]
"""Spark timestamps' microseconds, to the edges of what nanoseconds in a long hold."""


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    cat = load_catalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                       warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def live_files(table: Table) -> list[DataFile]:
    snapshot = table.refresh().metadata.current_snapshot()
    specs = {s.spec_id: s for s in table.metadata.partition_specs}
    return [e.data_file for m in snapshot_manifests(table.io, snapshot)
            for e in read_manifest(table.io, m, specs_by_id=specs, discard_deleted=True)]


def partitions(table: Table) -> Counter[tuple[Any, ...]]:
    """Rows per partition tuple of the table's live data files."""
    counts: Counter[tuple[Any, ...]] = Counter()
    for f in live_files(table):
        counts[f.partition] += f.record_count
    return counts


def rows_read(table: Table) -> list[tuple[int, int | None, int | None]]:
    """``table.scan().to_arrow()``'s rows by id, the timestamps as their nanoseconds."""
    out = table.refresh().scan().to_arrow().sort_by("id")
    return list(zip(out.column("id").to_pylist(), out.column("ts").cast(pa.int64()).to_pylist(),
                    out.column("tz").cast(pa.int64()).to_pylist(), strict=True))


def twins(catalog: BaseCatalog, spec: PartitionSpec, order: SortOrder) -> tuple[Table, Table]:
    """Two empty v3 tables of :data:`SCHEMA`, ``spec`` and ``order``: Spark's and Arrow's."""
    spark_table, arrow_table = (catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec,
                                                     sort_order=order, format_version=3)
                                for name in ("spark", "arrow"))
    return spark_table, arrow_table


def arrow_rows(rows: list[tuple[int, int | None, int | None]]) -> pa.Table:
    ids, ts, tz = zip(*rows, strict=True)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("ns")),
                     "tz": pa.array(tz, pa.int64()).cast(pa.timestamp("ns", "UTC"))})


def spark_timestamps(spark: SparkSession,
                     rows: list[tuple[int, int | None, int | None]]) -> DataFrame:
    """``rows`` (whole microseconds in nanoseconds) as Spark timestamps: ``ts`` as
    ``TimestampNTZType``, ``tz`` as ``TimestampType``, in two tasks."""
    df = spark.createDataFrame(
        [(i, None if ts is None else ts // 1000, None if tz is None else tz // 1000)
         for i, ts, tz in rows], "id long, ts long, tz long")
    return df.select("id", F.timestamp_micros("ts").cast("timestamp_ntz").alias("ts"),
                     F.timestamp_micros("tz").alias("tz")).repartition(2)


def check_files(table: Table, column: str, descending: bool = False) -> None:
    """Every data file holds only rows of its partition (by the spec's Python transforms),
    sorted by the exact nanoseconds of ``column`` (nulls first ascending, last descending),
    and records the sort order."""
    schema, spec = table.schema(), table.spec()
    for f in live_files(table):
        data = pq.read_table(f.file_path)
        for k, field in enumerate(spec.fields):
            source = schema.find_field(field.source_id)
            values = to_python_values(data.column(source.name), source.field_type)
            assert {field.transform.apply(source.field_type, v) for v in values} == \
                {f.partition[k]}, (field, f.file_path)
        nanos = data.column(column).cast(pa.int64()).to_pylist()
        present = [n for n in nanos if n is not None]
        nulls = [None] * (len(nanos) - len(present))
        ordered = sorted(present, reverse=descending)
        assert nanos == (ordered + nulls if descending else nulls + ordered), f.file_path
        assert f.sort_order_id == table.sort_order().order_id


def test_day_and_bucket_partitions_of_long_nanoseconds(spark: SparkSession,
                                                       catalog: BaseCatalog) -> None:
    """``day(ts)`` and ``bucket(4, ts)`` of a ``timestamp_ns`` column given as ``LongType``
    nanoseconds, sorted by ``ts``: the data files' partition values are the Arrow writer's for
    the same rows, each file is sorted by the exact nanoseconds, and the rows read back
    exactly."""
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("ts", 4).build()
    order = SortOrderBuilder(SCHEMA).asc("ts").build()
    spark_table, arrow_table = twins(catalog, spec, order)
    rows = [(i, n, None if n is None else -n if n != MIN else MAX) for i, n in enumerate(NANOS)]
    df = spark.createDataFrame(rows, "id long, ts long, tz long").repartition(3)
    ips.write(df, spark_table)
    arrow_table.append(arrow_rows(rows))

    got = partitions(spark_table)
    assert got == partitions(arrow_table)
    assert got[(-1, spec.fields[1].transform.apply(TIMESTAMP_NS, -1))] >= 1  # 23:59:59.999999999
    assert rows_read(spark_table) == rows_read(arrow_table) == rows
    check_files(spark_table, "ts")


def test_spark_timestamps_to_hour_year_and_bucket_partitions(spark: SparkSession,
                                                             catalog: BaseCatalog) -> None:
    """Spark timestamps (``TimestampNTZType``, ``TimestampType``) written to ``timestamp_ns`` and
    ``timestamptz_ns`` columns partitioned by ``hour(ts)``, ``year(tz)`` and ``bucket(8, tz)``,
    sorted by ``tz`` descending: partitions as the Arrow writer's of ``micros * 1000``, rows
    exact."""
    spec = PartitionSpecBuilder(SCHEMA).hour("ts").year("tz").bucket("tz", 8).build()
    order = SortOrderBuilder(SCHEMA).desc("tz").build()
    spark_table, arrow_table = twins(catalog, spec, order)
    rows = [(i, None if m is None else m * 1000, None if m is None else (m - i % 2) * 1000)
            for i, m in enumerate(MICROS)]
    ips.write(spark_timestamps(spark, rows), spark_table)
    arrow_table.append(arrow_rows(rows))

    assert partitions(spark_table) == partitions(arrow_table)
    assert rows_read(spark_table) == rows_read(arrow_table) == rows
    check_files(spark_table, "tz", descending=True)


def test_identity_partitions_of_nanoseconds(spark: SparkSession, catalog: BaseCatalog) -> None:
    """``identity(ts)`` and ``identity(tz)`` from long nanoseconds and from Spark timestamps:
    the partition values are the long nanoseconds, as the Arrow writer's."""
    spec = PartitionSpecBuilder(SCHEMA).identity("ts").identity("tz").build()
    order = SortOrderBuilder(SCHEMA).asc("ts").build()
    spark_table, arrow_table = twins(catalog, spec, order)
    longs = [(i, n, None if n is None else n // 7) for i, n in enumerate(NANOS)]
    stamps = [(100 + i, None if m is None else m * 1000, None if m is None else m // 2 * 1000)
              for i, m in enumerate(MICROS)]
    ips.write(spark.createDataFrame(longs, "id long, ts long, tz long"), spark_table)
    ips.write(spark_timestamps(spark, stamps), spark_table)
    arrow_table.append(arrow_rows(longs)).append(arrow_rows(stamps))

    got = partitions(spark_table)
    assert got == partitions(arrow_table)
    assert set(got) == {(ts, tz) for _, ts, tz in longs + stamps}
    assert rows_read(spark_table) == rows_read(arrow_table) == sorted(longs + stamps)
    check_files(spark_table, "ts")
