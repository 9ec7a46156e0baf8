"""Bound expressions as Arrow compute, tied to RowEvaluator row by row."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    Expr,
    Op,
    Predicate,
    RowEvaluator,
    and_,
    bind,
    not_,
    or_,
    parse,
)
from icepark.io.arrow.expressions import (
    arrow_literal,
    bind_once,
    evaluate,
    expression_to_arrow,
    to_arrow_expression,
    to_pruning_expression,
)
from icepark.io.arrow.projection import arrow_values
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spec.schema import Schema
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
    NestedField,
    PrimitiveType,
    StructType,
)

DEC = PrimitiveType.decimal(9, 2)
FIXED = PrimitiveType.fixed(3)
NAN = float("nan")

COLUMNS: dict[str, PrimitiveType] = {
    "b": BOOLEAN, "i": INT, "l": LONG, "f": FLOAT, "d": DOUBLE, "dec": DEC, "date": DATE,
    "time": TIME, "ts": TIMESTAMP, "tstz": TIMESTAMPTZ, "s": STRING, "u": UUID, "fx": FIXED,
    "bin": BINARY,
}
SCHEMA = Schema((
    *(NestedField.optional(i, name, t) for i, (name, t) in enumerate(COLUMNS.items(), start=1)),
    NestedField.optional(50, "st", StructType((
        NestedField.optional(51, "x", LONG),
        NestedField.optional(52, "y", DOUBLE)))),
    NestedField.required(60, "req", LONG),
))
NESTED = {"st.x": (51, LONG), "st.y": (52, DOUBLE)}


def table_of(rows: list[tuple[Any, ...]]) -> Any:
    """An Arrow table of ``SCHEMA`` rows (structs as tuples), plus a ``__row`` index."""
    arrays = []
    for i, f in enumerate(SCHEMA.fields):
        values = [r[i] for r in rows]
        if isinstance(f.field_type, StructType):
            ids = [c.field_id for c in f.field_type.fields]
            values = [None if v is None else dict(zip(ids, v, strict=True)) for v in values]
        arrays.append(arrow_values(f.field_type, values))
    table = pa.Table.from_arrays(arrays, schema=to_arrow_schema(SCHEMA))
    return table.append_column("__row", pa.array(range(len(rows)), pa.int64()))


def columns_of(table: Any) -> dict[int, Any]:
    """Every primitive column by field ID, nested ones flattened (null under a null struct)."""
    result = {}
    for f in SCHEMA.fields:
        column = table.column(f.name).combine_chunks()
        if isinstance(f.field_type, StructType):
            for j, c in enumerate(f.field_type.fields):
                result[c.field_id] = pc.struct_field(column, [j])
        else:
            result[f.field_id] = column
    return result


def check_parity(expr: Expr, rows: list[tuple[Any, ...]]) -> None:
    """RowEvaluator, the eager Arrow path and the ``pc.Expression`` path agree row by row."""
    expected = [RowEvaluator(SCHEMA, expr).eval(r) for r in rows]
    table = table_of(rows)
    bound = bind(expr, SCHEMA)
    mask = evaluate(bound, columns_of(table), len(rows)).to_pylist()
    assert mask == expected, str(bound)
    filtered = table.filter(expression_to_arrow(expr, SCHEMA))
    assert sorted(filtered.column("__row").to_pylist()) == \
        [i for i, e in enumerate(expected) if e], str(bound)


ROW_VALUES: list[dict[str, Any]] = [
    {"b": True, "i": 1, "l": 10, "f": 1.5, "d": 2.5, "dec": Decimal("1.25"), "date": 100,
     "time": 5, "ts": 7, "tstz": -7, "s": "abc", "u": uuid.UUID(int=5), "fx": b"abc",
     "bin": b"\x00", "st": (3, NAN), "req": 1},
    {"b": None, "i": None, "l": None, "f": NAN, "d": None, "dec": None, "date": None,
     "time": None, "ts": None, "tstz": None, "s": None, "u": None, "fx": None, "bin": None,
     "st": None, "req": 2},
    {"b": False, "i": -1, "l": -10, "f": -0.0, "d": NAN, "dec": Decimal("-1.25"), "date": -1,
     "time": 0, "ts": 0, "tstz": 0, "s": "", "u": uuid.UUID(int=2**127), "fx": b"\xff\x00\x00",
     "bin": b"", "st": (None, 1.0), "req": 3},
]
ROWS = [tuple(r[f.name] for f in SCHEMA.fields) for r in ROW_VALUES]


@pytest.mark.parametrize(("text", "expected"), [
    ("i IS NULL", [False, True, False]),
    ("i IS NOT NULL", [True, False, True]),
    ("f IS NAN", [False, True, False]),
    ("f IS NOT NAN", [True, False, True]),
    ("d IS NOT NAN", [True, True, False]),
    ("st.y IS NAN", [True, False, False]),
    ("st.y IS NOT NAN", [False, True, True]),
    ("i < 1", [False, False, True]),
    ("i != 1", [False, False, True]),
    ("NOT i = 1", [False, False, True]),
    ("f != 1.5", [False, True, True]),
    ("f < 1.5", [False, False, True]),
    ("NOT f < 1.5", [True, False, False]),
    ("f = 0", [False, False, True]),
    ("s LIKE 'ab%'", [True, False, False]),
    ("s NOT LIKE 'ab%'", [False, False, True]),
    ("i IN (1, 5)", [True, False, False]),
    ("i NOT IN (1, 5)", [False, False, True]),
    ("d NOT IN (2.5, 3.5)", [False, False, True]),
    ("st.x = 3", [True, False, False]),
    ("st.x IS NULL", [False, True, True]),
    ("dec >= 0", [True, False, False]),
    ("date < '1970-01-01'", [False, False, True]),
    ("tstz > '1970-01-01T00:00:00+00:00'", [False, False, False]),
    ("u = '00000000-0000-0000-0000-000000000005'", [True, False, False]),
    ("u > '00000000-0000-0000-0000-000000000005'", [False, False, True]),
    ("fx < X'FF0000'", [True, False, False]),
    ("bin = X''", [False, False, True]),
    ("b = true", [True, False, False]),
    ("req > 1 AND (i IS NULL OR f IS NAN)", [False, True, False]),
    ("NOT (i = 1 OR s IS NULL)", [False, False, True]),
])
def test_operators(text: str, expected: list[bool]) -> None:
    assert [RowEvaluator(SCHEMA, parse(text)).eval(r) for r in ROWS] == expected
    check_parity(parse(text), ROWS)


def test_constants() -> None:
    assert evaluate(ALWAYS_TRUE, {}, 2).to_pylist() == [True, True]
    assert evaluate(ALWAYS_FALSE, {}, 2).to_pylist() == [False, False]
    # Binding simplifies: IS NULL on a required column is always false.
    assert evaluate(bind(parse("req IS NULL"), SCHEMA), {}, 1).to_pylist() == [False]


def test_unresolved_columns() -> None:
    bound = bind(parse("i = 1 AND (l = 2 OR d != 1.0)"), SCHEMA)
    with pytest.raises(ValidationError, match="not available"):
        to_arrow_expression(bound, lambda ref: None)
    # Pruning only widens: unknown columns and NaN-sensitive float predicates become true.
    only_i = to_pruning_expression(bound, lambda ref: pc.field(ref.name))
    assert str(only_i) == "(i == 1)"
    assert to_pruning_expression(bound, lambda ref: None).equals(pc.scalar(True))


def test_bind_once_keeps_bound_expressions() -> None:
    bound = bind(parse("i = 1"), SCHEMA)
    assert bind_once(bound, SCHEMA) is bound
    assert bind_once(parse("I = 1"), SCHEMA, case_sensitive=False) == bound


def test_literals() -> None:
    assert arrow_literal(UUID, uuid.UUID(int=1)).type == pa.binary(16)
    assert arrow_literal(TIME, 1).type == pa.time64("us")
    assert arrow_literal(DEC, Decimal("1.25")).type == pa.decimal128(9, 2)


def test_filtering_a_table_of_the_schema() -> None:
    """``expression_to_arrow`` reads the table by names, nested ones by path."""
    table = table_of(ROWS)
    result = table.filter(expression_to_arrow(parse("st.x = 3 OR u IS NULL"), SCHEMA))
    assert result.column("req").to_pylist() == [1, 2]


# --- Hypothesis parity ------------------------------------------------------------------------

_FLOAT32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
_DOUBLE = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0])
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=4)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "b": st.booleans(),
    "i": st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 3),
    "l": st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3),
    "f": _FLOAT32 | st.sampled_from([0.0, -0.0, 1.0]),
    "d": _DOUBLE,
    "dec": st.integers(-999_999_999, 999_999_999).map(lambda u: Decimal(u).scaleb(-2))
    | st.sampled_from([Decimal("0.00"), Decimal("1.00")]),
    "date": st.integers(-100_000, 100_000) | st.integers(-2, 2),
    "time": st.integers(0, 86_400_000_000 - 1) | st.integers(0, 3),
    "ts": st.integers(-(10**17), 10**17) | st.integers(-2, 2),
    "tstz": st.integers(-(10**17), 10**17) | st.integers(-2, 2),
    "s": _TEXT,
    "u": st.integers(0, 2**128 - 1).map(lambda n: uuid.UUID(int=n))
    | st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=1)]),
    "fx": st.binary(min_size=3, max_size=3),
    "bin": st.binary(max_size=3),
    "st.x": st.integers(-3, 3),
    "st.y": _DOUBLE,
}
_NAN_FREE = {"f", "d", "st.y"}


def _literal(name: str) -> st.SearchStrategy[Any]:
    values = VALUES[name]
    if name in _NAN_FREE:
        return values.filter(lambda v: not math.isnan(v))
    return values


@st.composite
def predicates(draw: st.DrawFn) -> Expr:
    name = draw(st.sampled_from(sorted(VALUES)))
    t = COLUMNS.get(name) or NESTED[name][1]
    ops = [Op.IS_NULL, Op.NOT_NULL, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ,
           Op.IN, Op.NOT_IN]
    if t in (FLOAT, DOUBLE):
        ops += [Op.IS_NAN, Op.NOT_NAN]
    if t == STRING:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return Predicate(op, name)
    if op.is_set:
        return Predicate(op, name, tuple(draw(st.lists(_literal(name), max_size=3))))
    return Predicate(op, name, (draw(_literal(name)),))


expressions = st.recursive(
    predicates(),
    lambda children: st.one_of(
        st.tuples(children, children).map(lambda p: and_(*p)),
        st.tuples(children, children).map(lambda p: or_(*p)),
        children.map(not_)),
    max_leaves=4)


@st.composite
def rows(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    def value(name: str) -> Any:
        return draw(st.none() | VALUES[name])

    result = []
    for _ in range(draw(st.integers(0, 6))):
        row: list[Any] = []
        for f in SCHEMA.fields:
            if f.name == "st":
                row.append(None if draw(st.booleans()) else (value("st.x"), value("st.y")))
            elif f.name == "req":
                row.append(draw(st.integers(-2, 2)))
            else:
                row.append(value(f.name))
        result.append(tuple(row))
    return result


@given(expressions, rows())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_parity_with_row_evaluator(expr: Expr, data: list[tuple[Any, ...]]) -> None:
    """For random rows and predicates, the Arrow filter equals RowEvaluator row by row."""
    check_parity(expr, data)


@given(expressions, rows())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_pruning_expression_only_widens(expr: Expr, data: list[tuple[Any, ...]]) -> None:
    """Rows the exact filter keeps are kept by the pruning expression too."""
    table = table_of(data)
    bound = bind(expr, SCHEMA)
    columns = columns_of(table)
    keep_some = {i for i in columns if i % 2}  # half the columns "missing from the file"

    def column(ref: Any) -> Any:
        if ref.field_id not in keep_some:
            return None
        names = [SCHEMA.find_field(ref.field_id).name]
        parent = SCHEMA.parent_id(ref.field_id)
        if parent is not None:
            names.insert(0, SCHEMA.find_field(parent).name)
        field = pc.field(*names)
        return field.cast(pa.binary(16)) if ref.type == UUID else field

    exact = evaluate(bound, columns, len(data)).to_pylist()
    wide = to_pruning_expression(bound, column)
    # Evaluate the expression over a table whose columns are named by field ID.
    kept = table.filter(wide) if not wide.equals(pc.scalar(True)) else table
    kept_rows = set(kept.column("__row").to_pylist())
    assert all(i in kept_rows for i, e in enumerate(exact) if e)
