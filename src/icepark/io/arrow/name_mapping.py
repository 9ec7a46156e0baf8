"""Name mappings: fallback field IDs for data files written without them.

Spec, *Column Projection*: "Tables may also define a property ``schema.name-mapping.default``
with a JSON name mapping containing a list of field mapping objects. These mappings provide
fallback field ids to be used when a data file does not contain field id information. Each
object should contain ``names``: A required list of 0 or more names for a field. ``field-id``:
An optional Iceberg field ID used when a field's name is present in ``names``. ``fields``: An
optional list of field mappings for child field of structs, maps, and lists."

The rules this module follows:

* "A name may contain ``.`` but this refers to a literal name, not a nested field": lookups
  walk a path of names, one level at a time, never split a name.
* "List types should contain a mapping in ``fields`` for ``element``. Map types should contain
  mappings in ``fields`` for ``key`` and ``value``": a file's list element and map key/value
  are looked up as ``element``, ``key`` and ``value`` whatever the file calls them.
* "Fields that exist in imported files but not in the Iceberg schema may omit ``field-id``":
  such file columns get no ID, so no projection selects them.

JSON (Appendix C, *Name Mapping Serialization*) is read and written with the key ``field-id``,
as in the spec's example and the reference implementation (the appendix's table spells it
``field_id``; that spelling is accepted when reading). Sibling mappings may not share a name or
an ID: a name must resolve to one field.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField, StructType
>>> m = parse_name_mapping('[{"field-id": 1, "names": ["id", "record_id"]},'
...     '{"field-id": 3, "names": ["location"], "fields": ['
...     '{"field-id": 4, "names": ["latitude", "lat"]}]}]')
>>> m.find("record_id").field_id, m.find("location", "lat").field_id, m.find("lat")
(1, 4, None)
>>> to_json(create_mapping(Schema.of(NestedField.required(1, "id", LONG))))
'[{"field-id": 1, "names": ["id"]}]'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from icepark.errors import ValidationError
from icepark.io.arrow.schema import FIELD_ID_KEY
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType, ListType, MapType, StructType

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
"""The table property holding the JSON name mapping."""


@dataclass(frozen=True, slots=True)
class MappedField:
    """One field mapping: the names a file may use, the field ID, and the children's mappings."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = ()
    _by_name: dict[str, MappedField] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_by_name", _index(self.fields))

    def child(self, name: str) -> MappedField | None:
        """The child mapping that lists ``name``, or None."""
        return self._by_name.get(name)


def _index(fields: tuple[MappedField, ...]) -> dict[str, MappedField]:
    by_name: dict[str, MappedField] = {}
    ids: set[int] = set()
    for f in fields:
        if f.field_id is not None:
            if f.field_id in ids:
                raise ValidationError(f"Invalid name mapping: field ID {f.field_id} is mapped "
                                      "twice at the same level")
            ids.add(f.field_id)
        for name in f.names:
            if name in by_name:
                raise ValidationError(f"Invalid name mapping: name {name!r} is mapped twice at "
                                      "the same level")
            by_name[name] = f
    return by_name


@dataclass(frozen=True, slots=True)
class NameMapping:
    """A table's name mapping: the mappings of its top-level fields."""

    fields: tuple[MappedField, ...]
    _by_name: dict[str, MappedField] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_by_name", _index(self.fields))

    def find(self, *path: str) -> MappedField | None:
        """The mapping of the field at ``path`` (one literal name per level), or None."""
        if not path:
            return None
        current = self._by_name.get(path[0])
        for name in path[1:]:
            if current is None:
                return None
            current = current.child(name)
        return current

    def child(self, name: str) -> MappedField | None:
        """The top-level mapping that lists ``name`` (so a mapping reads like a struct's)."""
        return self._by_name.get(name)


# --- JSON ---------------------------------------------------------------------------------


def parse_name_mapping(text: str | bytes) -> NameMapping:
    """Parse the JSON of ``schema.name-mapping.default``.

    >>> parse_name_mapping('[{"names": ["a"], "field-id": "1"}]')
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid name mapping: 'field-id' of ['a'] must be an \
integer, not '1'
    """
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValidationError(f"Invalid name mapping: not JSON: {e}") from None
    return from_json(data)


def from_json(data: Any) -> NameMapping:
    """A name mapping from decoded JSON (a list of field mapping objects)."""
    return NameMapping(_parse_fields(data, "the name mapping"))


def _parse_fields(data: Any, where: str) -> tuple[MappedField, ...]:
    if not isinstance(data, list):
        raise ValidationError(f"Invalid name mapping: {where} must be a JSON list of field "
                              f"mappings, not {data!r}")
    return tuple(_parse_field(item) for item in data)


def _parse_field(obj: Any) -> MappedField:
    if not isinstance(obj, Mapping):
        raise ValidationError(f"Invalid name mapping: a field mapping must be a JSON object, "
                              f"not {obj!r}")
    if "names" not in obj:
        raise ValidationError(f"Invalid name mapping: field mapping {dict(obj)!r} has no "
                              "'names' (a required list of 0 or more names)")
    names = obj["names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValidationError(f"Invalid name mapping: 'names' must be a list of strings, not "
                              f"{names!r}")
    key = "field-id" if "field-id" in obj else "field_id"
    field_id = obj.get(key)
    if field_id is not None and (not isinstance(field_id, int) or isinstance(field_id, bool)):
        raise ValidationError(f"Invalid name mapping: 'field-id' of {names!r} must be an "
                              f"integer, not {field_id!r}")
    children = obj.get("fields")
    nested = () if children is None else _parse_fields(children, f"'fields' of {names!r}")
    return MappedField(tuple(names), field_id, nested)


def to_json(mapping: NameMapping) -> str:
    """The JSON of a name mapping, as the table property stores it."""
    return json.dumps(_fields_json(mapping.fields))


def _fields_json(fields: Iterable[MappedField]) -> list[dict[str, Any]]:
    result = []
    for f in fields:
        obj: dict[str, Any] = {}
        if f.field_id is not None:
            obj["field-id"] = f.field_id
        obj["names"] = list(f.names)
        if f.fields:
            obj["fields"] = _fields_json(f.fields)
        result.append(obj)
    return result


def name_mapping_from_properties(properties: Mapping[str, str]) -> NameMapping | None:
    """The table's ``schema.name-mapping.default``, parsed, or None if it has none."""
    text = properties.get(NAME_MAPPING_PROPERTY)
    return None if text is None else parse_name_mapping(text)


# --- creating a mapping from a schema -------------------------------------------------------


def create_mapping(schema: Schema) -> NameMapping:
    """A mapping naming every field of ``schema`` by its current name.

    Lists map their element as ``element``, maps their key and value as ``key`` and ``value``.

    >>> from icepark.spec.types import INT, STRING, MapType, NestedField
    >>> m = create_mapping(Schema.of(NestedField.optional(1, "m", MapType(2, STRING, 3, INT))))
    >>> m.find("m", "value").field_id
    3
    """
    return NameMapping(_struct_mapping(schema.as_struct()))


def _struct_mapping(struct: StructType) -> tuple[MappedField, ...]:
    return tuple(MappedField((f.name,), f.field_id, _children(f.field_type))
                 for f in struct.fields)


def _children(t: IcebergType) -> tuple[MappedField, ...]:
    match t:
        case StructType():
            return _struct_mapping(t)
        case ListType():
            return (MappedField(("element",), t.element_id, _children(t.element_type)),)
        case MapType():
            return (MappedField(("key",), t.key_id, _children(t.key_type)),
                    MappedField(("value",), t.value_id, _children(t.value_type)))
        case _:
            return ()


# --- applying a mapping to a file's Arrow schema ---------------------------------------------


def has_field_ids(arrow_schema: Any) -> bool:
    """Whether any field of the (Parquet file's) Arrow schema carries a field ID."""
    return any(_type_has_ids(f) for f in arrow_schema)


def _type_has_ids(f: Any) -> bool:
    if FIELD_ID_KEY in (f.metadata or {}):
        return True
    return any(_type_has_ids(child) for child in _arrow_children(f.type))


def _arrow_children(t: Any) -> list[Any]:
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    return []


def apply_name_mapping(arrow_schema: Any, mapping: NameMapping) -> Any:
    """``arrow_schema`` with the mapped field IDs attached as ``PARQUET:field_id`` metadata.

    Spec: "These mappings provide fallback field ids to be used when a data file does not
    contain field id information." Fields the mapping does not name, or names without a
    ``field-id``, get no ID. Types and names are unchanged, so the result describes the same
    physical columns.

    >>> import pyarrow as pa
    >>> m = parse_name_mapping('[{"field-id": 7, "names": ["tags"], "fields": ['
    ...     '{"field-id": 8, "names": ["element"]}]}]')
    >>> s = apply_name_mapping(pa.schema([pa.field("tags", pa.list_(pa.int32())),
    ...                                   pa.field("other", pa.int32())]), m)
    >>> s.field("tags").metadata, s.field("tags").type.value_field.metadata
    ({b'PARQUET:field_id': b'7'}, {b'PARQUET:field_id': b'8'})
    >>> s.field("other").metadata is None
    True
    """
    return pa.schema([_apply_field(f, mapping.child(f.name)) for f in arrow_schema],
                     metadata=arrow_schema.metadata)


def _apply_field(f: Any, mapped: MappedField | None) -> Any:
    """``f`` with the ID of ``mapped`` (if any) and its children mapped below it."""
    metadata = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
    if mapped is not None and mapped.field_id is not None:
        metadata[FIELD_ID_KEY] = str(mapped.field_id).encode()
    return pa.field(f.name, _apply_type(f.type, mapped), nullable=f.nullable,
                    metadata=metadata or None)


def _apply_type(t: Any, mapped: MappedField | None) -> Any:
    def child(name: str) -> MappedField | None:
        return None if mapped is None else mapped.child(name)

    types = pa.types
    if types.is_struct(t):
        return pa.struct([_apply_field(t.field(i), child(t.field(i).name))
                          for i in range(t.num_fields)])
    if types.is_map(t):
        return pa.map_(_apply_field(t.key_field, child("key")),
                       _apply_field(t.item_field, child("value")), keys_sorted=t.keys_sorted)
    if types.is_large_list(t):
        return pa.large_list(_apply_field(t.value_field, child("element")))
    if types.is_fixed_size_list(t):
        return pa.list_(_apply_field(t.value_field, child("element")), t.list_size)
    if types.is_list(t):
        return pa.list_(_apply_field(t.value_field, child("element")))
    return t
