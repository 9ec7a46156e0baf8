"""Union by name: merge another schema's columns into a :class:`SchemaUpdate`.

Each column of the other schema is matched by name (path of names, as
:meth:`SchemaUpdate.current_field` resolves it) and expressed as ordinary changes, so every
rule of :mod:`icepark.spec.evolution.schema_update` applies:

* a column missing here is added with its nested types ("Adding a new field assigns a new ID for
  that field and for any nested fields"), required if the other schema says so;
* a primitive the other schema widens by a valid promotion is promoted; one it narrows (ours
  ``long``, theirs ``int``) is kept; any other type change is rejected;
* a column optional there but required here becomes optional;
* a doc or write default set there is taken; a different initial default is rejected ("The
  initial-default must be set when a field is added and cannot change").

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.evolution.schema_update import SchemaUpdate
>>> from icepark.spec.types import INT, LONG, NestedField
>>> ours = Schema.of(NestedField.required(1, "id", INT))
>>> theirs = Schema.of(NestedField.optional(7, "id", LONG), NestedField.optional(8, "n", INT))
>>> print(SchemaUpdate(ours, 1).union_by_name(theirs).apply()[0])
table {
  1: id: optional long
  2: n: optional int
}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from icepark.errors import ValidationError
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    is_promotion_allowed,
)

if TYPE_CHECKING:
    from icepark.spec.schema import Schema


class ColumnChanges(Protocol):
    """What a union needs of a schema update (:class:`~icepark.spec.evolution.schema_update.
    SchemaUpdate` is one): the current column at a path, and the two changes it records."""

    def current_field(self, path: tuple[str, ...]) -> NestedField | None: ...

    def add_column(  # noqa: PLR0917 - SchemaUpdate.add_column's agreed positional API
            self, path: tuple[str, ...], field_type: IcebergType, doc: str | None = None,
                   required: bool = False, initial_default: Any = None,
                   write_default: Any = None) -> Any: ...

    def update_column(self, path: tuple[str, ...], field_type: IcebergType | None = None,
                      doc: str | None = None, required: bool | None = None,
                      write_default: Any = ...) -> Any: ...


def union_by_name(update: ColumnChanges, other: Schema) -> None:
    """Record in ``update`` the changes that merge ``other`` into its schema by name."""
    _union_struct(update, (), other.as_struct())


def _union_struct(update: ColumnChanges, parent: tuple[str, ...], theirs: StructType) -> None:
    for their in theirs.fields:
        path = (*parent, their.name)
        ours = update.current_field(path)
        if ours is None:
            update.add_column(path, their.field_type, their.doc, their.is_required,
                              their.initial_default, their.write_default)
        else:
            _union_field(update, path, ours, their)


def _union_field(update: ColumnChanges, path: tuple[str, ...], ours: NestedField,
                 their: NestedField) -> None:
    if their.initial_default is not None and their.initial_default != ours.initial_default:
        raise ValidationError(
            f"Cannot change the initial default of {'.'.join(path)!r}: \"The initial-default "
            "must be set when a field is added and cannot change\"")
    new_type: IcebergType | None = None
    match ours.field_type, their.field_type:
        case PrimitiveType() as mine, PrimitiveType() as other:
            # a narrower type in other keeps ours (v3's unknown and date too: ours takes them)
            if not is_promotion_allowed(other, mine, format_version=3):
                new_type = other  # update_column rejects it unless it is a valid promotion
        case StructType(), StructType() as other:
            _union_struct(update, path, other)
        case ListType() as mine, ListType() as other:
            _union_field(update, (*path, "element"), mine.element_field, other.element_field)
        case MapType() as mine, MapType() as other:
            _union_field(update, (*path, "key"), mine.key_field, other.key_field)
            _union_field(update, (*path, "value"), mine.value_field, other.value_field)
        case _, other:
            new_type = other  # a different kind of type: update_column says why it cannot be
    update.update_column(path, field_type=new_type,
                         doc=their.doc if their.doc != ours.doc else None,
                         required=False if their.is_optional and ours.is_required else None)
    if their.write_default is not None:
        update.update_column(path, write_default=their.write_default)
