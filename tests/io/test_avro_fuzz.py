"""Fuzzing the manifest and manifest list readers with mutated Avro files.

Seeds are valid files: manifests the project writes (v1, v2 and v3; data and delete manifests;
unpartitioned, partitioned by every result type and by a string; deflate, zstd and
uncompressed; several blocks) and manifest lists (ours, v1 and v2, and another
implementation's from ``shared/vectors/avro``). Each example mutates one: byte flips,
truncations, insertions and deletions aimed at a region of the container (magic, metadata map,
schema JSON, sync marker, block count, block size, block body, block sync), huge and negative
varints, duplicated regions, and metadata values (``avro.schema``, ``avro.codec``,
``partition-spec``, ``schema``, ``format-version``, ``content``, ...) replaced by garbage or
mutated JSON. Every read path a table scan takes then reads it:

- the compiled decoder, with and without a partition gate and a metrics filter, entries and
  files only (:func:`read_manifest`, :func:`read_manifest_files`);
- the fastavro decoder the compiled one falls back to (the same functions with compilation
  made to fail);
- :func:`read_manifest_metadata` and :func:`read_manifest_list`.

Each must return, or raise an ``IcebergError`` naming the file, within a time bound, and read
no more from the file than it holds (lengths are bounded by the bytes left, never allocated
first). Both decoders must agree when both read a mutated file. Unused metadata may change
without changing what is read.

Per run: ``test_mutated_manifests`` tries 1,000 mutated manifests (5 read paths each) and
``test_mutated_manifest_lists`` 500 mutated lists; ``ICEPARK_FUZZ_EXAMPLES`` runs more (see
:mod:`tests.fuzzing`).
"""

from __future__ import annotations

import copy
import hashlib
import io as pyio
import json
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import CorruptFile, IcebergError, UnsupportedFeature
from icepark.io.avro import native
from icepark.io.avro.encoder import zigzag_varint
from icepark.io.avro.header import encode_header
from icepark.io.avro.reader import open_header, open_reader
from icepark.io.fileio import ArrowFileIO, FileIO, InputFile
from icepark.io.manifest import manifest as manifest_module
from icepark.io.manifest.decoder import EntryDecoder
from icepark.io.manifest.manifest import (
    ManifestWriter,
    read_manifest,
    read_manifest_files,
    read_manifest_metadata,
)
from icepark.io.manifest.manifest_list import read_manifest_list, write_manifest_list
from icepark.io.manifest.reader import Stats
from icepark.io.preloaded import PreloadedFileIO, PreloadedInput
from icepark.spec.manifest import (
    EntryStatus,
    FieldSummary,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icepark.spec.transforms import Transform
from tests.fuzzing import Hang, fuzz_settings, time_bound
from tests.io.manifest_fixtures import NESTED_SCHEMA, PARTITION_SPEC, data_file, partition_values
from tests.vectors import vectors

VECTORS = vectors("avro")
TIME_BOUND = 10.0  # seconds per read of one mutated file; a correct read takes milliseconds
STRING_SPEC = PartitionSpec(5, (PartitionField(2, 1000, Transform.identity(), "data"),))
_READ_KEYS = frozenset({"avro.schema", "avro.codec", "schema", "partition-spec",
                        "partition-spec-id", "format-version", "content"})


# ----------------------------------------------------------------------------- seed files


@dataclass(frozen=True)
class Seed:
    """A valid file, where it is read from, and (for a manifest) its manifest list entry."""

    name: str
    data: bytes
    location: str
    manifest: ManifestFile | None = None


def _write_manifest(io: ArrowFileIO, directory: str, name: str, spec: PartitionSpec,  # noqa: PLR0917
                    version: Any, content: ManifestContent, codec: str,
                    files: int) -> Seed:
    path = f"{directory}/{name}.avro"
    deletes = content is ManifestContent.DELETES
    with mock.patch.object(manifest_module, "BLOCK_ROWS", 2), ManifestWriter(
            io, path, spec, NESTED_SCHEMA, version, content, snapshot_id=41,
            properties={"write.avro.compression-codec": codec}) as writer:
        for i in range(files):
            file_content = (FileContent.DATA if not deletes else
                            (FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES)[i % 2])
            partition = (None if spec is PARTITION_SPEC else
                         () if not spec.fields else (f"p{i % 2}",))
            f = data_file(i, partition, content=file_content, spec_id=spec.spec_id,
                          distinct_counts=None)
            if i % 3 == 2:
                writer.add(ManifestEntry(EntryStatus.DELETED, f, 40, 3, 3))
            elif i % 3 == 1:
                writer.add(ManifestEntry(EntryStatus.EXISTING, f, 39, 2, 2))
            else:
                writer.add_file(f)
    location = f"mem://fuzz/{name}.avro"
    manifest = replace(writer.to_manifest_file(), manifest_path=location, sequence_number=5,
                       min_sequence_number=2)
    return Seed(name, Path(path).read_bytes(), location, manifest)


def _write_list(io: ArrowFileIO, directory: str, name: str, version: Any) -> Seed:
    path = f"{directory}/{name}.avro"
    summary = FieldSummary(True, False, b"\x01\x00\x00\x00", b"\x09\x00\x00\x00")
    manifests = [ManifestFile(f"s3://b/t/metadata/m{i}.avro", 4000 + i, i % 2, 30 + i,
                              ManifestContent.DATA if version == 1 or i != 2
                              else ManifestContent.DELETES,
                              sequence_number=0 if version == 1 else i + 1,
                              min_sequence_number=0 if version == 1 else i,
                              added_files_count=i, existing_files_count=1,
                              deleted_files_count=0, added_rows_count=10 * i,
                              existing_rows_count=7, deleted_rows_count=0,
                              partitions=(summary,) if i % 2 else None,
                              key_metadata=b"k" if i == 1 else None)
                 for i in range(3)]
    write_manifest_list(io, path, version, 33, 32, 0 if version == 1 else 3, manifests)
    return Seed(name, Path(path).read_bytes(), f"mem://fuzz/{name}.avro")


def _seeds() -> tuple[list[Seed], list[Seed]]:
    with tempfile.TemporaryDirectory(prefix="icepark-fuzz-") as directory:
        manifests, lists = _seeds_in(ArrowFileIO(), directory)
    return [_fixed_sync(s) for s in manifests], [_fixed_sync(s) for s in lists]


def _fixed_sync(seed: Seed) -> Seed:
    """``seed`` with a sync marker made from its name in place of the random one its writer
    chose: the derandomized examples then mutate the same files every run, so a failure in
    one run fails in every run."""
    marker = seed.data[-16:]  # a container file ends with its sync marker
    fixed = hashlib.sha256(seed.name.encode()).digest()[:16]
    return replace(seed, data=seed.data.replace(marker, fixed))


def _seeds_in(io: ArrowFileIO, directory: str) -> tuple[list[Seed], list[Seed]]:
    """The seeds, written under ``directory`` and read back into memory (the directory goes
    once they are read)."""
    manifests = [
        _write_manifest(io, directory, "v2-typed-deflate", PARTITION_SPEC, 2,
                        ManifestContent.DATA, "gzip", 5),
        _write_manifest(io, directory, "v1-unpartitioned-null", UNPARTITIONED, 1,
                        ManifestContent.DATA, "uncompressed", 3),
        _write_manifest(io, directory, "v2-deletes-zstd", STRING_SPEC, 2,
                        ManifestContent.DELETES, "zstd", 4),
        _write_manifest(io, directory, "v3-string-null", STRING_SPEC, 3,
                        ManifestContent.DATA, "uncompressed", 3),
    ]
    lists = [_write_list(io, directory, "list-v1", 1), _write_list(io, directory, "list-v2", 2)]
    lists += [Seed(p.stem, p.read_bytes(), f"mem://fuzz/{p.name}")
              for p in sorted(VECTORS.glob("manifest-list-*.avro"))]
    return manifests, lists


MANIFESTS, LISTS = _seeds()


# ----------------------------------------------------------------------------- the container


def _long(data: bytes, p: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[p]
        value |= (b & 0x7F) << shift
        p += 1
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), p
        shift += 7


@dataclass(frozen=True)
class Layout:
    """Where a seed's parts are: named (start, end) byte ranges, and its metadata map."""

    regions: tuple[tuple[str, int, int], ...]
    metadata: dict[str, bytes]
    header_end: int  # the first byte after the header's sync marker


def layout(data: bytes) -> Layout:
    """The regions of a valid container file (read here independently of the readers);
    ``ValueError`` (or ``IndexError``, ``UnicodeDecodeError``) for an invalid one."""
    regions = [("magic", 0, 4)]
    metadata: dict[str, bytes] = {}
    p = 4
    while True:
        count, q = _long(data, p)
        if not 0 <= count < 100:
            raise ValueError("not a container file")
        regions.append(("metadata count", p, q))
        p = q
        if count == 0:
            break
        for _ in range(count):
            n, q = _long(data, p)
            if not 0 <= n <= len(data) - q:
                raise ValueError("not a container file")
            key = data[q:q + n].decode()
            regions += [("key length", p, q), (f"key {key}", q, q + n)]
            p = q + n
            n, q = _long(data, p)
            if not 0 <= n <= len(data) - q:
                raise ValueError("not a container file")
            regions += [(f"{key} length", p, q), (f"{key} value", q, q + n)]
            metadata[key] = data[q:q + n]
            p = q + n
    regions.append(("sync", p, p + 16))
    header_end = p = p + 16
    while p < len(data):
        _, q = _long(data, p)
        size, r = _long(data, q)
        if size < 0 or r + size + 16 > len(data):
            raise ValueError("not a container file")
        regions += [("block count", p, q), ("block size", q, r), ("block body", r, r + size),
                    ("block sync", r + size, r + size + 16)]
        p = r + size + 16
    return Layout(tuple(regions), metadata, header_end)


def with_metadata(data: bytes, metadata: dict[str, bytes]) -> bytes:
    """``data`` with its header's metadata map replaced (blocks and sync marker kept)."""
    shape = layout(data)
    out = [b"Obj\x01", zigzag_varint(len(metadata))] if metadata else [b"Obj\x01"]
    for key, value in metadata.items():
        k = key.encode()
        out += [zigzag_varint(len(k)), k, zigzag_varint(len(value)), value]
    out.append(b"\x00")
    return b"".join(out) + data[shape.header_end - 16:]


# ----------------------------------------------------------------------------- mutations

_DELETE = object()
_SCHEMA_PIECES: list[Any] = [
    None, True, -1, 0, 7, 2**70, "", "null", "boolean", "int", "long", "float", "double",
    "bytes", "string", "record", "array", "map", "fixed", "enum", "uuid", "decimal", "nope",
    [], {}, ["null"], ["null", "null"], ["string", "long"],
    {"type": "array", "items": "null"}, {"type": "array", "items": "float"},
    {"type": "map", "values": "null"},
    {"type": "fixed", "name": "fz", "size": -3}, {"type": "fixed", "name": "fz", "size": "x"},
    {"type": "fixed", "name": "fz", "size": 2**40}, {"type": "fixed", "name": "f0", "size": 0},
    {"type": "record", "name": "rz", "fields": []},
    {"type": "record", "name": "rz", "fields": [{"name": "x", "type": "rz"}]},
    {"type": "enum", "name": "ez", "symbols": []},
    {"type": "bytes", "logicalType": "decimal", "precision": 99, "scale": -4},
    {"type": "string", "logicalType": "uuid"},
    {"name": "x", "type": "long", "field-id": 100},
    _DELETE,
]
_JSON_PIECES = st.one_of(st.sampled_from(_SCHEMA_PIECES), st.text(max_size=6),
                         st.integers(-(2**64), 2**64))
_TEXT_VALUES = st.one_of(
    st.sampled_from([b"", b"null", b"{}", b"[]", b"-1", b"99", b"1e9", b"deletes", b"data",
                     b"deflate", b"snappy", b"zstandard", b"bzip2", b"xz", b"\xff\xfe",
                     b'{"spec-id": 0, "fields": [{"name": 1}]}', b'[{"source-id": "x"}]',
                     b'{"type": "struct", "fields": [{"id": "a"}]}']),
    st.binary(max_size=12))
_HUGE = [-1, -2, -(2**31), -(2**63), 2**31, 2**62, 2**63 - 1, 1 << 40, 0, 1, 64, 1 << 20]


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _json_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _json_paths(v, (*path, i))


def _json_replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return None if new is _DELETE else copy.deepcopy(new)
    out = copy.copy(value)
    head, rest = path[0], path[1:]
    if rest or new is not _DELETE:
        out[head] = _json_replaced(value[head], rest, new)
    else:
        del out[head]
    return out


@st.composite
def _metadata_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """A metadata value replaced by garbage or its JSON mutated, or a key removed or added."""
    metadata = dict(layout(data).metadata)
    key = draw(st.sampled_from(["avro.schema", "avro.schema", *sorted(metadata),
                                "format-version", "content", "other"]))
    old = metadata.get(key, b"")
    try:
        parsed = json.loads(old)
    except ValueError:
        parsed = None
    choice = draw(st.sampled_from(["json", "json", "garbage", "remove"] if isinstance(
        parsed, dict | list) else ["garbage", "remove"]))
    if choice == "remove":
        metadata.pop(key, None)
    elif choice == "garbage":
        metadata[key] = draw(_TEXT_VALUES)
    else:
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(list(_json_paths(parsed))))
            parsed = _json_replaced(parsed, path, draw(_JSON_PIECES))
        metadata[key] = json.dumps(parsed).encode()
    return with_metadata(data, metadata)


@st.composite
def _byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """One change of bytes aimed at a region of the container."""
    out = bytearray(data)
    shape = layout(data)
    in_blocks = [r for r in shape.regions if r[1] >= shape.header_end]
    header = [r for r in shape.regions if r[1] < shape.header_end][::-1]  # the magic last
    use_blocks = bool(in_blocks) and draw(st.booleans())
    _, start, end = draw(st.sampled_from(in_blocks if use_blocks else header))
    i = draw(st.integers(start, max(start, end - 1)))
    kind = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete", "varint",
                                 "duplicate"]))
    match kind:
        case "flip" if i < len(out):
            out[i] ^= draw(st.integers(1, 255))
        case "set" if i < len(out):
            out[i] = draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF]))
        case "truncate":
            del out[i:]
        case "insert":
            out[i:i] = draw(st.binary(min_size=1, max_size=8))
        case "delete":
            del out[i:i + draw(st.integers(1, 20))]
        case "varint":  # the varint at i (a count, a length, a value) made extreme
            after = i
            while after < len(data) and data[after] & 0x80:
                after += 1
            out[i:after + 1] = zigzag_varint(draw(st.sampled_from(_HUGE)))
        case "duplicate":
            out[end:end] = data[start:end]
    return bytes(out)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Seed]) -> tuple[Seed, bytes]:
    seed = draw(st.sampled_from(seeds))
    data = seed.data
    if draw(st.booleans()):
        data = draw(_metadata_mutation(data))
    for _ in range(draw(st.integers(0 if data != seed.data else 1, 3))):
        if len(data) < 5:
            break
        try:
            layout(data)
        except (ValueError, IndexError):  # already broken: mutate raw bytes
            i = len(data) - 1 - draw(st.integers(0, len(data) - 1))  # the magic least
            data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
            continue
        data = draw(_byte_mutation(data))
    return seed, data


# ----------------------------------------------------------------------------- reading


class _BoundedIO(PreloadedFileIO):
    """Serves one file from memory; fails any read asking for more bytes than it holds."""

    def new_input(self, location: str) -> InputFile:
        data = self.files[location]
        return _BoundedInput(location, data)


@dataclass(frozen=True, slots=True)
class _BoundedInput(PreloadedInput):
    def open(self) -> Any:
        return _BoundedStream(pa.BufferReader(self.data), len(self.data))


class Unbounded(BaseException):
    """A read asked for more bytes than the file holds (see :class:`tests.fuzzing.Hang`)."""


class _BoundedStream:
    def __init__(self, stream: Any, size: int) -> None:
        self._stream, self._size = stream, size

    def read(self, n: int | None = None) -> Any:  # as pyarrow's: no size reads the rest
        if n is None:
            return self._stream.read()
        if n > self._size:
            raise Unbounded(f"read({n}) of a {self._size}-byte file: allocates first")
        return self._stream.read(n)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> _BoundedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def _uncompilable(*args: Any, **kwargs: Any) -> Any:
    del args, kwargs
    raise UnsupportedFeature("compilation disabled: the fastavro decoder reads")


def _gate(partition: tuple[Any, ...]) -> bool:
    return len(repr(partition)) % 3 != 0


def _rejects(metrics: Any) -> bool:
    counts = metrics.value_counts
    return counts is not None and sum(counts.values()) % 2 == 1


def _entries(io: FileIO, seed: Seed) -> list[Any]:
    assert seed.manifest is not None
    specs = {PARTITION_SPEC.spec_id: PARTITION_SPEC, STRING_SPEC.spec_id: STRING_SPEC}
    return list(read_manifest(io, seed.manifest, specs_by_id=specs))


def _planned(io: FileIO, seed: Seed) -> list[Any]:
    assert seed.manifest is not None
    return [f for block in read_manifest_files(io, seed.manifest, stats=Stats.for_columns({1}),
                                               partition_filter=_gate, metrics_filter=_rejects)
            for f in block]


def _generic(read: Callable[[FileIO, Seed], list[Any]]) -> Callable[[FileIO, Seed], list[Any]]:
    def generic(io: FileIO, seed: Seed) -> list[Any]:
        with mock.patch.object(manifest_module, "compiled_entries", _uncompilable):
            return read(io, seed)
    return generic


READERS: dict[str, Callable[[FileIO, Seed], Any]] = {
    "entries": _entries,
    "planned": _planned,
    "entries (fastavro)": _generic(_entries),
    "planned (fastavro)": _generic(_planned),
    "metadata": lambda io, seed: read_manifest_metadata(io, seed.location),
}


def outcome(read: Callable[[FileIO, Seed], Any], seed: Seed, data: bytes, what: str) -> Any:
    """What ``read`` makes of ``data`` in ``seed``'s place: its value's repr (NaN-proof), or
    the typed error it raised, which must name the file. Anything else fails the test."""
    io = _BoundedIO(ArrowFileIO(), {seed.location: data})
    try:
        with time_bound(TIME_BOUND, f"{what} of a mutated {seed.name}"):
            return repr(read(io, seed))
    except (Hang, Unbounded) as e:
        raise AssertionError(f"{what} of a mutated {seed.name}: {e}") from None
    except IcebergError as e:
        assert seed.location in str(e), f"{what}: {type(e).__name__} does not name the file: {e}"
        return e
    except Exception as e:
        raise AssertionError(f"{what} of a mutated {seed.name} raised {type(e).__name__}: "
                             f"{e!s:.300} (not an IcebergError)") from e


def _agree(results: dict[str, Any], a: str, b: str) -> None:
    x, y = results[a], results[b]
    if isinstance(x, str) and isinstance(y, str):
        assert x == y, f"{a} and {b} read the same bytes differently"


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize(("schema", "read"), [
    ({"type": "boolean", "name": "manifest_entry", "fields": None}, [True]),
    ({"type": "record", "name": "r", "fields": [3]}, None),
    ({"type": "record", "name": "r", "fields": [{"name": "a"}]}, None),
    ({"type": "record", "name": "r", "fields": "a"}, None),
])
def test_a_schema_of_odd_fields_is_read_or_reported(schema: Any, read: Any) -> None:
    """Schemas a mutation made (the first one found by ``test_mutated_manifests``): the
    fastavro reader's schema is made from them without an error of its own, and the file is
    read as its schema says, or reported as corrupt."""
    sync = bytes(range(16))
    content = (encode_header({"avro.schema": json.dumps(schema).encode(),
                              "avro.codec": b"null"}, sync)
               + zigzag_varint(1) + zigzag_varint(1) + b"\x01" + sync)
    if read is None:
        with pytest.raises(CorruptFile, match=r"mem://odd\.avro"):
            list(open_reader(pyio.BytesIO(content), "mem://odd.avro").records)
    else:
        assert list(open_reader(pyio.BytesIO(content), "mem://odd.avro").records) == read


def test_seeds_read_back() -> None:
    """The seeds are valid: every path reads them, and the two decoders agree."""
    for seed in MANIFESTS:
        results = {name: outcome(read, seed, seed.data, name) for name, read in READERS.items()}
        assert all(isinstance(r, str) for r in results.values()), results
        assert results["entries"] == results["entries (fastavro)"] != "[]"
        assert results["planned"] == results["planned (fastavro)"]
    for seed in LISTS:
        assert isinstance(outcome(_list, seed, seed.data, "list"), str)
    assert {len(layout(s.data).regions) for s in MANIFESTS} != {12}  # several blocks


@fuzz_settings(1000)
@given(mutated(MANIFESTS))
def test_mutated_manifests(case: tuple[Seed, bytes]) -> None:
    _read_mutated(case)


def _read_mutated(case: tuple[Seed, bytes]) -> None:
    seed, data = case
    results = {name: outcome(read, seed, data, name) for name, read in READERS.items()}
    _agree(results, "entries", "entries (fastavro)")
    _agree(results, "planned", "planned (fastavro)")


@fuzz_settings(500)
@given(mutated(MANIFESTS))
def test_mutated_manifests_read_by_the_kernel(case: tuple[Seed, bytes]) -> None:
    """The same, every block decoded by the compiled kernel (:mod:`icepark.io.avro.native`),
    whose bounds checks are its own."""
    original = native.MIN_RECORDS
    native.MIN_RECORDS = 0
    try:
        _read_mutated(case)
    finally:
        native.MIN_RECORDS = original


DEFLATED = [seed for seed in MANIFESTS if seed.name.endswith("-deflate")]


def test_deflated_seeds_inflate_in_bulk() -> None:
    assert DEFLATED
    for seed in DEFLATED:
        bulk = native.inflated(seed.data, 1 << 30)
        assert bulk is not seed.data
        for name in ("entries", "planned"):
            itself = outcome(READERS[name], seed, seed.data, name)
            assert isinstance(itself, str)
            assert outcome(READERS[name], seed, bulk, name) == itself


@fuzz_settings(300)
@given(mutated(DEFLATED))
def test_mutated_manifests_inflated_in_bulk(case: tuple[Seed, bytes]) -> None:
    """A mutated deflated manifest, inflated whole as planning inflates manifests read ahead
    (:mod:`icepark.io.avro.inflate`; in a batch, :mod:`icepark.io.avro.ahead`, the same
    file or None where the other leaves it as it is), reads as the manifest itself does: the
    same entries, or an error where it has one. Whatever the bulk path cannot frame or inflate
    it leaves as it is, for the reader to report."""
    seed, data = case
    bulk = native.inflated(data, 1 << 30)
    ahead = native.inflate_ahead()
    found = None if ahead is None else ahead.deflated(data)
    if found is not None:  # inflated in a batch (icepark.io.avro.ahead): the same file
        engine = ahead.InflateAhead()
        try:
            [done] = engine.submit([(found, False)], None).result()
        finally:
            engine.close()
        assert (done is None) == (bulk is data)
        assert done is None or done.content == bulk
    if bulk is data:
        return
    for name in ("entries", "planned"):
        itself, inflated = (outcome(READERS[name], seed, content, name)
                            for content in (data, bulk))
        assert isinstance(itself, str) == isinstance(inflated, str), (itself, inflated)
        if isinstance(itself, str):
            assert itself == inflated


def _list(io: FileIO, seed: Seed) -> list[ManifestFile]:
    return read_manifest_list(io, seed.location)


@fuzz_settings(500)
@given(mutated(LISTS))
def test_mutated_manifest_lists(case: tuple[Seed, bytes]) -> None:
    seed, data = case
    outcome(_list, seed, data, "read_manifest_list")


@fuzz_settings(30)
@given(st.sampled_from(MANIFESTS), st.dictionaries(
    st.text(min_size=1, max_size=8).filter(lambda k: k not in _READ_KEYS),
    st.binary(max_size=8), min_size=1, max_size=3))
def test_unread_metadata_changes_nothing(seed: Seed, extra: dict[str, bytes]) -> None:
    """Keys the readers do not use (and ``schema-id``, which they do not need) may change."""
    metadata = {**layout(seed.data).metadata, **extra, "schema-id": b"garbage"}
    data = with_metadata(seed.data, metadata)
    for name, read in READERS.items():
        if name != "metadata":
            assert outcome(read, seed, data, name) == outcome(read, seed, seed.data, name)



@pytest.mark.parametrize("size", [2**31, 2**40, 2**62])
def test_huge_block_size_on_a_local_file(tmp_path: Path, size: int) -> None:
    """A block claiming more bytes than the file holds is corrupt, found without reading."""
    seed = MANIFESTS[1]
    shape = layout(seed.data)
    _, start, end = next(r for r in shape.regions if r[0] == "block size")
    path = tmp_path / "m.avro"
    path.write_bytes(seed.data[:start] + zigzag_varint(size) + seed.data[end:])
    assert seed.manifest is not None
    m = replace(seed.manifest, manifest_path=str(path))
    with pytest.raises(IcebergError, match=r"m\.avro"):
        list(read_manifest(ArrowFileIO(), m))


def test_a_partition_value_its_type_cannot_have_is_a_corrupt_file() -> None:
    """A uuid partition value of 4 bytes (found by ``test_mutated_manifests_inflated_in_bulk``
    in a larger random run): the file is reported as corrupt, by name."""
    [seed] = [s for s in MANIFESTS if s.name == "v2-typed-deflate"]
    schema = open_header(pyio.BytesIO(seed.data), seed.location).schema
    convert = EntryDecoder(schema, PARTITION_SPEC, 2, seed.location).partition_converter()
    assert convert is not None
    expected = partition_values(3)
    at = next(i for i, v in enumerate(expected) if isinstance(v, uuid.UUID))
    values: list[Any] = [None] * len(expected)  # the others null: not converted
    values[at] = expected[at].bytes  # as Avro holds it
    assert convert(tuple(values))[at] == expected[at]
    values[at] = values[at][:4]
    with pytest.raises(CorruptFile, match=r"mem://fuzz/v2-typed-deflate\.avro has a partition "
                                          r"value its type cannot have: .* uuid from 4 bytes"):
        convert(tuple(values))
