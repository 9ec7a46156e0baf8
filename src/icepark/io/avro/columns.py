"""A block as the compiled kernel left it, and the Python values made of it a column at a time.

:func:`icepark.io.avro.kernel.run` leaves each wanted value of a block's records in arrays: a
varint, or where a string, bytes or fixed value starts and ends, a null flag, and the items of
arrays of longs and of Iceberg maps of int keys. :class:`Block` holds them with the rows still
wanted; a :data:`Column` turns one wanted field into its Python values, one per wanted row
(``tolist``, one slice and ``decode`` per string, a converter once per distinct value), as the
generated Python reader of :mod:`icepark.io.avro.compiled` returns them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

Path = tuple[str, ...]
Column = Callable[["Block"], list[Any]]
"""Builds one wanted field's values, one per record of a block."""


class Block:
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


def strings(slot: int) -> Column:
    def column(b: Block) -> list[Any]:
        d = b.d
        return [d[s:e].decode() for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def raw_bytes(slot: int) -> Column:
    def column(b: Block) -> list[Any]:
        d = b.d
        return [d[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def floats(slot: int, size: int) -> Column:
    unpack = struct.Struct("<f" if size == 4 else "<d").unpack_from

    def column(b: Block) -> list[Any]:
        d, last = b.d, len(b.d) - size
        # a null record's slot holds 0, which may not be a value's place: None there
        return [unpack(d, s)[0] if s <= last else None for s in b.v(slot)]
    return column


def booleans(slot: int) -> Column:
    return lambda b: [x == 1 for x in b.v(slot)]


def symbols(slot: int, symbols: tuple[str, ...]) -> Column:
    def column(b: Block) -> list[Any]:
        values = b.v(slot)
        if values and not 0 <= min(values) <= max(values) < len(symbols):
            bad = next(v for v in values if not 0 <= v < len(symbols))
            raise ValueError(f"invalid enum index {bad}")
        return [symbols[v] for v in values]
    return column


def nullable(flag: int, inner: Column) -> Column:
    def column(b: Block) -> list[Any]:
        values = inner(b)
        nulls = b.null(flag)
        if nulls is None:
            return values
        return [None if z else v for v, z in zip(values, nulls, strict=True)]
    return column


def record(fields: list[Column]) -> Column:
    if not fields:
        return lambda b: [()] * b.count
    return lambda b: list(zip(*[f(b) for f in fields], strict=True))


def longs(slot: int) -> Column:
    def column(b: Block) -> list[Any]:
        items = b.list_of("items")
        return [items[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def pairs(slot: int, kind: str) -> Column:
    def column(b: Block) -> list[Any]:
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


def decoded(slot: int, decode: Callable[[bytes, int], Any]) -> Column:
    return lambda b: [decode(b.d, s) for s in b.v(slot)]


def converted(inner: Column, convert: Any) -> Column:
    """:meth:`icepark.io.avro.compiled._Reader.convert`, a column at a time."""
    if isinstance(convert, tuple):
        def by_index(b: Block) -> list[Any]:
            out = []
            for v in inner(b):
                if v is not None and not 0 <= v < len(convert):
                    raise ValueError(f"invalid value {v}")
                out.append(None if v is None else convert[v])
            return out
        return by_index

    def by_function(b: Block) -> list[Any]:
        values = inner(b)
        try:  # converters are functions of the value: once per distinct value
            known = {v: None if v is None else convert(v) for v in set(values)}
        except TypeError:  # unhashable values (lists)
            return [v if v is None else convert(v) for v in values]
        return [known[v] for v in values]
    return by_function
