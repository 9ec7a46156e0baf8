"""Deflated container files inflated whole, outside the GIL.

Avro spec, *Object Container Files*: a file data block is "A long indicating the count of
objects in this block. A long indicating the size in bytes of the serialized objects in the
current block, after any codec is applied. The serialized objects. The file's 16-byte sync
marker." and *Required Codecs*: "The ``deflate`` codec writes the data block using the deflate
algorithm as specified in RFC 1951". Objects are written one after the other, so the inflated
blocks of a file, joined, are the serialized objects of one block of the uncompressed file.

Some writers put each record in a block of its own (pyiceberg's manifests: a thousand deflate
streams of a few hundred bytes each per manifest). Each stream brings its own Huffman tables,
so inflating it costs a few microseconds whatever the language; in Python each also costs a
codec call and a loop step. :func:`inflate_container` does it all in one call compiled by
numba that calls the system zlib (``inflate``, reusing one stream state through
``inflateReset``) and holds no GIL, so a thread reading files ahead inflates them while the
thread decoding them runs Python.

Imported only through :func:`icepark.io.avro.native.inflated`, where numba can be
imported (as for :mod:`icepark.io.avro.kernel`) and a zlib library can be loaded.
"""

from __future__ import annotations

import ctypes.util
import io
import struct
import sys
import zlib
from typing import Any

import llvmlite.binding
import numba
import numpy as np
from numba import types

from icepark.errors import IcebergError
from icepark.io.avro.encoder import zigzag_varint
from icepark.io.avro.header import encode_header
from icepark.io.avro.kernel import run, varint
from icepark.io.avro.reader import open_header

OK, BAD_FRAME, NEED_ROOM, BAD_STREAM, TOO_MANY = range(5)
"""Statuses: :data:`BAD_FRAME` a block's count, size or sync marker is wrong;
:data:`NEED_ROOM` the output is full; :data:`BAD_STREAM` zlib rejects a block;
:data:`TOO_MANY` a block inflates to fewer bytes than its records take."""

_Z_FINISH, _Z_STREAM_END = 4, 1
_ROOM = 6
"""The inflated size first made room for, in times the file's size (manifests inflate to
about 1.3 to 4.5 times theirs): more is made as needed, keeping what is inflated."""
_Z_STREAM_WORDS = 14
"""``sizeof(z_stream)`` in 8-byte words on a 64-bit platform (112 bytes): ``next_in``,
``avail_in`` (padded), ``total_in``, ``next_out``, ``avail_out`` (padded), ``total_out``,
``msg``, ``state``, ``zalloc``, ``zfree``, ``opaque``, ``data_type`` (padded), ``adler``,
``reserved``; all null before ``inflateInit2_``, as zlib asks."""


def _load_zlib() -> bool:
    """Whether the system zlib is loaded for the compiled code to call (on a little-endian
    64-bit platform, where the stream layout above holds)."""
    if sys.byteorder != "little" or struct.calcsize("P") != 8:
        return False
    name = ctypes.util.find_library("z")
    if name is None:
        return False
    try:
        llvmlite.binding.load_library_permanently(name)
    except RuntimeError:
        return False
    return True


AVAILABLE = _load_zlib()
# the zlib functions called from compiled code (``Any``: numba types, untyped)
_init: Any = types.ExternalFunction(
    "inflateInit2_", types.int32(types.voidptr, types.int32, types.voidptr, types.int32))
_inflate: Any = types.ExternalFunction("inflate", types.int32(types.voidptr, types.int32))
_reset: Any = types.ExternalFunction("inflateReset", types.int32(types.voidptr))
_end: Any = types.ExternalFunction("inflateEnd", types.int32(types.voidptr))
VERSION = np.frombuffer(zlib.ZLIB_RUNTIME_VERSION.encode() + b"\0", dtype=np.uint8)


@numba.njit(cache=True, nogil=True)
def frame(d: Any, start: int, sync: Any) -> tuple[int, Any, Any, Any]:  # pragma: no cover
    """(status, counts, offsets, sizes) of the blocks of ``d`` from ``start``, each followed
    by ``sync``."""
    n = d.shape[0]
    most = (n - start) // 18 + 1  # a block takes at least two varints and the marker
    counts = np.empty(most, np.int64)
    offsets = np.empty(most, np.int64)
    sizes = np.empty(most, np.int64)
    blocks = 0
    p = start
    while p < n:
        status, count, p = varint(d, p, n)
        if status:
            return BAD_FRAME, counts[:0], offsets[:0], sizes[:0]
        status, size, p = varint(d, p, n)
        # sizes compared with what is left, never added to a position: a size near 2**63
        # would wrap around past the end
        if status or count < 0 or size < 0 or size > n - p - 16:
            return BAD_FRAME, counts[:0], offsets[:0], sizes[:0]
        for i in range(16):
            if d[p + size + i] != sync[i]:
                return BAD_FRAME, counts[:0], offsets[:0], sizes[:0]
        counts[blocks] = count
        offsets[blocks] = p
        sizes[blocks] = size
        blocks += 1
        p += size + 16
    return OK, counts[:blocks], offsets[:blocks], sizes[:blocks]


@numba.njit(cache=True, nogil=True)
def inflate_blocks(  # noqa: PLR0917 - compiled: numba passes arguments by position
        d: Any, counts: Any, offsets: Any, sizes: Any, smallest: int, out: Any,
        first: int, written: int, version: Any) -> tuple[int, int, int]:  # pragma: no cover
    """(status, the block it stopped at, bytes in ``out``) with the blocks of ``d`` from
    ``first`` inflated into ``out`` after its first ``written`` bytes, one after the other; a
    block of ``count`` records must inflate to ``count * smallest`` bytes at least. With
    :data:`NEED_ROOM`, the blocks before the one it stopped at are in ``out``."""
    stream = np.zeros(_Z_STREAM_WORDS, np.int64)
    handle = stream.ctypes.data
    if _init(handle, -15, version.ctypes.data, _Z_STREAM_WORDS * 8) != 0:
        return BAD_STREAM, first, written
    source, target, room = d.ctypes.data, out.ctypes.data, out.shape[0]
    status = OK
    i = first
    while i < offsets.shape[0]:
        if i > first and _reset(handle) != 0:
            status = BAD_STREAM
            break
        stream[0] = source + offsets[i]
        stream[1] = sizes[i]
        stream[3] = target + written
        stream[4] = room - written
        result = _inflate(handle, _Z_FINISH)
        made = (room - written) - (stream[4] & 0xFFFFFFFF)
        if result != _Z_STREAM_END:
            status = NEED_ROOM if written + made == room else BAD_STREAM
            break
        # no product, which could wrap past a long (a reader's records are never empty:
        # ``smallest`` is 1 at least), so the counts of the inflated blocks add up to less
        # than the bytes made
        if counts[i] > made // max(smallest, 1):
            status = TOO_MANY
            break
        written += made
        i += 1
    _end(handle)
    return status, i, written


@numba.njit(cache=True, nogil=True, inline="always")
def _put_varint(out: Any, p: int, value: int) -> int:  # pragma: no cover - native
    """Write the zig-zag varint of ``value`` (not negative) at ``p``; the position after."""
    z = np.uint64(value) << np.uint64(1)
    while z >= 0x80:
        out[p] = np.uint8((z & np.uint64(0x7F)) | np.uint64(0x80))
        z >>= np.uint64(7)
        p += 1
    out[p] = np.uint8(z)
    return p + 1


@numba.njit(cache=True, nogil=True)
def inflate_files(  # noqa: PLR0917 - compiled: numba passes arguments by position
        data: Any, files: Any, prefixes: Any, syncs: Any, version: Any, ops: Any,
        keysets: Any, slots: int, min_records: int) -> Any:  # pragma: no cover - native
    """Each container file of ``data`` inflated into one uncompressed block, as
    :func:`inflate_container` does, and (where asked) that block decoded by
    :func:`icepark.io.avro.kernel.run` with the program ``ops``, ``keysets``, ``slots``.

    Row ``i`` of ``files`` is the file's start and end in ``data``, where its first block
    starts, the smallest size of one of its records, whether to run the program (1) and the
    start and end in ``prefixes`` of the header its uncompressed form begins with (its metadata
    with the ``null`` codec, and its sync marker, ``syncs[i]``). For each file, a tuple: status
    (:data:`OK` or why it was not inflated), the uncompressed file (a view of its own buffer),
    where its block's records start and end in it, their count, and the kernel's result
    (:func:`icepark.io.avro.kernel.run`'s tuple; an empty run where none was asked or the
    block has fewer than ``min_records`` records)."""
    results = numba.typed.List()
    none2 = np.zeros((0, 0), np.int64)
    none1 = np.zeros(0, np.int64)
    nulls0 = np.zeros((0, 0), np.uint8)
    for i in range(files.shape[0]):
        d = data[files[i, 0]:files[i, 1]]
        sync = syncs[i]
        prefix = prefixes[files[i, 5]:files[i, 6]]
        empty = (-1, 0, none2, none2, nulls0, none1, none1, none1, 0)
        status, counts, offsets, sizes = frame(d, files[i, 2], sync)
        if status or offsets.shape[0] == 0:
            results.append((BAD_FRAME, d[:0], 0, 0, 0, empty))
            continue
        head = prefix.shape[0] + 20  # room for the header and two varints before the records
        out = np.empty(_ROOM * d.shape[0] + 4096 + head + 16, np.uint8)
        block = 0
        written = head
        while True:
            status, block, written = inflate_blocks(d, counts, offsets, sizes, files[i, 3],
                                                    out, block, written, version)
            if status != NEED_ROOM:
                break
            larger = np.empty(2 * out.shape[0], np.uint8)  # the blocks inflated so far kept
            larger[:written] = out[:written]
            out = larger
        if status:
            results.append((status, d[:0], 0, 0, 0, empty))
            continue
        if written + 16 > out.shape[0]:
            larger = np.empty(written + 16, np.uint8)
            larger[:written] = out[:written]
            out = larger
        out[written:written + 16] = sync
        count = counts.sum()
        scratch = np.empty(20, np.uint8)
        lengths = _put_varint(scratch, 0, count)
        lengths = _put_varint(scratch, lengths, written - head)
        start = head - lengths - prefix.shape[0]
        out[start:start + prefix.shape[0]] = prefix
        out[head - lengths:head] = scratch[:lengths]
        ran = empty
        if files[i, 4] and count >= min_records:
            ran = run(ops, keysets, out[head:written], count, slots)
        results.append((OK, out[start:written + 16], head - start, written - start, count,
                        ran))
    return results


def inflate_container(content: bytes, block_bytes: int) -> bytes | None:
    """The container file ``content``, compressed with ``deflate`` in blocks of at most
    ``block_bytes`` on average, as the same file without a codec and with its blocks inflated
    and joined into one block (same metadata, same sync marker); None when it is not such a
    file or anything about it is wrong, for the caller's reader to find and report."""
    if not AVAILABLE:
        return None
    stream = io.BytesIO(content)
    try:
        header = open_header(stream, "")
    except IcebergError:  # the caller's reader reports it
        return None
    if header.codec != "deflate":
        return None
    sync = header.sync
    data = np.frombuffer(content, dtype=np.uint8)
    status, counts, offsets, sizes = frame(data, stream.tell(), np.frombuffer(sync, np.uint8))
    if status or not len(offsets) or int(sizes.sum()) > block_bytes * len(sizes):
        return None
    out = np.empty(_ROOM * len(content) + 4096, np.uint8)
    block = written = 0
    while True:
        status, block, written = inflate_blocks(data, counts, offsets, sizes, header.smallest,
                                                out, block, written, VERSION)
        if status != NEED_ROOM:
            break
        larger = np.empty(2 * len(out), np.uint8)  # the blocks inflated so far kept
        larger[:written] = out[:written]
        out = larger
    if status:
        return None
    metadata = {**header.metadata, "avro.codec": b"null"}
    return b"".join([encode_header(metadata, sync), zigzag_varint(int(counts.sum())),
                     zigzag_varint(written), out[:written].tobytes(), sync])
