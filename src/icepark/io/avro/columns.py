"""A block as the compiled kernel left it, and the Python values made of it a column at a time.

:func:`icepark.io.avro.kernel.run` leaves each wanted value of a block's records in arrays: a
varint, or where a string, bytes or fixed value starts and ends, a null flag, and the items of
arrays of longs and of Iceberg maps of int keys. :class:`Block` holds them with the rows still
wanted; a :data:`Column` turns one wanted field into its Python values, one per wanted row
(``tolist``, one slice and ``decode`` per string, a converter once per distinct value), as the
generated Python reader of :mod:`icepark.io.avro.compiled` returns them.

A column of varints, of strings or bytes, of nulls in a union with those, or of records of
them also has ``codes``: an integer array with a row per record that is equal for two records
exactly when their encoded values are (a row with a null flag may have several). A converted
column with codes (:func:`converted`) makes Python values and converts them only for the first
record of each distinct row of codes (found by compiled code, like the kernel's), then repeats
them in numpy: a file format, a partition
tuple or an entry status is made about once a block instead of once a record.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

Path = tuple[str, ...]
Column = Callable[["Block"], list[Any]]
"""Builds one wanted field's values, one per record of a block."""
Codes = Callable[["Block"], Any]
"""A column's codes (see the module's docs): a 2-D int64 numpy array."""


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
        self._lists: dict[tuple[str, int], Any] = {}
        """Lists (and tuples) made of the arrays, by kind and slot (-1, -2: the items)."""

    def select(self, rows: list[int]) -> None:
        """Keep only ``rows``, numbers among the rows kept so far."""
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        kept = self.subset(np.asarray(rows, dtype=np.int64))
        self.rows, self.count, self._lists = kept.rows, kept.count, kept._lists

    def subset(self, rows: Any) -> Block:
        """The same block with only ``rows`` (a numpy array of numbers among the rows kept)."""
        sub = Block.__new__(Block)
        sub.d, sub.count, sub.values, sub.ends, sub.nulls = (
            self.d, len(rows), self.values, self.ends, self.nulls)
        sub.keys, sub.items, sub.item_ends = self.keys, self.items, self.item_ends
        sub.rows = rows if self.rows is None else self.rows[rows]
        sub._lists = {k: v for k, v in self._lists.items() if k[1] < 0}  # items stay
        return sub

    def array(self, kind: str, slot: int) -> Any:
        """Slot ``slot``'s ``values``, ``ends`` or ``nulls`` for the rows kept (numpy)."""
        row = getattr(self, kind)[slot]
        return row if self.rows is None else row[self.rows]

    def _row_list(self, array: Any, kind: str, slot: int) -> list[Any]:
        found: list[Any] | None = self._lists.get((kind, slot))
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
        row = self.array("nulls", slot)
        return row.tolist() if row.any() else None

    def item_arrays(self, slot: int) -> tuple[Any, Any, Any, Any]:
        """The items of the pairs in slot ``slot`` for the rows kept, as numpy arrays: the
        row number (among the rows kept) of each, its key, its value (or where it starts) and
        where it ends."""
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        starts, ends = self.array("values", slot), self.array("ends", slot)
        lengths = ends - starts
        rows = np.repeat(np.arange(len(lengths)), lengths)
        first = np.cumsum(lengths) - lengths
        index = np.arange(len(rows)) - np.repeat(first - starts, lengths)
        return rows, self.keys[index], self.items[index], self.item_ends[index]

    def single_items(self, slot: int) -> tuple[list[int], list[int], list[int], list[int]] | None:
        """When each row kept has at most one item in slot ``slot``: how many it has (0 or 1),
        and the key, value and value end of its item (anything where it has none), as lists;
        else None."""
        starts, ends = self.array("values", slot), self.array("ends", slot)
        lengths = ends - starts
        if not len(starts) or not len(self.keys) or lengths.max() > 1:
            return None
        at = starts if lengths.all() else starts.clip(max=len(self.keys) - 1)
        return (lengths.tolist(), self.keys[at].tolist(), self.items[at].tolist(),
                self.item_ends[at].tolist())

    def tuple_of(self, name: str) -> tuple[Any, ...]:
        """:meth:`list_of` as a tuple (whose slices are tuples)."""
        found: tuple[Any, ...] | None = self._lists.get((name, -2))
        if found is None:
            found = self._lists[name, -2] = tuple(self.list_of(name))
        return found

    def list_of(self, name: str) -> list[Any]:
        """The collected ``keys``, ``items`` or ``item_ends``, as a list."""
        found: list[Any] | None = self._lists.get((name, -1))
        if found is None:
            found = self._lists[name, -1] = getattr(self, name).tolist()
        return found


class Coded:
    """A column that also has codes (see the module's docs)."""

    __slots__ = ("build", "codes")

    def __init__(self, build: Column, codes: Codes) -> None:
        self.build, self.codes = build, codes

    def __call__(self, b: Block) -> list[Any]:
        return self.build(b)


def codes_of(column: Column) -> Codes | None:
    return column.codes if isinstance(column, Coded) else None


def _varint_codes(slot: int) -> Codes:
    return lambda b: b.array("values", slot)[:, None]


def varints(slot: int) -> Column:
    """Ints and longs."""
    return Coded(lambda b: b.v(slot), _varint_codes(slot))


def _byte_codes(slot: int) -> Codes:
    """Codes of strings or bytes: the number of each distinct content in the block
    (:func:`icepark.io.avro.kernel.range_groups` of the byte ranges)."""
    def codes(b: Block) -> Any:
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        from icepark.io.avro import kernel  # noqa: PLC0415 - numba: only once a kernel ran

        _, groups = kernel.range_groups(np.frombuffer(b.d, dtype=np.uint8),
                                        b.array("values", slot), b.array("ends", slot))
        return groups[:, None]
    return codes


def strings(slot: int) -> Column:
    def column(b: Block) -> list[Any]:
        d = b.d
        return [d[s:e].decode() for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return Coded(column, _byte_codes(slot))


def raw_bytes(slot: int) -> Column:
    def column(b: Block) -> list[Any]:
        d = b.d
        return [d[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return Coded(column, _byte_codes(slot))


def floats(slot: int, size: int) -> Column:
    unpack = struct.Struct("<f" if size == 4 else "<d").unpack_from

    def column(b: Block) -> list[Any]:
        d, last = b.d, len(b.d) - size
        # a null record's slot holds 0, which may not be a value's place: None there
        return [unpack(d, s)[0] if s <= last else None for s in b.v(slot)]
    return column


def booleans(slot: int) -> Column:
    return Coded(lambda b: [x == 1 for x in b.v(slot)], _varint_codes(slot))


def symbols(slot: int, symbols: tuple[str, ...]) -> Column:
    def column(b: Block) -> list[Any]:
        values = b.v(slot)
        if values and not 0 <= min(values) <= max(values) < len(symbols):
            bad = next(v for v in values if not 0 <= v < len(symbols))
            raise ValueError(f"invalid enum index {bad}")
        return [symbols[v] for v in values]
    return Coded(column, _varint_codes(slot))


def nullable(flag: int, inner: Column) -> Column:
    """``inner``'s values where the union's null flag is not set (``inner`` is not made at
    all when every row is null)."""
    def column(b: Block) -> list[Any]:
        nulls = b.array("nulls", flag)
        if not nulls.any():
            return inner(b)
        if nulls.all():
            return [None] * b.count
        return [None if z else v for v, z in zip(inner(b), nulls.tolist(), strict=True)]
    inner_codes = codes_of(inner)
    if inner_codes is None:
        return column

    def codes(b: Block) -> Any:
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        return np.hstack([b.array("nulls", flag)[:, None].astype(np.int64), inner_codes(b)])
    return Coded(column, codes)


def record(fields: list[Column]) -> Column:
    if not fields:
        return Coded(lambda b: [()] * b.count, lambda b: _zeros(b.count))

    def column(b: Block) -> list[Any]:
        return list(zip(*[f(b) for f in fields], strict=True))
    field_codes = [codes_of(f) for f in fields]
    if any(c is None for c in field_codes):
        return column

    def codes(b: Block) -> Any:
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        return np.hstack([c(b) for c in field_codes if c is not None])
    return Coded(column, codes)


def _zeros(count: int) -> Any:
    import numpy as np  # noqa: PLC0415 - loaded with the kernel

    return np.zeros((count, 1), dtype=np.int64)


def longs(slot: int, *, tuples: bool = False) -> Column:
    """Arrays of ints or longs, as lists (as tuples with ``tuples``)."""
    def column(b: Block) -> list[Any]:
        items = b.tuple_of("items") if tuples else b.list_of("items")
        return [items[s:e] for s, e in zip(b.v(slot), b.e(slot), strict=True)]
    return column


def pairs(slot: int, kind: str) -> Column:
    def column(b: Block) -> list[Any]:
        singles = b.single_items(slot)
        if singles is not None:  # at most one item a row (a filter's column): no slicing
            counts, keys, values, ends = singles
            d = b.d
            if 0 in counts:
                return [_pair(kind, d, k, v, e) if n else {}
                        for n, k, v, e in zip(counts, keys, values, ends, strict=True)]
            if kind in ("int", "long"):
                return [{k: v} for k, v in zip(keys, values, strict=True)]
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


def _pair(kind: str, d: bytes, key: int, value: int, end: int) -> dict[int, Any]:
    if kind in ("int", "long"):
        return {key: value}
    return {key: d[value:end] if kind == "bytes" else d[value:end].decode()}


def decoded(slot: int, decode: Callable[[bytes, int], Any]) -> Column:
    return lambda b: [decode(b.d, s) for s in b.v(slot)]


def converted(inner: Column, convert: Any) -> Column:
    """:meth:`icepark.io.avro.compiled._Reader.convert`, a column at a time: with ``inner``'s
    codes, made and converted once per distinct value of the block."""
    plain = _by_index(inner, convert) if isinstance(convert, tuple) else _by_function(
        inner, convert)
    coded = codes_of(inner)
    if coded is None:
        return plain

    def column(b: Block) -> list[Any]:
        if b.count < 2:
            return plain(b)
        first, inverse = distinct_rows(coded(b))
        if len(first) == b.count:
            return plain(b)
        values = plain(b.subset(first))
        if len(values) == 1:  # one value in the block (a file format, an entry status)
            return values * b.count
        import numpy as np  # noqa: PLC0415 - loaded with the kernel

        made = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):  # one at a time: a tuple is one value
            made[i] = value
        out: list[Any] = made[inverse].tolist()
        return out
    return column


def distinct_rows(codes: Any) -> tuple[Any, Any]:
    """The first row of each distinct row of ``codes`` (a 2-D int64 numpy array) and, for every
    row, the number of its distinct row among those (:func:`icepark.io.avro.kernel.
    distinct_rows`, compiled: the kernel that made the block is loaded)."""
    import numpy as np  # noqa: PLC0415 - loaded with the kernel

    from icepark.io.avro import kernel  # noqa: PLC0415 - numba: only once a kernel ran

    first, inverse = kernel.distinct_rows(np.ascontiguousarray(codes, dtype=np.int64))
    return first, inverse


def _by_index(inner: Column, convert: tuple[Any, ...]) -> Column:
    def column(b: Block) -> list[Any]:
        out = []
        for v in inner(b):
            if v is not None and not 0 <= v < len(convert):
                raise ValueError(f"invalid value {v}")
            out.append(None if v is None else convert[v])
        return out
    return column


def _by_function(inner: Column, convert: Callable[[Any], Any]) -> Column:
    def column(b: Block) -> list[Any]:
        values = inner(b)
        try:  # converters are functions of the value: once per distinct value
            known = {v: None if v is None else convert(v) for v in set(values)}
        except TypeError:  # unhashable values (lists)
            return [v if v is None else convert(v) for v in values]
        return [known[v] for v in values]
    return column
