"""Bound expressions: predicates resolved against a schema, and the binding that simplifies.

Binding looks each column up by name (``case_sensitive`` or not), converts literals to the
column type's values (:mod:`icepark.expressions.literals`) and simplifies what the schema
decides: ``IS NULL`` on a required column is always false, ``IN`` with one value is ``=``,
``int_col < 2**40`` holds for every non-null value. NOT is pushed down to the predicates
through the ``Op`` negation table while binding, so the simplifications stay exact under it
(``NOT int_col < -2**40`` is ``int_col IS NOT NULL``, not true). Bound expressions are their
own types; the constants ``ALWAYS_TRUE`` and ``ALWAYS_FALSE`` are shared with unbound ones.

Traversals are generic: :func:`visit` walks a bound expression with a :class:`BoundVisitor`,
and each evaluator is one such visitor.

>>> from icepark.expressions.expr import equal, is_null, not_in, or_
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import DATE, LONG, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "d", DATE))
>>> print(bind(or_(is_null("id"), equal("d", "2017-11-16")), schema))
d = 17486
>>> print(bind(not_in("id", [5]), schema))
id != 5
>>> bind(equal("id", "abc"), schema)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Cannot compare column 'id' (long) with 'abc': expected a number
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar

from icepark.errors import ValidationError
from icepark.expressions.expr import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expr,
    Not,
    Op,
    Or,
    Predicate,
    format_expr,
    format_predicate,
)
from icepark.expressions.literals import Gap, convert, value_range
from icepark.spec.bounds import sort_key
from icepark.spec.schema import Accessor, Schema
from icepark.spec.types import NestedField, PrimitiveType, TypeId

T = TypeVar("T")
_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A column resolved in a schema: its field, its struct accessor and its full name."""

    field: NestedField
    accessor: Accessor
    name: str

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def type(self) -> PrimitiveType:
        assert isinstance(self.field.field_type, PrimitiveType)  # binding checks this
        return self.field.field_type

    def eval(self, row: Sequence[Any]) -> Any:
        """The column's value in a row given as a tuple in schema order (structs as tuples)."""
        return self.accessor.get(row)


@dataclass(frozen=True, slots=True)
class BoundPredicate:
    """``term op literals`` with literals in the column type's value representation; the
    literals of ``in``/``not_in`` are distinct and sorted."""

    op: Op
    term: BoundReference
    literals: tuple[Any, ...] = ()

    @property
    def field(self) -> NestedField:
        return self.term.field

    @property
    def field_id(self) -> int:
        return self.term.field.field_id

    @property
    def accessor(self) -> Accessor:
        return self.term.accessor

    @property
    def name(self) -> str:
        return self.term.name

    @property
    def literal(self) -> Any:
        """The single literal of a comparison or ``starts_with``."""
        if len(self.literals) != 1 or self.op.is_set:
            raise ValidationError(f"{self.op} has no single literal")
        return self.literals[0]

    def negate(self) -> BoundPredicate:
        return BoundPredicate(self.op.negate(), self.term, self.literals)

    def rewrite_not(self) -> BoundPredicate:
        return self

    def as_unbound(self) -> Predicate:
        return Predicate(self.op, self.name, self.literals)

    def __str__(self) -> str:
        return format_predicate(self.op, self.name, self.literals)


@dataclass(frozen=True, slots=True)
class BoundAnd:
    left: BoundExpr
    right: BoundExpr

    def negate(self) -> BoundExpr:
        return bound_or(self.left.negate(), self.right.negate())

    def rewrite_not(self) -> BoundExpr:
        return bound_and(self.left.rewrite_not(), self.right.rewrite_not())

    def __str__(self) -> str:
        return format_expr(unbind(self))


@dataclass(frozen=True, slots=True)
class BoundOr:
    left: BoundExpr
    right: BoundExpr

    def negate(self) -> BoundExpr:
        return bound_and(self.left.negate(), self.right.negate())

    def rewrite_not(self) -> BoundExpr:
        return bound_or(self.left.rewrite_not(), self.right.rewrite_not())

    def __str__(self) -> str:
        return format_expr(unbind(self))


@dataclass(frozen=True, slots=True)
class BoundNot:
    child: BoundExpr

    def negate(self) -> BoundExpr:
        return self.child.rewrite_not()

    def rewrite_not(self) -> BoundExpr:
        return self.child.negate()

    def __str__(self) -> str:
        return format_expr(unbind(self))


BoundExpr = AlwaysTrue | AlwaysFalse | BoundAnd | BoundOr | BoundNot | BoundPredicate
E = TypeVar("E", Expr, BoundExpr)


def bound_and(left: BoundExpr, right: BoundExpr) -> BoundExpr:
    """``left AND right``, simplified with the constants."""
    if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
        return ALWAYS_FALSE
    if isinstance(left, AlwaysTrue):
        return right
    return left if isinstance(right, AlwaysTrue) else BoundAnd(left, right)


def bound_or(left: BoundExpr, right: BoundExpr) -> BoundExpr:
    """``left OR right``, simplified with the constants."""
    if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
        return ALWAYS_TRUE
    if isinstance(left, AlwaysFalse):
        return right
    return left if isinstance(right, AlwaysFalse) else BoundOr(left, right)


def bound_not(child: BoundExpr) -> BoundExpr:
    """``NOT child``: constants flip and a double negation cancels."""
    match child:
        case AlwaysTrue() | AlwaysFalse():
            return child.negate()
        case BoundNot(inner):
            return inner
        case _:
            return BoundNot(child)


def rewrite_not(expr: E) -> E:
    """Push every NOT down to the predicates, negating them through the ``Op`` table and
    De Morgan's laws; the result contains no ``Not``/``BoundNot``.

    >>> from icepark.expressions.expr import and_, equal, is_null, not_
    >>> print(rewrite_not(not_(and_(is_null("a"), not_(equal("b", 1))))))
    a IS NOT NULL OR b = 1
    """
    return expr.rewrite_not()


def unbind(expr: BoundExpr) -> Expr:
    """The unbound expression naming the bound columns by their full names."""
    match expr:
        case AlwaysTrue() | AlwaysFalse():
            return expr
        case BoundAnd(left, right):
            return And(unbind(left), unbind(right))
        case BoundOr(left, right):
            return Or(unbind(left), unbind(right))
        case BoundNot(child):
            return Not(unbind(child))
        case BoundPredicate():
            return expr.as_unbound()


class BoundVisitor(ABC, Generic[T]):
    """A post-order visit of a bound expression; ``not_`` only runs on expressions that were
    not passed through :func:`rewrite_not`."""

    @abstractmethod
    def always_true(self) -> T: ...

    @abstractmethod
    def always_false(self) -> T: ...

    @abstractmethod
    def and_(self, left: T, right: T) -> T: ...

    @abstractmethod
    def or_(self, left: T, right: T) -> T: ...

    def not_(self, child: T) -> T:
        raise ValidationError(f"{type(self).__name__} needs NOT rewritten: call rewrite_not")

    @abstractmethod
    def predicate(self, p: BoundPredicate) -> T: ...


def visit(expr: BoundExpr, visitor: BoundVisitor[T]) -> T:
    """Visit ``expr`` with ``visitor``: the one dispatch over bound expression shapes."""
    match expr:
        case AlwaysTrue():
            return visitor.always_true()
        case AlwaysFalse():
            return visitor.always_false()
        case BoundAnd(left, right):
            return visitor.and_(visit(left, visitor), visit(right, visitor))
        case BoundOr(left, right):
            return visitor.or_(visit(left, visitor), visit(right, visitor))
        case BoundNot(child):
            return visitor.not_(visit(child, visitor))
        case BoundPredicate():
            return visitor.predicate(expr)


class _Refs(BoundVisitor[set[int]]):
    def always_true(self) -> set[int]:
        return set()

    def always_false(self) -> set[int]:
        return set()

    def and_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def or_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def predicate(self, p: BoundPredicate) -> set[int]:
        return {p.field_id}


def referenced_ids(expr: BoundExpr) -> set[int]:
    """The field IDs a bound expression (NOT rewritten away) reads."""
    return visit(expr, _Refs())


def bind(expr: Expr, schema: Schema, case_sensitive: bool = True) -> BoundExpr:
    """Resolve every column of ``expr`` in ``schema``, convert its literals and simplify; the
    result has no ``BoundNot``.

    Raises :class:`ValidationError` for an unknown column, a column inside a list or map or
    of a nested type, a literal that cannot be compared with the column, ``is_nan`` on a
    column that is not float/double, and ``starts_with`` on one that is not a string.
    """
    match expr:
        case AlwaysTrue() | AlwaysFalse():
            return expr
        case And(left, right):
            return bound_and(bind(left, schema, case_sensitive),
                             bind(right, schema, case_sensitive))
        case Or(left, right):
            return bound_or(bind(left, schema, case_sensitive),
                            bind(right, schema, case_sensitive))
        case Not(child):  # NOT means the negated operators (see evaluator.py): push it down
            return bind(child.negate(), schema, case_sensitive)
        case Predicate():
            return _bind_predicate(expr, schema, case_sensitive)
    raise ValidationError(f"Cannot bind {expr!r}: not an unbound expression")


def bind_reference(schema: Schema, name: str, case_sensitive: bool = True) -> BoundReference:
    """The column ``name`` of ``schema``; it must be a primitive nested only in structs."""
    field_id = schema.find_field_id(name, case_sensitive)
    if field_id is None:
        raise ValidationError(f"Cannot find column {name!r} in the schema")
    field = schema.find_field(field_id)
    full_name = schema.find_column_name(field_id) or name
    try:
        accessor = schema.accessor(field_id)
    except ValidationError:
        raise ValidationError(
            f"Cannot filter on column {full_name!r}: it is inside a list or map") from None
    if not isinstance(field.field_type, PrimitiveType):
        raise ValidationError(f"Cannot filter on column {full_name!r}: "
                              f"{field.field_type.type_id.value} is not a primitive type")
    return BoundReference(field, accessor, full_name)


def _never_null(schema: Schema, field_id: int) -> bool:
    """Whether the field and every struct holding it are required (so it is never null)."""
    current: int | None = field_id
    while current is not None:
        if not schema.find_field(current).is_required:
            return False
        current = schema.parent_id(current)
    return True


def _show(value: Any) -> str:
    return str(value) if isinstance(value, Decimal) else repr(value)


def _bind_predicate(pred: Predicate, schema: Schema, case_sensitive: bool) -> BoundExpr:
    ref = bind_reference(schema, pred.term, case_sensitive)
    t, op = ref.type, pred.op
    never_null = _never_null(schema, ref.field_id)

    def not_null() -> BoundExpr:
        return ALWAYS_TRUE if never_null else BoundPredicate(Op.NOT_NULL, ref)

    def literal(value: Any) -> Any:
        try:
            return convert(t, value)
        except ValueError as e:
            raise ValidationError(f"Cannot compare column {ref.name!r} ({t}) with "
                                  f"{_show(value)}: {e}") from None

    match op:
        case Op.IS_NULL:
            return ALWAYS_FALSE if never_null else BoundPredicate(op, ref)
        case Op.NOT_NULL:
            return not_null()
        case Op.IS_NAN | Op.NOT_NAN:
            if t.type_id not in _FLOATS:
                raise ValidationError(f"Cannot use {op} on column {ref.name!r} of type {t}: "
                                      "only float and double values can be NaN")
            return BoundPredicate(op, ref)
        case Op.STARTS_WITH | Op.NOT_STARTS_WITH:
            if t.type_id is not TypeId.STRING:
                raise ValidationError(f"Cannot use {op} on column {ref.name!r} of type {t}: "
                                      "only string columns have prefixes")
            prefix = literal(pred.literal)
            if prefix == "":  # every string starts with ''
                return not_null() if op is Op.STARTS_WITH else ALWAYS_FALSE
            return BoundPredicate(op, ref, (prefix,))
        case Op.IN | Op.NOT_IN:
            values = {v for v in map(literal, pred.literals) if not isinstance(v, Gap)}
            if not pred.literals:  # x IN () is false, x NOT IN () is true, as in SQL
                return ALWAYS_FALSE if op is Op.IN else ALWAYS_TRUE
            if not values:  # no value of the type equals any literal
                return ALWAYS_FALSE if op is Op.IN else not_null()
            if len(values) == 1:
                return BoundPredicate(Op.EQ if op is Op.IN else Op.NOT_EQ, ref, tuple(values))
            return BoundPredicate(op, ref, tuple(sorted(values, key=sort_key(t))))
    return _comparison(op, ref, literal(pred.literal), not_null)


def _comparison(op: Op, ref: BoundReference, value: Any,
                not_null: Callable[[], BoundExpr]) -> BoundExpr:
    """Bind ``ref op value``; a :class:`Gap` literal becomes a comparison with its neighbour,
    and comparisons with the type's extremes simplify."""
    if isinstance(value, Gap):
        match op:
            case Op.EQ:
                return ALWAYS_FALSE
            case Op.NOT_EQ:
                return not_null()
            case Op.LT | Op.LT_EQ:
                op, value = Op.LT_EQ, value.below
            case _:  # gt, gt_eq
                op, value = Op.GT_EQ, value.above
        if value is None:
            return ALWAYS_FALSE
    low, high = value_range(ref.type)
    if isinstance(value, float) and math.isinf(value):
        low, high = -math.inf, math.inf
    match op:
        case Op.LT if low is not None and value <= low:
            return ALWAYS_FALSE
        case Op.GT if high is not None and value >= high:
            return ALWAYS_FALSE
        case Op.GT_EQ if low is not None and value <= low and not isinstance(value, float):
            return not_null()  # (float: NaN is not >= -inf)
        case Op.LT_EQ if high is not None and value >= high and not isinstance(value, float):
            return not_null()
    return BoundPredicate(op, ref, (value,))
