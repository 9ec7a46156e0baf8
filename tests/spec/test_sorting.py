"""Sort orders: the Appendix C example, the reserved id 0, schema checks, satisfaction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icepark.errors import ValidationError
from icepark.spec.schema import Schema
from icepark.spec.sorting import (
    UNSORTED,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
    SortOrderBuilder,
)
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DATE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    NestedField,
    StructType,
)

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "category", STRING),
    NestedField.optional(3, "data", STRING),
    NestedField.optional(4, "ts", TIMESTAMPTZ),
    NestedField.optional(5, "d", DATE),
    NestedField.optional(6, "f", FLOAT),
    NestedField.optional(7, "loc", StructType((NestedField.optional(8, "name", STRING),))),
    NestedField.optional(9, "tags", ListType(10, STRING)),
)

# Appendix C, *Sort Orders*: the example, as the spec prints it.
APPENDIX_C_ORDER = """
{"order-id": 1, "fields": [ {
  "transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"
}, {
  "transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"
} ] }
"""

ASC, DESC = SortDirection.ASC, SortDirection.DESC
FIRST, LAST = NullOrder.NULLS_FIRST, NullOrder.NULLS_LAST
IDENTITY = Transform.identity()


def _order_from_json(text: str) -> SortOrder:
    obj = json.loads(text)
    return SortOrder(obj["order-id"], tuple(
        SortField(f["source-id"], Transform.parse(f["transform"]), SortDirection(f["direction"]),
                  NullOrder(f["null-order"]))
        for f in obj["fields"]))


def _field(source_id: int, transform: str = "identity", direction: SortDirection = ASC,
           null_order: NullOrder = FIRST) -> SortField:
    return SortField(source_id, Transform.parse(transform), direction, null_order)


def _order(*fields: SortField, order_id: int = 1) -> SortOrder:
    return SortOrder(order_id, fields)


def test_appendix_c_example() -> None:
    order = _order_from_json(APPENDIX_C_ORDER)
    assert order == (SortOrderBuilder(SCHEMA).asc("category")
                     .desc("data", transform=Transform.bucket(4)).build())
    order.check_compatible(SCHEMA)
    assert str(order) == "1: [identity(2) asc nulls-first, bucket[4](3) desc nulls-last]"


def test_enum_values_are_the_json_strings() -> None:
    assert [d.value for d in SortDirection] == ["asc", "desc"]
    assert [n.value for n in NullOrder] == ["nulls-first", "nulls-last"]


def test_sort_field_accepts_the_json_strings() -> None:
    direction: Any = "desc"
    null_order: Any = "nulls-last"
    f = SortField(1, IDENTITY, direction, null_order)
    assert f.direction is DESC
    assert f.null_order is LAST


@pytest.mark.parametrize(("direction", "null_order", "message"), [
    ("up", "nulls-first", "Invalid sort direction 'up' for source 1"),
    ("asc", "nulls-middle", "Invalid null order 'nulls-middle' for source 1"),
])
def test_sort_field_rejects_other_strings(direction: Any, null_order: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SortField(1, IDENTITY, direction, null_order)


# --- "Order id 0 is reserved for the unsorted order" ---------------------------------------

def test_unsorted() -> None:
    assert SortOrder() == UNSORTED
    assert UNSORTED.order_id == 0
    assert UNSORTED.is_unsorted
    assert not _order(_field(1)).is_unsorted
    UNSORTED.check_compatible(SCHEMA)


def test_order_id_0_cannot_have_fields() -> None:
    with pytest.raises(ValidationError, match="id 0 is reserved for the unsorted order"):
        SortOrder(0, (_field(1),))


@pytest.mark.parametrize("order_id", [1, 5])
def test_an_order_without_fields_must_have_id_0(order_id: int) -> None:
    with pytest.raises(ValidationError, match=f"Unsorted order must have id 0, not {order_id}"):
        SortOrder(order_id, ())


# --- check_compatible ----------------------------------------------------------------------

@pytest.mark.parametrize(("field", "message"), [
    (_field(99), "Cannot find source column 99 for sort field"),
    (_field(7), "Cannot sort by 'loc': the source must be a primitive type, not struct"),
    (_field(9), "must be a primitive type, not list"),
    (_field(5, "hour"), r"Cannot sort by hour\(d\): hour does not accept date"),
    (_field(6, "bucket[4]"), "bucket.4. does not accept float"),
    (_field(5, "truncate[2]"), "does not accept date"),
])
def test_check_compatible_rejections(field: SortField, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _order(field).check_compatible(SCHEMA)


@pytest.mark.parametrize("field", [
    _field(8), _field(10), _field(4, "day", DESC, LAST), _field(6), _field(3, "truncate[3]"),
    _field(1, "bucket[8]"), _field(2, "void"),
])
def test_check_compatible_accepts(field: SortField) -> None:
    _order(field).check_compatible(SCHEMA)


# --- satisfies -----------------------------------------------------------------------------

SATISFIES: list[tuple[SortOrder, SortOrder, bool]] = [
    (UNSORTED, UNSORTED, True),
    (_order(_field(1)), UNSORTED, True),
    (UNSORTED, _order(_field(1)), False),
    (_order(_field(1)), _order(_field(1), order_id=9), True),
    (_order(_field(1), _field(2)), _order(_field(1)), True),  # a prefix is enough
    (_order(_field(1)), _order(_field(1), _field(2)), False),  # other has more fields
    (_order(_field(2), _field(1)), _order(_field(1)), False),  # order of fields matters
    (_order(_field(1, direction=DESC)), _order(_field(1)), False),
    (_order(_field(1, null_order=LAST)), _order(_field(1)), False),
    (_order(_field(1)), _order(_field(2)), False),
    (_order(_field(4, "day")), _order(_field(4, "month")), True),
    (_order(_field(4, "hour")), _order(_field(4, "year")), True),
    (_order(_field(4, "month")), _order(_field(4, "day")), False),
    (_order(_field(4)), _order(_field(4, "day")), True),
    (_order(_field(3)), _order(_field(3, "truncate[4]")), True),
    (_order(_field(1)), _order(_field(1, "bucket[4]")), False),
    (_order(_field(1, "bucket[4]")), _order(_field(1, "bucket[4]")), True),
    (_order(_field(3, "truncate[4]")), _order(_field(3)), False),
    (_order(_field(4, "day"), _field(1)), _order(_field(4, "month")), True),
]


@pytest.mark.parametrize(("this", "other", "expected"), SATISFIES)
def test_satisfies(this: SortOrder, other: SortOrder, expected: bool) -> None:
    assert this.satisfies(other) is expected


@pytest.mark.parametrize(("this", "other", "schema", "expected"), [
    # a string truncated to 8 is ordered by its first 4 code points, not the other way round
    (_field(3, "truncate[8]"), _field(3, "truncate[4]"), SCHEMA, True),
    (_field(3, "truncate[4]"), _field(3, "truncate[8]"), SCHEMA, False),
    # a long truncated to 10 is ordered by truncate[100]
    (_field(1, "truncate[10]"), _field(1, "truncate[100]"), SCHEMA, True),
    (_field(1, "truncate[100]"), _field(1, "truncate[10]"), SCHEMA, False),
    # without a schema the source type is unknown: only equal widths are claimed
    (_field(3, "truncate[8]"), _field(3, "truncate[4]"), None, False),
])
def test_truncate_satisfaction_depends_on_the_source_type(
        this: SortField, other: SortField, schema: Schema | None, expected: bool) -> None:
    assert _order(this).satisfies(_order(other), schema) is expected
    assert this.satisfies(other, schema) is expected


def test_same_order_ignores_the_order_id() -> None:
    assert _order(_field(1), order_id=1).same_order(_order(_field(1), order_id=2))
    assert not _order(_field(1)).same_order(_order(_field(1, direction=DESC)))
    assert UNSORTED.same_order(SortOrder())


# --- builder -------------------------------------------------------------------------------

def test_builder_defaults_follow_the_reference_implementation() -> None:
    order = SortOrderBuilder(SCHEMA).asc("id").desc("data").build()
    assert order.order_id == 1
    assert order.fields == (SortField(1, IDENTITY, ASC, FIRST), SortField(3, IDENTITY, DESC, LAST))


def test_builder_explicit_null_order_transform_and_id() -> None:
    order = (SortOrderBuilder(SCHEMA, order_id=4).asc("ts", LAST, "day")
             .desc("loc.name", FIRST, Transform.truncate(2)).build())
    assert order == SortOrder(4, (SortField(4, Transform.day(), ASC, LAST),
                                  SortField(8, Transform.truncate(2), DESC, FIRST)))


def test_builder_case_insensitive() -> None:
    order = SortOrderBuilder(SCHEMA, case_sensitive=False).asc("ID").build()
    assert order.fields[0].source_id == 1


def test_builder_without_fields_is_unsorted() -> None:
    assert SortOrderBuilder(SCHEMA, order_id=3).build() is UNSORTED


@pytest.mark.parametrize(("build", "message"), [
    (lambda b: b.asc("nope"), "Cannot find source column 'nope' for sort field"),
    (lambda b: b.asc("ID"), "Cannot find source column 'ID'"),
    (lambda b: b.desc("loc"), "must be a primitive type, not struct"),
    (lambda b: b.asc("d", transform="hour"), "hour does not accept date"),
    (lambda b: b.asc("id", transform="zorder"), "Unknown transform 'zorder'"),
])
def test_builder_rejections(build: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build(SortOrderBuilder(SCHEMA)).build()


def test_builder_rejects_order_id_0_with_fields() -> None:
    with pytest.raises(ValidationError, match="reserved for the unsorted order"):
        SortOrderBuilder(SCHEMA, order_id=0).asc("id").build()
