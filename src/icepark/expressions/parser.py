"""A small SQL-like filter syntax, as users write a scan's ``row_filter``.

Grammar (keywords in any case; ``NOT`` binds tighter than ``AND``, which binds tighter than
``OR``)::

    filter    := or
    or        := and ("OR" and)*
    and       := not ("AND" not)*
    not       := "NOT" not | "(" or ")" | "TRUE" | "FALSE" | predicate
    predicate := column ( comparison literal
                        | ["NOT"] "IN" "(" [literal ("," literal)*] ")"
                        | "IS" ["NOT"] ("NULL" | "NAN")
                        | ["NOT"] "LIKE" string
                        | ["NOT"] "BETWEEN" literal "AND" literal )
               | literal comparison column
    comparison := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    column    := name ("." name)*         name: identifier, `back quoted` or "double quoted"
    literal   := string | ["-" | "+"] number | "TRUE" | "FALSE" | X'hex'

Parentheses and ``NOT`` nest at most :data:`MAX_NESTING` deep, and the expression parsed is at
most :data:`MAX_DEPTH` ``AND``/``OR``/``NOT`` levels deep (a longer run of ``OR`` is better
written with ``IN``); deeper input raises ``ValidationError``, as every other malformed filter
does.

Strings are single-quoted with ``''`` for a quote. Numbers keep their text: an integer is an
``int`` and anything with a point or exponent a ``Decimal``, so ``10.65`` binds to a decimal
column exactly. ``LIKE 'abc%'`` is ``starts_with`` (``\\%``, ``\\_`` and ``\\\\`` escape), a
pattern without wildcards is ``=``; other patterns cannot be pushed down and are rejected.

>>> print(parse("ts >= '2024-01-01' AND name LIKE 'a%' OR NOT (id IN (1, 2) AND x IS NULL)"))
ts >= '2024-01-01' AND name LIKE 'a%' OR NOT (id IN (1, 2) AND x IS NULL)
>>> parse("price < 10.65").literal
Decimal('10.65')
>>> try:
...     parse("a = 1 AND OR b = 2")
... except ValidationError as e:
...     print(e)
Cannot parse filter 'a = 1 AND OR b = 2': expected a column name at position 10, found 'OR'
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.expr import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    KEYWORDS,
    And,
    Expr,
    Not,
    Op,
    Or,
    Predicate,
    and_,
    not_,
    or_,
)

MAX_NESTING = 100
"""How deep parentheses and ``NOT`` may nest (the parser recurses four frames a level)."""
MAX_DEPTH = 300
"""How many ``AND``/``OR``/``NOT`` levels an expression may have: expressions are walked
recursively, and Python's stack holds about a thousand frames."""

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<hex>[xX]'[0-9a-fA-F]*')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<backquoted>`(?:[^`]|``)*`)
  | (?P<doublequoted>"(?:[^"]|"")*")
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),.+-])
""", re.VERBOSE)
_FLIPPED = {Op.EQ: Op.EQ, Op.NOT_EQ: Op.NOT_EQ, Op.LT: Op.GT, Op.LT_EQ: Op.GT_EQ, Op.GT: Op.LT,
            Op.GT_EQ: Op.LT_EQ}
_COMPARISONS = {"=": Op.EQ, "==": Op.EQ, "!=": Op.NOT_EQ, "<>": Op.NOT_EQ, "<": Op.LT,
                "<=": Op.LT_EQ, ">": Op.GT, ">=": Op.GT_EQ}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, string, hex, ident, quoted, op, punct, end
    text: str
    position: int
    value: Any = None


def parse(text: str) -> Expr:
    """Parse a filter into an unbound expression (see the module docstring for the syntax).

    Raises :class:`ValidationError` naming the offending token and its position (0-based).
    """
    if not isinstance(text, str):
        raise ValidationError(f"A filter must be a string, not {type(text).__name__}")
    return _Parser(text).parse()


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        m = _TOKEN.match(text, position)
        if m is None:
            char = text[position]
            what = ("an unterminated quote" if char in "'`\""
                    else f"an unexpected character {char!r}")
            raise ValidationError(f"Cannot parse filter {text!r}: {what} at position {position}")
        kind, raw = m.lastgroup or "", m.group()
        match kind:
            case "number":
                value: Any = _number(text, raw, position)
            case "string":
                value = raw[1:-1].replace("''", "'")
            case "hex":
                if (len(raw) - 3) % 2:
                    raise ValidationError(f"Cannot parse filter {text!r}: {raw} at position "
                                          f"{position} needs an even number of hex digits")
                value = bytes.fromhex(raw[2:-1])
            case "backquoted" | "doublequoted":
                kind, value = "quoted", raw[1:-1].replace(raw[0] * 2, raw[0])
            case _:
                value = raw
        if kind != "space":
            tokens.append(_Token(kind, raw, position, value))
        position = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


def _number(text: str, raw: str, position: int) -> int | Decimal:
    """An integer, or a ``Decimal`` if it has a point or an exponent."""
    try:
        if set(raw) & set(".eE"):
            value = Decimal(raw)
            if not value.is_finite():
                raise InvalidOperation
            return value
        return int(raw)
    except (ValueError, InvalidOperation):  # too many digits, too large an exponent
        limit = sys.get_int_max_str_digits()
        raise ValidationError(f"Cannot parse filter {_shown(text)}: the number at position "
                              f"{position} is too large (at most {limit} digits, and an "
                              "exponent within a Decimal's range)") from None


def _shown(text: str) -> str:
    """The filter quoted, cut short when long."""
    return repr(text) if len(text) <= 200 else f"{text[:200]!r}..."


def _depth(expr: Expr) -> int:
    """How many ``AND``/``OR``/``NOT`` levels ``expr`` has (walked without recursion)."""
    deepest = 0
    stack = [(expr, 0)]
    while stack:
        e, depth = stack.pop()
        deepest = max(deepest, depth)
        match e:
            case And(left, right) | Or(left, right):
                stack += [(left, depth + 1), (right, depth + 1)]
            case Not(child):
                stack.append((child, depth + 1))
    return deepest


class _Parser:
    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = _tokenize(text)
        self._index = 0
        self._nesting = 0

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _next(self) -> _Token:
        token = self._tokens[self._index]
        self._index = min(self._index + 1, len(self._tokens) - 1)
        return token

    def _keyword(self, *words: str) -> str | None:
        """Consume the next token if it is one of the (unquoted) keywords ``words``."""
        token = self._peek()
        if token.kind == "ident" and token.text.upper() in words:
            self._next()
            return token.text.upper()
        return None

    def _punct(self, char: str) -> bool:
        if self._peek().kind == "punct" and self._peek().text == char:
            self._next()
            return True
        return False

    def _error(self, expected: str, token: _Token | None = None) -> ValidationError:
        token = token or self._peek()
        found = "end of input" if token.kind == "end" else repr(token.text)
        return ValidationError(f"Cannot parse filter {self._text!r}: expected {expected} at "
                               f"position {token.position}, found {found}")

    def _expect(self, char: str, expected: str) -> None:
        if not self._punct(char):
            raise self._error(expected)

    def parse(self) -> Expr:
        expr = self._or()
        if self._peek().kind != "end":
            raise self._error("AND, OR or the end of the filter")
        if _depth(expr) > MAX_DEPTH:
            raise ValidationError(
                f"Cannot parse filter {_shown(self._text)}: it nests more than {MAX_DEPTH} "
                "AND/OR/NOT deep; write a long run of OR on one column with IN (...)")
        return expr

    def _or(self) -> Expr:
        expr = self._and()
        while self._keyword("OR"):
            expr = or_(expr, self._and())
        return expr

    def _and(self) -> Expr:
        expr = self._not()
        while self._keyword("AND"):
            expr = and_(expr, self._not())
        return expr

    def _not(self) -> Expr:
        token = self._peek()
        if token.kind in ("ident", "punct") and token.text.upper() in ("NOT", "("):
            self._nesting += 1
            if self._nesting > MAX_NESTING:
                raise ValidationError(
                    f"Cannot parse filter {_shown(self._text)}: parentheses and NOT nest more "
                    f"than {MAX_NESTING} deep at position {token.position}")
            try:
                return self._nested()
            finally:
                self._nesting -= 1
        return self._leaf()

    def _nested(self) -> Expr:
        if self._keyword("NOT"):
            return not_(self._not())
        self._expect("(", "'('")
        expr = self._or()
        self._expect(")", "')'")
        return expr

    def _leaf(self) -> Expr:
        match self._keyword("TRUE", "FALSE"):
            case "TRUE":
                return ALWAYS_TRUE
            case "FALSE":
                return ALWAYS_FALSE
        token = self._peek()
        if token.kind in ("number", "string", "hex") or token.text in ("-", "+"):
            value = self._literal()  # literal op column: flip the comparison
            operator = self._next()
            if operator.kind != "op":
                raise self._error("a comparison after a literal", operator)
            return Predicate(_FLIPPED[_COMPARISONS[operator.text]], self._column(), (value,))
        return self._predicate(self._column())

    def _column(self) -> str:
        parts = [self._name()]
        while self._punct("."):
            parts.append(self._name())
        return ".".join(parts)

    def _name(self) -> str:
        token = self._next()
        if token.kind == "quoted" and token.value:
            return str(token.value)
        if token.kind == "ident" and token.text.upper() not in KEYWORDS:
            return token.text
        raise self._error("a column name", token)

    def _predicate(self, column: str) -> Expr:
        token = self._peek()
        if token.kind == "op":
            self._next()
            return Predicate(_COMPARISONS[token.text], column, (self._literal(),))
        if self._keyword("IS"):
            negated = self._keyword("NOT") is not None
            match self._keyword("NULL", "NAN"):
                case "NULL":
                    return Predicate(Op.NOT_NULL if negated else Op.IS_NULL, column)
                case "NAN":
                    return Predicate(Op.NOT_NAN if negated else Op.IS_NAN, column)
            raise self._error("NULL or NAN")
        negated = self._keyword("NOT") is not None
        if self._keyword("IN"):
            return Predicate(Op.NOT_IN if negated else Op.IN, column, self._literal_list())
        if self._keyword("LIKE"):
            pattern = self._next()
            if pattern.kind != "string":
                raise self._error("a quoted LIKE pattern", pattern)
            return self._like(column, pattern, negated)
        if self._keyword("BETWEEN"):
            low = self._literal()
            if not self._keyword("AND"):
                raise self._error("AND in BETWEEN")
            between = and_(Predicate(Op.GT_EQ, column, (low,)),
                           Predicate(Op.LT_EQ, column, (self._literal(),)))
            return not_(between) if negated else between
        expected = "IN, LIKE or BETWEEN" if negated else "a comparison, IN, IS, LIKE or BETWEEN"
        raise self._error(f"{expected} after column {column!r}")

    def _literal_list(self) -> tuple[Any, ...]:
        self._expect("(", "'(' after IN")
        values: list[Any] = []
        if not self._punct(")"):
            values.append(self._literal())
            while self._punct(","):
                values.append(self._literal())
            self._expect(")", "',' or ')'")
        return tuple(values)

    def _literal(self) -> Any:
        token = self._next()
        if token.kind == "punct" and token.text in "+-":
            number = self._next()
            if number.kind != "number":
                raise self._error("a number", number)
            if token.text == "+":
                return number.value
            value = number.value  # Decimal negation rounds to 28 digits; copy_negate is exact
            return value.copy_negate() if isinstance(value, Decimal) else -value
        if token.kind in ("number", "string", "hex"):
            return token.value
        if token.kind == "ident":
            match token.text.upper():
                case "TRUE" | "FALSE":
                    return token.text.upper() == "TRUE"
                case "NULL" | "NAN" as word:
                    raise ValidationError(
                        f"Cannot parse filter {self._text!r}: {token.text} at position "
                        f"{token.position} is not a literal; use IS {word} or IS NOT {word}")
        raise self._error("a literal", token)

    def _like(self, column: str, token: _Token, negated: bool) -> Expr:
        """``LIKE 'prefix%'`` is starts_with; a pattern without wildcards is equality."""
        pattern: str = token.value
        prefix: list[str] = []
        index = 0
        while index < len(pattern):
            char = pattern[index]
            if char == "\\" and index + 1 < len(pattern):
                prefix.append(pattern[index + 1])
                index += 2
            elif char in "%_\\":
                break
            else:
                prefix.append(char)
                index += 1
        rest = pattern[index:]
        if not rest:
            return Predicate(Op.NOT_EQ if negated else Op.EQ, column, ("".join(prefix),))
        if set(rest) == {"%"}:
            op = Op.NOT_STARTS_WITH if negated else Op.STARTS_WITH
            return Predicate(op, column, ("".join(prefix),))
        raise ValidationError(
            f"Cannot parse filter {self._text!r}: LIKE pattern {token.text} at position "
            f"{token.position} is not supported; only a prefix pattern such as 'abc%' (a "
            "trailing %) can be filtered on")
