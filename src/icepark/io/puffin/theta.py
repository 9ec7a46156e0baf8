r"""The ``apache-datasketches-theta-v1`` blob: a compact Theta sketch of a column's distinct
values.

Puffin spec, *apache-datasketches-theta-v1 blob type*: "A serialized form of a "compact" Theta
sketch produced by the Apache DataSketches library. The sketch is obtained by constructing Alpha
family sketch with default seed, and feeding it with individual distinct values converted to
bytes using Iceberg's single-value serialization." Its blob property ``ndv`` is an "estimate of
number of distinct values, derived from the sketch, stored as non-negative integer value
represented using decimal digits with no leading or trailing spaces."

A Theta sketch keeps the smallest hashes of the values it saw, below a threshold theta; every
update sketch (the Alpha family among them) compacts to the same serialized form, which holds
only the retained hashes and theta. Values are hashed as the library hashes a byte array: the
first 64 bits of MurmurHash3_x64_128 with the default seed 9001, shifted right by one (a
positive 63-bit hash); the library rejects empty arrays, so empty strings and binaries do not
count, in the reference implementation as here.

The Python ``datasketches`` package hashes only ints, floats and strings, so this module hashes
the serialized values itself (:func:`hash_bytes`, and :func:`hash_fixed`, vectorized, for 4-
and 8-byte values) and keeps the ``k`` smallest hashes (:class:`ThetaAccumulator`), which
compact into the library's serialization (*Theta compact sketch*, serial version 3: a
preamble of one to three 8-byte longs, then the sorted hashes). :func:`union` merges such
sketches with the library's ``theta_union``, whose result is the blob.

>>> sketch = ThetaAccumulator()
>>> sketch.update_bytes([b"a", b"bb", b"a", b""])
>>> blob = union([sketch.to_bytes()])
>>> ndv(blob)
2
>>> hash_bytes(b"a") == int(hash_fixed(np.array([ord("a")], np.uint64), 1)[0])
True
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import datasketches
import mmh3
import numpy as np

from icepark.errors import CorruptFile, ValidationError

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"
"""The blob type of a column's Theta sketch."""
NDV_PROPERTY = "ndv"
"""The blob property holding the sketch's estimate of the number of distinct values."""
DEFAULT_SEED = 9001
"""The DataSketches default update seed ("with default seed")."""
DEFAULT_LG_K = 12
"""log2 of the sketches' nominal entries: 4096, the library's default (and the reference
implementation's), about 1.6% relative standard error."""
MAX_THETA = (1 << 63) - 1
"""Theta of a sketch in exact mode (it kept every hash)."""

# Compact sketch preamble (serial version 3, little-endian): byte 0 the preamble longs, 1 the
# serial version, 2 the family (3 = compact), 3-4 unused here, 5 the flags, 6-7 the seed hash;
# then the retained count (int32) and 4 unused bytes, then theta (estimation mode only).
_SERIAL_VERSION = 3
_COMPACT_FAMILY = 3
_READ_ONLY, _EMPTY, _COMPACT, _ORDERED = 2, 4, 8, 16
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)


def _seed_hash(seed: int) -> int:
    """The 16-bit seed hash a serialized sketch carries (checked by every reader)."""
    return int(datasketches.update_theta_sketch(seed=seed).get_seed_hash())


_SEED_HASH = _seed_hash(DEFAULT_SEED)


def hash_bytes(data: bytes, seed: int = DEFAULT_SEED) -> int:
    """The Theta hash of one serialized value: MurmurHash3_x64_128's first 64 bits, >> 1.

    >>> hex(hash_bytes(b"a"))
    '0x7b010785521dc117'
    """
    return int(mmh3.hash64(data, seed, signed=False)[0]) >> 1


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * _F1
    k = k ^ (k >> np.uint64(33))
    k = k * _F2
    mixed: np.ndarray = k ^ (k >> np.uint64(33))
    return mixed


def hash_fixed(values: np.ndarray, width: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """:func:`hash_bytes` of many ``width``-byte values at once (1 to 8 bytes): ``values``
    holds each value's little-endian bytes as an unsigned integer.

    MurmurHash3_x64_128 of fewer than 16 bytes has no body: the tail is one 64-bit block
    ``k1``, then ``h1 ^= rotl(k1 * c1, 31) * c2``, both halves xor the length, and the
    finalization mixes them (``fmix64``).

    >>> import struct
    >>> v = struct.unpack("<Q", struct.pack("<q", -5))[0]  # -5 as a long, its 8 bytes
    >>> int(hash_fixed(np.array([v], np.uint64), 8)[0]) == hash_bytes(struct.pack("<q", -5))
    True
    """
    if not 1 <= width <= 8:
        raise ValidationError(f"Cannot hash {width}-byte values as one block (1 to 8 bytes)")
    with np.errstate(over="ignore"):
        k1 = values.astype(np.uint64, copy=False) * _C1
        k1 = _rotl(k1, 31) * _C2
        h1 = np.full(k1.shape, seed, np.uint64) ^ k1
        h2 = np.full(k1.shape, seed, np.uint64)
        length = np.uint64(width)
        h1 ^= length
        h2 ^= length
        h1 = h1 + h2
        h2 = h2 + h1
        h1 = _fmix(h1)
        h2 = _fmix(h2)
        h1 = h1 + h2
    return h1 >> np.uint64(1)


class ThetaAccumulator:
    """The ``k`` smallest distinct hashes seen, and theta: a KMV Theta sketch that serializes
    in the compact form (:meth:`to_bytes`). Feed it hashes (:meth:`update_hashes`) or
    serialized values (:meth:`update_bytes`); hash 0 is rejected, as the library does."""

    def __init__(self, lg_k: int = DEFAULT_LG_K) -> None:
        if not 4 <= lg_k <= 26:
            raise ValidationError(f"Theta sketch lg_k {lg_k} is out of range (4 to 26)")
        self.k = 1 << lg_k
        self.theta = MAX_THETA
        self._hashes = np.empty(0, np.uint64)
        self._pending: list[np.ndarray] = []
        self._pending_size = 0

    def update_bytes(self, values: Iterable[bytes]) -> None:
        """Add serialized values (empty ones are ignored)."""
        self.update_hashes(np.fromiter((hash_bytes(v) for v in values if v), np.uint64))

    def update_hashes(self, hashes: np.ndarray) -> None:
        """Add hashes (values of :func:`hash_bytes` or :func:`hash_fixed`)."""
        kept = hashes[(hashes < np.uint64(self.theta)) & (hashes != 0)]
        if kept.size:
            self._pending.append(kept)
            self._pending_size += kept.size
            if self._pending_size > 4 * self.k:
                self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        merged = np.unique(np.concatenate([self._hashes, *self._pending]))
        self._pending, self._pending_size = [], 0
        if merged.size > self.k:
            self.theta = int(merged[self.k])
            merged = merged[:self.k]
        self._hashes = merged

    @property
    def retained(self) -> int:
        self._merge()
        return int(self._hashes.size)

    def to_bytes(self) -> bytes:
        """The sketch in the compact serialization (serial version 3, ordered)."""
        self._merge()
        count = int(self._hashes.size)
        flags = _READ_ONLY | _COMPACT | _ORDERED
        exact = self.theta == MAX_THETA
        if count == 0 and exact:
            return struct.pack("<BBBBBBH", 1, _SERIAL_VERSION, _COMPACT_FAMILY, 0, 0,
                               flags | _EMPTY, _SEED_HASH)
        longs = 1 if exact and count == 1 else 2 if exact else 3
        head = struct.pack("<BBBBBBH", longs, _SERIAL_VERSION, _COMPACT_FAMILY, 0, 0, flags,
                           _SEED_HASH)
        if longs >= 2:
            head += struct.pack("<ii", count, 0)
        if longs == 3:
            head += struct.pack("<q", self.theta)
        return head + self._hashes.astype("<u8").tobytes()


def _sketch(data: bytes, where: str) -> datasketches.compact_theta_sketch:
    try:
        return datasketches.compact_theta_sketch.deserialize(bytes(data), DEFAULT_SEED)
    except (RuntimeError, ValueError, IndexError) as e:  # the library's errors for bad input
        raise CorruptFile(f"{where}: not a compact Theta sketch with the default seed: "
                          f"{e}") from None


def union(sketches: Iterable[bytes], lg_k: int = DEFAULT_LG_K) -> bytes:
    """The library's union of serialized compact sketches, serialized (ordered)."""
    merged = datasketches.theta_union(lg_k=lg_k, seed=DEFAULT_SEED)
    for i, data in enumerate(sketches):
        merged.update(_sketch(data, f"sketch {i}"))
    return bytes(merged.get_result(True).serialize())


def estimate(blob: bytes, where: str = "theta sketch") -> float:
    """The sketch's estimate of the number of distinct values."""
    return float(_sketch(blob, where).get_estimate())


def ndv(blob: bytes, where: str = "theta sketch") -> int:
    """The ``ndv`` property of a sketch: its estimate truncated to an integer, as the reference
    implementation writes it."""
    return int(estimate(blob, where))


__all__ = ["DEFAULT_LG_K", "DEFAULT_SEED", "MAX_THETA", "NDV_PROPERTY", "THETA_BLOB_TYPE",
           "ThetaAccumulator", "estimate", "hash_bytes", "hash_fixed", "ndv", "union"]
