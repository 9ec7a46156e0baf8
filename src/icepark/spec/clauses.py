"""Partition and sort clauses as people write them: ``"day(ts), bucket(16, id)"``, ``"k desc"``.

The transforms are the spec's (*Partition Transforms*): ``identity``, ``year``, ``month``,
``day``, ``hour``, ``bucket[N]``, ``truncate[W]`` and ``void``, written as functions of a column
as Spark SQL's ``PARTITIONED BY`` does (``years(ts)`` and ``bucket(16, id)`` too). Partition
fields get the reference implementation's default names. Bad clauses raise
:class:`~icepark.errors.ValidationError` naming the clause, as ``what`` calls it.

>>> split_clauses("day(ts), bucket(16, id),kind")
['day(ts)', 'bucket(16, id)', 'kind']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from icepark.errors import ValidationError
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.sorting import NullOrder, SortOrder, SortOrderBuilder
from icepark.spec.transforms import Transform

_CLAUSE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$")
_TRANSFORM_NAMES = {
    "identity": "identity", "year": "year", "years": "year", "month": "month",
    "months": "month", "day": "day", "days": "day", "hour": "hour", "hours": "hour",
    "void": "void", "bucket": "bucket", "truncate": "truncate",
}


def _clauses(text: str | Sequence[str]) -> list[str]:
    if isinstance(text, str):
        return split_clauses(text)
    return [clause for item in text for clause in split_clauses(item)]


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
    """One partition clause: a source column and the transform applied to it."""

    column: str
    transform: Transform


def parse_partition_clause(text: str, what: str = "partition_by") -> PartitionClause:
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
            raise _bad_partition(text, what, "write a column name or a transform such as day(ts)")
        return PartitionClause(text.strip(), Transform.identity())
    name, inner = match.group(1).lower(), match.group(2)
    kind = _TRANSFORM_NAMES.get(name)
    if kind is None:
        raise _bad_partition(text, what, f"unknown transform {name!r}; use identity, year, month, "
                                   "day, hour, bucket(N, col), truncate(W, col) or void")
    args = [a.strip() for a in inner.split(",")]
    if kind in ("bucket", "truncate"):
        if len(args) != 2:
            raise _bad_partition(text, what, f"{kind} needs a number and a column: {kind}(16, col)")
        numbers = [a for a in args if a.isdigit()]
        if len(numbers) != 1:
            raise _bad_partition(text, what, f"{kind} needs one positive whole number")
        column = args[1] if args[0] == numbers[0] else args[0]
        return PartitionClause(column, Transform.parse(f"{kind}[{numbers[0]}]"))
    if len(args) != 1 or not args[0]:
        raise _bad_partition(text, what, f"{kind} takes one column: {kind}(col)")
    return PartitionClause(args[0], Transform.parse(kind))


def _bad_partition(text: str, what: str, why: str) -> ValidationError:
    return ValidationError(f"Invalid {what} clause {text.strip()!r}: {why}")


def partition_spec(text: str | Sequence[str], schema: Schema,
                   what: str = "partition_by") -> PartitionSpec:
    """The partition spec that clauses such as ``"day(ts), bucket(16, id)"`` (or a list of
    them) describe for ``schema``; errors name the clauses as ``what``.

    >>> from icepark.spec.types import LONG, TIMESTAMPTZ, NestedField
    >>> schema = Schema.of(NestedField.required(1, "id", LONG),
    ...                    NestedField.required(2, "ts", TIMESTAMPTZ))
    >>> print(partition_spec(["day(ts)", "bucket(16, id)"], schema))
    [1000: ts_day: day(2), 1001: id_bucket: bucket[16](1)]
    """
    builder = PartitionSpecBuilder(schema)
    for clause in (parse_partition_clause(c, what) for c in _clauses(text)):
        source_id = schema.find_field_id(clause.column)
        if source_id is None:
            raise ValidationError(f"Invalid {what}: the table has no column "
                                  f"{clause.column!r} (columns: {_columns(schema)})")
        builder.add(source_id, clause.transform,
                    builder.default_name(schema.find_column_name(source_id) or clause.column,
                                         clause.transform))
    return builder.build()


def sort_order(text: str | Sequence[str], schema: Schema, what: str = "sort_order") -> SortOrder:
    """The sort order that clauses such as ``"ts desc, id"`` or ``"k DESC NULLS FIRST"`` (or a
    list of them) describe: a column, then ``asc`` (the default) or ``desc``, then
    ``nulls first`` or ``nulls last`` (default: first ascending, last descending, as the
    reference implementation sorts).

    >>> from icepark.spec.types import LONG, NestedField
    >>> print(sort_order("id desc", Schema.of(NestedField.required(1, "id", LONG))))
    1: [identity(1) desc nulls-last]
    >>> print(sort_order("id asc nulls last", Schema.of(NestedField.required(1, "id", LONG))))
    1: [identity(1) asc nulls-last]
    """
    builder = SortOrderBuilder(schema)
    for clause in _clauses(text):
        words = clause.split()
        lowered = [w.lower() for w in words]
        direction = lowered[1] if len(words) in (2, 4) else "asc"
        nulls = lowered[-2:] if len(words) in (3, 4) else None
        if (len(words) not in (1, 2, 3, 4) or direction not in ("asc", "desc")
                or (nulls is not None and (nulls[0] != "nulls"
                                           or nulls[1] not in ("first", "last")))):
            raise ValidationError(f"Invalid {what} clause {clause!r}: write 'column', "
                                  "'column asc' or 'column desc', optionally followed by "
                                  "'nulls first' or 'nulls last'")
        if schema.find_field_id(words[0]) is None:
            raise ValidationError(f"Invalid {what}: the table has no column {words[0]!r} "
                                  f"(columns: {_columns(schema)})")
        first = nulls[1] == "first" if nulls is not None else direction == "asc"
        null_order = NullOrder.NULLS_FIRST if first else NullOrder.NULLS_LAST
        if direction == "asc":
            builder.asc(words[0], null_order)
        else:
            builder.desc(words[0], null_order)
    return builder.build()


def _columns(schema: Schema) -> str:
    return ", ".join(f.name for f in schema.fields)
