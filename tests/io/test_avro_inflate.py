"""Deflated container files inflated whole, outside the GIL (:mod:`icepark.io.avro.inflate`).

Files are written by fastavro (another implementation) with a block per record, as pyiceberg
writes manifests; what comes out must read as the file itself does, and anything the bulk
path cannot frame or inflate is left to the container reader, which reports it.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from icepark.errors import CorruptFile
from icepark.io.avro import native
from icepark.io.avro.encoder import zigzag_varint
from icepark.io.avro.reader import open_blocks, open_reader
from icepark.io.avro.varint import read_long

SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}]}
ANY_BLOCKS = 1 << 30


def _file(records: list[dict[str, Any]], codec: str = "deflate") -> bytes:
    """A container file of ``records``, a block each (``sync_interval``: bytes per block)."""
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, records, codec=codec, sync_interval=1,
                    metadata={"schema-id": "7"})
    return buf.getvalue()


def _inflated(content: bytes, block_bytes: int = ANY_BLOCKS) -> bytes:
    return native.inflated(content, block_bytes)


def _read(content: bytes) -> tuple[dict[str, str], list[dict[str, Any]]]:
    reader = open_reader(io.BytesIO(content), "mem://f.avro")
    return reader.metadata, list(reader.records)


RECORDS = [{"id": i * 10**9, "name": None if i % 3 else f"name {i}"} for i in range(200)]


def test_a_block_per_record_becomes_one_uncompressed_block() -> None:
    content = _file(RECORDS)
    assert len(list(open_blocks(io.BytesIO(content), "f").blocks)) == len(RECORDS)
    bulk = _inflated(content)
    assert bulk is not content
    opened = open_blocks(io.BytesIO(bulk), "f")
    blocks = list(opened.blocks)
    assert [count for count, _ in blocks] == [len(RECORDS)]
    joined = b"".join(data for _, data in open_blocks(io.BytesIO(content), "f").blocks)
    assert blocks[0][1] == joined
    assert _read(bulk) == _read(content) == ({"schema-id": "7"}, RECORDS)
    assert [r for r in fastavro.reader(io.BytesIO(bulk))] == RECORDS  # another reader agrees


def test_room_is_made_for_what_inflates_far_beyond_the_file() -> None:
    """A record inflating to thousands of times its deflated size: the output grows, keeping
    the blocks inflated before it."""
    records: list[dict[str, Any]] = [{"id": 1, "name": "x"}, {"id": 2, "name": "a" * 3_000_000},
                                     {"id": 3, "name": None}]
    content = _file(records)
    assert len(content) < 20_000
    bulk = _inflated(content)
    assert bulk is not content
    assert _read(bulk)[1] == records


@pytest.mark.parametrize("codec", ["null", "bzip2"])
def test_other_codecs_are_left_as_they_are(codec: str) -> None:
    content = _file(RECORDS[:5], codec)
    assert _inflated(content) is content


def test_files_of_large_blocks_are_left_as_they_are() -> None:
    content = _file(RECORDS)
    assert _inflated(content, block_bytes=1) is content


def test_nothing_is_inflated_with_the_kernel_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_MODULES", {})
    monkeypatch.setenv("ICEPARK_AVRO_KERNEL", "0")
    content = _file(RECORDS)
    assert _inflated(content) is content


def _block_spans(content: bytes) -> list[tuple[int, int]]:
    """(start, end) of each block's deflated bytes."""
    sync = content[-16:]
    spans, p = [], content.index(sync) + 16
    while p < len(content):
        _, p = read_long(content, p)  # the count
        size, p = read_long(content, p)
        spans.append((p, p + size))
        p += size + 16
    return spans


def _corruptions(content: bytes) -> dict[str, bytes]:
    (start, end), *_ = _block_spans(content)[5:]
    first = _block_spans(content)[0]
    too_many = content[:first[0] - 2] + bytes([0x80, 0x7D]) + content[first[0] - 1:]
    # a file's one count, whose records' smallest size (2 bytes) times it wraps past a long,
    # and a size that wraps past a long when added to the block's position
    one = _file(RECORDS[:1])
    (one_start, _), = _block_spans(one)
    wrapping_count = one[:one_start - 2] + zigzag_varint(2**62) + one[one_start - 1:]
    wrapping_size = content[:first[0] - 1] + zigzag_varint(2**63 - 8) + content[first[0]:]
    return {
        "truncated": content[:-5],
        "sync marker": content[:-3] + bytes([content[-3] ^ 0xFF]) + content[-2:],
        "deflate stream": content[:start] + b"\xff" * (end - start) + content[end:],
        "cut stream": content[:start] + content[start:end - 2] + content[end:],
        "not avro": b"PAR1" + content[4:],
        "record count": too_many,
        "record count past a long": wrapping_count,
        "block size past a long": wrapping_size,
    }


CORRUPTIONS = ["truncated", "sync marker", "deflate stream", "cut stream", "not avro",
               "record count", "record count past a long", "block size past a long"]


@pytest.mark.parametrize("what", CORRUPTIONS)
def test_a_corrupt_file_is_left_to_the_reader_which_reports_it(what: str) -> None:
    content = _corruptions(_file(RECORDS))[what]
    assert _inflated(content) is content
    with pytest.raises(CorruptFile, match=r"mem://f\.avro"):
        _read(content)
