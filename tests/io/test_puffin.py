"""Puffin files: the spec's layout byte for byte, round trips, codecs against frames made by
the lz4 and zstd command-line tools and the ``zstandard`` package, and every malformed footer
as a ``CorruptFile`` naming the file and the fault."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark import __version__
from icepark.errors import (
    AlreadyExists,
    CorruptFile,
    FileNotFound,
    UnsupportedFeature,
    ValidationError,
)
from icepark.io.fileio import ArrowFileIO
from icepark.io.puffin.codec import Codec, compress, decompress, zstd_content_size
from icepark.io.puffin.metadata import BlobMetadata, FileMetadata
from icepark.io.puffin.reader import TAIL_GUESS, PuffinReader, read_file_metadata
from icepark.io.puffin.writer import PuffinWriter

MAGIC = b"PFA1"  # "four bytes 0x50, 0x46, 0x41, 0x31"

# Frames of TEXT made by the command-line tools (lz4 v1.9.4 `lz4 --content-size`, which also
# writes a content checksum, and plain `lz4`; zstd v1.5.4 `zstd FILE` and `zstd < FILE`).
TEXT = b"deletion vectors " * 5
TEXT = TEXT[:-1] + b"!"
LZ4_CLI = bytes.fromhex(
    "04224d186c405500000000000000011c000000ff0264656c6574696f6e20766563746f72732011002c50746f"
    "72732100000000294207be")
LZ4_CLI_NO_SIZE = bytes.fromhex(
    "04224d186440a71c000000ff0264656c6574696f6e20766563746f72732011002c50746f7273210000000029"
    "4207be")
ZSTD_CLI = bytes.fromhex(
    "28b52ffd2455cd00009064656c6574696f6e20766563746f72732021010081d0b9048cc413a7")
ZSTD_CLI_NO_SIZE = bytes.fromhex(
    "28b52ffd0458cd00009064656c6574696f6e20766563746f72732021010081d0b9048cc413a7")
# `lz4 --content-size` of this footer JSON:
CLI_FOOTER_JSON = (b'{"blobs":[{"type":"a","fields":[1],"snapshot-id":2,"sequence-number":3,'
                   b'"offset":4,"length":5}],"properties":{"created-by":"lz4 CLI"}}')
CLI_FOOTER_LZ4 = bytes.fromhex(
    "04224d186c40850000000000000038850000807b22626c6f6273223a5b7b2274797065223a2261222c226669"
    "656c6473223a5b315d2c22736e617073686f742d6964223a322c2273657175656e63652d6e756d626572223a"
    "332c226f6666736574223a342c226c656e677468223a357d5d2c2270726f70657274696573223a7b22637265"
    "617465642d6279223a226c7a3420434c49227d7d0000000073344f8a")


def puffin_bytes(blobs: bytes, payload: bytes, flags: bytes = b"\0\0\0\0",
                 size: int | None = None) -> bytes:
    """A Puffin file laid out by hand: ``Magic Blobs Magic Payload PayloadSize Flags Magic``."""
    size = len(payload) if size is None else size
    return MAGIC + blobs + MAGIC + payload + struct.pack("<i", size) + flags + MAGIC


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


# --- the spec's layout ----------------------------------------------------------------------


def test_layout_byte_for_byte(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    with PuffinWriter(file_io, location, properties={"created-by": "me"}) as writer:
        writer.add_blob("a", b"hello", fields=(1, 2), snapshot_id=5, sequence_number=6,
                        properties={"k": "v"})
        writer.add_blob("b", b"", fields=(), snapshot_id=-1, sequence_number=-1)
    payload = (b'{"blobs":[{"type":"a","fields":[1,2],"snapshot-id":5,"sequence-number":6,'
               b'"offset":4,"length":5,"properties":{"k":"v"}},{"type":"b","fields":[],'
               b'"snapshot-id":-1,"sequence-number":-1,"offset":9,"length":0}],'
               b'"properties":{"created-by":"me"}}')
    expected = puffin_bytes(b"hello", payload)
    assert (tmp_path / "f.puffin").read_bytes() == expected
    assert writer.result.file_size == len(expected)
    assert writer.result.footer_size == len(payload) + 16  # magic, payload, size, flags, magic


def test_empty_file(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    PuffinWriter(file_io, location, properties={"created-by": "x"}).finish()
    assert (tmp_path / "f.puffin").read_bytes() == puffin_bytes(
        b"", b'{"blobs":[],"properties":{"created-by":"x"}}')
    assert read_file_metadata(file_io, location) == FileMetadata((), {"created-by": "x"})


def test_created_by_names_icepark_and_its_version(file_io: ArrowFileIO, tmp_path: Path) -> None:
    with PuffinWriter(file_io, str(tmp_path / "f.puffin"), properties={"a": "b"}) as writer:
        pass
    assert dict(writer.result.properties) == {"created-by": f"icepark {__version__}", "a": "b"}


# --- round trips ----------------------------------------------------------------------------

ROUND_TRIPS: list[tuple[str, dict[str, Any], bool]] = [
    ("plain", {}, False),
    ("lz4 blob", {"compression": Codec.LZ4}, False),
    ("zstd blob", {"compression": Codec.ZSTD}, False),
    ("compressed footer", {}, True),
    ("zstd blob, compressed footer", {"compression": Codec.ZSTD}, True),
]


@pytest.mark.parametrize(("options", "compress_footer"), [c[1:] for c in ROUND_TRIPS],
                         ids=[c[0] for c in ROUND_TRIPS])
def test_round_trip(file_io: ArrowFileIO, tmp_path: Path, options: dict[str, Any],
                    compress_footer: bool) -> None:
    location = str(tmp_path / "f.puffin")
    blobs = {"apache-datasketches-theta-v1": b"sketch " * 300, "other": bytes(range(256))}
    with PuffinWriter(file_io, location, compress_footer=compress_footer) as writer:
        written = [writer.add_blob(kind, data, fields=(3,), snapshot_id=42, sequence_number=7,
                                   properties={"ndv": "12"}, **options)
                   for kind, data in blobs.items()]
    with PuffinReader(file_io, location, file_size=writer.result.file_size) as reader:
        assert reader.metadata.blobs == tuple(written) == writer.result.blobs
        assert [reader.read_blob(b) for b in reader.metadata.blobs] == list(blobs.values())
    codec = options.get("compression")
    assert [b.compression_codec for b in written] == [codec and str(codec)] * 2


def test_footer_compression_sets_flag_bit_0(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    with PuffinWriter(file_io, location, compress_footer=True) as writer:
        writer.add_blob("a", b"x", fields=(1,), snapshot_id=1, sequence_number=1)
    data = (tmp_path / "f.puffin").read_bytes()
    assert data[-8:-4] == b"\x01\x00\x00\x00"
    size = struct.unpack("<i", data[-12:-8])[0]
    frame = data[-12 - size:-12]
    assert writer.result.footer_size == size + 16
    assert frame[4] & 0x08  # the LZ4 frame's content-size flag
    content_size = struct.unpack("<Q", frame[6:14])[0]
    # Arrow's own liblz4 reads it: an independent decoder.
    payload = pa.decompress(frame, decompressed_size=content_size, codec="lz4", asbytes=True)
    assert json.loads(payload)["blobs"][0]["type"] == "a"


def test_footer_compressed_by_the_lz4_tool(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = write(tmp_path / "f.puffin",
                     puffin_bytes(b"12345", CLI_FOOTER_LZ4, flags=b"\x01\0\0\0"))
    assert decompress(Codec.LZ4, CLI_FOOTER_LZ4, "footer") == CLI_FOOTER_JSON
    metadata = read_file_metadata(file_io, location)
    assert metadata == FileMetadata((BlobMetadata("a", (1,), 2, 3, 4, 5),),
                                    {"created-by": "lz4 CLI"})


def test_large_footer_is_read_in_two_parts(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    with PuffinWriter(file_io, location) as writer:
        for i in range(300):
            writer.add_blob("t", b"x", fields=(i,), snapshot_id=i, sequence_number=i,
                            properties={"p": "v" * 50})
    assert writer.result.footer_size > TAIL_GUESS
    assert len(read_file_metadata(file_io, location).blobs) == 300
    assert len(read_file_metadata(file_io, location, footer_size=writer.result.footer_size,
                                  file_size=writer.result.file_size).blobs) == 300


def test_values_pickle() -> None:
    blob = BlobMetadata("a", (1,), 2, 3, 4, 5, "zstd", {"k": "v"})
    assert pickle.loads(pickle.dumps(blob)) == blob
    metadata = FileMetadata((blob,), {"created-by": "x"})
    assert pickle.loads(pickle.dumps(metadata)) == metadata


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=3000), st.sampled_from([None, *Codec]),
                          st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2)),
                max_size=5),
       st.booleans())
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory,
                             blobs: list[tuple[bytes, Codec | None, dict[str, str]]],
                             compress_footer: bool) -> None:
    file_io = ArrowFileIO()
    location = str(tmp_path_factory.mktemp("puffin") / "f.puffin")
    with PuffinWriter(file_io, location, compress_footer=compress_footer) as writer:
        for data, codec, props in blobs:
            writer.add_blob("t", data, fields=(1,), snapshot_id=1, sequence_number=1,
                            properties=props, compression=codec)
    with PuffinReader(file_io, location) as reader:
        assert [dict(b.properties) for b in reader.metadata.blobs] == [p for *_, p in blobs]
        assert [reader.read_blob(b) for b in reader.metadata.blobs] == [d for d, *_ in blobs]


# --- codecs against independent frames ------------------------------------------------------

INDEPENDENT_FRAMES = [
    ("lz4 tool", Codec.LZ4, LZ4_CLI),
    ("lz4 tool, no content size", Codec.LZ4, LZ4_CLI_NO_SIZE),
    ("zstd tool", Codec.ZSTD, ZSTD_CLI),
    ("zstandard package", Codec.ZSTD, zstandard.ZstdCompressor().compress(TEXT)),
]


@pytest.mark.parametrize(("codec", "frame"), [c[1:] for c in INDEPENDENT_FRAMES],
                         ids=[c[0] for c in INDEPENDENT_FRAMES])
def test_independent_frames_decode(codec: Codec, frame: bytes) -> None:
    assert decompress(codec, frame, "blob") == TEXT


def test_frames_carry_their_content_size() -> None:
    data = TEXT * 50
    lz4_frame = compress(Codec.LZ4, data)
    assert lz4_frame[:4] == bytes.fromhex("04224d18") and lz4_frame[4] & 0x08
    assert struct.unpack("<Q", lz4_frame[6:14])[0] == len(data)
    zstd_frame = compress(Codec.ZSTD, data)
    assert zstandard.frame_content_size(zstd_frame) == zstd_content_size(zstd_frame) == len(data)
    assert zstandard.ZstdDecompressor().decompress(zstd_frame) == data
    assert zstd_content_size(ZSTD_CLI) == len(TEXT)
    assert zstd_content_size(ZSTD_CLI_NO_SIZE) is None


BAD_FRAMES = [
    ("zstd without content size", Codec.ZSTD, ZSTD_CLI_NO_SIZE,
     r"it has no content size \(the Puffin spec requires it"),
    ("zstd bad magic", Codec.ZSTD, b"\x00" * 12, r"bad magic 00000000, expected 28b52ffd"),
    ("zstd truncated", Codec.ZSTD, ZSTD_CLI[:-6], r".+"),
    ("zstd trailing garbage", Codec.ZSTD, ZSTD_CLI + b"xyz", r".+"),
    ("lz4 bad magic", Codec.LZ4, ZSTD_CLI, r"bad magic 28b52ffd, expected 04224d18"),
    ("lz4 truncated", Codec.LZ4, LZ4_CLI[:-6], r"Frame incomplete"),
    ("lz4 two frames", Codec.LZ4, LZ4_CLI + LZ4_CLI, r"55 bytes follow it \(one frame only\)"),
    ("lz4 checksum", Codec.LZ4, LZ4_CLI[:-1] + b"\x00", r".*contentChecksum_invalid"),
]


@pytest.mark.parametrize(("codec", "frame", "message"), [c[1:] for c in BAD_FRAMES],
                         ids=[c[0] for c in BAD_FRAMES])
def test_bad_frames_are_corrupt(codec: Codec, frame: bytes, message: str) -> None:
    with pytest.raises(CorruptFile, match=rf"^blob at offset 4 of f: bad {codec} frame: "
                                          rf"{message}"):
        decompress(codec, frame, "blob at offset 4 of f")


# --- malformed files ------------------------------------------------------------------------

GOOD_PAYLOAD = b'{"blobs":[{"type":"a","fields":[1],"snapshot-id":1,"sequence-number":1,' \
               b'"offset":4,"length":3}]}'


def _payload(blob: dict[str, Any] | None = None, **top: Any) -> bytes:
    doc: dict[str, Any] = {"blobs": [{"type": "a", "fields": [1], "snapshot-id": 1,
                                      "sequence-number": 1, "offset": 4, "length": 3,
                                      **(blob or {})}], **top}
    for key in [k for k, v in doc["blobs"][0].items() if v is ...]:
        del doc["blobs"][0][key]
    return json.dumps(doc).encode()


MALFORMED: list[tuple[str, bytes, str]] = [
    ("too short", MAGIC * 4, r"16 bytes is too short for a Puffin file \(at least 20"),
    ("bad magic at the end", puffin_bytes(b"abc", GOOD_PAYLOAD)[:-1] + b"2",
     r"bad magic at the end of the file: 50464132, expected 50464131"),
    ("bad magic at the footer start",
     puffin_bytes(b"abc", GOOD_PAYLOAD, size=len(GOOD_PAYLOAD) - 1),
     r"bad magic at the start of the footer"),
    ("bad magic at the start", b"PFA0" + puffin_bytes(b"abc", GOOD_PAYLOAD)[4:],
     r"bad magic at the start of the file: 50464130, expected 50464131"),
    ("payload size past the start", puffin_bytes(b"abc", GOOD_PAYLOAD, size=9999),
     r"footer payload size 9999 reaches past the start of the file \(\d+ bytes\)"),
    ("negative payload size", puffin_bytes(b"abc", GOOD_PAYLOAD, size=-5),
     r"negative footer payload size -5"),
    ("reserved flag bit", puffin_bytes(b"abc", GOOD_PAYLOAD, flags=b"\x02\0\0\0"),
     r"footer flags 02000000 set reserved bits \(mask 0x00000002\)"),
    ("reserved flag byte", puffin_bytes(b"abc", GOOD_PAYLOAD, flags=b"\0\0\0\x80"),
     r"footer flags 00000080 set reserved bits \(mask 0x80000000\)"),
    ("compressed flag, plain payload", puffin_bytes(b"abc", GOOD_PAYLOAD, flags=b"\x01\0\0\0"),
     r"footer payload: bad lz4 frame: bad magic"),
    ("not UTF-8", puffin_bytes(b"abc", b'{"blobs":[]}\xff'), r"footer payload is not UTF-8"),
    ("not JSON", puffin_bytes(b"abc", b'{"blobs":['), r"footer payload is not JSON"),
    ("not an object", puffin_bytes(b"abc", b"[]"), r"footer payload is not a JSON object"),
    ("no blobs", puffin_bytes(b"abc", b"{}"), r"footer payload: required 'blobs' is missing"),
    ("blobs not a list", puffin_bytes(b"abc", b'{"blobs":{}}'), r"'blobs' is not a list"),
    ("blob not an object", puffin_bytes(b"abc", b'{"blobs":[3]}'),
     r"blob 0 is not a JSON object"),
    ("blob without a type", puffin_bytes(b"abc", _payload({"type": ...})),
     r"blob 0: required 'type' is missing"),
    ("blob without fields", puffin_bytes(b"abc", _payload({"fields": ...})),
     r"blob 0: required 'fields' is missing"),
    ("fields not ints", puffin_bytes(b"abc", _payload({"fields": [1, "2"]})),
     r"blob 0: 'fields' is not a list of ints"),
    ("field beyond int", puffin_bytes(b"abc", _payload({"fields": [2**31]})),
     r"blob 0: 'fields' is not a list of ints"),
    ("no snapshot-id", puffin_bytes(b"abc", _payload({"snapshot-id": ...})),
     r"blob 0: required 'snapshot-id' is missing"),
    ("offset a string", puffin_bytes(b"abc", _payload({"offset": "4"})),
     r"blob 0: 'offset' is not a long: '4'"),
    ("length a bool", puffin_bytes(b"abc", _payload({"length": True})),
     r"blob 0: 'length' is not a long: True"),
    ("negative length", puffin_bytes(b"abc", _payload({"length": -1})),
     r"blob 0: negative offset 4 or length -1"),
    ("codec not a string", puffin_bytes(b"abc", _payload({"compression-codec": 1})),
     r"blob 0: 'compression-codec' is not a string"),
    ("blob properties", puffin_bytes(b"abc", _payload({"properties": {"a": 1}})),
     r"blob 0: 'properties' is not a JSON object of strings"),
    ("file properties", puffin_bytes(b"abc", _payload(properties=[])),
     r"footer payload: 'properties' is not a JSON object of strings"),
    ("blob offset past the end", puffin_bytes(b"abc", _payload({"offset": 5})),
     r"blob 0 \(a, offset 5, length 3\) lies outside the blobs, which span offsets 4 to 7"),
    ("blob inside the magic", puffin_bytes(b"abc", _payload({"offset": 2})),
     r"blob 0 \(a, offset 2, length 3\) lies outside the blobs"),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in MALFORMED],
                         ids=[c[0] for c in MALFORMED])
def test_malformed_files_are_corrupt(file_io: ArrowFileIO, tmp_path: Path, data: bytes,
                                     message: str) -> None:
    location = write(tmp_path / "f.puffin", data)
    pattern = rf"^Puffin file {location}: .*{message}"
    with pytest.raises(CorruptFile, match=pattern):
        read_file_metadata(file_io, location)
    if len(data) >= 20:  # the same with the file size given, and the footer size
        with pytest.raises(CorruptFile, match=pattern):
            read_file_metadata(file_io, location, file_size=len(data))


def test_a_good_hand_made_file_reads(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = write(tmp_path / "f.puffin", puffin_bytes(b"abc", GOOD_PAYLOAD))
    with PuffinReader(file_io, location) as reader:
        assert reader.read_blob(reader.metadata.blobs[0]) == b"abc"


def test_wrong_footer_size_given(file_io: ArrowFileIO, tmp_path: Path) -> None:
    data = puffin_bytes(b"abc", GOOD_PAYLOAD)
    location = write(tmp_path / "f.puffin", data)
    footer = len(GOOD_PAYLOAD) + 16
    assert read_file_metadata(file_io, location, footer_size=footer).blobs[0].length == 3
    with pytest.raises(CorruptFile, match=r"footer payload size \d+ does not match the given "
                                          rf"footer size {footer - 1}"):
        read_file_metadata(file_io, location, footer_size=footer - 1)
    with pytest.raises(CorruptFile, match=r"the given footer size 9999 does not fit a \d+-byte"):
        read_file_metadata(file_io, location, footer_size=9999)


def test_blob_reads_check_their_range_and_codec(file_io: ArrowFileIO, tmp_path: Path) -> None:
    data = puffin_bytes(b"abc", GOOD_PAYLOAD)
    location = write(tmp_path / "f.puffin", data)
    with PuffinReader(file_io, location) as reader:
        with pytest.raises(CorruptFile, match=r"blob 'a' at offset 4, length 999 reaches past "
                                              r"the end of the file \(read \d+ bytes\)"):
            reader.read_blob(BlobMetadata("a", (), 1, 1, 4, 999))
        with pytest.raises(UnsupportedFeature, match=r"blob at offset 4: compression codec "
                                                     r"'snappy' is not a Puffin codec"):
            reader.read_blob(BlobMetadata("a", (), 1, 1, 4, 3, "snappy"))
        with pytest.raises(CorruptFile, match=r"blob at offset 4: bad zstd frame: bad magic"):
            reader.read_blob(BlobMetadata("a", (), 1, 1, 4, 3, "zstd"))
    with PuffinReader(file_io, location, file_size=len(data)) as reader, \
            pytest.raises(CorruptFile, match=rf"length 999 reaches past the end of the file "
                                             rf"\({len(data)} bytes\)"):
        reader.read_blob(BlobMetadata("a", (), 1, 1, 4, 999))


def test_missing_file_is_not_found(file_io: ArrowFileIO, tmp_path: Path) -> None:
    with pytest.raises(FileNotFound):
        read_file_metadata(file_io, str(tmp_path / "nope.puffin"))
    with pytest.raises(FileNotFound):
        read_file_metadata(file_io, str(tmp_path / "nope.puffin"), file_size=100)


# --- the writer's rules ---------------------------------------------------------------------


def test_writer_rules(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    writer = PuffinWriter(file_io, location)
    with pytest.raises(ValidationError, match="is not finished yet"):
        _ = writer.result
    with pytest.raises(ValidationError, match=r"with 'snappy': Puffin codecs are lz4, zstd"):
        writer.add_blob("a", b"x", fields=(), snapshot_id=1, sequence_number=1,
                        compression="snappy")  # type: ignore[arg-type]  # bad on purpose
    with pytest.raises(ValidationError, match="its type is empty"):
        writer.add_blob("", b"x", fields=(), snapshot_id=1, sequence_number=1)
    result = writer.finish()
    assert writer.finish() is result
    with pytest.raises(ValidationError, match="it is finished"):
        writer.add_blob("a", b"x", fields=(), snapshot_id=1, sequence_number=1)
    with pytest.raises(AlreadyExists):
        PuffinWriter(file_io, location)
    with PuffinWriter(file_io, location, overwrite=True) as again:
        again.add_blob("a", b"x", fields=(), snapshot_id=1, sequence_number=1)
    assert len(read_file_metadata(file_io, location).blobs) == 1


def test_a_failed_write_leaves_no_file(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "f.puffin")
    with pytest.raises(RuntimeError, match="boom"), PuffinWriter(file_io, location) as writer:
        writer.add_blob("a", b"x", fields=(), snapshot_id=1, sequence_number=1)
        raise RuntimeError("boom")
    assert not file_io.exists(location)
