"""compute_table_stats and compute_partition_stats through Spark: each column's sketch holds
exactly the hashes of its distinct non-null values serialized as Appendix D says, estimates stay
within the sketch's error, the files are registered on the right snapshot and survive later
commits, and bad input fails with a typed error before anything is written."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import NoSuchSnapshot, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.puffin.reader import PuffinReader
from icepark.io.puffin.theta import THETA_BLOB_TYPE, ThetaAccumulator, estimate, ndv
from icepark.spark.maintenance.stats import compute_partition_stats, compute_table_stats
from icepark.spec.bounds import to_bytes
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.maintenance.partition_stats import read_partition_stats
from icepark.table.maintenance.table_stats import read_theta_sketches
from icepark.table.table import Table

pytestmark = pytest.mark.spark

DECIMAL = PrimitiveType.decimal(10, 2)
FIXED = PrimitiveType.fixed(4)
COLUMNS: list[tuple[str, PrimitiveType, list[Any]]] = [
    ("i", INT, [1, -1, 2**31 - 1, 0]),
    ("l", LONG, [1, -1, 2**63 - 1, 7]),
    ("f", FLOAT, [1.5, -0.0, 0.0, math.inf]),
    ("d", DOUBLE, [1.5, -0.0, 0.0, -2.25]),
    ("b", BOOLEAN, [True, False]),
    ("s", STRING, ["a", "ü", "three", "日本"]),
    ("bin", BINARY, [b"\x00", b"\xff\xfe", b"abc"]),
    ("fx", FIXED, [b"abcd", b"\x00\x00\x00\x01"]),
    ("u", UUID, [uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
                 uuid.UUID("00000000-0000-0000-0000-000000000001")]),
    ("dec", DECIMAL, [Decimal("-1.00"), Decimal("12345678.99"), Decimal("0.01")]),
    ("dt", DATE, [0, -1, 19000]),
    ("ts", TIMESTAMP, [0, -1, 1_700_000_000_123_456]),
    ("tz", TIMESTAMPTZ, [5, 1_700_000_000_000_000]),
]
NANOS = ("ns", TIMESTAMP_NS, [1, -1, 1_700_000_000_123_456_789])


def _catalog(tmp_path: Path) -> Any:
    catalog = load_catalog("stats", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    return catalog


def _typed_table(tmp_path: Path, version: int) -> tuple[Table, list[tuple[str, PrimitiveType,
                                                                          list[Any]]]]:
    columns = [*COLUMNS, NANOS] if version >= 3 else COLUMNS
    fields = [NestedField.optional(i + 1, name, t) for i, (name, t, _) in enumerate(columns)]
    struct = NestedField.optional(100, "st", StructType((NestedField.optional(101, "a", INT),)))
    tags = NestedField.optional(102, "tags", ListType(103, STRING, element_required=False))
    schema = Schema.of(*fields, struct, tags)
    table = _catalog(tmp_path).create_table("db.typed", schema, format_version=version)
    arrow_schema = to_arrow_schema(table.schema())
    # every value twice, in two files, with nulls in between: duplicates and nulls do not count
    rows = max(len(values) for _, _, values in columns)
    for _ in range(2):
        data: dict[str, Any] = {
            name: [values[r % len(values)] for r in range(rows)] + [None]
            for name, _, values in columns}
        data["st"] = [{"a": r % 3} for r in range(rows)] + [None]
        data["tags"] = [["x"]] * (rows + 1)
        table.append(pa.Table.from_pydict(data, schema=arrow_schema))
    return table.refresh(), columns


def _expected_sketch(t: PrimitiveType, values: list[Any]) -> bytes:
    accumulator = ThetaAccumulator()
    accumulator.update_bytes(to_bytes(t, v) for v in values)
    return accumulator.to_bytes()


@pytest.mark.parametrize("version", [2, 3])
def test_each_type_is_sketched_from_its_single_value_serialization(
        spark: SparkSession, tmp_path: Path, version: int) -> None:
    table, columns = _typed_table(tmp_path, version)
    result = compute_table_stats(spark, table)
    snapshot = table.current_snapshot()
    assert snapshot is not None and result.snapshot_id == snapshot.snapshot_id
    # the default: every top-level primitive column (not the struct, not the list)
    assert list(result.ndv) == [name for name, _, _ in columns]
    assert result.ndv == {name: len(values) for name, _, values in columns}
    assert result.statistics_path is not None
    assert result.statistics_path.startswith(f"{table.location}/metadata/")
    assert Path(result.statistics_path).name.startswith(f"{snapshot.snapshot_id}-")
    assert result.statistics_path.endswith(".stats")
    [entry] = table.metadata.statistics
    assert entry == result.statistics_file and entry.snapshot_id == snapshot.snapshot_id
    sketches = read_theta_sketches(table.io, entry)
    ids = [table.schema().find_field(name).field_id for name, _, _ in columns]
    for field_id, (name, t, values) in zip(ids, columns, strict=True):
        # exact mode: the compact sketch is the sorted hashes of exactly these byte strings
        assert sketches[field_id] == _expected_sketch(t, values), name
    with PuffinReader(table.io, entry.statistics_path) as reader:
        blobs = reader.metadata.blobs
    assert [b.type for b in blobs] == [THETA_BLOB_TYPE] * len(columns)
    assert [b.fields for b in blobs] == [(i,) for i in ids]
    assert {(b.snapshot_id, b.sequence_number) for b in blobs} == {
        (snapshot.snapshot_id, snapshot.sequence_number)}
    assert [b.properties["ndv"] for b in blobs] == [str(len(v)) for _, _, v in columns]
    assert {b.compression_codec for b in blobs} == {"zstd"}
    assert [b.fields for b in entry.blob_metadata] == [b.fields for b in blobs]


def test_named_columns_nested_and_errors(spark: SparkSession, tmp_path: Path) -> None:
    table, _ = _typed_table(tmp_path, 2)
    result = compute_table_stats(spark, table, columns=["st.a", "s", "st.a"])
    assert result.ndv == {"st.a": 3, "s": 4}
    sketches = read_theta_sketches(table.io, table.metadata.statistics[0])
    ids = [table.schema().find_field(name).field_id for name in ("st.a", "s")]
    assert list(sketches) == ids
    assert sketches[ids[0]] == _expected_sketch(INT, [0, 1, 2])
    before = sorted(p.name for p in (Path(table.location) / "metadata").iterdir())
    bad: list[tuple[Any, str]] = [
        (["nope"], "no such column"), (["st"], "a struct, not a primitive"),
        (["tags.element"], "inside a list or map"), ([], "no columns"),
        ("s", "list of names")]
    for columns, message in bad:
        with pytest.raises(ValidationError, match=message):
            compute_table_stats(spark, table, columns=columns)
    with pytest.raises(NoSuchSnapshot, match="not a snapshot of the table"):
        compute_table_stats(spark, table, snapshot_id=42)
    assert sorted(p.name for p in (Path(table.location) / "metadata").iterdir()) == before
    assert len(table.refresh().metadata.statistics) == 1


def test_estimates_within_the_sketch_error_and_old_snapshots(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))
    spec = PartitionSpecBuilder(schema).bucket("id", 4).build()
    table = _catalog(tmp_path).create_table("db.big", schema, partition_spec=spec)
    n = 30_000
    table.append(pa.table({"id": pa.array(range(n), pa.int64()),
                           "k": [None if i % 10 == 0 else f"k{i % 500}" for i in range(n)]}))
    first = table.refresh().current_snapshot()
    assert first is not None
    table.append(pa.table({"id": pa.array(range(n, n + 10_000), pa.int64()),
                           "k": ["new"] * 10_000}))
    head = table.refresh().current_snapshot()
    assert head is not None
    latest = compute_table_stats(spark, table)
    old = compute_table_stats(spark, table, snapshot_id=first.snapshot_id)
    # relative standard error of a 4096-entry sketch is ~1.6%: 4 sigma is 6.25%
    assert abs(latest.ndv["id"] - (n + 10_000)) < 0.0625 * (n + 10_000)
    assert abs(old.ndv["id"] - n) < 0.0625 * n
    # exact below 4096 values: k0..k499 but for the nulls at every tenth row (k0, k10, ...)
    assert old.ndv["k"] == 450 and latest.ndv["k"] == 451
    table = table.refresh()
    by_snapshot = {e.snapshot_id: e for e in table.metadata.statistics}
    assert set(by_snapshot) == {first.snapshot_id, head.snapshot_id}
    sketch = read_theta_sketches(table.io, by_snapshot[first.snapshot_id])[1]
    assert ndv(sketch) == old.ndv["id"] and estimate(sketch) > 4096
    # a later commit keeps both; recomputing replaces the snapshot's file
    table.append(pa.table({"id": pa.array([1], pa.int64()), "k": ["x"]}))
    assert {e.snapshot_id for e in table.refresh().metadata.statistics} == set(by_snapshot)
    again = compute_table_stats(spark, table, columns=["k"], snapshot_id=head.snapshot_id)
    entries = {e.snapshot_id: e for e in table.refresh().metadata.statistics}
    assert entries[head.snapshot_id].statistics_path == again.statistics_path
    # partition statistics of the bucketed table, from its manifests
    partitioned = compute_partition_stats(spark, table)
    assert partitioned.partitions == 4
    assert partitioned.statistics_file is not None
    rows = read_partition_stats(table.io, partitioned.statistics_file).to_pylist()
    assert [r["partition"]["id_bucket"] for r in rows] == [0, 1, 2, 3]
    assert sum(r["data_record_count"] for r in rows) == n + 10_001
    assert table.refresh().metadata.partition_statistics == (partitioned.statistics_file,)


def test_empty_tables(spark: SparkSession, tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(2, "s", STRING))
    spec = PartitionSpecBuilder(schema).identity("s").build()
    table = _catalog(tmp_path).create_table("db.empty", schema, partition_spec=spec)
    result = compute_table_stats(spark, table)
    assert (result.statistics_path, result.snapshot_id, dict(result.ndv)) == (None, None, {})
    with pytest.raises(ValidationError, match="no such column"):
        compute_table_stats(spark, table, columns=["nope"])
    assert compute_partition_stats(spark, table).statistics_path is None
    # a snapshot whose rows are all null, and then one without files
    table.append(pa.table({"id": pa.array([None, None], pa.int64()),
                           "s": pa.array([None, None], pa.string())}))
    nulls = compute_table_stats(spark, table)
    assert dict(nulls.ndv) == {"id": 0, "s": 0}
    table.refresh().delete("id IS NULL")
    empty = compute_table_stats(spark, table)
    assert dict(empty.ndv) == {"id": 0, "s": 0} and empty.snapshot_id != nulls.snapshot_id
    removed = compute_partition_stats(spark, table)
    assert removed.statistics_file is not None
    rows = read_partition_stats(table.io, removed.statistics_file).to_pylist()
    # the partition whose files the snapshot deleted has a row of zeros, updated by the delete
    assert [(r["partition"], r["data_file_count"], r["last_updated_snapshot_id"])
            for r in rows] == [({"s": None}, 0, empty.snapshot_id)]


def test_unpartitioned_table_has_no_partition_statistics(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "id", LONG))
    table = _catalog(tmp_path).create_table("db.flat", schema)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(ValidationError, match="unpartitioned"):
        compute_partition_stats(spark, table)
    assert table.refresh().metadata.partition_statistics == ()

