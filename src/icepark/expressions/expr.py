"""Unbound expressions: predicates ``(op, term, literals)`` combined with AND, OR and NOT.

Spec, *Scan Planning*: "scan predicates, which filter data rows, are converted to partition
predicates". A predicate is one shape, :class:`Predicate`, holding an :class:`Op`, a column name
and its literals; the fourteen operators are one enum with one negation table. Unbound
expressions name columns; :func:`icepark.expressions.bind` resolves them against a schema.

>>> e = and_(greater_than_or_equal("ts", "2024-01-01"), starts_with("name", "a"))
>>> print(e)
ts >= '2024-01-01' AND name LIKE 'a%'
>>> print(not_(e).rewrite_not())
ts < '2024-01-01' OR name NOT LIKE 'a%'
>>> and_(ALWAYS_TRUE, is_null("x")) == is_null("x")
True
>>> print(col("id") < 10)
id < 10
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from enum import StrEnum
from typing import Any
from uuid import UUID

from icepark.errors import ValidationError


class Op(StrEnum):
    """The predicate operators; the value is the name used in the reference implementations."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "lt"
    LT_EQ = "lt_eq"
    GT = "gt"
    GT_EQ = "gt_eq"
    EQ = "eq"
    NOT_EQ = "not_eq"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"
    IN = "in"
    NOT_IN = "not_in"

    def negate(self) -> Op:
        """The operator of ``NOT (term op literals)``.

        >>> Op.LT.negate(), Op.IN.negate().negate()
        (<Op.GT_EQ: 'gt_eq'>, <Op.IN: 'in'>)
        """
        return _NEGATION[self]

    @property
    def is_unary(self) -> bool:
        """Whether the operator takes no literal (null and NaN tests)."""
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        """Whether the operator takes a set of literals (``in``, ``not_in``)."""
        return self in (Op.IN, Op.NOT_IN)


_UNARY = frozenset({Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN})
_PAIRS = [(Op.IS_NULL, Op.NOT_NULL), (Op.IS_NAN, Op.NOT_NAN), (Op.LT, Op.GT_EQ),
          (Op.LT_EQ, Op.GT), (Op.EQ, Op.NOT_EQ), (Op.STARTS_WITH, Op.NOT_STARTS_WITH),
          (Op.IN, Op.NOT_IN)]
_NEGATION: dict[Op, Op] = {a: b for a, b in _PAIRS} | {b: a for a, b in _PAIRS}


class _Combinable:
    """``&``, ``|`` and ``~`` for unbound expressions."""

    __slots__ = ()

    def __and__(self, other: Expr) -> Expr:
        return and_(_expr(self), other)

    def __or__(self, other: Expr) -> Expr:
        return or_(_expr(self), other)

    def __invert__(self) -> Expr:
        return not_(_expr(self))


@dataclass(frozen=True, slots=True)
class AlwaysTrue(_Combinable):
    """The expression that is true for every row (shared by unbound and bound expressions)."""

    def negate(self) -> AlwaysFalse:
        return ALWAYS_FALSE

    def rewrite_not(self) -> AlwaysTrue:
        return self

    def __str__(self) -> str:
        return "TRUE"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(_Combinable):
    """The expression that is false for every row (shared by unbound and bound expressions)."""

    def negate(self) -> AlwaysTrue:
        return ALWAYS_TRUE

    def rewrite_not(self) -> AlwaysFalse:
        return self

    def __str__(self) -> str:
        return "FALSE"


ALWAYS_TRUE = AlwaysTrue()
ALWAYS_FALSE = AlwaysFalse()


@dataclass(frozen=True, slots=True)
class And(_Combinable):
    left: Expr
    right: Expr

    def negate(self) -> Expr:
        return or_(self.left.negate(), self.right.negate())

    def rewrite_not(self) -> Expr:
        return and_(self.left.rewrite_not(), self.right.rewrite_not())

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True, slots=True)
class Or(_Combinable):
    left: Expr
    right: Expr

    def negate(self) -> Expr:
        return and_(self.left.negate(), self.right.negate())

    def rewrite_not(self) -> Expr:
        return or_(self.left.rewrite_not(), self.right.rewrite_not())

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True, slots=True)
class Not(_Combinable):
    child: Expr

    def negate(self) -> Expr:
        return self.child.rewrite_not()

    def rewrite_not(self) -> Expr:
        return self.child.negate()

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True, slots=True)
class Predicate(_Combinable):
    """``term op literals``: no literal for the null/NaN tests, one for comparisons and
    ``starts_with``, any number for ``in``/``not_in``.

    A literal is a Python value (``int``, ``Decimal``, ``float``, ``str``, ``date``, ...)
    converted to the column's type when bound. ``None`` and NaN are not literals: use
    :func:`is_null` and :func:`is_nan`.

    >>> Predicate(Op.EQ, "x", (None,))
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid literal None for eq on 'x': use is_null or not_null
    """

    op: Op
    term: str
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        try:
            op = Op(self.op)
        except ValueError:
            raise ValidationError(f"Unknown predicate operator {self.op!r}") from None
        object.__setattr__(self, "op", op)
        if not isinstance(self.term, str) or not self.term:
            raise ValidationError(f"A predicate term must be a column name, not {self.term!r}")
        given: Any = self.literals
        if isinstance(given, str | bytes) or not isinstance(given, Iterable):
            raise ValidationError(f"Literals of {op} on {self.term!r} must be a tuple")
        literals = tuple(given)
        object.__setattr__(self, "literals", literals)
        if op.is_unary and literals:
            raise ValidationError(f"{op} on {self.term!r} takes no literal, got {literals!r}")
        if not op.is_unary and not op.is_set and len(literals) != 1:
            raise ValidationError(
                f"{op} on {self.term!r} takes exactly one literal, got {len(literals)}")
        for value in literals:
            if value is None:
                raise ValidationError(
                    f"Invalid literal None for {op} on {self.term!r}: use is_null or not_null")
            if (isinstance(value, float) and math.isnan(value)) or (
                    isinstance(value, Decimal) and value.is_nan()):
                raise ValidationError(
                    f"Invalid literal NaN for {op} on {self.term!r}: use is_nan or not_nan")

    @property
    def literal(self) -> Any:
        """The single literal of a comparison or ``starts_with``."""
        if len(self.literals) != 1 or self.op.is_set:
            raise ValidationError(f"{self.op} has no single literal")
        return self.literals[0]

    def negate(self) -> Predicate:
        return Predicate(self.op.negate(), self.term, self.literals)

    def rewrite_not(self) -> Predicate:
        return self

    def __str__(self) -> str:
        return format_expr(self)


Expr = AlwaysTrue | AlwaysFalse | And | Or | Not | Predicate
_EXPR_TYPES = (AlwaysTrue, AlwaysFalse, And, Or, Not, Predicate)


def _expr(value: object) -> Expr:
    if not isinstance(value, _EXPR_TYPES):
        raise ValidationError(f"Expected an unbound expression, got {value!r}")
    return value


def and_(*exprs: Expr) -> Expr:
    """The conjunction of ``exprs``: ``ALWAYS_TRUE`` ones are dropped, any ``ALWAYS_FALSE``
    makes the result ``ALWAYS_FALSE``, and none at all is ``ALWAYS_TRUE``.

    >>> and_(equal("a", 1), ALWAYS_FALSE)
    AlwaysFalse()
    """
    result: Expr = ALWAYS_TRUE
    for e in map(_expr, exprs):
        if isinstance(e, AlwaysFalse):
            return ALWAYS_FALSE
        if not isinstance(e, AlwaysTrue):
            result = e if isinstance(result, AlwaysTrue) else And(result, e)
    return result


def or_(*exprs: Expr) -> Expr:
    """The disjunction of ``exprs``, simplified like :func:`and_`.

    >>> or_(equal("a", 1), ALWAYS_TRUE)
    AlwaysTrue()
    """
    result: Expr = ALWAYS_FALSE
    for e in map(_expr, exprs):
        if isinstance(e, AlwaysTrue):
            return ALWAYS_TRUE
        if not isinstance(e, AlwaysFalse):
            result = e if isinstance(result, AlwaysFalse) else Or(result, e)
    return result


def not_(expr: Expr) -> Expr:
    """``NOT expr``: constants are flipped and a double negation cancels."""
    match _expr(expr):
        case AlwaysTrue() | AlwaysFalse() as constant:
            return constant.negate()
        case Not(child):
            return child
        case e:
            return Not(e)


def equal(term: str, value: Any) -> Predicate:
    return Predicate(Op.EQ, term, (value,))


def not_equal(term: str, value: Any) -> Predicate:
    return Predicate(Op.NOT_EQ, term, (value,))


def less_than(term: str, value: Any) -> Predicate:
    return Predicate(Op.LT, term, (value,))


def less_than_or_equal(term: str, value: Any) -> Predicate:
    return Predicate(Op.LT_EQ, term, (value,))


def greater_than(term: str, value: Any) -> Predicate:
    return Predicate(Op.GT, term, (value,))


def greater_than_or_equal(term: str, value: Any) -> Predicate:
    return Predicate(Op.GT_EQ, term, (value,))


def is_null(term: str) -> Predicate:
    return Predicate(Op.IS_NULL, term)


def not_null(term: str) -> Predicate:
    return Predicate(Op.NOT_NULL, term)


def is_nan(term: str) -> Predicate:
    return Predicate(Op.IS_NAN, term)


def not_nan(term: str) -> Predicate:
    return Predicate(Op.NOT_NAN, term)


def is_in(term: str, values: Iterable[Any]) -> Predicate:
    return Predicate(Op.IN, term, _values(values))


def not_in(term: str, values: Iterable[Any]) -> Predicate:
    return Predicate(Op.NOT_IN, term, _values(values))


def starts_with(term: str, prefix: str) -> Predicate:
    return Predicate(Op.STARTS_WITH, term, (prefix,))


def not_starts_with(term: str, prefix: str) -> Predicate:
    return Predicate(Op.NOT_STARTS_WITH, term, (prefix,))


def _values(values: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ValidationError(f"Expected a collection of values, got {values!r}")
    return tuple(values)


@dataclass(frozen=True, slots=True, eq=False)
class Reference:
    """A column by name, with operators that build predicates: ``col("x") >= 5``."""

    name: str

    def __lt__(self, value: Any) -> Predicate:
        return less_than(self.name, value)

    def __le__(self, value: Any) -> Predicate:
        return less_than_or_equal(self.name, value)

    def __gt__(self, value: Any) -> Predicate:
        return greater_than(self.name, value)

    def __ge__(self, value: Any) -> Predicate:
        return greater_than_or_equal(self.name, value)

    def __eq__(self, value: Any) -> Predicate:  # type: ignore[override]  # builds a predicate
        return equal(self.name, value)

    def __ne__(self, value: Any) -> Predicate:  # type: ignore[override]  # builds a predicate
        return not_equal(self.name, value)

    __hash__ = None  # type: ignore[assignment]  # == builds predicates, so no hashing

    def is_null(self) -> Predicate:
        return is_null(self.name)

    def not_null(self) -> Predicate:
        return not_null(self.name)

    def is_nan(self) -> Predicate:
        return is_nan(self.name)

    def not_nan(self) -> Predicate:
        return not_nan(self.name)

    def is_in(self, values: Iterable[Any]) -> Predicate:
        return is_in(self.name, values)

    def not_in(self, values: Iterable[Any]) -> Predicate:
        return not_in(self.name, values)

    def starts_with(self, prefix: str) -> Predicate:
        return starts_with(self.name, prefix)

    def not_starts_with(self, prefix: str) -> Predicate:
        return not_starts_with(self.name, prefix)


def col(name: str) -> Reference:
    """A column reference for building predicates with operators."""
    return Reference(name)


# Printing, in the syntax :func:`icepark.expressions.parse` reads.
KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "NAN", "LIKE", "BETWEEN", "TRUE",
                      "FALSE"})
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*")
_OR, _AND, _NOT, _ATOM = range(4)
_SYMBOLS = {Op.LT: "<", Op.LT_EQ: "<=", Op.GT: ">", Op.GT_EQ: ">=", Op.EQ: "=", Op.NOT_EQ: "!="}
_SUFFIXES = {Op.IS_NULL: "IS NULL", Op.NOT_NULL: "IS NOT NULL", Op.IS_NAN: "IS NAN",
             Op.NOT_NAN: "IS NOT NAN"}


def format_expr(expr: Expr) -> str:
    """The expression in the filter syntax of :func:`icepark.expressions.parse`.

    >>> format_expr(or_(and_(equal("a", 1), equal("b", "x")), not_(is_in("c.d", [1, 2]))))
    "a = 1 AND b = 'x' OR NOT c.d IN (1, 2)"
    """
    return _format(expr, _OR)


def _format(expr: Expr, context: int) -> str:
    match expr:
        case AlwaysTrue() | AlwaysFalse():
            return str(expr)
        case And(left, right):  # a right operand of equal precedence keeps its parentheses
            text, precedence = f"{_format(left, _AND)} AND {_format(right, _NOT)}", _AND
        case Or(left, right):
            text, precedence = f"{_format(left, _OR)} OR {_format(right, _AND)}", _OR
        case Not(child):
            text, precedence = f"NOT {_format(child, _NOT)}", _NOT
        case Predicate(op, term, literals):
            return format_predicate(op, format_name(term), literals)
    return f"({text})" if precedence < context else text


def format_predicate(op: Op, name: str, literals: tuple[Any, ...]) -> str:
    """One predicate as filter text, its column already formatted."""
    if op in _SUFFIXES:
        return f"{name} {_SUFFIXES[op]}"
    if op.is_set:
        values = ", ".join(format_literal(v) for v in literals)
        return f"{name} {'NOT IN' if op is Op.NOT_IN else 'IN'} ({values})"
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        pattern = re.sub(r"([\\%_])", r"\\\1", str(literals[0])) + "%"
        return f"{name} {'NOT LIKE' if op is Op.NOT_STARTS_WITH else 'LIKE'} {_quote(pattern)}"
    return f"{name} {_SYMBOLS[op]} {format_literal(literals[0])}"


def format_name(name: str) -> str:
    """A column name, in backticks where it is not a plain dotted identifier."""
    if _PLAIN_NAME.fullmatch(name) and not KEYWORDS & set(name.upper().split(".")):
        return name
    return "`" + name.replace("`", "``") + "`"


def format_literal(value: Any) -> str:
    """A literal as filter text: numbers bare, ``X'..'`` for bytes, the rest quoted."""
    match value:
        case bool():
            return "TRUE" if value else "FALSE"
        case int() | Decimal():
            return str(value)
        case float() if math.isfinite(value):
            return repr(value)
        case float():
            return _quote("Infinity" if value > 0 else "-Infinity")
        case bytes():
            return f"X'{value.hex().upper()}'"
        case datetime() | date() | time():
            return _quote(value.isoformat())
        case UUID():
            return _quote(str(value))
        case _:
            return _quote(str(value))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
