"""Schemas: indexes by ID, name and parent; accessors; identifier field rules."""

from __future__ import annotations

import pytest

from icepark.errors import ValidationError
from icepark.spec.schema import (
    Schema,
    SchemaVisitor,
    assign_fresh_ids,
    fresh_schema,
    index_by_name,
    index_parents,
    visit,
)
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)


def nested_schema() -> Schema:
    """The nested-type-system.md example, extended with a map and a list of structs."""
    return Schema.of(
        NestedField.required(1, "user_id", LONG),
        NestedField.optional(2, "profile", StructType((
            NestedField.optional(3, "first_name", STRING),
            NestedField.optional(4, "last_name", STRING),
        ))),
        NestedField.optional(5, "tags", ListType(6, STRING, element_required=True)),
        NestedField.optional(7, "props", MapType(8, STRING, 9, DOUBLE, value_required=False)),
        NestedField.optional(10, "points", ListType(11, StructType((
            NestedField.required(12, "x", DOUBLE),
            NestedField.required(13, "y", DOUBLE),
        )))),
        NestedField.required(14, "key", StructType((
            NestedField.required(15, "part", INT),
        ))),
        schema_id=3,
        identifier_field_ids=[1, 15],
    )


def test_index_by_name_has_full_and_short_names() -> None:
    names = index_by_name(nested_schema())
    assert names["profile.first_name"] == 3
    assert names["tags.element"] == 6
    assert names["props.key"] == 8
    assert names["props.value"] == 9
    assert names["points.element.x"] == 12
    assert names["points.x"] == 12  # short name without "element"
    assert "props.key" in names and "tags" in names


def test_find_field_by_name_id_and_case() -> None:
    s = nested_schema()
    assert s.find_field("profile.last_name").field_id == 4
    assert s.find_field(13).name == "y"
    assert s.find_field("PROFILE.First_Name", case_sensitive=False).field_id == 3
    assert s.find_type("props.value") == DOUBLE
    assert s.find_column_name(12) == "points.element.x"
    assert s.find_field_id("nope") is None
    with pytest.raises(ValidationError, match="Cannot find field 'nope'"):
        s.find_field("nope")
    with pytest.raises(ValidationError, match="Cannot find field with id 99"):
        s.find_field(99)
    with pytest.raises(ValidationError):
        s.find_field("PROFILE.first_name")  # case-sensitive by default


def test_parents_and_highest_id() -> None:
    s = nested_schema()
    assert s.parent_id(3) == 2
    assert s.parent_id(12) == 11 and s.parent_id(11) == 10
    assert s.parent_id(1) is None
    assert s.highest_field_id == 15
    assert index_parents(s)[9] == 7
    assert s.field_ids == frozenset(range(1, 16))


def test_accessors_follow_struct_positions() -> None:
    s = nested_schema()
    row: tuple[object, ...] = (7, ("Ada", "Lovelace"), ["a"], {}, [], (42,))
    assert s.accessor(1).get(row) == 7
    assert s.accessor(4).get(row) == "Lovelace"
    assert s.accessor(15).get(row) == 42
    assert s.accessor(3).get((7, None, None, None, None, None)) is None
    with pytest.raises(ValidationError, match="inside a list or map"):
        s.accessor(12)
    with pytest.raises(ValidationError, match="Cannot find field with id 77"):
        s.accessor(77)


def test_duplicate_ids_are_rejected_anywhere() -> None:
    with pytest.raises(ValidationError, match="Duplicate field id 2"):
        Schema.of(NestedField.optional(1, "a", ListType(2, INT)),
                  NestedField.optional(2, "b", INT))
    with pytest.raises(ValidationError, match="Duplicate field name 'a'"):
        Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(2, "a", INT))


@pytest.mark.parametrize(
    ("fields", "ids", "message"),
    [
        ((NestedField.optional(1, "a", INT),), [1], "must be required"),
        ((NestedField.required(1, "a", FLOAT),), [1], "float and double"),
        ((NestedField.required(1, "a", DOUBLE),), [1], "float and double"),
        ((NestedField.required(1, "a", StructType((NestedField.required(2, "b", INT),))),),
         [1], "must be a primitive"),
        ((NestedField.optional(1, "a", StructType((NestedField.required(2, "b", INT),))),),
         [2], "nested in optional struct 'a'"),
        ((NestedField.required(1, "a", ListType(2, INT)),), [2], "nested in a list"),
        ((NestedField.required(1, "a", MapType(2, INT, 3, INT)),), [2], "nested in a map"),
        ((NestedField.required(1, "a", INT),), [5], "Identifier field 5 is not in the schema"),
    ],
)
def test_identifier_field_rules(fields: tuple[NestedField, ...], ids: list[int],
                                message: str) -> None:
    """Spec: "Float, double, and optional fields cannot be used as identifier fields and a
    nested field cannot be used as an identifier field if it is nested in an optional struct"."""
    with pytest.raises(ValidationError, match=message):
        Schema.of(*fields, identifier_field_ids=ids)


def test_identifier_fields_nested_in_required_structs_are_allowed() -> None:
    s = nested_schema()
    assert s.identifier_field_names() == ("user_id", "key.part")


def test_assign_fresh_ids_numbers_each_struct_level_first() -> None:
    counter = iter(range(100, 200))
    fresh = assign_fresh_ids(nested_schema().as_struct(), lambda: next(counter))
    assert isinstance(fresh, StructType)
    assert [f.field_id for f in fresh.fields] == list(range(100, 106))
    by_name = index_by_name(fresh)
    assert by_name["profile.first_name"] == 106
    assert by_name["points.element"] == 111  # after profile's 106-107, tags 108, props 109-110
    assert by_name["points.element.x"] == 112 and by_name["key.part"] == 114


def test_fresh_schema_keeps_identifier_fields_by_name() -> None:
    s = Schema.of(NestedField.optional(7, "b", STRING), NestedField.required(9, "a", LONG),
                  identifier_field_ids=[9])
    fresh, last = fresh_schema(s)
    assert [f.field_id for f in fresh.fields] == [1, 2]
    assert fresh.identifier_field_ids == (2,) and last == 2


class _CountPrimitives(SchemaVisitor[int]):
    def struct(self, struct: StructType, field_results: list[int]) -> int:
        return sum(field_results)

    def field(self, f: NestedField, field_result: int) -> int:
        return field_result

    def list(self, list_type: ListType, element_result: int) -> int:
        return element_result

    def map(self, map_type: MapType, key_result: int, value_result: int) -> int:
        return key_result + value_result

    def primitive(self, primitive: PrimitiveType) -> int:
        return 1


def test_visitor_reaches_every_primitive() -> None:
    assert visit(nested_schema(), _CountPrimitives()) == 9


def test_schema_equality_ignores_indexes() -> None:
    assert nested_schema() == nested_schema()
    assert nested_schema().same_columns(nested_schema().with_schema_id(9))
    assert hash(nested_schema()) == hash(nested_schema())
