"""Filtering data and delete files with the column metrics stored in manifests.

Spec, *Scan Planning*: "Scan predicates are also used to filter data and delete files using
column bounds and counts that are stored by field id in manifests." The counts are
``value_counts`` ("including null and NaN values"), ``null_value_counts`` and
``nan_value_counts``; each lower bound "must be less than or equal to all non-null, non-NaN
values in the column for the file" and each upper bound greater or equal. Bounds of strings
and binary may be truncated: a truncated lower bound is a prefix of the least value, a
truncated upper bound is rounded up, so both stay valid bounds, which is all these evaluators
assume (``starts_with`` compares the bounds' prefixes).

:class:`InclusiveMetricsEvaluator` answers "might any row match?" (``False``: skip the file);
:class:`StrictMetricsEvaluator` answers "must every row match?" (``True``: the whole file is
selected, e.g. deleted by a filter without rewriting). Both use the SQL semantics of
:mod:`icepark.expressions.evaluator` (a comparison with null is false, NaN only satisfies
``!=``/``NOT IN``). Metrics that are absent are unknown: a column added after the file was
written has none, but neither has a column the table's metrics config skips, so absent metrics
never count as "all null".

>>> from icepark.expressions.parser import parse
>>> from icepark.spec.manifest import DataFile, FileFormat
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> from icepark.spec.bounds import to_bytes
>>> schema = Schema.of(NestedField.optional(1, "id", LONG))
>>> f = DataFile("f.parquet", FileFormat.PARQUET, (), record_count=10, file_size_in_bytes=1,
...              value_counts={1: 10}, null_value_counts={1: 0},
...              lower_bounds={1: to_bytes(LONG, 30)}, upper_bounds={1: to_bytes(LONG, 79)})
>>> [InclusiveMetricsEvaluator(schema, parse(e)).eval(f) for e in ("id < 30", "id = 79")]
[False, True]
>>> [StrictMetricsEvaluator(schema, parse(e)).eval(f) for e in ("id < 80", "id != 29")]
[True, True]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icepark.errors import CorruptFile, ValidationError
from icepark.expressions.bound import BoundPredicate, BoundVisitor, bind, rewrite_not, visit
from icepark.expressions.expr import Expr, Op
from icepark.expressions.literals import decode_bounds
from icepark.expressions.manifest_evaluator import bounds_might_match
from icepark.spec.manifest import DataFile
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType, TypeId

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})


class InclusiveMetricsEvaluator:
    """Whether rows of a file might match ``expr``, from its metrics.

    A file with ``record_count`` 0 has no rows, so never matches, unless
    ``include_empty_files`` (then its metrics decide, for tools that want to see empty files).
    """

    def __init__(self, schema: Schema, expr: Expr, case_sensitive: bool = True,
                 include_empty_files: bool = False) -> None:
        self.bound = rewrite_not(bind(expr, schema, case_sensitive))
        self.include_empty_files = include_empty_files

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0 and not self.include_empty_files:
            return False
        return _visit(self.bound, _Inclusive(_Metrics(data_file)), data_file)


class StrictMetricsEvaluator:
    """Whether every row of a file matches ``expr``, from its metrics (vacuously true for a
    file with no rows)."""

    def __init__(self, schema: Schema, expr: Expr, case_sensitive: bool = True) -> None:
        self.bound = rewrite_not(bind(expr, schema, case_sensitive))

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return True
        return _visit(self.bound, _Strict(_Metrics(data_file)), data_file)


def _visit(expr: Any, visitor: BoundVisitor[bool], data_file: DataFile) -> bool:
    try:
        return visit(expr, visitor)
    except ValidationError as e:
        raise CorruptFile(f"Data file {data_file.file_path}: bad metrics: {e}") from e


class _Metrics:
    """The counts and bounds of one file; ``None`` where unknown."""

    def __init__(self, data_file: DataFile) -> None:
        self._file = data_file

    @staticmethod
    def _get(counts: Mapping[int, int] | None, field_id: int) -> int | None:
        return None if counts is None else counts.get(field_id)

    def value_count(self, field_id: int) -> int | None:
        return self._get(self._file.value_counts, field_id)

    def null_count(self, field_id: int) -> int | None:
        return self._get(self._file.null_value_counts, field_id)

    def nan_count(self, field_id: int, t: PrimitiveType) -> int | None:
        if t.type_id not in _FLOATS:
            return 0
        return self._get(self._file.nan_value_counts, field_id)

    def all_null(self, field_id: int) -> bool:
        values, nulls = self.value_count(field_id), self.null_count(field_id)
        return values is not None and nulls is not None and values == nulls

    def all_nan(self, field_id: int, t: PrimitiveType) -> bool:
        values, nans = self.value_count(field_id), self.nan_count(field_id, t)
        return values is not None and nans is not None and values == nans

    def only_null_or_nan(self, field_id: int, t: PrimitiveType) -> bool:
        """Whether no value is comparable (each is null or NaN)."""
        values = self.value_count(field_id)
        nulls, nans = self.null_count(field_id), self.nan_count(field_id, t)
        return (self.all_null(field_id) or self.all_nan(field_id, t)
                or (values is not None and nulls is not None and nans is not None
                    and values == nulls + nans))

    def bounds(self, p: BoundPredicate) -> tuple[Any, Any]:
        lower = self._file.lower_bounds
        upper = self._file.upper_bounds
        return decode_bounds(p.term.type,
                             None if lower is None else lower.get(p.field_id),
                             None if upper is None else upper.get(p.field_id))


class _Inclusive(BoundVisitor[bool]):
    def __init__(self, metrics: _Metrics) -> None:
        self._m = metrics

    def always_true(self) -> bool:
        return True

    def always_false(self) -> bool:
        return False

    def and_(self, left: bool, right: bool) -> bool:
        return left and right

    def or_(self, left: bool, right: bool) -> bool:
        return left or right

    def predicate(self, p: BoundPredicate) -> bool:
        m, fid, t = self._m, p.field_id, p.term.type
        match p.op:
            case Op.IS_NULL:
                return m.null_count(fid) != 0
            case Op.NOT_NULL:
                return not m.all_null(fid)
            case Op.IS_NAN:
                return m.nan_count(fid, t) != 0 and not m.all_null(fid)
            case Op.NOT_NAN:
                return not m.all_nan(fid, t)
        if m.all_null(fid):  # comparisons are false for null
            return False
        if p.op not in (Op.NOT_EQ, Op.NOT_IN) and m.only_null_or_nan(fid, t):
            return False  # NaN only satisfies != and NOT IN
        lower, upper = m.bounds(p)
        return bounds_might_match(p, lower, upper, no_nan=m.nan_count(fid, t) == 0)


class _Strict(BoundVisitor[bool]):
    def __init__(self, metrics: _Metrics) -> None:
        self._m = metrics

    def always_true(self) -> bool:
        return True

    def always_false(self) -> bool:
        return False

    def and_(self, left: bool, right: bool) -> bool:
        return left and right

    def or_(self, left: bool, right: bool) -> bool:
        return left or right

    def predicate(self, p: BoundPredicate) -> bool:
        m, fid, t = self._m, p.field_id, p.term.type
        match p.op:
            case Op.IS_NULL:
                return m.all_null(fid)
            case Op.NOT_NULL:
                return m.null_count(fid) == 0
            case Op.IS_NAN:
                return m.all_nan(fid, t)
            case Op.NOT_NAN:  # a null is not NaN
                return m.nan_count(fid, t) == 0 or m.all_null(fid)
        if m.null_count(fid) != 0:  # a null row fails every comparison
            return False
        lower, upper = m.bounds(p)
        if p.op in (Op.NOT_EQ, Op.NOT_IN):  # NaN rows satisfy these
            return m.all_nan(fid, t) or (
                lower is not None and upper is not None
                and all(v < lower or v > upper for v in p.literals))
        if m.nan_count(fid, t) != 0:  # a NaN row (or an unknown count) fails the rest
            return False
        return _all_match(p, lower, upper)


def _all_match(p: BoundPredicate, lower: Any, upper: Any) -> bool:
    """Whether every value within ``[lower, upper]`` satisfies ``p`` (no nulls, no NaN)."""
    if p.op is Op.IN:
        return lower is not None and lower == upper and lower in frozenset(p.literals)
    v = p.literal
    match p.op:
        case Op.LT:
            return upper is not None and upper < v
        case Op.LT_EQ:
            return upper is not None and upper <= v
        case Op.GT:
            return lower is not None and lower > v
        case Op.GT_EQ:
            return lower is not None and lower >= v
        case Op.EQ:
            return lower is not None and lower == v and upper == v
        case Op.STARTS_WITH:  # all values between two strings starting with v do too
            return (lower is not None and upper is not None
                    and lower.startswith(v) and upper.startswith(v))
        case _:  # not_starts_with
            n = len(v)
            return (lower is not None and lower[:n] > v) or (upper is not None
                                                             and upper[:n] < v)
