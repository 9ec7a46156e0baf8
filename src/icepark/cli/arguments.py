"""Parsing of the ``icepark`` command's argument values: ``key=value`` pairs, partition and sort
clauses (:mod:`icepark.spec.clauses`), timestamps and durations. Each bad value raises a
:class:`~icepark.errors.ValidationError` that names the flag and the value.

>>> key_values(["owner=ana", "write.format.default=parquet"], "--property")
{'owner': 'ana', 'write.format.default': 'parquet'}
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

from icepark.errors import ValidationError
from icepark.spec import clauses
from icepark.spec.partitioning import (
    PartitionSpec,
)
from icepark.spec.schema import Schema
from icepark.spec.sorting import SortOrder

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)\s*$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
                "w": 604_800_000}


def key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """``key=value`` strings as a dict; a missing ``=`` or an empty key is an error."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"Invalid {flag} {item!r}: write key=value")
        pairs[key.strip()] = value
    return pairs


def partition_spec(text: str | None, schema: Schema) -> PartitionSpec | None:
    """The partition spec ``--partition-by`` describes for ``schema`` (None without one)."""
    return None if text is None else clauses.partition_spec(text, schema, "--partition-by")


def sort_order(text: str | None, schema: Schema) -> SortOrder | None:
    """The sort order ``--sort-by "ts desc, id"`` describes (None without one)."""
    return None if text is None else clauses.sort_order(text, schema, "--sort-by")


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
