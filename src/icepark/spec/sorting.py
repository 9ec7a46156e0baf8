"""Sort orders: how data is sorted within files.

Spec, *Sorting*: "A sort order is defined by a sort order id and a list of sort fields. The
order of the sort fields within the list defines the order in which the sort is applied to the
data. Each sort field consists of: A source column id or a list of source column ids from the
table's schema; A transform that is used to produce values to be sorted on from the source
column(s) ...; A sort direction, that can only be either ``asc`` or ``desc``; A null order that
describes the order of null values when sorted. Can only be either ``nulls-first`` or
``nulls-last``." And: "Order id ``0`` is reserved for the unsorted order."

As for partition fields, a multi-argument sort field (an unknown transform, JSON ``source-ids``)
lists its columns in :attr:`SortField.source_ids`. A sort field with an unknown transform does
not affect reading, but data cannot be sorted by it: writers call
:meth:`SortOrder.check_writable` first.

>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.spec.schema import Schema
>>> schema = Schema.of(NestedField.required(2, "id", LONG), NestedField.optional(3, "data", STRING))
>>> order = SortOrderBuilder(schema).asc("id").desc("data", transform=Transform.bucket(4)).build()
>>> print(order)
1: [identity(2) asc nulls-first, bucket[4](3) desc nulls-last]
>>> order.satisfies(SortOrderBuilder(schema).asc("id").build())
True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, check_source_ids
from icepark.spec.types import PrimitiveType

_IDENTITY = Transform.identity()


class SortDirection(StrEnum):
    """"A sort direction, that can only be either ``asc`` or ``desc``"."""

    ASC = "asc"
    DESC = "desc"


class NullOrder(StrEnum):
    """"A null order ... Can only be either ``nulls-first`` or ``nulls-last``"."""

    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True, slots=True)
class SortField:
    """One sort key: a transform of a source column, a direction and a null order.

    ``source_ids`` is empty for a single-argument field (JSON ``source-id``) and lists every
    source column of a multi-argument one (JSON ``source-ids``, an unknown transform),
    ``source_id`` being its first; :attr:`sources` is the list in both cases.
    """

    source_id: int
    transform: Transform
    direction: SortDirection
    null_order: NullOrder
    source_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_ids", tuple(self.source_ids))
        check_source_ids(self.transform, self.source_id, self.source_ids,
                         f"Sort field {self.transform}({self.source_id})")
        try:
            object.__setattr__(self, "direction", SortDirection(self.direction))
        except ValueError:
            raise ValidationError(
                f"Invalid sort direction {self.direction!r} for source {self.source_id}: "
                "can only be either 'asc' or 'desc'") from None
        try:
            object.__setattr__(self, "null_order", NullOrder(self.null_order))
        except ValueError:
            raise ValidationError(
                f"Invalid null order {self.null_order!r} for source {self.source_id}: "
                "can only be either 'nulls-first' or 'nulls-last'") from None

    @property
    def sources(self) -> tuple[int, ...]:
        """Every source column ID: ``source_ids``, or ``(source_id,)``."""
        return self.source_ids or (self.source_id,)

    @property
    def is_multi_argument(self) -> bool:
        """Whether the field is written with ``source-ids`` (a multi-argument transform)."""
        return bool(self.source_ids)

    def satisfies(self, other: SortField, schema: Schema | None = None) -> bool:
        """Whether data sorted by this field is sorted by ``other``: same sources, direction
        and null order, and this transform's order satisfies the other's."""
        if self == other:
            return True
        if (self.sources, self.direction, self.null_order) != (
                other.sources, other.direction, other.null_order):
            return False
        found = None if schema is None else schema.field_by_id(self.source_id)
        return self.transform.satisfies_order_of(
            other.transform, None if found is None else found.field_type)

    def __str__(self) -> str:
        sources = ", ".join(map(str, self.sources))
        return f"{self.transform}({sources}) {self.direction} {self.null_order}"


@dataclass(frozen=True, slots=True)
class SortOrder:
    """A sort order: an ID and its sort fields, applied in list order.

    >>> SortOrder(0, (SortField(1, Transform.identity(), SortDirection.ASC,
    ...                         NullOrder.NULLS_FIRST),))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Sort order id 0 is reserved for the unsorted order; ...
    """

    order_id: int = 0
    fields: tuple[SortField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.fields and self.order_id == 0:
            raise ValidationError(
                "Sort order id 0 is reserved for the unsorted order; give this order of "
                f"{len(self.fields)} field{'s' if len(self.fields) > 1 else ''} a positive id")
        if not self.fields and self.order_id != 0:
            raise ValidationError(
                f"Unsorted order must have id 0, not {self.order_id}: "
                "order id 0 is reserved for the unsorted order")

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def check_compatible(self, schema: Schema) -> None:
        """Raise ValidationError unless every source column of every sort field exists, is a
        primitive, and is accepted by its transform (an unknown transform accepts any, as the
        reference implementation's does)."""
        for f in self.fields:
            for source_id in f.sources:
                _check_sort_source(schema, f, source_id)

    @property
    def unknown_fields(self) -> tuple[SortField, ...]:
        """The fields whose transform icepark does not know."""
        return tuple(f for f in self.fields if f.transform.is_unknown)

    def check_writable(self) -> None:
        """Raise :class:`UnsupportedFeature` naming every field with an unknown transform:
        data cannot be sorted by a transform icepark cannot compute (the reference
        implementation's writers fail the same way). Writers call it before writing any file;
        reading is unaffected.

        >>> order = SortOrder(1, (SortField(1, Transform.unknown("zorder"), SortDirection.ASC,
        ...                                 NullOrder.NULLS_FIRST),))
        >>> order.check_writable()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        icepark.errors.UnsupportedFeature: Cannot sort data files by sort order 1: its field \
zorder(1) asc nulls-first uses transform 'zorder', which icepark does not know; ...
        """
        unknown = self.unknown_fields
        if unknown:
            fields = ", ".join(f"its field {f} uses transform {str(f.transform)!r}"
                               for f in unknown)
            raise UnsupportedFeature(
                f"Cannot sort data files by sort order {self.order_id}: {fields}, which "
                "icepark does not know; set another default sort order (replace_sort_order()) "
                "to write")

    def satisfies(self, other: SortOrder, schema: Schema | None = None) -> bool:
        """Whether data sorted by this order is also sorted by ``other``.

        Any order satisfies the unsorted order; otherwise this order's first fields must each
        satisfy the other's fields in turn. ``schema`` gives the source types that decide
        whether one truncate width satisfies another.
        """
        if other.is_unsorted:
            return True
        if len(other.fields) > len(self.fields):
            return False
        return all(mine.satisfies(theirs, schema)
                   for mine, theirs in zip(self.fields, other.fields, strict=False))

    def same_order(self, other: SortOrder) -> bool:
        """Whether both orders have the same fields; the order IDs may differ."""
        return self.fields == other.fields

    def __str__(self) -> str:
        return f"{self.order_id}: [" + ", ".join(str(f) for f in self.fields) + "]"


UNSORTED = SortOrder(0, ())


def _check_sort_source(schema: Schema, f: SortField, source_id: int) -> None:
    found = schema.field_by_id(source_id)
    if found is None:
        raise ValidationError(f"Cannot find source column {source_id} for sort field {f}")
    name = schema.find_column_name(source_id) or str(source_id)
    if not isinstance(found.field_type, PrimitiveType):
        raise ValidationError(
            f"Cannot sort by {name!r}: the source must be a primitive type, not "
            f"{found.field_type.type_id.value}")
    if not f.transform.can_transform(found.field_type):
        raise ValidationError(
            f"Cannot sort by {f.transform}({name}): {f.transform} does not accept "
            f"{found.field_type}")


class SortOrderBuilder:
    """Builds a sort order from column names. Defaults follow the reference implementation:
    ``asc`` sorts nulls first and ``desc`` nulls last. With no fields, :meth:`build` returns
    :data:`UNSORTED` (id 0).

    >>> from icepark.spec.types import LONG, NestedField
    >>> s = Schema.of(NestedField.required(1, "id", LONG))
    >>> SortOrderBuilder(s).desc("id").build().fields[0].null_order
    <NullOrder.NULLS_LAST: 'nulls-last'>
    """

    def __init__(self, schema: Schema, order_id: int = 1, case_sensitive: bool = True) -> None:
        self._schema = schema
        self._order_id = order_id
        self._case_sensitive = case_sensitive
        self._fields: list[SortField] = []

    def _add(self, name: str, direction: SortDirection, null_order: NullOrder,
             transform: Transform | str) -> SortOrderBuilder:
        source_id = self._schema.find_field_id(name, self._case_sensitive)
        if source_id is None:
            raise ValidationError(f"Cannot find source column {name!r} for sort field")
        t = Transform.parse(transform) if isinstance(transform, str) else transform
        self._fields.append(SortField(source_id, t, direction, null_order))
        return self

    def asc(self, name: str, null_order: NullOrder = NullOrder.NULLS_FIRST,
            transform: Transform | str = _IDENTITY) -> SortOrderBuilder:
        return self._add(name, SortDirection.ASC, null_order, transform)

    def desc(self, name: str, null_order: NullOrder = NullOrder.NULLS_LAST,
             transform: Transform | str = _IDENTITY) -> SortOrderBuilder:
        return self._add(name, SortDirection.DESC, null_order, transform)

    def build(self) -> SortOrder:
        if not self._fields:
            return UNSORTED
        order = SortOrder(self._order_id, tuple(self._fields))
        order.check_compatible(self._schema)
        return order
