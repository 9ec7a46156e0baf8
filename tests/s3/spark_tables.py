"""Tables in an S3 bucket for the Spark tests of tests/s3: a SQL catalog (a local SQLite file)
whose warehouse is the bucket, rows computed in Python, and the two independent views of a
table's rows (icepark's Arrow reader, Spark's collect)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from tools.s3_server import S3Server

from icepark.catalog import load_catalog
from icepark.io.fileio import s3_options
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.table import Table

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING),
                   NestedField.optional(3, "amount", LONG))
KINDS = ("a", "b", "c")


def row(i: int) -> tuple[int, str, int | None]:
    return i, KINDS[i % 3], None if i % 10 == 0 else i * 3


def frame(spark: SparkSession, start: int, stop: int) -> Any:
    return spark.sql(f"SELECT id, element_at(array('a', 'b', 'c'), CAST(id % 3 AS INT) + 1) "
                     f"AS kind, IF(id % 10 = 0, NULL, id * 3) AS amount "
                     f"FROM range({start}, {stop})")


def s3_table(server: S3Server, bucket: str, tmp_path: Path, version: int = 2,
           **props: str) -> Table:
    catalog = load_catalog("s3spark", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=f"s3://{bucket}/wh", **server.properties())
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("kind").build()
    return catalog.create_table("db.t", SCHEMA, partition_spec=spec, properties=props,
                                format_version=version)  # type: ignore[arg-type]  # 2 or 3


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def arrow_rows(table: Table) -> list[tuple[Any, ...]]:
    got = table.refresh().scan().to_arrow()
    return sorted(zip(*(got.column(f.name).to_pylist() for f in SCHEMA.fields), strict=True))


def assert_written_by_icepark(server: S3Server, table: Table) -> None:
    """Every live data file is in the bucket and was written by icepark's writer (pyarrow),
    not Spark's (parquet-mr), with a field ID on every column."""
    fs = pafs.S3FileSystem(**s3_options(server.properties()))
    for task in table.refresh().scan().plan_files():
        path = task.data_file.file_path
        assert path.startswith(f"{table.location}/data/")
        meta = pq.read_metadata(path.removeprefix("s3://"), filesystem=fs)
        assert meta.created_by.startswith("parquet-cpp-arrow"), meta.created_by
        assert all(f.metadata and b"PARQUET:field_id" in f.metadata
                   for f in meta.schema.to_arrow_schema())
