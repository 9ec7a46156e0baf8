"""JSON for types and schemas (spec, Appendix C, *Schemas*).

"Schemas are serialized as a JSON object with the same fields as a struct in the table below,
and the following additional fields": ``schema-id`` and ``identifier-field-ids``. Primitives
are JSON strings (``"decimal(9,2)"``, ``"decimal(9, 2)"``, ``"fixed[16]"``); struct, list and map
are objects. "Note that default values are serialized using the JSON single-value serialization
in Appendix D."

>>> from icepark.spec.types import LONG, STRING, ListType, NestedField
>>> type_to_json(ListType(3, STRING, element_required=True))
{'type': 'list', 'element-id': 3, 'element': 'string', 'element-required': True}
>>> schema_from_json({"type": "struct", "schema-id": 1, "fields": [
...     {"id": 1, "name": "id", "required": True, "type": "long", "write-default": 7}]})
Schema(fields=(NestedField(field_id=1, name='id', field_type=long, is_required=True, \
doc=None, initial_default=None, write_default=7),), schema_id=1, identifier_field_ids=())
>>> type_from_json("decimal(9, 2)")
decimal(9,2)
"""

from __future__ import annotations

from typing import Any

from icepark.errors import ValidationError
from icepark.spec import values
from icepark.spec.schema import Schema
from icepark.spec.serde._json import (
    JsonObject,
    as_object,
    get_bool,
    get_int,
    get_list,
    get_str,
    int_list,
    opt_int,
    opt_str,
    show,
)
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    parse_primitive,
)

# ---------------------------------------------------------------------------------- writing


def type_to_json(t: IcebergType) -> Any:
    """The Appendix C JSON of a type: a string for a primitive, an object for a nested type."""
    match t:
        case PrimitiveType():
            return str(t)
        case StructType():
            return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
        case ListType():
            return {"type": "list", "element-id": t.element_id,
                    "element": type_to_json(t.element_type),
                    "element-required": t.element_required}
        case MapType():
            return {"type": "map", "key-id": t.key_id, "key": type_to_json(t.key_type),
                    "value-id": t.value_id, "value": type_to_json(t.value_type),
                    "value-required": t.value_required}
        case _:
            raise ValidationError(f"Not an Iceberg type: {t!r}")


def field_to_json(f: NestedField) -> dict[str, Any]:
    """A struct field; ``doc`` and the defaults are written only when set."""
    obj: dict[str, Any] = {"id": f.field_id, "name": f.name, "required": f.is_required,
                           "type": type_to_json(f.field_type)}
    if f.doc is not None:
        obj["doc"] = f.doc
    if f.initial_default is not None:
        obj["initial-default"] = values.to_json(f.field_type, f.initial_default)
    if f.write_default is not None:
        obj["write-default"] = values.to_json(f.field_type, f.write_default)
    return obj


def schema_to_json(schema: Schema, include_id: bool = True) -> dict[str, Any]:
    """A schema object: ``"type": "struct"``, ``schema-id`` (unless ``include_id`` is false),
    ``identifier-field-ids`` when there are any, and the fields.

    >>> from icepark.spec.types import LONG, NestedField
    >>> schema_to_json(Schema.of(NestedField.required(1, "x", LONG)), include_id=False)
    {'type': 'struct', 'fields': [{'id': 1, 'name': 'x', 'required': True, 'type': 'long'}]}
    """
    obj: dict[str, Any] = {"type": "struct"}
    if include_id:
        obj["schema-id"] = schema.schema_id
    if schema.identifier_field_ids:
        obj["identifier-field-ids"] = list(schema.identifier_field_ids)
    obj["fields"] = [field_to_json(f) for f in schema.fields]
    return obj


# ---------------------------------------------------------------------------------- reading


def type_from_json(data: Any, what: str = "Type") -> IcebergType:
    """Decode a type; an unknown type string or a malformed object is a ValidationError.

    >>> type_from_json({"type": "map", "key-id": 4, "key": "string", "value-id": 5,
    ...                 "value-required": False, "value": "double"})
    map<string, double>
    >>> type_from_json("varchar(10)")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Unknown primitive type 'varchar(10)'
    """
    if isinstance(data, str):
        return parse_primitive(data)
    obj = as_object(data, f"{what} (a type string or object)")
    kind = obj.get("type")
    match kind:
        case "struct":
            return StructType(tuple(_field_from_json(f, what)
                                    for f in get_list(obj, "fields", f"{what} struct")))
        case "list":
            ctx = f"{what} list"
            return ListType(get_int(obj, "element-id", ctx),
                            type_from_json(_get(obj, "element", ctx), f"{what} list element"),
                            get_bool(obj, "element-required", ctx))
        case "map":
            ctx = f"{what} map"
            return MapType(get_int(obj, "key-id", ctx),
                           type_from_json(_get(obj, "key", ctx), f"{what} map key"),
                           get_int(obj, "value-id", ctx),
                           type_from_json(_get(obj, "value", ctx), f"{what} map value"),
                           get_bool(obj, "value-required", ctx))
        case None if "type" not in obj:
            raise ValidationError(
                f"{what} object is missing required field 'type' (struct, list or map)")
        case _:
            raise ValidationError(
                f"{what}: unknown nested type {show(kind)}: expected struct, list or map")


def _get(obj: JsonObject, key: str, what: str) -> Any:
    if key not in obj:
        raise ValidationError(f"{what} is missing required field {key!r}")
    return obj[key]


def _field_from_json(data: Any, parent: str) -> NestedField:
    obj = as_object(data, f"{parent} field")
    field_id = get_int(obj, "id", f"{parent} field")
    ctx = f"Field {field_id}"
    name = get_str(obj, "name", ctx)
    ctx = f"Field {name!r} (id {field_id})"
    field_type = type_from_json(_get(obj, "type", ctx), ctx)
    defaults = [_default(obj, key, field_type, ctx) for key in ("initial-default", "write-default")]
    return NestedField(field_id, name, field_type, get_bool(obj, "required", ctx),
                       opt_str(obj, "doc", ctx), defaults[0], defaults[1])


def _default(obj: JsonObject, key: str, field_type: IcebergType, what: str) -> Any:
    data = obj.get(key)
    if data is None:
        return None
    try:
        return values.from_json(field_type, data)
    except ValidationError as e:
        raise ValidationError(f"{what}: invalid {key!r}: {e}") from e


def schema_from_json(data: Any) -> Schema:
    """Decode a schema object. It must say ``"type": "struct"``; ``schema-id`` defaults to 0
    (it is optional in v1).

    >>> schema_from_json({"fields": []})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Schema is missing required field 'type' (must be "struct")
    """
    obj = as_object(data, "Schema")
    if "type" not in obj:
        raise ValidationError("Schema is missing required field 'type' (must be \"struct\")")
    if obj["type"] != "struct":
        raise ValidationError(f"Schema 'type' must be \"struct\", not {show(obj['type'])}")
    schema_id = opt_int(obj, "schema-id", "Schema")
    what = "Schema" if schema_id is None else f"Schema {schema_id}"
    fields = tuple(_field_from_json(f, what) for f in get_list(obj, "fields", what))
    return Schema(fields, schema_id or 0,
                  tuple(int_list(obj, "identifier-field-ids", what, required=False)))
