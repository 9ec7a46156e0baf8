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

import re
from collections.abc import Mapping

from icepark.errors import ValidationError


def int_property(properties: Mapping[str, str], key: str, default: int, *,
                 minimum: int | None = None, kind: str = "Table property") -> int:
    """The integer property ``key``, or ``default`` when it is not set; a value that is not an
    integer, or is below ``minimum``, raises :class:`ValidationError` naming the property (a
    ``kind``: ``Option`` for a reader's or writer's options)."""
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{kind} {key} must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ValidationError(f"{kind} {key} must be at least {minimum}, not {value}")
    return value


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str, flag: str) -> int:
    """A size in bytes: a number with an optional ``K``, ``M``, ``G`` or ``T`` (powers of
    1024) and an optional ``B`` (``256M``, ``1.5G``, Spark's ``10MB`` and ``10485760b``);
    :class:`ValidationError` naming ``flag`` (the option or setting) for anything else.

    >>> parse_size("256M", "--local-max"), parse_size("10MB", "x"), parse_size("10485760b", "x")
    (268435456, 10485760, 10485760)
    """
    match = _SIZE.match(text)
    if match is None:
        raise ValidationError(f"Invalid {flag} {text!r}: write a size such as 256M, 2G or 0")
    unit = " kmgt".index(match.group(2).lower() or " ")
    return int(float(match.group(1)) * 1024**unit)


GC_ENABLED = "gc.enabled"
"""Table property: whether files the table no longer references may be deleted (default
true). A table that references files it does not own (a snapshot of a directory) has it false,
so expiring its snapshots or purging it never deletes a data or delete file."""


def gc_enabled(properties: Mapping[str, str]) -> bool:
    """``gc.enabled``: true unless set to anything but ``true`` (as the reference
    implementation parses it, so a misspelt value never enables deletes).

    >>> gc_enabled({}), gc_enabled({"gc.enabled": "False"}), gc_enabled({"gc.enabled": "yes"})
    (True, False, False)
    """
    raw = properties.get(GC_ENABLED)
    return raw is None or raw.strip().lower() == "true"
