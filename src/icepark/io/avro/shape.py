"""Reading a run of Iceberg metric maps by one regular-expression match of their usual shape.

Iceberg stores a map with non-string keys as an Avro array of key/value records (spec,
*Appendix A*: "Maps with non-string keys must use an array representation with the ``map``
logical type"), and a manifest's ``data_file`` holds seven of them in a row (``column_sizes``
to ``upper_bounds``): most of its bytes. Avro encodes an array as "a series of blocks. Each
block consists of a long count value, followed by that many array items. A block with count
zero indicates the end of the array" (*Binary Encoding*); a regular expression cannot count,
but the files of one table have the same columns, so their maps have the same keys in the same
order: one *shape*. :class:`MapRun` learns the shape of a record the generated decoder had to
read the slow way (keys, counts and null maps), compiles a pattern of exactly that encoding
(keys and counts as literal bytes, values as any varint or any byte string of up to
:data:`MAX_BYTES` bytes) with a group around each value asked for, and matches the next
records with it in C. A record of another shape does not match and is read the slow way; the
pattern of its shape is then tried next.

>>> run = MapRun([MapField(True, False, frozenset({2})), MapField(False, True, None)])
>>> data = bytes([2, 4, 2, 0x80, 1, 4, 6, 0, 2, 2, 4, 0xAB, 0xCD, 0])
>>> run.read(data, 0) is None  # nothing learned yet
True
>>> run.learn(data, 0)
>>> run.read(data, 0)
(14, ({2: 3}, {1: b'\\xab\\xcd'}))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

VARINT = rb"[\x80-\xff]{0,9}+[\x00-\x7f]"  # possessive: a varint's bytes parse one way
MAX_BYTES = 32
"""Longest byte string value a shape's pattern matches (bounds are usually 1-16 bytes: writers
truncate strings); a longer one makes the record read the slow way."""


def _bytes(first: int) -> bytes:
    """A pattern of any byte string of up to :data:`MAX_BYTES` bytes, trying ``first``
    bytes first."""
    order = [first, *(n for n in range(MAX_BYTES + 1) if n != first)]
    return b"(?:" + b"|".join(re.escape(bytes([2 * n])) + (b".{%d}" % n if n else b"")
                              for n in order) + b")"


_SHAPES_LIMIT = 16  # shapes remembered per run (a table whose files all differ stays slow)
_MAX_ITEMS = 63  # counts of one byte
Reader = Callable[[bytes, int], "tuple[int, tuple[Any, ...]] | None"]


@dataclass(frozen=True, slots=True)
class MapField:
    """One map of a run: ``nullable`` (a union of null, then the array), whether its values
    are bytes (else int or long), ``keys`` whose values are wanted (None: all), and whether
    the map is wanted at all (else it is only skipped)."""

    nullable: bool
    bytes_values: bool
    keys: frozenset[int] | None
    wanted: bool = True


def _never(d: bytes, p: int) -> None:
    del d, p


def _varint(b: bytes) -> int:
    """The zig-zag varint that is all of ``b``."""
    value = shift = 0
    for x in b:
        value |= (x & 0x7F) << shift
        shift += 7
    return (value >> 1) ^ -(value & 1)


def _read_varint(d: bytes, p: int) -> tuple[bytes, int] | None:
    """The raw bytes of the varint at ``p`` and the position after it (None: truncated)."""
    start = p
    while p < len(d) and d[p] > 127 and p - start < 9:
        p += 1
    if p >= len(d) or d[p] > 127:
        return None
    return d[start:p + 1], p + 1


class MapRun:
    """The shapes learned for one run of maps, and :attr:`read` for the latest one:
    ``read(d, p)`` is None when the maps at ``p`` do not have that shape, else the position
    after them and the wanted maps' dicts (None for a null map), in run order."""

    def __init__(self, maps: Sequence[MapField]) -> None:
        self.maps = tuple(maps)
        self.read: Reader = _never
        self.match: Callable[[bytes, int], re.Match[bytes] | None] = _never
        """The pattern of the latest shape (for a run of maps only skipped: the end of the
        match is the position after them)."""
        self._shapes: dict[tuple[Any, ...], tuple[Reader, Callable[..., Any]]] = {}

    def learn(self, d: bytes, p: int) -> None:
        """Compile (or reuse) the pattern of the shape of the maps at ``p`` (read correctly
        by the caller already) and use it from now on; a shape that no pattern describes (a
        count of 64 or more, several blocks, a long value) is ignored."""
        lengths: list[int] = []
        shape = self._shape(d, p, lengths)
        if shape is None:
            return
        found = self._shapes.get(shape)
        if found is None:
            if len(self._shapes) >= _SHAPES_LIMIT:
                return
            found = self._shapes[shape] = self._compile(shape, lengths)
        self.read, self.match = found

    def _shape(self, d: bytes, p: int, lengths: list[int]) -> tuple[Any, ...] | None:
        """The keys of each map (None: a null map); the lengths of byte values are appended
        to ``lengths``."""
        shape: list[tuple[bytes, ...] | None] = []
        for m in self.maps:
            if m.nullable:
                if p >= len(d) or d[p] not in (0, 2):
                    return None
                p += 1
                if d[p - 1] == 0:
                    shape.append(None)
                    continue
            if p >= len(d) or d[p] > 127 or d[p] & 1 or d[p] // 2 > _MAX_ITEMS:
                return None
            count = d[p] // 2
            p += 1
            keys: list[bytes] = []
            for _ in range(count):
                key = _read_varint(d, p)
                if key is None:
                    return None
                keys.append(key[0])
                p = key[1]
                if m.bytes_values:
                    if p >= len(d) or d[p] > 127 or d[p] & 1 or d[p] // 2 > MAX_BYTES:
                        return None
                    lengths.append(d[p] // 2)
                    p += 1 + d[p] // 2
                else:
                    value = _read_varint(d, p)
                    if value is None:
                        return None
                    p = value[1]
            if count and (p >= len(d) or d[p] != 0):
                return None  # another block follows
            p += 1 if count else 0
            shape.append(tuple(keys))
        return tuple(shape)

    def _compile(self, shape: tuple[Any, ...], lengths: list[int]
                 ) -> tuple[Reader, Callable[[bytes, int], re.Match[bytes] | None]]:
        """The pattern of ``shape`` and its reader; a byte value's alternatives start with the
        length it had in the record the shape was learned from (tried first: most values of
        a column have one length)."""
        next_length = iter(lengths)
        parts: list[bytes] = []
        results: list[str] = []
        lines: list[str] = []
        groups = 0
        for m, keys in zip(self.maps, shape, strict=True):
            if m.nullable:
                parts.append(b"\x00" if keys is None else b"\x02")
            if keys is None:
                if m.wanted:
                    results.append("None")
                continue
            parts.append(re.escape(bytes([2 * len(keys)])))
            entries: list[str] = []
            for raw in keys:
                parts.append(re.escape(raw))
                value = _bytes(next(next_length)) if m.bytes_values else VARINT
                key = _varint(raw)
                if m.wanted and (m.keys is None or key in m.keys):
                    parts.append(b"(" + value + b")")
                    if m.bytes_values:
                        entries.append(f"{key}: g[{groups}][1:]")
                    else:  # varints of up to three bytes decoded inline
                        a = f"a{groups}"
                        lines += [f"x = g[{groups}]", "n = len(x)",
                                  "if n == 1:", "    x = x[0]",
                                  "elif n == 2:", "    x = (x[0] & 127) | (x[1] << 7)",
                                  "elif n == 3:",
                                  "    x = (x[0] & 127) | ((x[1] & 127) << 7) | (x[2] << 14)",
                                  "if n < 4:", f"    {a} = (x >> 1) ^ -(x & 1)",
                                  "else:", f"    {a} = _v(x)"]
                        entries.append(f"{key}: a{groups}")
                    groups += 1
                else:
                    parts.append(value)
            if keys:
                parts.append(b"\x00")
            if m.wanted:
                results.append("{" + ", ".join(entries) + "}")
        match = re.compile(b"".join(parts), re.DOTALL).match
        comma = "," if len(results) == 1 else ""
        source = "\n".join([
            "def read(d, p):",
            "    m = match(d, p)",
            "    if m is None:",
            "        return None",
            "    g = m.groups()" if groups else "    pass",
            *(f"    {line}" for line in lines),
            f"    return m.end(), ({', '.join(results)}{comma})",
        ])
        namespace: dict[str, Any] = {"match": match, "_v": _varint}
        exec(compile(source, "<avro map run>", "exec"), namespace)  # our own generated source
        reader: Reader = namespace["read"]
        return reader, match
