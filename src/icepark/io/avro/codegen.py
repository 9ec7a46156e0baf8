"""Python source that decodes or skips Avro values, generated per type (see
:mod:`icepark.io.avro.compiled`).

Avro spec, *Binary Encoding*: "int and long values are written using variable-length zig-zag
coding"; "bytes are encoded as a long followed by that many bytes of data"; "a string is
encoded as a long followed by that many bytes of UTF-8 encoded character data"; "A record is
encoded by encoding the values of its fields in the order that they are declared"; arrays and
maps are "encoded as a series of blocks. Each block consists of a long count value, followed by
that many array items. A block with count zero indicates the end of the array. ... If a
block's count is negative, its absolute value is used, and the count is followed immediately by
a long block size"; "A union is encoded by first writing an int value indicating the
zero-based position within the union of the schema of its value."

Varints of up to three bytes are decoded inline, longer ones by
:func:`icepark.io.avro.varint.read_long`; runs of varints (an ``int -> long`` map) are
skipped by one regular-expression match; a run of skipped fields whose encoding is the common
one is skipped by one match of a pattern from :mod:`icepark.io.avro.pattern`.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable
from typing import Any

from icepark.errors import UnsupportedFeature
from icepark.io.avro.pattern import lazy_pattern, skip_pattern
from icepark.io.avro.varint import read_long

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_VARINTS = frozenset({"int", "long"})
_MAX_DEPTH = 32
NOT_PAIRS = object()


@functools.lru_cache(maxsize=256)
def _varint_run(count: int) -> Callable[[bytes, int], re.Match[bytes] | None]:
    """A matcher of ``count`` varints (each at most 10 bytes) from a position."""
    return re.compile(rb"(?:[\x80-\xff]{0,9}[\x00-\x7f]){%d}" % count, re.DOTALL).match


def kind_of(t: Any) -> str:
    """The kind of a resolved Avro type: a primitive's name, ``union`` or a complex type's
    ``type``."""
    return t if isinstance(t, str) else ("union" if isinstance(t, list) else str(t["type"]))


def _bad(message: str) -> ValueError:
    return ValueError(message)


_UNPACK_F = struct.Struct("<f").unpack_from
_UNPACK_D = struct.Struct("<d").unpack_from
NAMESPACE: dict[str, Any] = {"_long": read_long, "_run": _varint_run, "_bad": _bad,
                              "_f": _UNPACK_F, "_d": _UNPACK_D}


class Emitter:
    """Emits Python statements decoding (or skipping) Avro values of one schema's types, at
    a position ``p`` in bytes ``d``: :attr:`lines` (the body), :attr:`prologue` (run once per
    block, where ``count`` records are about to be read) and :attr:`consts` (the values the
    statements refer to by name)."""

    def __init__(self, schema: Any) -> None:
        self.pair_keys: frozenset[Any] | object | None = NOT_PAIRS
        """Set by a caller to the keys to keep (None: all) before emitting the value of an
        array of two-field records to decode as a dict; reset once used."""
        self.named: dict[str, Any] = {}
        self._collect(schema, None)
        self.lines: list[str] = []
        self.prologue: list[str] = []
        self.consts: dict[str, Any] = {}
        self._vars = 0

    # ------------------------------------------------------------------ schema helpers

    def _collect(self, schema: Any, namespace: str | None) -> None:
        if isinstance(schema, list):
            for s in schema:
                self._collect(s, namespace)
        elif isinstance(schema, dict):
            kind = schema.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                name = schema["name"]
                ns = schema.get("namespace", namespace)
                full = name if "." in name or not ns else f"{ns}.{name}"
                self.named[full] = schema
                self.named.setdefault(name.rsplit(".", 1)[-1], schema)
                namespace = full.rsplit(".", 1)[0] if "." in full else None
            for f in schema.get("fields", ()):
                self._collect(f["type"], namespace)
            for key in ("items", "values"):
                if key in schema:
                    self._collect(schema[key], namespace)
            if isinstance(kind, dict | list):
                self._collect(kind, namespace)

    def resolve(self, t: Any) -> Any:
        for _ in range(_MAX_DEPTH):
            if isinstance(t, str):
                if t in _PRIMITIVES:
                    return t
                if t not in self.named:
                    raise UnsupportedFeature(f"Unknown Avro type {t!r}")
                t = self.named[t]
            elif isinstance(t, dict) and isinstance(t.get("type"), dict | list | str) and \
                    t["type"] not in ("record", "error", "enum", "fixed", "array", "map"):
                t = t["type"]
            else:
                return t
        raise UnsupportedFeature("Avro schema nests too deeply or refers to itself")

    def varints(self, t: Any, depth: int = 0) -> int | None:
        """How many varints a value of ``t`` always is (None: not only varints)."""
        t = self.resolve(t)
        if depth > _MAX_DEPTH:
            return None
        if (isinstance(t, str) and t in _VARINTS) or (
                isinstance(t, dict) and t.get("type") == "enum"):
            return 1
        if isinstance(t, dict) and t.get("type") in ("record", "error"):
            total = 0
            for f in t["fields"]:
                n = self.varints(f["type"], depth + 1)
                if n is None:
                    return None
                total += n
            return total or None
        return None

    def never_empty(self, t: Any, depth: int = 0) -> bool:
        """Whether every value of ``t`` takes at least one byte."""
        t = self.resolve(t)
        if isinstance(t, str):
            return t != "null"
        if isinstance(t, dict) and t.get("type") in ("record", "error"):
            return depth < _MAX_DEPTH and any(self.never_empty(f["type"], depth + 1)
                                              for f in t["fields"])
        if isinstance(t, dict) and t.get("type") == "fixed":
            return int(t["size"]) > 0
        return True  # a union's branch index, an enum's, an array's count

    def iceberg_map(self, t: Any) -> tuple[bool, Any, Any] | None:
        """(whether it is in a union with null first, its key type, its value type, both
        resolved) of ``t`` if it has the shape of an Iceberg map (an array of records of two
        fields), else None."""
        t = self.resolve(t)
        nullable = isinstance(t, list) and len(t) == 2 and self.resolve(t[0]) == "null"
        if nullable:
            t = self.resolve(t[1])
        if not isinstance(t, dict) or t.get("type") != "array":
            return None
        item = self.resolve(t["items"])
        if not isinstance(item, dict) or item.get("type") not in ("record", "error") or \
                len(item["fields"]) != 2:
            return None
        key, value = (self.resolve(f["type"]) for f in item["fields"])
        return nullable, key, value

    def varint_then_bytes(self, item: Any) -> bool:
        t = self.resolve(item)
        if not isinstance(t, dict) or t.get("type") not in ("record", "error") or \
                len(t["fields"]) != 2:
            return False
        first, second = (self.resolve(f["type"]) for f in t["fields"])
        return isinstance(first, str) and first in _VARINTS and second in ("bytes", "string")

    # ------------------------------------------------------------------ emitting

    def var(self) -> str:
        self._vars += 1
        return f"v{self._vars}"

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def read_long(self, ind: int, target: str) -> None:
        """Inlined for values of up to three bytes, the common case."""
        self.emit(ind, "b = d[p]")
        self.emit(ind, "if b < 128:")
        self.emit(ind + 1, f"{target} = (b >> 1) ^ -(b & 1); p += 1")
        self.emit(ind, "else:")
        self.emit(ind + 1, "b1 = d[p + 1]")
        self.emit(ind + 1, "if b1 < 128:")
        self.emit(ind + 2, "b = (b & 127) | (b1 << 7); p += 2")
        self.emit(ind + 2, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(ind + 1, "elif d[p + 2] < 128:")
        self.emit(ind + 2, "b = (b & 127) | ((b1 & 127) << 7) | (d[p + 2] << 14); p += 3")
        self.emit(ind + 2, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(ind + 1, "else:")
        self.emit(ind + 2, f"{target}, p = _long(d, p)")

    def skip_varint(self, ind: int) -> None:
        self.emit(ind, "while d[p] > 127: p += 1")
        self.emit(ind, "p += 1")

    def value(self, t: Any, ind: int, target: str, depth: int = 0) -> None:
        """Decode a value of ``t`` into ``target``."""
        self._value_or_skip(t, ind, target, depth)

    def skip(self, t: Any, ind: int, depth: int = 0) -> None:
        self._value_or_skip(t, ind, None, depth)

    def _value_or_skip(self, t: Any, ind: int, target: str | None, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise UnsupportedFeature("Avro schema nests too deeply or refers to itself")
        t = self.resolve(t)
        kind = kind_of(t)
        match kind:
            case "null":
                if target:
                    self.emit(ind, f"{target} = None")
            case "boolean":
                if target:
                    self.emit(ind, "b = d[p]; p += 1")
                    self.emit(ind, "if b > 1: raise _bad(f'invalid boolean byte {b}')")
                    self.emit(ind, f"{target} = b == 1")
                else:
                    self.emit(ind, "p += 1")
            case "int" | "long":
                if target:
                    self.read_long(ind, target)
                else:
                    self.skip_varint(ind)
            case "float" | "double":
                size = 4 if kind == "float" else 8
                if target:
                    self.emit(ind, f"{target} = {'_f' if size == 4 else '_d'}(d, p)[0]")
                self.emit(ind, f"p += {size}")
            case "bytes" | "string" if not target:
                self.emit(ind, "b = d[p]")
                self.emit(ind, "if b < 128 and not b & 1:")
                self.emit(ind + 1, "p += 1 + (b >> 1)")
                self.emit(ind, "else:")
                self.emit(ind + 1, "n, p = _long(d, p)")
                self.emit(ind + 1, "if n < 0: raise _bad(f'negative length {n}')")
                self.emit(ind + 1, "p += n")
            case "bytes" | "string":
                self._length(ind)
                self.emit(ind, f"{target} = d[p:e]{'.decode()' if kind == 'string' else ''}; "
                               "p = e")
            case "fixed":
                size = int(t["size"])
                if target:
                    self.emit(ind, f"e = p + {size}")
                    self.emit(ind, "if e > end: raise _bad('truncated value')")
                    self.emit(ind, f"{target} = d[p:e]; p = e")
                else:
                    self.emit(ind, f"p += {size}")
            case "enum":
                symbols = tuple(t["symbols"])
                if target:
                    self.read_long(ind, "n")
                    self.emit(ind, f"if not 0 <= n < {len(symbols)}: "
                                   "raise _bad(f'invalid enum index {n}')")
                    self.emit(ind, f"{target} = {self.const(symbols)}[n]")
                else:
                    self.skip_varint(ind)
            case "union":
                # the branch index of a small union is one byte, 2 * index, in any writer's
                # encoding; another encoding of it is read as a varint
                self.emit(ind, "b = d[p]; p += 1")
                self.emit(ind, "if b > 127:")
                self.emit(ind + 1, "n, p = _long(d, p - 1)")
                self.emit(ind + 1, "b = 2 * n if 0 <= n < 64 else 1")
                for i, branch in enumerate(t):
                    self.emit(ind, f"{'if' if i == 0 else 'elif'} b == {2 * i}:")
                    self.emit(ind + 1, "pass")
                    self._value_or_skip(branch, ind + 1, target, depth + 1)
                self.emit(ind, "else:")
                self.emit(ind + 1, "raise _bad(f'invalid union branch byte {b}')")
            case "record" | "error":
                if target:
                    names = []
                    for f in t["fields"]:
                        v = self.var()
                        self._value_or_skip(f["type"], ind, v, depth + 1)
                        names.append(v)
                    comma = "," if len(names) == 1 else ""
                    self.emit(ind, f"{target} = ({', '.join(names)}{comma})")
                else:
                    for f in t["fields"]:
                        self._value_or_skip(f["type"], ind, None, depth + 1)
            case "array" | "map":
                self._blocks(t, kind, ind, target, depth)
            case _:
                raise UnsupportedFeature(f"Unsupported Avro type {kind!r}")

    def _blocks(self, t: Any, kind: str, ind: int, target: str | None, depth: int) -> None:
        count = self.var()
        item = t["items"] if kind == "array" else t["values"]
        run = None if target or kind == "map" else self.varints(item)
        pairs, keys = None, None
        if self.pair_keys is not NOT_PAIRS and kind == "array":
            resolved = self.resolve(item)
            if isinstance(resolved, dict) and resolved.get("type") in ("record", "error") \
                    and len(resolved["fields"]) == 2:
                pairs, keys = resolved["fields"], self.pair_keys
        self.pair_keys = NOT_PAIRS
        if target:
            self.emit(ind, f"{target} = {'[]' if kind == 'array' and pairs is None else '{}'}")
        self.read_long(ind, count)
        self.emit(ind, f"while {count}:")
        body = ind + 1
        self.emit(body, f"if {count} < 0:")
        self.emit(body + 1, f"{count} = -{count}")
        if target:
            self.skip_varint(body + 1)
        else:  # the block's byte size lets the whole block be skipped
            self.read_long(body + 1, "n")
            self.emit(body + 1, "if n < 0: raise _bad(f'negative block size {n}')")
            self.emit(body + 1, "p += n")
            self.read_long(body + 1, count)
            self.emit(body + 1, "continue")
        if kind == "map" or self.never_empty(item):  # a count the bytes left cannot hold
            self.emit(body, f"if {count} > end - p: raise _bad(f'{{{count}}} items cannot "
                            "fit in the block')")
        if run is not None:
            self.emit(body, f"k = {count} * {run}" if run != 1 else f"k = {count}")
            self.emit(body, "r = _runs.get(k)")
            self.emit(body, "if r is None:")
            self.emit(body + 1, "r = _runs[k] = _run(k)")
            self.emit(body, "m = r(d, p)")
            self.emit(body, "if m is None: raise _bad(f'truncated varints at {p}')")
            self.emit(body, "p = m.end()")
        elif pairs is not None and target:
            pair_key, pair_value = self.var(), self.var()
            self.emit(body, f"for _ in range({count}):")
            key_type, value_type = (f["type"] for f in pairs)
            self._value_or_skip(key_type, body + 1, pair_key, depth + 1)
            if keys is None:
                self._value_or_skip(value_type, body + 1, pair_value, depth + 1)
                self.emit(body + 1, f"{target}[{pair_key}] = {pair_value}")
            else:
                self.emit(body + 1, f"if {pair_key} in {self.const(keys)}:")
                self._value_or_skip(value_type, body + 2, pair_value, depth + 1)
                self.emit(body + 2, f"{target}[{pair_key}] = {pair_value}")
                self.emit(body + 1, "else:")
                self.emit(body + 2, "pass")
                self._value_or_skip(value_type, body + 2, None, depth + 1)
        elif not target and self.varint_then_bytes(item):
            # an Iceberg map of int -> bytes (the bounds): one test per item when the key and
            # the value's length are single bytes
            self.emit(body, f"for _ in range({count}):")
            self.emit(body + 1, "b = d[p + 1]")
            self.emit(body + 1, "if d[p] < 128 and b < 128 and not b & 1:")
            self.emit(body + 2, "p += 2 + (b >> 1)")
            self.emit(body + 1, "else:")
            self.emit(body + 2, "pass")
            self._value_or_skip(item, body + 2, None, depth + 1)
        else:
            self.emit(body, f"for _ in range({count}):")
            key: str | None = None
            if kind == "map":
                key = self.var() if target else None
                self._value_or_skip("string", body + 1, key, depth + 1)
            value: str | None = self.var() if target else None
            self._value_or_skip(item, body + 1, value, depth + 1)
            if target and kind == "array":
                self.emit(body + 1, f"{target}.append({value})")
            elif target:
                self.emit(body + 1, f"{target}[{key}] = {value}")
        self.read_long(body, count)

    def _length(self, ind: int) -> None:
        """Read the length of a string or bytes value at ``p``: ``p`` is then its first byte
        and ``e`` the byte after it."""
        # the common case first: a length below 64 is one byte
        self.emit(ind, "b = d[p]")
        self.emit(ind, "if b < 128 and not b & 1:")
        self.emit(ind + 1, "p += 1; e = p + (b >> 1)")
        self.emit(ind, "elif b > 127 and d[p + 1] < 128 and not b & 1:  # 64 to 8191")
        self.emit(ind + 1, "e = p + 2 + (((b & 127) | (d[p + 1] << 7)) >> 1); p += 2")
        self.emit(ind, "else:")
        self.emit(ind + 1, "n, p = _long(d, p)")
        self.emit(ind + 1, "if n < 0: raise _bad(f'negative length {n}')")
        self.emit(ind + 1, "e = p + n")
        self.emit(ind, "if e > end: raise _bad('truncated value')")

    def span(self, ind: int, target: str) -> str:
        """Skip a string value, keeping where it is in ``target`` and ``{target}_end``;
        returns the statement that decodes it from there (later, if it is still needed)."""
        self._length(ind)
        self.emit(ind, f"{target} = p; {target}_end = p = e")
        return f"{target} = d[{target}:{target}_end].decode()"

    def skip_run(self, types: list[Any], ind: int) -> None:
        """Skip consecutive fields: each run of fields holding arrays or maps, or of two or
        more fixed-size or varint fields (an entry's snapshot ID and sequence numbers), with
        one regular-expression match when their encoding is the common one, the others (and
        those runs otherwise) field by field. Runs of the same types share one compiled
        pattern."""
        segment: list[Any] = []
        for t in [*self._flat(types), None]:
            if t is not None and (self._has_blocks(t) or self._scalar(t)):
                segment.append(t)
                continue
            if len(segment) > 1 or any(self._has_blocks(x) for x in segment):
                self._skip_segment(segment, ind)
            elif segment:
                self.skip(segment[0], ind)
            segment = []
            if t is not None:
                self.skip(t, ind)

    def _scalar(self, t: Any, depth: int = 0) -> bool:
        """Whether ``t`` is encoded as a varint, fixed bytes or a union of those (a pattern
        that matches it never fails for a long value)."""
        t = self.resolve(t)
        if isinstance(t, str):
            return t not in ("bytes", "string")
        if isinstance(t, list):
            return depth < _MAX_DEPTH and all(self._scalar(b, depth + 1) for b in t)
        return bool(t.get("type") in ("enum", "fixed"))

    def _flat(self, types: list[Any], depth: int = 0) -> list[Any]:
        """``types`` with records replaced by their fields' types (a record is its fields'
        encodings one after the other), so that a segment to match holds no more than it must
        (a long string in it would fail every match)."""
        out: list[Any] = []
        for t in types:
            resolved = self.resolve(t)
            if depth < _MAX_DEPTH and isinstance(resolved, dict) and resolved.get("type") in (
                    "record", "error"):
                out += self._flat([f["type"] for f in resolved["fields"]], depth + 1)
            else:
                out.append(t)
        return out

    def _skip_segment(self, types: list[Any], ind: int) -> None:
        parts = [skip_pattern(t, self.resolve) for t in types]
        if any(part is None for part in parts):
            for t in types:
                self.skip(t, ind)
            return
        lazy = self.var()
        pattern = lazy_pattern(b"".join(part or b"" for part in parts))
        self.prologue.append(f"{lazy} = {self.const(pattern)}.ready(count)")
        self.emit(ind, f"m = None if {lazy} is None else {lazy}(d, p)")
        self.emit(ind, "if m is None:")
        self.emit(ind + 1, "pass")
        for t in types:
            self.skip(t, ind + 1)
        self.emit(ind, "else:")
        self.emit(ind + 1, "p = m.end()")

    def _has_blocks(self, t: Any, depth: int = 0) -> bool:
        t = self.resolve(t)
        if depth > _MAX_DEPTH or isinstance(t, str):
            return False
        if isinstance(t, list):
            return any(self._has_blocks(b, depth + 1) for b in t)
        if t.get("type") in ("array", "map"):
            return True
        return any(self._has_blocks(f["type"], depth + 1) for f in t.get("fields", ()))
