"""The kernel's program compiled from a writer schema and the fields a reader wants.

A program is rows of ``(op, a, b, c)`` that :func:`icepark.io.avro.kernel.run` runs once per
record (see that module for the ops and the Avro spec's encodings). :class:`Program` emits them
for a record's fields: a wanted value into a slot, with the :data:`~icepark.io.avro.columns.Column`
that turns the slot into Python values; an unwanted one skipped, runs of varints and whole
Iceberg maps at once; a wanted value the kernel cannot represent skipped with its place kept,
for a generated Python decoder to decode from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from icepark.errors import UnsupportedFeature
from icepark.io.avro import columns
from icepark.io.avro.codegen import NAMESPACE, Emitter, kind_of
from icepark.io.avro.columns import Column, Path

_MAX_DEPTH = 32
_VARINTS = frozenset({"int", "long"})
_PLAIN = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


class Program:
    """The kernel's program for one schema and the fields wanted, and each wanted field's
    column."""

    def __init__(self, schema: Any, pairs: Mapping[Path, frozenset[Any] | None]) -> None:
        self.types = Emitter(schema)  # its schema helpers: named types, sizes
        self.resolve = self.types.resolve
        self.schema, self.pairs = schema, pairs
        self.ops: list[list[int]] = []
        self.slots = 0
        self.keysets: list[frozenset[int]] = []
        self.columns: dict[Path, Column] = {}
        self.spans: dict[Path, int] = {}
        """Wanted strings kept as where they are (decoded in the record loop)."""
        self.pair_slots: dict[Path, int] = {}
        """The slots of wanted Iceberg maps read by the kernel."""
        self.value_slots: dict[Path, int] = {}
        """The slots of wanted varints and arrays of varints (maybe in a union with null):
        the varint, or where the array's items start and end among the collected items."""
        self.null_slots: dict[Path, int] = {}
        """The null flags' slots of the wanted values of :attr:`value_slots` in a union."""
        self.arrays: set[Path] = set()
        """The wanted arrays of varints among :attr:`value_slots`."""

    def op(self, code: int, a: int = 0, b: int = 0, c: int = 0) -> int:
        self.ops.append([code, a, b, c])
        return len(self.ops) - 1

    def here(self) -> int:
        """The next row's number, as a jump target (no op is merged into the row before)."""
        self.target = len(self.ops)
        return self.target

    target = -1

    def skip_varints(self, many: int) -> None:
        """Skip ``many`` varints: added to a skip of varints just before, unless a jump
        lands between them."""
        last = self.ops[-1] if self.ops else None
        if last is not None and last[0] == K.SKIP_VARINTS and self.target != len(self.ops):
            last[1] += many
        else:
            self.op(K.SKIP_VARINTS, many)

    def slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    # ------------------------------------------------------------------ records

    def record_fields(self, record: Any, path: Path, wanted: Mapping[Path, Any],
                      spans: frozenset[Path]) -> None:
        for f in record["fields"]:
            here = (*path, f["name"])
            if here in wanted:
                if here in spans and self.resolve(f["type"]) == "string":
                    slot = self.slot()
                    self.op(K.BYTES, slot)
                    self.spans[here] = slot
                    continue
                column = self.value(f["type"], here)
                convert = wanted[here]
                if convert is tuple and here in self.arrays:  # sliced as tuples: no copy
                    column, convert = self._tuples(here), None
                self.columns[here] = (column if convert is None
                                      else columns.converted(column, convert))
            elif any(w[:len(here)] == here for w in wanted):
                inner = self.resolve(f["type"])
                if not isinstance(inner, dict) or inner.get("type") not in ("record", "error"):
                    raise UnsupportedFeature(f"Cannot select inside {'.'.join(here)}: it is "
                                             "not a record")
                self.record_fields(inner, here, wanted, spans)
            else:
                self.skip(f["type"])

    # ------------------------------------------------------------------ wanted values

    def value(self, t: Any, path: Path) -> Column:
        """Ops decoding the wanted value of ``t`` at ``path`` and its column: natively where
        the type allows, else from where the kernel found it, by generated Python."""
        pairs, keys = path in self.pairs, self.pairs.get(path)
        if pairs:
            found = self._pairs(t, keys, path)
            if found is not None:
                return found
        if self.native(t):
            first = self.slots
            column = self._native(t, 0)
            self._note_slots(t, path, first)
            return column
        slot = self.slot()
        self.op(K.SPAN, slot)
        self.skip(t)
        self.op(K.SPAN_END, slot)
        return columns.decoded(slot, self._python_decoder(t, pairs, keys))

    def _note_slots(self, t: Any, path: Path, first: int) -> None:
        """Note where the kernel leaves the value at ``path`` if it is a varint or an array of
        varints, maybe in a union with null (``first``: the first slot its ops took; a
        union's flag comes first, then its other branch's)."""
        t = self.resolve(t)
        if isinstance(t, list):
            self.null_slots[path] = first
            first += 1
            t = self.resolve(next(b for b in t if self.resolve(b) != "null"))
        if isinstance(t, str) and t in _VARINTS:
            self.value_slots[path] = first
        elif isinstance(t, dict) and t.get("type") == "array":  # native: of varints
            self.value_slots[path] = first
            self.arrays.add(path)

    def _tuples(self, path: Path) -> Column:
        """The column of the array of varints at ``path`` as tuples."""
        column = columns.longs(self.value_slots[path], tuples=True)
        flag = self.null_slots.get(path)
        return column if flag is None else columns.nullable(flag, column)

    def native(self, t: Any, depth: int = 0) -> bool:
        """Whether a value of ``t`` becomes a Python value from the kernel's arrays alone."""
        t = self.resolve(t)
        if depth > _MAX_DEPTH:
            return False
        if isinstance(t, str):
            return t in _PLAIN
        if isinstance(t, list):  # a union of null and one other type
            others = [b for b in t if self.resolve(b) != "null"]
            return len(t) == 2 and len(others) == 1 and \
                not isinstance(self.resolve(others[0]), list) and \
                self.native(others[0], depth + 1)
        kind = t.get("type")
        if kind in ("fixed", "enum"):
            return True
        if kind in ("record", "error"):
            return all(self.native(f["type"], depth + 1) for f in t["fields"])
        if kind == "array":
            items = self.resolve(t["items"])
            return isinstance(items, str) and items in _VARINTS
        return False

    def _native(self, t: Any, depth: int) -> Column:
        t = self.resolve(t)
        kind = kind_of(t)
        match kind:
            case "null":
                return lambda b: [None] * b.count
            case "boolean":
                slot = self.slot()
                self.op(K.BOOL, slot)
                return columns.booleans(slot)
            case "int" | "long":
                slot = self.slot()
                self.op(K.LONG, slot)
                return columns.varints(slot)
            case "float" | "double":
                slot = self.slot()
                size = 4 if kind == "float" else 8
                self.op(K.FIXED, slot, size)
                return columns.floats(slot, size)
            case "bytes" | "string":
                slot = self.slot()
                self.op(K.BYTES, slot)
                return columns.strings(slot) if kind == "string" else columns.raw_bytes(slot)
            case "fixed":
                slot = self.slot()
                self.op(K.FIXED, slot, int(t["size"]))
                return columns.raw_bytes(slot)
            case "enum":
                slot = self.slot()
                self.op(K.LONG, slot)
                return columns.symbols(slot, tuple(t["symbols"]))
            case "union":
                flag = self.slot()
                column: Column | None = None
                self.op(K.UNION, 2)
                table = [self.op(K.GOTO), self.op(K.GOTO)]
                exits = []
                for i, branch in enumerate(t):
                    self.ops[table[i]][1] = self.here()
                    if self.resolve(branch) == "null":
                        self.op(K.NULL, flag, flag + 1)
                    else:
                        column = self._native(branch, depth + 1)
                    exits.append(self.op(K.GOTO))
                for row in exits:
                    self.ops[row][1] = self.here()
                assert column is not None  # native() admits [null, T] only
                return columns.nullable(flag, column)
            case "record" | "error":
                return columns.record([self._native(f["type"], depth + 1) for f in t["fields"]])
            case _:  # an array of varints
                slot = self.slot()
                start = self.op(K.ARRAY, 0, K.NEVER_EMPTY | K.COLLECT, slot)
                self.op(K.ITEM)
                self.ops[start][1] = self.op(K.END_ARRAY, start)
                return columns.longs(slot)

    def _pairs(self, t: Any, keys: frozenset[Any] | None, path: Path) -> Column | None:
        """An Iceberg map (an array of two-field records, maybe in a union with null first)
        of int keys to int, long, bytes or string values, read as dicts of the ``keys``."""
        found = self.types.iceberg_map(t)
        if found is None:
            return None
        nullable, key, value = found
        if not isinstance(key, str) or not isinstance(value, str) or key not in _VARINTS or \
                value not in ("int", "long", "bytes", "string") or (
                keys is not None and not all(isinstance(k, int) for k in keys)):
            return None
        keyset = -1
        if keys is not None:
            keyset = len(self.keysets)
            self.keysets.append(frozenset(keys))
        slot = self.slot()
        flag = self.slot()
        if nullable:
            self.op(K.UNION, 2)
            null, present = self.op(K.GOTO), self.op(K.GOTO)
            self.ops[null][1] = self.op(K.NULL, flag, flag + 1)
            done = self.op(K.GOTO)
            self.ops[present][1] = self.here()
        self.op(K.PAIRS, slot, 0 if value in _VARINTS else 1, keyset)
        if nullable:
            self.ops[done][1] = self.here()
        column = columns.pairs(slot, value)
        self.pair_slots[path] = slot
        return columns.nullable(flag, column) if nullable else column

    def _python_decoder(self, t: Any, pairs: bool, keys: frozenset[Any] | None
                        ) -> Callable[[bytes, int], Any]:
        """A generated Python function decoding a value of ``t`` at a position."""
        emitter = Emitter(self.schema)
        if pairs:
            emitter.pair_keys = keys
        emitter.value(t, 1, "value")
        source = "\n".join(["def decode(d, p):", "    end = len(d)", *emitter.lines,
                            "    return value"])
        namespace = {**NAMESPACE, **emitter.consts, "_runs": {}}
        exec(compile(source, "<avro value decoder>", "exec"), namespace)  # our own source
        decode: Callable[[bytes, int], Any] = namespace["decode"]
        return decode

    # ------------------------------------------------------------------ skipped values

    def skip(self, t: Any, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise UnsupportedFeature("Avro schema nests too deeply or refers to itself")
        t = self.resolve(t)
        kind = kind_of(t)
        match kind:
            case "null":
                pass
            case "boolean":
                self.op(K.BOOL, -1)
            case "int" | "long" | "enum":
                self.skip_varints(1)
            case "float" | "double":
                self.op(K.FIXED, -1, 4 if kind == "float" else 8)
            case "bytes" | "string":
                self.op(K.BYTES, -1)
            case "fixed":
                self.op(K.FIXED, -1, int(t["size"]))
            case "union":
                self.op(K.UNION, len(t))
                table = [self.op(K.GOTO) for _ in t]
                exits = []
                for row, branch in zip(table, t, strict=True):
                    self.ops[row][1] = self.here()
                    self.skip(branch, depth + 1)
                    exits.append(self.op(K.GOTO))
                for row in exits:
                    self.ops[row][1] = self.here()
            case "record" | "error":
                for f in t["fields"]:
                    self.skip(f["type"], depth + 1)
            case "array" if self.types.varints(t["items"]):
                self.op(K.SKIP_VARINT_ARRAY, self.types.varints(t["items"]) or 0)
            case "array" if self.types.varint_then_bytes(t["items"]):
                self.op(K.SKIP_BOUND_ARRAY)
            case "array" | "map":
                item = t["items"] if kind == "array" else t["values"]
                flags = K.NEVER_EMPTY if kind == "map" or self.types.never_empty(item) else 0
                start = self.op(K.ARRAY, 0, flags, -1)
                if kind == "map":
                    self.op(K.BYTES, -1)
                self.skip(item, depth + 1)
                self.ops[start][1] = self.op(K.END_ARRAY, start)
            case _:
                raise UnsupportedFeature(f"Unsupported Avro type {kind!r}")


class KernelOps:
    """The op codes and flags of :mod:`icepark.io.avro.kernel`, without importing it (numba
    loads only when a block is decoded)."""

    END, LONG, BYTES, FIXED, BOOL, UNION, GOTO, NULL, ARRAY, END_ARRAY, ITEM, PAIRS, SPAN, \
        SPAN_END, SKIP_VARINTS, SKIP_VARINT_ARRAY, SKIP_BOUND_ARRAY = range(17)
    NEVER_EMPTY = 1
    COLLECT = 2


K = KernelOps
