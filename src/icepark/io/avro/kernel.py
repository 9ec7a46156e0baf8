"""A compiled interpreter of Avro decoding programs (:mod:`icepark.io.avro.native`), run
outside the GIL.

Avro spec, *Binary Encoding*: "int and long values are written using variable-length zig-zag
coding"; "bytes are encoded as a long followed by that many bytes of data"; "A union is encoded
by first writing an int value indicating the zero-based position within the union of the schema
of its value"; arrays and maps are "encoded as a series of blocks. Each block consists of a
long count value, followed by that many array items. A block with count zero indicates the end
of the array. ... If a block's count is negative, its absolute value is used, and the count is
followed immediately by a long block size"; "Fixed instances are encoded using the number of
bytes declared in the schema"; floats and doubles are 4 and 8 bytes.

A program is rows of ``(op, a, b, c)`` run once per record. Values are written to *slots*:
``values[slot, record]`` (a varint, or where a string, bytes or fixed value starts),
``ends[slot, record]`` (where it ends) and ``nulls[slot, record]`` (1 where a union took its
null branch). Arrays of longs and Iceberg maps of int keys (*pairs*) append their items to
``keys``/``items``/``item_ends``, the slot holding the range of item numbers. Nothing here
builds a Python object: the kernel is compiled by numba with ``nogil``, so several threads
decode blocks at once, and :mod:`icepark.io.avro.native` turns the arrays into Python values.

Bad data stops the run with a status (see :data:`MESSAGES`) and the position it was found at.
Op tests are written ``op == A or op == B``: numba compiles them to two integer comparisons.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

END, LONG, BYTES, FIXED, BOOL, UNION, GOTO, NULL, ARRAY, END_ARRAY, ITEM, PAIRS, SPAN, \
    SPAN_END, SKIP_VARINTS, SKIP_VARINT_ARRAY, SKIP_BOUND_ARRAY = range(17)
"""Op codes. ``LONG a``: a varint into slot ``a`` (-1: skipped); ``BYTES a``: a length and
that many bytes (start and end in slot ``a``); ``FIXED a, size``; ``BOOL a``; ``UNION n``: a
branch index, then a jump to row ``a`` of the ``n`` rows after it; ``GOTO a``; ``NULL a, b``:
slots ``a`` to ``b - 1`` are null; ``ARRAY end, flags, slot`` ... ``END_ARRAY start``: the rows
between run once per item (flags: :data:`NEVER_EMPTY`, :data:`COLLECT`); ``ITEM``: a varint
item of the array being collected; ``PAIRS slot, kind, keyset``: an array of (varint key,
value) records, the value a varint (kind 0) or bytes (kind 1), keeping the keys in row
``keyset`` of the key sets (-1: every key); ``SPAN a`` / ``SPAN_END a``: where the value
between them starts and ends; ``SKIP_VARINTS n``: ``n`` varints skipped;
``SKIP_VARINT_ARRAY n``: an array of items of ``n`` varints each, skipped;
``SKIP_BOUND_ARRAY``: an array of (varint, bytes) items, skipped (an Iceberg map of bounds)."""
NEVER_EMPTY = 1
"""An array whose items take at least a byte each: a count the bytes left cannot hold is bad."""
COLLECT = 2
"""An array of varints collected as items (else it is skipped, a sized block at once)."""

OK, TRUNCATED, LONG_VARINT, NEGATIVE_LENGTH, BAD_BRANCH, BAD_BOOLEAN, TOO_MANY, LEFT_OVER, \
    NEGATIVE_SIZE, TOO_DEEP = range(10)
MESSAGES = {
    TRUNCATED: "truncated value",
    LONG_VARINT: "varint longer than 10 bytes",
    NEGATIVE_LENGTH: "negative length",
    BAD_BRANCH: "invalid union branch",
    BAD_BOOLEAN: "invalid boolean byte",
    TOO_MANY: "more items than can fit in the block",
    LEFT_OVER: "bytes left after its records",
    NEGATIVE_SIZE: "negative block size",
    TOO_DEEP: "arrays nest too deeply",
}
_STACK = 64


@numba.njit(cache=True, nogil=True, inline="always")
def varint(d: Any, p: int, n: int) -> tuple[int, Any, int]:
    """(status, value, position after it) of the zig-zag varint at ``p``."""
    shift = 0
    acc = np.uint64(0)
    while True:
        if p >= n:
            return TRUNCATED, 0, p
        b = np.uint64(d[p])
        p += 1
        acc |= (b & np.uint64(0x7F)) << np.uint64(shift)
        if b < 0x80:
            value = np.int64(acc >> np.uint64(1)) ^ -np.int64(acc & np.uint64(1))
            return OK, value, p
        shift += 7
        if shift > 63:
            return LONG_VARINT, 0, p


@numba.njit(cache=True, nogil=True, inline="always")
def _skip_varints(d: Any, p: int, n: int, many: int) -> tuple[int, int]:
    """(status, position after) ``many`` varints from ``p``."""
    for _ in range(many):
        while True:
            if p >= n:
                return TRUNCATED, p
            b = d[p]
            p += 1
            if b < 0x80:
                break
    return OK, p


@numba.njit(cache=True, nogil=True, inline="always")
def _block_count(d: Any, p: int, n: int) -> tuple[int, Any, bool, Any, int]:
    """(status, item count, whether a byte size is given, the size, position after) of the
    block of an array or map at ``p``: "If a block's count is negative, its absolute value is
    used, and the count is followed immediately by a long block size" (checked by the caller
    as it uses it)."""
    status, count, p = varint(d, p, n)
    if status or count >= 0:
        return status, count, False, 0, p
    status, size, p = varint(d, p, n)
    return status, -count, True, size, p


@numba.njit(cache=True, nogil=True)
def run(ops: Any, keysets: Any, d: Any, count: int, slots: int
        ) -> tuple[int, int, Any, Any, Any, Any, Any, Any, int]:  # pragma: no cover - native
    """Run ``ops`` over ``count`` records of ``d``: (status, position, values, ends, nulls,
    keys, items, item_ends, item count)."""
    n = d.shape[0]
    values = np.zeros((slots, count), np.int64)
    ends = np.zeros((slots, count), np.int64)
    nulls = np.zeros((slots, count), np.uint8)
    capacity = 256
    keys = np.empty(capacity, np.int64)
    items = np.empty(capacity, np.int64)
    item_ends = np.empty(capacity, np.int64)
    found = 0
    frames = np.empty((_STACK, 2), np.int64)  # (ARRAY row, items left in the block)
    depth = 0
    p = 0
    for r in range(count):
        pc = 0
        while True:
            op = ops[pc, 0]
            a = ops[pc, 1]
            if op == END:
                break
            if op == SKIP_VARINTS:
                status, p = _skip_varints(d, p, n, a)
                if status:
                    return status, p, values, ends, nulls, keys, items, item_ends, found
                pc += 1
            elif op == SKIP_VARINT_ARRAY or op == SKIP_BOUND_ARRAY:  # noqa: PLR1714, SIM109
                while True:
                    status, items_left, sized, size, p = _block_count(d, p, n)
                    if status:
                        return status, p, values, ends, nulls, keys, items, item_ends, found
                    if items_left == 0:
                        break
                    if sized:  # skipped at once
                        if size < 0:
                            return NEGATIVE_SIZE, p, values, ends, nulls, keys, items, \
                                item_ends, found
                        if size > n - p:
                            return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        p += size
                        continue
                    if items_left > n - p:
                        return TOO_MANY, p, values, ends, nulls, keys, items, item_ends, found
                    if op == SKIP_VARINT_ARRAY:
                        status, p = _skip_varints(d, p, n, items_left * a)
                        if status:
                            return status, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        continue
                    for _ in range(items_left):
                        status, p = _skip_varints(d, p, n, 1)
                        if status:
                            return status, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        status, length, p = varint(d, p, n)
                        if status:
                            return status, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        if length < 0:
                            return NEGATIVE_LENGTH, p, values, ends, nulls, keys, items, \
                                item_ends, found
                        if length > n - p:
                            return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        p += length
                pc += 1
            elif op == LONG or op == ITEM:  # noqa: PLR1714, SIM109
                status, v, p = varint(d, p, n)
                if status:
                    return status, p, values, ends, nulls, keys, items, item_ends, found
                if op == ITEM:
                    if found == capacity:
                        capacity *= 2
                        keys = _grown(keys, capacity)
                        items = _grown(items, capacity)
                        item_ends = _grown(item_ends, capacity)
                    keys[found] = 0
                    items[found] = v
                    item_ends[found] = 0
                    found += 1
                elif a >= 0:
                    values[a, r] = v
                pc += 1
            elif op == BYTES:
                status, length, p = varint(d, p, n)
                if status:
                    return status, p, values, ends, nulls, keys, items, item_ends, found
                if length < 0:
                    return NEGATIVE_LENGTH, p, values, ends, nulls, keys, items, item_ends, found
                if length > n - p:
                    return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, found
                if a >= 0:
                    values[a, r] = p
                    ends[a, r] = p + length
                p += length
                pc += 1
            elif op == FIXED:
                size = ops[pc, 2]
                if size > n - p:
                    return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, found
                if a >= 0:
                    values[a, r] = p
                    ends[a, r] = p + size
                p += size
                pc += 1
            elif op == BOOL:
                if p >= n:
                    return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, found
                if d[p] > 1:
                    return BAD_BOOLEAN, p, values, ends, nulls, keys, items, item_ends, found
                if a >= 0:
                    values[a, r] = d[p]
                p += 1
                pc += 1
            elif op == UNION:
                status, branch, p = varint(d, p, n)
                if status:
                    return status, p, values, ends, nulls, keys, items, item_ends, found
                if branch < 0 or branch >= a:
                    return BAD_BRANCH, p, values, ends, nulls, keys, items, item_ends, found
                pc = ops[pc + 1 + branch, 1]
            elif op == GOTO:
                pc = a
            elif op == NULL:
                for s in range(a, ops[pc, 2]):
                    nulls[s, r] = 1
                pc += 1
            elif op == SPAN:
                values[a, r] = p
                pc += 1
            elif op == SPAN_END:
                ends[a, r] = p
                pc += 1
            elif op == ARRAY or op == END_ARRAY:  # noqa: PLR1714, SIM109
                start = pc if op == ARRAY else a
                if op == ARRAY:
                    if ops[pc, 2] & COLLECT:
                        values[ops[pc, 3], r] = found
                else:
                    frames[depth - 1, 1] -= 1
                    if frames[depth - 1, 1] > 0:
                        pc = start + 1
                        continue
                    depth -= 1
                flags = ops[start, 2]
                while True:  # the next block's count
                    status, items_left, sized, size, p = _block_count(d, p, n)
                    if status:
                        return status, p, values, ends, nulls, keys, items, item_ends, found
                    if not sized:
                        break
                    if size < 0:
                        return NEGATIVE_SIZE, p, values, ends, nulls, keys, items, item_ends, \
                            found
                    if flags & COLLECT:
                        break
                    if size > n - p:  # a skipped array: the whole block at once
                        return TRUNCATED, p, values, ends, nulls, keys, items, item_ends, found
                    p += size
                if items_left == 0:
                    if flags & COLLECT:
                        ends[ops[start, 3], r] = found
                    pc = ops[start, 1] + 1
                    continue
                if flags & NEVER_EMPTY and items_left > n - p:
                    return TOO_MANY, p, values, ends, nulls, keys, items, item_ends, found
                if depth == _STACK:
                    return TOO_DEEP, p, values, ends, nulls, keys, items, item_ends, found
                frames[depth, 0] = start
                frames[depth, 1] = items_left
                depth += 1
                pc = start + 1
            else:  # PAIRS
                kind = ops[pc, 2]
                keyset = ops[pc, 3]
                values[a, r] = found
                while True:
                    status, items_left, sized, size, p = _block_count(d, p, n)
                    if status:
                        return status, p, values, ends, nulls, keys, items, item_ends, found
                    if items_left == 0:
                        break
                    if items_left > n - p:
                        return TOO_MANY, p, values, ends, nulls, keys, items, item_ends, found
                    for _ in range(items_left):
                        status, key, p = varint(d, p, n)
                        if status:
                            return status, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        status, v, p = varint(d, p, n)
                        if status:
                            return status, p, values, ends, nulls, keys, items, item_ends, \
                                found
                        v_end = 0
                        if kind == 1:
                            if v < 0:
                                return NEGATIVE_LENGTH, p, values, ends, nulls, keys, items, \
                                    item_ends, found
                            if v > n - p:
                                return TRUNCATED, p, values, ends, nulls, keys, items, \
                                    item_ends, found
                            v_end = p + v
                            v = p
                            p = v_end
                        if keyset >= 0:
                            kept = False
                            for i in range(1, keysets[keyset, 0] + 1):
                                if keysets[keyset, i] == key:
                                    kept = True
                                    break
                            if not kept:
                                continue
                        if found == capacity:
                            capacity *= 2
                            keys = _grown(keys, capacity)
                            items = _grown(items, capacity)
                            item_ends = _grown(item_ends, capacity)
                        keys[found] = key
                        items[found] = v
                        item_ends[found] = v_end
                        found += 1
                ends[a, r] = found
                pc += 1
    if p != n:
        return LEFT_OVER, p, values, ends, nulls, keys, items, item_ends, found
    return OK, p, values, ends, nulls, keys, items, item_ends, found


@numba.njit(cache=True, nogil=True)
def _grown(a: Any, capacity: int) -> Any:  # pragma: no cover - native
    out = np.empty(capacity, a.dtype)
    out[:a.shape[0]] = a
    return out


@numba.njit(cache=True, nogil=True)
def range_groups(values: Any, starts: Any, ends: Any) -> tuple[Any, Any]:  # pragma: no cover
    """Groups of the ranges ``values[starts[i]:ends[i]]`` equal item for item: the first range
    of each group, in order of first appearance, and every range's group number. One pass
    with an open-addressing table of twice the ranges, probed from a hash of each range."""
    n = starts.shape[0]
    size = 2
    while size < 2 * n:
        size *= 2
    mask = size - 1
    table = np.full(size, -1, np.int64)
    first = np.empty(n, np.int64)
    groups_of = np.empty(n, np.int64)
    groups = 0
    for i in range(n):
        s, e = starts[i], ends[i]
        h = np.int64(e - s)
        for p in range(s, e):
            h = (h ^ np.int64(values[p])) * np.int64(1099511628211)
        at = (h ^ (h >> 29)) & mask
        while True:
            g = table[at]
            if g < 0:
                table[at] = groups
                first[groups] = i
                groups_of[i] = groups
                groups += 1
                break
            o = first[g]
            same = ends[o] - starts[o] == e - s
            for q in range(e - s):
                if not same or values[starts[o] + q] != values[s + q]:
                    same = False
                    break
            if same:
                groups_of[i] = g
                break
            at = (at + 1) & mask
    return first[:groups], groups_of


def distinct_rows(codes: Any) -> tuple[Any, Any]:
    """The first row of each distinct row of ``codes`` (a C-ordered int64 matrix), in order of
    first appearance, and for every row the number of its distinct row among those
    (:func:`range_groups` of its rows)."""
    n, k = codes.shape
    starts = np.arange(n, dtype=np.int64) * k
    first, groups_of = range_groups(codes.reshape(-1), starts, starts + k)
    return first, groups_of

