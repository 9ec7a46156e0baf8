"""Bound icepark expressions as Arrow compute: residual filters and row-group pruning.

Spec, *Scan Planning*: residuals are "the strict projection ... used to calculate the residual
predicates for each file in a scan"; the reader applies them to the rows it reads. The result
must equal :class:`icepark.expressions.RowEvaluator` row by row (a parity test ties them), so
the semantics are the same SQL ones: comparisons, ``IN``, ``starts_with`` and their negations
are false for null; ``IS NULL``/``NOT NULL`` and ``IS NAN``/``NOT NAN`` never yield null (a null
is not NaN, so ``NOT NAN`` holds for it); NaN compares false except for ``!=`` and ``NOT IN``.

Expressions are translated after ``NOT`` is pushed down (binding does that), so every operator
is monotone and Arrow's Kleene ``AND``/``OR`` with "null means no match" give exactly the
two-valued result. The same translation builds a ``pyarrow.compute.Expression`` when the
columns are ``pc.field`` references, or evaluates eagerly when they are arrays.

:func:`to_pruning_expression` is the row-group variant: it only ever widens (spec of this
project: "Filter pushdown only ever widens"). A predicate on a column it cannot resolve in the
file becomes ``true``, as do ``!=``, ``NOT IN``, ``IS NAN`` and ``IS NOT NAN`` on float
columns, because Parquet statistics leave NaN out of min/max while NaN satisfies those.

>>> import pyarrow as pa
>>> from icepark.expressions import parse
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import DOUBLE, LONG, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "x", DOUBLE))
>>> print(expression_to_arrow(parse("id IN (1, 2) OR x != 1.5"), schema))
(is_in(id, {value_set=int64:[
  1,
  2
], null_matching_behavior=MATCH}) or (x != 1.5))
>>> table = pa.table({"id": [1, 3, 4], "x": [None, float("nan"), 1.5]})
>>> table.filter(expression_to_arrow(parse("id IN (1, 2) OR x != 1.5"), schema))["id"].to_pylist()
[1, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import ValidationError
from icepark.expressions.bound import (
    BoundAnd,
    BoundExpr,
    BoundNot,
    BoundOr,
    BoundPredicate,
    BoundReference,
    BoundVisitor,
    bind,
    rewrite_not,
    visit,
)
from icepark.expressions.expr import AlwaysFalse, AlwaysTrue, Expr, Op
from icepark.io.arrow.schema import to_arrow_type
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType, TypeId

ColumnResolver = Callable[[BoundReference], Any]
"""The Arrow column (a ``pc.Expression`` or an array) of a bound reference, or None if it
cannot be resolved. uuid columns must be given as their ``fixed_size_binary(16)`` storage.
(Columns of variant, geometry and geography only take ``IS NULL``/``NOT NULL``: binding
refuses comparisons, so their WKB or variant bytes are never compared.)"""

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
# Predicates a NaN can satisfy, or that test for NaN: statistics without NaN cannot decide them.
_NAN_SENSITIVE = frozenset({Op.NOT_EQ, Op.NOT_IN, Op.IS_NAN, Op.NOT_NAN})
_COMPARISONS = {Op.LT: pc.less, Op.LT_EQ: pc.less_equal, Op.GT: pc.greater,
                Op.GT_EQ: pc.greater_equal, Op.EQ: pc.equal, Op.NOT_EQ: pc.not_equal}


def arrow_literal_type(t: PrimitiveType) -> Any:
    """The Arrow type literals of ``t`` are compared in (uuid: its 16-byte storage)."""
    return pa.binary(16) if t.type_id is TypeId.UUID else to_arrow_type(t)


def arrow_literal(t: PrimitiveType, value: Any) -> Any:
    """A bound literal (an :mod:`icepark.spec.values` value) as an Arrow scalar.

    >>> from icepark.spec.types import DATE, TIMESTAMPTZ, TIMESTAMP_NS
    >>> arrow_literal(DATE, 17486), arrow_literal(TIMESTAMPTZ, 0).type
    (<pyarrow.Date32Scalar: datetime.date(2017, 11, 16)>, TimestampType(timestamp[us, tz=UTC]))
    >>> arrow_literal(TIMESTAMP_NS, 1510871468123456789)
    <pyarrow.TimestampScalar: '2017-11-16T22:31:08.123456789'>
    """
    arrow_type = arrow_literal_type(t)
    match t.type_id:
        case TypeId.DATE:
            return pa.scalar(value, pa.int32()).cast(arrow_type)
        case (TypeId.TIME | TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ | TypeId.TIMESTAMP_NS
              | TypeId.TIMESTAMPTZ_NS):
            return pa.scalar(value, pa.int64()).cast(arrow_type)
        case TypeId.UUID:
            return pa.scalar(value.bytes, arrow_type)
        case _:
            return pa.scalar(value, arrow_type)


def comparable(array: Any) -> Any:
    """An array as filters compare it: extension arrays (uuid) as their storage."""
    return array.storage if isinstance(array.type, pa.BaseExtensionType) else array


class _Translate(BoundVisitor[Any]):
    def __init__(self, column: ColumnResolver, pruning: bool) -> None:
        self._column = column
        self._pruning = pruning

    def always_true(self) -> Any:
        return pa.scalar(True)

    def always_false(self) -> Any:
        return pa.scalar(False)

    def and_(self, left: Any, right: Any) -> Any:
        # Constants (widened predicates) fold here: compute functions only build an
        # expression when their first argument is one.
        if isinstance(left, pa.Scalar):
            return right if left.as_py() else left
        if isinstance(right, pa.Scalar):
            return left if right.as_py() else right
        return pc.and_kleene(left, right)

    def or_(self, left: Any, right: Any) -> Any:
        if isinstance(left, pa.Scalar):
            return left if left.as_py() else right
        if isinstance(right, pa.Scalar):
            return right if right.as_py() else left
        return pc.or_kleene(left, right)

    def predicate(self, p: BoundPredicate) -> Any:
        column = self._column(p.term)
        if column is None:
            if self._pruning:
                return pa.scalar(True)
            raise ValidationError(f"Cannot filter on {p.name!r}: the column is not available")
        if self._pruning and p.op in _NAN_SENSITIVE and p.term.type.type_id in _FLOATS:
            return pa.scalar(True)
        return predicate(p, column)


def predicate(p: BoundPredicate, column: Any) -> Any:
    """One bound predicate on an Arrow column (expression or array); null means no match."""
    t = p.term.type
    match p.op:
        case Op.IS_NULL:
            return pc.is_null(column)
        case Op.NOT_NULL:
            return pc.is_valid(column)
        case Op.IS_NAN:
            return pc.is_nan(column)
        case Op.NOT_NAN:
            return pc.or_kleene(pc.is_null(column), pc.invert(pc.is_nan(column)))
        case Op.STARTS_WITH:
            return pc.starts_with(column, pattern=p.literal)
        case Op.NOT_STARTS_WITH:
            return pc.invert(pc.starts_with(column, pattern=p.literal))
        case Op.IN | Op.NOT_IN:
            literals = list(p.literals)
            if t.type_id in _FLOATS and 0.0 in literals:  # sets hash bits: -0.0 = 0.0 too
                literals += [0.0, -0.0]
            value_set = pa.array([arrow_literal(t, v) for v in literals],
                                 arrow_literal_type(t))
            found = pc.is_in(column, value_set=value_set)
            if p.op is Op.IN:
                return found
            return pc.and_kleene(pc.is_valid(column), pc.invert(found))
        case op:
            return _COMPARISONS[op](column, arrow_literal(t, p.literal))


def to_arrow_expression(expr: BoundExpr, column: ColumnResolver) -> Any:
    """``expr`` on the columns ``column`` resolves; a null result means "no match".

    With ``pc.field`` references the result is a ``pc.Expression``; with arrays it is a
    boolean array (use :func:`evaluate` to get a mask). ``NOT`` is pushed down first.
    """
    return visit(rewrite_not(expr), _Translate(column, pruning=False))


def to_pruning_expression(expr: BoundExpr, column: ColumnResolver) -> Any:
    """A ``pc.Expression`` at least as wide as ``expr``, for row-group pruning by statistics:
    unresolvable columns and NaN-sensitive predicates become ``true``."""
    return _as_expression(visit(rewrite_not(expr), _Translate(column, pruning=True)))


def _as_expression(result: Any) -> Any:
    """Constants fold to scalars while translating; as filters they must be expressions."""
    return pc.scalar(result.as_py()) if isinstance(result, pa.Scalar) else result


def evaluate(expr: BoundExpr, columns: Mapping[int, Any], length: int) -> Any:
    """The boolean mask of ``expr`` over arrays by field ID (null counts as false).

    >>> from icepark.expressions import bind, parse
    >>> from icepark.spec.schema import Schema
    >>> from icepark.spec.types import LONG, NestedField
    >>> s = Schema.of(NestedField.optional(1, "n", LONG))
    >>> evaluate(bind(parse("n NOT IN (1, 2)"), s), {1: pa.array([1, 3, None])}, 3).to_pylist()
    [False, True, False]
    """
    match expr:
        case AlwaysTrue():
            return pa.array([True] * length, pa.bool_())
        case AlwaysFalse():
            return pa.array([False] * length, pa.bool_())

    def column(ref: BoundReference) -> Any:
        found = columns.get(ref.field_id)
        return None if found is None else comparable(found)

    return pc.fill_null(to_arrow_expression(expr, column), False)


def expression_to_arrow(expr: Expr | BoundExpr, schema: Schema,
                        case_sensitive: bool = True) -> Any:
    """``expr`` as a ``pc.Expression`` over a table with ``to_arrow_schema(schema)``.

    Nested columns are ``pc.field(parent, child)`` references, uuid columns are compared as
    their 16-byte storage. Rows where the expression is null are dropped by ``filter``, which
    is the "no match" of :class:`~icepark.expressions.RowEvaluator`.
    """
    bound = bind_once(expr, schema, case_sensitive)

    def column(ref: BoundReference) -> Any:
        names: list[str] = []
        current: int | None = ref.field_id
        while current is not None:
            names.append(schema.find_field(current).name)
            current = schema.parent_id(current)
        ref_expr = pc.field(*reversed(names))
        if ref.type.type_id is TypeId.UUID:
            ref_expr = ref_expr.cast(pa.binary(16))
        return ref_expr

    return _as_expression(to_arrow_expression(bound, column))


def bind_once(expr: Expr | BoundExpr, schema: Schema, case_sensitive: bool = True) -> BoundExpr:
    """``expr`` bound to ``schema``; an expression that is bound already is kept as it is."""
    match expr:
        case BoundPredicate() | BoundAnd() | BoundOr() | BoundNot() | AlwaysTrue() | AlwaysFalse():
            return expr
        case _:
            return bind(expr, schema, case_sensitive)
