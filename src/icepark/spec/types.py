"""Iceberg data types: the primitives and the three nested types.

Spec, *Schemas and Data Types*: "A table's schema is a list of named columns. All data types are
either primitives or nested types, which are maps, lists, or structs."

Primitives are one closed set, so they are one value class, :class:`PrimitiveType`, holding a
:class:`TypeId` plus the parameters of ``decimal(P,S)`` and ``fixed(L)``. The nested types are
:class:`StructType`, :class:`ListType` and :class:`MapType`; struct fields, list elements and
map keys/values are all :class:`NestedField` values with their own field ID.

Python values of each type, used by defaults, bounds and transforms, are the spec's storage
values: ``int`` for int/long, days for date, microseconds for time/timestamp/timestamptz,
nanoseconds for timestamp_ns/timestamptz_ns, ``decimal.Decimal``, ``str``, ``uuid.UUID``,
``bytes`` for fixed/binary and for geometry/geography (WKB, Appendix G), ``float``, ``bool``.
A variant value is its two encoded parts, ``(metadata, value)`` bytes (Parquet's Variant
encoding); ``unknown`` has no value but null.

>>> str(PrimitiveType.decimal(9, 2))
'decimal(9,2)'
>>> parse_primitive("fixed[16]") == PrimitiveType.fixed(16)
True
>>> print(NestedField.required(1, "id", LONG, doc="row key"))
1: id: required long (row key)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from icepark.errors import ValidationError

MAX_DECIMAL_PRECISION = 38
MAX_FIELD_ID = 2_147_483_447  # Integer.MAX_VALUE - 200: "Reserved Field IDs"


class TypeId(StrEnum):
    """The kinds of Iceberg types; the value is the JSON name of the parameterless ones."""

    BOOLEAN = "boolean"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    DATE = "date"
    TIME = "time"
    TIMESTAMP = "timestamp"
    TIMESTAMPTZ = "timestamptz"
    STRING = "string"
    UUID = "uuid"
    FIXED = "fixed"
    BINARY = "binary"
    # the types added by format version 3 (see V3_ONLY)
    UNKNOWN = "unknown"
    TIMESTAMP_NS = "timestamp_ns"
    TIMESTAMPTZ_NS = "timestamptz_ns"
    VARIANT = "variant"
    GEOMETRY = "geometry"
    GEOGRAPHY = "geography"
    STRUCT = "struct"
    LIST = "list"
    MAP = "map"


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive type: a :class:`TypeId` plus decimal precision/scale or fixed length.

    Use the module constants (``LONG``, ``STRING`` ...) and the named constructors
    :meth:`decimal` and :meth:`fixed`; parameters of other types must stay 0.
    """

    type_id: TypeId
    precision: int = 0
    scale: int = 0
    length: int = 0
    arguments: str = ""
    """The text inside the parentheses of ``geometry(C)`` and ``geography(C, A)``, kept as
    written (empty for the spec's defaults, ``OGC:CRS84`` and ``spherical``)."""

    def __post_init__(self) -> None:
        tid = self.type_id
        if tid in _NESTED_IDS:
            raise ValidationError(f"{tid.value} is a nested type, not a primitive")
        if tid is TypeId.DECIMAL:
            if not 1 <= self.precision <= MAX_DECIMAL_PRECISION:
                raise ValidationError(
                    f"Invalid decimal precision {self.precision}: "
                    f"precision must be between 1 and {MAX_DECIMAL_PRECISION}"
                )
            if abs(self.scale) > MAX_DECIMAL_PRECISION:
                raise ValidationError(f"Invalid decimal scale {self.scale}")
        elif self.precision or self.scale:
            raise ValidationError(f"{tid.value} takes no precision or scale")
        if tid is TypeId.FIXED:
            if self.length < 1:
                raise ValidationError(f"Invalid fixed length {self.length}: must be positive")
        elif self.length:
            raise ValidationError(f"{tid.value} takes no length")
        if self.arguments and tid not in (TypeId.GEOMETRY, TypeId.GEOGRAPHY):
            raise ValidationError(f"{tid.value} takes no arguments")
        if self.arguments:
            self._geo_parts()  # checks them

    def _geo_parts(self) -> tuple[str, str]:
        """The CRS and edge algorithm of ``geometry(C)``/``geography(C, A)`` as written
        ("" where not given)."""
        parts = [p.strip() for p in self.arguments.split(",")] if self.arguments else [""]
        if self.type_id is TypeId.GEOMETRY and len(parts) > 1:
            raise ValidationError(f"Invalid {self}: geometry takes one argument, the CRS")
        if len(parts) > 2:
            raise ValidationError(f"Invalid {self}: geography takes a CRS and an algorithm")
        algorithm = parts[1].lower() if len(parts) == 2 else ""
        if len(parts) == 2 and algorithm not in EDGE_ALGORITHMS:
            raise ValidationError(f"Invalid {self}: unknown edge-interpolation algorithm "
                                  f"{parts[1]!r}, expected one of {', '.join(EDGE_ALGORITHMS)}")
        return parts[0], algorithm

    @property
    def crs(self) -> str:
        """The CRS ``C`` of ``geometry(C)`` or ``geography(C, A)``: "If not specified, C is
        ``OGC:CRS84``".

        >>> parse_primitive("geography(srid:4326, karney)").crs, GEOMETRY.crs
        ('srid:4326', 'OGC:CRS84')
        """
        if self.type_id not in (TypeId.GEOMETRY, TypeId.GEOGRAPHY):
            raise ValidationError(f"{self} has no CRS")
        return self._geo_parts()[0] or DEFAULT_CRS

    @property
    def edge_algorithm(self) -> str:
        """The algorithm ``A`` of ``geography(C, A)``: "If not specified ... A is
        ``spherical``"; geometry's edges are "always linear/planar"."""
        if self.type_id is TypeId.GEOMETRY:
            return "planar"
        if self.type_id is not TypeId.GEOGRAPHY:
            raise ValidationError(f"{self} has no edge-interpolation algorithm")
        return self._geo_parts()[1] or "spherical"

    @staticmethod
    def decimal(precision: int, scale: int) -> PrimitiveType:
        """``decimal(P,S)``: "precision must be 38 or less"."""
        return PrimitiveType(TypeId.DECIMAL, precision=precision, scale=scale)

    @staticmethod
    def fixed(length: int) -> PrimitiveType:
        """``fixed(L)``: a fixed-length byte array of length L."""
        return PrimitiveType(TypeId.FIXED, length=length)

    @property
    def is_primitive(self) -> bool:
        return True

    def __str__(self) -> str:
        if self.type_id is TypeId.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if self.type_id is TypeId.FIXED:
            return f"fixed[{self.length}]"
        if self.arguments:
            return f"{self.type_id.value}({self.arguments})"
        return self.type_id.value

    def __repr__(self) -> str:
        return str(self)


_NESTED_IDS = frozenset({TypeId.STRUCT, TypeId.LIST, TypeId.MAP})
V3_ONLY = frozenset({TypeId.UNKNOWN, TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS, TypeId.VARIANT,
                     TypeId.GEOMETRY, TypeId.GEOGRAPHY})
"""Spec (v3), *Primitive Types* and *Semi-structured Types*: the types added by v3 ("using v3
types in v1 or v2 tables can break forward compatibility";
:func:`~icepark.spec.schema.check_format_version_types`)."""
NULL_DEFAULT_ONLY = frozenset({TypeId.UNKNOWN, TypeId.VARIANT, TypeId.GEOMETRY,
                               TypeId.GEOGRAPHY})
"""Spec, *Default values*: "All columns of ``unknown``, ``variant``, ``geometry``, and
``geography`` types must default to null. Non-null values for ``initial-default`` or
``write-default`` are invalid." """
EDGE_ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")
"""Spec, *Edge-Interpolation Algorithm*: the values of A in ``geography(C, A)``."""
DEFAULT_CRS = "OGC:CRS84"
"""Spec, *Primitive Types*: "If not specified, C is ``OGC:CRS84``"."""

BOOLEAN = PrimitiveType(TypeId.BOOLEAN)
INT = PrimitiveType(TypeId.INT)
LONG = PrimitiveType(TypeId.LONG)
FLOAT = PrimitiveType(TypeId.FLOAT)
DOUBLE = PrimitiveType(TypeId.DOUBLE)
DATE = PrimitiveType(TypeId.DATE)
TIME = PrimitiveType(TypeId.TIME)
TIMESTAMP = PrimitiveType(TypeId.TIMESTAMP)
TIMESTAMPTZ = PrimitiveType(TypeId.TIMESTAMPTZ)
STRING = PrimitiveType(TypeId.STRING)
UUID = PrimitiveType(TypeId.UUID)
BINARY = PrimitiveType(TypeId.BINARY)
UNKNOWN = PrimitiveType(TypeId.UNKNOWN)
TIMESTAMP_NS = PrimitiveType(TypeId.TIMESTAMP_NS)
TIMESTAMPTZ_NS = PrimitiveType(TypeId.TIMESTAMPTZ_NS)
VARIANT = PrimitiveType(TypeId.VARIANT)
GEOMETRY = PrimitiveType(TypeId.GEOMETRY)
GEOGRAPHY = PrimitiveType(TypeId.GEOGRAPHY)

_SIMPLE_PRIMITIVES = {
    t.type_id.value: t
    for t in (BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, STRING,
              UUID, BINARY, UNKNOWN, TIMESTAMP_NS, TIMESTAMPTZ_NS, VARIANT, GEOMETRY, GEOGRAPHY)
}
_DECIMAL_RE = re.compile(r"decimal\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)")
_FIXED_RE = re.compile(r"fixed\[\s*(\d+)\s*\]")
_GEO_RE = re.compile(r"(geometry|geography)\s*\((.*)\)", re.DOTALL)


def parse_primitive(text: str) -> PrimitiveType:
    """Parse a primitive type's JSON string (Appendix C), e.g. ``"decimal(9, 2)"``.

    >>> parse_primitive("decimal(9, 2)")
    decimal(9,2)
    >>> parse_primitive("varchar")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Unknown primitive type 'varchar'
    """
    simple = _SIMPLE_PRIMITIVES.get(text)
    if simple is not None:
        return simple
    if m := _DECIMAL_RE.fullmatch(text):
        return PrimitiveType.decimal(int(m.group(1)), int(m.group(2)))
    if m := _FIXED_RE.fullmatch(text):
        return PrimitiveType.fixed(int(m.group(1)))
    if m := _GEO_RE.fullmatch(text):
        return PrimitiveType(TypeId(m.group(1)), arguments=m.group(2).strip())
    raise ValidationError(f"Unknown primitive type {text!r}")


@dataclass(frozen=True, slots=True)
class NestedField:
    """A struct field, list element, or map key/value: an ID, a name, a type, nullability.

    Spec, *Nested Types*: "Each field in the tuple is named and has an integer id that is unique
    in the table schema. Each field can be either optional or required ... Fields may have an
    optional comment or doc string. Fields can have default values."
    Defaults are Python values of ``field_type`` (see the module docstring); ``None`` means unset.
    """

    field_id: int
    name: str
    field_type: IcebergType
    is_required: bool
    doc: str | None = None
    initial_default: Any = field(default=None, hash=False)
    write_default: Any = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.field_id, int) or isinstance(self.field_id, bool):
            raise ValidationError(f"Field ID of {self.name!r} must be an integer")
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(f"Field {self.field_id} must have a non-empty name")
        t = self.field_type
        if isinstance(t, PrimitiveType) and t.type_id in NULL_DEFAULT_ONLY:
            if t.type_id is TypeId.UNKNOWN and self.is_required:
                raise ValidationError(f"Field {self.name!r} of type unknown must be optional: "
                                      "\"Must be optional with null defaults\"")
            if self.initial_default is not None or self.write_default is not None:
                raise ValidationError(
                    f"Field {self.name!r} of type {t} cannot have a non-null default: \"All "
                    "columns of unknown, variant, geometry, and geography types must default "
                    "to null\"")

    @property
    def is_optional(self) -> bool:
        return not self.is_required

    @staticmethod
    def required(field_id: int, name: str, field_type: IcebergType, doc: str | None = None, *,
                 initial_default: Any = None, write_default: Any = None) -> NestedField:
        """A field whose values cannot be null."""
        return NestedField(field_id, name, field_type, True, doc, initial_default, write_default)

    @staticmethod
    def optional(field_id: int, name: str, field_type: IcebergType, doc: str | None = None, *,
                 initial_default: Any = None, write_default: Any = None) -> NestedField:
        """A field whose values may be null."""
        return NestedField(field_id, name, field_type, False, doc, initial_default, write_default)

    def __str__(self) -> str:
        req = "required" if self.is_required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


@dataclass(frozen=True, slots=True)
class StructType:
    """"A struct is a tuple of typed values." Fields keep their declared order."""

    fields: tuple[NestedField, ...] = ()

    type_id = TypeId.STRUCT

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        names: set[str] = set()
        for f in self.fields:
            if f.name in names:
                raise ValidationError(f"Duplicate field name {f.name!r} in struct")
            names.add(f.name)

    @property
    def is_primitive(self) -> bool:
        return False

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """The direct child named ``name``, or None."""
        if case_sensitive:
            return next((f for f in self.fields if f.name == name), None)
        lowered = name.lower()
        return next((f for f in self.fields if f.name.lower() == lowered), None)

    def field_by_id(self, field_id: int) -> NestedField | None:
        """The direct child with ``field_id``, or None."""
        return next((f for f in self.fields if f.field_id == field_id), None)

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.fields) + ">"

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, slots=True)
class ListType:
    """"A list is a collection of values with some element type." The element has its own ID."""

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    type_id = TypeId.LIST

    @property
    def is_primitive(self) -> bool:
        return False

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, slots=True)
class MapType:
    """"Map keys are required and map values can be either optional or required."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    type_id = TypeId.MAP

    @property
    def is_primitive(self) -> bool:
        return False

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"

    def __repr__(self) -> str:
        return str(self)


NestedType = StructType | ListType | MapType
IcebergType = PrimitiveType | StructType | ListType | MapType


def child_fields(t: IcebergType) -> tuple[NestedField, ...]:
    """The fields directly below a type: struct fields, the list element, map key and value."""
    match t:
        case StructType():
            return t.fields
        case ListType():
            return (t.element_field,)
        case MapType():
            return (t.key_field, t.value_field)
        case _:
            return ()


def is_promotion_allowed(source: IcebergType, target: IcebergType,
                         format_version: int = 2) -> bool:
    """Whether ``source`` may evolve to ``target`` (spec, *Schema Evolution*).

    "Valid type promotions are: int to long; float to double; decimal(P, S) to decimal(P', S)
    if P' > P -- widen the precision of decimal types." Equal types are trivially allowed.
    Format version 3 adds "``unknown``: *any type*" and "``date``: ``timestamp``,
    ``timestamp_ns``" ("Promotion to ``timestamptz`` or ``timestamptz_ns`` is **not**
    allowed").

    >>> is_promotion_allowed(INT, LONG), is_promotion_allowed(LONG, INT)
    (True, False)
    >>> is_promotion_allowed(PrimitiveType.decimal(9, 2), PrimitiveType.decimal(12, 2))
    True
    >>> is_promotion_allowed(DATE, TIMESTAMP_NS), is_promotion_allowed(DATE, TIMESTAMP_NS, 3)
    (False, True)
    """
    if source == target:
        return True
    if format_version >= 3 and isinstance(source, PrimitiveType) \
            and source.type_id is TypeId.UNKNOWN:
        return True
    if not isinstance(source, PrimitiveType) or not isinstance(target, PrimitiveType):
        return False
    match source.type_id, target.type_id:
        case TypeId.INT, TypeId.LONG:
            return True
        case TypeId.FLOAT, TypeId.DOUBLE:
            return True
        case TypeId.DECIMAL, TypeId.DECIMAL:
            return target.scale == source.scale and target.precision > source.precision
        case TypeId.DATE, TypeId.TIMESTAMP | TypeId.TIMESTAMP_NS:
            return format_version >= 3
        case _:
            return False


def promotion_error(source: IcebergType, target: IcebergType) -> str:
    """Say why ``source`` cannot be promoted to ``target``, for error messages."""
    if (isinstance(source, PrimitiveType) and isinstance(target, PrimitiveType)
            and source.type_id is TypeId.DECIMAL and target.type_id is TypeId.DECIMAL):
        if source.scale != target.scale:
            return f"Cannot promote {source} to {target}: scale is fixed"
        return f"Cannot promote {source} to {target}: precision can only be widened"
    return f"Cannot promote {source} to {target}"
