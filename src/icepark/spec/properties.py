"""Reading table properties: "Table properties are stored as a string map" (spec, *Table
Metadata Fields*: ``properties``), so numeric settings are parsed where they are used.

>>> int_property({"commit.retry.num-retries": "2"}, "commit.retry.num-retries", 4)
2
>>> int_property({}, "commit.retry.num-retries", 4)
4
>>> int_property({"read.split.lookback": "0"}, "read.split.lookback", 10, minimum=1)
Traceback (most recent call last):
...
icepark.errors.ValidationError: Table property read.split.lookback must be at least 1, not 0
"""

from __future__ import annotations

from collections.abc import Mapping

from icepark.errors import ValidationError


def int_property(properties: Mapping[str, str], key: str, default: int, *,
                 minimum: int | None = None) -> int:
    """The integer property ``key``, or ``default`` when it is not set; a value that is not an
    integer, or is below ``minimum``, raises :class:`ValidationError` naming the property."""
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"Table property {key} must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ValidationError(f"Table property {key} must be at least {minimum}, not {value}")
    return value
