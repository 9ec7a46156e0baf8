"""Schemas: the table's struct of columns, with indexes by ID, by name and by parent.

Spec, *Schemas and Data Types*: "A table's schema is a list of named columns ... A table schema is
also a struct type." Every field, list element and map key/value has an ID unique in the schema.

Traversals are generic (:func:`visit` with a :class:`SchemaVisitor`); each index is a small
visitor behind a named function (:func:`index_by_id`, :func:`index_by_name`,
:func:`index_parents`).

>>> from icepark.spec.types import LONG, STRING, ListType, NestedField
>>> s = Schema.of(
...     NestedField.required(1, "id", LONG),
...     NestedField.optional(2, "tags", ListType(3, STRING, element_required=True)),
... )
>>> s.find_column_name(3)
'tags.element'
>>> s.find_field("TAGS", case_sensitive=False).field_id
2
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from icepark.errors import Remedy, ValidationError
from icepark.spec.types import (
    V3_ONLY,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
    child_fields,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Accessor:
    """Reads a struct-nested field from a row given as nested sequences (position path)."""

    position: int
    inner: Accessor | None = None

    def get(self, row: Sequence[Any]) -> Any:
        value = row[self.position]
        if self.inner is None or value is None:
            return value
        return self.inner.get(value)


@dataclass(frozen=True, slots=True)
class Schema:
    """A table schema: an ID, a struct of fields and the identifier field IDs.

    Construction validates what every schema must satisfy: field IDs unique across the whole
    schema, names unique within each struct, and the *Identifier Field IDs* rules.
    """

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()
    _by_id: dict[int, NestedField] = field(init=False, repr=False, compare=False, hash=False)
    _by_name: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _by_lower_name: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _names: dict[int, str] = field(init=False, repr=False, compare=False, hash=False)
    _parents: dict[int, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "identifier_field_ids", tuple(self.identifier_field_ids))
        struct = StructType(self.fields)  # checks duplicate names at the top level
        by_id = index_by_id(struct)
        by_name = index_by_name(struct)
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_by_name", by_name)
        lower: dict[str, int] = {}
        for name, fid in by_name.items():
            lower.setdefault(name.lower(), fid)
        object.__setattr__(self, "_by_lower_name", lower)
        object.__setattr__(self, "_names", _canonical_names(struct))
        object.__setattr__(self, "_parents", index_parents(struct))
        self._validate_identifier_fields()

    @staticmethod
    def of(*fields: NestedField, schema_id: int = 0,
           identifier_field_ids: Iterable[int] = ()) -> Schema:
        """A schema from its top-level fields."""
        return Schema(tuple(fields), schema_id, tuple(identifier_field_ids))

    def as_struct(self) -> StructType:
        return StructType(self.fields)

    @property
    def highest_field_id(self) -> int:
        """The largest field ID in the schema (0 for an empty schema)."""
        return max(self._by_id, default=0)

    @property
    def field_ids(self) -> frozenset[int]:
        return frozenset(self._by_id)

    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """The field with that ID or full dotted name; ``ValidationError`` if there is none."""
        if isinstance(name_or_id, int):
            found = self._by_id.get(name_or_id)
            if found is None:
                raise ValidationError(f"Cannot find field with id {name_or_id} in schema")
            return found
        fid = self.find_field_id(name_or_id, case_sensitive)
        if fid is None:
            raise ValidationError(f"Cannot find field {name_or_id!r} in schema")
        return self._by_id[fid]

    def find_field_id(self, name: str, case_sensitive: bool = True) -> int | None:
        """The ID of the field with that full dotted name (short names accepted), or None."""
        if case_sensitive:
            return self._by_name.get(name)
        return self._by_lower_name.get(name.lower())

    def field_by_id(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        return self.find_field(name_or_id, case_sensitive).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted name of a field ID, e.g. ``"locations.element.lat"``."""
        return self._names.get(field_id)

    def parent_id(self, field_id: int) -> int | None:
        """The ID of the struct, list or map field that holds ``field_id`` (None at the top)."""
        return self._parents.get(field_id)

    def accessor(self, field_id: int) -> Accessor:
        """An accessor for a field nested only in structs (not in a list or map)."""
        if field_id not in self._by_id:
            raise ValidationError(f"Cannot find field with id {field_id} in schema")
        path: list[int] = []
        current: int | None = field_id
        while current is not None:
            parent = self._parents.get(current)
            siblings = self.fields if parent is None else _struct_children(self._by_id[parent])
            if siblings is None:
                raise ValidationError(
                    f"Field {field_id} is inside a list or map and has no struct accessor"
                )
            path.append(next(i for i, f in enumerate(siblings) if f.field_id == current))
            current = parent
        accessor: Accessor | None = None
        for position in path:
            accessor = Accessor(position, accessor)
        assert accessor is not None
        return accessor

    def identifier_field_names(self) -> tuple[str, ...]:
        return tuple(self._names[i] for i in self.identifier_field_ids)

    def with_schema_id(self, schema_id: int) -> Schema:
        return Schema(self.fields, schema_id, self.identifier_field_ids)

    def same_columns(self, other: Schema) -> bool:
        """Whether two schemas have the same fields and identifier fields (IDs aside)."""
        return (self.fields == other.fields
                and set(self.identifier_field_ids) == set(other.identifier_field_ids))

    def _validate_identifier_fields(self) -> None:
        """Spec, *Identifier Field IDs*: "Identifier fields may be nested in structs but cannot be
        nested within maps or lists. Float, double, and optional fields cannot be used as
        identifier fields and a nested field cannot be used as an identifier field if it is
        nested in an optional struct"."""
        for fid in self.identifier_field_ids:
            f = self._by_id.get(fid)
            if f is None:
                raise ValidationError(f"Identifier field {fid} is not in the schema")
            name = self._names[fid]
            if not isinstance(f.field_type, PrimitiveType):
                raise ValidationError(
                    f"Identifier field {name!r} must be a primitive, not {f.field_type}")
            if f.field_type.type_id in (TypeId.FLOAT, TypeId.DOUBLE):
                raise ValidationError(
                    f"Identifier field {name!r} cannot be {f.field_type}: float and double "
                    "are not allowed")
            if not f.is_required:
                raise ValidationError(f"Identifier field {name!r} must be required, not optional")
            parent = self._parents.get(fid)
            while parent is not None:
                holder = self._by_id[parent]
                if not isinstance(holder.field_type, StructType):
                    raise ValidationError(
                        f"Identifier field {name!r} cannot be nested in a "
                        f"{holder.field_type.type_id.value}")
                if not holder.is_required:
                    raise ValidationError(
                        f"Identifier field {name!r} cannot be nested in optional struct "
                        f"{self._names[parent]!r}")
                parent = self._parents.get(parent)

    def __str__(self) -> str:
        return "table {\n" + "\n".join(f"  {f}" for f in self.fields) + "\n}"


def _struct_children(f: NestedField) -> tuple[NestedField, ...] | None:
    return f.field_type.fields if isinstance(f.field_type, StructType) else None


class SchemaVisitor(ABC, Generic[T]):
    """A post-order traversal: children are visited first and their results passed up.

    ``before_field``/``after_field`` bracket every struct field, list element and map key/value.
    """

    def before_field(self, f: NestedField) -> None:
        """Called before a field's type is visited."""

    def after_field(self, f: NestedField) -> None:
        """Called after a field's type is visited."""

    @abstractmethod
    def struct(self, struct: StructType, field_results: list[T]) -> T: ...

    @abstractmethod
    def field(self, f: NestedField, field_result: T) -> T: ...

    @abstractmethod
    def list(self, list_type: ListType, element_result: T) -> T: ...

    @abstractmethod
    def map(self, map_type: MapType, key_result: T, value_result: T) -> T: ...

    @abstractmethod
    def primitive(self, primitive: PrimitiveType) -> T: ...


def visit(obj: Schema | IcebergType, visitor: SchemaVisitor[T]) -> T:
    """Visit a schema or type with ``visitor``; one dispatch for every traversal."""
    match obj:
        case Schema():
            return visit(obj.as_struct(), visitor)
        case StructType():
            results = []
            for f in obj.fields:
                visitor.before_field(f)
                try:
                    results.append(visitor.field(f, visit(f.field_type, visitor)))
                finally:
                    visitor.after_field(f)
            return visitor.struct(obj, results)
        case ListType():
            return visitor.list(obj, _visit_child(obj.element_field, visitor))
        case MapType():
            key = _visit_child(obj.key_field, visitor)
            value = _visit_child(obj.value_field, visitor)
            return visitor.map(obj, key, value)
        case PrimitiveType():
            return visitor.primitive(obj)
        case _:
            raise ValidationError(f"Not an Iceberg type: {obj!r}")


def _visit_child(f: NestedField, visitor: SchemaVisitor[T]) -> T:
    visitor.before_field(f)
    try:
        return visit(f.field_type, visitor)
    finally:
        visitor.after_field(f)


class _FieldHookVisitor(SchemaVisitor[None]):
    """A visitor whose work is all in ``before_field``/``after_field``."""

    def struct(self, struct: StructType, field_results: list[None]) -> None:
        return None

    def field(self, f: NestedField, field_result: None) -> None:
        return None

    def list(self, list_type: ListType, element_result: None) -> None:
        return None

    def map(self, map_type: MapType, key_result: None, value_result: None) -> None:
        return None

    def primitive(self, primitive: PrimitiveType) -> None:
        return None


class _IndexById(_FieldHookVisitor):
    def __init__(self) -> None:
        self.index: dict[int, NestedField] = {}

    def before_field(self, f: NestedField) -> None:
        if f.field_id in self.index:
            raise ValidationError(
                f"Duplicate field id {f.field_id}: {self.index[f.field_id].name!r} and {f.name!r}")
        self.index[f.field_id] = f


def index_by_id(obj: Schema | IcebergType) -> dict[int, NestedField]:
    """Every field, element, key and value below ``obj`` by ID; duplicate IDs are rejected."""
    visitor = _IndexById()
    visit(obj, visitor)
    return visitor.index


def check_format_version_types(obj: Schema | IcebergType, format_version: int) -> None:
    """Raise :class:`ValidationError` naming the first column of ``obj`` whose type needs a
    newer format version than ``format_version``.

    Spec, *Primitive Types*: "Primitive types added after v1 have an "added by" version that is
    the first spec version in which the type is allowed ... using v3 types in v1 or v2 tables
    can break forward compatibility."

    >>> from icepark.spec.types import VARIANT
    >>> check_format_version_types(Schema.of(NestedField.optional(1, "v", VARIANT)), 2)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Column 'v' has type variant, which needs format version 3 \
(the table is version 2); upgrade the table with upgrade_format_version()
    """
    if format_version >= 3:
        return
    for path, t in _v3_columns(obj):
        raise ValidationError(
            f"Column {path!r} has type {t}, which needs format version 3 (the table is "
            f"version {format_version})",
            remedy=Remedy("upgrade the table with {}", "upgrade_format_version()"))


def _v3_columns(obj: Schema | IcebergType) -> Iterator[tuple[str, PrimitiveType]]:
    """The dotted paths and types of the columns of ``obj`` with a v3 type, in order."""
    root = obj.as_struct() if isinstance(obj, Schema) else obj
    stack: list[tuple[str, IcebergType]] = [("", root)]
    while stack:
        path, t = stack.pop()
        if isinstance(t, PrimitiveType):
            if t.type_id in V3_ONLY:
                yield path, t
            continue
        stack.extend((f"{path}.{f.name}" if path else f.name, f.field_type)
                     for f in reversed(child_fields(t)))


class _IndexByName(_FieldHookVisitor):
    """Full dotted names ("a.element.b"), plus short names without "element"/"value"."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.short: dict[str, int] = {}
        self._path: list[str] = []
        self._short_path: list[str] = []
        self._in_collection: list[bool] = []

    def before_field(self, f: NestedField) -> None:
        self._path.append(f.name)
        parent_is_collection = bool(self._in_collection) and self._in_collection[-1]
        # "element" of a list and "value" of a map are left out of short names.
        if not (parent_is_collection and f.name in ("element", "value")):
            self._short_path.append(f.name)
        else:
            self._short_path.append("")
        full = ".".join(self._path)
        self.names[full] = f.field_id
        short = ".".join(p for p in self._short_path if p)
        if short != full:
            self.short.setdefault(short, f.field_id)
        self._in_collection.append(isinstance(f.field_type, ListType | MapType))

    def after_field(self, f: NestedField) -> None:
        self._path.pop()
        self._short_path.pop()
        self._in_collection.pop()


def index_by_name(obj: Schema | IcebergType) -> dict[str, int]:
    """Field IDs by full dotted name; short names (``"points.x"`` for ``"points.element.x"``)
    are included where they do not clash with a full name."""
    visitor = _IndexByName()
    visit(obj, visitor)
    merged = dict(visitor.names)
    for short, fid in visitor.short.items():
        merged.setdefault(short, fid)
    return merged


def _canonical_names(obj: Schema | IcebergType) -> dict[int, str]:
    visitor = _IndexByName()
    visit(obj, visitor)
    return {fid: name for name, fid in visitor.names.items()}


class _IndexParents(_FieldHookVisitor):
    def __init__(self) -> None:
        self.parents: dict[int, int] = {}
        self._stack: list[int] = []

    def before_field(self, f: NestedField) -> None:
        if self._stack:
            self.parents[f.field_id] = self._stack[-1]
        self._stack.append(f.field_id)

    def after_field(self, f: NestedField) -> None:
        self._stack.pop()


def index_parents(obj: Schema | IcebergType) -> dict[int, int]:
    """The parent field ID of every nested field (top-level fields are absent)."""
    visitor = _IndexParents()
    visit(obj, visitor)
    return visitor.parents


def assign_fresh_ids(t: IcebergType, next_id: Callable[[], int]) -> IcebergType:
    """A copy of ``t`` whose every nested field gets a new ID from ``next_id``.

    Spec, *Schema Evolution*: "Adding a new field assigns a new ID for that field and for any
    nested fields." IDs are assigned breadth-first within each struct, as the reference
    implementation does: a struct's own fields first, then their children.

    >>> from icepark.spec.types import LONG, STRING, ListType
    >>> ids = iter(range(10, 20))
    >>> assign_fresh_ids(StructType((NestedField.required(1, "a", ListType(2, LONG)),
    ...     NestedField.optional(3, "b", STRING))), lambda: next(ids))
    struct<10: a: required list<long>, 11: b: optional string>
    """
    match t:
        case StructType():
            new_ids = [next_id() for _ in t.fields]
            return StructType(tuple(
                NestedField(fid, f.name, assign_fresh_ids(f.field_type, next_id), f.is_required,
                            f.doc, f.initial_default, f.write_default)
                for fid, f in zip(new_ids, t.fields, strict=True)))
        case ListType():
            element_id = next_id()
            return ListType(element_id, assign_fresh_ids(t.element_type, next_id),
                            t.element_required)
        case MapType():
            key_id, value_id = next_id(), next_id()
            return MapType(key_id, assign_fresh_ids(t.key_type, next_id), value_id,
                           assign_fresh_ids(t.value_type, next_id), t.value_required)
        case _:
            return t


def fresh_schema(schema: Schema, schema_id: int = 0) -> tuple[Schema, int]:
    """Renumber a new table's schema from 1, keeping identifier fields; returns the last ID.

    Identifier fields are carried over by name.
    """
    counter = iter(range(1, 2**31))
    struct = assign_fresh_ids(schema.as_struct(), lambda: next(counter))
    assert isinstance(struct, StructType)
    names = schema.identifier_field_names()
    fresh = Schema(struct.fields, schema_id)
    ids = tuple(fresh.find_field(n).field_id for n in names)
    result = Schema(struct.fields, schema_id, ids)
    return result, result.highest_field_id
