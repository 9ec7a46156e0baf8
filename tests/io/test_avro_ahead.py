"""Container files inflated, and run through the kernel, on a thread ahead of the thread that
decodes them (:mod:`icepark.io.avro.ahead`).

What the inflating thread hands back must be the file :func:`icepark.io.avro.native.inflated`
makes of it (or nothing, where that leaves the file as it is), and a kernel run done there must
be the run the reader would do: a reader takes it only for the block it was done for, once,
and then returns what it returns without it, errors included.
"""

from __future__ import annotations

import io
import json
import zlib
from typing import Any

import fastavro
import numpy as np
import pytest

from icepark.io.avro import kernel, native
from icepark.io.avro.compiled import Converter, compile_reader
from icepark.io.avro.encoder import zigzag_varint
from icepark.io.avro.header import encode_header
from icepark.io.avro.reader import open_blocks
from tests.io.test_avro_inflate import CORRUPTIONS, RECORDS, SCHEMA, _corruptions, _file

ahead = native.inflate_ahead()
pytestmark = pytest.mark.skipif(ahead is None, reason="numba or zlib cannot be loaded")
WANTED: dict[tuple[str, ...], Converter | None] = {("id",): None, ("name",): str.upper}
COUNT = 2 * native.MIN_RECORDS
ROWS: list[dict[str, Any]] = [{"id": i * 10**9, "name": None if i % 3 else f"name {i}"}
                              for i in range(COUNT)]


def _large_blocks(rows: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="deflate", sync_interval=1 << 12)
    return buf.getvalue()


def _one_block(content: bytes) -> tuple[int, bytes]:
    """The (count, records) of the one block of an inflated file."""
    [block] = list(open_blocks(io.BytesIO(content), "f").blocks)
    return block


def _program() -> tuple[Any, Any, Any]:
    """The reader of ``WANTED``, one of its blocks read, and its program."""
    read = compile_reader(SCHEMA, WANTED)
    count, data = _one_block(native.inflated(_large_blocks(ROWS), 1 << 30))
    native.last_program()
    assert read(data, count, None)
    program = native.last_program()
    assert program is not None and native.last_program() is None  # forgotten once given
    return read, program, data


real_run: Any = kernel.run


def counted_kernel_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets an item for every run of the kernel through its module's ``run``
    (the reader's; not the inflating thread's, compiled with it)."""
    runs: list[int] = []

    def counted(*args: Any) -> Any:
        runs.append(1)
        return real_run(*args)

    monkeypatch.setattr(kernel, "run", counted)
    return runs


def _submit(contents: list[bytes], program: Any = None, run: bool = True) -> list[Any]:
    engine = ahead.InflateAhead()
    try:
        files = [(ahead.deflated(c), run) for c in contents]
        done: list[Any] = engine.submit(files, program).result()
        return done
    finally:
        engine.close()


def test_files_inflated_ahead_are_the_files_inflated_whole() -> None:
    """A batch of files of a block per record, of large blocks, of a record inflating to
    thousands of times its size (the output grows), each the file ``inflated`` makes."""
    huge: list[dict[str, Any]] = [{"id": 1, "name": "x"}, {"id": 2, "name": "a" * 3_000_000}]
    contents = [_file(RECORDS), _large_blocks(ROWS), _file(huge), _file(RECORDS[:3])]
    done = _submit(contents)
    for content, inflated in zip(contents, done, strict=True):
        assert inflated.content == native.inflated(content, 1 << 30) != content
        assert inflated.ran is None  # no program: inflated only


@pytest.mark.parametrize("codec", ["null", "bzip2"])
def test_files_of_other_codecs_are_not_taken(codec: str) -> None:
    assert ahead.deflated(_file(RECORDS[:5], codec)) is None


@pytest.mark.parametrize("what", CORRUPTIONS)
def test_a_corrupt_file_is_handed_back_as_nothing(what: str) -> None:
    """What ``inflated`` leaves as it is (for the reader to report) comes back as None, the
    other files of its batch inflated."""
    bad = _corruptions(_file(RECORDS))[what]
    found = ahead.deflated(bad)
    if found is None:  # not even a header to take it by
        assert what == "not avro"
        return
    good = _file(RECORDS)
    engine = ahead.InflateAhead()
    try:
        done = engine.submit([(ahead.deflated(good), False), (found, False)], None).result()
    finally:
        engine.close()
    assert native.inflated(bad, 1 << 30) is bad
    assert done[1] is None and done[0].content == native.inflated(good, 1 << 30)


def test_a_run_ahead_is_the_kernels_run_and_the_reader_takes_it_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read, program, _ = _program()
    content = _large_blocks(ROWS)
    [inflated] = _submit([content], program)
    count, data = _one_block(inflated.content)
    ran = inflated.ran
    assert ran is not None and ran.count == count == COUNT and ran.size == len(data)
    expected = real_run(*program[:2], np.frombuffer(data, np.uint8), count, program[2])
    assert ran.result[:2] == expected[:2] and ran.result[-1] == expected[-1]
    for got, want in zip(ran.result[2:5], expected[2:5], strict=True):  # values, ends, nulls
        assert np.array_equal(got, want)
    found = expected[-1]
    for got, want in zip(ran.result[5:8], expected[5:8], strict=True):  # the items found
        assert np.array_equal(got[:found], want[:found])
    without = read(data, count, None)
    runs = counted_kernel_runs(monkeypatch)
    with native.ran_ahead(ran):
        assert read(data, count, None) == without  # the run taken: no kernel call
        assert runs == []
        assert read(data, count, None) == without  # taken once: the kernel runs again
        assert runs == [1]
    assert without == [(r["id"], None if r["name"] is None else r["name"].upper())
                       for r in ROWS]


def test_a_run_ahead_is_not_taken_for_another_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block of the same count and length but other bytes, or read by another reader, runs
    the kernel itself."""
    read, program, _ = _program()
    [inflated] = _submit([_large_blocks(ROWS)], program)
    other_rows = [{**r, "id": r["id"] + 1} for r in ROWS]  # same lengths, other bytes
    count, other = _one_block(native.inflated(_large_blocks(other_rows), 1 << 30))
    assert len(other) == inflated.ran.size
    runs = counted_kernel_runs(monkeypatch)
    with native.ran_ahead(inflated.ran):
        assert [i for i, _ in read(other, count, None)] == [r["id"] for r in other_rows]
    assert runs == [1]
    another = compile_reader(SCHEMA, {("id",): None})
    _, data = _one_block(inflated.content)
    with native.ran_ahead(inflated.ran):
        assert [i for (i,) in another(data, count, None)] == [r["id"] for r in ROWS]
    assert runs == [1, 1]


def test_a_bad_block_run_ahead_fails_as_the_kernel_does() -> None:
    """Records that inflate but do not decode (a union branch out of range): the reader
    taking the run reports what it reports running the kernel itself."""
    read, program, _ = _program()
    _, data = _one_block(native.inflated(_large_blocks(ROWS), 1 << 30))
    bad = bytearray(data)
    bad[bad.index(zigzag_varint(0), 1)] = 0x7E  # the first null branch of ``name``: 63
    sync = b"s" * 16
    raw = zlib.compressobj(wbits=-15)
    deflated = raw.compress(bytes(bad)) + raw.flush()
    content = b"".join([encode_header({"avro.schema": json.dumps(SCHEMA).encode(),
                                       "avro.codec": b"deflate"}, sync),
                        zigzag_varint(COUNT), zigzag_varint(len(deflated)), deflated, sync])
    [inflated] = _submit([content], program)
    count, block = _one_block(inflated.content)
    assert block == bytes(bad) and inflated.ran is not None and inflated.ran.result[0] != 0
    with pytest.raises(ValueError) as itself:
        read(block, count, None)
    with native.ran_ahead(inflated.ran), pytest.raises(ValueError) as taken:
        read(block, count, None)
    assert str(taken.value) == str(itself.value)


def test_small_blocks_are_not_run_ahead() -> None:
    """A file of fewer records than the kernel reads (the reader decodes them in Python)."""
    _, program, _ = _program()
    few = ROWS[:native.MIN_RECORDS - 1]
    [inflated] = _submit([_large_blocks(few)], program)
    assert inflated.ran is None and _one_block(inflated.content)[0] == len(few)


def test_the_flag_asks_for_the_run() -> None:
    _, program, _ = _program()
    [inflated] = _submit([_large_blocks(ROWS)], program, run=False)
    assert inflated.ran is None
