"""Parsing of the ``icepark`` command's argument values: ``key=value`` pairs, partition and sort
clauses, timestamps and durations. Each bad value raises a
:class:`~icepark.errors.ValidationError` that names the flag and the value.

>>> key_values(["owner=ana", "write.format.default=parquet"], "--property")
{'owner': 'ana', 'write.format.default': 'parquet'}
>>> split_clauses("day(ts), bucket(16, id),kind")
['day(ts)', 'bucket(16, id)', 'kind']
>>> parse_timestamp_ms("2024-03-01T00:00:00Z", "--as-of")
1709251200000
>>> parse_timestamp_ms("1709251200000", "--as-of")
1709251200000
>>> parse_duration_ms("7d", "--older-than")
604800000
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from icepark.errors import ValidationError
from icepark.spec.partitioning import (
    PartitionSpec,
    PartitionSpecBuilder,
    default_partition_name,
)
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder, SortOrderBuilder
from icepark.spec.transforms import Transform

_CLAUSE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)\s*$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
                "w": 604_800_000}
_TRANSFORM_NAMES = {
    "identity": "identity", "year": "year", "years": "year", "month": "month",
    "months": "month", "day": "day", "days": "day", "hour": "hour", "hours": "hour",
    "void": "void", "bucket": "bucket", "truncate": "truncate",
}


def key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """``key=value`` strings as a dict; a missing ``=`` or an empty key is an error."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"Invalid {flag} {item!r}: write key=value")
        pairs[key.strip()] = value
    return pairs


def split_clauses(text: str) -> list[str]:
    """Split ``text`` on the commas that are not inside parentheses."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


@dataclass(frozen=True, slots=True)
class PartitionClause:
    """One ``--partition-by`` clause: a source column and the transform applied to it."""

    column: str
    transform: Transform


def parse_partition_clause(text: str) -> PartitionClause:
    """``kind``, ``day(ts)``, ``days(ts)``, ``bucket(16, id)``, ``truncate(4, name)`` (the
    width may come first or last), ``identity(kind)`` or ``void(x)``.

    >>> parse_partition_clause("bucket(16, id)")
    PartitionClause(column='id', transform=bucket[16])
    >>> parse_partition_clause("truncate(name, 4)"), parse_partition_clause("days(ts)")
    (PartitionClause(column='name', transform=truncate[4]), PartitionClause(column='ts', \
transform=day))
    """
    match = _CLAUSE.match(text)
    if match is None:
        if not text.strip() or any(c in text for c in "()[], "):
            raise _bad_partition(text, "write a column name or a transform such as day(ts)")
        return PartitionClause(text.strip(), Transform.identity())
    name, inner = match.group(1).lower(), match.group(2)
    kind = _TRANSFORM_NAMES.get(name)
    if kind is None:
        raise _bad_partition(text, f"unknown transform {name!r}; use identity, year, month, "
                                   "day, hour, bucket(N, col), truncate(W, col) or void")
    args = [a.strip() for a in inner.split(",")]
    if kind in ("bucket", "truncate"):
        if len(args) != 2:
            raise _bad_partition(text, f"{kind} needs a number and a column: {kind}(16, col)")
        numbers = [a for a in args if a.isdigit()]
        if len(numbers) != 1:
            raise _bad_partition(text, f"{kind} needs one positive whole number")
        column = args[1] if args[0] == numbers[0] else args[0]
        return PartitionClause(column, Transform.parse(f"{kind}[{numbers[0]}]"))
    if len(args) != 1 or not args[0]:
        raise _bad_partition(text, f"{kind} takes one column: {kind}(col)")
    return PartitionClause(args[0], Transform.parse(kind))


def _bad_partition(text: str, why: str) -> ValidationError:
    return ValidationError(f"Invalid --partition-by clause {text.strip()!r}: {why}")


def partition_spec(text: str | None, schema: Schema) -> PartitionSpec | None:
    """The partition spec ``--partition-by`` describes for ``schema`` (None without one)."""
    if text is None:
        return None
    builder = PartitionSpecBuilder(schema)
    for clause in (parse_partition_clause(c) for c in split_clauses(text)):
        source_id = schema.find_field_id(clause.column)
        if source_id is None:
            raise ValidationError(f"Invalid --partition-by: the table has no column "
                                  f"{clause.column!r} (columns: {_columns(schema)})")
        builder.add(source_id, clause.transform,
                    default_partition_name(schema.find_column_name(source_id) or clause.column,
                                           clause.transform))
    return builder.build()


def sort_order(text: str | None, schema: Schema) -> SortOrder | None:
    """The sort order ``--sort-by "ts desc, id"`` describes (None without one).

    >>> from icepark.spec.types import LONG, NestedField
    >>> print(sort_order("id desc", Schema.of(NestedField.required(1, "id", LONG))))
    1: [identity(1) desc nulls-last]
    """
    if text is None:
        return None
    builder = SortOrderBuilder(schema)
    for clause in split_clauses(text):
        words = clause.split()
        direction = words[1].lower() if len(words) == 2 else "asc"
        if len(words) not in (1, 2) or direction not in ("asc", "desc"):
            raise ValidationError(f"Invalid --sort-by clause {clause!r}: write 'column', "
                                  "'column asc' or 'column desc'")
        if schema.find_field_id(words[0]) is None:
            raise ValidationError(f"Invalid --sort-by: the table has no column {words[0]!r} "
                                  f"(columns: {_columns(schema)})")
        if direction == "asc":
            builder.asc(words[0])
        else:
            builder.desc(words[0])
    return builder.build()


def _columns(schema: Schema) -> str:
    return ", ".join(f.name for f in schema.fields)


def parse_timestamp_ms(text: str, flag: str) -> int:
    """Milliseconds since the epoch from an integer or an ISO 8601 date/time (UTC unless it
    carries an offset)."""
    stripped = text.strip()
    if re.fullmatch(r"-?\d{9,}", stripped):
        return int(stripped)
    try:
        moment = dt.datetime.fromisoformat(stripped)
    except ValueError:
        raise ValidationError(
            f"Invalid {flag} {text!r}: write an ISO 8601 time such as 2024-03-01T12:00:00Z "
            "or milliseconds since the epoch") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def parse_duration_ms(text: str, flag: str) -> int:
    """A duration such as ``90s``, ``15m``, ``12h``, ``7d`` or ``2w`` in milliseconds."""
    match = _DURATION.match(text.lower())
    if match is None:
        raise ValidationError(f"Invalid {flag} {text!r}: write a duration such as 7d, 12h, "
                              "30m, or a time (ISO 8601 or epoch milliseconds)")
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


def parse_before(text: str, flag: str, now_ms: int) -> int:
    """A point in time given as a time, or as a duration back from ``now_ms``."""
    if _DURATION.match(text.lower()):
        return now_ms - parse_duration_ms(text, flag)
    return parse_timestamp_ms(text, flag)


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts that must be at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, not {value}")
    return value
