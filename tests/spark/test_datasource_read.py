"""``spark.read.format("icepark")`` returns exactly the Arrow reader's rows for the same plan."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import datasource as ds

from icepark.catalog import BaseCatalog, load_catalog
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.spark.datasource.options import ReadOptions
from icepark.spark.datasource.reader import IcebergReader, ScanPartition
from icepark.spark.datasource.source import register
from icepark.spark.schema import to_spark
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
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.table import Table

pytestmark = pytest.mark.spark

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
FLAT = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING),
                 NestedField.optional(3, "x", DOUBLE), NestedField.optional(4, "ts", TIMESTAMPTZ),
                 NestedField.optional(5, "u", UUID),
                 NestedField.optional(6, "st", StructType((NestedField.optional(7, "n", INT),))))
KINDS = ["click", "view", None, "buy"]


def _flat_rows(ids: range) -> list[dict[str, Any]]:
    return [{"id": i, "kind": KINDS[i % 4],
             "x": math.nan if i % 9 == 0 else None if i % 7 == 0 else i / 4,
             "ts": None if i % 11 == 0 else EPOCH + dt.timedelta(hours=i * 5),
             "u": uuid.UUID(int=i * 7919) if i % 3 else None,
             "st": None if i % 5 == 0 else {"n": None if i % 6 == 0 else i % 4}}
            for i in ids]


def _arrow(table: Table, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=to_arrow_schema(table.schema()))


def _catalog(root: Path) -> BaseCatalog:
    catalog = load_catalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    return catalog


def source(spark: SparkSession, root: Path, **options: Any) -> DataFrameReader:
    register(spark)
    reader = (spark.read.format("icepark").option("catalog", "test")
              .option("catalog.uri", f"sqlite:///{root}/catalog.db")
              .option("catalog.warehouse", str(root / "wh")))
    for key, value in options.items():
        reader = reader.option(key.replace("_", "-"), str(value))
    return reader


def _norm(value: Any) -> Any:
    """One form for what Spark and the Arrow reader give (Spark collects timestamps naive in
    the session time zone, UTC; maps as dicts; binary as bytearray); maps and structs as
    sorted (key, value) lists."""
    match value:
        case dt.datetime():
            aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
            return aware.astimezone(UTC).isoformat()
        case uuid.UUID():
            return str(value)
        case bytearray() | bytes():
            return bytes(value)
        case float() if math.isnan(value):
            return "NaN"
        case dict():  # a struct, or a Spark map (empty: as an empty Arrow map is, a list)
            return sorted((k, _norm(v)) for k, v in value.items())
        case list() if value and all(isinstance(e, tuple) and len(e) == 2 for e in value):
            return sorted((k, _norm(v)) for k, v in value)  # an Arrow map
        case list():
            return [_norm(v) for v in value]
    return value


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(_norm(r)) for r in rows)


def _collect(df: DataFrame) -> list[str]:
    return _sorted([r.asDict(recursive=True) for r in df.collect()])


def _expected(table: Table, row_filter: str = "true", **scan: Any) -> list[str]:
    return _sorted(table.scan(row_filter, **scan).to_arrow().to_pylist())


# ----------------------------------------------------------------------------- round trip

NESTED = Schema.of(
    NestedField.required(1, "id", LONG), NestedField.optional(2, "flag", BOOLEAN),
    NestedField.optional(3, "i", INT), NestedField.optional(4, "f", FLOAT),
    NestedField.optional(5, "d", DOUBLE),
    NestedField.optional(6, "dec", PrimitiveType.decimal(9, 2)),
    NestedField.optional(7, "day", DATE), NestedField.optional(8, "t", TIME),
    NestedField.optional(9, "ts", TIMESTAMP), NestedField.optional(10, "tz", TIMESTAMPTZ),
    NestedField.optional(11, "s", STRING), NestedField.optional(12, "u", UUID),
    NestedField.optional(13, "b", BINARY), NestedField.optional(14, "fx", PrimitiveType.fixed(3)),
    NestedField.optional(15, "loc", StructType((
        NestedField.required(16, "city", STRING),
        NestedField.optional(17, "tags", ListType(18, STRING, element_required=False))))),
    NestedField.optional(19, "ids", ListType(20, UUID, element_required=True)),
    NestedField.optional(21, "attrs", MapType(22, STRING, 23, StructType((
        NestedField.optional(24, "v", PrimitiveType.decimal(20, 3)),
        NestedField.optional(25, "when", TIMESTAMPTZ))), value_required=False)))
# Arrow input types (uuid as its 16 bytes: pyarrow cannot build uuid lists from Python)
NESTED_INPUT = pa.schema([
    pa.field("id", pa.int64(), False), ("flag", pa.bool_()), ("i", pa.int32()),
    ("f", pa.float32()), ("d", pa.float64()), ("dec", pa.decimal128(9, 2)), ("day", pa.date32()),
    ("t", pa.time64("us")), ("ts", pa.timestamp("us")), ("tz", pa.timestamp("us", "UTC")),
    ("s", pa.string()), ("u", pa.binary(16)), ("b", pa.binary()), ("fx", pa.binary(3)),
    ("loc", pa.struct([pa.field("city", pa.string(), False), ("tags", pa.list_(pa.string()))])),
    ("ids", pa.list_(pa.field("element", pa.binary(16), False))),
    ("attrs", pa.map_(pa.string(), pa.struct([("v", pa.decimal128(20, 3)),
                                               ("when", pa.timestamp("us", "UTC"))])))])


def _nested_rows(ids: range) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in ids:
        u = uuid.UUID(int=(i + 1) * 104729)
        rows.append({
            "id": i, "flag": i % 2 == 0, "i": -i, "f": i / 8, "d": math.nan if i == 3 else i / 3,
            "dec": Decimal(i) / 4, "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "t": dt.time(i % 24, 30, 15, 123456), "ts": dt.datetime(2024, 2, 1, 12) +
            dt.timedelta(minutes=i), "tz": EPOCH + dt.timedelta(days=i, microseconds=i),
            "s": f"s{i}é", "u": u.bytes, "b": bytes([i, 0, 255]), "fx": bytes([65 + i % 26]) * 3,
            "loc": {"city": f"c{i}", "tags": ["a", None, f"t{i}"]},
            "ids": [u.bytes, uuid.UUID(int=i).bytes], "attrs": {"k": {"v": Decimal("1.500") * i,
                                                                     "when": EPOCH}, "z": None}})
    nulls = {name: None for name in NESTED_INPUT.names if name != "id"}
    rows.append({"id": 1000, **nulls})
    rows.append({"id": 1001, **nulls, "loc": {"city": "x", "tags": []}, "ids": [],
                 "attrs": {}})
    return rows


def test_round_trip_of_a_nested_table(spark: SparkSession, tmp_path: Path) -> None:
    table = _catalog(tmp_path).create_table("db.nested", NESTED)
    table.append(pa.Table.from_pylist(_nested_rows(range(0, 6)), schema=NESTED_INPUT))
    table.append(pa.Table.from_pylist(_nested_rows(range(6, 12)), schema=NESTED_INPUT))
    df = source(spark, tmp_path).load("db.nested")
    assert df.schema == to_spark(table.schema())
    assert df.schema["ids"].metadata["icepark.element"]["icepark.type"] == "uuid"
    got = _collect(df)
    assert len(got) == 16 and got == _expected(table)
    one = df.where("id = 5").collect()[0]
    assert one["u"] == str(uuid.UUID(int=6 * 104729)) and one["fx"] == b"FFF"


def test_empty_table_has_the_schema(spark: SparkSession, tmp_path: Path) -> None:
    table = _catalog(tmp_path).create_table("db.empty", NESTED)
    df = source(spark, tmp_path).load("db.empty")
    assert df.schema == to_spark(table.schema())
    assert df.collect() == [] and df.where("id > 3").count() == 0


def test_unknown_table_is_no_such_table(spark: SparkSession, tmp_path: Path) -> None:
    _catalog(tmp_path)
    with pytest.raises(Exception, match="NoSuchTable"):
        source(spark, tmp_path).load("db.missing").collect()


def test_identifiers_may_name_the_catalog_and_a_wrong_one_says_so(spark: SparkSession,
                                                                   tmp_path: Path) -> None:
    _catalog(tmp_path).create_table("db.t", FLAT)  # the source's catalog is named "test"
    assert source(spark, tmp_path).load("test.db.t").columns == [f.name for f in FLAT.fields]
    with pytest.raises(Exception) as raised:
        source(spark, tmp_path).load("prod.db.t").collect()
    assert ("NoSuchTable: Table prod.db.t does not exist: the icepark source reads catalog "
            "'test', which has no namespace 'prod'; if 'prod' is a catalog, use "
            ".option('catalog', 'prod') and name the table 'db.t'") in str(raised.value)


# ----------------------------------------------------------------------------- options


@pytest.fixture(scope="module")
def history_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("history")


@pytest.fixture(scope="module")
def history(history_root: Path) -> Table:
    """Snapshot 1 (ids 0-9, tag v1, branch dev), snapshot 2 on main after adding column
    ``extra`` (ids 10-14), snapshot 3 on dev (ids 100-102)."""
    table = _catalog(history_root).create_table("db.h", FLAT)
    table.append(_arrow(table, _flat_rows(range(10))))
    first = table.metadata.current_snapshot_id
    assert first is not None
    table.manage_snapshots().create_tag("v1", first).create_branch("dev", first).commit()
    with table.update_schema() as update:
        update.add_column("extra", STRING)
    table.append(_arrow(table, [{**r, "extra": "e"} for r in _flat_rows(range(10, 15))]))
    table.append(_arrow(table, _flat_rows(range(100, 103))), branch="dev")
    return table.refresh()


def _ids(df: DataFrame) -> list[int]:
    return sorted(r["id"] for r in df.collect())


def test_snapshot_options(spark: SparkSession, history: Table, history_root: Path) -> None:
    root = history_root
    first = history.metadata.snapshots[0]
    old_columns = ["id", "kind", "x", "ts", "u", "st"]
    by_id = source(spark, root, snapshot_id=first.snapshot_id).load("db.h")
    assert by_id.columns == old_columns and _ids(by_id) == list(range(10))
    assert _collect(by_id) == _expected(history, snapshot_id=first.snapshot_id)
    as_of = source(spark, root, as_of_timestamp=first.timestamp_ms).load("db.h")
    assert as_of.columns == old_columns and _ids(as_of) == list(range(10))
    tag = source(spark, root, tag="v1").load("db.h")
    assert tag.columns == old_columns and _ids(tag) == list(range(10))
    # a branch is read with the table's current schema
    dev = source(spark, root, branch="dev").load("db.h")
    assert dev.columns == [*old_columns, "extra"]
    assert _ids(dev) == [*range(10), 100, 101, 102]
    main = source(spark, root).load("db.h")
    assert _ids(main) == list(range(15))
    assert _collect(main.where("id >= 8")) == _expected(history, "id >= 8")


@pytest.mark.parametrize(("options", "message"), [
    ({"snapshot_id": 1, "tag": "v1"}, "at most one of .* not snapshot-id and tag"),
    ({"branch": "dev", "as_of_timestamp": 5}, "not as-of-timestamp and branch"),
    ({"snapshot_id": 12345}, "Cannot find snapshot 12345"),
    ({"snapshot_id": "abc"}, "snapshot-id must be an integer"),
    ({"as_of_timestamp": 1}, "No snapshot was current at 1970-01-01T00:00:00.001Z"),
    ({"tag": "nope"}, "Cannot find branch or tag 'nope'"),
    ({"branch": "v1"}, "'v1' is a tag, not a branch"),
    ({"tag": "dev"}, "'dev' is a branch, not a tag"),
])
def test_bad_options_fail_clearly(spark: SparkSession, history: Table, history_root: Path,
                                  options: dict[str, Any], message: str) -> None:
    with pytest.raises(Exception, match=message):
        source(spark, history_root, **options).load("db.h").collect()


# ----------------------------------------------------------------------------- filters


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files")


@pytest.fixture(scope="module")
def files(root: Path) -> Table:
    """Four data files of 15 rows each (ids 0-59), one Spark partition per file."""
    table = _catalog(root).create_table("db.f", FLAT)
    for start in range(0, 60, 15):
        table.append(_arrow(table, _flat_rows(range(start, start + 15))))
    return table.refresh()


def _per_file(spark: SparkSession, root: Path) -> DataFrame:
    return source(spark, root, split_size=1, file_open_cost=1).load("db.f")


U7 = str(uuid.UUID(int=7 * 7919))


@pytest.mark.parametrize("case", [
    ("id < 15", "id < 15", 1),
    ("id >= 40 AND kind = 'click'", "id >= 40 AND kind = 'click'", 2),
    ("id IN (3, 47)", "id IN (3, 47)", 2),
    ("NOT (id <=> 20)", "id != 20", 4),
    ("kind IS NULL AND id > 44", "kind IS NULL AND id > 44", 1),
    ("kind LIKE 'cl%' AND id <= 14", "kind LIKE 'cl%' AND id <= 14", 1),
    ("NOT (kind LIKE 'cl%')", "kind NOT LIKE 'cl%'", 4),
    ("kind NOT IN ('view', 'buy')", "kind NOT IN ('view', 'buy')", 4),
    ("st.n = 2", "st.n = 2", 4),
    (f"u = '{U7}'", f"u = '{U7}'", 1),
    ("ts >= timestamp'1970-01-10 00:00:00' AND ts < timestamp'1970-01-11 00:00:00'",
     "ts >= '1970-01-10T00:00:00+00:00' AND ts < '1970-01-11T00:00:00+00:00'", 1),
])
def test_pushed_filters_prune_and_match_the_arrow_reader(
        spark: SparkSession, files: Table, root: Path, case: tuple[str, str, int]) -> None:
    """(Spark filter, the same as an icepark filter, the Spark partitions it leaves)."""
    where, icepark_filter, partitions = case
    df = _per_file(spark, root).where(where)
    assert df.rdd.getNumPartitions() == partitions
    assert _collect(df) == _expected(files, icepark_filter)
    assert "Filter (" not in _physical_plan(df)  # Spark does not filter again


def _physical_plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


@pytest.fixture(scope="module")
def local(spark: SparkSession, files: Table, root: Path) -> DataFrame:
    """The same rows in a local relation, filtered by Spark itself: the oracle of Spark's
    semantics."""
    df = _per_file(spark, root)
    return spark.createDataFrame(df.collect(), df.schema)


@pytest.mark.parametrize("where", [
    "x > 3.0",  # NaN is above every value in Spark: NaN rows match
    "NOT (x > 3.0)", "x <= 3.0", "x != 2.5", "NOT (x < 3.0)",
    "kind IN ('view', NULL)", "NOT (kind IN ('view', NULL))", "NOT (kind <=> 'click')",
    "kind LIKE '%ew'", "kind LIKE '%li%'",  # not pushed: Spark filters
    "id % 7 = 1", "id < 10 OR kind = 'buy'", "upper(kind) = 'VIEW' AND id > 20",
    f"u = '{U7.upper()}'",  # a string that is no stored uuid's form: never equal
])
def test_all_filters_give_sparks_rows(spark: SparkSession, root: Path, local: DataFrame,
                                      where: str) -> None:
    assert _collect(_per_file(spark, root).where(where)) == _collect(local.where(where))


def test_push_filters_keeps_only_what_it_cannot_translate(files: Table, root: Path) -> None:
    options = ReadOptions.parse({"path": "db.f", "catalog": "test", "split-size": "1",
                                 "catalog.uri": f"sqlite:///{root}/catalog.db",
                                 "catalog.warehouse": str(root / "wh")})
    reader = IcebergReader(options, to_spark(files.schema()))
    assert len(reader.partitions()) == 4
    pushed = ds.LessThan(("id",), 15)
    kept = ds.StringEndsWith(("kind",), "ck")
    assert reader.pushFilters([pushed, kept]) == [kept]
    parts = reader.partitions()
    assert len(parts) == 1 and isinstance(parts[0], ScanPartition)
    assert str(parts[0].context.row_filter) == "id < 15"
    rows = [row for batch in reader.read(parts[0]) for row in batch.to_pylist()]
    assert sorted(r["id"] for r in rows) == list(range(15))


def test_a_given_schema_must_be_the_tables(spark: SparkSession, files: Table,
                                           root: Path) -> None:
    with pytest.raises(Exception, match="do not give a schema"):
        source(spark, root).schema("id long").load("db.f").collect()


# ----------------------------------------------------------------------------- deletes


def test_position_and_equality_deletes(spark: SparkSession, tmp_path: Path) -> None:
    table = _catalog(tmp_path).create_table("db.d", FLAT)
    table.append(_arrow(table, _flat_rows(range(15))))
    table.append(_arrow(table, _flat_rows(range(15, 30))))
    victims = {2, 5, 17, 29}
    counter = iter(range(100))
    with table.new_row_delta() as delta:
        for task in table.scan().plan_files():
            ids = pq.read_table(task.data_file.file_path).column("id").to_pylist()
            writer = PositionDeleteWriter(
                table.io, lambda: f"{table.location}/data/pos-{next(counter)}.parquet",
                table.schema(), table.spec(), (), table.properties)
            writer.write(position_deletes_batch(
                {task.data_file.file_path: [p for p, i in enumerate(ids) if i in victims]}))
            for f in writer.close():
                delta.add_deletes(f)
    equality = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                    table.schema(), table.spec(), (), table.properties,
                                    equality_ids=[2])
    equality.write(pa.table({"kind": pa.array(["buy", None], pa.string())}))
    with table.new_row_delta() as delta:
        for f in equality.close():
            delta.add_deletes(f)
    table.refresh()
    df = source(spark, tmp_path).load("db.d")
    expected = _expected(table)
    assert _collect(df) == expected
    assert len(expected) == len([i for i in range(30) if i not in victims
                                 and KINDS[i % 4] not in ("buy", None)])
    assert _collect(df.where("id < 20")) == _expected(table, "id < 20")


@pytest.mark.xfail(strict=True, reason=(
    "Spark 4 reuses a Python data source reader on which pushFilters ran for a later query "
    "of the same DataFrame without filters: the earlier filter still prunes. Fixed when this "
    "passes; until then, load a new DataFrame per filtered query"))
def test_a_dataframe_read_again_without_its_filter_reads_every_row(
        spark: SparkSession, files: Table, root: Path) -> None:
    df = _per_file(spark, root)
    every = _expected(files)
    assert _collect(df.where("id < 15")) == _expected(files, "id < 15")
    assert _collect(df) == every
