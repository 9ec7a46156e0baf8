"""Avro blocks decoded by a compiled kernel, then turned into Python values a column at a time.

The generated Python readers of :mod:`icepark.io.avro.compiled` walk every byte of a block
under the GIL, so a second planning thread cannot help. This module compiles the same
request (a writer schema, the fields wanted with their converters, a gate, a
:class:`~icepark.io.avro.compiled.Finish`) into a program for :mod:`icepark.io.avro.kernel`,
which walks the block's bytes in machine code without the GIL and leaves each wanted value's
varint or byte range in arrays. Python then builds each wanted field's values as a column
(``tolist``, one slice and ``decode`` per string) and runs the finish over the columns'
rows, so a block's records come out exactly as the generated reader returns them.

Avro spec, *Binary Encoding* (see :mod:`icepark.io.avro.kernel` for the encodings). Natively
decoded: ``null``, ``boolean``, ``int``, ``long``, ``float``, ``double``, ``bytes``,
``string``, ``fixed``, ``enum``, records of those, unions of ``null`` and one of those, arrays
of ints or longs, and Iceberg maps of int keys to int, long, bytes or string values (arrays
of two-field records) read as dicts. Any other wanted value is skipped by the kernel, which
notes where it is, and decoded from there by a generated Python decoder. Skipped values may be
of any type.

The kernel is compiled by numba on first use (cached on disk). Blocks of fewer than
:data:`MIN_RECORDS` records, and every block when numba cannot be imported or
``ICEPARK_AVRO_KERNEL=0`` is set, are read by the generated Python reader alone.

>>> schema = {"type": "record", "name": "r", "fields": [
...     {"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "map", "values": "int"}},
...     {"name": "name", "type": ["null", "string"]}]}
>>> read = native_reader(schema, {("id",): None, ("name",): str.upper})
>>> data = bytes([0x54, 0x02, 0x02, 0x61, 0x0E, 0x00, 0x02, 0x04]) + b"ab"
>>> read(data, 1, None)
[(42, 'AB')]
"""

from __future__ import annotations

import importlib
import os
import struct
import threading
from collections.abc import Callable, Mapping
from typing import Any

from icepark.errors import UnsupportedFeature
from icepark.io.avro.codegen import NAMESPACE, Emitter, kind_of

Path = tuple[str, ...]
Column = Callable[["_Block"], list[Any]]
"""Builds one wanted field's values, one per record of a block."""

MIN_RECORDS = 64
"""Blocks of at least this many records are decoded by the kernel; smaller ones are not worth
the arrays (and a process that reads only small manifests never imports numba)."""
_MAX_DEPTH = 32
_VARINTS = frozenset({"int", "long"})
_PLAIN = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


# ----------------------------------------------------------------------------- the kernel

_MODULES: dict[str, Any] = {}
_MODULES_LOCK = threading.Lock()


def _compiled_module(name: str) -> Any:
    """The module ``icepark.io.avro.<name>`` of numba-compiled functions, imported once;
    None when numba (or what the module needs) cannot be imported or
    ``ICEPARK_AVRO_KERNEL=0``."""
    if name in _MODULES:
        return _MODULES[name]
    with _MODULES_LOCK:
        if name not in _MODULES:
            module: Any = None
            if os.environ.get("ICEPARK_AVRO_KERNEL", "1") != "0":
                try:  # numba: slow to import, and an optional speed-up
                    module = importlib.import_module(f"icepark.io.avro.{name}")
                except ImportError:
                    module = None
            _MODULES[name] = module
    return _MODULES[name]


def kernel() -> Any:
    """The kernel module (:mod:`icepark.io.avro.kernel`), imported (and its functions
    compiled) once; None when numba cannot be imported or ``ICEPARK_AVRO_KERNEL=0``."""
    return _compiled_module("kernel")


def inflated(content: bytes, smallest: Callable[[bytes], int], block_bytes: int) -> bytes:
    """The container file ``content`` with its deflated blocks (``block_bytes`` long at most on
    average) inflated and joined into one uncompressed block, by
    :func:`icepark.io.avro.inflate.inflate_container` without the GIL (``smallest``: the
    fewest bytes a record of a schema takes); ``content`` itself when it is not such a file,
    cannot be inflated that way (its reader reports what is wrong), or numba or zlib cannot
    be loaded."""
    module = _compiled_module("inflate")
    found = None if module is None else module.inflate_container(content, smallest,
                                                                 block_bytes)
    return content if found is None else found


class _Block:
    """A block as the kernel left it: the arrays, the rows still wanted (all at first), and
    the Python lists made of them once."""

    __slots__ = ("_lists", "count", "d", "ends", "item_ends", "items", "keys", "nulls",
                 "rows", "values")

    def __init__(self, d: bytes, count: int, result: tuple[Any, ...]) -> None:
        self.d, self.count = d, count
        _, _, self.values, self.ends, self.nulls, keys, items, item_ends, found = result
        self.keys, self.items, self.item_ends = keys[:found], items[:found], item_ends[:found]
        self.rows: Any = None
        """The row numbers still wanted (numpy), or None: every row."""
        self._lists: dict[tuple[str, int], list[Any]] = {}

    def select(self, rows: list[int]) -> None:
        """Keep only ``rows``, numbers among the rows kept so far."""
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        picked = np.asarray(rows, dtype=np.int64)
        self.rows = picked if self.rows is None else self.rows[picked]
        self.count = len(rows)
        self._lists = {k: v for k, v in self._lists.items() if k[1] < 0}  # items stay

    def _row_list(self, array: Any, kind: str, slot: int) -> list[Any]:
        found = self._lists.get((kind, slot))
        if found is None:
            row = array[slot] if self.rows is None else array[slot][self.rows]
            found = self._lists[kind, slot] = row.tolist()
        return found

    def v(self, slot: int) -> list[int]:
        """Slot ``slot``'s values (varints, or where values start), for the rows kept."""
        return self._row_list(self.values, "v", slot)

    def e(self, slot: int) -> list[int]:
        """Where slot ``slot``'s values end, for the rows kept."""
        return self._row_list(self.ends, "e", slot)

    def null(self, slot: int) -> list[int] | None:
        """Slot ``slot``'s null flags for the rows kept; None when no row is null."""
        row = self.nulls[slot] if self.rows is None else self.nulls[slot][self.rows]
        return row.tolist() if row.any() else None

    def item_arrays(self, slot: int) -> tuple[Any, Any, Any, Any]:
        """The items of the pairs in slot ``slot`` for the rows kept, as numpy arrays: the
        row number (among the rows kept) of each, its key, its value (or where it starts) and
        where it ends."""
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        starts, ends = self.values[slot], self.ends[slot]
        if self.rows is not None:
            starts, ends = starts[self.rows], ends[self.rows]
        lengths = ends - starts
        rows = np.repeat(np.arange(len(lengths)), lengths)
        first = np.cumsum(lengths) - lengths
        index = np.arange(len(rows)) - np.repeat(first - starts, lengths)
        return rows, self.keys[index], self.items[index], self.item_ends[index]

    def single_items(self, slot: int) -> tuple[list[int], list[int], list[int]] | None:
        """When each row kept has exactly one item in slot ``slot``: the key, value and value
        end of each, as lists; else None."""
        starts, ends = self.values[slot], self.ends[slot]
        if self.rows is not None:
            starts, ends = starts[self.rows], ends[self.rows]
        if not len(starts) or not ((ends - starts) == 1).all():
            return None
        return (self.keys[starts].tolist(), self.items[starts].tolist(),
                self.item_ends[starts].tolist())

    def list_of(self, name: str) -> list[Any]:
        """The collected ``keys``, ``items`` or ``item_ends``, as a list."""
        found = self._lists.get((name, -1))
        if found is None:
            found = self._lists[name, -1] = getattr(self, name).tolist()
        return found


# ----------------------------------------------------------------------------- columns


def _strings(slot: int) -> Column:
    def column(b: _Block) -> list[Any]:
        d = b.d
        return [d[s:e].decode() for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def _bytes(slot: int) -> Column:
    def column(b: _Block) -> list[Any]:
        d = b.d
        return [d[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def _floats(slot: int, size: int) -> Column:
    unpack = struct.Struct("<f" if size == 4 else "<d").unpack_from

    def column(b: _Block) -> list[Any]:
        d, last = b.d, len(b.d) - size
        # a null record's slot holds 0, which may not be a value's place: None there
        return [unpack(d, s)[0] if s <= last else None for s in b.v(slot)]
    return column


def _booleans(slot: int) -> Column:
    return lambda b: [x == 1 for x in b.v(slot)]


def _symbols(slot: int, symbols: tuple[str, ...]) -> Column:
    def column(b: _Block) -> list[Any]:
        values = b.v(slot)
        if values and not 0 <= min(values) <= max(values) < len(symbols):
            bad = next(v for v in values if not 0 <= v < len(symbols))
            raise ValueError(f"invalid enum index {bad}")
        return [symbols[v] for v in values]
    return column


def _nullable(flag: int, inner: Column) -> Column:
    def column(b: _Block) -> list[Any]:
        values = inner(b)
        nulls = b.null(flag)
        if nulls is None:
            return values
        return [None if z else v for v, z in zip(values, nulls, strict=True)]
    return column


def _record(fields: list[Column]) -> Column:
    if not fields:
        return lambda b: [()] * b.count
    return lambda b: list(zip(*[f(b) for f in fields], strict=True))


def _longs(slot: int) -> Column:
    def column(b: _Block) -> list[Any]:
        items = b.list_of("items")
        return [items[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def _pairs(slot: int, kind: str) -> Column:
    def column(b: _Block) -> list[Any]:
        singles = b.single_items(slot)
        if singles is not None:  # one item a row (a metrics filter's column): no slicing
            keys, values, ends = singles
            if kind in ("int", "long"):
                return [{k: v} for k, v in zip(keys, values, strict=True)]
            d = b.d
            if kind == "bytes":
                return [{k: d[v:e]} for k, v, e in zip(keys, values, ends, strict=True)]
            return [{k: d[v:e].decode()} for k, v, e in zip(keys, values, ends, strict=True)]
        keys, values = b.list_of("keys"), b.list_of("items")
        ranges = zip(b.v(slot), b.e(slot), strict=True)
        if kind in ("int", "long"):
            return [dict(zip(keys[s:e], values[s:e], strict=True)) for s, e in ranges]
        d, ends = b.d, b.list_of("item_ends")
        if kind == "bytes":
            return [{k: d[v:ve] for k, v, ve in zip(keys[s:e], values[s:e], ends[s:e],
                                                    strict=True)} for s, e in ranges]
        return [{k: d[v:ve].decode() for k, v, ve in zip(keys[s:e], values[s:e], ends[s:e],
                                                         strict=True)} for s, e in ranges]
    return column


def _decoded(slot: int, decode: Callable[[bytes, int], Any]) -> Column:
    return lambda b: [decode(b.d, s) for s in b.v(slot)]


def _converted(inner: Column, convert: Any) -> Column:
    """:meth:`icepark.io.avro.compiled._Reader.convert`, a column at a time."""
    if isinstance(convert, tuple):
        def by_index(b: _Block) -> list[Any]:
            out = []
            for v in inner(b):
                if v is not None and not 0 <= v < len(convert):
                    raise ValueError(f"invalid value {v}")
                out.append(None if v is None else convert[v])
            return out
        return by_index

    def by_function(b: _Block) -> list[Any]:
        values = inner(b)
        try:  # converters are functions of the value: once per distinct value
            known = {v: None if v is None else convert(v) for v in set(values)}
        except TypeError:  # unhashable values (lists)
            return [v if v is None else convert(v) for v in values]
        return [known[v] for v in values]
    return by_function


# ----------------------------------------------------------------------------- programs


class _Program:
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
                self.columns[here] = column if convert is None else _converted(column, convert)
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
            return self._native(t, 0)
        slot = self.slot()
        self.op(K.SPAN, slot)
        self.skip(t)
        self.op(K.SPAN_END, slot)
        return _decoded(slot, self._python_decoder(t, pairs, keys))

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
                return _booleans(slot)
            case "int" | "long":
                slot = self.slot()
                self.op(K.LONG, slot)
                return lambda b: b.v(slot)
            case "float" | "double":
                slot = self.slot()
                size = 4 if kind == "float" else 8
                self.op(K.FIXED, slot, size)
                return _floats(slot, size)
            case "bytes" | "string":
                slot = self.slot()
                self.op(K.BYTES, slot)
                return _strings(slot) if kind == "string" else _bytes(slot)
            case "fixed":
                slot = self.slot()
                self.op(K.FIXED, slot, int(t["size"]))
                return _bytes(slot)
            case "enum":
                slot = self.slot()
                self.op(K.LONG, slot)
                return _symbols(slot, tuple(t["symbols"]))
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
                return _nullable(flag, column)
            case "record" | "error":
                return _record([self._native(f["type"], depth + 1) for f in t["fields"]])
            case _:  # an array of varints
                slot = self.slot()
                start = self.op(K.ARRAY, 0, K.NEVER_EMPTY | K.COLLECT, slot)
                self.op(K.ITEM)
                self.ops[start][1] = self.op(K.END_ARRAY, start)
                return _longs(slot)

    def _pairs(self, t: Any, keys: frozenset[Any] | None, path: Path) -> Column | None:
        """An Iceberg map (an array of two-field records, maybe in a union with null first)
        of int keys to int, long, bytes or string values, read as dicts of the ``keys``."""
        resolved = self.resolve(t)
        nullable = isinstance(resolved, list) and len(resolved) == 2 and \
            self.resolve(resolved[0]) == "null"
        array = self.resolve(resolved[1]) if nullable else resolved
        if not isinstance(array, dict) or array.get("type") != "array":
            return None
        item = self.resolve(array["items"])
        if not isinstance(item, dict) or item.get("type") not in ("record", "error") or \
                len(item["fields"]) != 2:
            return None
        key, value = (self.resolve(f["type"]) for f in item["fields"])
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
        column = _pairs(slot, value)
        self.pair_slots[path] = slot
        return _nullable(flag, column) if nullable else column

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


class _KernelOps:
    """The op codes and flags of :mod:`icepark.io.avro.kernel`, without importing it (numba
    loads only when a block is decoded)."""

    END, LONG, BYTES, FIXED, BOOL, UNION, GOTO, NULL, ARRAY, END_ARRAY, ITEM, PAIRS, SPAN, \
        SPAN_END, SKIP_VARINTS, SKIP_VARINT_ARRAY, SKIP_BOUND_ARRAY = range(17)
    NEVER_EMPTY = 1
    COLLECT = 2


K = _KernelOps


def native_reader(schema: Any, wanted: Mapping[Path, Any], *, gate: Path | None = None,
                  pairs: Mapping[Path, frozenset[Any] | None] | None = None,
                  finish: Any = None) -> Callable[..., list[Any]]:
    """A block reader of ``schema`` records, as :func:`icepark.io.avro.compiled.compile_reader`
    makes one for the same arguments (same results, same errors as ``ValueError``), decoding
    with the kernel. ``UnsupportedFeature`` for a schema it cannot read."""
    pairs = pairs or {}
    program = _Program(schema, pairs)
    top = program.resolve(schema)
    if not isinstance(top, dict) or top.get("type") not in ("record", "error"):
        raise UnsupportedFeature("Only Avro files of records can be compiled")
    if gate is not None and gate not in wanted:
        raise UnsupportedFeature(f"Gate {gate} is not a wanted field")
    names = {path: f"v{i}" for i, path in enumerate(wanted, 1)}
    checked = finish is not None and bool(finish.check)
    # strings decoded once a record is kept: those the gate, the check and converters do not
    # need
    check_reads = {list(wanted)[i] for i in finish.check_reads} if checked else set()
    spans = frozenset(path for path, convert in wanted.items()
                      if (gate is not None or checked) and convert is None and path != gate
                      and path not in check_reads)
    program.record_fields(top, (), wanted, spans)
    program.op(K.END)
    return _assemble(program, wanted, names, gate, finish)


def _assemble(program: _Program, wanted: Mapping[Path, Any], names: dict[Path, str],
              gate: Path | None, finish: Any) -> Callable[..., list[Any]]:
    """The reader: the kernel's run; the gate over its column and the check over the
    columns it reads, each leaving out the rows it rejects before the next columns are made;
    then the other columns, and a loop over their rows decoding spans and running the
    finish."""
    import numpy as np  # noqa: PLC0415 - with pyarrow, already loaded by any reader

    ops = np.array(program.ops, dtype=np.int64)
    width = max((len(k) for k in program.keysets), default=0) + 1
    keysets = np.zeros((max(len(program.keysets), 1), width), dtype=np.int64)
    for i, keys in enumerate(program.keysets):
        keysets[i, 0] = len(keys)
        keysets[i, 1:len(keys) + 1] = sorted(keys)
    slots = max(program.slots, 1)
    paths = list(wanted)
    outputs = [names[path] for path in paths]
    checked = finish is not None and bool(finish.check)
    check_reads = [p for i, p in enumerate(paths) if checked and i in finish.check_reads]
    check_paths = [p for p in check_reads if p in program.columns]

    def loop(over: list[Path], body: list[str], kept: bool) -> str:
        """A loop over the rows of the columns of ``over`` (and of their row numbers)."""
        loop_names = [n for p in over for n in ((names[p], f"{names[p]}_end")
                                                if p in program.spans else (names[p],))]
        if kept:
            loop_names.insert(0, "row")
        head = (f"for {', '.join(loop_names)}{',' if len(loop_names) == 1 else ''} in "
                f"zip({'range(block.count), ' if kept else ''}*columns(block, "
                f"{[paths.index(p) for p in over]})):")
        if not loop_names:
            head = "for _ in range(block.count):"
        return "\n".join([f"    {head}", *(f"        {line}" for line in body)])

    parts = ["def read(d, count, gate, ctx=None):",
             *(f"    {line}" for line in (finish.prologue if finish is not None else ())),
             "    block = run(d, count)"]
    if gate is not None:  # a gate on a field the schema does not have sees None
        parts.append(f"    block.select(gated(gate, block, {paths.index(gate)}))")
    if checked:
        missing = [f"{names[p]} = None" for p in check_reads if p not in program.columns]
        parts += ["    kept = at_once(ctx, block)",
                  "    if kept is None:",
                  "        kept = []",
                  "    " + loop(check_paths, [*missing, *(line.format(*outputs)
                                                        for line in finish.check),
                                             "if not rejected:", "    kept.append(row)"],
                              kept=True).replace("\n", "\n    "),
                  "    block.select(kept)"]
    rest = [p for p in paths if p in program.columns or p in program.spans]
    body = [f"{names[p]} = None" for p in paths if p not in rest]
    body += [f"{names[p]} = d[{names[p]}:{names[p]}_end].decode()" for p in paths
             if p in program.spans]
    if finish is None:
        body.append(f"append(({', '.join(outputs)}{',' if len(outputs) == 1 else ''}))")
    else:
        body += [line.format(*outputs) for line in finish.body]
    parts += ["    out = []", "    append = out.append", loop(rest, body, kept=False),
              "    return out"]
    source = "\n".join(parts)

    def run_kernel(d: bytes, count: int) -> _Block:
        k = kernel()
        result = k.run(ops, keysets, np.frombuffer(d, dtype=np.uint8), count, slots)
        status, position = result[0], result[1]
        if status == k.LEFT_OVER:
            raise ValueError(f"block has {len(d) - position} bytes left after its records")
        if status:
            raise ValueError(f"{k.MESSAGES[status]} at {position}")
        return _Block(d, count, result)

    def columns(block: _Block, which: list[int]) -> list[list[Any]]:
        out: list[list[Any]] = []
        for i in which:
            path = paths[i]
            if path in program.spans:
                out += [block.v(program.spans[path]), block.e(program.spans[path])]
            else:
                out.append(program.columns[path](block))
        return out

    def gated(test: Callable[[Any], bool], block: _Block, i: int) -> list[int]:
        column = program.columns.get(paths[i])
        values = column(block) if column is not None else [None] * block.count
        try:  # a gate is a function of the value: once per distinct value
            verdicts = {v: test(v) for v in set(values)}
        except TypeError:
            return [row for row, v in enumerate(values) if test(v)]
        return [row for row, v in enumerate(values) if verdicts[v]]

    def at_once(ctx: Any, block: _Block) -> list[int] | None:
        """The rows the finish's ``check_all`` keeps, or None: check row by row."""
        check_all = finish.check_all
        if check_all is None:
            return None
        rejected = check_all(ctx, Items(block))
        return None if rejected is None else np.flatnonzero(~rejected).tolist()

    class Items:
        """What a check of a whole block reads: the block's bytes, its row count and the
        items of its wanted Iceberg maps (:meth:`_Block.item_arrays`), by wanted index."""

        def __init__(self, block: _Block) -> None:
            self.block = block
            self.count = block.count
            self.data = np.frombuffer(block.d, dtype=np.uint8)

        def pairs(self, i: int) -> tuple[Any, Any, Any, Any] | None:
            slot = program.pair_slots.get(paths[i])
            return None if slot is None else self.block.item_arrays(slot)

    consts = finish.consts if finish is not None else {}
    namespace = {**NAMESPACE, **consts, "run": run_kernel, "columns": columns, "gated": gated,
                 "at_once": at_once}
    exec(compile(source, "<avro native reader>", "exec"), namespace)  # our own source
    read: Callable[..., list[Any]] = namespace["read"]
    return read
