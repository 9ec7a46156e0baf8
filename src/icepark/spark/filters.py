"""Iceberg row filters as Spark ``Column`` conditions.

A bound, NOT-free expression (comparisons, ``in``/``not in``, null and NaN tests,
``starts_with`` and their negations, ``and``/``or``) becomes a Spark condition with the same
SQL semantics as :mod:`icepark.io.arrow.expressions`: comparisons are false for null, NaN
compares false except for ``!=`` and ``not in`` (spec, *Scan Planning*: "Scan predicates ...
are evaluated ... using the same semantics as the row filter"). A predicate that cannot be
translated raises :class:`~icepark.errors.UnsupportedFeature` naming it; constants stay Python
bools so callers can skip a filter that is always true.

Conditions apply to the read layout (:func:`icepark.spark.schema.read_schema`), where a
``timestamp_ns``/``timestamptz_ns`` column is its exact ``LongType`` nanoseconds, so a filter
on one compares every digit, whatever the read returns afterwards; its literals are
nanoseconds too.

>>> from icepark.expressions.bound import bind, rewrite_not
>>> from icepark.expressions import parse
>>> from icepark.spec.types import LONG, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG))
>>> spark_filter(rewrite_not(bind(parse("id IS NULL"), schema)), schema)
False
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature
from icepark.expressions.bound import (
    BoundExpr,
    BoundPredicate,
    BoundReference,
    BoundVisitor,
    visit,
)
from icepark.expressions.expr import Op
from icepark.spark.schema import quote
from icepark.spec.schema import Schema
from icepark.spec.types import TypeId

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_EPOCH = dt.date(1970, 1, 1)
_COMPARISONS: dict[Op, Callable[[Column, Column], Column]] = {
    Op.LT: operator.lt, Op.LT_EQ: operator.le, Op.GT: operator.gt, Op.GT_EQ: operator.ge,
    Op.EQ: operator.eq}


def spark_filter(expr: BoundExpr, schema: Schema) -> Column | bool:
    """``expr`` (bound to ``schema``, NOT rewritten away) as a Spark condition over columns
    named as in ``schema``, or a Python bool when it is constant."""
    return visit(expr, _ToSpark(schema))


def field_column(schema: Schema, field_id: int) -> Column:
    """The Column of a (struct-nested) field of ``schema``, by ID."""
    parts = field_path(schema, field_id)
    col = F.col(quote(parts[0]))
    for part in parts[1:]:
        col = col.getField(part)
    return col


class _ToSpark(BoundVisitor[Column | bool]):
    """A bound, NOT-free expression as a Spark condition (constants stay Python bools)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def always_true(self) -> Column | bool:
        return True

    def always_false(self) -> Column | bool:
        return False

    def and_(self, left: Column | bool, right: Column | bool) -> Column | bool:
        if isinstance(left, bool):
            return right if left else False
        if isinstance(right, bool):
            return left if right else False
        return left & right

    def or_(self, left: Column | bool, right: Column | bool) -> Column | bool:
        if isinstance(left, bool):
            return True if left else right
        if isinstance(right, bool):
            return True if right else left
        return left | right

    def predicate(self, p: BoundPredicate) -> Column | bool:
        return _predicate(p, self._column(p.term))

    def _column(self, ref: BoundReference) -> Column:
        return field_column(self.schema, ref.field_id)


def field_path(schema: Schema, field_id: int) -> list[str]:
    """The names on the path from the schema root to a (struct-nested) field."""
    names = []
    current: int | None = field_id
    while current is not None:
        names.append(schema.find_field(current).name)
        current = schema.parent_id(current)
    return names[::-1]


def spark_literal(t: Any, value: Any) -> Column:
    """An Iceberg value (:mod:`icepark.spec.values` form) of type ``t`` as a Spark literal
    in the read layout (uuid as its 16 bytes, nanosecond timestamps as long nanoseconds)."""
    match t.type_id:
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS:
            return F.lit(value).cast(T.LongType())
        case TypeId.DATE:
            return F.lit(_EPOCH + dt.timedelta(days=value))
        case TypeId.TIMESTAMPTZ:
            return F.timestamp_micros(F.lit(value))
        case TypeId.TIMESTAMP:
            # The session time zone is UTC (icepark's session config), so this is exact.
            return F.timestamp_micros(F.lit(value)).cast(T.TimestampNTZType())
        case TypeId.UUID:
            return F.lit(bytearray(value.bytes))
        case TypeId.DECIMAL:
            return F.lit(Decimal(value)).cast(T.DecimalType(t.precision, t.scale))
        case TypeId.FIXED | TypeId.BINARY:
            return F.lit(bytearray(value))
        case TypeId.TIME:
            raise UnsupportedFeature(f"Cannot filter on time values in Spark yet ({t})")
        case TypeId.FLOAT:
            return F.lit(value).cast(T.FloatType())
        case TypeId.INT:
            return F.lit(value).cast(T.IntegerType())
        case _:
            return F.lit(value)


def _predicate(p: BoundPredicate, col: Column) -> Column:
    t = p.term.type
    floats = t.type_id in _FLOATS
    match p.op:
        case Op.IS_NULL:
            return col.isNull()
        case Op.NOT_NULL:
            return col.isNotNull()
        case Op.IS_NAN:
            return F.coalesce(F.isnan(col), F.lit(False))
        case Op.NOT_NAN:
            return col.isNull() | ~F.isnan(col)
        case Op.STARTS_WITH | Op.NOT_STARTS_WITH if t.type_id is TypeId.STRING:
            found = col.startswith(p.literal)
            return found if p.op is Op.STARTS_WITH else ~found
        case Op.IN | Op.NOT_IN:
            found = col.isin(*(spark_literal(t, v) for v in p.literals))
            if p.op is Op.IN:
                return found & ~F.isnan(col) if floats else found
            # NaN is in no set, so NOT IN holds for it (Spark agrees); null never matches
            return col.isNotNull() & ~found
        case Op.LT | Op.LT_EQ | Op.GT | Op.GT_EQ | Op.EQ:
            # one comparison made: each is a call into the JVM in a classic session
            result = _COMPARISONS[p.op](col, spark_literal(t, p.literal))
            # Spark orders NaN above every number and NaN = NaN; Iceberg's NaN compares false
            return result & ~F.isnan(col) if floats else result
        case Op.NOT_EQ:
            return col != spark_literal(t, p.literal)
        case _:
            raise UnsupportedFeature(
                f"Cannot translate the predicate {p} to a Spark filter")
