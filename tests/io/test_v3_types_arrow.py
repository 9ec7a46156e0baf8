"""The format version 3 types through the Python writer and the Arrow reader: exact nanoseconds,
null ``unknown`` columns, variants (written unshredded, read shredded), geometry bounds."""

from __future__ import annotations

import json
import math
import struct
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import CorruptFile, UnsupportedFeature, ValidationError
from icepark.expressions import parse
from icepark.io import variant as enc
from icepark.io.arrow.schema import (
    conform_batch,
    field_metadata,
    from_arrow_schema,
    infer_schema,
    to_arrow_schema,
)
from icepark.io.arrow.variant import arrow_type as variant_arrow_type
from icepark.spec.bounds import GeoPoint, from_bytes
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DATE,
    GEOGRAPHY,
    GEOMETRY,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    VARIANT,
    ListType,
    NestedField,
    StructType,
    parse_primitive,
)
from icepark.table.table import Table
from tests.io.reader_fixtures import Files, read, rows, task, write, write_arrow

KARNEY = parse_primitive("geography(srid:4269, karney)")
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
    NestedField.optional(10, "s", StructType((NestedField.optional(11, "a", LONG),
                                              NestedField.optional(12, "su", UNKNOWN)))),
)
NS = 1510871468123456789  # 2017-11-16T22:31:08.123456789 (Appendix D)
MAX, MIN = 2**63 - 1, -(2**63)


def point(x: float, y: float, *zm: float, code: int = 1, order: str = "<") -> bytes:
    """ISO WKB of a point: type 1 (XY), 1001 (XYZ), 2001 (XYM), 3001 (XYZM)."""
    return struct.pack(f"{order}bI{2 + len(zm)}d", 1 if order == "<" else 0, code, x, y, *zm)


def variant(value: Any) -> dict[str, bytes]:
    metadata, encoded = enc.encode(value)
    return {"metadata": metadata, "value": encoded}


VARIANTS: list[Any] = [{"a": 1, "b": [True, "x" * 70]}, None, 34, {"tags": [], "n": None}]
ROWS: list[dict[str, Any]] = [
    {"id": 1, "ts": 1, "tsn": NS, "tszn": MAX, "v": VARIANTS[0], "g": point(1, 2),
     "gs": point(10, 20), "gk": point(-1, 1), "s": {"a": 1}},
    {"id": 2, "ts": -1, "tsn": -1, "tszn": MIN, "v": VARIANTS[1], "g": None, "gs": None,
     "gk": None, "s": None},
    {"id": 3, "ts": None, "tsn": None, "tszn": None, "v": VARIANTS[2], "g": point(-3, 7),
     "gs": point(-170, 5), "gk": None, "s": {"a": None}},
    {"id": 4, "ts": 4, "tsn": MIN, "tszn": 0, "v": VARIANTS[3], "g": point(0, 0),
     "gs": None, "gk": point(2, 2), "s": {"a": 4}},
]


def arrow_rows(data: list[dict[str, Any]]) -> pa.Table:
    """The rows as plain Arrow input: int timestamps, binary WKB, variants as structs."""
    return pa.table({
        "id": pa.array([r["id"] for r in data], pa.int64()),
        "ts": pa.array([r["ts"] for r in data], pa.timestamp("us")),
        "tsn": pa.array([r["tsn"] for r in data], pa.timestamp("ns")),
        "tszn": pa.array([r["tszn"] for r in data], pa.timestamp("ns", tz="UTC")),
        "v": pa.array([variant(r["v"]) if r["v"] is not None else None for r in data]),
        "g": pa.array([r["g"] for r in data], pa.binary()),
        "gs": pa.array([r["gs"] for r in data], pa.large_binary()),
        "gk": pa.array([r["gk"] for r in data], pa.binary()),
        "s": pa.array([r["s"] for r in data], pa.struct([pa.field("a", pa.int64())])),
    })


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[BaseCatalog]:
    catalog = load_catalog("v3", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    yield catalog


@pytest.fixture
def table(catalog: BaseCatalog) -> Table:
    table = catalog.create_table("db.v3", SCHEMA, format_version=3)
    table.append(arrow_rows(ROWS))
    return table


def parquet_path(table: Table) -> str:
    [scan_task] = list(table.scan().plan_files())
    return scan_task.data_file.file_path.removeprefix("file://")


# --- round trip ------------------------------------------------------------------------------


def test_every_v3_type_reads_back_exactly(table: Table) -> None:
    out = table.scan().to_arrow()
    assert out.schema.equals(to_arrow_schema(SCHEMA), check_metadata=True)
    by_id = {r["id"]: r for r in out.to_pylist()}
    for row in ROWS:
        got = by_id[row["id"]]
        for name in ("tsn", "tszn", "ts"):
            column = out.column(name).cast(pa.int64()).to_pylist()
            assert column[out.column("id").to_pylist().index(row["id"])] == row[name]
        assert got["u"] is None and (got["s"] is None or got["s"]["su"] is None)
        expected_variant = None if row["v"] is None else variant(row["v"])
        assert got["v"] == expected_variant
        if got["v"] is not None:
            assert enc.decode(got["v"]["metadata"], got["v"]["value"]) == row["v"]
        assert (got["g"], got["gs"], got["gk"]) == (row["g"], row["gs"], row["gk"])
    assert out.schema.field("gk").type.__arrow_ext_serialize__() == \
        b'{"crs": "srid:4269", "edges": "karney"}'


def test_the_file_has_the_parquet_types_of_appendix_a(table: Table) -> None:
    schema = pq.read_metadata(parquet_path(table)).schema
    columns = {schema.column(i).path: schema.column(i) for i in range(len(schema))}
    assert set(columns) == {"id", "ts", "tsn", "tszn", "v.metadata", "v.value", "g", "gs", "gk",
                            "s.a"}  # "unknown ... Omit from data files"
    timestamps = {name: {k: v for k, v in json.loads(columns[name].logical_type.to_json())
                         .items() if k in ("Type", "isAdjustedToUTC", "timeUnit")}
                  for name in ("ts", "tsn", "tszn")}
    assert timestamps == {
        "ts": {"Type": "Timestamp", "isAdjustedToUTC": False, "timeUnit": "microseconds"},
        "tsn": {"Type": "Timestamp", "isAdjustedToUTC": False, "timeUnit": "nanoseconds"},
        "tszn": {"Type": "Timestamp", "isAdjustedToUTC": True, "timeUnit": "nanoseconds"},
    }
    assert all(columns[name].physical_type == "INT64" for name in timestamps)
    text = str(schema)
    # "metadata and value must not be assigned field IDs"; the group has the column's
    assert "optional group field_id=6 v {" in text
    assert "required binary field_id=-1 metadata;" in text
    assert "required binary field_id=-1 value;" in text
    assert "optional binary field_id=7 g (Geometry(crs=));" in text
    assert "optional binary field_id=8 gs (Geography(crs=, algorithm=spherical));" in text
    assert "optional binary field_id=9 gk;" in text  # pyarrow annotates spherical edges only


def test_metrics_of_the_v3_types(table: Table) -> None:
    [data_file] = [t.data_file for t in table.scan().plan_files(include_column_stats=True)]
    lowers, uppers = data_file.lower_bounds or {}, data_file.upper_bounds or {}
    assert from_bytes(TIMESTAMP_NS, lowers[3]) == MIN
    assert from_bytes(TIMESTAMP_NS, uppers[3]) == NS
    assert from_bytes(TIMESTAMPTZ_NS, lowers[4]) == MIN
    assert from_bytes(TIMESTAMPTZ_NS, uppers[4]) == MAX
    assert GeoPoint.from_bytes(lowers[7]) == GeoPoint(-3.0, 0.0)
    assert GeoPoint.from_bytes(uppers[7]) == GeoPoint(1.0, 7.0)
    assert {5, 6, 8, 9, 12} & (set(lowers) | set(uppers)) == set()
    assert (data_file.value_counts or {})[6] == 4
    assert (data_file.null_value_counts or {})[6] == 1
    assert 5 not in (data_file.value_counts or {})  # unknown is not in the file


@pytest.mark.parametrize(("expr", "ids"), [
    ("tsn = '2017-11-16T22:31:08.123456789'", [1]),
    ("tsn > '2017-11-16T22:31:08.123456788'", [1]),
    ("tsn >= '1969-12-31T23:59:59.999999999'", [1, 2]),
    ("tsn < '1970-01-01'", [2, 4]),
    (f"tsn IN ({NS}, -1)", [1, 2]),
    ("tszn > '2262-04-11T23:47:16.854775806+00:00'", [1]),
    ("tszn = '1970-01-01T00:00:00Z'", [4]),
    ("ts = '1970-01-01T00:00:00.000001000'", [1]),
    ("ts = '1970-01-01T00:00:00.000001001'", []),  # no microsecond equals it
    ("u IS NULL", [1, 2, 3, 4]),
    ("v IS NOT NULL AND g IS NULL", []),
    ("g IS NULL", [2]),
])
def test_row_filters_on_v3_columns(table: Table, expr: str, ids: list[int]) -> None:
    assert sorted(table.scan(row_filter=expr).to_arrow().column("id").to_pylist()) == ids


def test_row_groups_are_pruned_by_nanosecond_statistics(tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "t", TIMESTAMP_NS))
    data = pa.table({"t": pa.array([1, 2, NS, NS + 1], pa.timestamp("ns"))},
                    schema=to_arrow_schema(schema))
    data_file = write_arrow(Files(tmp_path), data, rows_per_group=2)
    got = read(schema, [task(data_file)], row_filter=parse("t > 1510871468123456788"))
    assert got.column("t").cast(pa.int64()).to_pylist() == [NS, NS + 1]


# --- timestamps ------------------------------------------------------------------------------


def test_conform_keeps_nanoseconds_and_refuses_lost_digits() -> None:
    schema = Schema.of(NestedField.optional(1, "n", TIMESTAMP_NS),
                       NestedField.optional(2, "u", TIMESTAMP))
    out = conform_batch(pa.record_batch({"n": pa.array([1], pa.timestamp("us")),
                                         "u": pa.array([2000], pa.timestamp("ns"))}), schema)
    assert out.column("n").cast(pa.int64()).to_pylist() == [1000]
    assert out.column("u").cast(pa.int64()).to_pylist() == [2]
    with pytest.raises(ValidationError, match="would lose data"):
        conform_batch(pa.record_batch({"u": pa.array([1], pa.timestamp("ns"))}), schema)
    with pytest.raises(ValidationError, match="'n' has Arrow type timestamp"):
        conform_batch(pa.record_batch({"n": pa.array([1], pa.timestamp("ns", tz="UTC"))}),
                      schema)


def test_date_reads_as_midnight_after_promotion(catalog: BaseCatalog) -> None:
    """Spec, *Schema Evolution* (v3): ``date`` to ``timestamp``/``timestamp_ns``; "values
    outside the promoted type's range must result in a runtime failure"."""
    schema = Schema.of(NestedField.optional(1, "d", DATE), NestedField.optional(2, "e", DATE))
    table = catalog.create_table("db.dates", schema, format_version=3)
    table.append(pa.table({"d": pa.array([date(2017, 11, 16), None], pa.date32()),
                           "e": pa.array([date(1970, 1, 2), date(1970, 1, 1)], pa.date32())}))
    with table.update_schema() as update:
        update.update_column("d", TIMESTAMP_NS)
        update.update_column("e", TIMESTAMP)
    out = table.refresh().scan().to_arrow()
    assert out.column("d").cast(pa.int64()).to_pylist() == [1510790400 * 10**9, None]
    assert out.column("e").cast(pa.int64()).to_pylist() == [86_400_000_000, 0]
    assert table.scan(row_filter="d = '2017-11-16T00:00:00'").to_arrow().num_rows == 1

    far = catalog.create_table("db.far", Schema.of(NestedField.optional(1, "d", DATE)),
                               format_version=3)
    far.append(pa.table({"d": pa.array([date(2300, 1, 1)], pa.date32())}))
    with far.update_schema() as update:
        update.update_column("d", TIMESTAMP_NS)
    with pytest.raises(ValidationError, match="a date is outside its range"):
        far.refresh().scan().to_arrow()


def test_v3_promotions_need_a_v3_table(catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.v2", Schema.of(NestedField.optional(1, "d", DATE)))
    with pytest.raises(ValidationError, match="this table is version 2"), \
            table.update_schema() as update:
        update.update_column("d", TIMESTAMP)


# --- unknown ---------------------------------------------------------------------------------


def test_a_file_column_with_the_id_of_an_unknown_field_is_ignored(tmp_path: Path) -> None:
    """Appendix A: "When reading an unknown column, any corresponding column must be ignored
    and replaced with null values"."""
    written = pa.table({"id": pa.array([1, 2]), "u": pa.array([7, 8])},
                       schema=pa.schema([pa.field("id", pa.int64(), metadata=field_metadata(1)),
                                         pa.field("u", pa.int64(), metadata=field_metadata(5))]))
    data_file = write_arrow(Files(tmp_path), written)
    schema = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(5, "u", UNKNOWN))
    assert rows(read(schema, [task(data_file)])) == [{"id": 1, "u": None}, {"id": 2, "u": None}]
    assert rows(read(schema, [task(data_file)], row_filter=parse("u IS NOT NULL"))) == []


def test_unknown_columns_take_only_nulls(tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "u", UNKNOWN), NestedField.optional(2, "n", LONG))
    data_file = write(Files(tmp_path), schema, pa.table({"u": pa.array([None], pa.int64()),
                                                         "n": [1]}))
    assert pq.read_schema(data_file.file_path).names == ["n"]
    with pytest.raises(ValidationError, match="'u' has type unknown, whose only value is null, "
                                              "but has 1 non-null value"):
        write(Files(tmp_path), schema, pa.table({"u": [1], "n": [1]}))
    listed = Schema.of(NestedField.optional(1, "l", ListType(2, UNKNOWN, element_required=False)))
    with pytest.raises(UnsupportedFeature, match="a list of unknown has no Parquet form"):
        write(Files(tmp_path), listed, pa.table({"l": pa.array([[None]])}))


# --- variant ---------------------------------------------------------------------------------


def test_variants_in_pysparks_arrow_form_are_accepted(tmp_path: Path) -> None:
    """PySpark's ``VariantType`` in Arrow: ``struct<value, metadata>`` with ``metadata``
    marked ``{"variant": "true"}``."""
    metadata, value = enc.encode({"k": [1, 2.5]})
    spark_type = pa.struct([pa.field("value", pa.binary(), nullable=False),
                            pa.field("metadata", pa.binary(), nullable=False,
                                     metadata={b"variant": b"true"})])
    data = pa.table({"v": pa.array([{"value": value, "metadata": metadata}, None], spark_type)})
    schema = Schema.of(NestedField.optional(1, "v", VARIANT))
    assert infer_schema(data.schema, format_version=3).fields[0].field_type == VARIANT
    got = rows(read(schema, [task(write(Files(tmp_path), schema, data))]))
    assert got == [{"v": {"metadata": metadata, "value": value}}, {"v": None}]
    with pytest.raises(ValidationError, match="1 variant value"):
        write(Files(tmp_path), schema, pa.table({"v": pa.array(
            [{"value": None, "metadata": metadata}],
            pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())]))}))


def test_our_variant_encoding_is_read_by_pyspark() -> None:
    """PySpark's own decoder (``VariantVal``, no session) reads what :mod:`icepark.io.variant`
    encodes, and the other way round."""
    from pyspark.sql.types import VariantVal  # noqa: PLC0415 - pyspark only where it is used

    value = {"s": "x" * 100, "n": None, "f": 1.5, "d": date(2020, 1, 2), "i": -129,
             "t": datetime(2020, 1, 2, 3, 4, 5, 6), "dec": Decimal("-1.000000000000000000001"),
             "nested": {"z": [1, [2, {}]]}, "big": list(range(300)), "b": b"\x00\xff"}
    metadata, encoded = enc.encode(value)
    assert VariantVal(encoded, metadata).toPython() == value
    assert enc.decode(metadata, encoded) == value


def test_variant_encoding_round_trips_every_primitive() -> None:
    values: list[Any] = [None, True, False, 0, -(2**63), 2**31, 1.0, -0.0, Decimal("1.5"),
              Decimal("12345678901234567890.12"), "", "é" * 40, b"", date(1, 1, 1),
              datetime(2017, 11, 16, 22, 31, 8, 123456),
              datetime(2017, 11, 16, 22, 31, 8, tzinfo=UTC), enc.Nanos(NS, True),
              enc.Nanos(-1, False), uuid.UUID(int=7), [], {}, {"": [{"a": None}]}]
    for value in values:
        assert enc.decode(*enc.encode(value)) == value


SHREDDED = pa.struct([pa.field("metadata", pa.binary(), nullable=False),
                      pa.field("value", pa.binary()), pa.field("typed_value", pa.int64())])


def _pair(typed: Any) -> Any:
    return pa.struct([pa.field("value", pa.binary()), pa.field("typed_value", typed)])


EVENT = pa.struct([
    pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary()),
    pa.field("typed_value", pa.struct([
        pa.field("event_type", _pair(pa.string()), nullable=False),
        pa.field("event_ts", _pair(pa.timestamp("us", tz="UTC")), nullable=False),
        pa.field("tags", _pair(pa.list_(pa.field("element", _pair(pa.string()),
                                                 nullable=False))), nullable=False),
    ]))])
KEYS = enc.encode_metadata(["email", "event_ts", "event_type", "tags"])


def _event(value: Any = None, event_type: Any = (None, None), event_ts: Any = (None, None),
           tags: Any = (None, None), shredded: bool = True) -> dict[str, Any]:
    def pair(p: Any) -> dict[str, Any]:
        return {"value": p[0], "typed_value": p[1]}

    typed = {"event_type": pair(event_type), "event_ts": pair(event_ts), "tags": pair(tags)}
    return {"metadata": KEYS, "value": value, "typed_value": typed if shredded else None}


def _shredded_file(tmp_path: Path, arrow_type: Any, values: list[Any]) -> Any:
    data = pa.table({"e": pa.array(values, arrow_type)},
                    schema=pa.schema([pa.field("e", arrow_type, metadata=field_metadata(1))]))
    return write_arrow(Files(tmp_path), data)


def _read_variants(data_file: Any) -> list[Any]:
    schema = Schema.of(NestedField.optional(1, "e", VARIANT))
    return [None if r["e"] is None else enc.decode(r["e"]["metadata"], r["e"]["value"])
            for r in rows(read(schema, [task(data_file)]))]


def test_shredded_primitives_are_rebuilt(tmp_path: Path) -> None:
    """VariantShredding.md: "The series of measurements ``34, null, "n/a", 100``"."""
    empty = enc.EMPTY_METADATA
    data_file = _shredded_file(tmp_path, SHREDDED, [
        {"metadata": empty, "value": None, "typed_value": 34},
        {"metadata": empty, "value": enc.NULL, "typed_value": None},
        {"metadata": empty, "value": enc.encode_string("n/a"), "typed_value": None},
        {"metadata": empty, "value": None, "typed_value": 100},
        None,
        {"metadata": empty, "value": None, "typed_value": None},  # missing: a variant null
    ])
    assert _read_variants(data_file) == [34, None, "n/a", 100, None, None]
    schema = Schema.of(NestedField.optional(1, "e", VARIANT))
    raw = rows(read(schema, [task(data_file)]))
    assert raw[0]["e"]["value"] == b"\x18" + struct.pack("<q", 34)  # shredded int64 is int64
    assert raw[5]["e"]["value"] == enc.NULL


def test_shredded_objects_and_arrays_are_rebuilt(tmp_path: Path) -> None:
    """VariantShredding.md's ``event`` table (objects, partly shredded) and ``tags`` arrays."""
    email = enc.encode_object([(0, enc.encode_string("user@example.com"))])
    tags = (None, [{"value": None, "typed_value": "comedy"},
                   {"value": enc.NULL, "typed_value": None}])
    data_file = _shredded_file(tmp_path, EVENT, [
        _event(event_type=(None, "noop"), event_ts=(None, 1729794114937)),
        _event(email, event_type=(None, "login"), event_ts=(None, 1729794146402)),
        _event(enc.encode_string("malformed: not an object"), shredded=False),
        _event(event_type=(enc.NULL, None), event_ts=(None, 1729794954163), tags=tags),
        _event(event_ts=(enc.encode_string("2024-10-24"), None)),
        _event(),
        _event(enc.NULL, shredded=False),
        None,
    ])

    def ts(micros: int) -> datetime:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)

    assert _read_variants(data_file) == [
        {"event_type": "noop", "event_ts": ts(1729794114937)},
        {"email": "user@example.com", "event_type": "login", "event_ts": ts(1729794146402)},
        "malformed: not an object",
        {"event_type": None, "event_ts": ts(1729794954163), "tags": ["comedy", None]},
        {"event_ts": "2024-10-24"},
        {},
        None,
        None,
    ]


@pytest.mark.parametrize(("typed", "value", "expected"), [
    (pa.array([Decimal("1.50")], pa.decimal128(4, 2)), None, Decimal("1.50")),
    (pa.array([Decimal("1.5")], pa.decimal128(20, 1)), None, Decimal("1.5")),
    (pa.array([NS], pa.timestamp("ns")), None, enc.Nanos(NS, False)),
    (pa.array([19000], pa.date32()), None, date(2022, 1, 8)),
    (pa.array([True], pa.bool_()), None, True),
    (pa.array([1.25], pa.float32()), None, 1.25),
    (pa.array([-5], pa.int8()), None, -5),
    (pa.array([b"\x01"], pa.binary()), None, b"\x01"),
    (pa.array([uuid.UUID(int=3).bytes], pa.binary(16)), None, uuid.UUID(int=3)),
], ids=lambda v: str(getattr(v, "type", v)))
def test_shredded_primitive_types(tmp_path: Path, typed: Any, value: Any, expected: Any) -> None:
    arrow_type = pa.struct([pa.field("metadata", pa.binary(), nullable=False),
                            pa.field("value", pa.binary()), pa.field("typed_value", typed.type)])
    column = pa.StructArray.from_arrays([pa.array([enc.EMPTY_METADATA]),
                                         pa.array([value], pa.binary()), typed],
                                        fields=list(arrow_type))
    assert _read_variants(_shredded_file(tmp_path, arrow_type, column.to_pylist())) == [expected]


def test_invalid_shredding_names_the_column_and_file(tmp_path: Path) -> None:
    both = _shredded_file(tmp_path, SHREDDED, [
        {"metadata": enc.EMPTY_METADATA, "value": enc.NULL, "typed_value": 1}])
    with pytest.raises(CorruptFile, match=rf"'e' of {both.file_path}: invalid shredded "
                                          r"variant: 1 value\(s\) have both"):
        _read_variants(both)
    odd = pa.struct([pa.field("metadata", pa.binary(), nullable=False),
                     pa.field("value", pa.binary()), pa.field("typed_value", pa.uint32())])
    unsigned = _shredded_file(tmp_path, odd, [{"metadata": enc.EMPTY_METADATA, "value": None,
                                               "typed_value": 1}])
    with pytest.raises(UnsupportedFeature, match=rf"'e' of {unsigned.file_path}: its shredded "
                                                 "type uint32 is not a Variant shredding type"):
        _read_variants(unsigned)


# --- geometry --------------------------------------------------------------------------------


def _geometry_bounds(tmp_path: Path, values: list[bytes | None], *, rows_per_group: int = 1000,
                     t: Any = GEOMETRY) -> tuple[GeoPoint, GeoPoint] | None:
    schema = Schema.of(NestedField.optional(1, "g", t))
    folder = tmp_path / uuid.uuid4().hex
    folder.mkdir()
    data_file = write(Files(folder), schema, pa.table({"g": pa.array(values, pa.binary())}),
                      properties={"write.parquet.row-group-size-bytes": str(
                          rows_per_group * 21)})
    lower = (data_file.lower_bounds or {}).get(1)
    upper = (data_file.upper_bounds or {}).get(1)
    assert (lower is None) == (upper is None)
    return None if lower is None or upper is None else (GeoPoint.from_bytes(lower),
                                                         GeoPoint.from_bytes(upper))


LINE = struct.pack("<bII6d", 1, 2, 3, 0, 0, 10, math.nan, 5, -5)
POLYGON = struct.pack("<bIII8d", 1, 3, 1, 4, 0, 0, 4, 0, 4, 4, 0, 0)
COLLECTION = struct.pack("<bII", 1, 7, 2) + point(-1, -1) + LINE
GEOMETRY_BOUNDS: list[tuple[str, list[bytes | None], Any]] = [
    ("xy", [point(1, 2), None, point(3, -4)], (GeoPoint(1, -4), GeoPoint(3, 2))),
    ("xyz", [point(1, 2, 3, code=1001)], (GeoPoint(1, 2, z=3), GeoPoint(1, 2, z=3))),
    ("xym", [point(1, 2, 7, code=2001)], (GeoPoint(1, 2, m=7), GeoPoint(1, 2, m=7))),
    ("xyzm", [point(1, 2, 3, 4, code=3001), point(0, 5, 6, 1, code=3001)],
     (GeoPoint(0, 2, 3, 1), GeoPoint(1, 5, 6, 4))),
    ("z of some", [point(1, 2), point(5, 6, 7, code=1001)],
     (GeoPoint(1, 2, z=7), GeoPoint(5, 6, z=7))),
    # "POINT (1 NaN) contributes a value to X but no values to Y"
    ("nan y", [point(1, 2), point(7, math.nan)], (GeoPoint(1, 2), GeoPoint(7, 2))),
    ("nan z", [point(1, 2, math.nan, code=1001), point(3, 4, 5, code=1001)],
     (GeoPoint(1, 2, z=5), GeoPoint(3, 4, z=5))),
    # "If either the X or Y dimension is missing then the bounding box itself is not produced"
    ("only nan y", [point(1, math.nan)], None),
    ("empty", [point(math.nan, math.nan)], None),
    ("nulls", [None, None], None),
    ("big endian", [point(10, 20, order=">")], (GeoPoint(10, 20), GeoPoint(10, 20))),
    ("linestring", [LINE], (GeoPoint(0, -5), GeoPoint(10, 0))),
    ("polygon", [POLYGON], (GeoPoint(0, 0), GeoPoint(4, 4))),
    ("collection", [COLLECTION], (GeoPoint(-1, -5), GeoPoint(10, 0))),
    ("ewkb", [struct.pack("<bII2d", 1, 0x20000001, 4326, 1, 2)], None),  # not ISO WKB
    ("not wkb", [b"\x01\x02"], None),
]


@pytest.mark.parametrize(("values", "expected"), [(v, e) for _, v, e in GEOMETRY_BOUNDS],
                         ids=[name for name, _, _ in GEOMETRY_BOUNDS])
def test_geometry_bounds(tmp_path: Path, values: list[bytes | None], expected: Any) -> None:
    assert _geometry_bounds(tmp_path, values) == expected


def test_geometry_bounds_cover_every_row_group(tmp_path: Path) -> None:
    values: list[bytes | None] = [point(1, 1), None, None, point(-5, 9), point(2, 2, code=1)]
    assert _geometry_bounds(tmp_path, values, rows_per_group=1) == (GeoPoint(-5, 1),
                                                                    GeoPoint(2, 9))
    assert _geometry_bounds(tmp_path, [point(1, 1), b"\x01\x02"], rows_per_group=1) is None


def test_geography_has_no_bounds(tmp_path: Path) -> None:
    assert _geometry_bounds(tmp_path, [point(170, 1), point(-170, 2)], t=GEOGRAPHY) is None


def test_geospatial_arrow_types_map_to_iceberg_types() -> None:
    written = to_arrow_schema(Schema.of(NestedField.optional(1, "a", GEOMETRY),
                                        NestedField.optional(2, "b", KARNEY),
                                        NestedField.optional(3, "c", parse_primitive(
                                            "geometry(srid:3857)"))))
    back = from_arrow_schema(written, format_version=3)
    assert [str(f.field_type) for f in back.fields] == [
        "geometry", "geography(srid:4269, karney)", "geometry(srid:3857)"]
    with pytest.raises(UnsupportedFeature, match="format version 3 type geometry"):
        from_arrow_schema(written)


def test_arrow_forms_of_the_v3_types_by_format_version() -> None:
    arrow = pa.schema([pa.field("n", pa.timestamp("ns"), metadata=field_metadata(1)),
                       pa.field("z", pa.timestamp("ns", tz="UTC"), metadata=field_metadata(2)),
                       pa.field("u", pa.null(), metadata=field_metadata(3)),
                       pa.field("v", variant_arrow_type(), metadata=field_metadata(4))])
    schema = from_arrow_schema(arrow, format_version=3)
    assert [f.field_type for f in schema.fields] == [TIMESTAMP_NS, TIMESTAMPTZ_NS, UNKNOWN,
                                                     VARIANT]
    assert to_arrow_schema(schema).equals(arrow, check_metadata=True)
    with pytest.raises(UnsupportedFeature, match="nanosecond timestamps are the format version "
                                                 "3 type timestamp_ns"):
        from_arrow_schema(arrow)
    inferred = infer_schema(pa.schema([pa.field("t", pa.timestamp("ns", tz="UTC")),
                                       pa.field("s", pa.string())]), format_version=3)
    assert [f.field_type for f in inferred.fields] == [TIMESTAMPTZ_NS, STRING]
    assert from_arrow_schema(pa.schema([pa.field("t", pa.timestamp("us", tz="UTC"),
                                                 metadata=field_metadata(1))])
                             ).fields[0].field_type == TIMESTAMPTZ


def test_geometry_in_pysparks_arrow_form_is_accepted() -> None:
    """PySpark's ``GeometryType`` in Arrow: ``struct<srid: int32, wkb: binary>``."""
    spark_type = pa.struct([pa.field("srid", pa.int32(), nullable=False),
                            pa.field("wkb", pa.binary(), nullable=False)])
    batch = pa.record_batch({"g": pa.array([{"srid": 4326, "wkb": point(1, 2)}, None],
                                           spark_type)})
    out = conform_batch(batch, Schema.of(NestedField.optional(1, "g", GEOMETRY)))
    assert out.column("g").to_pylist() == [point(1, 2), None]
