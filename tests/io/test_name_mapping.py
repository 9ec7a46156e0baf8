"""Name mappings: Appendix C JSON, creation from a schema, and fallback IDs for Arrow schemas."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.io.arrow.name_mapping import (
    NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    apply_name_mapping,
    create_mapping,
    from_json,
    has_field_ids,
    name_mapping_from_properties,
    parse_name_mapping,
    to_json,
)
from icepark.io.arrow.schema import FIELD_ID_KEY, to_arrow_schema
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from tests.io.reader_fixtures import strip_field_ids
from tests.io.writer_fixtures import NESTED_SCHEMA

# The example of Appendix C, "Name Mapping Serialization".
SPEC_EXAMPLE = """
[ { "field-id": 1, "names": ["id", "record_id"] },
 { "field-id": 2, "names": ["data"] },
 { "field-id": 3, "names": ["location"], "fields": [
 { "field-id": 4, "names": ["latitude", "lat"] },
 { "field-id": 5, "names": ["longitude", "long"] }
 ] } ]
"""


def ids(arrow_type_or_field: Any) -> Any:
    """The field IDs of an Arrow field, nested like the type."""
    f = arrow_type_or_field
    own = (f.metadata or {}).get(FIELD_ID_KEY)
    t = f.type
    own_id = None if own is None else int(own)
    if pa.types.is_struct(t):
        return own_id, [ids(t.field(i)) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return own_id, [ids(t.key_field), ids(t.item_field)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return own_id, [ids(t.value_field)]
    return own_id


def test_spec_example_parses() -> None:
    mapping = parse_name_mapping(SPEC_EXAMPLE)
    assert [f.field_id for f in mapping.fields] == [1, 2, 3]
    assert mapping.find("id") == mapping.find("record_id")
    assert mapping.find("record_id").field_id == 1  # type: ignore[union-attr]
    assert mapping.find("location", "lat").field_id == 4  # type: ignore[union-attr]
    assert mapping.find("location", "long").field_id == 5  # type: ignore[union-attr]
    assert mapping.find("location", "x") is None
    assert mapping.find("lat") is None
    assert mapping.find() is None


def test_spec_example_round_trips() -> None:
    mapping = parse_name_mapping(SPEC_EXAMPLE)
    assert json.loads(to_json(mapping)) == json.loads(SPEC_EXAMPLE)
    assert parse_name_mapping(to_json(mapping)) == mapping


def test_dot_is_a_literal_name() -> None:
    """"``a.b`` refers to a field named ``a.b``, not child field ``b`` of field ``a``"."""
    mapping = parse_name_mapping('[{"field-id": 1, "names": ["a.b"]},'
                                 '{"field-id": 2, "names": ["a"], "fields": ['
                                 '{"field-id": 3, "names": ["b"]}]}]')
    assert mapping.find("a.b").field_id == 1  # type: ignore[union-attr]
    assert mapping.find("a", "b").field_id == 3  # type: ignore[union-attr]


def test_optional_parts() -> None:
    """Empty ``names`` ("Fields which exist only in the Iceberg schema"), no ``field-id``
    ("Fields that exist in imported files but not in the Iceberg schema")."""
    mapping = parse_name_mapping('[{"names": []}, {"names": ["extra"]},'
                                 '{"field-id": 9, "names": ["x"], "fields": null}]')
    assert mapping.fields[0] == MappedField((), None)
    assert mapping.find("extra") == MappedField(("extra",))
    assert mapping.find("x").fields == ()  # type: ignore[union-attr]
    assert json.loads(to_json(mapping)) == [
        {"names": []}, {"names": ["extra"]}, {"field-id": 9, "names": ["x"]}]


def test_accepts_the_appendix_table_spelling() -> None:
    assert parse_name_mapping('[{"field_id": 4, "names": ["a"]}]').find("a") == \
        MappedField(("a",), 4)


@pytest.mark.parametrize(("text", "message"), [
    ("{}", "must be a JSON list"),
    ("[1]", "must be a JSON object"),
    ('[{"field-id": 1}]', "has no 'names'"),
    ('[{"names": "a"}]', "'names' must be a list of strings"),
    ('[{"names": [1]}]', "'names' must be a list of strings"),
    ('[{"names": ["a"], "field-id": true}]', "must be an integer"),
    ('[{"names": ["a"], "field-id": 1.5}]', "must be an integer"),
    ('[{"names": ["a"], "fields": {}}]', "must be a JSON list"),
    ('[{"names": ["a"], "field-id": 1}, {"names": ["a"], "field-id": 2}]', "mapped twice"),
    ('[{"names": ["a"], "field-id": 1}, {"names": ["b"], "field-id": 1}]', "mapped twice"),
    ("not json", "not JSON"),
])
def test_invalid_mappings(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_name_mapping(text)


def test_same_name_at_different_levels_is_fine() -> None:
    mapping = from_json([{"field-id": 1, "names": ["a"], "fields": [
        {"field-id": 2, "names": ["a"]}]}])
    assert mapping.find("a", "a").field_id == 2  # type: ignore[union-attr]


def test_create_mapping_of_nested_schema() -> None:
    assert json.loads(to_json(create_mapping(NESTED_SCHEMA))) == [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["location"], "fields": [
            {"field-id": 3, "names": ["lat"]}, {"field-id": 4, "names": ["name"]}]},
        {"field-id": 5, "names": ["points"], "fields": [
            {"field-id": 6, "names": ["element"], "fields": [
                {"field-id": 7, "names": ["x"]}, {"field-id": 8, "names": ["y"]}]}]},
        {"field-id": 9, "names": ["props"], "fields": [
            {"field-id": 10, "names": ["key"]},
            {"field-id": 11, "names": ["value"], "fields": [
                {"field-id": 12, "names": ["v"]}]}]},
        {"field-id": 13, "names": ["matrix"], "fields": [
            {"field-id": 14, "names": ["element"], "fields": [
                {"field-id": 15, "names": ["element"]}]}]},
    ]


def test_create_mapping_matches_pyiceberg() -> None:
    """pyiceberg as an oracle: the same JSON for the same schema."""
    from pyiceberg.io.pyarrow import pyarrow_to_schema  # noqa: PLC0415
    from pyiceberg.table.name_mapping import create_mapping_from_schema  # noqa: PLC0415

    theirs = create_mapping_from_schema(pyarrow_to_schema(to_arrow_schema(NESTED_SCHEMA)))
    assert json.loads(theirs.model_dump_json()) == json.loads(to_json(
        create_mapping(NESTED_SCHEMA)))


def test_parses_pyiceberg_json() -> None:
    from pyiceberg.table.name_mapping import parse_mapping_from_json  # noqa: PLC0415

    text = to_json(create_mapping(NESTED_SCHEMA))
    theirs = parse_mapping_from_json(text)
    assert parse_name_mapping(theirs.model_dump_json()) == create_mapping(NESTED_SCHEMA)


def test_from_properties() -> None:
    assert name_mapping_from_properties({}) is None
    mapping = name_mapping_from_properties({NAME_MAPPING_PROPERTY: SPEC_EXAMPLE})
    assert mapping == parse_name_mapping(SPEC_EXAMPLE)


def test_apply_to_nested_arrow_schema() -> None:
    """List elements and map keys/values are found as ``element``, ``key`` and ``value``
    whatever the file calls them (pyarrow's default list element is ``item``)."""
    file_schema = pa.schema([
        pa.field("record_id", pa.int64()),
        pa.field("location", pa.struct([pa.field("lat", pa.float64()),
                                        pa.field("unmapped", pa.float64())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("props", pa.map_(pa.string(), pa.struct([pa.field("v", pa.int64())]))),
        pa.field("extra", pa.int32()),
    ])
    mapping = from_json([
        {"field-id": 1, "names": ["id", "record_id"]},
        {"field-id": 3, "names": ["location"], "fields": [
            {"field-id": 4, "names": ["latitude", "lat"]}]},
        {"field-id": 6, "names": ["tags"], "fields": [{"field-id": 7, "names": ["element"]}]},
        {"field-id": 9, "names": ["props"], "fields": [
            {"field-id": 10, "names": ["key"]},
            {"field-id": 11, "names": ["value"], "fields": [{"field-id": 12, "names": ["v"]}]}]},
        {"names": ["extra"]},
    ])
    mapped = apply_name_mapping(file_schema, mapping)
    assert [ids(f) for f in mapped] == [1, (3, [4, None]), (6, [7]), (9, [10, (11, [12])]),
                                        None]
    assert mapped.names == file_schema.names
    assert [f.type for f in mapped] != []  # same physical types (metadata aside)
    for original, result in zip(file_schema, mapped, strict=True):
        assert original.type.equals(result.type, check_metadata=False)
        assert original.nullable == result.nullable
    assert has_field_ids(mapped) and not has_field_ids(file_schema)


def test_apply_keeps_children_of_a_mapping_without_id() -> None:
    file_schema = pa.schema([pa.field("s", pa.struct([pa.field("a", pa.int32())]))])
    mapped = apply_name_mapping(file_schema, from_json(
        [{"names": ["s"], "fields": [{"field-id": 5, "names": ["a"]}]}]))
    assert ids(mapped.field("s")) == (None, [5])


def test_has_field_ids_finds_nested_ids() -> None:
    nested_only = pa.schema([pa.field("l", pa.list_(pa.field(
        "element", pa.int32(), metadata={FIELD_ID_KEY: b"3"})))])
    assert has_field_ids(nested_only)


def test_apply_to_created_mapping_recovers_the_ids() -> None:
    arrow = to_arrow_schema(NESTED_SCHEMA)
    stripped = pa.schema([f.remove_metadata() for f in strip_field_ids(arrow)])
    assert apply_name_mapping(stripped, create_mapping(NESTED_SCHEMA)).equals(
        arrow, check_metadata=True)


# Hypothesis: created mappings round-trip through JSON.
_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1,
                 max_size=6)


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    counter = iter(range(1, 1000))

    def leaf() -> Any:
        return draw(st.sampled_from([INT, LONG, STRING, DOUBLE]))

    def nested(depth: int) -> Any:
        kind = draw(st.sampled_from(["leaf", "struct", "list", "map"] if depth < 2
                                    else ["leaf"]))
        match kind:
            case "struct":
                names = draw(st.lists(_names, min_size=1, max_size=3, unique=True))
                return StructType(tuple(NestedField.optional(next(counter), n, nested(depth + 1))
                                        for n in names))
            case "list":
                return ListType(next(counter), nested(depth + 1))
            case "map":
                return MapType(next(counter), STRING, next(counter), nested(depth + 1))
        return leaf()

    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    return Schema(tuple(NestedField.optional(next(counter), n, nested(0)) for n in names))


@given(schemas())
@settings(max_examples=60, deadline=None)
def test_created_mapping_round_trips(schema: Schema) -> None:
    mapping = create_mapping(schema)
    assert parse_name_mapping(to_json(mapping)) == mapping
    assert isinstance(mapping, NameMapping)
    arrow = to_arrow_schema(schema)
    assert apply_name_mapping(strip_field_ids(arrow), mapping).equals(arrow, check_metadata=True)
