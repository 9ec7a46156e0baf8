"""Unbound expressions: the Op negation table, the simplifying combinators, NOT rewriting,
predicate validation, column references and printing."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given

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
    col,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    parse,
    rewrite_not,
    starts_with,
)
from icepark.spec.types import STRING
from tests.expressions.expr_strategies import expressions

A, B, C = equal("a", 1), equal("b", 2), equal("c", 3)

NEGATIONS = [
    (Op.IS_NULL, Op.NOT_NULL), (Op.IS_NAN, Op.NOT_NAN), (Op.LT, Op.GT_EQ), (Op.LT_EQ, Op.GT),
    (Op.EQ, Op.NOT_EQ), (Op.STARTS_WITH, Op.NOT_STARTS_WITH), (Op.IN, Op.NOT_IN),
]


@pytest.mark.parametrize(("op", "negated"), NEGATIONS)
def test_negation_table(op: Op, negated: Op) -> None:
    assert op.negate() is negated
    assert negated.negate() is op


def test_every_op_has_a_negation() -> None:
    assert {op.negate() for op in Op} == set(Op)
    assert [op.value for op in Op] == [
        "is_null", "not_null", "is_nan", "not_nan", "lt", "lt_eq", "gt", "gt_eq", "eq",
        "not_eq", "starts_with", "not_starts_with", "in", "not_in"]


@pytest.mark.parametrize(("factory", "args", "op", "literals"), [
    (equal, ("x", 1), Op.EQ, (1,)),
    (not_equal, ("x", 1), Op.NOT_EQ, (1,)),
    (less_than, ("x", 1), Op.LT, (1,)),
    (less_than_or_equal, ("x", 1), Op.LT_EQ, (1,)),
    (greater_than, ("x", 1), Op.GT, (1,)),
    (greater_than_or_equal, ("x", 1), Op.GT_EQ, (1,)),
    (is_null, ("x",), Op.IS_NULL, ()),
    (not_null, ("x",), Op.NOT_NULL, ()),
    (is_nan, ("x",), Op.IS_NAN, ()),
    (not_nan, ("x",), Op.NOT_NAN, ()),
    (is_in, ("x", [1, 2]), Op.IN, (1, 2)),
    (not_in, ("x", {3}), Op.NOT_IN, (3,)),
    (starts_with, ("x", "ab"), Op.STARTS_WITH, ("ab",)),
    (not_starts_with, ("x", "ab"), Op.NOT_STARTS_WITH, ("ab",)),
])
def test_factories(factory: Any, args: tuple[Any, ...], op: Op,
                   literals: tuple[Any, ...]) -> None:
    assert factory(*args) == Predicate(op, "x", literals)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Predicate(Op.EQ, "x", ()), "takes exactly one literal"),
    (lambda: Predicate(Op.EQ, "x", (1, 2)), "takes exactly one literal"),
    (lambda: Predicate(Op.IS_NULL, "x", (1,)), "takes no literal"),
    (lambda: equal("x", None), "use is_null"),
    (lambda: is_in("x", [1, None]), "use is_null"),
    (lambda: equal("x", float("nan")), "use is_nan"),
    (lambda: equal("x", Decimal("NaN")), "use is_nan"),
    (lambda: equal("x", Decimal("sNaN")), "use is_nan"),
    (lambda: equal("", 1), "must be a column name"),
    (lambda: Predicate("between", "x", (1,)), "Unknown predicate operator 'between'"),  # type: ignore[arg-type]  # a wrong op on purpose
    (lambda: is_in("x", "abc"), "Expected a collection"),
])
def test_invalid_predicates(make: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make()


def test_predicate_accepts_op_names() -> None:
    assert Predicate("lt", "x", (1,)) == less_than("x", 1)  # type: ignore[arg-type]  # str op
    assert less_than("x", 1).literal == 1
    with pytest.raises(ValidationError):
        _ = is_in("x", [1]).literal


@pytest.mark.parametrize(("expr", "expected"), [
    (and_(), ALWAYS_TRUE),
    (and_(A), A),
    (and_(A, ALWAYS_TRUE), A),
    (and_(ALWAYS_TRUE, A, B), And(A, B)),
    (and_(A, ALWAYS_FALSE, B), ALWAYS_FALSE),
    (and_(A, B, C), And(And(A, B), C)),
    (or_(), ALWAYS_FALSE),
    (or_(A, ALWAYS_FALSE), A),
    (or_(A, ALWAYS_TRUE), ALWAYS_TRUE),
    (or_(A, B), Or(A, B)),
    (not_(ALWAYS_TRUE), ALWAYS_FALSE),
    (not_(ALWAYS_FALSE), ALWAYS_TRUE),
    (not_(not_(A)), A),
    (not_(A), Not(A)),
    (A & B, And(A, B)),
    (A | ALWAYS_FALSE, A),
    (~A, Not(A)),
])
def test_combinators_simplify(expr: Expr, expected: Expr) -> None:
    assert expr == expected


def test_combinators_reject_non_expressions() -> None:
    with pytest.raises(ValidationError, match="Expected an unbound expression"):
        and_(A, True)  # type: ignore[arg-type]  # not an expression on purpose


@pytest.mark.parametrize(("expr", "expected"), [
    (not_(A), not_equal("a", 1)),
    (not_(and_(A, B)), or_(not_equal("a", 1), not_equal("b", 2))),
    (not_(or_(less_than("a", 1), is_null("b"))), and_(greater_than_or_equal("a", 1),
                                                       not_null("b"))),
    (not_(and_(A, not_(B))), or_(not_equal("a", 1), B)),
    (and_(A, not_(is_in("c", [1, 2]))), and_(A, not_in("c", [1, 2]))),
    (not_(starts_with("s", "x")), not_starts_with("s", "x")),
    (not_(is_nan("f")), not_nan("f")),
    (Not(ALWAYS_TRUE), ALWAYS_FALSE),
    (Not(Not(Not(A))), not_equal("a", 1)),
])
def test_rewrite_not(expr: Expr, expected: Expr) -> None:
    assert rewrite_not(expr) == expected


def _has_not(expr: Expr) -> bool:
    match expr:
        case Not():
            return True
        case And(left, right) | Or(left, right):
            return _has_not(left) or _has_not(right)
        case _:
            return False


@given(expressions([("a", STRING), ("b", STRING)]))
def test_rewrite_not_removes_every_not(expr: Expr) -> None:
    rewritten = rewrite_not(expr)
    assert not _has_not(rewritten)
    assert rewrite_not(rewritten) == rewritten
    assert rewrite_not(not_(not_(expr))) == rewritten


def test_reference_operators() -> None:
    x = col("x")
    assert (x < 1, x <= 1, x > 1, x >= 1) == (
        less_than("x", 1), less_than_or_equal("x", 1), greater_than("x", 1),
        greater_than_or_equal("x", 1))
    assert (x == 1) == equal("x", 1)
    assert (x != 1) == not_equal("x", 1)
    assert x.is_in([1]) == is_in("x", [1])
    assert x.not_in([1]) == not_in("x", [1])
    assert (x.is_null(), x.not_null(), x.is_nan(), x.not_nan()) == (
        is_null("x"), not_null("x"), is_nan("x"), not_nan("x"))
    assert (x.starts_with("a"), x.not_starts_with("a")) == (
        starts_with("x", "a"), not_starts_with("x", "a"))


@pytest.mark.parametrize(("expr", "text"), [
    (and_(or_(A, B), C), "(a = 1 OR b = 2) AND c = 3"),
    (or_(and_(A, B), C), "a = 1 AND b = 2 OR c = 3"),
    (not_(or_(A, B)), "NOT (a = 1 OR b = 2)"),
    (not_(not_(A)), "a = 1"),
    (equal("and", "it's"), "`and` = 'it''s'"),
    (equal("a b.c", 1), "`a b.c` = 1"),
    (equal("x", b"\x00\xff"), "x = X'00FF'"),
    (equal("x", Decimal("10.65")), "x = 10.65"),
    (equal("x", True), "x = TRUE"),
    (starts_with("x", "50%_\\"), "x LIKE '50\\%\\_\\\\%'"),
    (is_in("x", []), "x IN ()"),
    (ALWAYS_TRUE, "TRUE"),
])
def test_printing(expr: Expr, text: str) -> None:
    assert str(expr) == text
    assert str(parse(text)) == text


def test_printing_keeps_a_double_not() -> None:
    assert str(Not(Not(A))) == "NOT NOT a = 1"
    assert parse("NOT NOT a = 1") == A
