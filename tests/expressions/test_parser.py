"""The filter parser: spec-style vectors (tests/expressions/vectors/filters.json), precedence,
errors naming the token and position, a print/parse round trip, and pyiceberg's parser as an
oracle."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg.expressions import parser as pyiceberg_parser

from icepark.errors import ValidationError
from icepark.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    Expr,
    Not,
    Op,
    Or,
    Predicate,
    and_,
    equal,
    greater_than,
    is_in,
    less_than,
    not_,
    or_,
    parse,
)

VECTORS = json.loads((Path(__file__).parent / "vectors" / "filters.json").read_text("utf-8"))


@pytest.mark.parametrize("case", VECTORS["parses"], ids=lambda c: c["filter"])
def test_parses(case: dict[str, Any]) -> None:
    assert str(parse(case["filter"])) == case["expected"]


@pytest.mark.parametrize("case", VECTORS["errors"], ids=lambda c: c["filter"] or "empty")
def test_errors_name_token_and_position(case: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        parse(case["filter"])
    assert case["message"] in str(info.value)
    assert str(info.value).startswith(f"Cannot parse filter {case['filter']!r}")


def test_literal_types_keep_the_text() -> None:
    assert parse("x = 10.65") == equal("x", Decimal("10.65"))
    parsed = parse("x = 10")
    assert isinstance(parsed, Predicate)
    assert isinstance(parsed.literal, int)
    assert parse("x = -0.5") == equal("x", Decimal("-0.5"))
    assert parse("x = 123456789012345678901234567890.123456789") == equal(
        "x", Decimal("123456789012345678901234567890.123456789"))
    assert parse("x = -123456789012345678901234567890.123456789") == equal(
        "x", Decimal("-123456789012345678901234567890.123456789"))
    assert parse("x IN ('a', 1, 1.5, TRUE, X'01')") == is_in(
        "x", ["a", 1, Decimal("1.5"), True, b"\x01"])


@pytest.mark.parametrize(("text", "expected"), [
    ("a = 1 OR b = 2 AND c = 3", or_(equal("a", 1), and_(equal("b", 2), equal("c", 3)))),
    ("a = 1 AND b = 2 OR c = 3", or_(and_(equal("a", 1), equal("b", 2)), equal("c", 3))),
    ("NOT a = 1 OR b = 2", or_(not_(equal("a", 1)), equal("b", 2))),
    ("NOT (a = 1 OR b = 2)", not_(or_(equal("a", 1), equal("b", 2)))),
    ("a = 1 AND NOT b = 2 AND c = 3", and_(equal("a", 1), not_(equal("b", 2)), equal("c", 3))),
    ("a < 1 or a > 2 and not (a = 5)", or_(less_than("a", 1),
                                           and_(greater_than("a", 2), not_(equal("a", 5))))),
    ("TRUE AND FALSE", ALWAYS_FALSE),
    ("NOT FALSE", ALWAYS_TRUE),
])
def test_precedence(text: str, expected: Expr) -> None:
    assert parse(text) == expected


_NAMES = st.one_of(
    st.from_regex(r"[a-z_][a-z0-9_]{0,4}(\.[a-z_][a-z0-9_]{0,3}){0,2}", fullmatch=True),
    st.text(alphabet="a b`\"'.é%", min_size=1, max_size=6),
    st.sampled_from(["and", "Or", "NOT", "null", "nan", "in", "like", "x.and"]),
)
_LITERALS = st.one_of(
    st.integers(), st.decimals(allow_nan=False, allow_infinity=False), st.booleans(),
    st.text(max_size=6), st.binary(max_size=3))
_OPS = [Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ]
_PREDICATES = st.one_of(
    st.builds(Predicate, st.sampled_from([Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN]),
              _NAMES),
    st.builds(lambda op, n, v: Predicate(op, n, (v,)), st.sampled_from(_OPS), _NAMES, _LITERALS),
    st.builds(lambda op, n, vs: Predicate(op, n, tuple(vs)), st.sampled_from([Op.IN, Op.NOT_IN]),
              _NAMES, st.lists(_LITERALS, max_size=3)),
    st.builds(lambda op, n, v: Predicate(op, n, (v,)),
              st.sampled_from([Op.STARTS_WITH, Op.NOT_STARTS_WITH]), _NAMES,
              st.text(alphabet="ab%_\\'", max_size=5)),
)
_EXPRESSIONS = st.recursive(
    _PREDICATES,
    lambda children: st.one_of(st.builds(And, children, children),
                               st.builds(Or, children, children),
                               st.builds(Not, children.filter(lambda e: not isinstance(e, Not)))),
    max_leaves=6)


@given(_EXPRESSIONS)
def test_print_then_parse_is_identity(expr: Expr) -> None:
    assert parse(str(expr)) == expr


# pyiceberg's parser as an oracle on the filters both accept.
_PYICEBERG_OPS = {
    "EqualTo": Op.EQ, "NotEqualTo": Op.NOT_EQ, "LessThan": Op.LT, "LessThanOrEqual": Op.LT_EQ,
    "GreaterThan": Op.GT, "GreaterThanOrEqual": Op.GT_EQ, "IsNull": Op.IS_NULL,
    "NotNull": Op.NOT_NULL, "IsNaN": Op.IS_NAN, "NotNaN": Op.NOT_NAN, "In": Op.IN,
    "NotIn": Op.NOT_IN, "StartsWith": Op.STARTS_WITH, "NotStartsWith": Op.NOT_STARTS_WITH,
}


def _from_pyiceberg(e: Any) -> Any:
    name = type(e).__name__
    match name:
        case "AlwaysTrue":
            return "TRUE"
        case "AlwaysFalse":
            return "FALSE"
        case "And" | "Or":
            return (name, _from_pyiceberg(e.left), _from_pyiceberg(e.right))
        case "Not":
            return ("Not", _from_pyiceberg(e.child))
    op = _PYICEBERG_OPS[name]
    if op.is_unary:
        return (op, e.term.name, ())
    if op.is_set:
        return _normal_set(op, e.term.name, [lit.value for lit in e.literals])
    return (op, e.term.name, (e.literal.value,))


def _normal_set(op: Op, name: str, values: list[Any]) -> Any:
    distinct = sorted(set(values), key=repr)
    if len(distinct) == 1:  # pyiceberg turns a one-value IN into =
        return (Op.EQ if op is Op.IN else Op.NOT_EQ, name, tuple(distinct))
    return (op, name, tuple(distinct))


def _ours(e: Expr) -> Any:
    match e:
        case And(left, right):
            return ("And", _ours(left), _ours(right))
        case Or(left, right):
            return ("Or", _ours(left), _ours(right))
        case Not(child):
            return ("Not", _ours(child))
        case Predicate(op, term, literals) if op.is_set:
            return _normal_set(op, term, list(literals))
        case Predicate(op, term, literals):
            return (op, term, literals)
        case _:
            return str(e)


@pytest.mark.parametrize("case", [c for c in VECTORS["parses"] if c["pyiceberg"]],
                         ids=lambda c: c["filter"])
def test_agrees_with_pyiceberg(case: dict[str, Any]) -> None:
    assert _ours(parse(case["filter"])) == _from_pyiceberg(pyiceberg_parser.parse(case["filter"]))
