"""The native write path (Spark's own Parquet writer): eligibility, exact rows, compliant
footers, footer metrics, partition tuples from directories, modes, cleanup and interop."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession

import icepark.spark.writer.write as spark_write
from icepark.catalog import BaseCatalog
from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.io.parquet.float_stats import footer_float_stats
from icepark.spark.schema import to_spark
from icepark.spark.writer.native import (
    NATIVE_WRITER_PROPERTY,
    ineligibility,
    partition_dir_names,
    writer_options,
)
from icepark.spark.writer.write import JOB_ID_PROPERTY, write
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.snapshot.validation import as_expr
from icepark.table.table import Table
from tests.interop.peers import duckdb_connection
from tests.spark.test_write import assert_field_ids_everywhere, catalog, live_files

pytestmark = pytest.mark.spark
__all__ = ["catalog"]  # the fixture, shared with test_write

UTC = dt.UTC
req, opt = NestedField.required, NestedField.optional
ALL_TYPES = Schema.of(
    req(1, "id", LONG), opt(2, "b", BOOLEAN), opt(3, "i", INT), opt(4, "f", FLOAT),
    opt(5, "x", DOUBLE), opt(6, "d9", PrimitiveType.decimal(9, 2)),
    opt(7, "d18", PrimitiveType.decimal(18, 4)), opt(8, "d38", PrimitiveType.decimal(38, 10)),
    opt(9, "day", DATE), opt(10, "ts", TIMESTAMP), opt(11, "tstz", TIMESTAMPTZ),
    opt(12, "s", STRING), opt(13, "bin", BINARY),
    opt(14, "st", StructType((req(15, "a", INT),
                              opt(16, "inner", StructType((opt(17, "z", STRING),)))))))
STRINGS = ["a/b", "k=v", "100%", "with space", "ünï €", "", "__HIVE_DEFAULT_PARTITION__",
           "~tilde", "plus+sign", "star*", "%2F", None, "a" * 40]
FLOATS = [1.5, -0.0, 0.0, float("inf"), -2.25, None, 3.0, float("nan"), 0.5, -1.0, 7.0, 8.0,
          9.0]


def _row(n: int) -> dict[str, Any]:
    null = n % 6 == 5
    return {
        "id": n, "b": None if null else n % 2 == 0, "i": None if null else n * 1000 - 3000,
        "f": FLOATS[n % len(FLOATS)], "x": FLOATS[(n + 3) % len(FLOATS)],
        "d9": None if null else Decimal(n * 37 - 100) / 100,
        "d18": None if null else Decimal(n * 1_234_567 - 5) / 10_000,
        "d38": None if null else Decimal("1234567890123456789012345678.1234567890") - n,
        "day": None if null else dt.date(1969, 12, 25) + dt.timedelta(days=n * 3),
        "ts": None if null else dt.datetime(2024, 2, 29, 23) + dt.timedelta(minutes=n * 97),
        "tstz": None if null else dt.datetime(1969, 12, 31, 22, tzinfo=UTC)
        + dt.timedelta(hours=n * 5, microseconds=n),
        "s": STRINGS[n % len(STRINGS)], "bin": None if null else bytes([n, 0, 255]),
        "st": None if n % 4 == 3 else {"a": n, "inner": None if null else {"z": f"z{n}"}},
    }


ROWS = [_row(n) for n in range(13)]


def _frame(spark: SparkSession, rows: list[dict[str, Any]] = ROWS,
           schema: Schema = ALL_TYPES) -> DataFrame:
    return spark.createDataFrame(rows, to_spark(schema)).repartition(1)


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value)  # NaN equal to itself, -0.0 distinct from 0.0
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def _by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((_norm(r) for r in rows), key=lambda r: r["id"])


def _python_path(table: Table) -> Table:
    return table.set_properties({NATIVE_WRITER_PROPERTY: "false"})


def _assert_native(table: Table, files: list[DataFile]) -> None:
    job = _summary(table)[JOB_ID_PROPERTY]
    assert files
    for f in files:  # Spark's file, moved out of the job's directory to its partition's
        assert f"/data/{job}/" not in f.file_path, f.file_path
        assert f.file_path.rsplit("/", 1)[-1].startswith(f"{job}-")
        assert f.file_path.endswith(".parquet")


def _summary(table: Table) -> dict[str, str]:
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return dict(snapshot.summary.properties)


def _on_disk(table: Table, pattern: str = "*") -> list[Path]:
    return sorted(p for p in Path(table.location.removeprefix("file://")).rglob(pattern)
                  if p.is_file() and "metadata" not in p.parts)


# -- eligibility --------------------------------------------------------------------------------


@pytest.mark.parametrize(("field_type", "reason"), [
    (LONG, None),
    (StructType((opt(3, "a", DOUBLE), opt(4, "b", PrimitiveType.decimal(38, 2)))), None),
    (UUID, "column 'c' is uuid"),
    (PrimitiveType.fixed(4), "column 'c' is fixed[4]"),
    (TIME, "column 'c' is time"),
    (ListType(3, INT, element_required=False), "column 'c' is list<int>"),
    (MapType(3, STRING, 4, INT), "column 'c' is map<string, int>"),
    (StructType((opt(3, "u", UUID),)), "column 'c.u' is uuid"),
])
def test_eligibility_by_type(field_type: IcebergType, reason: str | None) -> None:
    schema = Schema.of(req(1, "id", LONG), opt(2, "c", field_type))
    metadata, _ = MetadataBuilder.new_table(schema, "/t")
    assert ineligibility(metadata) == reason


@pytest.mark.parametrize(("properties", "reason"), [
    ({NATIVE_WRITER_PROPERTY: "false"}, f"{NATIVE_WRITER_PROPERTY}=false"),
    ({NATIVE_WRITER_PROPERTY: "TRUE"}, None),
    ({"write.parquet.compression-codec": "brotli"}, "Spark has no brotli Parquet codec"),
    ({"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "3"},
     "a compression level applies only to zstd, not gzip"),
    ({"write.parquet.compression-level": "5"}, None),
])
def test_eligibility_by_property(properties: dict[str, str], reason: str | None) -> None:
    metadata, _ = MetadataBuilder.new_table(ALL_TYPES, "/t", properties=properties)
    assert ineligibility(metadata) == reason


def test_eligibility_errors_and_filters() -> None:
    metadata, _ = MetadataBuilder.new_table(ALL_TYPES, "/t",
                                            properties={NATIVE_WRITER_PROPERTY: "maybe"})
    with pytest.raises(ValidationError, match=NATIVE_WRITER_PROPERTY):
        ineligibility(metadata)
    metadata, _ = MetadataBuilder.new_table(ALL_TYPES, "/t")
    assert ineligibility(metadata, as_expr("id > 3")) is not None


def test_writer_options_follow_table_properties() -> None:
    options = writer_options({"write.parquet.compression-codec": "lz4",
                              "write.parquet.row-group-size-bytes": "1048576",
                              "write.parquet.page-size-bytes": "8192"}, "job")
    assert options["compression"] == "lz4_raw"  # LZ4 (Hadoop framing) is deprecated in Parquet
    assert options["parquet.block.size"] == "1048576"
    assert options["parquet.page.size"] == "8192"
    assert options["mapreduce.output.basename"] == "job"
    assert writer_options({}, "j")["compression"] == "zstd"


def test_partition_dir_names_avoid_data_columns() -> None:
    schema = Schema.of(req(1, "id", LONG), opt(2, "s", STRING))
    spec = PartitionSpecBuilder(schema).identity("s").bucket("id", 4).build()
    assert partition_dir_names(spec, ["id", "S"]) == ["s_1000", "id_bucket"]


# -- rows, footers, metrics ----------------------------------------------------------------------


def test_every_type_round_trips(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", ALL_TYPES)
    write(_frame(spark), table)
    _assert_native(table, live_files(table))
    assert _by_id(table.scan().to_arrow().to_pylist()) == _by_id(ROWS)
    assert [p.name for p in _on_disk(table) if not p.name.endswith(".parquet")] == []


_PHYSICAL = {  # column path -> (physical type, logical type text)
    "id": ("INT64", "None"), "b": ("BOOLEAN", "None"), "i": ("INT32", "None"),
    "f": ("FLOAT", "None"), "x": ("DOUBLE", "None"), "d9": ("INT32", "Decimal"),
    "d18": ("INT64", "Decimal"), "d38": ("FIXED_LEN_BYTE_ARRAY", "Decimal"),
    "day": ("INT32", "Date"), "ts": ("INT64", "Timestamp(isAdjustedToUTC=false"),
    "tstz": ("INT64", "Timestamp(isAdjustedToUTC=true"), "s": ("BYTE_ARRAY", "String"),
    "bin": ("BYTE_ARRAY", "None"), "st.a": ("INT32", "None"),
    "st.inner.z": ("BYTE_ARRAY", "String"),
}


def test_footers_carry_field_ids_and_appendix_a_types(spark: SparkSession,
                                                      catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", ALL_TYPES)
    write(_frame(spark), table)
    for f in live_files(table):
        assert_field_ids_everywhere(f.file_path)
        schema = pq.read_metadata(f.file_path).schema
        found = {}
        for i in range(len(schema)):
            column = schema.column(i)
            found[column.path] = (column.physical_type, str(column.logical_type))
            if column.path == "d38":
                assert column.length == 16  # "the minimum number of bytes that can store P"
        assert set(found) == set(_PHYSICAL)
        for path, (physical, logical) in _PHYSICAL.items():
            assert found[path][0] == physical, path
            assert found[path][1].startswith(logical), (path, found[path])
            if logical.startswith("Timestamp"):
                assert "timeUnit=microseconds" in found[path][1]


def test_metrics_equal_the_python_writers(spark: SparkSession, catalog: BaseCatalog) -> None:
    native = catalog.create_table("db.native", ALL_TYPES)
    python = _python_path(catalog.create_table("db.python", ALL_TYPES))
    df = _frame(spark)
    write(df, native)
    write(df, python)
    (ours,), (theirs,) = live_files(native), live_files(python)
    assert Path(theirs.file_path).parent.name == "data"  # the Python writer's file
    assert ours.record_count == theirs.record_count == len(ROWS)
    assert ours.value_counts == theirs.value_counts
    assert ours.null_value_counts == theirs.null_value_counts
    # NaN counts and float bounds are read back from the file: exactly the Python writer's
    assert ours.nan_value_counts == theirs.nan_value_counts
    assert ours.nan_value_counts is not None and set(ours.nan_value_counts) >= {4, 5}
    assert ours.split_offsets is not None and len(ours.split_offsets) == 1
    assert set(ours.column_sizes or {}) == set(theirs.column_sizes or {})
    assert ours.lower_bounds == theirs.lower_bounds
    assert ours.upper_bounds == theirs.upper_bounds


FLOAT_TABLE = Schema.of(req(1, "id", LONG), opt(2, "f", FLOAT), opt(3, "x", DOUBLE),
                        opt(4, "st", StructType((opt(5, "y", DOUBLE),))))
NAN = float("nan")


@pytest.mark.parametrize(("values", "has_nan"), [
    ([1.5, -2.25, float("inf"), float("-inf"), None], False),
    ([3.0, -0.0, 7.5], False),  # -0.0 the least
    ([0.0, -0.0, None], False),  # both zeros: -0.0 below +0.0
    ([0.0, 2.0], False),  # +0.0 the least, no -0.0
    ([None, None, 4.0], False),  # row groups of nulls only
    ([None], False),  # nothing but nulls
    ([1.0, NAN, -1.0], True),
    ([NAN, None], True),  # NaN the only number
], ids=["numbers", "neg-zero", "zeros", "pos-zero", "null-groups", "all-null", "nan", "only-nan"])
def test_float_metrics_from_spark_footers_equal_the_data(
        spark: SparkSession, catalog: BaseCatalog, values: list[float | None],
        has_nan: bool) -> None:
    """Spark's footers give the NaN counts and float bounds without reading the rows back,
    unless a row group has a NaN: either way exactly the Python writer's, from the data."""
    def value(n: int) -> float | None:
        return values[n // 150 % len(values)]  # a value a row group (100-200 rows each)

    rows = [{"id": n, "f": value(n), "x": value(n + 150), "st": {"y": value(n + 300)}}
            for n in range(900)]
    small_groups = {"write.parquet.row-group-size-bytes": "1"}
    native = catalog.create_table("db.native", FLOAT_TABLE, properties=small_groups)
    python = _python_path(catalog.create_table("db.python", FLOAT_TABLE))
    df = _frame(spark, rows, FLOAT_TABLE)
    write(df, native)
    write(df, python)
    (ours,), (theirs,) = live_files(native), live_files(python)
    footer = pq.read_metadata(ours.file_path)
    assert footer.num_row_groups > 1
    assert footer.created_by.startswith("parquet-mr version ")
    assert (footer_float_stats(footer, FLOAT_TABLE) is None) == has_nan
    assert ours.nan_value_counts == theirs.nan_value_counts
    assert set(ours.nan_value_counts or {}) == {2, 3, 5}
    assert ours.lower_bounds == theirs.lower_bounds
    assert ours.upper_bounds == theirs.upper_bounds
    numbers = any(v is not None and v == v for v in values)  # noqa: PLR0124 - NaN test
    for field_id in (2, 3, 5):
        assert ((ours.lower_bounds or {}).get(field_id) is not None) == numbers


# -- partitions ---------------------------------------------------------------------------------


def _partitions(table: Table) -> dict[str, list[int]]:
    """repr(partition tuple) -> the sorted IDs of its rows (every file of a partition)."""
    out: dict[str, list[int]] = {}
    for f in live_files(table):
        ids = pq.read_table(f.file_path, columns=["id"]).column("id").to_pylist()
        out.setdefault(repr(f.partition), []).extend(ids)
    return {k: sorted(v) for k, v in out.items()}


def _compare_with_python(spark: SparkSession, catalog: BaseCatalog, name: str,
                         build: Callable[[PartitionSpecBuilder], PartitionSpecBuilder],
                         rows: list[dict[str, Any]] = ROWS) -> Table:
    spec = build(PartitionSpecBuilder(ALL_TYPES)).build()
    native = catalog.create_table(f"db.{name}_n", ALL_TYPES, partition_spec=spec)
    python = _python_path(catalog.create_table(f"db.{name}_p", ALL_TYPES, partition_spec=spec))
    df = _frame(spark, rows)
    write(df, native)
    write(df, python)
    _assert_native(native, live_files(native))
    assert _by_id(native.scan().to_arrow().to_pylist()) == _by_id(rows)
    assert _partitions(native) == _partitions(python)
    return native


def test_identity_partitions_of_every_type(spark: SparkSession, catalog: BaseCatalog) -> None:
    native = _compare_with_python(spark, catalog, "ident", lambda b: b.identity("s").identity("b")
                               .identity("i").identity("x").identity("d9").identity("d38")
                               .identity("day").identity("ts").identity("tstz")
                               .identity("bin").identity("f"))
    strings = {f.partition[0] for f in live_files(native)}
    assert strings == set(STRINGS)  # "", "__HIVE_DEFAULT_PARTITION__" and None all distinct


@pytest.mark.parametrize("build", [
    lambda b: b.bucket("id", 4).truncate("s", 2).day("tstz").hour("ts").month("day")
    .bucket("bin", 3).truncate("d18", 100).truncate("i", 7).bucket("d38", 5),
    lambda b: b.year("tstz").bucket("s", 3).year("day").truncate("d9", 50).bucket("day", 2),
])
def test_transform_partitions(spark: SparkSession, catalog: BaseCatalog,
                              build: Callable[[PartitionSpecBuilder],
                                              PartitionSpecBuilder]) -> None:
    native = _compare_with_python(spark, catalog, "transforms", build)
    assert len(_partitions(native)) > 5


def test_partition_with_only_nulls_and_void(spark: SparkSession, catalog: BaseCatalog) -> None:
    rows = [dict(_row(5), id=n) for n in range(3)]  # every optional value null
    _compare_with_python(spark, catalog, "nulls",
                         lambda b: b.identity("s").day("ts").void("i"), rows)


# -- modes, sorting, failures ----------------------------------------------------------------------


def test_modes(spark: SparkSession, catalog: BaseCatalog) -> None:
    spec = PartitionSpecBuilder(ALL_TYPES).identity("b").build()
    table = catalog.create_table("db.t", ALL_TYPES, partition_spec=spec)
    write(_frame(spark, ROWS[:6]), table, snapshot_properties={"app": "native"})
    assert _summary(table)["app"] == "native"
    write(_frame(spark, ROWS[6:9]), table)
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == list(range(9))
    # dynamic: replaces only the b=true partition
    new = [dict(_row(n), b=True) for n in (20, 22)]
    write(_frame(spark, new), table, "dynamic")
    ids = sorted(r["id"] for r in table.scan().to_arrow().to_pylist())
    assert ids == sorted([r["id"] for r in ROWS[:9] if r["b"] is not True] + [20, 22])
    write(_frame(spark, ROWS[:2]), table, "overwrite")  # everything
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [0, 1]
    write(_frame(spark, ROWS[2:4]), table, "overwrite", overwrite_filter="id >= 2")
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]
    write(_frame(spark, ROWS[4:5]), table, branch="dev")
    assert len(table.refresh().scan(ref="dev").to_arrow()) == 5
    assert len(table.scan().to_arrow()) == 4


def test_sort_order_is_applied_and_recorded(spark: SparkSession, catalog: BaseCatalog) -> None:
    order = SortOrderBuilder(ALL_TYPES).desc("i").build()
    table = catalog.create_table("db.t", ALL_TYPES, sort_order=order)
    write(_frame(spark).repartition(3), table)
    files = live_files(table)
    _assert_native(table, files)
    for f in files:
        assert f.sort_order_id == table.sort_order().order_id != 0
        values = pq.read_table(f.file_path).column("i").to_pylist()
        present = [v for v in values if v is not None]
        assert present == sorted(present, reverse=True)


def test_null_in_required_nested_field_fails(spark: SparkSession,
                                             catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", ALL_TYPES)
    loose = StructType((opt(15, "a", INT),
                        opt(16, "inner", StructType((opt(17, "z", STRING),)))))
    schema = Schema.of(*(opt(14, "st", loose) if f.name == "st" else f
                         for f in ALL_TYPES.fields))
    df = _frame(spark, [dict(ROWS[0], st={"a": None, "inner": None})], schema)
    with pytest.raises(ValidationError, match=r"'st\.a' is required"):
        write(df, table)
    assert _on_disk(table) == []
    assert table.refresh().current_snapshot() is None


def test_nested_fields_matched_by_name_and_promoted(spark: SparkSession,
                                                    catalog: BaseCatalog) -> None:
    schema = Schema.of(req(1, "id", LONG), opt(2, "st", StructType((
        opt(3, "a", LONG), opt(4, "b", STRING), opt(5, "c", DOUBLE)))))
    table = catalog.create_table("db.t", schema)
    df = spark.createDataFrame([(1, ("x", 7))], "id long, st struct<b: string, a: int>")
    write(df, table)
    _assert_native(table, live_files(table))
    assert table.scan().to_arrow().to_pylist() == [
        {"id": 1, "st": {"a": 7, "b": "x", "c": None}}]


@pytest.mark.parametrize("error", [CommitFailed("injected"), CommitStateUnknown("injected")])
def test_failed_commit(spark: SparkSession, catalog: BaseCatalog, error: Exception,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    spec = PartitionSpecBuilder(ALL_TYPES).identity("s").build()
    table = catalog.create_table("db.t", ALL_TYPES, partition_spec=spec)

    def fail(*_: Any, **__: Any) -> None:
        raise error

    monkeypatch.setattr(spark_write, "commit_files", fail)
    with pytest.raises(type(error), match="injected"):
        write(_frame(spark), table)
    assert table.refresh().current_snapshot() is None
    if isinstance(error, CommitStateUnknown):  # the outcome is unknown: nothing is deleted
        assert len(_on_disk(table, "*.parquet")) == len(set(STRINGS))
    else:
        assert _on_disk(table) == []
        # no job directory left; empty partition directories may stay (as Spark leaves them)
        assert all("=" in p.name for p in Path(table.location, "data").iterdir())


# -- interop ------------------------------------------------------------------------------------


def test_pyiceberg_and_duckdb_read_native_files(spark: SparkSession,
                                                catalog: BaseCatalog) -> None:
    schema = Schema.of(*(f for f in ALL_TYPES.fields if f.name not in ("f", "x")))
    spec = PartitionSpecBuilder(schema).identity("s").day("tstz").bucket("id", 3).build()
    table = catalog.create_table("db.t", schema, partition_spec=spec)
    rows = [{k: v for k, v in r.items() if k not in ("f", "x")} for r in ROWS]
    write(_frame(spark, rows, schema), table)
    _assert_native(table, live_files(table))
    location = table.refresh().metadata_location
    got = StaticTable.from_metadata(location).scan().to_arrow().to_pylist()
    assert _by_id(got) == _by_id(rows)
    with duckdb_connection() as con:
        result = con.execute("SELECT id, s, tstz, d38, st FROM iceberg_scan(?)", [location])
        names = [d[0] for d in result.description]
        duck = [dict(zip(names, values, strict=True)) for values in result.fetchall()]
        count = con.execute("SELECT count(*) FROM iceberg_scan(?) WHERE s = 'a/b'",
                            [location]).fetchone()
    want = [{k: r[k] for k in names} for r in rows]
    assert _by_id(duck) == _by_id(want)
    assert count is not None and count[0] == sum(r["s"] == "a/b" for r in rows)
