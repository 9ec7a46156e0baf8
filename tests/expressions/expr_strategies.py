"""Hypothesis strategies for the expression tests: typed values that crowd the boundaries
(transform units, integer ranges, pre-1970), predicates over them, and partition transforms."""

from __future__ import annotations

import math
from datetime import date
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from icepark.expressions import Expr, Op, Predicate, and_, not_, or_
from icepark.spec.datetimes import MICROS_PER_DAY, MICROS_PER_HOUR, date_to_days
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    PrimitiveType,
    TypeId,
)

DECIMAL = PrimitiveType.decimal(9, 2)
WIDE_DECIMAL = PrimitiveType.decimal(38, 4)
FIXED = PrimitiveType.fixed(3)
TYPES = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DECIMAL, WIDE_DECIMAL, DATE, TIME, TIMESTAMP,
         TIMESTAMPTZ, STRING, UUID, FIXED, BINARY]
FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})

_DAY_MARKS = [date_to_days(date(y, m, 1)) for y in (1968, 1969, 1970, 1971, 2000)
              for m in (1, 2, 3, 12)] + [-1, 0, 1]
_MICRO_MARKS = ([d * MICROS_PER_DAY for d in _DAY_MARKS]
                + [h * MICROS_PER_HOUR for h in (-25, -24, -2, -1, 0, 1, 2, 24)])
_INT_RANGES = {TypeId.INT: 2**31, TypeId.LONG: 2**63}
_TEXT = st.text(alphabet="ab\u00e9\U0001f600\U0010ffff", max_size=5)


def _near(marks: list[int], spread: int) -> st.SearchStrategy[int]:
    return st.builds(lambda m, d: m + d, st.sampled_from(marks), st.integers(-spread, spread))


def values(t: PrimitiveType) -> st.SearchStrategy[Any]:
    """Non-null values of ``t`` in the representation of :mod:`icepark.spec.values`."""
    match t.type_id:
        case TypeId.BOOLEAN:
            return st.booleans()
        case TypeId.INT | TypeId.LONG:
            limit = _INT_RANGES[t.type_id]
            return st.one_of(st.integers(-120, 120), st.integers(-limit, limit - 1),
                             st.sampled_from([-limit, limit - 1, -limit + 1, limit - 2]))
        case TypeId.FLOAT:
            return st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf,
                                               math.nan]), st.floats(width=32))
        case TypeId.DOUBLE:
            return st.one_of(st.sampled_from([0.0, -0.0, 1.5, -1.5, math.inf, -math.inf,
                                               math.nan]), st.floats())
        case TypeId.DECIMAL:
            limit = 10**t.precision - 1
            unscaled = st.one_of(st.integers(-2500, 2500), st.integers(-limit, limit),
                                 st.sampled_from([-limit, limit]))
            return unscaled.map(lambda u: Decimal(f"{u}E-{t.scale}"))
        case TypeId.DATE:
            return st.one_of(_near(_DAY_MARKS, 40), st.integers(-(2**31), 2**31 - 1))
        case TypeId.TIME:
            return st.one_of(st.integers(0, MICROS_PER_DAY - 1),
                             _near([0, MICROS_PER_HOUR, MICROS_PER_DAY - 1], 3).filter(
                                 lambda v: 0 <= v < MICROS_PER_DAY))
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            return st.one_of(_near(_MICRO_MARKS, 3), _near(_MICRO_MARKS, 10**9),
                             st.integers(-(2**62), 2**62))
        case TypeId.STRING:
            return _TEXT
        case TypeId.UUID:
            return st.uuids()
        case TypeId.FIXED:
            return st.binary(min_size=t.length, max_size=t.length)
        case _:
            return st.binary(max_size=4)


def nullable_values(t: PrimitiveType) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values(t))


def literals(t: PrimitiveType) -> st.SearchStrategy[Any]:
    """Literals for predicates on ``t``: values (never NaN) and, for numbers, literals no value
    of the type equals (fractions, beyond the range)."""
    base = values(t).filter(lambda v: not (isinstance(v, float) and math.isnan(v)))
    match t.type_id:
        case TypeId.INT | TypeId.LONG:
            limit = _INT_RANGES[t.type_id]
            halves = st.integers(-120, 120).map(lambda i: Decimal(i) + Decimal("0.5"))
            return st.one_of(base, halves, st.sampled_from([limit, -limit - 1, 2**70]))
        case TypeId.DECIMAL:
            return st.one_of(base, base.map(lambda d: d + Decimal(f"5E-{t.scale + 1}")))
    return base


def predicates(name: str, t: PrimitiveType) -> st.SearchStrategy[Predicate]:
    """Every operator that binds on ``t``."""
    unary = [Op.IS_NULL, Op.NOT_NULL] + ([Op.IS_NAN, Op.NOT_NAN] if t.type_id in FLOATS else [])
    comparison = [Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ]
    options = [
        st.sampled_from(unary).map(lambda op: Predicate(op, name)),
        st.builds(lambda op, v: Predicate(op, name, (v,)), st.sampled_from(comparison),
                  literals(t)),
        st.builds(lambda op, vs: Predicate(op, name, tuple(vs)),
                  st.sampled_from([Op.IN, Op.NOT_IN]), st.lists(literals(t), max_size=4)),
    ]
    if t.type_id is TypeId.STRING:
        options.append(st.builds(lambda op, v: Predicate(op, name, (v,)),
                                 st.sampled_from([Op.STARTS_WITH, Op.NOT_STARTS_WITH]),
                                 st.text(alphabet="ab\u00e9\U0010ffff", max_size=4)))
    return st.one_of(options)


def expressions(columns: list[tuple[str, PrimitiveType]]) -> st.SearchStrategy[Expr]:
    """AND/OR/NOT trees of predicates over ``columns``."""
    leaves = st.one_of([predicates(name, t) for name, t in columns])
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.builds(and_, children, children), st.builds(or_, children, children),
            st.builds(not_, children)),
        max_leaves=4)


def transforms(t: PrimitiveType) -> st.SearchStrategy[Transform]:
    """The transforms that accept ``t``, with small parameters to make collisions likely."""
    options = [Transform.identity(), Transform.void(), Transform.bucket(1), Transform.bucket(3),
               Transform.bucket(16), Transform.truncate(1), Transform.truncate(2),
               Transform.truncate(10), Transform.year(), Transform.month(), Transform.day(),
               Transform.hour()]
    return st.sampled_from([x for x in options if x.can_transform(t)])


def legacy_time_partition(transform: Transform, t: PrimitiveType, value: Any) -> Any:
    """The partition an old writer recorded: the time units truncated toward zero, i.e. one
    more than the correct (floor) value for a value before 1970 not on a unit boundary."""
    f = transform.function(t)
    correct = f(value)
    if value is None or correct >= 0 or f(value - 1) != correct:
        return correct
    return correct + 1

