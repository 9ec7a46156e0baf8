"""Evaluating a filter on rows (or partition tuples) held in memory.

Semantics, where the spec is silent, are SQL's as engines apply a ``WHERE`` clause: a
comparison, ``IN``, ``starts_with`` and their negations (``!=``, ``NOT IN``,
``NOT starts_with``) are false for a null value; ``is_null``/``not_null`` and
``is_nan``/``not_nan`` are never null themselves (a null is not NaN). ``NOT`` is pushed down to
the predicates first, through the ``Op`` negation table, which is exactly SQL's three-valued
``NOT`` followed by "unknown is false". NaN compares false with every literal except for ``!=``
and ``NOT IN`` (as in Java's evaluator): it is unequal to everything and unordered, so both
``x < 1`` and ``NOT x < 1`` (``x >= 1``) are false for NaN, as for null. ``-0.0 = 0.0``, as
IEEE 754 and SQL compare.

Rows are tuples in schema order with nested structs as tuples, holding the values of
:mod:`icepark.spec.values` (days for dates, microseconds for timestamps, ``Decimal``...), the
same representation as partition tuples.

>>> from icepark.expressions.parser import parse
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import DOUBLE, LONG, STRING, NestedField, StructType
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(2, "loc", StructType((
...                        NestedField.optional(3, "city", STRING),
...                        NestedField.optional(4, "temp", DOUBLE)))))
>>> ev = RowEvaluator(schema, parse("id > 1 AND NOT loc.city LIKE 'Ber%'"))
>>> ev.eval((2, ("Paris", 12.5))), ev.eval((2, ("Berlin", 8.0))), ev.eval((2, None))
(True, False, False)
>>> RowEvaluator(schema, parse("loc.temp != 3.0")).eval((1, (None, float("nan"))))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from icepark.expressions.bound import (
    BoundPredicate,
    BoundVisitor,
    bind,
    rewrite_not,
    visit,
)
from icepark.expressions.expr import Expr, Op
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema

Row = Sequence[Any]
RowTest = Callable[[Row], bool]


class RowEvaluator:
    """Evaluates ``expr``, bound to ``schema``, on rows given as tuples in schema order."""

    def __init__(self, schema: Schema, expr: Expr, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.bound = rewrite_not(bind(expr, schema, case_sensitive))
        self._test = visit(self.bound, _Compile())

    def eval(self, row: Row) -> bool:
        """Whether the row matches."""
        return self._test(row)


def partition_schema(spec: PartitionSpec, schema: Schema) -> Schema:
    """The schema of the spec's partition tuples: one optional column per partition field,
    named after it, with its field ID and the transform's result type."""
    return Schema(spec.partition_type(schema).fields)


def partition_evaluator(spec: PartitionSpec, schema: Schema, partition_expr: Expr,
                        case_sensitive: bool = True) -> RowEvaluator:
    """A :class:`RowEvaluator` over the spec's partition tuples, for an expression naming
    partition fields (such as a projection's result).

    >>> from icepark.expressions.expr import greater_than_or_equal
    >>> from icepark.spec.partitioning import PartitionSpecBuilder
    >>> from icepark.spec.types import TIMESTAMP, NestedField
    >>> schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMP))
    >>> spec = PartitionSpecBuilder(schema).day("ts").build()
    >>> ev = partition_evaluator(spec, schema, greater_than_or_equal("ts_day", "2024-01-01"))
    >>> ev.eval((19723,)), ev.eval((19722,))
    (True, False)
    """
    return RowEvaluator(partition_schema(spec, schema), partition_expr, case_sensitive)


def value_test(op: Op, literals: tuple[Any, ...]) -> Callable[[Any], bool]:
    """The test ``value op literals`` for one (possibly null) value."""
    match op:
        case Op.IS_NULL:
            return lambda v: v is None
        case Op.NOT_NULL:
            return lambda v: v is not None
        case Op.IS_NAN:
            return lambda v: v is not None and math.isnan(v)
        case Op.NOT_NAN:
            return lambda v: v is None or not math.isnan(v)
        case Op.IN | Op.NOT_IN:
            members = frozenset(literals)
            if op is Op.IN:
                return lambda v: v is not None and v in members
            return lambda v: v is not None and v not in members
    literal = literals[0]
    match op:
        case Op.LT:
            return lambda v: v is not None and v < literal
        case Op.LT_EQ:
            return lambda v: v is not None and v <= literal
        case Op.GT:
            return lambda v: v is not None and v > literal
        case Op.GT_EQ:
            return lambda v: v is not None and v >= literal
        case Op.EQ:
            return lambda v: v is not None and v == literal
        case Op.NOT_EQ:
            return lambda v: v is not None and v != literal
        case Op.STARTS_WITH:
            return lambda v: v is not None and v.startswith(literal)
        case _:  # not_starts_with
            return lambda v: v is not None and not v.startswith(literal)


class _Compile(BoundVisitor[RowTest]):
    """Turns a bound expression into one closure over rows."""

    def always_true(self) -> RowTest:
        return lambda row: True

    def always_false(self) -> RowTest:
        return lambda row: False

    def and_(self, left: RowTest, right: RowTest) -> RowTest:
        return lambda row: left(row) and right(row)

    def or_(self, left: RowTest, right: RowTest) -> RowTest:
        return lambda row: left(row) or right(row)

    def predicate(self, p: BoundPredicate) -> RowTest:
        get, test = p.accessor.get, value_test(p.op, p.literals)
        return lambda row: test(get(row))
