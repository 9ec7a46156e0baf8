"""Partition specs: the Appendix C example, partition types, schema checks, paths, builder."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from icepark.errors import ValidationError
from icepark.spec.partitioning import (
    PARTITION_FIELD_ID_START,
    UNPARTITIONED,
    PartitionField,
    PartitionSpec,
    PartitionSpecBuilder,
    check_partition_source,
    default_partition_name,
)
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
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

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "data", STRING),
    NestedField.optional(3, "category", STRING),
    NestedField.optional(4, "ts", TIMESTAMPTZ),
    NestedField.optional(5, "d", DATE),
    NestedField.optional(6, "price", PrimitiveType.decimal(9, 2)),
    NestedField.optional(7, "f", FLOAT),
    NestedField.optional(8, "u", UUID),
    NestedField.optional(9, "b", BINARY),
    NestedField.optional(10, "fx", PrimitiveType.fixed(4)),
    NestedField.optional(11, "t", TIME),
    NestedField.optional(12, "flag", BOOLEAN),
    NestedField.optional(13, "loc", StructType((
        NestedField.optional(14, "lat", DOUBLE),
        NestedField.optional(15, "name", STRING),
    ))),
    NestedField.optional(16, "tags", ListType(17, STRING)),
    NestedField.optional(18, "props", MapType(19, STRING, 20, STRING)),
    NestedField.optional(21, "points", ListType(22, StructType((
        NestedField.required(23, "x", INT),
    )))),
    NestedField.optional(24, "n", INT),
    NestedField.optional(25, "local_ts", TIMESTAMP),
)

# Appendix C, *Partition Specs*: the example field list, as the spec prints it.
APPENDIX_C_SPEC = """
{"spec-id": 0, "fields": [ {
  "source-id": 4, "field-id": 1000, "name": "ts_day", "transform": "day"
}, {
  "source-id": 1, "field-id": 1001, "name": "id_bucket", "transform": "bucket[16]"
} ] }
"""


def _spec_from_json(text: str) -> PartitionSpec:
    obj = json.loads(text)
    return PartitionSpec(obj["spec-id"], tuple(
        PartitionField(f["source-id"], f["field-id"], Transform.parse(f["transform"]), f["name"])
        for f in obj["fields"]))


def _spec(*fields: tuple[int, int, str, str], spec_id: int = 0) -> PartitionSpec:
    """A spec from (source_id, field_id, transform, name) rows."""
    return PartitionSpec(spec_id, tuple(PartitionField(s, f, Transform.parse(t), n)
                                        for s, f, t, n in fields))


def test_appendix_c_example() -> None:
    spec = _spec_from_json(APPENDIX_C_SPEC)
    assert spec == PartitionSpecBuilder(SCHEMA).day("ts", "ts_day").bucket("id", 16, "id_bucket") \
        .build()
    spec.check_compatible(SCHEMA)
    assert spec.partition_type(SCHEMA) == StructType((
        NestedField.optional(1000, "ts_day", DATE),
        NestedField.optional(1001, "id_bucket", INT),
    ))
    assert spec.last_assigned_field_id == 1001
    assert not spec.is_unpartitioned


# --- partition_type ------------------------------------------------------------------------

PARTITION_TYPES: list[tuple[str, str, IcebergType]] = [
    ("identity", "data", STRING),
    ("identity", "price", PrimitiveType.decimal(9, 2)),
    ("identity", "loc.name", STRING),
    ("identity", "f", FLOAT),
    ("bucket[16]", "id", INT),
    ("bucket[16]", "u", INT),
    ("truncate[4]", "data", STRING),
    ("truncate[50]", "price", PrimitiveType.decimal(9, 2)),
    ("truncate[10]", "n", INT),
    ("year", "ts", INT),
    ("month", "d", INT),
    ("day", "ts", DATE),
    ("day", "d", DATE),
    ("hour", "local_ts", INT),
    ("void", "id", LONG),
    ("void", "data", STRING),
]


@pytest.mark.parametrize(("transform", "column", "expected"), PARTITION_TYPES)
def test_partition_type_per_transform(transform: str, column: str,
                                      expected: IcebergType) -> None:
    spec = PartitionSpecBuilder(SCHEMA).add(SCHEMA.find_field(column).field_id,
                                            Transform.parse(transform), "p").build()
    assert spec.partition_type(SCHEMA) == StructType((NestedField.optional(1000, "p", expected),))


@pytest.mark.parametrize(("transform", "expected"), [
    ("bucket[8]", INT), ("year", INT), ("month", INT), ("day", DATE), ("hour", INT),
    ("void", INT),
])
def test_partition_type_of_a_dropped_source_uses_the_source_free_result(
        transform: str, expected: IcebergType) -> None:
    spec = _spec((99, 1000, transform, "gone"))
    assert spec.partition_type(SCHEMA).fields[0].field_type == expected


@pytest.mark.parametrize("transform", ["identity", "truncate[3]"])
def test_partition_type_of_a_dropped_source_needs_its_type(transform: str) -> None:
    with pytest.raises(ValidationError, match=r"'gone'.*depends on its source"):
        _spec((99, 1000, transform, "gone")).partition_type(SCHEMA)


def test_partition_type_rejects_a_transform_the_source_no_longer_accepts() -> None:
    with pytest.raises(ValidationError, match="'p': hour cannot transform date"):
        _spec((5, 1000, "hour", "p")).partition_type(SCHEMA)


def test_partition_type_of_unpartitioned() -> None:
    assert UNPARTITIONED.partition_type(SCHEMA) == StructType(())


# --- check_compatible ----------------------------------------------------------------------

REJECTIONS: list[tuple[tuple[tuple[int, int, str, str], ...], str]] = [
    (((99, 1000, "bucket[4]", "p"),), "Cannot find source column 99 for partition field 'p'"),
    (((13, 1000, "identity", "p"),), "'loc': the source must be a primitive type, not struct"),
    (((16, 1000, "identity", "p"),), "must be a primitive type, not list"),
    (((17, 1000, "identity", "p"),),
     "'tags.element': the source cannot be contained in a list, but may be nested in a struct"),
    (((19, 1000, "identity", "p"),), "cannot be contained in a map"),
    (((20, 1000, "truncate[2]", "p"),), "cannot be contained in a map"),
    (((23, 1000, "bucket[2]", "p"),), "'points.element.x'.*cannot be contained in a list"),
    (((5, 1000, "hour", "p"),), re.escape("hour(d): hour does not accept date")),
    (((7, 1000, "bucket[4]", "p"),), re.escape("bucket[4](f): bucket[4] does not accept float")),
    (((5, 1000, "truncate[4]", "p"),), "truncate.4. does not accept date"),
    (((2, 1000, "year", "p"),), "year does not accept string"),
    (((12, 1000, "bucket[2]", "p"),), "does not accept boolean"),
    (((1, 1000, "bucket[4]", "data"),), "'data' collides with schema column"),
    (((2, 1000, "identity", "category"),), "'category' collides with schema column"),
    (((13, 1000, "identity", "loc.lat"),), "collides"),
    (((4, 1000, "day", "pa"), (4, 1001, "month", "pb")),
     re.escape("redundant partition 'pb' (month): conflicts with 'pa' (day)")),
    (((4, 1000, "hour", "pa"), (4, 1001, "year", "pb")), "redundant"),
    (((1, 1000, "bucket[16]", "pa"), (1, 1001, "bucket[16]", "pb")), "redundant"),
    (((2, 1000, "identity", "pa"), (2, 1001, "identity", "pb")), "redundant"),
]


@pytest.mark.parametrize(("fields", "message"), REJECTIONS)
def test_check_compatible_rejections(fields: tuple[tuple[int, int, str, str], ...],
                                     message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _spec(*fields).check_compatible(SCHEMA)


ACCEPTED: list[tuple[tuple[int, int, str, str], ...]] = [
    ((14, 1000, "identity", "lat"),),  # nested in a struct is fine
    ((15, 1000, "identity", "loc.name"),),  # identity may take its own column's name
    ((2, 1000, "identity", "data"),),
    ((4, 1000, "day", "pa"), (4, 1001, "identity", "pb"), (4, 1002, "bucket[4]", "pc")),
    ((1, 1000, "bucket[16]", "pa"), (1, 1001, "bucket[8]", "pb")),
    ((99, 1000, "void", "gone_1000"), (99, 1001, "void", "gone_1001")),  # v1 dropped fields
    ((4, 1000, "void", "ts_month_1000"), (4, 1001, "day", "ts_day")),
    ((3, 1000, "void", "category"),),  # a v1 field voided by an old writer keeps its name
]


@pytest.mark.parametrize("fields", ACCEPTED)
def test_check_compatible_accepts(fields: tuple[tuple[int, int, str, str], ...]) -> None:
    _spec(*fields).check_compatible(SCHEMA)


def test_check_partition_source_returns_the_primitive() -> None:
    assert check_partition_source(SCHEMA, 15, Transform.truncate(2), "p") == STRING


@pytest.mark.parametrize(("fields", "message"), [
    (((1, 1000, "identity", "a"), (2, 1000, "identity", "b")), "Duplicate partition field id 1000"),
    (((1, 1000, "identity", "a"), (2, 1001, "identity", "a")), "Duplicate partition field name"),
])
def test_spec_construction_rejects_duplicates(fields: tuple[tuple[int, int, str, str], ...],
                                              message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _spec(*fields)


def test_partition_field_needs_a_name() -> None:
    with pytest.raises(ValidationError, match="non-empty name"):
        PartitionField(1, 1000, Transform.identity(), "")


# --- properties ----------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "unpartitioned", "last_id"), [
    (UNPARTITIONED, True, PARTITION_FIELD_ID_START - 1),
    (_spec((1, 1000, "void", "a"), (2, 1003, "void", "b")), True, 1003),
    (_spec((1, 1000, "void", "a"), (2, 1001, "identity", "data")), False, 1001),
    (_spec((2, 1005, "identity", "data")), False, 1005),
])
def test_is_unpartitioned_and_last_assigned_field_id(spec: PartitionSpec, unpartitioned: bool,
                                                     last_id: int) -> None:
    assert spec.is_unpartitioned is unpartitioned
    assert spec.last_assigned_field_id == last_id


def test_compatible_with_ignores_only_the_spec_id() -> None:
    a = _spec((1, 1000, "bucket[16]", "id_bucket"), spec_id=0)
    assert a.compatible_with(_spec((1, 1000, "bucket[16]", "id_bucket"), spec_id=7))
    assert not a.compatible_with(_spec((1, 1000, "bucket[16]", "shard")))
    assert not a.compatible_with(_spec((1, 1001, "bucket[16]", "id_bucket")))
    assert not a.compatible_with(_spec((1, 1000, "bucket[8]", "id_bucket")))
    assert not a.compatible_with(_spec((2, 1000, "bucket[16]", "id_bucket")))
    assert not a.compatible_with(UNPARTITIONED)


def test_field_by_name_and_str() -> None:
    spec = _spec_from_json(APPENDIX_C_SPEC)
    assert spec.field_by_name("id_bucket") == spec.fields[1]
    assert spec.field_by_name("nope") is None
    assert str(spec) == "[1000: ts_day: day(4), 1001: id_bucket: bucket[16](1)]"


# --- partition_path ------------------------------------------------------------------------

PATHS: list[tuple[tuple[tuple[int, int, str, str], ...], list[Any], str]] = [
    (((4, 1000, "day", "ts_day"), (1, 1001, "bucket[16]", "id_bucket")), [17486, 3],
     "ts_day=2017-11-16/id_bucket=3"),
    (((2, 1000, "identity", "data"),), ["a b"], "data=a%20b"),
    (((2, 1000, "identity", "data"),), ["a/b"], "data=a%2Fb"),
    (((2, 1000, "identity", "data"),), ["k=v&x?#%"], "data=k%3Dv%26x%3F%23%25"),
    (((2, 1000, "identity", "data"),), ["\u00e9\U0001f600"], "data=%C3%A9%F0%9F%98%80"),
    (((2, 1000, "identity", "data"),), [None], "data=null"),
    (((2, 1000, "identity", "my col/x=y"),), ["v"], "my%20col%2Fx%3Dy=v"),
    (((2, 1000, "truncate[3]", "data_trunc"),), ["ice"], "data_trunc=ice"),
    (((4, 1000, "hour", "h"), (4, 1001, "identity", "ts")), [-1, 0],
     "h=1969-12-31-23/ts=1970-01-01T00%3A00%3A00%2B00%3A00"),
    (((5, 1000, "year", "y"), (5, 1001, "month", "m")), [47, 574], "y=2017/m=2017-11"),
    (((6, 1000, "identity", "price"),), [Decimal("-14.20")], "price=-14.20"),
    (((9, 1000, "identity", "b"),), [b"\xfb\xff"], "b=%2B%2F8%3D"),
    (((12, 1000, "identity", "flag"),), [True], "flag=true"),
    (((1, 1000, "void", "id_null"), (2, 1001, "identity", "data")), [None, "x"],
     "id_null=null/data=x"),
    (((99, 1000, "void", "gone"), (99, 1001, "bucket[4]", "gone_bucket")), [None, 2],
     "gone=null/gone_bucket=2"),
    ((), [], ""),
]


@pytest.mark.parametrize(("fields", "values", "expected"), PATHS)
def test_partition_path(fields: tuple[tuple[int, int, str, str], ...], values: list[Any],
                        expected: str) -> None:
    assert _spec(*fields).partition_path(values, SCHEMA) == expected


def test_partition_path_needs_one_value_per_field() -> None:
    with pytest.raises(ValidationError, match="2 values but spec 0 has 1 fields"):
        _spec((2, 1000, "identity", "data")).partition_path(["a", "b"], SCHEMA)


# --- builder -------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "args", "name"), [
    ("identity", ("data",), "data"),
    ("identity", ("loc.name",), "loc.name"),
    ("bucket", ("id", 16), "id_bucket"),
    ("bucket", ("loc.name", 8), "loc.name_bucket"),
    ("truncate", ("data", 4), "data_trunc"),
    ("year", ("ts",), "ts_year"),
    ("month", ("ts",), "ts_month"),
    ("day", ("d",), "d_day"),
    ("hour", ("local_ts",), "local_ts_hour"),
    ("void", ("id",), "id_null"),
])
def test_builder_default_names(method: str, args: tuple[Any, ...], name: str) -> None:
    builder = PartitionSpecBuilder(SCHEMA)
    spec = getattr(builder, method)(*args).build()
    assert [f.name for f in spec.fields] == [name]
    assert spec.fields[0].source_id == SCHEMA.find_field(args[0]).field_id
    source = SCHEMA.find_type(args[0])
    assert default_partition_name(SCHEMA.find_column_name(spec.fields[0].source_id) or "",
                                  spec.fields[0].transform, with_argument=False) == name
    assert spec.fields[0].transform.can_transform(source)


def test_builder_explicit_names_and_ids() -> None:
    spec = (PartitionSpecBuilder(SCHEMA, spec_id=3, last_assigned_field_id=1004)
            .identity("category", "cat").bucket("id", 4, "shard")
            .add(4, Transform.day(), "day", field_id=1100).month("d").build())
    assert spec.spec_id == 3
    assert [(f.field_id, f.name) for f in spec.fields] == [
        (1005, "cat"), (1006, "shard"), (1100, "day"), (1101, "d_month")]


def test_builder_case_insensitive() -> None:
    spec = PartitionSpecBuilder(SCHEMA, case_sensitive=False).bucket("ID", 4).build()
    assert spec.fields[0].name == "id_bucket"


@pytest.mark.parametrize(("build", "message"), [
    (lambda b: b.identity("nope"), "Cannot find source column 'nope' for partition identity"),
    (lambda b: b.identity("ID"), "Cannot find source column 'ID'"),
    (lambda b: b.hour("d"), "hour does not accept date"),
    (lambda b: b.bucket("f", 4), "bucket.4. does not accept float"),
    (lambda b: b.truncate("d", 4), "does not accept date"),
    (lambda b: b.identity("tags.element"), "cannot be contained in a list"),
    (lambda b: b.day("ts").month("ts"), "redundant"),
    (lambda b: b.identity("data", "x").identity("category", "x"), "Duplicate partition field name"),
    (lambda b: b.bucket("id", 4, "category"), "collides with schema column 'category'"),
    (lambda b: b.bucket("id", 0), "must be positive"),
])
def test_builder_rejections(build: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build(PartitionSpecBuilder(SCHEMA)).build()


def test_a_new_tables_names_follow_the_reference_and_evolution_keeps_arguments() -> None:
    """The reference names a new table's bucket and truncate fields without their argument
    (``id_bucket``), and the fields partition evolution adds with it (``id_bucket_16``); a
    second bucket of one column at creation takes the long name instead of colliding."""
    spec = PartitionSpecBuilder(SCHEMA).bucket("id", 16).bucket("id", 8).truncate(
        "data", 4).build()
    assert [f.name for f in spec.fields] == ["id_bucket", "id_bucket_8", "data_trunc"]
    assert default_partition_name("id", Transform.bucket(16)) == "id_bucket_16"
