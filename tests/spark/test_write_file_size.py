"""``write.target-file-size-bytes`` on the native write path: Spark's ``maxRecordsPerFile``
from the expected bytes per row (the schema's widths for an empty table, else the table's own
data files), files of about the target size, readable, with their footers' metrics."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.catalog import BaseCatalog
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spark.writer.file_size import (
    VARIABLE_WIDTH_BYTES,
    expected_row_bytes,
    max_records_per_file,
    schema_row_bytes,
)
from icepark.spark.writer.write import JOB_ID_PROPERTY, write
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.table import Table
from tests.spark.test_write import catalog, live_files

pytestmark = pytest.mark.spark
__all__ = ["catalog"]  # the fixture, shared with test_write

req, opt = NestedField.required, NestedField.optional
SCHEMA = Schema.of(req(1, "id", LONG), opt(2, "s", STRING), opt(3, "v", DOUBLE),
                   opt(4, "cat", STRING))
TARGET = 64 * 1024
TARGET_PROPERTY = "write.target-file-size-bytes"


def _rows(start: int, count: int) -> list[dict[str, Any]]:
    return [{"id": i, "s": f"value-{(i * 7919) % 100_003}", "v": None if i % 9 == 0 else i / 3,
             "cat": "ab"[i % 2]} for i in range(start, start + count)]


def _frame(spark: SparkSession, start: int, count: int) -> DataFrame:
    """``count`` rows from ``start`` in one task, ``s`` 16 hex digits of a hash (incompressible,
    so that files grow with their rows)."""
    ids = spark.range(start, start + count, numPartitions=1)
    return ids.select(
        F.col("id"), F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 16).alias("s"),
        F.when(F.col("id") % 9 == 0, F.lit(None)).otherwise(F.col("id") / 3).alias("v"),
        F.when(F.col("id") % 2 == 0, F.lit("a")).otherwise(F.lit("b")).alias("cat"))


def _write(spark: SparkSession, table: Table, start: int, count: int) -> list[DataFile]:
    before = {f.file_path for f in live_files(table)} if table.current_snapshot() else set()
    write(_frame(spark, start, count), table)
    return [f for f in live_files(table) if f.file_path not in before]


def _assert_metrics(files: list[DataFile], ids: range) -> None:
    """Each file holds what its record says (rows, id bounds, null counts); together, ``ids``."""
    found: list[int] = []
    for f in files:
        data = pq.read_table(f.file_path)
        assert data.num_rows == f.record_count
        assert f.lower_bounds is not None and f.upper_bounds is not None
        assert f.null_value_counts is not None and f.value_counts is not None
        lo, hi = pc.min_max(data["id"]).values()
        assert f.lower_bounds[1] == lo.as_py().to_bytes(8, "little", signed=True)
        assert f.upper_bounds[1] == hi.as_py().to_bytes(8, "little", signed=True)
        assert f.value_counts[3] == data.num_rows
        assert f.null_value_counts[3] == data["v"].null_count
        found.extend(data["id"].to_pylist())
    assert sorted(found) == list(ids)


# -- the expected row size ----------------------------------------------------------------------


def test_schema_row_bytes() -> None:
    assert schema_row_bytes(SCHEMA) == 8 + VARIABLE_WIDTH_BYTES + 8 + VARIABLE_WIDTH_BYTES
    nested = Schema.of(
        opt(1, "b", BOOLEAN), opt(2, "i", INT), opt(3, "d", DATE), opt(4, "u", UUID),
        opt(5, "d9", PrimitiveType.decimal(9, 2)), opt(6, "d18", PrimitiveType.decimal(18, 2)),
        opt(7, "d38", PrimitiveType.decimal(38, 2)), opt(8, "f", PrimitiveType.fixed(3)),
        opt(9, "st", StructType((opt(10, "a", LONG), opt(11, "b", INT)))),
        opt(12, "l", ListType(13, INT, element_required=False)),
        opt(14, "m", MapType(15, INT, 16, LONG, value_required=False)))
    assert schema_row_bytes(nested) == 1 + 4 + 4 + 16 + 4 + 8 + 16 + 3 + 12 + 4 * 4 + 4 * 12


def test_expected_row_bytes_from_schema_summary_and_manifests(catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, format_version=2)
    assert expected_row_bytes(table.metadata, table.io, None) == schema_row_bytes(SCHEMA)
    assert max_records_per_file(table.metadata, table.io, None) == \
        512 * 1024 * 1024 // schema_row_bytes(SCHEMA)
    arrow_schema = to_arrow_schema(SCHEMA)
    table.append(pa.Table.from_pylist(_rows(0, 500), schema=arrow_schema))
    table.append(pa.Table.from_pylist(_rows(500, 300), schema=arrow_schema))
    files = live_files(table)
    measured = sum(f.file_size_in_bytes for f in files) / sum(f.record_count for f in files)
    snapshot = table.current_snapshot()
    assert expected_row_bytes(table.metadata, table.io, snapshot) == measured
    # with a delete file, the summary's total size counts it: the manifests are read instead
    writer = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                  table.schema(), table.spec(), (), table.properties,
                                  equality_ids=[1])
    writer.write(pa.table({"id": pa.array([3], pa.int64())}))
    with table.new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    assert expected_row_bytes(table.metadata, table.io, table.current_snapshot()) == measured
    # the caller's hint wins; the target property is applied
    table.set_properties({TARGET_PROPERTY: "1000"})
    assert max_records_per_file(table.metadata, table.io, snapshot, row_bytes=7.0) == 142
    assert max_records_per_file(table.metadata, table.io, snapshot, row_bytes=5000.0) == 1


# -- files of about the target size ------------------------------------------------------------


def test_target_size_splits_native_files(spark: SparkSession, catalog: BaseCatalog) -> None:
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build()
    table = catalog.create_table("db.t", SCHEMA, partition_spec=spec,
                                 properties={TARGET_PROPERTY: str(TARGET)})
    # an empty table: rows per file from the schema's widths, files below the target
    first = _write(spark, table, 0, 5000)
    per_file = TARGET // schema_row_bytes(SCHEMA)
    assert all(f.record_count <= per_file for f in first)
    assert len(first) == 2 * math.ceil(2500 / per_file)  # one task, two partitions
    assert all(f.file_size_in_bytes < TARGET for f in first)
    _assert_metrics(first, range(5000))
    # then from the table's own files: about the target size each (measured: 51 KB of 64 KB,
    # as the small files' footers inflate their bytes per row); one task, so one file of each
    # partition holds the remainder
    second = _write(spark, table, 5000, 40_000)
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    job = snapshot.summary.properties[JOB_ID_PROPERTY]
    assert all(f.file_path.rsplit("/", 1)[-1].startswith(f"{job}-")  # Spark's own files
               and f.file_path.endswith(".zstd.parquet") for f in second)
    sizes = sorted(f.file_size_in_bytes for f in second)
    assert len(second) >= 10
    assert all(TARGET // 2 < size < TARGET * 5 // 4 for size in sizes[2:])
    _assert_metrics(second, range(5000, 45_000))
    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert sorted(theirs["id"].to_pylist()) == list(range(45_000))
