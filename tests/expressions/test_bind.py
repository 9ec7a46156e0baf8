"""Binding: column lookup, literal conversion for every type, and every simplification."""

from __future__ import annotations

import math
import operator
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BoundNot,
    BoundPredicate,
    Expr,
    Op,
    Predicate,
    RowEvaluator,
    bind,
    equal,
    greater_than,
    is_in,
    less_than,
    not_,
    parse,
    rewrite_not,
    unbind,
)
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
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from tests.expressions.expr_strategies import TYPES, expressions, literals

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "i", INT),
    NestedField.optional(3, "dec", PrimitiveType.decimal(4, 2)),
    NestedField.optional(4, "f", FLOAT),
    NestedField.optional(5, "d", DOUBLE),
    NestedField.optional(6, "day", DATE),
    NestedField.optional(7, "t", TIME),
    NestedField.optional(8, "ts", TIMESTAMP),
    NestedField.optional(9, "tz", TIMESTAMPTZ),
    NestedField.optional(10, "s", STRING),
    NestedField.optional(11, "u", UUID),
    NestedField.optional(12, "fx", PrimitiveType.fixed(2)),
    NestedField.optional(13, "bin", BINARY),
    NestedField.optional(14, "b", BOOLEAN),
    NestedField.optional(15, "wide", PrimitiveType.decimal(38, 10)),
    NestedField.optional(16, "opt", StructType((NestedField.required(17, "req", INT),))),
    NestedField.required(18, "must", StructType((NestedField.required(19, "req", INT),
                                                 NestedField.optional(20, "opt", INT)))),
    NestedField.optional(21, "tags", ListType(22, STRING)),
    NestedField.optional(23, "props", MapType(24, STRING, 25, STRING)),
)
UID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
TS_2024 = 1_704_067_200_000_000  # 2024-01-01T00:00:00


@pytest.mark.parametrize(("text", "expected"), [
    # null tests on required columns (and columns only inside required structs)
    ("id IS NULL", "FALSE"),
    ("id IS NOT NULL", "TRUE"),
    ("must.req IS NULL", "FALSE"),
    ("must.opt IS NULL", "must.opt IS NULL"),
    ("opt.req IS NULL", "opt.req IS NULL"),  # required, but its struct may be null
    ("i IS NULL", "i IS NULL"),
    # one- and zero-value sets
    ("i IN (5)", "i = 5"),
    ("i NOT IN (5)", "i != 5"),
    ("i IN (5, 5)", "i = 5"),
    ("i IN (3, 1, 3, 2)", "i IN (1, 2, 3)"),
    ("i IN ()", "FALSE"),
    ("i NOT IN ()", "TRUE"),
    # literals beyond the type's range
    ("i < 2147483648", "i IS NOT NULL"),
    ("i <= 2147483648", "i IS NOT NULL"),
    ("i > 2147483648", "FALSE"),
    ("i >= 2147483648", "FALSE"),
    ("i = 2147483648", "FALSE"),
    ("i != 2147483648", "i IS NOT NULL"),
    ("id != 9223372036854775808", "TRUE"),
    ("i > -2147483649", "i IS NOT NULL"),
    ("i < -2147483649", "FALSE"),
    ("i IN (1, 2147483648)", "i = 1"),
    ("i IN (2147483648, -2147483649)", "FALSE"),
    ("i NOT IN (2147483648, 3)", "i != 3"),
    ("i NOT IN (2147483648)", "i IS NOT NULL"),
    # at the type's extremes
    ("i < -2147483648", "FALSE"),
    ("i >= -2147483648", "i IS NOT NULL"),
    ("i <= 2147483647", "i IS NOT NULL"),
    ("i > 2147483647", "FALSE"),
    ("i <= -2147483648", "i <= -2147483648"),
    ("t >= 0", "t IS NOT NULL"),
    ("t < 0", "FALSE"),
    ("dec <= 99.99", "dec IS NOT NULL"),
    ("dec < 100", "dec IS NOT NULL"),
    ("dec > -100", "dec IS NOT NULL"),
    ("s >= ''", "s IS NOT NULL"),
    ("s < ''", "FALSE"),
    ("bin >= X''", "bin IS NOT NULL"),
    ("s LIKE '%'", "s IS NOT NULL"),
    ("s NOT LIKE '%'", "FALSE"),
    # literals between two values of the type
    ("i = 2.5", "FALSE"),
    ("i != 2.5", "i IS NOT NULL"),
    ("i < 2.5", "i <= 2"),
    ("i <= 2.5", "i <= 2"),
    ("i > 2.5", "i >= 3"),
    ("i >= 2.5", "i >= 3"),
    ("i < -2.5", "i <= -3"),
    ("i > -2.5", "i >= -2"),
    ("i IN (1.5, 2.0, 3)", "i IN (2, 3)"),
    ("i = 2.0", "i = 2"),
    ("i = 1e2", "i = 100"),
    ("dec < 10.655", "dec <= 10.65"),
    ("dec > 10.655", "dec >= 10.66"),
    ("dec = 10.655", "FALSE"),
    ("dec = 10.6500", "dec = 10.65"),
    ("ts < '2024-01-01T00:00:00.0000001'", f"ts <= {TS_2024}"),
    ("ts >= '2024-01-01T00:00:00.0000001'", f"ts >= {TS_2024 + 1}"),
    ("ts = '2024-01-01T00:00:00.000000001'", "FALSE"),
    ("ts = '2024-01-01T00:00:00.000001000'", f"ts = {TS_2024 + 1}"),
    ("t > '23:59:59.9999991'", "FALSE"),
    ("t < '00:00:00.0000001'", "t <= 0"),
    ("f < 1e39", "f <= 3.4028234663852886e+38"),
    ("f > 1e39", "f >= 'Infinity'"),
    ("f = 1e39", "FALSE"),
    ("d < 1e309", "d <= 1.7976931348623157e+308"),
    ("d > -1e309", "d >= -1.7976931348623157e+308"),
    # NaN-safe infinities
    ("d < '-Infinity'", "FALSE"),
    ("d > 'Infinity'", "FALSE"),
    ("d <= 'Infinity'", "d <= 'Infinity'"),
    ("d >= '-Infinity'", "d >= '-Infinity'"),
    # constants and structure
    ("i = 1 AND id IS NOT NULL", "i = 1"),
    ("i = 1 OR id IS NOT NULL", "TRUE"),
    ("NOT id IS NULL", "TRUE"),
    ("NOT i = 1", "i != 1"),
    ("NOT (i < -2147483649)", "i IS NOT NULL"),
    ("NOT (i = 1 AND id IS NULL)", "TRUE"),
    ("NOT (i = 2.5 OR s LIKE 'a%')", "i IS NOT NULL AND s NOT LIKE 'a%'"),
])
def test_simplifications(text: str, expected: str) -> None:
    assert str(bind(parse(text), SCHEMA)) == expected


@pytest.mark.parametrize(("column", "literal", "expected"), [
    ("id", 5, 5),
    ("id", "5", 5),
    ("id", " -7 ", -7),
    ("id", Decimal("5.000"), 5),
    ("id", 5.0, 5),
    ("i", -(2**31), -(2**31)),
    ("dec", Decimal("10.65"), Decimal("10.65")),
    ("dec", "10.65", Decimal("10.65")),
    ("dec", 10.65, Decimal("10.65")),
    ("dec", 10, Decimal("10.00")),
    ("dec", "-0.5", Decimal("-0.50")),
    ("wide", Decimal("1234567890123456789012345678.0123456789"),
     Decimal("1234567890123456789012345678.0123456789")),
    ("wide", "-9999999999999999999999999999.9999999999",
     Decimal("-9999999999999999999999999999.9999999999")),
    ("f", 0.1, 0.10000000149011612),
    ("f", Decimal("0.1"), 0.10000000149011612),
    ("f", 1, 1.0),
    ("d", Decimal("0.1"), 0.1),
    ("d", "2.5", 2.5),
    ("d", -0.0, -0.0),
    ("d", "-Infinity", -math.inf),
    ("day", "2024-01-01", 19723),
    ("day", date(1969, 12, 31), -1),
    ("day", 19723, 19723),
    ("t", "22:31:08.123456", 81_068_123_456),
    ("t", "22:31", 81_060_000_000),
    ("t", time(22, 31, 8, 123456), 81_068_123_456),
    ("t", 5, 5),
    ("ts", "2024-01-01", TS_2024),
    ("ts", "2024-01-01T00:00:01", TS_2024 + 1_000_000),
    ("ts", "2024-01-01 00:00:00.5", TS_2024 + 500_000),
    ("ts", "1969-12-31T23:59:59.999999", -1),
    ("ts", datetime(2024, 1, 1), TS_2024),
    ("ts", date(2024, 1, 1), TS_2024),
    ("ts", TS_2024, TS_2024),
    ("tz", "2024-01-01T01:00:00+01:00", TS_2024),
    ("tz", "2024-01-01T00:00:00Z", TS_2024),
    ("tz", "2023-12-31T19:00:00-0500", TS_2024),
    ("tz", "2024-01-01", TS_2024),  # without a zone: UTC
    ("tz", datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))), TS_2024),
    ("tz", datetime(2024, 1, 1, tzinfo=UTC), TS_2024),
    ("s", "héllo", "héllo"),
    ("u", UID, UID),
    ("u", str(UID).upper(), UID),
    ("u", UID.bytes, UID),
    ("fx", b"ab", b"ab"),
    ("fx", bytearray(b"ab"), b"ab"),
    ("bin", b"", b""),
    ("b", True, True),
    ("b", "FALSE", False),
])
def test_literal_conversion(column: str, literal: Any, expected: Any) -> None:
    bound = bind(equal(column, literal), SCHEMA)
    assert isinstance(bound, BoundPredicate)
    assert bound.literal == expected
    assert type(bound.literal) is type(expected)
    if isinstance(expected, Decimal):
        assert bound.literal.as_tuple() == expected.as_tuple()  # exactly, at the column's scale


@pytest.mark.parametrize(("expr", "message"), [
    (equal("id", "abc"), "Cannot compare column 'id' (long) with 'abc': expected a number"),
    (equal("id", True), "Cannot compare column 'id' (long) with True"),
    (equal("missing", 1), "Cannot find column 'missing' in the schema"),
    (equal("ID", 1), "Cannot find column 'ID'"),
    (equal("dec", "1.2.3"), "Cannot compare column 'dec' (decimal(4,2)) with '1.2.3'"),
    (equal("f", "NaN"), "Cannot compare column 'f' (float)"),
    (equal("day", "2024-13-01"), "Cannot compare column 'day' (date) with '2024-13-01'"),
    (equal("day", datetime(2024, 1, 1)), "Cannot compare column 'day' (date)"),
    (equal("day", 1.5), "Cannot compare column 'day' (date) with 1.5"),
    (equal("t", "25:00"), "Cannot compare column 't' (time)"),
    (equal("ts", "2024-01-01T00:00:00+01:00"), "a timestamp (without zone) cannot have a zone"),
    (equal("ts", datetime(2024, 1, 1, tzinfo=UTC)), "cannot have a zone offset"),
    (equal("ts", "yesterday"), "expected a timestamp like"),
    (equal("s", 5), "Cannot compare column 's' (string) with 5: expected a string"),
    (equal("s", "\ud800"), "Cannot compare column 's' (string)"),
    (equal("u", "not-a-uuid"), "expected a UUID"),
    (equal("fx", b"abc"), "expected 2 bytes, got 3"),
    (equal("bin", "abc"), "expected bytes"),
    (equal("b", 1), "Cannot compare column 'b' (boolean) with 1"),
    (is_in("i", [1, "x"]), "Cannot compare column 'i' (int) with 'x'"),
    (Predicate(Op.IS_NAN, "i"), "Cannot use is_nan on column 'i' of type int"),
    (Predicate(Op.NOT_NAN, "s"), "Cannot use not_nan on column 's' of type string"),
    (Predicate(Op.STARTS_WITH, "i", ("1",)), "Cannot use starts_with on column 'i'"),
    (Predicate(Op.STARTS_WITH, "s", (1,)), "Cannot compare column 's' (string) with 1"),
    (equal("tags.element", "a"), "Cannot filter on column 'tags.element': it is inside a list"),
    (equal("props.key", "a"), "it is inside a list or map"),
    (Predicate(Op.IS_NULL, "opt"), "Cannot filter on column 'opt': struct is not a primitive"),
])
def test_binding_errors(expr: Expr, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bind(expr, SCHEMA)


def test_case_insensitive_binding() -> None:
    bound = bind(greater_than("MUST.Opt", 1), SCHEMA, case_sensitive=False)
    assert isinstance(bound, BoundPredicate)
    assert (bound.name, bound.field_id, bound.literal) == ("must.opt", 20, 1)
    assert bound.term.eval((1, None, None, None, None, None, None, None, None, None, None, None,
                            None, None, None, None, (3, 4))) == 4


def test_bound_types_are_distinct() -> None:
    bound = bind(less_than("i", 3), SCHEMA)
    assert isinstance(bound, BoundPredicate)
    assert bind(not_(less_than("i", 3)), SCHEMA) == bound.negate()
    assert rewrite_not(BoundNot(bound)) == BoundPredicate(Op.GT_EQ, bound.term, (3,))
    assert unbind(BoundNot(bound)) == not_(less_than("i", 3))
    with pytest.raises(ValidationError, match="not an unbound expression"):
        bind(bound, SCHEMA)  # type: ignore[arg-type]  # a bound expression on purpose
    assert bind(ALWAYS_TRUE, SCHEMA) is ALWAYS_TRUE
    assert bind(ALWAYS_FALSE, SCHEMA) is ALWAYS_FALSE


_COLUMNS = [(f"c{i}", t) for i, t in enumerate(TYPES)]
_WIDE_SCHEMA = Schema.of(*(NestedField.optional(i + 1, name, t)
                           for i, (name, t) in enumerate(_COLUMNS)))


@given(expressions(_COLUMNS))
def test_rebinding_bound_values_is_identity(expr: Expr) -> None:
    bound = bind(expr, _WIDE_SCHEMA)
    assert bind(unbind(bound), _WIDE_SCHEMA) == bound


_COMPARE: dict[Op, Callable[[Any, Any], bool]] = {
    Op.LT: operator.lt, Op.LT_EQ: operator.le, Op.GT: operator.gt, Op.GT_EQ: operator.ge,
    Op.EQ: operator.eq, Op.NOT_EQ: operator.ne}
_NUMERIC = [INT, LONG, PrimitiveType.decimal(9, 2), PrimitiveType.decimal(38, 4)]


@given(st.data(), st.sampled_from(_NUMERIC), st.sampled_from(list(_COMPARE)))
def test_numeric_binding_is_exact(data: st.DataObject, t: PrimitiveType, op: Op) -> None:
    """Whatever the literal (fractions, beyond the range), the bound predicate agrees with
    exact arithmetic on every value of the column."""
    schema = Schema.of(NestedField.optional(1, "x", t))
    literal = data.draw(literals(t))
    value = data.draw(literals(t).filter(lambda v: bind(equal("x", v), schema) != ALWAYS_FALSE))
    bound = bind(equal("x", value), schema)
    assert isinstance(bound, BoundPredicate)
    evaluator = RowEvaluator(schema, Predicate(op, "x", (literal,)))
    assert evaluator.eval((bound.literal,)) == _COMPARE[op](Decimal(bound.literal),
                                                            Decimal(literal))
    assert evaluator.eval((None,)) is False
