"""The ``deletion-vector-v1`` blob, byte for byte against the spec, and Puffin files of them.

The expected bytes are built here from the spec text alone (:func:`spec_blob`): the Puffin
spec's frame (big-endian length, magic ``D1 D3 39 64``, vector, big-endian CRC-32), its portable
64-bit layout (8-byte little-endian count, then per key a 4-byte little-endian key and a 32-bit
bitmap), and RoaringFormatSpec's *General layout* of a 32-bit bitmap (cookie 12346 or 12347,
container count, 16-bit keys and cardinalities minus one, offsets "if needed", then array,
bitset and run containers).
"""

from __future__ import annotations

import pickle
import struct
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from icepark.errors import CorruptFile, FileNotFound, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.puffin.bitmap import Positions, to_bitmap, to_positions
from icepark.io.puffin.codec import Codec
from icepark.io.puffin.deletion_vector import (
    ROW_POSITION_FIELD_ID,
    WrittenDeletionVectors,
    WrittenVector,
    deserialize_deletion_vector,
    read_deletion_vector,
    read_deletion_vectors,
    serialize_deletion_vector,
    write_deletion_vectors,
)
from icepark.io.puffin.reader import read_file_metadata
from icepark.io.puffin.writer import PuffinWriter
from icepark.spec.manifest import DataFile, FileContent, FileFormat

Kind = Literal["array", "bitset", "run"]

# --- the spec's layouts, written out independently -----------------------------------------


def container(high: int, kind: Kind, values: Sequence[int]) -> tuple[int, Kind, list[int]]:
    """One 32-bit bitmap container: its 16 high bits, kind and 16-bit low values."""
    return high, kind, sorted(values)


def spec_bitmap32(containers: Sequence[tuple[int, Kind, list[int]]]) -> bytes:
    """RoaringFormatSpec, *General layout*."""
    n = len(containers)
    has_runs = any(kind == "run" for _, kind, _ in containers)
    if has_runs:  # "the cookie ... 12347 ... the number of containers minus one" in 16 high bits
        header = struct.pack("<I", 12347 | (n - 1) << 16)
        flags = bytearray((n + 7) // 8)
        for i, (_, kind, _) in enumerate(containers):
            if kind == "run":
                flags[i // 8] |= 1 << (i % 8)
        header += bytes(flags)
    else:  # "the cookie 12346 ... followed by the number of containers as a 32-bit integer"
        header = struct.pack("<II", 12346, n)
    for high, _, values in containers:
        header += struct.pack("<HH", high, len(values) - 1)
    bodies = [_container_body(kind, values) for _, kind, values in containers]
    if not has_runs or n >= 4:  # the offset header, "if needed" (NO_OFFSET_THRESHOLD = 4)
        offset = len(header) + 4 * n
        for body in bodies:
            header += struct.pack("<I", offset)
            offset += len(body)
    return header + b"".join(bodies)


def _container_body(kind: Kind, values: list[int]) -> bytes:
    if kind == "array":  # "sorted 16-bit values"
        return struct.pack(f"<{len(values)}H", *values)
    if kind == "bitset":  # "1024 64-bit words"
        words = [0] * 1024
        for v in values:
            words[v // 64] |= 1 << (v % 64)
        return struct.pack("<1024Q", *words)
    runs: list[list[int]] = []  # "number of runs, then start and length minus one per run"
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] + 1 == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 0])
    return struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)


def spec_portable(bitmaps: Sequence[tuple[int, bytes]]) -> bytes:
    """"The number of 32-bit Roaring bitmaps, serialized as 8 bytes, little-endian", then each
    key "stored as 4 bytes, little-endian" and its 32-bit bitmap."""
    return struct.pack("<Q", len(bitmaps)) + b"".join(
        struct.pack("<I", key) + bitmap for key, bitmap in bitmaps)


def spec_blob(vector: bytes) -> bytes:
    """Length (big-endian) of magic and vector, the magic, the vector, the CRC-32 of magic and
    vector (big-endian)."""
    body = bytes.fromhex("D1D33964") + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def one_key(*containers: tuple[int, Kind, list[int]]) -> bytes:
    return spec_portable([(0, spec_bitmap32(containers))])


# --- byte for byte --------------------------------------------------------------------------

EVENS = list(range(0, 10000, 2))  # 5000 values: a bitset ("more than 4096")
SPEC_CASES: list[tuple[str, list[int], bytes]] = [
    ("empty", [], spec_portable([])),
    ("array", [1, 2, 5], one_key(container(0, "array", [1, 2, 5]))),
    ("bitset", EVENS, one_key(container(0, "bitset", EVENS))),
    ("run", list(range(100, 10100)), one_key(container(0, "run", list(range(100, 10100))))),
    ("full container", list(range(65536)), one_key(container(0, "run", list(range(65536))))),
    ("array and run, no offsets", [7, *range(65536 + 10, 65536 + 2000)],
     one_key(container(0, "array", [7]), container(1, "run", list(range(10, 2000))))),
    ("four containers with a run: offsets", [1, 65536 + 3, 2 * 65536 + 5,
                                             *range(3 * 65536, 3 * 65536 + 300)],
     one_key(container(0, "array", [1]), container(1, "array", [3]),
             container(2, "array", [5]), container(3, "run", list(range(300))))),
    ("above 2**32", [3, 2**32 + 7, 2**33],
     spec_portable([(0, spec_bitmap32([container(0, "array", [3])])),
                    (1, spec_bitmap32([container(0, "array", [7])])),
                    (2, spec_bitmap32([container(0, "array", [0])]))])),
    ("sparse keys", [2**62 + 65536 * 5 + 9],
     spec_portable([(2**30, spec_bitmap32([container(5, "array", [9])]))])),
    ("largest position", [2**63 - 1],
     spec_portable([(2**31 - 1, spec_bitmap32([container(65535, "array", [65535])]))])),
]


@pytest.mark.parametrize(("positions", "vector"), [c[1:] for c in SPEC_CASES],
                         ids=[c[0] for c in SPEC_CASES])
def test_serialization_matches_the_spec(positions: list[int], vector: bytes) -> None:
    expected = spec_blob(vector)
    assert serialize_deletion_vector(np.array(positions, dtype=np.int64)) == expected
    assert serialize_deletion_vector(BitMap64(positions)) == expected
    decoded = deserialize_deletion_vector(expected, "dv.puffin")
    assert decoded.dtype == np.int64
    assert decoded.tolist() == positions


def test_the_spec_example_bytes_in_full() -> None:
    blob = serialize_deletion_vector([1, 2, 5])
    assert blob.hex() == (
        "00000026" "d1d33964"  # length 38, magic
        "0100000000000000" "00000000"  # one bitmap, key 0
        "3a300000" "01000000" "0000" "0200" "10000000"  # cookie, 1 container, key 0, card 3
        "0100" "0200" "0500"  # the array container
        f"{zlib.crc32(blob[4:-4]):08x}")


def test_unoptimized_input_is_run_length_encoded() -> None:
    bitmap = BitMap64(range(1000), optimize=False)
    assert serialize_deletion_vector(bitmap) == spec_blob(
        one_key(container(0, "run", list(range(1000)))))


@pytest.mark.parametrize("vector", [
    one_key(container(0, "array", [1, 2, 3])),  # an array of a run: writers need not optimize
    one_key(container(0, "run", [4, 5])),  # a run container that is larger than its array
    spec_portable([(0, spec_bitmap32([])), (5, one_key(container(0, "array", [1]))[12:])]),
])
def test_other_writers_choices_decode(vector: bytes) -> None:
    """The reference writer leaves empty bitmaps for keys in gaps; writers need not optimize.
    (A container's kind follows from its cardinality, except runs: a bitset of up to 4096
    values cannot be written.)"""
    assert deserialize_deletion_vector(spec_blob(vector), "dv").tolist() in (
        [1, 2, 3], [4, 5], [5 * 2**32 + 1])


# --- corruption -----------------------------------------------------------------------------

GOOD = spec_blob(one_key(container(0, "array", [1, 2, 5])))
GOOD_VECTOR = GOOD[8:-4]


def _with_crc(blob: bytes) -> bytes:
    return blob[:-4] + struct.pack(">I", zlib.crc32(blob[4:-4]))


CORRUPT_CASES = [
    ("too short", GOOD[:11], r"11 bytes is too short for a deletion vector"),
    ("length field", b"\x00\x00\x00\x27" + GOOD[4:],
     r"the length field says 39 bytes of magic and vector, the blob holds 38"),
    ("magic", _with_crc(GOOD[:4] + b"\xd1\xd3\x39\x65" + GOOD[8:]),
     r"bad magic d1d33965, expected d1d33964"),
    ("crc", GOOD[:-1] + bytes([GOOD[-1] ^ 1]), r"CRC-32 mismatch: stored 0x[0-9a-f]{8}, "
                                              r"computed 0x[0-9a-f]{8}"),
    ("truncated vector", spec_blob(GOOD_VECTOR[:-2]), r"bitmap 0 \(key 0\) is truncated"),
    ("trailing bytes", spec_blob(GOOD_VECTOR + b"\x00\x00"),
     r"2 bytes follow the last Roaring bitmap"),
    ("count too large", spec_blob(struct.pack("<Q", 2) + GOOD_VECTOR[8:]),
     r"truncated at byte 34, reading the key of bitmap 1"),
    ("keys descend", spec_blob(spec_portable([(3, GOOD_VECTOR[12:]), (1, GOOD_VECTOR[12:])])),
     r"bitmap keys must ascend: key 1 follows 3"),
    ("most significant bit", spec_blob(spec_portable([(2**31, GOOD_VECTOR[12:])])),
     r"bitmap key 0x80000000 sets the most significant bit"),
    ("cookie", spec_blob(GOOD_VECTOR[:12] + b"\x39\x30" + GOOD_VECTOR[14:]),
     r"bitmap 0 \(key 0\) has a bad cookie 0x00003039"),
    ("container keys", spec_blob(one_key(container(1, "array", [1]), container(0, "array", [2]))),
     r"the container keys of bitmap 0 \(key 0\) do not ascend"),
    ("unsorted array", spec_blob(GOOD_VECTOR[:-6] + struct.pack("<3H", 5, 2, 1)),
     r"not a valid Roaring bitmap"),
]


@pytest.mark.parametrize(("blob", "message"), [c[1:] for c in CORRUPT_CASES],
                         ids=[c[0] for c in CORRUPT_CASES])
def test_corrupt_vectors_name_the_file_and_the_fault(blob: bytes, message: str) -> None:
    with pytest.raises(CorruptFile, match=r"^Deletion vector in s3://b/dv\.puffin: " + message):
        deserialize_deletion_vector(blob, "s3://b/dv.puffin")


@pytest.mark.parametrize(("positions", "message"), [
    (np.array([3, -1]), r"got -1"),
    (np.array([2**63], dtype=np.uint64), r"got 9223372036854775808"),
    (np.array([[1, 2]]), r"1-D array of integers, not 2-D int64"),
    (np.array([1.5]), r"1-D array of integers, not 1-D float64"),
    (BitMap64([2**63]), r"got 9223372036854775808"),
])
def test_positions_out_of_range_are_refused(positions: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        serialize_deletion_vector(positions)  # type: ignore[arg-type]  # bad input on purpose


# --- conversions and properties -------------------------------------------------------------


def test_numpy_conversions_round_trip_any_integer_dtype() -> None:
    for dtype in (np.int64, np.uint64, np.int32, np.uint32, np.uint16):
        positions = np.array([9, 3, 3, 60000], dtype=dtype)
        assert to_positions(to_bitmap(positions)).tolist() == [3, 9, 60000]
    assert to_positions(to_bitmap(np.array([], dtype=np.int64))).tolist() == []
    assert to_positions(to_bitmap(range(5))).tolist() == [0, 1, 2, 3, 4]


POSITION_SETS = st.one_of(
    st.lists(st.integers(0, 2**63 - 1), max_size=50),
    st.lists(st.integers(0, 3 * 2**32), max_size=200),
    st.builds(lambda start, n, step: list(range(start, start + n * step, step)),
              st.integers(0, 2**40), st.integers(0, 9000), st.integers(1, 3)),
)


@settings(max_examples=150, deadline=None)
@given(POSITION_SETS)
def test_round_trip_property(positions: list[int]) -> None:
    expected = sorted(set(positions))
    blob = serialize_deletion_vector(np.array(positions, dtype=np.uint64))
    assert deserialize_deletion_vector(blob, "dv").tolist() == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**34), max_size=300))
def test_independently_encoded_vectors_decode(positions: list[int]) -> None:
    """Bytes of :func:`spec_blob`, with arrays up to 4096 values and bitsets beyond and no
    runs, decode to their positions."""
    expected = sorted(set(positions))
    bitmaps = []
    for key in sorted({p >> 32 for p in expected}):
        low = [p & 0xFFFFFFFF for p in expected if p >> 32 == key]
        containers = []
        for high in sorted({v >> 16 for v in low}):
            values = [v & 0xFFFF for v in low if v >> 16 == high]
            containers.append(container(high, "array" if len(values) <= 4096 else "bitset",
                                        values))
        bitmaps.append((key, spec_bitmap32(containers)))
    decoded = deserialize_deletion_vector(spec_blob(spec_portable(bitmaps)), "dv")
    assert decoded.tolist() == expected


# --- Puffin files of deletion vectors -------------------------------------------------------

DATA_A = "s3://bucket/data/a.parquet"
DATA_B = "s3://bucket/data/b.parquet"


def _data_file(path: str, partition: tuple[object, ...]) -> DataFile:
    return DataFile(path, FileFormat.PARQUET, partition, 10**6, 1000, spec_id=3)


def test_write_many_vectors_into_one_file(file_io: ArrowFileIO, location: str) -> None:
    path = f"{location}/dv.puffin"
    vectors: dict[str, Positions] = {DATA_A: np.array([5, 1, 2**32 + 1]), DATA_B: range(1000)}
    written = write_deletion_vectors(file_io, path, vectors)

    assert [(v.referenced_data_file, v.cardinality) for v in written.vectors] == [
        (DATA_A, 3), (DATA_B, 1000)]
    assert written.vectors[0].offset == 4
    assert written.vectors[1].offset == written.vectors[0].offset + written.vectors[0].length
    assert written.file_size == file_io.new_input(path).length()

    metadata = read_file_metadata(file_io, path)
    assert metadata.created_by is not None and metadata.created_by.startswith("icepark ")
    assert dict(metadata.properties) == {"created-by": metadata.created_by}
    for blob, vector in zip(metadata.blobs, written.vectors, strict=True):
        assert (blob.type, blob.fields, blob.snapshot_id, blob.sequence_number) == (
            "deletion-vector-v1", (ROW_POSITION_FIELD_ID,), -1, -1)
        assert (blob.offset, blob.length, blob.compression_codec) == (
            vector.offset, vector.length, None)
        assert dict(blob.properties) == {"referenced-data-file": vector.referenced_data_file,
                                         "cardinality": str(vector.cardinality)}

    files = written.data_files({DATA_A: _data_file(DATA_A, (7,)),
                                DATA_B: _data_file(DATA_B, (8,))})
    assert files[0] == DataFile(
        path, FileFormat.PUFFIN, (7,), 3, written.file_size,
        content=FileContent.POSITION_DELETES, spec_id=3, referenced_data_file=DATA_A,
        content_offset=4, content_size_in_bytes=written.vectors[0].length)
    assert files[0].is_deletion_vector and files[0].lower_bounds is None
    assert [read_deletion_vector(file_io, f).tolist() for f in files] == [
        [1, 5, 2**32 + 1], list(range(1000))]
    assert {k: v.tolist() for k, v in read_deletion_vectors(file_io, path).items()} == {
        DATA_A: [1, 5, 2**32 + 1], DATA_B: list(range(1000))}
    assert pickle.loads(pickle.dumps(written)) == written


def test_empty_vector_round_trips_through_a_file(file_io: ArrowFileIO, location: str) -> None:
    written = write_deletion_vectors(file_io, f"{location}/dv.puffin", {DATA_A: []})
    (dv,) = written.data_files({DATA_A: _data_file(DATA_A, ())})
    assert dv.record_count == 0 and dv.content_size_in_bytes == 20
    assert read_deletion_vector(file_io, dv).tolist() == []


@pytest.fixture
def dv_file(file_io: ArrowFileIO, location: str) -> DataFile:
    written = write_deletion_vectors(file_io, f"{location}/dv.puffin", {DATA_A: [1, 2, 5]})
    return written.data_file(written.vectors[0], spec_id=0, partition=())


def test_cardinality_mismatch_is_corrupt(file_io: ArrowFileIO, dv_file: DataFile) -> None:
    with pytest.raises(CorruptFile, match=r"Deletion vector at offset 4 of file://.*/dv\.puffin: "
                       r"the vector holds 3 positions but its record's record_count is 4"):
        read_deletion_vector(file_io, replace(dv_file, record_count=4))


@pytest.mark.parametrize(("change", "message"), [
    ({"content_offset": 5}, r"bad magic|length field"),
    ({"content_size_in_bytes": 45}, r"the length field says 38 bytes of magic and vector, the "
                                    r"blob holds 37"),
    ({"content_offset": 10**5, "file_size_in_bytes": 10**6},
     r"its length 46 reaches past the end of the file \(read 0 bytes\)"),
    ({"content_offset": 10**6}, r"its length 46 does not fit the file of \d+ bytes"),
])
def test_wrong_offsets_are_corrupt(file_io: ArrowFileIO, dv_file: DataFile,
                                   change: dict[str, int], message: str) -> None:
    with pytest.raises(CorruptFile, match=message):
        read_deletion_vector(file_io, replace(dv_file, **change))  # type: ignore[arg-type]


def test_reading_needs_a_deletion_vector(file_io: ArrowFileIO, dv_file: DataFile) -> None:
    parquet = _data_file(DATA_A, ())
    with pytest.raises(ValidationError, match=r"a\.parquet is not a deletion vector: content "
                                              r"DATA, format PARQUET"):
        read_deletion_vector(file_io, parquet)
    with pytest.raises(FileNotFound):
        read_deletion_vector(file_io, replace(dv_file, file_path=dv_file.file_path + ".gone"))


def test_writing_nothing_is_refused(file_io: ArrowFileIO, location: str) -> None:
    with pytest.raises(ValidationError, match="No deletion vectors to write"):
        write_deletion_vectors(file_io, f"{location}/dv.puffin", {})
    with pytest.raises(ValidationError, match="got -3"):
        write_deletion_vectors(file_io, f"{location}/dv.puffin", {DATA_A: [-3]})
    assert not file_io.exists(f"{location}/dv.puffin")  # the failed file was removed


def test_data_files_need_every_referenced_file() -> None:
    written = WrittenDeletionVectors("dv.puffin", 100, (WrittenVector(DATA_A, 4, 40, 3),))
    with pytest.raises(ValidationError, match=r"No data file s3://bucket/data/a\.parquet"):
        written.data_files({})


@pytest.mark.parametrize(("properties", "codec", "message"), [
    ({"cardinality": "3"}, None, r"its blob has no 'referenced-data-file' property"),
    ({"referenced-data-file": DATA_A, "cardinality": "4"}, None,
     r"the vector holds 3 positions but its 'cardinality' property is '4'"),
    ({"referenced-data-file": DATA_A, "cardinality": "3"}, Codec.ZSTD,
     r"its blob is compressed \(zstd\), but \"deletion-vector-v1 is not compressed\""),
])
def test_footer_blob_metadata_is_checked(file_io: ArrowFileIO, location: str,
                                         properties: dict[str, str], codec: Codec | None,
                                         message: str) -> None:
    path = f"{location}/dv.puffin"
    with PuffinWriter(file_io, path) as writer:
        writer.add_blob("deletion-vector-v1", serialize_deletion_vector([1, 2, 5]),
                        fields=(ROW_POSITION_FIELD_ID,), snapshot_id=-1, sequence_number=-1,
                        properties=properties, compression=codec)
    with pytest.raises(CorruptFile, match=r"^Deletion vector at offset 4 of .*dv\.puffin: "
                                          + message):
        read_deletion_vectors(file_io, path)
