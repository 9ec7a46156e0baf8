"""Fuzzing the filter parser: any text gives an expression or a ``ValidationError``.

Inputs: random text (grammar characters, odd unicode: surrogates, combining marks, other
scripts' digits and spaces), soups of the grammar's tokens, mutations of valid filters (the
vectors of ``vectors/filters.json`` and printed random expressions), nesting far past the limits
(10,000 parentheses, ``NOT`` or ``AND`` terms) and huge literals. Each parse must return or raise
``ValidationError`` within a time bound, and whatever parses must print and parse back to
itself (``parse(str(e)) == e``).

Per run: ``test_random_text`` tries 600 texts, ``test_token_soup`` 600, ``test_mutated_filters``
800, ``test_deep_nesting`` 60, ``test_long_chains`` 60 and ``test_huge_literals`` 40;
``ICEPARK_FUZZ_EXAMPLES`` runs more (see :mod:`tests.fuzzing`).
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.expressions import Expr, parse
from icepark.expressions.parser import MAX_DEPTH, MAX_NESTING
from icepark.spec.types import BINARY, BOOLEAN, INT, LONG, STRING
from tests.expressions.expr_strategies import DECIMAL, expressions
from tests.fuzzing import Hang, fuzz_settings, time_bound

VECTORS = json.loads((Path(__file__).parent / "vectors" / "filters.json").read_text("utf-8"))
VALID = [c["filter"] for c in VECTORS["parses"]]
INVALID = [c["filter"] for c in VECTORS["errors"]]
TIME_BOUND = 5.0  # seconds per parse; a parse takes microseconds

_ODD = ("\x00\t\n\r\x0b\x0c\u00a0\u2028\u3000\ufeff\u0301\u0661\u06f5\uff11\u00b2\u2167"
        "\ud800\udfff\U0001f600\U0010ffff\u0130\u017f\u212a\u00df")
_GRAMMAR = "abcxyzABCXYZ_$0123456789 .,()'`\"+-<>=!%\\eE"
_TOKENS = ["a", "b.c", "`x y`", '"q"', "``", '""', "AND", "OR", "NOT", "IN", "IS", "NULL",
           "NaN", "LIKE", "BETWEEN", "TRUE", "FALSE", "(", ")", ",", ".", "+", "-", "=", "==",
           "!=", "<>", "<", "<=", ">", ">=", "!", "1", "-0", "1.5", "1e3", "2.5E-3", "07",
           "'s'", "''", "'it''s'", "'a%'", "'%'", "'\\%'", "'unterminated", "X'0a'", "x'abc'",
           "X''", "1e99999999999", "9" * 50, "\u0661", "\u00e9", "\ud800"]


def check(text: str) -> Expr | None:
    """Parse ``text``: an expression, or None after a ``ValidationError``; anything else (or
    a hang) fails. A parsed expression must print and parse back to itself."""
    try:
        with time_bound(TIME_BOUND, f"parsing {text[:80]!r}"):
            try:
                expr = parse(text)
            except ValidationError as e:
                assert str(e).startswith("Cannot parse filter"), e
                return None
            printed = str(expr)
            assert parse(printed) == expr, f"{text!r} printed as {printed!r} parses differently"
            return expr
    except Hang as e:
        raise AssertionError(str(e)) from None
    except (AssertionError, ValidationError):
        raise
    except Exception as e:
        raise AssertionError(f"parse({text[:200]!r}) raised {type(e).__name__}: {e!s:.200} "
                             "(not a ValidationError)") from e


@fuzz_settings(600)
@given(st.text(alphabet=st.one_of(st.sampled_from(_GRAMMAR), st.sampled_from(_ODD),
                                  st.characters()), max_size=60))
def test_random_text(text: str) -> None:
    check(text)


@fuzz_settings(600)
@given(st.lists(st.sampled_from(_TOKENS), max_size=14), st.sampled_from([" ", "", "\t"]))
def test_token_soup(tokens: list[str], separator: str) -> None:
    check(separator.join(tokens))


_COLUMNS = [("a", INT), ("b", LONG), ("s", STRING), ("d", DECIMAL), ("bin", BINARY),
            ("flag", BOOLEAN)]
_FILTERS = st.one_of(st.sampled_from(VALID + INVALID),
                     expressions(_COLUMNS).map(str))


@st.composite
def mutated_filters(draw: st.DrawFn) -> str:
    """A valid (or known invalid) filter with characters or tokens deleted, inserted,
    duplicated or swapped."""
    text = draw(_FILTERS)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 8)))
        match draw(st.sampled_from(["delete", "insert", "token", "duplicate", "swap"])):
            case "delete":
                text = text[:i] + text[j:]
            case "insert":
                text = text[:i] + draw(st.text(alphabet=_GRAMMAR + _ODD, max_size=3)) + text[i:]
            case "token":
                text = f"{text[:i]} {draw(st.sampled_from(_TOKENS))} {text[i:]}"
            case "duplicate":
                text = text[:j] + text[i:j] + text[j:]
            case "swap":
                text = text[i:] + text[:i]
    return text


@fuzz_settings(800)
@given(mutated_filters())
def test_mutated_filters(text: str) -> None:
    check(text)


@fuzz_settings(60)
@given(st.sampled_from(["(", "NOT ", "NOT (", "(NOT "]), st.integers(0, 10_000))
def test_deep_nesting(opener: str, depth: int) -> None:
    """Nesting past the limit is a ``ValidationError``, never a ``RecursionError``."""
    closer = ")" * opener.count("(")
    parsed = check(opener * depth + "a = 1" + closer * depth)
    levels = depth * (1 + (opener.strip() not in ("(", "NOT")))
    assert (parsed is not None) == (levels <= MAX_NESTING)


@fuzz_settings(60)
@given(st.sampled_from(["AND", "OR", "and", "AND NOT"]), st.integers(1, 10_000))
def test_long_chains(keyword: str, terms: int) -> None:
    """A run of ``terms`` conjuncts or disjuncts parses up to the depth limit."""
    parsed = check(f" {keyword} ".join(f"c{i % 7} = {i}" for i in range(terms)))
    assert (parsed is not None) == (terms - 1 <= MAX_DEPTH)


@fuzz_settings(40)
@given(st.sampled_from(["a = {}", "a > -{}", "a IN (1, {})", "{} < a", "a = {}.5",
                        "a = 1e{}", "a = 0.{}", "a = +{}", "a BETWEEN 1 AND {}"]),
       st.sampled_from([1, 4299, 4300, 4301, 10_000, 100_000]))
def test_huge_literals(template: str, digits: int) -> None:
    check(template.format("9" * digits))


def test_the_deepest_accepted_filter_prints_and_binds_back() -> None:
    """The limits leave room on the stack for whatever walks the parsed expression."""
    assert check("(" * MAX_NESTING + "a = 1" + ")" * MAX_NESTING) is not None
    assert check(" OR ".join(f"a = {i}" for i in range(MAX_DEPTH + 1))) is not None
    assert check(" OR ".join(f"a = {i}" for i in range(MAX_DEPTH + 2))) is None
