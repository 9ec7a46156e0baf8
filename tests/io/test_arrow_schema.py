"""Iceberg <-> Arrow schemas with field IDs, and conforming input batches to a table schema."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow.schema import (
    FIELD_ID_KEY,
    conform_batch,
    from_arrow_schema,
    to_arrow_schema,
    to_arrow_type,
)
from icepark.spec.schema import Schema, index_by_id
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
from tests.io.writer_fixtures import NESTED_SCHEMA, PRIMITIVE_SCHEMA, field_ids_of

PRIMITIVE_TYPES: list[tuple[IcebergType, Any]] = [
    (BOOLEAN, pa.bool_()),
    (INT, pa.int32()),
    (LONG, pa.int64()),
    (FLOAT, pa.float32()),
    (DOUBLE, pa.float64()),
    (PrimitiveType.decimal(9, 2), pa.decimal128(9, 2)),
    (PrimitiveType.decimal(38, 0), pa.decimal128(38, 0)),
    (DATE, pa.date32()),
    (TIME, pa.time64("us")),
    (TIMESTAMP, pa.timestamp("us")),
    (TIMESTAMPTZ, pa.timestamp("us", tz="UTC")),
    (STRING, pa.string()),
    (UUID, pa.uuid()),
    (PrimitiveType.fixed(7), pa.binary(7)),
    (BINARY, pa.binary()),
]


@pytest.mark.parametrize(("iceberg", "arrow"), PRIMITIVE_TYPES, ids=str)
def test_primitive_types(iceberg: IcebergType, arrow: Any) -> None:
    assert to_arrow_type(iceberg) == arrow
    schema = Schema.of(NestedField.optional(1, "c", iceberg))
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


def test_every_field_at_every_level_carries_its_id() -> None:
    arrow = to_arrow_schema(NESTED_SCHEMA)
    found = dict(field_ids_of(arrow))
    assert found == {
        "id": 1, "location": 2, "location.lat": 3, "location.name": 4,
        "points": 5, "points.element": 6, "points.element.x": 7, "points.element.y": 8,
        "props": 9, "props.key": 10, "props.value": 11, "props.value.v": 12,
        "matrix": 13, "matrix.element": 14, "matrix.element.element": 15,
    }
    assert set(found.values()) == set(index_by_id(NESTED_SCHEMA))


def test_nullability_follows_required_and_optional() -> None:
    arrow = to_arrow_schema(NESTED_SCHEMA)
    assert not arrow.field("id").nullable
    assert arrow.field("location").nullable
    assert not arrow.field("location").type.field("lat").nullable
    assert arrow.field("points").type.value_field.nullable
    assert not arrow.field("matrix").type.value_field.nullable
    props = arrow.field("props").type
    assert not props.key_field.nullable and props.item_field.nullable


@pytest.mark.parametrize("schema", [PRIMITIVE_SCHEMA, NESTED_SCHEMA], ids=["flat", "nested"])
def test_round_trip(schema: Schema) -> None:
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


def _with_id(name: str, t: Any, fid: int, nullable: bool = True) -> Any:
    return pa.field(name, t, nullable, metadata={FIELD_ID_KEY: str(fid).encode()})


@pytest.mark.parametrize(("arrow_type", "iceberg"), [
    (pa.large_string(), STRING), (pa.string_view(), STRING), (pa.large_binary(), BINARY),
    (pa.int8(), INT), (pa.uint16(), INT), (pa.date64(), DATE), (pa.time32("ms"), TIME),
    (pa.timestamp("ms", tz="America/New_York"), TIMESTAMPTZ), (pa.timestamp("s"), TIMESTAMP),
    (pa.dictionary(pa.int32(), pa.string()), STRING), (pa.decimal256(20, 3),
                                                       PrimitiveType.decimal(20, 3)),
], ids=str)
def test_from_arrow_accepts_equivalent_types(arrow_type: Any, iceberg: IcebergType) -> None:
    schema = from_arrow_schema(pa.schema([_with_id("c", arrow_type, 1)]))
    assert schema.find_type(1) == iceberg


def test_from_arrow_large_list() -> None:
    t = pa.large_list(_with_id("element", pa.int64(), 2, nullable=False))
    assert from_arrow_schema(pa.schema([_with_id("l", t, 1)])).find_type(1) == ListType(2, LONG)


@pytest.mark.parametrize("arrow", [
    pa.schema([pa.field("a", pa.int32())]),
    pa.schema([_with_id("l", pa.list_(pa.int32()), 1)]),
    pa.schema([_with_id("m", pa.map_(_with_id("key", pa.string(), 2, False),
                                     pa.field("value", pa.int32())), 1)]),
    pa.schema([_with_id("s", pa.struct([pa.field("x", pa.int32())]), 1)]),
], ids=["top", "element", "map-value", "struct-field"])
def test_from_arrow_without_ids_raises(arrow: Any) -> None:
    with pytest.raises(ValidationError, match="has no field ID"):
        from_arrow_schema(arrow)


def test_from_arrow_rejects_types_without_iceberg_counterpart() -> None:
    with pytest.raises(ValidationError, match="uint64"):
        from_arrow_schema(pa.schema([_with_id("u", pa.uint64(), 1)]))
    with pytest.raises(UnsupportedFeature, match="nanosecond"):
        from_arrow_schema(pa.schema([_with_id("t", pa.timestamp("ns"), 1)]))
    with pytest.raises(ValidationError, match="invalid field ID"):
        from_arrow_schema(pa.schema([pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"x"})]))


# conform_batch


def test_conform_casts_by_name_and_fills_missing_optional() -> None:
    schema = Schema.of(NestedField.required(1, "a", LONG), NestedField.optional(2, "b", STRING),
                       NestedField.optional(3, "c", DOUBLE))
    batch = pa.record_batch({"c": pa.array([1.5, None], pa.float32()),
                             "a": pa.array([1, 2], pa.int8())})
    out = conform_batch(batch, schema)
    assert out.schema == to_arrow_schema(schema)
    assert out.schema.field("a").metadata == {FIELD_ID_KEY: b"1"}
    assert out.to_pydict() == {"a": [1, 2], "b": [None, None], "c": [1.5, None]}


@pytest.mark.parametrize(("batch", "message"), [
    (pa.record_batch({"b": ["x"]}), "'a' is required but missing"),
    (pa.record_batch({"a": [1], "zzz": [1]}), "'zzz' are not in the table schema"),
    (pa.record_batch({"a": [1, None]}), "'a' is required but has 1 null"),
    (pa.record_batch({"a": ["1"]}), "Column 'a' has Arrow type string"),
    (pa.record_batch({"a": [2**40]}), "Column 'a': cannot write int64"),
    (pa.record_batch({"a": [1], "b": [b"x"]}), "Column 'b' has Arrow type binary"),
], ids=["missing-required", "extra", "null-in-required", "wrong-kind", "overflow",
        "binary-for-string"])
def test_conform_rejects_batches_that_do_not_fit(batch: Any, message: str) -> None:
    schema = Schema.of(NestedField.required(1, "a", INT), NestedField.optional(2, "b", STRING))
    with pytest.raises(ValidationError, match=message):
        conform_batch(batch, schema)


def test_conform_timestamps_keep_zone_kind_and_microseconds() -> None:
    schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMP),
                       NestedField.optional(2, "tz", TIMESTAMPTZ))
    batch = pa.record_batch({"ts": pa.array([1_000], pa.timestamp("ns")),
                             "tz": pa.array([5], pa.timestamp("s", tz="Asia/Tokyo"))})
    out = conform_batch(batch, schema)
    assert out.column("ts").cast(pa.int64()).to_pylist() == [1]
    assert out.column("tz").cast(pa.int64()).to_pylist() == [5_000_000]
    with pytest.raises(ValidationError, match="'ts' has Arrow type timestamp"):
        conform_batch(pa.record_batch({"ts": pa.array([1], pa.timestamp("us", tz="UTC"))}),
                      schema)
    with pytest.raises(ValidationError, match="would lose data"):
        conform_batch(pa.record_batch({"ts": pa.array([1], pa.timestamp("ns"))}), schema)


def test_conform_nested_by_name_with_casts() -> None:
    batch = pa.record_batch({
        "id": pa.array([1, 2, 3], pa.int32()),
        "location": pa.array([{"name": "a", "lat": 1.5}, None, {"lat": -2.0, "name": None}]),
        "points": pa.array([[{"y": 2.0, "x": 1}], None, []]),
        "props": pa.array([[("k", {"v": 1})], None, []],
                          pa.map_(pa.large_string(), pa.struct([("v", pa.int32())]))),
        "matrix": pa.array([[[1.0]], None, [[]]], pa.large_list(pa.list_(pa.float32()))),
    })
    out = conform_batch(batch, NESTED_SCHEMA)
    assert out.schema.equals(to_arrow_schema(NESTED_SCHEMA))
    assert out.to_pylist() == [
        {"id": 1, "location": {"lat": 1.5, "name": "a"}, "points": [{"x": 1, "y": 2.0}],
         "props": [("k", {"v": 1})], "matrix": [[1.0]]},
        {"id": 2, "location": None, "points": None, "props": None, "matrix": None},
        {"id": 3, "location": {"lat": -2.0, "name": None}, "points": [], "props": [],
         "matrix": [[]]},
    ]


def test_conform_sliced_input() -> None:
    schema = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.required(2, "x", LONG),))), NestedField.optional(3, "l", ListType(4, INT)))
    batch = pa.record_batch({"s": pa.array([{"x": 1}, None, {"x": 3}]),
                             "l": pa.array([[1], None, [2, 3]], pa.list_(pa.int64()))})
    out = conform_batch(batch.slice(1), schema)
    assert out.to_pydict() == {"s": [None, {"x": 3}], "l": [None, [2, 3]]}


@pytest.mark.parametrize(("column", "message"), [
    ("location", "'location.lat' is required but has 1 null"),
    ("points", "'points.element.x' is required but has 1 null"),
    ("matrix", "'matrix.element' is required but has 1 null"),
    ("extra", "'location.zzz' are not in the table schema"),
], ids=["struct-field", "list-struct-field", "list-element", "extra-struct-field"])
def test_conform_nested_violations_name_the_column(column: str, message: str) -> None:
    columns: dict[str, Any] = {"id": pa.array([1], pa.int64())}
    if column == "location":
        columns["location"] = pa.array([{"lat": None, "name": "x"}],
                                       pa.struct([("lat", pa.float64()), ("name", pa.string())]))
    elif column == "points":
        columns["points"] = pa.array([[{"x": None, "y": 1.0}]],
                                     pa.list_(pa.struct([("x", pa.int32()), ("y", pa.float32())])))
    elif column == "matrix":
        columns["matrix"] = pa.array([[None]], pa.list_(pa.list_(pa.float64())))
    else:
        columns["location"] = pa.array([{"lat": 1.0, "zzz": 1}])
    with pytest.raises(ValidationError, match=message):
        conform_batch(pa.record_batch(columns), NESTED_SCHEMA)


def test_conform_uuid_and_fixed_and_decimal() -> None:
    schema = Schema.of(NestedField.optional(1, "u", UUID),
                       NestedField.optional(2, "f", PrimitiveType.fixed(2)),
                       NestedField.optional(3, "d", PrimitiveType.decimal(5, 2)))
    batch = pa.record_batch({"u": pa.array([b"\x01" * 16], pa.binary(16)),
                             "f": pa.array([b"ab"], pa.binary(2)),
                             "d": pa.array([Decimal("1.25")], pa.decimal128(3, 2))})
    out = conform_batch(batch, schema)
    assert out.schema.field("u").type == pa.uuid()
    assert out.column("d").to_pylist() == [Decimal("1.25")]
    with pytest.raises(ValidationError, match="'f'"):
        conform_batch(pa.record_batch({"f": pa.array([b"abc"], pa.binary(3))}), schema)
    with pytest.raises(ValidationError, match="'d'"):
        conform_batch(pa.record_batch({"d": pa.array([Decimal("1.255")],
                                                     pa.decimal128(4, 3))}), schema)


def test_conform_all_null_column_and_duplicates() -> None:
    schema = Schema.of(NestedField.optional(1, "m", MapType(2, STRING, 3, LONG)))
    out = conform_batch(pa.record_batch({"m": pa.nulls(2)}), schema)
    assert out.column("m").to_pylist() == [None, None]
    dup = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["m", "m"])
    with pytest.raises(ValidationError, match="duplicate column names"):
        conform_batch(dup, schema)
