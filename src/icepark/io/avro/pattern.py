"""Regular expressions matching the common encodings of Avro values, to skip them in C.

Skipping a value still means walking its encoding, and in Python that costs a few bytecodes
per byte-sized step. Python's :mod:`re` engine walks in C; it cannot count (an array's items
or a string's bytes are announced by a number in the data), but every count below 64 is a
single byte (the zig-zag varint ``2 * n``), so a count or a length is an alternation of 64
literal bytes, each followed by that many items or bytes. :func:`skip_pattern` builds such a
pattern for a type, or None when its encoding is not regular (recursive types); a value
outside the common case (a count of 64 or more, an array in several blocks, a negative block
count) does not match, and the caller then decodes it the slow way.

Avro's grammar decides every step from the bytes read so far (a varint ends at the first byte
below 0x80; unions, counts and lengths are literal bytes here), so a pattern matches a value's
encoding in at most one way: a match ends exactly where the value ends.

>>> import re
>>> match = re.compile(skip_pattern(["null", "string"], lambda t: t), re.DOTALL).match
>>> match(b"\\x02\\x06abcX").end(), match(b"\\x00X").end(), match(b"\\x02\\x81\\x01") is None
(5, 1, True)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

VARINT = rb"[\x80-\xff]{0,9}[\x00-\x7f]"
_MAX_SMALL = 63  # the largest count whose zig-zag varint is one byte
_MAX_DEPTH = 32
COMPILE_AFTER = 20_000
"""Records a :class:`LazyPattern` lets pass before compiling its pattern (compiling one for
a manifest's metric maps takes tens of milliseconds: worth it for large manifests only)."""


def _byte(value: int) -> bytes:
    return re.escape(bytes([value]))


def _counted(item: bytes) -> bytes:
    """One block of 0 to 63 items, then the end of the array."""
    if not item:  # items of type null: only the count is written
        body = [_byte(2 * n) for n in range(1, _MAX_SMALL + 1)]
    else:
        body = [_byte(2 * n) + b"(?:" + item + b"){%d}" % n for n in range(1, _MAX_SMALL + 1)]
    return b"(?:\\x00|(?:" + b"|".join(body) + b")\\x00)"


def skip_pattern(t: Any, resolve: Callable[[Any], Any], depth: int = 0) -> bytes | None:
    """A pattern matching the common encodings of a value of ``t`` (``resolve`` turns a named
    type reference into its schema), or None."""
    if depth > _MAX_DEPTH:
        return None
    t = resolve(t)
    kind = t if isinstance(t, str) else ("union" if isinstance(t, list) else t.get("type"))
    match kind:
        case "null":
            return b""
        case "boolean":
            return rb"[\x00\x01]"
        case "int" | "long" | "enum":
            return VARINT
        case "float" | "double":
            return b".{%d}" % (4 if kind == "float" else 8)
        case "fixed":
            return b".{%d}" % int(t["size"])
        case "bytes" | "string":
            return b"(?:\\x00|" + b"|".join(
                _byte(2 * n) + b".{%d}" % n for n in range(1, _MAX_SMALL + 1)) + b")"
        case "union":
            if len(t) > _MAX_SMALL + 1:
                return None
            branches = [skip_pattern(b, resolve, depth + 1) for b in t]
            if any(b is None for b in branches):
                return None
            return b"(?:" + b"|".join(
                _byte(2 * i) + (b or b"") for i, b in enumerate(branches)) + b")"
        case "record" | "error":
            parts = [skip_pattern(f["type"], resolve, depth + 1) for f in t["fields"]]
            if any(p is None for p in parts):
                return None
            return b"".join(p or b"" for p in parts)
        case "array":
            item = skip_pattern(t["items"], resolve, depth + 1)
            return None if item is None else _counted(item)
        case "map":
            key = skip_pattern("string", resolve, depth + 1)
            value = skip_pattern(t["values"], resolve, depth + 1)
            return None if key is None or value is None else _counted(key + value)
        case _:
            return None


_LAZY: dict[bytes, LazyPattern] = {}
_LAZY_LIMIT = 64
_LAZY_LOCK = threading.Lock()


def lazy_pattern(pattern: bytes) -> LazyPattern:
    """The process's one :class:`LazyPattern` of ``pattern`` (the readers of several manifest
    layouts share the patterns of their metric maps, and records count toward one
    threshold)."""
    with _LAZY_LOCK:
        found = _LAZY.get(pattern)
        if found is None:
            if len(_LAZY) >= _LAZY_LIMIT:
                _LAZY.clear()
            found = _LAZY[pattern] = LazyPattern(pattern)
        return found


class LazyPattern:
    """A pattern compiled once :data:`COMPILE_AFTER` records have been read without it."""

    def __init__(self, pattern: bytes) -> None:
        self._pattern = pattern
        self._seen = 0
        self._match: Callable[[bytes, int], re.Match[bytes] | None] | None = None

    def ready(self, records: int) -> Callable[[bytes, int], re.Match[bytes] | None] | None:
        """The compiled matcher, or None while fewer records than the threshold were read
        (``records`` are about to be)."""
        if self._match is None:
            self._seen += records
            if self._seen >= COMPILE_AFTER:
                self._match = re.compile(self._pattern, re.DOTALL).match
        return self._match
