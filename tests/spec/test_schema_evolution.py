"""Schema evolution: adds, deletes, renames, promotions, moves, defaults, identifier fields and
union by name, each on top-level and nested fields, plus a Hypothesis property on field IDs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.spec.evolution.schema_update import SchemaUpdate
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    MAX_FIELD_ID,
    STRING,
    TIMESTAMP,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    child_fields,
)

DEC_9_2 = PrimitiveType.decimal(9, 2)
DEC_12_2 = PrimitiveType.decimal(12, 2)
LAST = 24


def base_schema() -> Schema:
    """The nested-type-system.md example, extended with a list of structs, a map of structs and
    struct-in-struct nesting."""
    return Schema.of(
        NestedField.required(1, "user_id", LONG),
        NestedField.optional(2, "profile", StructType((
            NestedField.optional(3, "first_name", STRING),
            NestedField.optional(4, "last_name", STRING),
            NestedField.required(5, "uid", LONG),
        ))),
        NestedField.optional(6, "tags", ListType(7, STRING, element_required=True)),
        NestedField.optional(8, "locations", ListType(9, StructType((
            NestedField.required(10, "lat", FLOAT),
            NestedField.required(11, "long", FLOAT),
        )))),
        NestedField.optional(12, "props", MapType(13, STRING, 14, StructType((
            NestedField.optional(15, "v", INT),
            NestedField.optional(16, "p", DEC_9_2),
        )), value_required=False)),
        NestedField.required(17, "meta", StructType((
            NestedField.required(18, "created", TIMESTAMP),
            NestedField.required(19, "inner", StructType((NestedField.required(20, "x", INT),))),
        ))),
        NestedField.optional(21, "price", DEC_9_2),
        NestedField.optional(22, "amount", DEC_12_2),
        NestedField.optional(23, "score", FLOAT),
        NestedField.optional(24, "name", STRING),
        schema_id=7,
        identifier_field_ids=[1],
    )


BASE = base_schema()


def update(**kwargs: Any) -> SchemaUpdate:
    return SchemaUpdate(BASE, LAST, **kwargs)


def names_in(schema: Schema, parent: str | None = None) -> list[str]:
    """Field names of the struct at ``parent`` (None: top level), in order."""
    t = schema.as_struct() if parent is None else schema.find_type(parent)
    while isinstance(t, ListType | MapType):
        t = t.element_type if isinstance(t, ListType) else t.value_type
    assert isinstance(t, StructType)
    return [f.name for f in t.fields]


def all_ids(t: IcebergType) -> Iterator[int]:
    for f in child_fields(t):
        yield f.field_id
        yield from all_ids(f.field_type)


# ------------------------------------------------------------------------------------ add

@pytest.mark.parametrize(("path", "full_name"), [
    ("email", "email"),
    (("email",), "email"),
    ("profile.middle_name", "profile.middle_name"),  # struct in struct
    ("meta.inner.y", "meta.inner.y"),  # three levels of structs
    ("locations.alt", "locations.element.alt"),  # struct in a list element (short path)
    ("locations.element.alt", "locations.element.alt"),
    ("props.extra", "props.value.extra"),  # struct in a map value (short path)
    (("props", "value", "extra"), "props.value.extra"),
    (("a.b",), "a.b"),  # a name containing a dot
])
def test_add_column_gets_the_next_id(path: str | tuple[str, ...], full_name: str) -> None:
    schema, last = update().add_column(path, STRING, doc="new").apply()
    added = schema.find_field(LAST + 1)
    assert (schema.find_column_name(LAST + 1), added.doc, added.is_optional) == (
        full_name, "new", True)
    assert last == LAST + 1
    assert schema.schema_id == BASE.schema_id
    assert schema.identifier_field_ids == BASE.identifier_field_ids


@pytest.mark.parametrize(("field_type", "expected"), [
    # "Adding a new field assigns a new ID for that field and for any nested fields."
    (ListType(1, StructType((NestedField.required(2, "x", INT),
                             NestedField.optional(3, "y", INT)))),
     {"c": 25, "c.element": 26, "c.element.x": 27, "c.element.y": 28}),
    (MapType(1, STRING, 2, ListType(3, INT)),
     {"c": 25, "c.key": 26, "c.value": 27, "c.value.element": 28}),
    (StructType((NestedField.optional(100, "s", StructType((NestedField.optional(200, "t", INT),))),
                 NestedField.optional(300, "u", INT))),
     {"c": 25, "c.s": 26, "c.u": 27, "c.s.t": 28}),
])
def test_add_nested_type_assigns_fresh_ids(field_type: IcebergType,
                                           expected: dict[str, int]) -> None:
    schema, last = update().add_column("c", field_type).apply()
    assert {n: schema.find_field(n).field_id for n in expected} == expected
    assert last == max(expected.values())


@pytest.mark.parametrize(("path", "kwargs", "match"), [
    ("nope.x", {}, "Cannot add column 'nope.x': column 'nope' is not in the schema"),
    ("user_id.x", {}, "parent 'user_id' is long, not a struct"),
    ("tags.x", {}, "parent 'tags' is list<string>, not a struct"),
    ("profile.first_name", {}, "'profile' already has a column named 'first_name'"),
    ("user_id", {}, "the table already has a column named 'user_id'"),
    ("locations.lat", {}, "'locations.element' already has a column named 'lat'"),
    ("profile.", {}, "a name must not be empty"),
    ("c", {"required": True}, "without an initial default"),
])
def test_add_column_rejections(path: str, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        update().add_column(path, INT, **kwargs)


def test_add_rejects_case_insensitive_clash() -> None:
    update().add_column("USER_ID", LONG)  # a distinct name when case-sensitive
    with pytest.raises(ValidationError, match="already has a column named 'user_id'"):
        update(case_sensitive=False).add_column("USER_ID", LONG)


def test_add_required_column_without_default_needs_incompatible_changes() -> None:
    schema, _ = update(allow_incompatible_changes=True).add_column("c", INT, required=True).apply()
    assert schema.find_field("c").is_required


def test_add_under_deleted_parent_is_rejected() -> None:
    with pytest.raises(ValidationError, match="column 'profile' is deleted in this update"):
        update().delete_column("profile").add_column("profile.x", INT)


def test_add_under_added_struct_and_move_it() -> None:
    schema, last = (update().add_column("s", StructType((NestedField.optional(1, "a", INT),)))
                    .add_column("s.b", INT).move_first("s.b").apply())
    assert names_in(schema, "s") == ["b", "a"]
    assert schema.find_field("s.b").field_id == last == 27


def test_delete_then_add_same_name_gets_a_new_id() -> None:
    schema, last = (update().delete_column("name").add_column("name", LONG)
                    .move_first("name").apply())
    assert schema.find_field("name").field_id == 25 == last
    assert schema.find_field("name").field_type == LONG
    assert names_in(schema)[0] == "name"  # "name" now means the added column


# ------------------------------------------------------------------------------- defaults

@pytest.mark.parametrize(("version", "kwargs", "match"), [
    (2, {"initial_default": 5}, "format version 2"),
    (1, {"initial_default": 5}, "format version 1"),
    (2, {"write_default": 5}, "Default values are added to struct fields in v3"),
    (2, {"required": True, "initial_default": 5}, "format version 2"),
    (3, {"initial_default": "5"}, "Invalid initial_default for 'c'"),
    (3, {"initial_default": 2**40}, "out of range"),
    (3, {"required": True, "write_default": 5}, "without an initial default"),
])
def test_add_default_rejections(version: int, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        update(format_version=version).add_column("c", INT, **kwargs)


@pytest.mark.parametrize(("kwargs", "initial", "write"), [
    ({"required": True, "initial_default": 5}, 5, 5),  # write-default starts as initial-default
    ({"initial_default": 5, "write_default": 6}, 5, 6),
    ({"write_default": 6}, None, 6),
    ({}, None, None),
])
def test_add_defaults_in_v3(kwargs: dict[str, Any], initial: Any, write: Any) -> None:
    schema, _ = update(format_version=3).add_column("c", INT, **kwargs).apply()
    f = schema.find_field("c")
    assert (f.initial_default, f.write_default) == (initial, write)


def test_struct_defaults_are_rekeyed_to_fresh_ids() -> None:
    point = StructType((NestedField.required(1, "x", INT), NestedField.optional(2, "y", INT)))
    nested = StructType((NestedField.optional(7, "pt", point, initial_default={1: 3}),))
    schema, _ = (update(format_version=3)
                 .add_column("pt", point, initial_default={1: 1, 2: 2})
                 .add_column("n", nested).apply())
    assert schema.find_field("pt").initial_default == {26: 1, 27: 2}
    assert schema.find_field("pt").write_default == {26: 1, 27: 2}
    assert schema.find_field("n.pt").initial_default == {30: 3}


def test_struct_default_with_unknown_field_is_rejected() -> None:
    point = StructType((NestedField.required(1, "x", INT),))
    with pytest.raises(ValidationError, match="Invalid initial_default"):
        update(format_version=3).add_column("pt", point, initial_default={9: 1})


@pytest.mark.parametrize(("version", "value", "match"), [
    (2, 7, "format version 2"),
    (3, "7", "Invalid write_default for 'props.value.v'"),
])
def test_update_write_default_rejections(version: int, value: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        update(format_version=version).update_column("props.v", write_default=value)


def test_update_write_default_keeps_initial_default() -> None:
    schema, _ = (update(format_version=3).add_column("c", INT, initial_default=1)
                 .update_column("c", write_default=2).apply())
    f = schema.find_field("c")
    assert (f.initial_default, f.write_default) == (1, 2)
    schema, _ = update(format_version=3).update_column("meta.inner.x", write_default=9).apply()
    assert schema.find_field("meta.inner.x").write_default == 9
    schema, _ = update().update_column("name", write_default=None).apply()  # clearing: no-op
    assert schema == BASE


def test_defaults_only_on_struct_fields() -> None:
    with pytest.raises(ValidationError, match="struct fields"):
        update(format_version=3).update_column("tags.element", write_default="x")


# --------------------------------------------------------------------------------- delete

@pytest.mark.parametrize(("path", "parent", "remaining"), [
    ("name", None, ["user_id", "profile", "tags", "locations", "props", "meta", "price",
                    "amount", "score"]),
    ("profile.first_name", "profile", ["last_name", "uid"]),
    ("meta.inner.x", "meta.inner", []),
    ("locations.lat", "locations", ["long"]),
    ("props.value.v", "props", ["p"]),
    (("profile", "last_name"), "profile", ["first_name", "uid"]),
])
def test_delete_column(path: str | tuple[str, ...], parent: str | None,
                       remaining: list[str]) -> None:
    schema, last = update().delete_column(path).apply()
    assert names_in(schema, parent) == remaining
    assert last == LAST


@pytest.mark.parametrize(("build", "match"), [
    (lambda u: u.delete_column("nope"), "Cannot delete 'nope': column 'nope' is not in the"),
    (lambda u: u.delete_column("tags.element"), "is a list element or map key or value"),
    (lambda u: u.delete_column("props.key"), "is a list element or map key or value"),
    (lambda u: u.delete_column("name").delete_column("name"), "'name' is deleted in this"),
    (lambda u: u.delete_column("profile").delete_column("profile.first_name"),
     "'profile.first_name' is inside a deleted column"),
    (lambda u: u.rename_column("name", "n").delete_column("name"),
     "column 'n' was renamed in this update"),
    (lambda u: u.update_column("score", DOUBLE).delete_column("score"), "was updated"),
    (lambda u: u.move_first("name").delete_column("name"), "was moved"),
    (lambda u: u.rename_column("profile.first_name", "f").delete_column("profile"),
     "column 'profile.f' was renamed"),
    (lambda u: u.add_column("profile.x", INT).delete_column("profile"),
     "'profile' was given new columns"),
    (lambda u: u.delete_column("name").update_column("name", doc="d"),
     "Cannot update 'name': column 'name' is deleted in this update"),
    (lambda u: u.delete_column("name").rename_column("name", "m"), "is deleted in this update"),
    (lambda u: u.delete_column("name").move_first("name"), "is deleted in this update"),
    (lambda u: u.delete_column("name").move_after("score", "name"), "is deleted in this"),
    (lambda u: u.delete_column("user_id").apply(),
     "Cannot delete identifier field 'user_id'"),
    (lambda u: u.delete_column("meta").set_identifier_fields("meta.created"),
     "'meta.created' is inside a deleted column"),
])
def test_delete_rejections(build: Callable[[SchemaUpdate], object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        build(update())


def test_delete_identifier_field_after_resetting_identifiers() -> None:
    for u in (update().set_identifier_fields("meta.created").delete_column("user_id"),
              update().delete_column("user_id").set_identifier_fields("meta.created")):
        schema, _ = u.apply()
        assert schema.identifier_field_names() == ("meta.created",)
        assert schema.find_field_id("user_id") is None


def test_delete_added_column() -> None:
    schema, last = update().add_column("c", INT).delete_column("c").apply()
    assert schema == BASE
    assert last == LAST + 1  # an ID once assigned is never reused


# --------------------------------------------------------------------------------- rename

@pytest.mark.parametrize(("path", "new_name", "field_id", "full_name"), [
    # nested-type-system.md: "Modifying profile.first_name to profile.given_name" keeps ID 3
    ("profile.first_name", "given_name", 3, "profile.given_name"),
    ("name", "full_name", 24, "full_name"),
    ("meta.inner.x", "xx", 20, "meta.inner.xx"),
    ("locations.lat", "latitude", 10, "locations.element.latitude"),
    ("props.value.p", "pp", 16, "props.value.pp"),
    ("profile", "person", 2, "person"),
    (("name",), "a.b", 24, "a.b"),
])
def test_rename_keeps_the_id(path: str | tuple[str, ...], new_name: str, field_id: int,
                             full_name: str) -> None:
    schema, last = update().rename_column(path, new_name).apply()
    assert schema.find_column_name(field_id) == full_name
    assert schema.find_field(field_id).field_type == BASE.find_field(field_id).field_type
    assert last == LAST


@pytest.mark.parametrize(("build", "match"), [
    (lambda u: u.rename_column("name", "name"), "renaming must change the name"),
    (lambda u: u.rename_column("name", "score"), "the table already has a column named 'score'"),
    (lambda u: u.rename_column("profile.first_name", "last_name"),
     "'profile' already has a column named 'last_name'"),
    (lambda u: u.rename_column("tags.element", "e"), "list element or map key or value"),
    (lambda u: u.rename_column("props.value", "e"), "list element or map key or value"),
    (lambda u: u.rename_column("nope", "x"), "column 'nope' is not in the schema"),
    (lambda u: u.rename_column("profile.nope", "x"), "column 'profile.nope' is not in"),
    (lambda u: u.rename_column("name", ""), "a name must not be empty"),
    (lambda u: u.rename_column("profile.first_name", "f").rename_column("profile.f", "g"),
     "column 'profile.f' is not in the schema"),  # paths use the input schema's names
])
def test_rename_rejections(build: Callable[[SchemaUpdate], object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        build(update())


def test_rename_twice_last_wins() -> None:
    schema, _ = update().rename_column("name", "a").rename_column("name", "b").apply()
    assert schema.find_column_name(24) == "b"


def test_rename_to_name_of_deleted_sibling_or_case_insensitive() -> None:
    schema, _ = (update().delete_column("profile.last_name")
                 .rename_column("profile.first_name", "last_name").apply())
    assert schema.find_field("profile.last_name").field_id == 3
    schema, _ = update(case_sensitive=False).rename_column("PROFILE.FIRST_NAME", "given").apply()
    assert schema.find_column_name(3) == "profile.given"
    with pytest.raises(ValidationError, match="already has a column named 'score'"):
        update(case_sensitive=False).rename_column("name", "SCORE")


def test_rename_and_move_added_column() -> None:
    schema, _ = update().add_column("c", INT).rename_column("c", "d").move_first("d").apply()
    assert names_in(schema)[0] == "d"


def test_names_with_dots() -> None:
    base = Schema.of(NestedField.optional(1, "a.b", StructType((
        NestedField.optional(2, "c", INT),))))
    schema, _ = SchemaUpdate(base, 2).rename_column("a.b", "x").apply()  # literal name
    assert schema.find_field_id("x") == 1
    schema, _ = SchemaUpdate(base, 2).add_column(("a.b", "d.e"), INT).apply()
    assert names_in(schema, "a.b") == ["c", "d.e"]
    schema, _ = SchemaUpdate(base, 2).add_column("a.b.d", INT).apply()  # parent by literal name
    assert schema.find_column_name(3) == "a.b.d"


# ---------------------------------------------------------------------------- update type

@pytest.mark.parametrize(("path", "new_type"), [
    ("meta.inner.x", LONG),  # int to long
    ("score", DOUBLE),  # float to double
    ("price", DEC_12_2),  # decimal(9,2) to decimal(12,2)
    ("locations.lat", DOUBLE),  # in a list element's struct
    ("props.v", LONG),  # in a map value's struct
    ("props.value.p", PrimitiveType.decimal(38, 2)),
    ("name", STRING),  # unchanged: a no-op
])
def test_allowed_promotions(path: str, new_type: IcebergType) -> None:
    schema, _ = update().update_column(path, new_type).apply()
    f = schema.find_field(path)
    assert (f.field_type, f.field_id) == (new_type, BASE.find_field(path).field_id)


def test_promote_list_element_and_map_key() -> None:
    base = Schema.of(NestedField.optional(1, "l", ListType(2, INT)),
                     NestedField.optional(3, "m", MapType(4, INT, 5, FLOAT)))
    schema, _ = (SchemaUpdate(base, 5).update_column("l.element", LONG)
                 .update_column("m.key", LONG).update_column("m.value", DOUBLE).apply())
    assert schema.find_type("l") == ListType(2, LONG)
    assert schema.find_type("m") == MapType(4, LONG, 5, DOUBLE)


@pytest.mark.parametrize(("path", "new_type", "match"), [
    ("price", PrimitiveType.decimal(9, 3),
     r"Cannot promote decimal\(9,2\) to decimal\(9,3\): scale is fixed \(column 'price'\)"),
    ("amount", DEC_9_2, r"decimal\(12,2\) to decimal\(9,2\): precision can only be widened"),
    ("name", INT, "Cannot promote string to int"),
    ("user_id", INT, "Cannot promote long to int"),
    ("score", LONG, "Cannot promote float to long"),
    ("meta.inner.x", StructType((NestedField.optional(99, "x", INT),)),
     "Evolving primitive types to structs is not allowed"),
    ("tags.element", ListType(99, STRING), "Evolving primitive types to structs"),
    ("meta.inner", INT, "evolving a nested type to a primitive is not allowed"),
    ("profile", StructType((NestedField.optional(3, "first_name", STRING),)),
     "a struct, list or map keeps its type"),
    ("tags", ListType(7, INT), "keeps its type"),
    ("nope", INT, "Cannot update 'nope': column 'nope' is not in the schema"),
])
def test_rejected_type_changes(path: str, new_type: IcebergType, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        update().update_column(path, new_type)


# ----------------------------------------------------------------- required, optional, doc

@pytest.mark.parametrize(("path", "check"), [
    ("meta.created", lambda s: s.find_field("meta.created").is_optional),
    ("profile.uid", lambda s: s.find_field("profile.uid").is_optional),
    ("tags.element", lambda s: not s.find_type("tags").element_required),
    ("locations.element", lambda s: not s.find_type("locations").element_required),
])
def test_make_optional(path: str, check: Callable[[Any], bool]) -> None:
    schema, _ = update().make_optional(path).apply()
    assert check(schema)


def test_make_required_needs_incompatible_changes() -> None:
    with pytest.raises(ValidationError, match="cannot make an optional column required"):
        update().update_column("profile.first_name", required=True)
    schema, _ = (update(allow_incompatible_changes=True)
                 .update_column("profile.first_name", required=True).apply())
    assert schema.find_field("profile.first_name").is_required


@pytest.mark.parametrize(("build", "match"), [
    (lambda u: u.update_column("props.key", required=False), "Map keys are required"),
    (lambda u: u.update_column("tags.element", doc="d"), "have no doc"),
    (lambda u: u.make_optional("user_id").apply(),
     "Invalid schema after update: Identifier field 'user_id' must be required"),
])
def test_required_and_doc_rejections(build: Callable[[SchemaUpdate], object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        build(update())


@pytest.mark.parametrize("path", ["name", "profile.first_name", "locations.long", "props.p"])
def test_update_doc(path: str) -> None:
    schema, _ = update().update_column(path, doc="described").apply()
    assert schema.find_field(path).doc == "described"
    assert schema.find_field(path).field_id == BASE.find_field(path).field_id


# ---------------------------------------------------------------------------------- moves

TOP = [f.name for f in BASE.fields]


@pytest.mark.parametrize(("build", "parent", "expected"), [
    (lambda u: u.move_first("name"), None, ["name", *TOP[:-1]]),
    (lambda u: u.move_before("name", "profile"), None, ["user_id", "name", *TOP[1:-1]]),
    (lambda u: u.move_after("user_id", "score"), None, [*TOP[1:-1], "user_id", "name"]),
    (lambda u: u.move_after("user_id", "name"), None, [*TOP[1:], "user_id"]),
    (lambda u: u.move_first("profile.uid"), "profile", ["uid", "first_name", "last_name"]),
    (lambda u: u.move_after("locations.lat", "locations.long"), "locations", ["long", "lat"]),
    (lambda u: u.move_before("props.p", "props.value.v"), "props", ["p", "v"]),
    (lambda u: u.move_after("meta.created", "meta.inner"), "meta", ["inner", "created"]),
    (lambda u: u.move_first("profile.uid").move_after("profile.first_name", "profile.uid"),
     "profile", ["uid", "first_name", "last_name"]),  # moves apply in order
    (lambda u: u.move_first("profile.uid").move_first("profile.last_name"),
     "profile", ["last_name", "uid", "first_name"]),
    (lambda u: u.add_column("profile.middle", STRING)
     .move_after("profile.middle", "profile.first_name"),
     "profile", ["first_name", "middle", "last_name", "uid"]),  # a column added in this update
    (lambda u: u.add_column("profile.middle", STRING)
     .move_before("profile.uid", "profile.middle"),
     "profile", ["first_name", "last_name", "uid", "middle"]),
    (lambda u: u.rename_column("profile.uid", "id").move_first("profile.uid"),
     "profile", ["id", "first_name", "last_name"]),
])
def test_moves(build: Callable[[SchemaUpdate], SchemaUpdate], parent: str | None,
               expected: list[str]) -> None:
    schema, _ = build(update()).apply()
    assert names_in(schema, parent) == expected


@pytest.mark.parametrize(("build", "match"), [
    (lambda u: u.move_before("profile.first_name", "user_id"),
     "can only move within its own struct.*Grouping a subset of a struct's fields"),
    (lambda u: u.move_after("name", "profile.first_name"), "can only move within its own struct"),
    (lambda u: u.move_after("locations.lat", "props.v"), "can only move within its own struct"),
    (lambda u: u.move_before("name", "name"), "cannot be moved before itself"),
    (lambda u: u.move_after("name", "name"), "cannot be moved after itself"),
    (lambda u: u.move_first("nope"), "Cannot move 'nope' first: column 'nope' is not in"),
    (lambda u: u.move_after("name", "nope"), "Cannot move 'name' after 'nope': column 'nope'"),
    (lambda u: u.move_first("tags.element"), "list element or map key or value"),
])
def test_move_rejections(build: Callable[[SchemaUpdate], object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        build(update())


# ----------------------------------------------------------------------- identifier fields

@pytest.mark.parametrize(("paths", "names"), [
    (("meta.created",), ("meta.created",)),
    (("user_id", "meta.inner.x"), ("user_id", "meta.inner.x")),
    (("user_id", "user_id"), ("user_id",)),
    ((), ()),
])
def test_set_identifier_fields(paths: tuple[str, ...], names: tuple[str, ...]) -> None:
    schema, _ = update().set_identifier_fields(*paths).apply()
    assert schema.identifier_field_names() == names


@pytest.mark.parametrize(("path", "match"), [
    ("score", "cannot be float: float and double are not allowed"),
    ("name", "must be required, not optional"),
    ("profile.uid", "cannot be nested in optional struct 'profile'"),
    ("tags.element", "cannot be nested in a list"),
    ("props.key", "cannot be nested in a map"),
    ("meta", "must be a primitive"),
])
def test_identifier_field_rejections(path: str, match: str) -> None:
    with pytest.raises(ValidationError, match=f"Invalid schema after update: .*{match}"):
        update().set_identifier_fields(path).apply()


def test_identifier_field_added_in_same_update() -> None:
    schema, _ = (update(format_version=3).add_column("k", LONG, required=True, initial_default=0)
                 .set_identifier_fields("user_id", "k").apply())
    assert schema.identifier_field_names() == ("user_id", "k")
    with pytest.raises(ValidationError, match="Cannot use 'nope' as an identifier field"):
        update().set_identifier_fields("nope")


# ------------------------------------------------------------------------- IDs and lookups

def test_reserved_ids_are_never_assigned() -> None:
    u = SchemaUpdate(BASE, MAX_FIELD_ID - 1)
    with pytest.raises(ValidationError, match="IDs above 2147483447 are reserved"):
        u.add_column("s", StructType((NestedField.optional(1, "a", INT),)))  # needs 2 IDs
    schema, last = u.add_column("c", INT).apply()  # the failed call left no trace
    assert schema.find_field("c").field_id == last == MAX_FIELD_ID
    with pytest.raises(ValidationError, match="reserved"):
        u.add_column("d", INT)


def test_last_column_id_below_highest_id_is_rejected() -> None:
    with pytest.raises(ValidationError, match="below the schema's highest field ID 24"):
        SchemaUpdate(BASE, 20)


def test_new_ids_start_above_last_column_id() -> None:
    schema, last = SchemaUpdate(BASE, 100).add_column("c", INT).apply()
    assert schema.find_field("c").field_id == last == 101


def test_no_changes_returns_an_equal_schema() -> None:
    assert update().apply() == (BASE, LAST)


# --------------------------------------------------------------------------- union by name

def other(*fields: NestedField) -> Schema:
    return Schema.of(*fields)


UNION_CASES: list[tuple[Schema, Callable[[Schema], object], object]] = [
    (other(NestedField.optional(100, "email", STRING)),
     lambda s: (s.find_field_id("email"), s.find_field("email").is_optional), (25, True)),
    (other(NestedField.optional(100, "profile", StructType((
        NestedField.optional(101, "middle", STRING),)))),
     lambda s: (names_in(s, "profile"), s.find_field_id("profile.middle")),
     (["first_name", "last_name", "uid", "middle"], 25)),
    (other(NestedField.optional(100, "locations", ListType(101, StructType((
        NestedField.optional(102, "alt", DOUBLE),))))),
     lambda s: s.find_column_name(25), "locations.element.alt"),
    (other(NestedField.optional(100, "props", MapType(101, STRING, 102, StructType((
        NestedField.optional(103, "w", ListType(104, INT)),))))),
     lambda s: (s.find_column_name(25), s.find_column_name(26)),
     ("props.value.w", "props.value.w.element")),
    (other(NestedField.optional(100, "meta", StructType((
        NestedField.optional(101, "inner", StructType((NestedField.optional(102, "x", LONG),))),
    )))),  # promotes int to long; optional there makes every level optional here
     lambda s: (s.find_field("meta.inner.x").field_type, s.find_field("meta.inner.x").is_optional,
                s.find_field("meta").is_optional), (LONG, True, True)),
    (other(NestedField.required(100, "user_id", INT)),  # narrower than ours: keep long
     lambda s: s.find_field("user_id").field_type, LONG),
    (other(NestedField.required(100, "price", DEC_12_2, doc="in euros")),
     lambda s: (s.find_field("price").field_type, s.find_field("price").doc,
                s.find_field("price").is_optional), (DEC_12_2, "in euros", True)),
    (other(NestedField.optional(100, "tags", ListType(101, STRING, element_required=False))),
     lambda s: s.find_type("tags"), ListType(7, STRING, element_required=False)),
    (BASE, lambda s: s, BASE),  # a union with itself changes nothing
]


@pytest.mark.parametrize(("theirs", "probe", "expected"), UNION_CASES)
def test_union_by_name(theirs: Schema, probe: Callable[[Schema], object],
                       expected: object) -> None:
    schema, _ = update().union_by_name(theirs).apply()
    assert probe(schema) == expected


@pytest.mark.parametrize(("theirs", "kwargs", "match"), [
    (other(NestedField.optional(100, "name", INT)), {}, "Cannot promote string to int"),
    (other(NestedField.optional(100, "profile", STRING)), {},
     "evolving a nested type to a primitive"),
    (other(NestedField.optional(100, "name", StructType())), {},
     "Evolving primitive types to structs"),
    (other(NestedField.optional(100, "tags", MapType(101, STRING, 102, STRING))), {},
     "keeps its type"),
    (other(NestedField.required(100, "c", INT)), {}, "without an initial default"),
    (other(NestedField.optional(100, "name", STRING, initial_default="x")),
     {"format_version": 3}, "initial-default must be set when a field is added and cannot"),
])
def test_union_rejections(theirs: Schema, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        update(**kwargs).union_by_name(theirs)


def test_union_adds_required_with_defaults_and_is_case_insensitive() -> None:
    theirs = other(NestedField.required(100, "c", DEC_9_2, initial_default=Decimal("1.00")),
                   NestedField.optional(101, "NAME", STRING, write_default="anon"))
    schema, _ = update(format_version=3, case_sensitive=False).union_by_name(theirs).apply()
    assert schema.find_field("c").initial_default == Decimal("1.00")
    assert schema.find_field("name").write_default == "anon"
    assert schema.find_field_id("NAME") is None
    schema, _ = (update(allow_incompatible_changes=True)
                 .union_by_name(other(NestedField.required(100, "c", INT))).apply())
    assert schema.find_field("c").is_required


def test_failed_union_leaves_the_update_unchanged() -> None:
    u = update().add_column("c", INT)
    theirs = other(NestedField.optional(100, "d", INT), NestedField.optional(101, "name", INT))
    with pytest.raises(ValidationError, match="Cannot promote string to int"):
        u.union_by_name(theirs)  # "d" was added before "name" failed, then rolled back
    assert u.current_field("d") is None
    assert u.apply() == update().add_column("c", INT).apply()


def test_current_field_sees_this_updates_changes() -> None:
    u = update().rename_column("name", "n").add_column("c", INT).delete_column("score")
    assert [u.current_field(p) for p in ("nope", "score")] == [None, None]
    renamed, added = u.current_field("name"), u.current_field("c")
    assert renamed is not None and (renamed.field_id, renamed.name) == (24, "n")
    assert added is not None and added.field_id == 25


def test_update_column_added_in_same_update() -> None:
    schema, _ = (update().add_column("c", INT).update_column("c", LONG, doc="d")
                 .make_optional("c").apply())
    assert schema.find_field("c") == NestedField.optional(25, "c", LONG, doc="d")


# ------------------------------------------------------------------------------ properties

NAMES = st.sampled_from(["a", "b", "c", "name", "x", "lat"])
OPS = st.lists(st.tuples(st.sampled_from(["add", "add_nested", "rename", "delete"]),
                         st.integers(0, 1000), NAMES), max_size=30)
NESTED = StructType((NestedField.optional(1, "x", INT),
                     NestedField.optional(2, "m", MapType(3, STRING, 4, ListType(5, INT)))))


def _apply_op(u: SchemaUpdate, paths: list[tuple[str, ...]], op: tuple[str, int, str]) -> None:
    kind, pick, name = op
    target = paths[pick % len(paths)]
    try:
        if kind in ("add", "add_nested"):
            u.add_column((*target, name), INT if kind == "add" else NESTED)
            paths.append((*target, name))
        elif kind == "rename" and target:
            u.rename_column(target, name)
            paths.append((*target[:-1], name))
        elif target:
            u.delete_column(target)
    except ValidationError:
        pass  # an invalid change; the property is about the valid ones


PLAIN = Schema(BASE.fields)  # no identifier fields, so any column may be deleted


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_random_changes_never_reuse_ids(ops: list[tuple[str, int, str]]) -> None:
    u = SchemaUpdate(PLAIN, LAST)
    paths: list[tuple[str, ...]] = [(), *(tuple(n.split(".")) for n in (
        BASE.find_column_name(i) for i in sorted(BASE.field_ids)) if n)]
    for op in ops:
        _apply_op(u, paths, op)
    schema, last = u.apply()
    ids = list(all_ids(schema.as_struct()))
    assert len(ids) == len(set(ids))  # no duplicate IDs
    new_ids = set(ids) - BASE.field_ids
    assert all(LAST < i <= last for i in new_ids)  # new fields never reuse an old ID
    assert last >= LAST


@settings(max_examples=100, deadline=None)
@given(OPS)
def test_successive_updates_never_reuse_ids(ops: list[tuple[str, int, str]]) -> None:
    schema, last = PLAIN, LAST
    seen = set(PLAIN.field_ids)
    for op in ops:
        paths: list[tuple[str, ...]] = [(), *(tuple(n.split(".")) for n in (
            schema.find_column_name(i) for i in sorted(schema.field_ids)) if n)]
        u = SchemaUpdate(schema, last)
        _apply_op(u, paths, op)
        schema, new_last = u.apply()
        fresh = schema.field_ids - seen
        assert all(last < i <= new_last for i in fresh)
        seen |= schema.field_ids
        last = new_last
