"""Primitive and nested types: construction, parsing, promotion rules."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
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
    TypeId,
    child_fields,
    is_promotion_allowed,
    parse_primitive,
    promotion_error,
)

ALL_SIMPLE = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, STRING,
              UUID, BINARY]


@pytest.mark.parametrize("t", ALL_SIMPLE, ids=str)
def test_simple_primitives_round_trip_through_their_json_name(t: PrimitiveType) -> None:
    assert parse_primitive(str(t)) is t


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("decimal(9,2)", PrimitiveType.decimal(9, 2)),
        ("decimal(9, 2)", PrimitiveType.decimal(9, 2)),  # Appendix C shows both forms
        ("decimal(38,0)", PrimitiveType.decimal(38, 0)),
        ("fixed[16]", PrimitiveType.fixed(16)),
        ("fixed[1]", PrimitiveType.fixed(1)),
    ],
)
def test_parameterised_primitives_parse(text: str, expected: PrimitiveType) -> None:
    assert parse_primitive(text) == expected
    assert parse_primitive(str(expected)) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("decimal(39,2)", "precision must be between 1 and 38"),
        ("decimal(0,0)", "precision"),
        ("fixed[0]", "fixed length 0"),
        ("varchar", "Unknown primitive type 'varchar'"),
        ("Long", "Unknown primitive type"),
        ("decimal(9)", "Unknown primitive type"),
        ("fixed[]", "Unknown primitive type"),
        ("struct", "Unknown primitive type"),
    ],
)
def test_bad_type_strings_are_rejected(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_primitive(text)


def test_parameters_belong_only_to_their_types() -> None:
    with pytest.raises(ValidationError, match="takes no precision"):
        PrimitiveType(TypeId.LONG, precision=3)
    with pytest.raises(ValidationError, match="takes no length"):
        PrimitiveType(TypeId.STRING, length=3)
    with pytest.raises(ValidationError, match="nested type"):
        PrimitiveType(TypeId.STRUCT)


def test_named_field_constructors() -> None:
    f = NestedField.required(1, "id", LONG, doc="key")
    assert f.is_required and not f.is_optional and f.doc == "key"
    g = NestedField.optional(2, "x", STRING, initial_default="a", write_default="b")
    assert g.is_optional and g.initial_default == "a" and g.write_default == "b"
    with pytest.raises(ValidationError, match="non-empty name"):
        NestedField.optional(3, "", STRING)


def test_struct_rejects_duplicate_names() -> None:
    with pytest.raises(ValidationError, match="Duplicate field name 'a'"):
        StructType((NestedField.optional(1, "a", INT), NestedField.optional(2, "a", LONG)))


def test_nested_children() -> None:
    lst = ListType(3, STRING, element_required=False)
    mp = MapType(4, STRING, 5, DOUBLE, value_required=False)
    assert child_fields(lst) == (NestedField.optional(3, "element", STRING),)
    assert child_fields(mp) == (NestedField.required(4, "key", STRING),
                                NestedField.optional(5, "value", DOUBLE))
    assert child_fields(LONG) == ()
    assert str(mp) == "map<string, double>"


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [
        (INT, LONG, True),
        (FLOAT, DOUBLE, True),
        (PrimitiveType.decimal(9, 2), PrimitiveType.decimal(12, 2), True),
        (LONG, LONG, True),
        (LONG, INT, False),
        (DOUBLE, FLOAT, False),
        (INT, DOUBLE, False),
        (STRING, INT, False),
        (PrimitiveType.decimal(9, 2), PrimitiveType.decimal(9, 3), False),
        (PrimitiveType.decimal(12, 2), PrimitiveType.decimal(9, 2), False),
        (PrimitiveType.fixed(4), PrimitiveType.fixed(8), False),
        (DATE, TIMESTAMP, False),
        (STRING, StructType(()), False),
    ],
)
def test_promotions_follow_the_spec(source: PrimitiveType, target: PrimitiveType,
                                    allowed: bool) -> None:
    assert is_promotion_allowed(source, target) is allowed


def test_promotion_errors_say_why() -> None:
    assert promotion_error(PrimitiveType.decimal(9, 2), PrimitiveType.decimal(9, 3)) == (
        "Cannot promote decimal(9,2) to decimal(9,3): scale is fixed")
    assert "precision can only be widened" in promotion_error(
        PrimitiveType.decimal(12, 2), PrimitiveType.decimal(9, 2))
    assert promotion_error(STRING, INT) == "Cannot promote string to int"
