"""A quick proof that a data file cannot match a filter, tried before the metrics evaluator.

Spec, *Scan Planning*: "Scan predicates are also used to filter data and delete files using
column bounds and counts that are stored by field id in manifests." The general
:class:`~icepark.expressions.InclusiveMetricsEvaluator` visits the whole filter for every file
and decodes each bound per predicate; planning a filter that only column metrics can prune
spends most of its time there. The most common such filter is a conjunction of comparisons
(``<``, ``<=``, ``>``, ``>=``, ``=``) of integer-like columns (int, long, date, time,
timestamps) with a literal; for it, :func:`metrics_prefilter` builds a test that applies the
evaluator's own rules to the same metrics:

* a comparison is false for null, so a column whose ``value_counts`` equal its
  ``null_value_counts`` (every value null), or are 0, matches no row; these types have no NaN;
* otherwise the comparison can only hold within ``[lower_bound, upper_bound]``, bounds being
  ignored when out of order.

The test says True only when it proves that the evaluator would say False, and False when the
evaluator would say True (it might match), for files whose bounds of every column in the
filter have the canonical width (so the evaluator would not raise on them either); for other
files it says None, and the evaluator decides.

>>> from icepark.expressions import bind, parse
>>> from icepark.spec.manifest import DataFile, FileFormat
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.spec.bounds import to_bytes
>>> schema = Schema.of(NestedField.optional(1, "id", LONG))
>>> cannot_match = metrics_prefilter(bind(parse("id >= 10 AND id < 20"), schema))
>>> f = DataFile("f.parquet", FileFormat.PARQUET, (), 5, 1, value_counts={1: 5},
...              null_value_counts={1: 0}, lower_bounds={1: to_bytes(LONG, 30)},
...              upper_bounds={1: to_bytes(LONG, 40)})
>>> cannot_match(f), cannot_match(DataFile("g.parquet", FileFormat.PARQUET, (), 5, 1))
(True, False)
>>> print(cannot_match(DataFile("h.parquet", FileFormat.PARQUET, (), 5, 1,
...                             lower_bounds={1: b"short"})))
None
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from icepark.expressions import BoundExpr, BoundPredicate
from icepark.expressions.bound import BoundAnd
from icepark.expressions.expr import Op
from icepark.io.manifest.reader import FileMetrics
from icepark.spec.types import TypeId

_WIDTHS = {TypeId.INT: "<i", TypeId.DATE: "<i", TypeId.LONG: "<q", TypeId.TIME: "<q",
           TypeId.TIMESTAMP: "<q", TypeId.TIMESTAMPTZ: "<q"}
_OPS = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ})
# (field ID, op, literal, bound format)
_Comparison = tuple[int, Op, int, str]
# (field ID, bound width, unpack, below, above): no row can match when the lower bound is
# greater than ``below`` or the upper bound less than ``above`` (None: no such limit)
_Column = tuple[int, int, Callable[[bytes], tuple[Any, ...]], int | None, int | None]


def _conjuncts(expr: BoundExpr) -> list[BoundExpr]:
    if isinstance(expr, BoundAnd):
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


def _comparison(expr: BoundExpr) -> _Comparison | None:
    if not isinstance(expr, BoundPredicate) or expr.op not in _OPS:
        return None
    fmt = _WIDTHS.get(expr.term.type.type_id)
    value = expr.literals[0] if len(expr.literals) == 1 else None
    if fmt is None or not isinstance(value, int) or isinstance(value, bool):
        return None
    return expr.field_id, expr.op, value, fmt


def _limits(op: Op, v: int) -> tuple[int | None, int | None]:
    """``(below, above)``: ``value op v`` holds for no value within ``[lower, upper]`` when
    ``lower > below`` or ``upper < above`` (the values are integers)."""
    match op:
        case Op.LT:
            return v - 1, None
        case Op.LT_EQ:
            return v, None
        case Op.GT:
            return None, v + 1
        case Op.GT_EQ:
            return None, v
        case _:  # EQ
            return v, v


def _columns(comparisons: list[_Comparison]) -> tuple[_Column, ...]:
    """The comparisons grouped by column: a conjunction is proven false by any of them, so by
    the least ``below`` and the greatest ``above``."""
    out: dict[int, _Column] = {}
    for fid, op, v, fmt in comparisons:
        below, above = _limits(op, v)
        unpack = struct.Struct(fmt)
        _, _, _, b, a = out.get(fid, (fid, 0, unpack.unpack, below, above))
        below = below if b is None else b if below is None else min(below, b)
        above = above if a is None else a if above is None else max(above, a)
        out[fid] = (fid, unpack.size, unpack.unpack, below, above)
    return tuple(out.values())


def metrics_prefilter(bound: BoundExpr) -> Callable[[FileMetrics], bool | None] | None:
    """The test of a bound, NOT-free filter (True: no row of the file can match; False: the
    metrics evaluator would keep the file; None: it must decide), or None when the filter is
    not a conjunction of comparisons of integer-like columns."""
    comparisons = [_comparison(c) for c in _conjuncts(bound)]
    if not comparisons or any(c is None for c in comparisons):
        return None
    columns = _columns([c for c in comparisons if c is not None])

    def cannot_match(f: FileMetrics) -> bool | None:
        values, nulls = f.value_counts, f.null_value_counts
        lowers, uppers = f.lower_bounds, f.upper_bounds
        proven = False
        for fid, width, unpack, below, above in columns:
            low = None if lowers is None else lowers.get(fid)
            high = None if uppers is None else uppers.get(fid)
            if (low is not None and len(low) != width) or (
                    high is not None and len(high) != width):
                return None  # the evaluator decides (and reports bounds it cannot read)
            if proven:
                continue
            count = None if values is None else values.get(fid)
            if count == 0 or (count is not None and nulls is not None
                              and nulls.get(fid) == count):
                proven = True  # no value, or every value is null
                continue
            lower = None if low is None else unpack(low)[0]
            upper = None if high is None else unpack(high)[0]
            if lower is not None and upper is not None and lower > upper:
                continue  # bounds out of order are ignored
            proven = (below is not None and lower is not None and lower > below) or (
                above is not None and upper is not None and upper < above)
        return proven

    cannot_match.columns = columns  # type: ignore[attr-defined]  # read by the manifest reader

    return cannot_match
