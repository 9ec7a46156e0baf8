"""The quickstart's dataset: deterministic click-stream events generated inside Spark.

Rows are computed from ``spark.range(start, start + count)`` by Spark SQL expressions only (no
Python worker, so generation costs about as much as reading the numbers), and every value is a
pure function of ``event_id``: the same ids give the same rows on every run and every machine.
This module does not import pyspark (only ``icepark.spark`` does, see DESIGN.md's layers): it
passes SQL expression text to the session it is handed.

The columns cover what the spec's *Nested Types* section describes ("A struct is a tuple of
typed values", "A list is a collection of values with some element type", "A map is a
collection of key-value pairs with a key type and a value type"):

===========  ===========================  =================================================
column       type                         values
===========  ===========================  =================================================
event_id     long, required               the range id
user_id      long, required               ``event_id * 7919 mod 50021``
ts           timestamptz, required        spread over the 30 days from 2024-06-01 (ms)
kind         string, required             view 50%, click 25%, purchase 10%, share 10%,
                                          spam 5% (:func:`kind_of`)
device       struct<os, version>          null for every 50th event
tags         list<string>                 zero to three tags
metrics      map<string, double>          ``duration_ms`` and ``score``
===========  ===========================  =================================================

>>> [kind_of(i) for i in range(5)]
['view', 'click', 'view', 'spam', 'click']
>>> sum(kind_of(i) == "spam" for i in range(1000))
50
"""

from __future__ import annotations

from typing import Any

from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)

SCHEMA = Schema.of(
    NestedField.required(1, "event_id", LONG),
    NestedField.required(2, "user_id", LONG),
    NestedField.required(3, "ts", TIMESTAMPTZ),
    NestedField.required(4, "kind", STRING),
    NestedField.optional(5, "device", StructType((
        NestedField.optional(6, "os", STRING),
        NestedField.optional(7, "version", STRING),
    ))),
    NestedField.optional(8, "tags", ListType(9, STRING, element_required=False)),
    NestedField.optional(10, "metrics", MapType(11, STRING, 12, DOUBLE, value_required=False)),
)
"""The table schema the quickstart creates."""

START_MS = 1_717_200_000_000
"""2024-06-01T00:00:00Z, the first possible event time."""
SPAN_MS = 30 * 86_400_000
KINDS = (("view", 10), ("click", 15), ("purchase", 17), ("share", 19), ("spam", 20))
"""Each kind with the exclusive upper bound of its share of ``13 * event_id mod 20``."""
COUNTRIES = ("de", "fr", "jp", "us", "br")


def kind_of(event_id: int) -> str:
    """The kind of an event, as the generator computes it (for checking results)."""
    r = 13 * event_id % 20
    return next(name for name, bound in KINDS if r < bound)


def count_kind(kind: str, n: int) -> int:
    """How many of the events ``0 .. n-1`` have ``kind`` (the kinds repeat every 20 ids).

    >>> count_kind("spam", 2_000_000), count_kind("view", 7)
    (100000, 3)
    """
    period = [kind_of(i) for i in range(20)]
    full, rest = divmod(n, 20)
    return full * period.count(kind) + period[:rest].count(kind)


def _kind_expression() -> str:
    cases = " ".join(f"WHEN pmod(id * 13, 20) < {bound} THEN '{name}'"
                     for name, bound in KINDS[:-1])
    return f"CASE {cases} ELSE '{KINDS[-1][0]}' END"


def _pick(values: tuple[str, ...], index: str) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"element_at(array({quoted}), CAST(pmod({index}, {len(values)}) + 1 AS INT))"


def events(spark: Any, start: int, count: int, *, version_field: str = "version",
           with_country: bool = False) -> Any:
    """A DataFrame of ``count`` events with ids from ``start`` (``spark`` is a
    ``SparkSession``, the result a ``DataFrame``).

    ``version_field`` names the device struct's second field (it is renamed during the
    quickstart); ``with_country`` adds the ``country`` column the quickstart adds later.
    """
    columns = [
        "id AS event_id",
        "pmod(id * 7919, 50021) AS user_id",
        f"timestamp_millis({START_MS} + pmod(id * 2654435761, {SPAN_MS})) AS ts",
        f"{_kind_expression()} AS kind",
        "CASE WHEN pmod(id, 50) = 0 THEN NULL ELSE named_struct("
        f"'os', {_pick(('android', 'ios', 'web', 'linux'), 'id')}, "
        f"'{version_field}', concat(CAST(pmod(id, 7) + 10 AS STRING), '.', "
        "CAST(pmod(id, 3) AS STRING))) END AS device",
        "slice(array('new', 'mobile', 'promo', 'beta'), CAST(pmod(id, 3) + 1 AS INT), "
        "CAST(pmod(id, 4) AS INT)) AS tags",
        "map('duration_ms', CAST(pmod(id * 31, 60000) AS DOUBLE), "
        "'score', CAST(pmod(id, 100) AS DOUBLE) / 100) AS metrics",
    ]
    if with_country:
        columns.append(f"{_pick(COUNTRIES, 'id * 3')} AS country")
    return spark.range(start, start + count).selectExpr(*columns)


__all__ = ["COUNTRIES", "KINDS", "SCHEMA", "count_kind", "events", "kind_of"]
