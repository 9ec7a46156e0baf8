"""Projecting one bound predicate through one partition transform.

Spec, *Scan Planning*: an inclusive projection means "if a scan predicate matches a row, then
the partition predicate must match that row's partition"; a strict one "creates a partition
predicate that will match a file if all of the rows in the file must match the scan predicate".
For a predicate ``p`` and transform ``t`` that is: ``p(v)`` implies ``inclusive(p)(t(v))``, and
``strict(p)(t(v))`` implies ``p(v)``.

The order-preserving transforms (truncate, year, month, day, hour) are monotone floors: every
partition is an interval of source values. On a discrete source (integers, decimals at their
scale, days, microseconds) ``x < v`` is ``x <= v - 1``, so inclusively ``t(x) <= t(v - 1)``, and
strictly every row of a partition ``P`` is below ``v`` exactly when ``P < t(v)``:

>>> from icepark.spec.types import INT, STRING
>>> project(Op.LT, (100,), Transform.truncate(10), INT, strict=False)
(<Op.LT_EQ: 'lt_eq'>, (90,))
>>> project(Op.LT_EQ, (109,), Transform.truncate(10), INT, strict=True)
(<Op.LT: 'lt'>, (110,))
>>> project(Op.STARTS_WITH, ("iceberg",), Transform.truncate(3), STRING, strict=False)
(<Op.EQ: 'eq'>, ('ice',))

Time transforms floor toward negative infinity, but writers before the reference
implementations fixed that truncated toward zero, recording a value ``v < 0`` that is not on a
unit boundary in partition ``t(v) + 1``. As those implementations do, projections of year,
month, day (of a timestamp) and hour stay correct for such partitions: inclusive ones also
accept ``b + 1`` for every negative bound ``b`` they accept, strict ones also exclude it.

>>> from icepark.spec.types import TIMESTAMP
>>> project(Op.EQ, (-1,), Transform.hour(), TIMESTAMP, strict=False)  # 1969-12-31T23:59:59.999999
(<Op.IN: 'in'>, (-1, 0))

Nanosecond timestamps are discrete in nanoseconds (``x < v`` is ``x <= v - 1`` ns) and go through
the same floors; bucket hashes their microseconds. An unknown transform projects nothing:
"The inclusive projection for an unknown partition transform is *true*".

>>> from icepark.spec.types import TIMESTAMP_NS
>>> project(Op.LT, (86_400 * 10**9,), Transform.day(), TIMESTAMP_NS, strict=False)
(<Op.LT_EQ: 'lt_eq'>, (0,))
>>> project(Op.EQ, ("a",), Transform.unknown("zorder"), STRING, strict=False) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from icepark.expressions.expr import Op
from icepark.expressions.literals import value_range
from icepark.spec.transforms import Transform, TransformKind
from icepark.spec.types import PrimitiveType, TypeId

Projection = tuple[Op, tuple[Any, ...]] | None
"""A partition predicate's operator and literals (in partition values), or ``None`` when the
transform cannot express one (inclusive: true; strict: false)."""

_COMPARISONS = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ})


def project(op: Op, literals: tuple[Any, ...], transform: Transform, source: PrimitiveType,
            strict: bool) -> Projection:
    """Project ``source_value op literals`` through ``transform``, inclusively or strictly.

    ``literals`` are bound values of ``source`` (as :func:`icepark.expressions.bind` leaves
    them: never at the extreme of the type where that would make the predicate constant).

    A few partition values fall outside their type: truncating within ``W`` of the minimum of
    an integer or decimal type, or the hour of a timestamp more than 245,000 years from 1970
    (the spec leaves these undefined; Java's ints wrap around). Binding a literal outside the
    type would fold the partition predicate to a constant that is wrong for such partitions,
    so a projection needing one is not made (``None``, always sound).
    """
    projected = _project(op, literals, transform, source, strict)
    if projected is None or not projected[1]:
        return projected
    result_type = transform.result_type(source)
    assert isinstance(result_type, PrimitiveType)  # the result of a primitive source
    low, high = value_range(result_type)
    if any((low is not None and v < low) or (high is not None and v > high)
           for v in projected[1]):
        return None
    return projected


def _project(op: Op, literals: tuple[Any, ...], transform: Transform, source: PrimitiveType,
             strict: bool) -> Projection:
    if transform.is_void or transform.is_unknown or not transform.can_transform(source):
        return None
    if op.is_unary:
        # Every transform but void maps null to null and only null to null; only identity
        # keeps NaN (the others do not accept float sources).
        if transform.is_identity or op in (Op.IS_NULL, Op.NOT_NULL):
            return op, ()
        return None
    if transform.is_identity:
        return op, literals
    f = transform.function(source)
    if transform.kind is TransformKind.BUCKET:
        return _bucket(op, literals, f, strict)
    if source.type_id in (TypeId.STRING, TypeId.BINARY):
        return _truncate_array(op, literals, f, transform.param, strict)
    injective = ((transform.kind is TransformKind.TRUNCATE and transform.param == 1)
                 or (transform.kind is TransformKind.DAY and source.type_id is TypeId.DATE))
    projected = _monotone(op, literals, f, _adjacent(source), strict=strict,
                          injective=injective)
    if transform.is_time and not injective and projected is not None:
        return _legacy_time_fix(projected, strict)
    return projected


def _set(f: Callable[[Any], Any], values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(map(f, values)))


def _bucket(op: Op, literals: tuple[Any, ...], f: Callable[[Any], Any],
            strict: bool) -> Projection:
    """A hash keeps only equality: inclusively ``=``/``IN``, strictly ``!=``/``NOT IN`` (a row
    in another bucket cannot equal the literal)."""
    if op in ((Op.NOT_EQ, Op.NOT_IN) if strict else (Op.EQ, Op.IN)):
        return op, _set(f, literals)
    return None


def _adjacent(source: PrimitiveType) -> Callable[[Any, int], Any]:
    """The value ``delta`` steps from ``v`` on the source's grid (1, or 10**-scale)."""
    if source.type_id is not TypeId.DECIMAL:
        return lambda v, delta: v + delta
    scale = source.scale

    def adjacent_decimal(v: Decimal, delta: int) -> Decimal:
        sign, digits, exponent = v.as_tuple()
        assert isinstance(exponent, int)
        unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
        unscaled = unscaled * 10 ** (exponent + scale)  # bound decimals have exponent -scale
        return Decimal(f"{unscaled + delta}E{-scale}")

    return adjacent_decimal


def _monotone(op: Op, literals: tuple[Any, ...], f: Callable[[Any], Any],
              adjacent: Callable[[Any, int], Any], *, strict: bool,
              injective: bool) -> Projection:
    """A monotone floor ``f`` on a discrete source: partition ``P`` holds an interval."""
    if op.is_set:
        if op is (Op.NOT_IN if strict else Op.IN) or injective:
            return op, _set(f, literals)
        return None
    if op not in _COMPARISONS:
        return None
    v = literals[0]
    if not strict:
        match op:
            case Op.LT:
                return Op.LT_EQ, (f(adjacent(v, -1)),)
            case Op.GT:
                return Op.GT_EQ, (f(adjacent(v, 1)),)
            case Op.NOT_EQ:
                return None
            case _:  # lt_eq, gt_eq, eq
                return op, (f(v),)
    match op:
        case Op.LT_EQ:
            return Op.LT, (f(adjacent(v, 1)),)
        case Op.GT_EQ:
            return Op.GT, (f(adjacent(v, -1)),)
        case Op.EQ:
            return (op, (f(v),)) if injective else None
        case _:  # lt, gt, not_eq
            return op, (f(v),)


def _truncate_array(op: Op, literals: tuple[Any, ...], f: Callable[[Any], Any], width: int,
                    strict: bool) -> Projection:
    """Truncated strings and binary: a partition ``P`` shorter than the width holds only
    ``P``; one of full width holds every value starting with ``P``."""
    if op.is_set:
        if op is (Op.NOT_IN if strict else Op.IN):
            return op, _set(f, literals)
        short = tuple(v for v in literals if len(v) < width)
        return (op, short) if strict and op is Op.IN and short else None
    v = literals[0]
    if not strict:
        match op:
            case Op.LT | Op.LT_EQ:
                return Op.LT_EQ, (f(v),)
            case Op.GT | Op.GT_EQ:
                return Op.GT_EQ, (f(v),)
            case Op.EQ:
                return op, (f(v),)
            case Op.STARTS_WITH:  # a row starting with v has v[:width] as its partition
                return (Op.EQ, (f(v),)) if len(v) >= width else (op, (v,))
            case Op.NOT_STARTS_WITH:  # decided by the partition when v fits in it
                return (op, (v,)) if len(v) <= width else None
            case _:
                return None
    match op:
        case Op.LT | Op.LT_EQ:
            return Op.LT, (f(v),)
        case Op.GT | Op.GT_EQ:
            return Op.GT, (f(v),)
        case Op.NOT_EQ | Op.NOT_STARTS_WITH:
            return op, (f(v),)
        case Op.EQ:
            return (op, (v,)) if len(v) < width else None
        case Op.STARTS_WITH:
            return (op, (v,)) if len(v) <= width else None
        case _:
            return None


def _with_successors(bounds: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(x for b in bounds for x in ((b, b + 1) if b < 0 else (b,))))


def _legacy_time_fix(projected: tuple[Op, tuple[Any, ...]], strict: bool) -> Projection:
    """Widen (inclusive) or narrow (strict) a time projection so it also holds for values
    before 1970 recorded one partition too high, in ``P = t(v) + 1 <= 0``.

    Inclusive: a row of correct partition ``c < 0`` may sit in ``c + 1``, so ``<= b`` becomes
    ``<= b + 1`` and ``= b`` becomes ``IN (b, b + 1)`` for ``b < 0``; ``>=`` needs nothing.
    Strict: partition ``P <= 0`` may hold rows of ``P - 1``, so ``> b`` becomes ``> b + 1`` and
    ``!= b`` becomes ``NOT IN (b, b + 1)`` for ``b < 0``; ``<`` needs nothing.
    """
    op, bounds = projected
    match op, strict:
        case (Op.LT_EQ, False) | (Op.GT, True) if bounds[0] < 0:
            return op, (bounds[0] + 1,)
        case (Op.EQ | Op.IN, False):
            fixed = _with_successors(bounds)
            return (Op.EQ if len(fixed) == 1 else Op.IN), fixed
        case (Op.NOT_EQ | Op.NOT_IN, True):
            fixed = _with_successors(bounds)
            return (Op.NOT_EQ if len(fixed) == 1 else Op.NOT_IN), fixed
    return projected
