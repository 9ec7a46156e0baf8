"""Reading Avro object container files: records through fastavro, or raw blocks.

Avro spec, *Object Container Files*: "A file consists of: A file header, followed by one or more
file data blocks." The header (:mod:`icepark.io.avro.header`) holds "file metadata, including
the schema" and "the 16-byte, randomly-generated sync marker for this file"; a block is "a long
indicating the count of objects in this block", "a long indicating the size in bytes of the
serialized objects in the current block, after any codec is applied", the serialized objects,
and the sync marker.

Each block is checked and decompressed here. :func:`open_reader` then lets fastavro decode the
records, with the header's schema rewritten without logical types so that dates, times and
timestamps stay the ints Iceberg stores (fastavro would turn them into ``datetime`` values,
which cannot hold every Iceberg value); :func:`open_blocks` hands the blocks to a decoder of
the caller's (:mod:`icepark.io.avro.compiled`).

>>> import io
>>> from icepark.io.avro.encoder import StructColumn
>>> from icepark.io.avro.writer import AvroWriter
>>> schema = {"type": "record", "name": "r", "fields": [
...     {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}
>>> buf = io.BytesIO()
>>> w = AvroWriter(buf, schema, {"k": "v"}, codec="deflate")
>>> w.write_rows(StructColumn({"day": [19000, -1]}, 2))
>>> w.close()
>>> buf.getvalue()[:4], w.bytes_written == len(buf.getvalue())
(b'Obj\\x01', True)
>>> reader = open_reader(io.BytesIO(buf.getvalue()), "mem")
>>> reader.metadata["k"], list(reader.records)
('v', [{'day': 19000}, {'day': -1}])
"""

from __future__ import annotations

import bz2
import functools
import io
import json
import lzma
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import fastavro

from icepark.errors import CorruptFile, UnsupportedFeature
from icepark.io.avro.encoder import zigzag_varint
from icepark.io.avro.header import encode_header, read_header
from icepark.io.avro.varint import read_long


@dataclass(frozen=True, slots=True)
class AvroReader:
    """An open container file: its writer schema (with logical types), its key-value metadata
    (``avro.*`` keys removed) and its records, streamed block by block."""

    schema: Any
    metadata: dict[str, str]
    records: Iterator[dict[str, Any]]


def open_reader(stream: Any, location: str) -> AvroReader:
    """Read the header of the container file in ``stream``; ``CorruptFile`` if it is not one.

    Blocks are checked (sync marker, length) and decompressed here, so fastavro only decodes;
    errors while iterating ``records`` are raised as ``CorruptFile`` too.
    """
    header = open_header(stream, location)
    metadata = {k: v.decode(errors="replace") for k, v in header.metadata.items()}
    # fastavro gets only what it decodes: it would decode every value as UTF-8, where the
    # spec's metadata values are bytes
    patched = {"avro.schema": json.dumps(_strip_logical_types(header.schema)).encode(),
               "avro.codec": b"null"}
    chunks = _blocks(stream, encode_header(patched, header.sync), header, location)
    buffered = io.BufferedReader(_ChunkStream(chunks, stream), buffer_size=1 << 16)
    try:
        reader = fastavro.reader(buffered)
    except Exception as e:  # fastavro raises many types for a bad header
        raise CorruptFile(f"{location} is not a readable Avro file: {e}") from e
    user = {k: v for k, v in metadata.items() if not k.startswith("avro.")}
    return AvroReader(header.schema, user, _records(reader, location))


@dataclass(frozen=True, slots=True)
class ContainerHeader:
    """A container file's header: its metadata map (without the sync marker), its writer
    schema, its codec's name and decompressor, the sync marker and the smallest size of a
    record (see :func:`smallest_record`). The schema is shared by the headers of the same
    schema text (:func:`writer_schema`): read it, never change it."""

    metadata: dict[str, bytes]
    schema: Any
    codec: str
    decompress: Callable[[bytes], bytes] | None
    sync: bytes
    smallest: int


def open_header(stream: Any, location: str) -> ContainerHeader:
    """The header of the container file in ``stream`` (left at the first block);
    ``CorruptFile`` if it holds none, ``UnsupportedFeature`` for a codec not supported."""
    try:
        raw = read_header(stream)
        schema = writer_schema(raw["avro.schema"])
        codec = raw.get("avro.codec", b"null").decode()
        smallest = smallest_record(raw["avro.schema"])
    except (EOFError, KeyError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptFile(f"{location} is not an Avro file: {e or type(e).__name__}") from None
    codec = codec or "null"
    decompress = _decompressor(codec, location)
    sync = raw.pop("avro.sync")
    return ContainerHeader(raw, schema, codec, decompress, sync, smallest)


@functools.lru_cache(maxsize=64)
def writer_schema(schema_json: bytes) -> Any:
    """The parsed ``avro.schema`` of a header, cached by its text: the files of a table share
    a few, and a manifest's schema is long (its partition record, every metric map). The
    value is shared: callers read it and never change it."""
    return json.loads(schema_json)


@functools.lru_cache(maxsize=64)
def smallest_record(schema_json: bytes) -> int:
    """The fewest bytes a value of the schema takes, at least 1: a block of ``n`` records
    holds at least ``n`` bytes, so a huge count in a small block is found before it is
    looped over. ``ValueError`` for a schema that is not valid Avro, or whose values (or the
    items of an array or map in it) can take no bytes at all (Iceberg writes no such schema:
    every record has a field, and Iceberg has no null type). Cached by the schema's text: the
    files of a table share a few."""
    named: dict[str, int] = {}
    smallest = _smallest(json.loads(schema_json), named, None, 0)
    if smallest < 1:
        raise ValueError("its records can be empty")
    return smallest


_SIZES = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1,
          "string": 1}
_MAX_DEPTH = 64


def _smallest(t: Any, named: dict[str, int], namespace: str | None, depth: int) -> int:
    """Avro spec, *Binary Encoding*: the size of the shortest encoding of a ``t`` value."""
    if depth > _MAX_DEPTH:
        raise ValueError("the schema nests too deeply")
    if isinstance(t, str):
        if t in _SIZES:
            return _SIZES[t]
        found = named.get(t, named.get(f"{namespace}.{t}"))
        if found is None:
            raise ValueError(f"unknown type {t!r:.40}")
        return int(found)
    if isinstance(t, list):
        for branch in t:
            _smallest(branch, named, namespace, depth + 1)
        if not t:
            raise ValueError("an empty union")
        return 1  # the branch index
    if not isinstance(t, dict):
        raise ValueError(f"invalid type {t!r:.40}")
    kind = t.get("type")
    name = full = ""
    if kind in ("record", "error", "enum", "fixed"):
        given_name = t.get("name")
        if not isinstance(given_name, str) or not given_name:
            raise ValueError(f"a {kind} without a name")
        name = given_name
        ns = t.get("namespace", namespace)
        full = name if "." in name or not isinstance(ns, str) or not ns else f"{ns}.{name}"
        named[full] = named[name.rsplit(".", 1)[-1]] = 0  # refers to itself: no bytes known
        namespace = full.rsplit(".", 1)[0] if "." in full else None
    size: int
    match kind:
        case "record" | "error":
            fields = t.get("fields")
            if not isinstance(fields, list) or not all(
                    isinstance(f, dict) and isinstance(f.get("name"), str) for f in fields):
                raise ValueError(f"record {t.get('name')!r:.40} has invalid fields")
            size = sum(_smallest(f.get("type"), named, namespace, depth + 1) for f in fields)
        case "enum":
            symbols = t.get("symbols")
            if not isinstance(symbols, list) or not symbols:
                raise ValueError(f"enum {t.get('name')!r:.40} has no symbols")
            size = 1
        case "fixed":
            given = t.get("size")
            if not isinstance(given, int) or isinstance(given, bool) or given < 0:
                raise ValueError(f"fixed {name!r:.40} has an invalid size")
            size = given
        case "array" | "map":
            items = t.get("items" if kind == "array" else "values")
            if _smallest(items, named, namespace, depth + 1) + (kind == "map") < 1:
                raise ValueError(f"{kind} items can be empty")
            return 1  # the count ending the array
        case _:
            return _smallest(kind, named, namespace, depth + 1)
    if kind in ("record", "error", "enum", "fixed"):
        named[full] = named[name.rsplit(".", 1)[-1]] = size
    return size


def _decompressor(codec: str, location: str) -> Callable[[bytes], bytes] | None:
    """Avro spec, *Required Codecs* and *Optional Codecs*."""
    match codec:
        case "null":
            return None
        case "deflate":
            return lambda data: zlib.decompress(data, -15)
        case "bzip2":
            return bz2.decompress
        case "xz":
            return lzma.decompress
        case "zstandard":
            try:
                import zstandard  # noqa: PLC0415 - optional dependency, only for this codec
            except ImportError:
                raise UnsupportedFeature(
                    f"Reading {location} needs the 'zstandard' package: it is compressed with "
                    "zstandard") from None
            return lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data)
        case _:
            raise UnsupportedFeature(f"{location} uses the Avro codec {codec!r:.40}, which is "
                                     "not supported: use null, deflate, bzip2, xz or zstandard")


def _blocks(stream: Any, prefix: bytes, header: ContainerHeader, location: str) -> Iterator[bytes]:
    """The file with every block checked and decompressed, as fastavro reads it, after
    ``prefix`` (the header fastavro is given)."""
    yield prefix
    for count, data in raw_blocks(stream, header, location):
        yield zigzag_varint(count) + zigzag_varint(len(data))
        yield data
        yield header.sync


def raw_blocks(stream: Any, header: ContainerHeader, location: str) -> Iterator[tuple[int, bytes]]:
    """The (record count, decompressed data) of each block after the header: "A file data
    block consists of: A long indicating the count of objects in this block. A long indicating
    the size in bytes of the serialized objects in the current block, after any codec is
    applied. The serialized objects. The file's 16-byte sync marker." A block with more
    records than its bytes can hold (``header.smallest`` each) is corrupt.

    The rest of the file is read at once and its blocks parsed in memory: some writers put
    each record in a block of its own, and reading a block's framing from the stream a few
    bytes at a time would then cost more than decoding it."""
    try:
        data = stream.read()
    except Exception as e:
        raise CorruptFile(f"{location} could not be read: {type(e).__name__}: {e}") from None
    end = len(data)
    p = 0
    sync, decompress, smallest = header.sync, header.decompress, header.smallest
    while p < end:
        try:
            count, p = read_long(data, p)
            size, p = read_long(data, p)
            if count < 0 or size < 0:
                raise ValueError(f"negative block count {count} or size {size}")
            if p + size + 16 > end:
                raise ValueError(f"a block of {size} bytes and its sync marker run past the "
                                 "end of the file")
            block = data[p:p + size]
            p += size
            if data[p:p + 16] != sync:
                raise ValueError("sync marker mismatch")
            p += 16
            if decompress is not None:
                block = decompress(block)
            if count * smallest > len(block):
                raise ValueError(f"{count} records cannot fit in {len(block)} bytes")
        except Exception as e:  # a short read, a bad varint, a codec error
            raise CorruptFile(f"{location} is corrupt or truncated: {type(e).__name__}: {e}"
                              ) from None
        yield count, block


def coalesced(blocks: Iterator[tuple[int, bytes]], min_bytes: int = 1 << 18
              ) -> Iterator[tuple[int, bytes]]:
    """Consecutive ``blocks`` joined until they hold ``min_bytes``: a block's records are
    its bytes one after the other, so joined blocks decode as one, and a decoder's cost per
    block is paid once per ``min_bytes`` instead of once per record for a file written with
    a block per record.

    >>> list(coalesced(iter([(1, b"a"), (2, b"bc"), (1, b"d")]), min_bytes=3))
    [(3, b'abc'), (1, b'd')]
    """
    parts: list[bytes] = []
    count = size = 0
    for n, block in blocks:
        parts.append(block)
        count += n
        size += len(block)
        if size >= min_bytes:
            yield count, parts[0] if len(parts) == 1 else b"".join(parts)
            parts, count, size = [], 0, 0
    if parts:
        yield count, parts[0] if len(parts) == 1 else b"".join(parts)


@dataclass(frozen=True, slots=True)
class AvroBlocks:
    """An open container file read block by block: its writer schema (with logical types;
    shared, see :func:`writer_schema`), its key-value metadata (``avro.*`` keys removed), its
    decompressed blocks and the schema's text, which identifies it."""

    schema: Any
    metadata: dict[str, str]
    blocks: Iterator[tuple[int, bytes]]
    schema_text: bytes = b""


def open_blocks(stream: Any, location: str) -> AvroBlocks:
    """Read the header of the container file in ``stream`` (``CorruptFile`` if it is not one);
    its blocks are checked and decompressed as they are iterated."""
    header = open_header(stream, location)
    user = {k: v.decode(errors="replace") for k, v in header.metadata.items()
            if not k.startswith("avro.")}
    return AvroBlocks(header.schema, user, raw_blocks(stream, header, location),
                      header.metadata["avro.schema"])


class _ChunkStream(io.RawIOBase):
    """A readable stream over byte chunks; closing it closes ``owner``."""

    def __init__(self, chunks: Iterator[bytes], owner: Any) -> None:
        self._chunks = chunks
        self._current = memoryview(b"")
        self._owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._current:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._current = memoryview(chunk)
        view = memoryview(buffer).cast("B")
        n = min(len(view), len(self._current))
        view[:n] = self._current[:n]
        self._current = self._current[n:]
        return n

    def close(self) -> None:
        super().close()
        self._owner.close()


def _records(reader: Any, location: str) -> Iterator[dict[str, Any]]:
    iterator = iter(reader)
    while True:
        try:
            record = next(iterator)
        except StopIteration:
            return
        except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError,
                UnicodeDecodeError, MemoryError) as e:
            raise CorruptFile(f"{location} is corrupt or truncated: {type(e).__name__}: {e}"
                              ) from None
        yield record


def _strip_logical_types(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strip_logical_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    fields = schema.get("fields")
    if isinstance(fields, list):  # anything else is fastavro's to reject, or to ignore
        out["fields"] = [{**f, "type": _strip_logical_types(f["type"])}
                         if isinstance(f, dict) and "type" in f else f for f in fields]
    return out


__all__ = ["AvroBlocks", "AvroReader", "coalesced", "open_blocks", "open_reader", "raw_blocks",
           "smallest_record"]
