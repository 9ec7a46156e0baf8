"""The format version 3 types through Spark: what ``icepark.spark`` writes and reads equals what
the Arrow reader reads (the reference), nanoseconds are never truncated unless asked, variants
come back from shredded files too, and what Spark cannot hold is refused with a clear error."""

from __future__ import annotations

import datetime as dt
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import datasource as ds
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

import icepark.spark as ips
from icepark.catalog import BaseCatalog, load_catalog
from icepark.errors import IncompatibleColumn, UnsupportedFeature, ValidationError
from icepark.io import variant as enc
from icepark.io.arrow.schema import field_metadata
from icepark.spark.datasource.filters import translate
from icepark.spark.datasource.source import register
from icepark.spark.nanos import READ_MODE_CONF
from icepark.spark.schema import TYPE, read_schema, to_iceberg, to_spark
from icepark.spark.writer.native import ineligibility
from icepark.spark.writer.text_inputs import in_table_types, read_csv
from icepark.spec.bounds import GeoPoint, from_bytes
from icepark.spec.manifest import DataFile
from icepark.spec.schema import Schema
from icepark.spec.types import (
    GEOGRAPHY,
    GEOMETRY,
    LONG,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    VARIANT,
    ListType,
    NestedField,
    StructType,
    parse_primitive,
)
from icepark.table.table import Table
from tests.io.reader_fixtures import Files, write_arrow
from tests.io.test_v3_types_arrow import EVENT, _event

pytestmark = pytest.mark.spark

NS = 1510871468123456789  # 2017-11-16T22:31:08.123456789
MAX, MIN = 2**63 - 1, -(2**63)
KARNEY = parse_primitive("geography(srid:4269, karney)")
MERCATOR = parse_primitive("geometry(srid:3857)")
SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "ts", TIMESTAMP),
    NestedField.optional(3, "tsn", TIMESTAMP_NS),
    NestedField.optional(4, "tszn", TIMESTAMPTZ_NS),
    NestedField.optional(5, "u", UNKNOWN),
    NestedField.optional(6, "v", VARIANT),
    NestedField.optional(7, "g", GEOMETRY),
    NestedField.optional(8, "gs", GEOGRAPHY),
    NestedField.optional(9, "gk", KARNEY),
    NestedField.optional(10, "gm", MERCATOR),
    NestedField.optional(11, "s", StructType((NestedField.optional(12, "a", LONG),
                                              NestedField.optional(13, "su", UNKNOWN),
                                              NestedField.optional(14, "n", TIMESTAMP_NS)))),
    NestedField.optional(15, "l", ListType(16, TIMESTAMP_NS, element_required=False)),
)


def point(x: float, y: float) -> bytes:
    return struct.pack("<bI2d", 1, 1, x, y)


VARIANTS: list[Any] = [{"a": 1, "b": [True, "x" * 70]}, None, 34, {"tags": [], "n": None}]
ROWS: list[dict[str, Any]] = [
    {"id": 1, "ts": 1, "tsn": NS, "tszn": MAX, "v": VARIANTS[0], "g": point(1, 2),
     "gs": point(10, 20), "gk": point(-1, 1), "gm": point(5, 5), "a": 1, "n": -1,
     "l": [NS, None, -1]},
    {"id": 2, "ts": -1, "tsn": -1, "tszn": MIN, "v": VARIANTS[1], "g": None, "gs": None,
     "gk": None, "gm": None, "a": None, "n": None, "l": None},
    {"id": 3, "ts": None, "tsn": None, "tszn": None, "v": VARIANTS[2], "g": point(-3, 7),
     "gs": point(-170, 5), "gk": None, "gm": None, "a": 3, "n": NS + 1, "l": []},
    {"id": 4, "ts": 4, "tsn": -1001, "tszn": 0, "v": VARIANTS[3], "g": point(0, 0),
     "gs": None, "gk": point(2, 2), "gm": point(-5, 1), "a": 4, "n": 999, "l": [MIN, MAX]},
]


def floor_micros(nanos: int | None) -> int | None:
    return None if nanos is None else nanos // 1000


def source_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """``rows`` as a DataFrame of Spark's forms: nanoseconds as long, variants from JSON,
    geometry and geography as WKB binary, unknown as a null literal."""
    data = [(r["id"], r["ts"], r["tsn"], r["tszn"],
             None if r["v"] is None else json.dumps(r["v"]), r["g"], r["gs"], r["gk"], r["gm"],
             r["a"], r["n"], r["l"]) for r in rows]
    df = spark.createDataFrame(data, "id long, ts long, tsn long, tszn long, v string, "
                                     "g binary, gs binary, gk binary, gm binary, a long, n long, "
                                     "l array<long>").coalesce(1)  # one data file
    return df.select("id", F.timestamp_micros("ts").cast("timestamp_ntz").alias("ts"), "tsn",
                     "tszn", F.lit(None).alias("u"), F.parse_json("v").alias("v"), "g", "gs",
                     "gk", "gm", F.struct("a", F.col("n").alias("n")).alias("s"), "l")


def arrow_view(table: Table) -> list[dict[str, Any]]:
    """The Arrow reader's rows, by id, in plain Python values (nanoseconds as ints)."""
    out = table.refresh().scan().to_arrow()
    columns = {name: out.column(name) for name in out.column_names}
    for name in ("ts", "tsn", "tszn"):
        columns[name] = columns[name].cast(pa.int64())
    rows = pa.table(columns).to_pylist()
    for r in rows:
        r["v"] = None if r["v"] is None else (r["v"]["value"], r["v"]["metadata"])
        s = r["s"]
        r["s"] = None if s is None else {"a": s["a"], "su": s["su"],
                                         "n": None if s["n"] is None else _nanos(s["n"])}
        r["l"] = None if r["l"] is None else [None if x is None else _nanos(x) for x in r["l"]]
    return sorted(rows, key=lambda r: r["id"])


def _nanos(value: Any) -> int:
    return int(value.value) if hasattr(value, "value") else int(value)


def spark_view(df: DataFrame, *, micros: bool = False) -> list[dict[str, Any]]:
    """A Spark read's rows in the same form; with ``micros`` the timestamps are collected as
    their microseconds (Python's datetime cannot hold every one)."""
    def us(col: Column, zoned: bool = False) -> Column:
        return F.unix_micros(col if zoned else col.cast("timestamp"))

    stamps = [F.col("tsn"), F.col("tszn"), F.col("s"), F.col("l")]
    if micros:
        stamps = [us(F.col("tsn")).alias("tsn"), us(F.col("tszn"), True).alias("tszn"),
                  F.when(F.col("s").isNull(), F.lit(None)).otherwise(F.struct(
                      F.col("s.a").alias("a"), F.col("s.su").alias("su"),
                      us(F.col("s.n")).alias("n"))).alias("s"),
                  F.transform("l", lambda x: us(x)).alias("l")]  # noqa: PLW0108 - one argument
    rows = []
    for row in df.select("id", us(F.col("ts")).alias("ts"), *stamps, "u", "v", "g", "gs", "gk",
                         "gm").collect():
        r = row.asDict(recursive=True)
        r["v"] = None if row.v is None else (bytes(row.v.value), bytes(row.v.metadata))
        for name in ("g", "gs", "gm"):
            r[name] = None if row[name] is None else bytes(row[name].wkb)
        r["gk"] = None if row.gk is None else bytes(row.gk)
        rows.append(r)
    return sorted(rows, key=lambda r: r["id"])


def in_micros(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Arrow rows with every nanosecond value floored to microseconds."""
    out = []
    for row in rows:
        r = dict(row)
        r["tsn"], r["tszn"] = floor_micros(r["tsn"]), floor_micros(r["tszn"])
        if r["s"] is not None:
            r["s"] = {**r["s"], "n": floor_micros(r["s"]["n"])}
        if r["l"] is not None:
            r["l"] = [floor_micros(x) for x in r["l"]]
        out.append(r)
    return out


def _catalog(root: Path) -> BaseCatalog:
    catalog = load_catalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    return catalog


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the shared catalog (the data source names it by options)."""
    path = tmp_path_factory.mktemp("v3")
    _catalog(path)
    return path


@pytest.fixture(scope="module")
def written(spark: SparkSession, root: Path) -> Table:
    """The v3 table, written once through ``ips.write`` (the Python-worker writer: it has
    nanosecond columns)."""
    catalog = load_catalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    table = catalog.create_table("db.v3", SCHEMA, format_version=3)
    assert ineligibility(table.metadata) == "column 'tsn' is timestamp_ns"
    ips.write(source_frame(spark, ROWS), table)
    return table.refresh()


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[BaseCatalog]:
    yield _catalog(tmp_path)


def only_file(table: Table) -> DataFile:
    [task] = list(table.refresh().scan().plan_files(include_column_stats=True))
    return task.data_file


# --- the mapping (no Spark session) ------------------------------------------------------------


def test_the_spark_types_of_the_v3_types() -> None:
    spark = to_spark(SCHEMA)
    types = {f.name: f.dataType for f in spark.fields}
    assert types["tsn"] == T.TimestampNTZType() and types["tszn"] == T.TimestampType()
    assert (types["u"], types["v"]) == (T.NullType(), T.VariantType())
    assert (types["g"], types["gs"], types["gm"]) == (
        T.GeometryType(4326), T.GeographyType(4326), T.GeometryType(3857))
    assert types["gk"] == T.BinaryType()  # Spark has neither SRID 4269 nor karney edges
    assert spark["gk"].metadata[TYPE] == str(KARNEY)
    read = {f.name: f.dataType for f in read_schema(SCHEMA).fields}
    assert read["tsn"] == read["tszn"] == T.LongType()
    assert read["l"] == T.ArrayType(T.LongType(), True)
    nanos = {f.name: f.dataType for f in to_spark(SCHEMA, timestamp_ns="nanos").fields}
    assert nanos["tsn"] == T.LongType()
    for layout in (spark, read_schema(SCHEMA), to_spark(SCHEMA, timestamp_ns="nanos")):
        assert to_iceberg(layout) == SCHEMA
        assert to_iceberg(T.StructType.fromJson(json.loads(layout.json()))) == SCHEMA


def test_a_dataframe_schema_makes_v3_types() -> None:
    plain = T.StructType([T.StructField("v", T.VariantType()), T.StructField("u", T.NullType()),
                          T.StructField("g", T.GeometryType(3857)),
                          T.StructField("gg", T.GeographyType(4326)),
                          T.StructField("t", T.TimestampNTZType())])
    assert [str(f.field_type) for f in to_iceberg(plain).fields] == [
        "variant", "unknown", "geometry(srid:3857)", "geography", "timestamp"]
    with pytest.raises(UnsupportedFeature, match="'g' of Spark type geometry\\(any\\)"):
        to_iceberg(T.StructType([T.StructField("g", T.GeometryType("ANY"))]))
    with pytest.raises(ValidationError, match="timestamptz_ns timestamp or bigint"):
        to_iceberg(T.StructType([T.StructField("t", T.TimestampNTZType(), metadata={
            "parquet.field.id": 1, TYPE: "timestamptz_ns"})]))


def test_variant_columns_need_a_v3_table(spark: SparkSession, catalog: BaseCatalog) -> None:
    """What ``ips.write(df, ..., create=True)`` does with the DataFrame's schema."""
    df = spark.sql("SELECT 1L AS id, parse_json('{\"a\": 1}') AS v")
    with pytest.raises(ValidationError, match="'v' has type variant, which needs format "
                                              "version 3"):
        catalog.create_table("db.v2", df.schema)
    table = catalog.create_table("db.v3", df.schema, format_version=3)
    assert table.schema().find_type("v") == VARIANT
    ips.write(df, table)
    assert [r.v.toPython() for r in ips.read(spark, table).collect()] == [{"a": 1}]


# --- writes and reads --------------------------------------------------------------------------


def test_python_worker_writes_read_back_exactly(spark: SparkSession, written: Table) -> None:
    """Spark longs and timestamps into nanosecond columns, JSON variants, WKB: the files hold
    ``TIMESTAMP(NANOS)``, the Arrow reader reads every value back, and Spark's ``nanos`` read
    equals it."""
    data_file = only_file(written)
    lowers, uppers = data_file.lower_bounds or {}, data_file.upper_bounds or {}
    assert (GeoPoint.from_bytes(lowers[7]), GeoPoint.from_bytes(uppers[7])) == (
        GeoPoint(-3.0, 0.0), GeoPoint(1.0, 7.0))
    assert (GeoPoint.from_bytes(lowers[10]), GeoPoint.from_bytes(uppers[10])) == (
        GeoPoint(-5.0, 1.0), GeoPoint(5.0, 5.0))
    no_bounds = {written.schema().find_field_id(n) for n in ("u", "v", "gs", "gk", "s.su")}
    assert no_bounds & (set(lowers) | set(uppers)) == set()  # geography, variant: optional
    footer = pq.read_metadata(data_file.file_path.removeprefix("file://")).schema
    columns = {c.path: c for c in (footer.column(i) for i in range(len(footer)))}
    assert "u" not in columns and "s.su" not in columns  # "Omit from data files"
    for name in ("tsn", "tszn", "s.n", "l.list.element"):
        unit = json.loads(columns[name].logical_type.to_json())["timeUnit"]
        assert unit == "nanoseconds", name
    assert (from_bytes(TIMESTAMPTZ_NS, lowers[4]), from_bytes(TIMESTAMP_NS, uppers[3])) == (
        MIN, NS)
    expected = arrow_view(written)
    assert [(r["tsn"], r["tszn"], r["s"]["n"] if r["s"] else None, r["l"]) for r in expected] \
        == [(r["tsn"], r["tszn"], r["n"], r["l"]) for r in ROWS]
    assert [r["v"] and enc.decode(r["v"][1], r["v"][0]) for r in expected] == VARIANTS
    assert spark_view(ips.read(spark, written, timestamp_ns="nanos")) == expected


def test_micros_reads_truncate_toward_negative_infinity(spark: SparkSession,
                                                        written: Table) -> None:
    got = spark_view(ips.read(spark, written, timestamp_ns="micros"), micros=True)
    assert got == in_micros(arrow_view(written))
    assert [r["tsn"] for r in got] == [NS // 1000, -1, None, -2]  # -1001 ns is -1.001 us


def test_reading_nanoseconds_without_a_mode_is_refused(spark: SparkSession,
                                                       written: Table) -> None:
    with pytest.raises(UnsupportedFeature, match=r"Column 'tsn' of db.v3 is timestamp_ns, and "
                                                 r"Spark has no nanosecond timestamp type.*"
                                                 r"timestamp_ns='micros'.*timestamp_ns='nanos'"):
        ips.read(spark, written)
    with pytest.raises(UnsupportedFeature, match=r"Column 's\.n'"):
        ips.read(spark, written, columns=["s"])
    with pytest.raises(ValidationError, match="Invalid timestamp_ns read mode 'us'"):
        ips.read(spark, written, timestamp_ns="us")
    # a filter on a nanosecond column returns nothing truncated: no mode needed
    assert ips.read(spark, written, "tsn > 0", columns=["id"]).collect() == [(1,)]
    spark.conf.set(READ_MODE_CONF, "nanos")
    try:
        assert ips.read(spark, written, columns=["tsn"]).schema["tsn"].dataType == T.LongType()
    finally:
        spark.conf.unset(READ_MODE_CONF)


@pytest.mark.parametrize(("expr", "ids"), [
    ("tsn = '2017-11-16T22:31:08.123456789'", [1]),
    ("tsn > '2017-11-16T22:31:08.123456788'", [1]),
    ("tsn < '1969-12-31T23:59:59.999999'", [4]),  # -1001 ns, but -1 ns floors to -1 us
    (f"tsn IN ({NS}, -1)", [1, 2]),
    ("tszn >= '2262-04-11T23:47:16.854775807+00:00' OR tszn = '1970-01-01T00:00:00Z'", [1, 4]),
    ("s.n > 998 AND tsn IS NOT NULL", [4]),
    ("u IS NULL AND v IS NOT NULL AND g IS NULL", []),
])
def test_filters_on_nanosecond_columns_are_exact(spark: SparkSession, written: Table,
                                                 expr: str, ids: list[int]) -> None:
    assert sorted(r["id"] for r in written.scan(expr).to_arrow().to_pylist()) == ids
    for mode in ("micros", "nanos"):
        df = ips.read(spark, written, expr, columns=["id", "tsn"], timestamp_ns=mode)
        assert sorted(r.id for r in df.collect()) == ids, mode


def test_read_incremental_takes_the_mode(spark: SparkSession, written: Table) -> None:
    df = ips.read_incremental(spark, written, None, columns=["id", "tsn"], timestamp_ns="nanos")
    assert sorted(tuple(r) for r in df.collect()) == [(1, NS), (2, -1), (3, None), (4, -1001)]
    with pytest.raises(UnsupportedFeature, match="Column 'tsn'"):
        ips.read_incremental(spark, written, None, columns=["tsn"])


def test_native_writes_of_variant_geometry_and_unknown(spark: SparkSession,
                                                       catalog: BaseCatalog) -> None:
    """Spark's own writer: the unshredded ``VARIANT`` group with its ID on the group only,
    ``GEOMETRY``/``GEOGRAPHY`` with the footer's bounding box as the bounds, no ``unknown``."""
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "u", UNKNOWN),
                       NestedField.optional(3, "v", VARIANT),
                       NestedField.optional(4, "g", GEOMETRY),
                       NestedField.optional(5, "gs", GEOGRAPHY),
                       NestedField.optional(6, "s", StructType((
                           NestedField.optional(7, "sv", VARIANT),))))
    table = catalog.create_table("db.native", schema, format_version=3)
    assert ineligibility(table.metadata) is None
    data = [(0, '{"k": 0}', point(0, 2)), (1, None, point(1, 2)), (2, '{"k": 2}', None),
            (3, '{"k": 3}', point(3, 2))]
    df = spark.createDataFrame(data, "id long, j string, wkb binary").coalesce(1).select(
        "id", F.lit(None).alias("u"), F.parse_json("j").alias("v"),
        F.call_function("ST_GeomFromWKB", F.col("wkb"), F.lit(4326)).alias("g"),
        F.col("wkb").alias("gs"), F.struct(F.parse_json(F.lit("[1, 2]")).alias("sv")).alias("s"))
    ips.write(df, table)
    data_file = only_file(table)
    footer = pq.read_metadata(data_file.file_path.removeprefix("file://")).schema
    assert {footer.column(i).path for i in range(len(footer))} == {
        "id", "v.value", "v.metadata", "g", "gs", "s.sv.value", "s.sv.metadata"}
    text = str(footer)
    assert "field_id=3 v (Variant(" in text and "typed_value" not in text
    assert text.count("required binary field_id=-1 metadata;") == 2
    assert "field_id=4 g (Geometry(crs=OGC:CRS84))" in text
    assert "field_id=5 gs (Geography(crs=OGC:CRS84, algorithm=spherical))" in text
    assert GeoPoint.from_bytes((data_file.lower_bounds or {})[4]) == GeoPoint(0.0, 2.0)
    assert GeoPoint.from_bytes((data_file.upper_bounds or {})[4]) == GeoPoint(3.0, 2.0)
    assert {2, 3, 5, 6, 7} & set(data_file.lower_bounds or {}) == set()
    assert (data_file.null_value_counts or {})[3] == 1
    arrow = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    values = [{"k": 0}, None, {"k": 2}, {"k": 3}]
    assert [r["v"] and enc.decode(r["v"]["metadata"], r["v"]["value"]) for r in arrow] == values
    got = ips.read(spark, table).orderBy("id").collect()
    assert [r.v and r.v.toPython() for r in got] == values
    assert [r.g and bytes(r.g.wkb) for r in got] == [r["g"] for r in arrow] == \
        [r[2] for r in data]
    assert [r.s.sv.toPython() for r in got] == [[1, 2]] * 4
    assert {r.u for r in got} == {None}


def test_shredded_variants_of_other_writers_read_through_spark(spark: SparkSession,
                                                               catalog: BaseCatalog,
                                                               tmp_path: Path) -> None:
    """VariantShredding.md's ``event`` table, written by pyarrow as shredding writers do:
    Spark's Parquet reader rebuilds the values, as the Arrow reader does."""
    table = catalog.create_table("db.shredded", Schema.of(NestedField.optional(1, "e", VARIANT)),
                                 format_version=3)
    email = enc.encode_object([(0, enc.encode_string("user@example.com"))])
    tags = (None, [{"value": None, "typed_value": "comedy"},
                   {"value": enc.NULL, "typed_value": None}])
    values = [_event(event_type=(None, "noop"), event_ts=(None, 1729794114937)),
              _event(email, event_type=(None, "login"), event_ts=(None, 1729794146402)),
              _event(enc.encode_string("malformed: not an object"), shredded=False),
              _event(event_type=(enc.NULL, None), event_ts=(None, 1729794954163), tags=tags),
              _event(event_ts=(enc.encode_string("2024-10-24"), None)), _event(), None]
    data = pa.table({"e": pa.array(values, EVENT)},
                    schema=pa.schema([pa.field("e", EVENT, metadata=field_metadata(1))]))
    table.new_append().append_files([write_arrow(Files(tmp_path), data)]).commit()
    expected = [None if r["e"] is None else enc.decode(r["e"]["metadata"], r["e"]["value"])
                for r in table.refresh().scan().to_arrow().to_pylist()]
    got = [None if r.e is None else r.e.toPython() for r in ips.read(spark, table).collect()]
    assert got == expected
    assert expected[1] is not None and expected[1]["email"] == "user@example.com"


def test_copy_on_write_delete_keeps_nanoseconds(spark: SparkSession,
                                                catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.cow", SCHEMA, format_version=3)
    ips.write(source_frame(spark, ROWS), table)
    result = ips.delete(spark, table, "id = 3")
    assert (result.deleted_rows, result.rewritten_files) == (1, 1)
    kept = arrow_view(table)
    assert [(r["id"], r["tsn"], r["tszn"], r["l"]) for r in kept] == [
        (r["id"], r["tsn"], r["tszn"], r["l"]) for r in ROWS if r["id"] != 3]
    assert [r["s"]["n"] if r["s"] else None for r in kept] == [-1, None, 999]
    assert [r["v"] and enc.decode(r["v"][1], r["v"][0]) for r in kept] == \
        [VARIANTS[0], VARIANTS[1], VARIANTS[3]]


def test_spark_timestamps_and_spatial_types_are_written_exactly(spark: SparkSession,
                                                                catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.stamps", Schema.of(
        NestedField.required(1, "id", LONG), NestedField.optional(2, "tsn", TIMESTAMP_NS),
        NestedField.optional(3, "tszn", TIMESTAMPTZ_NS), NestedField.optional(4, "gm", MERCATOR),
        NestedField.optional(5, "tsd", TIMESTAMP_NS, write_default=NS)), format_version=3)
    df = spark.sql("SELECT 1L AS id, TIMESTAMP_NTZ '2017-11-16 22:31:08.123456' AS tsn, "
                   "TIMESTAMP '1969-12-31 23:59:59.999999' AS tszn, "
                   "ST_GeomFromWKB(X'0101000000000000000000F03F0000000000000040', 3857) AS gm")
    ips.write(df, table)
    [row] = table.refresh().scan().to_arrow().to_pylist()
    assert (_nanos(row["tsn"]), _nanos(row["tszn"]), _nanos(row["tsd"])) == (
        NS - 789, -1000, NS)
    assert row["gm"] == point(1, 2)
    with pytest.raises(IncompatibleColumn, match="'gm' is geometry\\(4326\\) in the data"):
        ips.write(df.select("id", F.expr("ST_SetSRID(gm, 4326)").alias("gm")), table)
    with pytest.raises(IncompatibleColumn, match="'tsn' is timestamp in the data, which cannot "
                                                 "be written to the table's timestamp_ns"):
        ips.write(df.select("id", F.col("tszn").alias("tsn")), table)


def test_text_timestamps_never_reach_nanosecond_columns(spark: SparkSession,
                                                        catalog: BaseCatalog,
                                                        tmp_path: Path) -> None:
    """Spark's CSV reader infers ``...08.123456789`` as ``...08.123456``: such a column is
    refused for a nanosecond one; Parquet nanoseconds (inferred as long, the session's
    ``nanosAsLong``) are written exactly."""
    table = catalog.create_table("db.text", Schema.of(NestedField.optional(1, "t", TIMESTAMP_NS)),
                                 format_version=3)
    csv = tmp_path / "t.csv"
    csv.write_text("t\n2017-11-16T22:31:08.123456789\n")
    inferred = read_csv(spark, [str(csv)])
    assert inferred.schema["t"].dataType == T.TimestampType()
    with pytest.raises(UnsupportedFeature, match="'t' is timestamp_ns, but Spark's CSV and JSON"):
        in_table_types(inferred, table.schema())
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": pa.array([NS, -1], pa.timestamp("ns"))}), parquet)
    ips.write(spark.read.parquet(str(parquet)), table)
    assert sorted(table.refresh().scan().to_arrow().column("t").cast(pa.int64()).to_pylist()) \
        == [-1, NS]


def test_unknown_columns_take_only_nulls(spark: SparkSession, catalog: BaseCatalog) -> None:
    for name, schema in (("native", Schema.of(NestedField.required(1, "id", LONG),
                                              NestedField.optional(2, "u", UNKNOWN))),
                         ("python", Schema.of(NestedField.required(1, "id", LONG),
                                              NestedField.optional(2, "u", UNKNOWN),
                                              NestedField.optional(3, "n", TIMESTAMP_NS)))):
        table = catalog.create_table(f"db.{name}", schema, format_version=3)
        ips.write(spark.sql("SELECT 1L AS id, CAST(NULL AS string) AS u"), table)
        with pytest.raises(ValidationError, match=r"'u' has type unknown, whose only value is "
                                                  r"null, but has .*non-null value"):
            ips.write(spark.sql("SELECT 2L AS id, 'x' AS u"), table)
        assert table.refresh().scan().to_arrow().column("u").to_pylist() == [None]


# --- the data source ---------------------------------------------------------------------------


def test_the_data_source_pushes_only_exact_nanosecond_filters() -> None:
    """Read as ``nanos`` a filter's literal is nanoseconds (exact); read as ``micros`` Spark
    compares the truncated value, which no filter on the stored one matches exactly."""
    assert str(translate(ds.LessThan(("tsn",), -1000), SCHEMA)) == "tsn < -1000"
    assert translate(ds.GreaterThan(("tsn",), dt.datetime(2020, 1, 1)), SCHEMA) is None
    assert translate(ds.EqualTo(("gk",), point(1, 2)), SCHEMA) is None
    assert str(translate(ds.IsNull(("v",)), SCHEMA)) == "v IS NULL"


def _options(root: Path) -> dict[str, str]:
    return {"catalog": "test", "catalog.uri": f"sqlite:///{root}/catalog.db",
            "catalog.warehouse": str(root / "wh")}


def _reader(spark: SparkSession, root: Path, **options: str) -> DataFrame:
    register(spark)
    return spark.read.format("icepark").options(**_options(root), **options).load("db.v3")


def test_the_data_source_reads_and_writes_the_v3_types(spark: SparkSession, written: Table,
                                                       root: Path) -> None:
    expected = arrow_view(written)
    assert spark_view(_reader(spark, root, **{"timestamp-ns": "nanos"})) == expected
    micros = _reader(spark, root, **{"timestamp-ns": "micros"})
    assert spark_view(micros, micros=True) == in_micros(expected)
    with pytest.raises(Exception, match="timestamp_ns='micros'"):
        _reader(spark, root).collect()

    catalog = load_catalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    target = catalog.create_table("db.ds", SCHEMA, format_version=3)
    (source_frame(spark, ROWS).write.format("icepark").options(**_options(root))
     .mode("append").save("db.ds"))
    assert arrow_view(target) == expected
