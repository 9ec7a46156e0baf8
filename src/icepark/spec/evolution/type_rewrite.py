"""Rewriting the types of evolving columns: promotions, fresh IDs inside nested types, and
the struct defaults re-keyed to follow them.

Spec, *Schema Evolution*: "Valid type promotions are: int to long; float to double; decimal(P, S)
to decimal(P', S) if P' > P", and in v3 also ``unknown`` to any type and ``date`` to
``timestamp`` or ``timestamp_ns``. "Evolving primitive types to structs is not allowed, nor
is evolving a single-field struct to a primitive." Struct-typed defaults are maps by field ID,
so when a nested type gets fresh IDs its defaults must be re-keyed to them.

>>> from icepark.spec.types import INT, LONG
>>> promote("n", INT, LONG)
long
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    child_fields,
    is_promotion_allowed,
    promotion_error,
)


def map_fields(t: IcebergType, fn: Callable[[NestedField], NestedField]) -> IcebergType:
    """``t`` rebuilt bottom-up with ``fn`` applied to every field, list element, map key and
    value in it."""

    def each(f: NestedField) -> NestedField:
        return fn(replace(f, field_type=map_fields(f.field_type, fn)))

    match t:
        case StructType():
            return StructType(tuple(each(f) for f in t.fields))
        case ListType():
            e = each(t.element_field)
            return ListType(e.field_id, e.field_type, e.is_required)
        case MapType():
            k, v = each(t.key_field), each(t.value_field)
            return MapType(k.field_id, k.field_type, v.field_id, v.field_type, v.is_required)
        case _:
            return t


def promote(name: str, old: IcebergType, new: IcebergType,
            format_version: int = 2) -> IcebergType:
    """``new`` if ``old`` may evolve to it in a table of ``format_version``, else an error
    naming the column and the rule (v3 adds unknown to any type, date to timestamp and
    timestamp_ns).

    >>> from icepark.spec.types import DATE, TIMESTAMP_NS, UNKNOWN, StructType
    >>> promote("d", DATE, TIMESTAMP_NS, format_version=3)
    timestamp_ns
    >>> promote("u", UNKNOWN, StructType(), format_version=3)
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot change 'u' from unknown to struct<>: "Evolving \
primitive types to structs is not allowed"

    As the reference implementation does, ``unknown`` becomes a primitive only: a nested type
    needs IDs of its own, so such a column is dropped and added again instead.
    """
    if isinstance(old, PrimitiveType) and isinstance(new, PrimitiveType):
        if is_promotion_allowed(old, new, format_version):
            return new
        v3 = ("; format version 3 adds unknown to any type and date to timestamp or "
              "timestamp_ns" + ("" if format_version >= 3 else
                                f", and this table is version {format_version}"))
        raise ValidationError(
            f"{promotion_error(old, new)} (column {name!r}): valid promotions are int to long, "
            f"float to double and decimal(P, S) to decimal(P', S) with P' > P{v3}")
    if isinstance(old, PrimitiveType):
        raise ValidationError(f"Cannot change {name!r} from {old} to {new}: \"Evolving "
                              "primitive types to structs is not allowed\"")
    if isinstance(new, PrimitiveType):
        raise ValidationError(f"Cannot change {name!r} from {old} to {new}: evolving a nested "
                              "type to a primitive is not allowed")
    raise ValidationError(f"Cannot change {name!r} from {old} to {new}: a struct, list or map "
                          "keeps its type; add, delete or update the fields inside it instead")


def rekey_defaults(old: IcebergType, new: IcebergType) -> IcebergType:
    """``new``, which is ``old`` with fresh IDs, with struct defaults re-keyed to the new IDs."""
    olds = {n.field_id: o for o, n in zip(all_fields(old), all_fields(new), strict=True)}

    def rekey(n: NestedField) -> NestedField:
        o = olds[n.field_id]
        return replace(
            n, initial_default=remap_value(o.initial_default, o.field_type, n.field_type),
            write_default=remap_value(o.write_default, o.field_type, n.field_type))

    return map_fields(new, rekey)


def remap_value(value: Any, old: IcebergType, new: IcebergType) -> Any:
    """Re-key struct values (``dict[int, value]`` by field ID) from ``old``'s IDs to ``new``'s;
    the two types have the same shape."""
    match old, new, value:
        case StructType(), StructType(), dict():
            return {n.field_id: remap_value(value[o.field_id], o.field_type, n.field_type)
                    for o, n in zip(old.fields, new.fields, strict=True) if o.field_id in value}
        case ListType(), ListType(), list():
            return [remap_value(v, old.element_type, new.element_type) for v in value]
        case MapType(), MapType(), dict():
            return {remap_value(k, old.key_type, new.key_type): remap_value(v, old.value_type,
                                                                 new.value_type)
                    for k, v in value.items()}
        case _:
            return value


def all_fields(t: IcebergType) -> Iterator[NestedField]:
    """Every field, element, key and value nested in ``t``, outermost first."""
    for f in child_fields(t):
        yield f
        yield from all_fields(f.field_type)
