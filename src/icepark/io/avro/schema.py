"""Iceberg schemas as Avro schemas, per Appendix A, *Avro*.

"Iceberg struct, list, and map types identify nested types by ID. When writing data to Avro
files, these IDs must be stored in the Avro schema to support ID-based column pruning": a
``field-id`` on every record field, an ``element-id`` on arrays, ``key-id``/``value-id`` on
maps. "Optional fields, array elements, and map values must be wrapped in an Avro ``union``
with ``null``" (when they are optional) and "Optional fields must always set the Avro field
default value to null". "Maps with non-string keys must use an array representation with the
``map`` logical type"; maps with string keys use Avro's ``map``.

Named Avro types get the names the reference implementations give them, so our manifests
match theirs: a struct is record ``r<id>`` after the ID of the field, element or value that
holds it (``r2`` for ``data_file``, ``r102`` for ``partition``, ``r508`` for ``field_summary``),
a map's entry record ``k<key-id>_v<value-id>``; ``fixed`` types are ``fixed_<L>``,
``decimal_<P>_<S>`` and ``uuid_fixed``, defined once and referenced by name after.

>>> from icepark.spec.types import DATE, INT, LONG, MapType, NestedField, StructType
>>> avro = to_avro(StructType((NestedField.optional(1000, "day", DATE),)), "r102")
>>> avro["fields"][0]
{'name': 'day', 'type': ['null', {'type': 'int', 'logicalType': 'date'}], 'field-id': 1000, \
'default': None}
>>> to_avro(MapType(117, INT, 118, LONG), "m")["items"]["name"]
'k117_v118'
>>> avro_name("1st-col")
'_1st_x2Dcol'
"""

from __future__ import annotations

from typing import Any

from icepark.spec.schema import Schema, SchemaVisitor, visit
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)

AvroSchema = Any  # a JSON-like Avro schema: a type name, a dict, or a list (a union)

_SIMPLE: dict[TypeId, AvroSchema] = {
    TypeId.BOOLEAN: "boolean",
    TypeId.INT: "int",
    TypeId.LONG: "long",
    TypeId.FLOAT: "float",
    TypeId.DOUBLE: "double",
    TypeId.STRING: "string",
    TypeId.BINARY: "bytes",
    TypeId.DATE: {"type": "int", "logicalType": "date"},
    TypeId.TIME: {"type": "long", "logicalType": "time-micros"},
    TypeId.TIMESTAMP: {"type": "long", "logicalType": "timestamp-micros",
                       "adjust-to-utc": False},
    TypeId.TIMESTAMPTZ: {"type": "long", "logicalType": "timestamp-micros",
                         "adjust-to-utc": True},
    # v3, Appendix A: "timestamp-nanos" is "an Iceberg convention"; WKB as bytes; "unknown":
    # "null or omitted"
    TypeId.TIMESTAMP_NS: {"type": "long", "logicalType": "timestamp-nanos",
                          "adjust-to-utc": False},
    TypeId.TIMESTAMPTZ_NS: {"type": "long", "logicalType": "timestamp-nanos",
                            "adjust-to-utc": True},
    TypeId.GEOMETRY: "bytes",
    TypeId.GEOGRAPHY: "bytes",
    TypeId.UNKNOWN: "null",
}


def decimal_size(precision: int) -> int:
    """``minBytesRequired(P)``: the fewest bytes whose two's complement holds ``10**P - 1``.

    >>> [decimal_size(p) for p in (1, 2, 3, 9, 18, 38)]
    [1, 1, 2, 4, 8, 16]
    """
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def avro_name(name: str) -> str:
    """An Avro-compatible name: Avro names match ``[A-Za-z_][A-Za-z0-9_]*``.

    As the reference implementations do, a leading digit gets a ``_`` prefix and any other
    invalid character becomes ``_x`` plus its upper-case hex code point; the original name is
    kept in the field's ``iceberg-field-name`` property.

    >>> avro_name("ok_name"), avro_name("a.b"), avro_name("")
    ('ok_name', 'a_x2Eb', '_')
    """
    if name and _valid_char(name[0], first=True) and all(_valid_char(c) for c in name[1:]):
        return name
    out = []
    for i, c in enumerate(name):
        if _valid_char(c, first=i == 0):
            out.append(c)
        elif i == 0 and c.isascii() and c.isdigit():
            out.append("_" + c)
        else:
            out.append(f"_x{ord(c):X}")
    return "".join(out) or "_"


def _valid_char(c: str, first: bool = False) -> bool:
    if c == "_" or (c.isascii() and c.isalpha()):
        return True
    return not first and c.isascii() and c.isdigit()


def to_avro(obj: Schema | IcebergType, name: str) -> AvroSchema:
    """The Avro schema of a schema or type; ``name`` names the top-level record.

    >>> from icepark.spec.types import DOUBLE, ListType, PrimitiveType
    >>> to_avro(ListType(5, DOUBLE, element_required=False), "unused")
    {'type': 'array', 'items': ['null', 'double'], 'element-id': 5}
    >>> d = PrimitiveType.decimal(9, 2)
    >>> to_avro(StructType((NestedField.required(1, "a", d), NestedField.required(2, "b", d))),
    ...         "t")["fields"][1]["type"]
    'decimal_9_2'
    """
    return visit(obj, _ToAvro(name))


class _ToAvro(SchemaVisitor[AvroSchema]):
    def __init__(self, top_name: str) -> None:
        self._top_name = top_name
        self._ids: list[int] = []  # field IDs of the enclosing fields, innermost last
        self._defined: set[str] = set()

    def before_field(self, f: NestedField) -> None:
        self._ids.append(f.field_id)

    def after_field(self, f: NestedField) -> None:
        self._ids.pop()

    def struct(self, struct: StructType, field_results: list[AvroSchema]) -> AvroSchema:
        name = f"r{self._ids[-1]}" if self._ids else self._top_name
        return {"type": "record", "name": name, "fields": field_results}

    def field(self, f: NestedField, field_result: AvroSchema) -> AvroSchema:
        name = avro_name(f.name)
        out: dict[str, Any] = {"name": name, "type": _nullable(f, field_result)}
        if f.doc:
            out["doc"] = f.doc
        out["field-id"] = f.field_id
        if f.is_optional:
            out["default"] = None
        if name != f.name:
            out["iceberg-field-name"] = f.name
        return out

    def list(self, list_type: ListType, element_result: AvroSchema) -> AvroSchema:
        return {"type": "array", "items": _nullable(list_type.element_field, element_result),
                "element-id": list_type.element_id}

    def map(self, map_type: MapType, key_result: AvroSchema,
            value_result: AvroSchema) -> AvroSchema:
        value = _nullable(map_type.value_field, value_result)
        if map_type.key_type == PrimitiveType(TypeId.STRING):
            return {"type": "map", "values": value, "key-id": map_type.key_id,
                    "value-id": map_type.value_id}
        entry = {
            "type": "record",
            "name": f"k{map_type.key_id}_v{map_type.value_id}",
            "fields": [
                {"name": "key", "type": key_result, "field-id": map_type.key_id},
                {"name": "value", "type": value, "field-id": map_type.value_id},
            ],
        }
        return {"type": "array", "items": entry, "logicalType": "map"}

    def primitive(self, primitive: PrimitiveType) -> AvroSchema:
        simple = _SIMPLE.get(primitive.type_id)
        if simple is not None:
            return dict(simple) if isinstance(simple, dict) else simple
        match primitive.type_id:
            case TypeId.DECIMAL:
                p, s = primitive.precision, primitive.scale
                return self._named(f"decimal_{p}_{s}", {
                    "type": "fixed", "size": decimal_size(p), "logicalType": "decimal",
                    "precision": p, "scale": s})
            case TypeId.UUID:
                return self._named("uuid_fixed", {"type": "fixed", "size": 16,
                                                  "logicalType": "uuid"})
            case _:  # fixed(L)
                return self._named(f"fixed_{primitive.length}",
                                   {"type": "fixed", "size": primitive.length})

    def _named(self, name: str, schema: dict[str, Any]) -> AvroSchema:
        """A named type's definition the first time, its name after (Avro forbids redefining)."""
        if name in self._defined:
            return name
        self._defined.add(name)
        return {"type": schema.pop("type"), "name": name, **schema}


def _nullable(f: NestedField, schema: AvroSchema) -> AvroSchema:
    return schema if f.is_required else ["null", schema]
