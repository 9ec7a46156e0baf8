"""The Spark write pipeline end to end: rows read back exactly, one commit, no stray files."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from icepark.catalog import BaseCatalog, load_catalog
from icepark.errors import ValidationError
from icepark.io.arrow.transforms import to_python_values
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spark.writer.write import JOB_ID_PROPERTY, write
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from icepark.table.table import Table

pytestmark = pytest.mark.spark

UTC = dt.UTC
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING),
                   NestedField.optional(3, "ts", TIMESTAMPTZ), NestedField.optional(4, "d", DATE))


# -- helpers (also used by the data source tests) ---------------------------------------------


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    cat = load_catalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                       warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def live_files(table: Table, ref: str = "main") -> list[DataFile]:
    snapshot = table.refresh().metadata.snapshot_by_ref(ref)
    specs = {s.spec_id: s for s in table.metadata.partition_specs}
    return [e.data_file for m in snapshot_manifests(table.io, snapshot)
            for e in read_manifest(table.io, m, specs_by_id=specs, discard_deleted=True)]


def _norm(value: Any) -> Any:
    """Timestamps as UTC ISO text (readers differ in their tzinfo objects)."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat()
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(_norm(row).items()))


def rows(table: Table, ref: str = "main") -> Counter[str]:
    """The multiset of the table's rows at ``ref``, read from its data files with pyarrow."""
    out: Counter[str] = Counter()
    for f in live_files(table, ref):
        for row in pq.read_table(f.file_path).to_pylist():
            out[_key(row)] += 1
    return out


def expected(records: list[dict[str, Any]]) -> Counter[str]:
    return Counter(_key(r) for r in records)


def data_files_on_disk(table: Table) -> list[Path]:
    return sorted(Path(table.location.removeprefix("file://")).rglob("*.parquet"))


def assert_field_ids_everywhere(path: str) -> None:
    """Appendix A: "Column IDs are required" -- on every leaf and every group."""
    schema = pq.read_metadata(path).schema
    for i in range(len(schema)):
        column = schema.column(i)
        assert column.path  # every leaf reached
    arrow = pq.read_schema(path)

    def check(field: Any) -> None:
        assert field.metadata and b"PARQUET:field_id" in field.metadata, field
        t = field.type
        if pa.types.is_map(t):
            check(t.key_field)
            check(t.item_field)
        elif pa.types.is_list(t):
            check(t.value_field)
        elif pa.types.is_struct(t):
            for k in range(t.num_fields):
                check(t.field(k))

    for f in arrow:
        check(f)


def frame(spark: SparkSession, n: int = 40) -> DataFrame:
    return spark.range(n).select(
        F.col("id").cast("int").alias("id"),  # an int column into a long: cast
        F.when(F.col("id") % 7 == 0, None).otherwise(F.concat(F.lit("v"), F.col("id")))
        .cast("string").alias("s"),
        F.timestamp_seconds(F.col("id") * 5000 - 100_000).alias("ts"),
        F.date_from_unix_date((F.col("id") * 11 - 200).cast("int")).alias("d"))


def frame_rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


# -- append ------------------------------------------------------------------------------------


def test_append_unpartitioned(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    df = frame(spark)
    write(df, table, snapshot_properties={"app": "test"})
    assert rows(table) == expected(frame_rows(df))
    summary = table.current_snapshot().summary.properties  # type: ignore[union-attr]
    assert summary["app"] == "test" and summary["added-records"] == "40"
    job = summary[JOB_ID_PROPERTY]
    for f in live_files(table):
        assert f.file_path.rsplit("/", 1)[-1].startswith(job + "-")
        assert f.value_counts and f.lower_bounds and f.record_count > 0
        assert_field_ids_everywhere(f.file_path)
    write(df.select("id"), table)  # missing optional columns are null
    assert sum(rows(table).values()) == 80


@pytest.mark.parametrize("fields", [
    [("identity", "s"), ("bucket", "id", 4), ("truncate", "s", 2), ("day", "ts"),
     ("month", "d")],
    [("year", "d"), ("hour", "ts"), ("void", "id"), ("truncate", "id", 10), ("bucket", "s", 3)],
])
def test_partition_transforms(spark: SparkSession, catalog: BaseCatalog,
                              fields: list[tuple[Any, ...]]) -> None:
    builder = PartitionSpecBuilder(SCHEMA)
    for kind, source, *args in fields:
        method = getattr(builder, kind)
        builder = method(source, *args, name=f"{kind}_{source}")
    table = catalog.create_table("db.t", SCHEMA, partition_spec=builder.build())
    df = frame(spark, 60)
    write(df, table)
    assert rows(table) == expected(frame_rows(df))
    check_partitions(table, live_files(table), table.spec())


def check_partitions(table: Table, files: list[DataFile], spec: PartitionSpec) -> None:
    """Every row of every file maps to the file's partition tuple by the Python transforms;
    no two files of a single task share a partition."""
    schema = table.schema()
    for f in files:
        data = pq.read_table(f.file_path)
        for k, pf in enumerate(spec.fields):
            source = schema.find_field(pf.source_id)
            values = to_python_values(data.column(source.name), source.field_type)
            function = pf.transform.function(source.field_type)
            assert {function(v) for v in values} == {f.partition[k]}, (pf, f.file_path)


def test_sort_order_and_range_distribution(spark: SparkSession, catalog: BaseCatalog) -> None:
    order = SortOrderBuilder(SCHEMA).desc("id").build()
    table = catalog.create_table("db.t", SCHEMA, sort_order=order)
    df = frame(spark, 50).repartition(3)
    write(df, table)
    assert rows(table) == expected(frame_rows(df))
    for f in live_files(table):
        ids = pq.read_table(f.file_path).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
        assert f.sort_order_id == table.sort_order().order_id


# -- overwrite ---------------------------------------------------------------------------------


def partitioned_by_s(catalog: BaseCatalog) -> Table:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
    return catalog.create_table(
        "db.p", schema, partition_spec=PartitionSpecBuilder(schema).identity("s").build())


def test_overwrite_by_filter(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = partitioned_by_s(catalog)
    write(spark.createDataFrame([(1, "a"), (2, "b"), (3, "a")], "id long, s string"), table)
    write(spark.createDataFrame([(10, "a")], "id long, s string"), table, "overwrite",
          overwrite_filter="s = 'a'")
    assert rows(table) == expected([{"id": 2, "s": "b"}, {"id": 10, "s": "a"}])
    assert table.current_snapshot().summary.operation.value == "overwrite"  # type: ignore
    before = data_files_on_disk(table)
    with pytest.raises(ValidationError, match="overwrite filter"):
        write(spark.createDataFrame([(11, "a"), (12, "c")], "id long, s string"), table,
              "overwrite", overwrite_filter="s = 'a'")
    assert data_files_on_disk(table) == before
    assert rows(table) == expected([{"id": 2, "s": "b"}, {"id": 10, "s": "a"}])


def test_full_overwrite(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = partitioned_by_s(catalog)
    write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string"), table)
    write(spark.createDataFrame([(5, "z")], "id long, s string"), table, "overwrite")
    assert rows(table) == expected([{"id": 5, "s": "z"}])


def test_dynamic_overwrite(spark: SparkSession, catalog: BaseCatalog) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
    table = catalog.create_table(
        "db.b", schema, partition_spec=PartitionSpecBuilder(schema).bucket("id", 4).build())
    write(spark.range(40).selectExpr("id", "cast(id as string) s"), table)
    new = spark.createDataFrame([(0, "new0"), (1, "new1")], "id long, s string")
    write(new, table, "dynamic")
    buckets = {f.partition for f in live_files(table) if "new" in str(
        pq.read_table(f.file_path).column("s").to_pylist())}
    function = table.spec().fields[0].transform.function(LONG)
    replaced = {function(0), function(1)}
    assert buckets == {(b,) for b in replaced}
    kept = [{"id": i, "s": str(i)} for i in range(40) if function(i) not in replaced]
    assert rows(table) == expected([*kept, {"id": 0, "s": "new0"}, {"id": 1, "s": "new1"}])
    summary = table.current_snapshot().summary.properties  # type: ignore[union-attr]
    assert summary["replace-partitions"] == "true"


# -- schemas -----------------------------------------------------------------------------------


def test_nested_struct_list_map(spark: SparkSession, catalog: BaseCatalog) -> None:
    schema = Schema.of(
        NestedField.required(1, "id", LONG),
        NestedField.optional(2, "point", StructType((NestedField.required(3, "x", DOUBLE),
                                                     NestedField.optional(4, "y", DOUBLE)))),
        NestedField.optional(5, "tags", ListType(6, STRING, element_required=False)),
        NestedField.optional(7, "props", MapType(8, STRING, 9, INT, value_required=False)),
        NestedField.optional(10, "points", ListType(11, StructType((
            NestedField.optional(12, "a", INT),)), element_required=False)))
    table = catalog.create_table("db.n", schema)
    data = [(1, (1.0, None), ["a", None], {"k": 1, "n": None}, [(1,), None]),
            (2, None, None, None, None), (3, (2.5, 3.5), [], {}, [])]
    df = spark.createDataFrame(data, "id long, point struct<x: double, y: double>, "
                               "tags array<string>, props map<string, int>, "
                               "points array<struct<a: int>>")
    write(df, table)
    got = [r for f in live_files(table) for r in pq.read_table(f.file_path).to_pylist()]
    got.sort(key=lambda r: r["id"])
    for r in got:
        r["props"] = None if r["props"] is None else sorted(r["props"])
    assert got[0] == {"id": 1, "point": {"x": 1.0, "y": None}, "tags": ["a", None],
                      "props": [("k", 1), ("n", None)], "points": [{"a": 1}, None]}
    assert got[1] == {"id": 2, "point": None, "tags": None, "props": None, "points": None}
    assert got[2]["tags"] == [] and got[2]["props"] == []
    for f in live_files(table):
        assert_field_ids_everywhere(f.file_path)


def test_v3_spark_writes_fill_write_defaults_and_assign_row_ids(spark: SparkSession,
                                                                catalog: BaseCatalog) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.required(2, "region", STRING, write_default="eu"))
    table = catalog.create_table("db.v3", schema, format_version=3)
    table = write(spark.createDataFrame([(1,), (2,)], "id long"), table)
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "region": "eu"}, {"id": 2, "region": "eu"}]
    assert table.metadata.next_row_id == 2


@pytest.mark.parametrize(("ddl", "match"), [
    ("id long, s string, extra int", "'extra'.*merge_schema"),
    ("s string", "'id' is required"),
    ("id string, s string", "id"),
    ("id long, s int", "s"),
])
def test_schema_mismatch_before_any_file(spark: SparkSession, catalog: BaseCatalog, ddl: str,
                                         match: str) -> None:
    table = catalog.create_table("db.t", Schema.of(NestedField.required(1, "id", LONG),
                                                   NestedField.optional(2, "s", STRING)))
    df = spark.createDataFrame([], ddl)
    with pytest.raises(ValidationError, match=match):
        write(df, table)
    assert data_files_on_disk(table) == []
    assert table.refresh().current_snapshot() is None


def test_null_in_required_column_fails_the_job(spark: SparkSession,
                                               catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", Schema.of(NestedField.required(1, "id", LONG)))
    df = spark.createDataFrame([(1,), (None,)], "id long")
    with pytest.raises(ValidationError, match="'id' is required"):
        write(df, table)
    assert data_files_on_disk(table) == []
    assert table.refresh().current_snapshot() is None


def test_task_failure_leaves_no_files(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=PartitionSpecBuilder(
        SCHEMA).bucket("id", 8).build())

    def fail_on_777(x: int) -> int:
        if x == 777:
            raise RuntimeError("injected failure")
        return x

    boom = F.udf(fail_on_777, T.LongType())
    # Many small tasks: some succeed (and write files) before the failing one.
    df = spark.range(0, 800, numPartitions=8).select(boom("id").alias("id"))
    with pytest.raises(Exception, match="injected failure"):
        write(df, table.set_properties({"write.distribution-mode": "none"}))
    assert data_files_on_disk(table) == []
    assert table.refresh().current_snapshot() is None


def test_merge_schema_adds_columns(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", Schema.of(NestedField.required(1, "id", LONG)))
    df = spark.createDataFrame([(1, "x", (2,))], "id long, extra string, st struct<q: int>")
    write(df, table, merge_schema=True)
    assert [f.name for f in table.schema().fields] == ["id", "extra", "st"]
    assert rows(table) == expected([{"id": 1, "extra": "x", "st": {"q": 2}}])


def test_branch_write(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    write(frame(spark, 5), table)
    write(frame(spark, 3), table, branch="dev")
    assert sum(rows(table).values()) == 5
    assert sum(rows(table, "dev").values()) == 8


def test_pyiceberg_reads_what_we_wrote(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=PartitionSpecBuilder(
        SCHEMA).day("ts").bucket("id", 3).build())
    df = frame(spark, 30)
    write(df, table)
    got = StaticTable.from_metadata(table.refresh().metadata_location).scan().to_arrow()
    assert expected(got.to_pylist()) == expected(frame_rows(df))


def test_no_select_is_added_where_it_would_change_nothing(spark: SparkSession) -> None:
    """Each select is analysed on the driver: a DataFrame already in the table's layout is
    written as it is; one in another column order, with a promotable type or a missing
    column is selected into it."""
    from icepark.spark.writer.distribution import distributed  # noqa: PLC0415
    from icepark.spark.writer.write import conform  # noqa: PLC0415
    from icepark.table.change.metadata_builder import MetadataBuilder  # noqa: PLC0415

    schema = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(2, "s", STRING))
    laid_out = spark.createDataFrame([(1, "a")], "id BIGINT, s STRING")
    assert conform(laid_out, schema) is laid_out
    for other in (spark.createDataFrame([("a", 1)], "s STRING, id BIGINT"),
                  spark.createDataFrame([(1, "a")], "id INT, s STRING"),
                  spark.createDataFrame([(1,)], "id BIGINT")):
        conformed = conform(other, schema)
        assert conformed is not other
        assert conformed.schema.simpleString() == "struct<id:bigint,s:string>"
        assert conformed.collect()[0]["id"] == 1

    metadata, _ = MetadataBuilder.new_table(schema, "/t")
    assert distributed(laid_out, metadata, []) is laid_out  # unpartitioned, unsorted
    key = [("part", F.col("id") % 2)]
    assert distributed(laid_out, metadata, key).columns == ["id", "s", "part"]
