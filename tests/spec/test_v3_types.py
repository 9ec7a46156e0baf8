"""The format version 3 types in the spec layer: values, Appendix D forms, bounds, promotions,
defaults, literals; table-driven from the spec's examples."""

from __future__ import annotations

import json
import math
import re
import struct
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.expressions import InclusiveMetricsEvaluator, StrictMetricsEvaluator, bind, parse
from icepark.expressions.expr import equal, is_null
from icepark.expressions.literals import Gap, convert, decode_bounds
from icepark.spec.bounds import GeoPoint, from_bytes, lower_bound, sort_key, to_bytes, upper_bound
from icepark.spec.evolution.schema_update import SchemaUpdate
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.schema import Schema, check_format_version_types
from icepark.spec.serde.types_json import schema_from_json
from icepark.spec.types import (
    DATE,
    GEOGRAPHY,
    GEOMETRY,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    VARIANT,
    IcebergType,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
    is_promotion_allowed,
    parse_primitive,
)
from icepark.spec.values import check_value, from_json, from_python, to_json

# Appendix D, JSON single-value serialization, and the Appendix B test instants.
NS = 1510871468123456789  # 2017-11-16T22:31:08.123456789
JSON_VECTORS: list[tuple[PrimitiveType, int, str]] = [
    (TIMESTAMP_NS, NS, "2017-11-16T22:31:08.123456789"),
    (TIMESTAMPTZ_NS, NS, "2017-11-16T22:31:08.123456789+00:00"),
    (TIMESTAMP_NS, 0, "1970-01-01T00:00:00.000000000"),
    (TIMESTAMP_NS, -1, "1969-12-31T23:59:59.999999999"),
    (TIMESTAMPTZ_NS, 1510871468000001001, "2017-11-16T22:31:08.000001001+00:00"),
    (TIMESTAMP_NS, 2**63 - 1, "2262-04-11T23:47:16.854775807"),
    (TIMESTAMP_NS, -(2**63), "1677-09-21T00:12:43.145224192"),
]


@pytest.mark.parametrize(("t", "value", "text"), JSON_VECTORS, ids=repr)
def test_nanosecond_json_vectors(t: PrimitiveType, value: int, text: str) -> None:
    assert to_json(t, value) == text
    assert from_json(t, text) == value
    assert from_json(t, json.loads(json.dumps(to_json(t, value)))) == value


@pytest.mark.parametrize(("t", "text", "value"), [
    (TIMESTAMPTZ_NS, "2017-11-16T14:31:08.000001001-08:00", 1510871468000001001),  # Appendix B
    (TIMESTAMPTZ_NS, "2017-11-16T22:31:08Z", 1510871468000000000),
    (TIMESTAMP_NS, "2017-11-16T22:31:08.1", 1510871468100000000),
    (TIMESTAMP_NS, "2017-11-16T22:31", 1510871460000000000),
], ids=repr)
def test_nanosecond_json_accepted_forms(t: PrimitiveType, text: str, value: int) -> None:
    assert from_json(t, text) == value


@pytest.mark.parametrize(("t", "text", "reason"), [
    (TIMESTAMP_NS, "2017-11-16T22:31:08.123456789+00:00", "must not include a zone offset"),
    (TIMESTAMPTZ_NS, "2017-11-16T22:31:08.123456789", "must include a zone offset"),
    (TIMESTAMP_NS, "2017-11-16T22:31:08.1234567891", "expected an ISO-8601 string like "
                                                     "'2017-11-16T22:31:08.123456789'"),
    (TIMESTAMP_NS, "2262-04-12T00:00:00", "out of range"),
    (TIMESTAMP_NS, 34, "expected an ISO-8601 string"),
], ids=repr)
def test_nanosecond_json_rejections(t: PrimitiveType, text: Any, reason: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(reason)):
        from_json(t, text)


def test_nanosecond_values_are_int64_nanoseconds() -> None:
    check_value(TIMESTAMP_NS, 2**63 - 1)
    with pytest.raises(ValidationError, match="out of range"):
        check_value(TIMESTAMP_NS, 2**63)
    with pytest.raises(ValidationError, match="expected an int"):
        check_value(TIMESTAMPTZ_NS, 1.5)
    aware = datetime(2017, 11, 16, 14, 31, 8, 123456, tzinfo=timezone(timedelta(hours=-8)))
    assert from_python(TIMESTAMPTZ_NS, aware) == 1510871468123456000
    assert from_python(TIMESTAMP_NS, datetime(2017, 11, 16, 22, 31, 8, 123456)) == \
        1510871468123456000
    with pytest.raises(ValidationError, match="needs an aware datetime"):
        from_python(TIMESTAMPTZ_NS, datetime(2017, 11, 16))


# Appendix D, binary single-value serialization: "Stores nanoseconds from 1970-01-01
# 00:00:00.000000000 in an 8-byte little-endian long".
@pytest.mark.parametrize("t", [TIMESTAMP_NS, TIMESTAMPTZ_NS], ids=str)
@pytest.mark.parametrize("value", [NS, 0, -1, 2**63 - 1, -(2**63)])
def test_nanosecond_binary_vectors(t: PrimitiveType, value: int) -> None:
    data = to_bytes(t, value)
    assert data == struct.pack("<q", value)
    assert from_bytes(t, data) == value


@pytest.mark.parametrize(("t", "days", "stored"), [
    (TIMESTAMP_NS, 17486, 17486 * 86_400 * 10**9),  # "timestamp_ns, 4 bytes: date"
    (TIMESTAMP, -1, -86_400 * 10**6),  # "timestamp, 4 bytes: date"
], ids=repr)
def test_date_bounds_read_after_promotion(t: PrimitiveType, days: int, stored: int) -> None:
    assert from_bytes(t, to_bytes(DATE, days)) == stored


def test_nanosecond_bounds_follow_long_order() -> None:
    values = [5, None, -(2**63), 2**63 - 1, 0]
    assert lower_bound(TIMESTAMP_NS, values) == -(2**63)
    assert upper_bound(TIMESTAMPTZ_NS, values) == 2**63 - 1
    assert sorted([3, -1], key=sort_key(TIMESTAMP_NS)) == [-1, 3]


# Appendix D, bound serialization of geometry and geography: "x:y if z and m are both unset,
# x:y:z if only m is unset, and x:y:NaN:m if only z is unset".
GEO_BOUNDS: list[tuple[GeoPoint, list[float]]] = [
    (GeoPoint(1.0, 2.0), [1.0, 2.0]),
    (GeoPoint(1.0, 2.0, z=3.0), [1.0, 2.0, 3.0]),
    (GeoPoint(1.0, 2.0, m=4.0), [1.0, 2.0, math.nan, 4.0]),
    (GeoPoint(-180.0, -90.0, z=-1.5, m=0.0), [-180.0, -90.0, -1.5, 0.0]),
]


@pytest.mark.parametrize(("point", "coordinates"), GEO_BOUNDS, ids=repr)
def test_geospatial_bound_serialization(point: GeoPoint, coordinates: list[float]) -> None:
    data = point.to_bytes()
    assert data == struct.pack(f"<{len(coordinates)}d", *coordinates)
    assert GeoPoint.from_bytes(data) == point


@pytest.mark.parametrize("data", [b"", b"\x00" * 8, b"\x00" * 20, b"\x00" * 40])
def test_geospatial_bounds_of_other_lengths_are_rejected(data: bytes) -> None:
    with pytest.raises(ValidationError, match="expected 16, 24 or 32"):
        GeoPoint.from_bytes(data)


def test_geometry_single_values_are_wkb_and_have_no_order() -> None:
    wkb = struct.pack("<bIdd", 1, 1, 30.0, 10.0)  # POINT (30 10)
    assert to_bytes(GEOMETRY, wkb) == wkb and from_bytes(GEOGRAPHY, wkb) == wkb
    for t in (GEOMETRY, GEOGRAPHY, VARIANT, UNKNOWN):
        with pytest.raises(ValidationError, match="no order for bounds"):
            sort_key(t)
    for t in (VARIANT, UNKNOWN):  # Appendix D: "Not supported"
        with pytest.raises(ValidationError, match="not supported"):
            from_bytes(t, b"\x00")


# Types, values and defaults


@pytest.mark.parametrize(("text", "crs", "algorithm"), [
    ("geometry", "OGC:CRS84", "planar"),
    ("geometry(srid:3857)", "srid:3857", "planar"),
    ("geography", "OGC:CRS84", "spherical"),
    ("geography(projjson:my_crs)", "projjson:my_crs", "spherical"),
    ("geography(srid:4269, karney)", "srid:4269", "karney"),
    ("geography(OGC:CRS84, Vincenty)", "OGC:CRS84", "vincenty"),
])
def test_geospatial_type_parameters(text: str, crs: str, algorithm: str) -> None:
    t = parse_primitive(text)
    assert (t.crs, t.edge_algorithm) == (crs, algorithm)
    assert parse_primitive(str(t)) == t


@pytest.mark.parametrize(("text", "message"), [
    ("geography(srid:4326, great-circle)", "unknown edge-interpolation algorithm"),
    ("geometry(srid:4326, spherical)", "geometry takes one argument"),
    ("geography(a, b, c)", "geography takes a CRS and an algorithm"),
])
def test_geospatial_type_rejections(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_primitive(text)


def test_unknown_has_no_value_but_null() -> None:
    with pytest.raises(ValidationError, match="the only value of unknown is null"):
        check_value(UNKNOWN, 0)
    with pytest.raises(ValidationError, match="the only value of unknown is null"):
        from_json(UNKNOWN, "x")
    check_value(ListType(1, UNKNOWN, element_required=False), [None, None])


def test_variant_and_geometry_values() -> None:
    check_value(VARIANT, (b"\x01\x00\x00", b"\x0c\x22"))
    check_value(GEOMETRY, b"\x01")
    with pytest.raises(ValidationError, match=r"\(metadata, value\)"):
        check_value(VARIANT, b"\x0c\x22")
    with pytest.raises(ValidationError, match="version 1"):
        check_value(VARIANT, (b"\x02\x00\x00", b"\x00"))
    with pytest.raises(ValidationError, match="expected WKB bytes"):
        check_value(GEOGRAPHY, "POINT (30 10)")
    with pytest.raises(UnsupportedFeature, match="WKT"):  # Appendix D: "WKT representation"
        to_json(GEOMETRY, b"\x01")
    with pytest.raises(ValidationError, match="no JSON single-value form"):
        from_json(VARIANT, "x")


def test_unknown_fields_must_be_optional() -> None:
    with pytest.raises(ValidationError, match="must be optional"):
        NestedField.required(1, "u", UNKNOWN)
    with pytest.raises(ValidationError, match="must be optional"):
        Schema.of(NestedField.optional(1, "l", ListType(2, UNKNOWN, element_required=True)))


@pytest.mark.parametrize("t", [UNKNOWN, VARIANT, GEOMETRY, GEOGRAPHY], ids=str)
@pytest.mark.parametrize("kind", ["initial_default", "write_default"])
def test_non_null_defaults_are_invalid(t: PrimitiveType, kind: str) -> None:
    """*Default values*: "All columns of unknown, variant, geometry, and geography types must
    default to null. Non-null values for initial-default or write-default are invalid." """
    value: Any = (b"\x01\x00\x00", b"\x00") if t is VARIANT else b"\x01"
    with pytest.raises(ValidationError, match="cannot have a non-null default"):
        NestedField(1, "c", t, False, **{kind: value})
    schema = Schema.of(NestedField.required(1, "id", LONG))
    with pytest.raises(ValidationError, match="cannot have a non-null default"):
        SchemaUpdate(schema, 1, format_version=3).add_column("c", t, **{kind: value})


@pytest.mark.parametrize(("json_type", "default"), [
    ("unknown", 1), ("variant", "00"), ("geometry", "POINT (30 10)"), ("geography", "x"),
])
def test_non_null_defaults_in_metadata_are_rejected(json_type: str, default: Any) -> None:
    data = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "c", "required": False, "type": json_type, "initial-default": default}]}
    with pytest.raises((ValidationError, UnsupportedFeature)):
        schema_from_json(data)
    data["fields"][0].pop("initial-default")  # type: ignore[index] # the field's dict
    assert schema_from_json(data).fields[0].field_type == parse_primitive(json_type)


def test_format_version_of_types() -> None:
    schema = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "g", GEOMETRY),))))
    check_format_version_types(schema, 3)
    with pytest.raises(ValidationError, match=r"Column 's.g' has type geometry, which needs "
                                              r"format version 3 \(the table is version 2\)"):
        check_format_version_types(schema, 2)


# Schema evolution: "v3+ valid type promotions"

PROMOTIONS: list[tuple[IcebergType, IcebergType, bool, bool]] = [
    # source, target, allowed in v1/v2, allowed in v3
    (UNKNOWN, LONG, False, True),
    (UNKNOWN, STRING, False, True),
    (UNKNOWN, StructType(), False, True),
    (INT, LONG, True, True),
    (DATE, TIMESTAMP, False, True),
    (DATE, TIMESTAMP_NS, False, True),
    (DATE, TIMESTAMPTZ, False, False),  # "Promotion to timestamptz ... is **not** allowed"
    (DATE, TIMESTAMPTZ_NS, False, False),
    (TIMESTAMP, TIMESTAMP_NS, False, False),
    (LONG, UNKNOWN, False, False),
]


@pytest.mark.parametrize(("source", "target", "v2", "v3"), PROMOTIONS, ids=repr)
def test_promotion_table(source: IcebergType, target: IcebergType, v2: bool, v3: bool) -> None:
    assert is_promotion_allowed(source, target) is v2
    assert is_promotion_allowed(source, target, format_version=3) is v3


def test_schema_updates_apply_the_v3_promotions_in_v3_tables_only() -> None:
    schema = Schema.of(NestedField.optional(1, "d", DATE), NestedField.optional(2, "u", UNKNOWN))
    evolved, _ = (SchemaUpdate(schema, 2, format_version=3)
                  .update_column("d", TIMESTAMP_NS).update_column("u", LONG).apply())
    assert [f.field_type for f in evolved.fields] == [TIMESTAMP_NS, LONG]
    with pytest.raises(ValidationError, match="and this table is version 2"):
        SchemaUpdate(schema, 2, format_version=2).update_column("d", TIMESTAMP)
    with pytest.raises(ValidationError, match="Cannot promote date to timestamptz"):
        SchemaUpdate(schema, 2, format_version=3).update_column("d", TIMESTAMPTZ)
    with pytest.raises(ValidationError, match="Evolving primitive types to structs"):
        SchemaUpdate(schema, 2, format_version=3).update_column("u", StructType())


def test_union_keeps_our_type_for_their_unknown_or_date() -> None:
    ours = Schema.of(NestedField.optional(1, "n", LONG), NestedField.optional(2, "t", TIMESTAMP))
    theirs = Schema.of(NestedField.optional(1, "n", UNKNOWN), NestedField.optional(2, "t", DATE))
    merged, _ = SchemaUpdate(ours, 2, format_version=3).union_by_name(theirs).apply()
    assert merged.same_columns(ours)


# Literals and evaluators


@pytest.mark.parametrize(("t", "literal", "expected"), [
    (TIMESTAMP_NS, "2017-11-16T22:31:08.123456789", NS),
    (TIMESTAMP_NS, "2017-11-16 22:31:08.123456789", NS),
    (TIMESTAMPTZ_NS, "2017-11-16T14:31:08.123456789-08:00", NS),
    (TIMESTAMPTZ_NS, "2017-11-16T22:31:08.123456789", NS),  # no zone: UTC
    (TIMESTAMP_NS, datetime(2017, 11, 16, 22, 31, 8, 123456), NS - 789),
    (TIMESTAMPTZ_NS, datetime(2017, 11, 16, 22, 31, 8, tzinfo=UTC), NS - 123456789),
    (TIMESTAMP_NS, date(2017, 11, 16), 1510790400 * 10**9),
    (TIMESTAMP_NS, NS, NS),  # an int is in the column's own unit
    (TIMESTAMP, "2017-11-16T22:31:08.123456789", Gap(NS // 1000, NS // 1000 + 1)),
    (TIMESTAMP, "2017-11-16T22:31:08.123456000", NS // 1000),
    (TIMESTAMP_NS, datetime(9999, 1, 1), Gap(2**63 - 1, None)),
], ids=repr)
def test_nanosecond_literals(t: PrimitiveType, literal: Any, expected: Any) -> None:
    assert convert(t, literal) == expected


def test_bound_nanosecond_predicates_round_trip() -> None:
    schema = Schema.of(NestedField.optional(1, "t", TIMESTAMP_NS))
    bound = bind(parse("t > '2017-11-16T22:31:08.123456789'"), schema)
    assert str(bound) == f"t > {NS}"
    assert bind(parse(str(bound)), schema) == bound
    with pytest.raises(ValidationError, match="cannot have a zone offset"):
        bind(parse("t = '2017-11-16T22:31:08+01:00'"), schema)


GEO_SCHEMA = Schema.of(NestedField.optional(1, "g", GEOMETRY),
                       NestedField.optional(2, "v", VARIANT), NestedField.optional(3, "u", UNKNOWN))


@pytest.mark.parametrize(("column", "literal", "message"), [
    ("g", b"\x01", "geometry values cannot be compared"),
    ("v", "x", "variant values cannot be compared"),
    ("u", 1, "unknown values are always null"),
])
def test_columns_without_order_take_no_literal(column: str, literal: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        bind(equal(column, literal), GEO_SCHEMA)
    bind(is_null(column), GEO_SCHEMA)


def test_geometry_bounds_are_never_compared_as_values() -> None:
    box = (GeoPoint(0.0, 0.0).to_bytes(), GeoPoint(10.0, 10.0).to_bytes())
    assert decode_bounds(GEOMETRY, *box) == (None, None)
    f = DataFile("f.parquet", FileFormat.PARQUET, (), record_count=3, file_size_in_bytes=1,
                 value_counts={1: 3}, null_value_counts={1: 0},
                 lower_bounds={1: box[0]}, upper_bounds={1: box[1]})
    assert InclusiveMetricsEvaluator(GEO_SCHEMA, parse("g IS NOT NULL")).eval(f)
    assert not InclusiveMetricsEvaluator(GEO_SCHEMA, parse("g IS NULL")).eval(f)
    assert StrictMetricsEvaluator(GEO_SCHEMA, parse("g IS NOT NULL")).eval(f)
