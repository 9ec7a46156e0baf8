"""Decoded manifests kept in memory across scans: a bounded cache keyed by manifest path.

Spec, *File System Operations*: "In-place write -- Files are not moved or altered once they are
written." A manifest's entries are therefore the same every time it is read, so a process that
plans scans of the same table again and again (a notebook, a streaming job's micro-batches, a
Spark driver serving many queries) need not decode them again. The reference caches the bytes of
manifest files (its ``io.manifest.cache-*`` catalog properties, off by default); in Python the
cost is decoding, not reading, so this cache keeps what decoding produced: the blocks of entries
(or data files) of each manifest, decoded without partition or metrics filters (those are
applied to the cached entries on every scan, as they would be to fresh ones).

Keys are the manifest's path and length and everything that shapes the decoded entries: the
values inherited from its manifest list entry (*Sequence Number Inheritance*, *First Row ID
Inheritance*), its partition spec, which metric maps were decoded and whether deleted entries
and entry fields were kept. Entries are immutable; callers must not change the cached lists.

The cache is one per process, least recently used first out, bounded by an estimate of the
memory its entries take. Catalog (FileIO) properties, under the reference's names:

* ``io.manifest.cache-enabled`` (default ``true``): ``false`` decodes every scan afresh;
* ``io.manifest.cache.max-total-bytes`` (default 268435456, 256 MiB): the bound. A manifest
  whose entries alone exceed it is not cached, nor are the manifests of a scan whose
  decodings would all together (:func:`fits`): such a scan would only evict its own.

>>> cache = ManifestCache(10_000)
>>> cache.put(("m1.avro", 1), [["a", "b"]], 6_000)
>>> cache.put(("m2.avro", 1), [["c"]], 6_000)  # over the bound: m1 goes
>>> cache.get(("m1.avro", 1)), cache.get(("m2.avro", 1)), cache.holds("m2.avro")
(None, [['c']], True)
>>> cache.total_bytes
6000
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from icepark.errors import ValidationError

DECODED_PER_MANIFEST_BYTE = 4
"""About how many bytes of memory one byte of manifest takes decoded, at least (measured on
icepark's benchmark manifests: 98 bytes of Avro and 635 of decoded entry per data file without
column metrics). A scan whose data manifests would take more than the whole cache decodes
without it (:func:`fits`)."""
ENABLED_PROPERTY = "io.manifest.cache-enabled"
MAX_BYTES_PROPERTY = "io.manifest.cache.max-total-bytes"
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class ManifestCache:
    """Decoded manifest blocks by key, evicted least recently used first past ``max_bytes``
    (estimated: :func:`estimate_bytes`). Safe to share between threads."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.total_bytes = 0
        self._entries: OrderedDict[tuple[Any, ...], tuple[list[list[Any]], int]] = OrderedDict()
        self._paths: dict[str, int] = {}  # manifest path -> number of keys held for it
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> list[list[Any]] | None:
        """The blocks cached under ``key`` (whose first item is the manifest path), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def holds(self, path: str) -> bool:
        """Whether some decoding of the manifest at ``path`` is cached."""
        return path in self._paths

    def put(self, key: tuple[Any, ...], blocks: list[list[Any]], size: int) -> None:
        """Keep ``blocks`` (taking ``size`` bytes) under ``key``, evicting the least recently
        used entries to stay within the bound; nothing is kept if ``size`` alone exceeds it."""
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (blocks, size)
            self._paths[key[0]] = self._paths.get(key[0], 0) + 1
            self.total_bytes += size
            self._shrink(self.max_bytes)

    def resize(self, max_bytes: int) -> None:
        """Change the bound, evicting as needed."""
        with self._lock:
            self.max_bytes = max_bytes
            self._shrink(max_bytes)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._paths.clear()
            self.total_bytes = 0

    def _shrink(self, limit: int) -> None:
        while self.total_bytes > limit and self._entries:
            key, (_, size) = self._entries.popitem(last=False)
            self.total_bytes -= size
            left = self._paths[key[0]] - 1
            if left:
                self._paths[key[0]] = left
            else:
                del self._paths[key[0]]


MANIFEST_CACHE = ManifestCache()
"""The process's cache (see the module docstring)."""


def configured_cache(properties: Mapping[str, str]) -> ManifestCache | None:
    """:data:`MANIFEST_CACHE`, bounded as ``properties`` say, or None when they disable it;
    :class:`ValidationError` for a value that is not a boolean or a size.

    >>> configured_cache({ENABLED_PROPERTY: "false"}) is None
    True
    >>> configured_cache({MAX_BYTES_PROPERTY: "lots"})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Invalid io.manifest.cache.max-total-bytes='lots': use a \
number of bytes (0 or more)
    """
    enabled = properties.get(ENABLED_PROPERTY, "true").strip().lower()
    if enabled not in ("true", "false"):
        raise ValidationError(f"Invalid {ENABLED_PROPERTY}={enabled!r}: use true or false")
    text = properties.get(MAX_BYTES_PROPERTY)
    limit = DEFAULT_MAX_BYTES
    if text is not None:
        try:
            limit = int(text)
        except ValueError:
            limit = -1
        if limit < 0:
            raise ValidationError(f"Invalid {MAX_BYTES_PROPERTY}={text!r}: use a number of "
                                  "bytes (0 or more)")
    if enabled == "false" or limit == 0:
        return None
    if limit != MANIFEST_CACHE.max_bytes:
        MANIFEST_CACHE.resize(limit)
    return MANIFEST_CACHE


_OBJECT = 56  # a slotted object's header and a few pointers, a small tuple or int
_MAP_ITEM = 120  # a dict slot, its key and a small value (an int, or bytes of a bound)


def fits(cache: ManifestCache, manifest_bytes: int) -> bool:
    """Whether the decodings of manifests totalling ``manifest_bytes`` may fit in ``cache``:
    a scan larger than the cache would evict, manifest by manifest, what it had just admitted
    (each scan then misses every manifest, and pays for decoding entries whole, as cached
    entries are, instead of skipping the ones its filter rules out)."""
    return manifest_bytes * DECODED_PER_MANIFEST_BYTE <= cache.max_bytes


def estimate_bytes(blocks: list[list[Any]]) -> int:
    """The memory the decoded ``blocks`` take, estimated from the first item of each block
    (the items of a block have the same shape): the item's slots, its strings and tuples, and
    its metric maps' items."""
    total = 0
    for block in blocks:
        if block:
            total += _item_bytes(block[0]) * len(block)
    return total


def _item_bytes(item: Any) -> int:
    data_file = getattr(item, "data_file", None)
    size = 0
    if data_file is not None:  # an entry and its file
        size += sys.getsizeof(item)
        item = data_file
    size += sys.getsizeof(item)
    for name in getattr(type(item), "__slots__", ()):
        value = getattr(item, name, None)
        if isinstance(value, str | bytes):
            size += sys.getsizeof(value)
        elif isinstance(value, tuple):
            size += sys.getsizeof(value) + _OBJECT * len(value)
        elif isinstance(value, dict):
            size += sys.getsizeof(value) + _MAP_ITEM * len(value)
    return size
