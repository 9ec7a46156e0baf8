"""Output of the ``icepark`` command: text for people, JSON for scripts, progress on stderr.

Every command renders through one :class:`Output`: with ``--json`` it prints exactly one JSON
document on stdout (``query`` prints JSON lines, one object per row); without it, aligned text.
Progress lines go to stderr and are silent with ``--json`` or ``--quiet``; so are the progress bars
of long Spark work (:mod:`icepark.cli.progress`), drawn only when stderr is a terminal.

>>> plain({"ts": dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC), "n": Decimal("1.50"),
...        "b": b"\\x01\\xff", "m": [("k", 1)], "f": float("nan")})
{'ts': '2024-03-01T09:30:00+00:00', 'n': '1.50', 'b': '01ff', 'm': {'k': 1}, 'f': 'NaN'}
>>> print(text_table(["id", "kind"], [[1, "click"], [22, None]]))
id  kind
--  -----
 1  click
22  null
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TextIO


def plain(value: Any) -> Any:
    """``value`` as JSON-ready Python: timestamps as ISO 8601, decimals and UUIDs as strings,
    binary as hex, maps (Arrow's lists of key/value tuples) as objects, NaN and infinities as
    the strings ``NaN``, ``Infinity`` and ``-Infinity``."""
    match value:
        case None | bool() | int() | str():
            return value
        case float():
            if math.isnan(value):
                return "NaN"
            if math.isinf(value):
                return "Infinity" if value > 0 else "-Infinity"
            return value
        case dt.datetime() | dt.date() | dt.time():
            return value.isoformat()
        case Decimal() | uuid.UUID():
            return str(value)
        case bytes() | bytearray() | memoryview():
            return bytes(value).hex()
        case Mapping():
            return {str(k): plain(v) for k, v in value.items()}
        case list() | tuple() if value and all(
                isinstance(item, tuple) and len(item) == 2 for item in value):
            return {str(plain(k)): plain(v) for k, v in value}
        case list() | tuple():
            return [plain(item) for item in value]
        case _:
            return str(value)


def cell(value: Any) -> str:
    """One value as text in a table cell: ``null`` for None, nested values as compact JSON."""
    if value is None:
        return "null"
    shown = plain(value)
    if isinstance(shown, dict | list):
        return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)
    if isinstance(shown, bool):
        return "true" if shown else "false"
    return str(shown)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def text_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Rows as an aligned text table under a header; numbers are right-aligned."""
    body = [list(row) for row in rows]
    cells = [[cell(v) for v in row] for row in body]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for raw, row in zip(body, cells, strict=True):
        lines.append("  ".join(
            text.rjust(w) if _numeric(value) else text.ljust(w)
            for value, text, w in zip(raw, row, widths, strict=True)).rstrip())
    return "\n".join(lines)


class Output:
    """Where a command's results and progress go (stdout and stderr by default)."""

    def __init__(self, json_mode: bool, out: TextIO | None = None,
                 err: TextIO | None = None, *, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self._out = out or sys.stdout
        self._err = err or sys.stderr

    @property
    def err(self) -> TextIO:
        """Where progress goes."""
        return self._err

    @property
    def shows_progress(self) -> bool:
        """Whether progress is shown: not with ``--json`` or ``--quiet``."""
        return not (self.json_mode or self.quiet)

    def document(self, doc: Any, text: str | Callable[[], str]) -> None:
        """Print ``doc`` as one JSON document, or ``text`` for people."""
        if self.json_mode:
            self._print(json.dumps(plain(doc), indent=2, ensure_ascii=False))
        else:
            self._print(text if isinstance(text, str) else text())

    def rows(self, columns: Sequence[str], rows: Sequence[Sequence[Any]],
             empty: str = "(none)") -> None:
        """Print rows: a JSON array of objects keyed by ``columns``, or a text table."""
        if self.json_mode:
            self.document([dict(zip(columns, row, strict=True)) for row in rows], "")
        elif not rows:
            self._print(empty)
        else:
            self._print(text_table(columns, rows))

    def json_lines(self, records: Iterable[Mapping[str, Any]]) -> None:
        """One compact JSON object per line (``query --json``)."""
        for record in records:
            self._print(json.dumps(plain(record), separators=(",", ":"), ensure_ascii=False))

    def progress(self, message: str) -> None:
        """A short status line on stderr for long work; nothing with ``--json`` or
        ``--quiet``."""
        if self.shows_progress:
            print(message, file=self._err, flush=True)

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun`` in the right number.

    >>> count(1, "file"), count(1000000, "row"), count(2, "property", "properties")
    ('1 file', '1,000,000 rows', '2 properties')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
