"""Inclusive and strict projections through every transform: boundary tables (including
negative numbers and pre-1970 dates and timestamps) and the spec's properties, checked for
correct partition values and for those old writers recorded (time units truncated toward
zero)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.expressions import (
    Expr,
    RowEvaluator,
    inclusive_projection,
    parse,
    partition_evaluator,
    strict_projection,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    NestedField,
    PrimitiveType,
)
from tests.expressions.expr_strategies import (
    DECIMAL,
    TYPES,
    expressions,
    legacy_time_partition,
    nullable_values,
    transforms,
)

T = Transform


def _spec(*transforms: Transform) -> PartitionSpec:
    names = ["p", "q", "r"]
    return PartitionSpec(0, tuple(PartitionField(1, 1000 + i, t, names[i])
                                  for i, t in enumerate(transforms)))


def _schema(t: PrimitiveType) -> Schema:
    return Schema.of(NestedField.optional(1, "x", t))


CASES: list[tuple[PrimitiveType, Transform, str, str, str]] = [
    # (source type, transform, row filter, inclusive projection, strict projection)
    (INT, T.identity(), "x < 5", "p < 5", "p < 5"),
    (INT, T.identity(), "x IS NULL", "p IS NULL", "p IS NULL"),
    (DOUBLE, T.identity(), "x IS NAN", "p IS NAN", "p IS NAN"),
    (DOUBLE, T.identity(), "x NOT IN (1.5, 2.5)", "p NOT IN (1.5, 2.5)", "p NOT IN (1.5, 2.5)"),
    (STRING, T.identity(), "x LIKE 'ab%'", "p LIKE 'ab%'", "p LIKE 'ab%'"),
    (INT, T.void(), "x = 5", "TRUE", "FALSE"),
    (INT, T.void(), "x IS NULL", "TRUE", "FALSE"),
    (INT, T.void(), "x = 5 OR x IS NULL", "TRUE", "FALSE"),
    # bucket keeps equality only
    (LONG, T.bucket(16), "x = 34", "p = 3", "FALSE"),
    (LONG, T.bucket(16), "x != 34", "TRUE", "p != 3"),
    (LONG, T.bucket(16), "x IN (34, 35)", "p IN (3, 5)", "FALSE"),
    (LONG, T.bucket(16), "x NOT IN (34, 35)", "TRUE", "p NOT IN (3, 5)"),
    (LONG, T.bucket(16), "x < 34", "TRUE", "FALSE"),
    (LONG, T.bucket(16), "x IS NOT NULL", "p IS NOT NULL", "p IS NOT NULL"),
    (STRING, T.bucket(16), "x = 'iceberg'", "p = 9", "FALSE"),
    (UUID, T.bucket(16), "x = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'", "p = 12", "FALSE"),
    # truncate on integers: boundaries, negative numbers
    (INT, T.truncate(10), "x < 100", "p <= 90", "p < 100"),
    (INT, T.truncate(10), "x < 101", "p <= 100", "p < 100"),
    (INT, T.truncate(10), "x <= 100", "p <= 100", "p < 100"),
    (INT, T.truncate(10), "x <= 109", "p <= 100", "p < 110"),
    (INT, T.truncate(10), "x > 100", "p >= 100", "p > 100"),
    (INT, T.truncate(10), "x > 99", "p >= 100", "p > 90"),
    (INT, T.truncate(10), "x >= 100", "p >= 100", "p > 90"),
    (INT, T.truncate(10), "x >= 101", "p >= 100", "p > 100"),
    (INT, T.truncate(10), "x = 105", "p = 100", "FALSE"),
    (INT, T.truncate(10), "x != 105", "TRUE", "p != 100"),
    (INT, T.truncate(10), "x IN (1, 5, 15)", "p IN (0, 10)", "FALSE"),
    (INT, T.truncate(10), "x NOT IN (1, 15)", "TRUE", "p NOT IN (0, 10)"),
    (INT, T.truncate(10), "x < -1", "p <= -10", "p < -10"),
    (INT, T.truncate(10), "x < -10", "p <= -20", "p < -10"),
    (INT, T.truncate(10), "x >= -10", "p >= -10", "p > -20"),
    (INT, T.truncate(10), "x = -1", "p = -10", "FALSE"),
    (INT, T.truncate(1), "x = 5", "p = 5", "p = 5"),
    (INT, T.truncate(1), "x IN (5, 6)", "p IN (5, 6)", "p IN (5, 6)"),
    # truncate on decimals ("W=50, s=2: 10.65 -> 10.50")
    (DECIMAL, T.truncate(50), "x = 10.65", "p = 10.50", "FALSE"),
    (DECIMAL, T.truncate(50), "x < 10.65", "p <= 10.50", "p < 10.50"),
    (DECIMAL, T.truncate(50), "x < 10.50", "p <= 10.00", "p < 10.50"),
    (DECIMAL, T.truncate(50), "x <= 10.99", "p <= 10.50", "p < 11.00"),
    (DECIMAL, T.truncate(50), "x > 10.99", "p >= 11.00", "p > 10.50"),
    (DECIMAL, T.truncate(50), "x >= -0.01", "p >= -0.50", "p > -0.50"),
    (DECIMAL, T.truncate(50), "x < 10.655", "p <= 10.50", "p < 10.50"),
    # truncate on strings and binary
    (STRING, T.truncate(3), "x = 'iceberg'", "p = 'ice'", "FALSE"),
    (STRING, T.truncate(3), "x = 'ic'", "p = 'ic'", "p = 'ic'"),
    (STRING, T.truncate(3), "x < 'iceberg'", "p <= 'ice'", "p < 'ice'"),
    (STRING, T.truncate(3), "x <= 'ice'", "p <= 'ice'", "p < 'ice'"),
    (STRING, T.truncate(3), "x > 'iceberg'", "p >= 'ice'", "p > 'ice'"),
    (STRING, T.truncate(3), "x != 'iceberg'", "TRUE", "p != 'ice'"),
    (STRING, T.truncate(3), "x IN ('ab', 'iceberg')", "p IN ('ab', 'ice')", "p = 'ab'"),
    (STRING, T.truncate(3), "x NOT IN ('ab', 'iceberg')", "TRUE", "p NOT IN ('ab', 'ice')"),
    (STRING, T.truncate(3), "x LIKE 'iceberg%'", "p = 'ice'", "FALSE"),
    (STRING, T.truncate(3), "x LIKE 'ice%'", "p = 'ice'", "p LIKE 'ice%'"),
    (STRING, T.truncate(3), "x LIKE 'ic%'", "p LIKE 'ic%'", "p LIKE 'ic%'"),
    (STRING, T.truncate(3), "x NOT LIKE 'ic%'", "p NOT LIKE 'ic%'", "p NOT LIKE 'ic%'"),
    (STRING, T.truncate(3), "x NOT LIKE 'ice%'", "p NOT LIKE 'ice%'", "p NOT LIKE 'ice%'"),
    (STRING, T.truncate(3), "x NOT LIKE 'iceberg%'", "TRUE", "p NOT LIKE 'ice%'"),
    (STRING, T.truncate(2), "x = '\U0001f600\U0001f600\U0001f600'",
     "p = '\U0001f600\U0001f600'", "FALSE"),
    (BINARY, T.truncate(2), "x = X'010203'", "p = X'0102'", "FALSE"),
    (BINARY, T.truncate(2), "x < X'0102'", "p <= X'0102'", "p < X'0102'"),
    # time transforms after 1970
    (DATE, T.day(), "x < '2024-01-01'", "p <= 19722", "p < 19723"),
    (DATE, T.day(), "x = '2024-01-01'", "p = 19723", "p = 19723"),
    (DATE, T.day(), "x != '2024-01-01'", "TRUE", "p != 19723"),
    (DATE, T.month(), "x >= '2024-01-01'", "p >= 648", "p > 647"),
    (DATE, T.month(), "x >= '2024-01-02'", "p >= 648", "p > 648"),
    (DATE, T.month(), "x <= '2024-01-31'", "p <= 648", "p < 649"),
    (DATE, T.year(), "x IN ('2024-01-01', '2024-06-01', '2025-01-01')", "p IN (54, 55)",
     "FALSE"),
    (TIMESTAMP, T.hour(), "x >= '2024-01-01T10:00'", "p >= 473362", "p > 473361"),
    (TIMESTAMP, T.hour(), "x > '2024-01-01T10:00'", "p >= 473362", "p > 473362"),
    (TIMESTAMP, T.day(), "x > '2024-01-01T10:00'", "p >= 19723", "p > 19723"),
    (TIMESTAMPTZ, T.day(), "x < '2024-01-02T00:00:00+00:00'", "p <= 19723", "p < 19724"),
    (TIMESTAMP, T.month(), "x = '2024-01-15T10:00'", "p = 648", "FALSE"),
    (TIMESTAMP, T.month(), "x != '2024-01-15T10:00'", "TRUE", "p != 648"),
    # time transforms before 1970: a bound b < 0 also admits (inclusive) or excludes (strict)
    # b + 1, where old writers put values not on a unit boundary
    (DATE, T.day(), "x < '1969-12-31'", "p <= -2", "p < -1"),
    (DATE, T.month(), "x = '1969-12-15'", "p IN (-1, 0)", "FALSE"),
    (DATE, T.month(), "x < '1969-12-15'", "p <= 0", "p < -1"),
    (DATE, T.month(), "x < '1969-12-01'", "p <= -1", "p < -1"),
    (DATE, T.month(), "x > '1969-06-15'", "p >= -7", "p > -6"),
    (DATE, T.month(), "x >= '1969-06-01'", "p >= -7", "p > -7"),
    (DATE, T.month(), "x != '1969-12-15'", "TRUE", "p NOT IN (-1, 0)"),
    (DATE, T.month(), "x IN ('1969-11-15', '1970-01-15')", "p IN (-2, -1, 0)", "FALSE"),
    (DATE, T.month(), "x NOT IN ('1969-11-15', '1970-01-15')", "TRUE", "p NOT IN (-2, -1, 0)"),
    (DATE, T.year(), "x < '1970-01-01'", "p <= 0", "p < 0"),
    (DATE, T.year(), "x >= '1969-01-01'", "p >= -1", "p > -1"),
    (TIMESTAMP, T.year(), "x < '1970-01-01'", "p <= 0", "p < 0"),
    (TIMESTAMP, T.hour(), "x = '1969-12-31T23:59:59.999999'", "p IN (-1, 0)", "FALSE"),
    (TIMESTAMP, T.hour(), "x <= '1969-12-31T22:30'", "p <= -1", "p < -2"),
    (TIMESTAMP, T.hour(), "x > '1969-12-31T22:30'", "p >= -2", "p > -1"),
    (TIMESTAMP, T.day(), "x >= '1969-12-31T00:00'", "p >= -1", "p > -1"),
    (TIMESTAMP, T.day(), "x > '1969-12-30T12:00'", "p >= -2", "p > -1"),
    (TIMESTAMPTZ, T.day(), "x != '1969-12-31T12:00:00+00:00'", "TRUE", "p NOT IN (-1, 0)"),
]


@pytest.mark.parametrize(("t", "transform", "text", "inclusive", "strict"), CASES,
                         ids=[f"{c[1]}({c[0]}): {c[2]}" for c in CASES])
def test_projection(t: PrimitiveType, transform: Transform, text: str, inclusive: str,
                    strict: str) -> None:
    schema, spec = _schema(t), _spec(transform)
    assert str(inclusive_projection(schema, spec)(parse(text))) == inclusive
    assert str(strict_projection(schema, spec)(parse(text))) == strict


@pytest.mark.parametrize(("text", "inclusive", "strict"), [
    ("x = 34", "p = 3 AND q = 30", "FALSE"),
    ("x != 34", "TRUE", "p != 3 OR q != 30"),
    ("x < 34", "q <= 30", "q < 30"),
    ("x IS NULL", "p IS NULL AND q IS NULL", "p IS NULL OR q IS NULL"),
    ("NOT (x >= 34 OR x = 1)", "q <= 30", "q < 30 AND (p != 4 OR q != 0)"),
])
def test_several_fields_on_one_column(text: str, inclusive: str, strict: str) -> None:
    schema, spec = _schema(LONG), _spec(T.bucket(16), T.truncate(10))
    assert str(inclusive_projection(schema, spec)(parse(text))) == inclusive
    assert str(strict_projection(schema, spec)(parse(text))) == strict


def test_columns_without_partition_fields() -> None:
    schema = Schema.of(NestedField.optional(1, "x", INT), NestedField.optional(2, "y", INT))
    spec = _spec(T.identity())
    assert str(inclusive_projection(schema, spec)(parse("x = 1 AND y = 2"))) == "p = 1"
    assert str(inclusive_projection(schema, spec)(parse("x = 1 OR y = 2"))) == "TRUE"
    assert str(strict_projection(schema, spec)(parse("x = 1 OR y = 2"))) == "p = 1"
    assert str(strict_projection(schema, spec)(parse("x = 1 AND y = 2"))) == "FALSE"
    assert str(inclusive_projection(schema, spec)(parse("NOT (x = 1 AND y = 2)"))) == "TRUE"
    assert str(strict_projection(schema, spec)(parse("NOT (x = 1 AND y = 2)"))) == "p != 1"


@st.composite
def _cases(draw: st.DrawFn) -> tuple[PrimitiveType, PartitionSpec, Expr, Any]:
    t = draw(st.sampled_from(TYPES))
    chosen = draw(st.lists(transforms(t), min_size=1, max_size=2, unique=True))
    return t, _spec(*chosen), draw(expressions([("x", t)])), draw(nullable_values(t))


def _check(schema: Schema, spec: PartitionSpec, expr: Expr, matches: bool,
           partition: tuple[Any, ...]) -> None:
    inclusive = partition_evaluator(spec, schema, inclusive_projection(schema, spec)(expr))
    strict = partition_evaluator(spec, schema, strict_projection(schema, spec)(expr))
    if matches:
        assert inclusive.eval(partition), "p(v) must imply inclusive(p)(t(v))"
    else:
        assert not strict.eval(partition), "strict(p)(t(v)) must imply p(v)"


@settings(max_examples=250)
@given(_cases())
def test_projection_properties(case: tuple[PrimitiveType, PartitionSpec, Expr, Any]) -> None:
    """For every value v, transform t and predicate p: p(v) implies inclusive(p)(t(v)), and
    strict(p)(t(v)) implies p(v) -- also for partitions old writers computed."""
    t, spec, expr, value = case
    schema = _schema(t)
    matches = RowEvaluator(schema, expr).eval((value,))
    partition = tuple(f.transform.apply(t, value) for f in spec.fields)
    _check(schema, spec, expr, matches, partition)
    legacy = tuple(legacy_time_partition(f.transform, t, value) if f.transform.is_time
                   else p for f, p in zip(spec.fields, partition, strict=True))
    if legacy != partition:
        _check(schema, spec, expr, matches, legacy)
