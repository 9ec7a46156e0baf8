"""The quickstart's report: one line per step with counts and timings, or one JSON document.

Lines use ``✓``/``✗``/``-`` and ``→`` when stdout can encode them, and plain ASCII otherwise.

>>> out = []
>>> report = Report(as_json=False, write=out.append, unicode=False)
>>> report.step("ingest", "1,600 rows -> 4 files", 6.12)
>>> report.detail("day(ts)")
>>> out
['+ ingest      1,600 rows -> 4 files                                               6.1 s', \
'                day(ts)']
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from time import perf_counter
from typing import Any

_MARKS = {"ok": ("✓", "+"), "fail": ("✗", "x"), "skip": ("-", "-"), "arrow": ("→", "->")}


def stdout_is_unicode() -> bool:
    """Whether stdout can encode the report's marks."""
    try:
        "✓✗→".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Report:
    """Collects the steps; prints them as they finish (text) or at the end (``as_json``)."""

    def __init__(self, *, as_json: bool, write: Callable[[str], None] = print,
                 unicode: bool | None = None) -> None:
        self.as_json = as_json
        self._write = write
        self._unicode = stdout_is_unicode() if unicode is None else unicode
        self.steps: list[dict[str, Any]] = []

    def mark(self, kind: str) -> str:
        unicode, ascii_mark = _MARKS[kind]
        return unicode if self._unicode else ascii_mark

    @property
    def arrow(self) -> str:
        return self.mark("arrow")

    def _line(self, text: str) -> None:
        if not self.as_json:
            self._write(text)

    def step(self, name: str, detail: str, seconds: float | None, kind: str = "ok") -> None:
        """One finished step."""
        self.steps.append({"step": name, "status": kind, "detail": detail,
                           "seconds": None if seconds is None else round(seconds, 3)})
        timing = "" if seconds is None else f"{seconds:6.1f} s"
        self._line(f"{self.mark(kind)} {name:<11} {detail:<64} {timing}".rstrip())

    def detail(self, text: str) -> None:
        """An indented line under the last step."""
        self._line(" " * 16 + text)
        if self.steps:
            self.steps[-1].setdefault("lines", []).append(text)

    def text(self, text: str = "") -> None:
        """A free line (headers, the closing hints)."""
        self._line(text)

    def finish(self, summary: Mapping[str, Any]) -> None:
        """With ``as_json``, print the one JSON document: the steps plus ``summary``."""
        if self.as_json:
            self._write(json.dumps({**summary, "steps": self.steps}, indent=2, sort_keys=True))


@contextmanager
def timed() -> Iterator[Callable[[], float]]:
    """``with timed() as elapsed: ...``; ``elapsed()`` is the seconds since the block began."""
    start = perf_counter()
    yield lambda: perf_counter() - start


__all__ = ["Report", "stdout_is_unicode", "timed"]
