"""The compiled kernel's block reader (:mod:`icepark.io.avro.native`): it reads the large
blocks, returns what the generated Python returns, can be turned off, and applies a metrics
filter to a whole block at once with the same verdicts as the filter applied file by file.

The readers' other tests run with the kernel too (``test_avro_compiled``: every test with
each block decoder; ``test_manifest_stats``: the ``kernel`` decoder)."""

from __future__ import annotations

import gc
import io
import struct
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.expressions import bind, parse
from icepark.io.avro import columns, native
from icepark.io.avro.compiled import Converter, Finish, compile_reader
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import ManifestWriter, read_manifest_files
from icepark.io.manifest.reader import Stats
from icepark.spec.manifest import DataFile, FileFormat, ManifestContent
from icepark.spec.partitioning import UNPARTITIONED
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, NestedField
from icepark.table.scan.prefilter import metrics_prefilter

SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "tags", "type": {"type": "map", "values": "int"}},
    {"name": "sizes", "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "k_v", "fields": [{"name": "key", "type": "int"},
                                                    {"name": "value", "type": "long"}]}}]},
    {"name": "offsets", "type": {"type": "array", "items": "long"}},
]}
WANTED: dict[tuple[str, ...], Converter | None] = {
    ("id",): None, ("name",): str.upper, ("sizes",): None, ("offsets",): None}


def _block(count: int, negative: int | None = None) -> bytes:
    """``count`` records (the ``negative``-th with a negative ID)."""
    rows = [{"id": -1 if i == negative else i * 10**10, "name": None if i % 3 else f"n{i}",
             "tags": {"a": i}, "sizes": None if i % 4 == 1 else [{"key": 1, "value": i}],
             "offsets": list(range(i % 5))} for i in range(count)]
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="null", sync_interval=1 << 30)
    buf.seek(0)
    [block] = list(fastavro.block_reader(buf))
    return bytes(block.bytes_.getvalue())  # type: ignore[attr-defined]  # untyped


@pytest.mark.parametrize("keys", [frozenset({1}), frozenset({3}), None])
def test_maps_of_at_most_one_wanted_item_a_row(keys: frozenset[int] | None) -> None:
    """Maps whose rows hold no item, one, or (unfiltered) two of the keys asked for read as
    the generated Python reader reads them."""
    count = 2 * native.MIN_RECORDS
    shapes: list[Any] = [[], [{"key": 1, "value": 5}], [{"key": 2, "value": 6}],
                         [{"key": 2, "value": 7}, {"key": 1, "value": 8}], None]
    rows = [{"id": i, "name": None, "tags": {}, "sizes": shapes[i % len(shapes)],
             "offsets": []} for i in range(count)]
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="null", sync_interval=1 << 30)
    buf.seek(0)
    [block] = list(fastavro.block_reader(buf))
    data = bytes(block.bytes_.getvalue())  # type: ignore[attr-defined]  # untyped
    read = compile_reader(SCHEMA, {("sizes",): None}, pairs={("sizes",): keys})
    by_kernel = read(data, count, None)
    assert by_kernel == native_off(lambda: read(data, count, None))
    expected = [None if shape is None else {
        e["key"]: e["value"] for e in shape if keys is None or e["key"] in keys}
        for shape in shapes]
    assert [v for (v,) in by_kernel[:len(shapes)]] == expected


def test_the_kernel_is_available() -> None:
    """numba is a dependency: the kernel is there unless turned off."""
    assert native.kernel() is not None


def test_large_blocks_are_read_by_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = native.kernel()
    run = kernel.run
    calls: list[int] = []

    def counted(*args: Any) -> Any:
        calls.append(args[3])
        return run(*args)

    monkeypatch.setattr(kernel, "run", counted)
    read = compile_reader(SCHEMA, WANTED, pairs={("sizes",): None})
    large, small = native.MIN_RECORDS, native.MIN_RECORDS - 1
    by_kernel = read(_block(large), large, None)
    assert calls == [large]
    read(_block(small), small, None)
    assert calls == [large]  # a small block is left to the generated Python
    monkeypatch.setattr(native, "MIN_RECORDS", 10**12)
    assert by_kernel == read(_block(large), large, None)
    assert by_kernel[:5] == [(0, "N0", {1: 0}, []), (10**10, None, None, [0]),
                             (2 * 10**10, None, {1: 2}, [0, 1]),
                             (3 * 10**10, "N3", {1: 3}, [0, 1, 2]),
                             (4 * 10**10, None, {1: 4}, [0, 1, 2, 3])]


def test_the_kernel_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_MODULES", {})
    monkeypatch.setenv("ICEPARK_AVRO_KERNEL", "0")
    assert native.kernel() is None
    count = native.MIN_RECORDS
    read = compile_reader(SCHEMA, WANTED, pairs={("sizes",): None})
    assert len(read(_block(count), count, None)) == count


def test_bad_data_in_a_large_block_names_what_is_wrong() -> None:
    count = native.MIN_RECORDS
    data = _block(count)
    read = compile_reader(SCHEMA, WANTED, pairs={("sizes",): None})
    with pytest.raises(ValueError, match=r"truncated value|more items than can fit"):
        read(data[:-3], count, None)
    with pytest.raises(ValueError, match="block has 2 bytes left after its records"):
        read(data + b"\x00\x00", count, None)


CODED = {"type": "record", "name": "c", "fields": [
    {"name": "status", "type": "int"},
    {"name": "format", "type": "string"},
    {"name": "note", "type": ["null", "bytes"]},
    {"name": "part", "type": {"type": "record", "name": "p", "fields": [
        {"name": "day", "type": ["null", "int"]}, {"name": "flag", "type": "boolean"},
        {"name": "tag", "type": ["null", "string"]}]}},
]}


def _coded_block(rows: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, CODED, rows, codec="null", sync_interval=1 << 30)
    buf.seek(0)
    [block] = list(fastavro.block_reader(buf))
    return bytes(block.bytes_.getvalue())  # type: ignore[attr-defined]  # untyped


@pytest.mark.parametrize("long_strings", [False, True])
def test_converted_columns_are_made_once_per_distinct_value(
        long_strings: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A converted column of coded values (varints, strings, nulls, records of them) is
    converted once per distinct value in a block, and reads as the generated Python reader
    reads it, strings of any length."""
    count = 3 * native.MIN_RECORDS
    long = "x" * 40 if long_strings else ""
    formats = ("parquet", "PARQUET", "avro" + long)
    rows: list[dict[str, Any]] = [
        {"status": i % 3, "format": formats[i % 3], "note": None if i % 2 else b"n" * (i % 5),
         "part": {"day": None if i % 7 == 0 else i % 4, "flag": i % 2 == 0,
                  "tag": None if i % 5 == 0 else "t" + "é" * (i % 3) + long}}
        for i in range(count)]
    data = _coded_block(rows)
    seen: list[Any] = []

    def upper(v: str) -> str:
        seen.append(v)
        return v.upper()

    def swap(v: tuple[Any, ...]) -> tuple[Any, ...]:
        seen.append(v)
        return tuple(reversed(v))

    wanted: dict[tuple[str, ...], Converter | None] = {
        ("status",): ("a", "b", "c"), ("format",): upper, ("note",): None, ("part",): swap}
    grouped: list[int] = []
    distinct_rows = columns.distinct_rows

    def spied(codes: Any) -> Any:
        first, inverse = distinct_rows(codes)
        grouped.append(len(first))
        return first, inverse

    monkeypatch.setattr(columns, "distinct_rows", spied)
    by_kernel = compile_reader(CODED, wanted)(data, count, None)
    kernel_calls = len(seen)
    parts = len({(r["part"]["day"], r["part"]["flag"], r["part"]["tag"]) for r in rows})
    assert sorted(grouped) == sorted([3, 3, parts])  # grouped by their codes
    seen.clear()
    by_python = native_off(lambda: compile_reader(CODED, wanted)(data, count, None))
    assert by_kernel == by_python
    assert by_kernel[:3] == [
        ("a", "PARQUET", b"", (None, True, None)),
        ("b", "PARQUET", None, ("t\u00e9" + long, False, 1)),
        ("c", "AVRO" + long.upper(), b"nn", ("t\u00e9\u00e9" + long, True, 2))]
    # converted once per distinct value, either way
    assert kernel_calls == len({r["format"] for r in rows}) + parts


def test_a_block_of_one_distinct_value_repeats_it() -> None:
    count = native.MIN_RECORDS
    data = _coded_block([{"status": 2, "format": "orc", "note": None,
                          "part": {"day": None, "flag": False, "tag": None}}] * count)
    wanted: dict[tuple[str, ...], Converter | None] = {
        ("status",): ("a", "b", "c"), ("format",): str.upper, ("note",): None,
        ("part",): tuple}
    assert compile_reader(CODED, wanted)(data, count, None) == [
        ("c", "ORC", None, (None, False, None))] * count


def test_a_bad_index_in_a_coded_column_is_an_error() -> None:
    count = native.MIN_RECORDS
    data = _coded_block([{"status": i % 5, "format": "orc", "note": None,
                          "part": {"day": 1, "flag": False, "tag": None}}
                         for i in range(count)])
    with pytest.raises(ValueError, match=r"invalid value [34]"):
        compile_reader(CODED, {("status",): ("a", "b", "c")})(data, count, None)


@pytest.mark.parametrize(("rows", "width", "spread"), [
    (1, 1, 3), (1000, 1, 3), (1000, 4, 2), (257, 3, 1000), (64, 2, 2**62)])
def test_distinct_rows_groups_equal_rows(rows: int, width: int, spread: int) -> None:
    import numpy as np  # noqa: PLC0415 - with the kernel

    codes = np.random.default_rng(rows * width).integers(-spread, spread, (rows, width))
    first, inverse = native.kernel().distinct_rows(codes)
    assert len(set(first.tolist())) == len(first) == len({tuple(r) for r in codes.tolist()})
    assert (codes[first][inverse] == codes).all()  # each row is its group's first row
    assert first.tolist() == sorted(first.tolist())  # groups in order of first appearance
    assert inverse[first].tolist() == list(range(len(first)))


@pytest.mark.parametrize("assign", ["x = {1} = 5", "{1}, x = 5, 0", "{1} = 5"])
def test_a_field_the_block_lacks_is_none_in_every_row_a_finish_does_not_set(
        assign: str) -> None:
    """A wanted field the writer schema lacks reads None in every row, also when the finish
    sets it in some rows (a chained or unpacked assignment too): the kernel's reader sets it
    once per block only when no row sets it."""
    count = native.MIN_RECORDS
    finish = Finish((), ("if {0} // 10**10 % 2 == 1:", f"    {assign}",
                         "append(({0}, {1}, {2}))"))
    wanted: dict[tuple[str, ...], Converter | None] = {
        ("id",): None, ("absent",): None, ("gone",): None}
    read = compile_reader(SCHEMA, wanted, pairs={("sizes",): None}, finish=finish)
    by_kernel = read(_block(count), count, None)
    assert by_kernel == native_off(lambda: read(_block(count), count, None))
    assert by_kernel[:3] == [(0, None, None), (10**10, 5, None), (2 * 10**10, None, None)]
    assert all(row[1:] == ((5, None) if row[0] // 10**10 % 2 else (None, None))
               for row in by_kernel)


def test_a_lean_body_runs_for_a_block_the_whole_block_check_passes() -> None:
    """``Finish.lean_body``: the kernel's reader runs it for a block ``valid_at_once`` passes,
    given the kernel's arrays of the block (varints, where each array's items start and end
    among the collected items, null flags), and runs the body, which raises, for the others.
    The generated Python reader always runs the body. An array of longs converted by
    ``tuple`` is a tuple from both readers."""
    count = native.MIN_RECORDS
    seen: list[Any] = []

    def valid(items: Any) -> bool:
        starts, ends, collected = items.values(2), items.ends(2), items.items()
        seen.append(([collected[s:e].tolist() for s, e in zip(starts, ends, strict=True)],
                     items.nulls(1).tolist(), items.values(1), items.present(3),
                     items.present(1)))
        return bool((items.values(0) >= 0).all())

    finish = Finish((), ("if {0} < 0:", "    raise _bad(f'negative id {{{0}}}')",
                         "append(({0}, {2}))"),
                    lean_body=("append(({0}, {2}, 'lean'))",), valid_at_once=valid)
    wanted: dict[tuple[str, ...], Converter | None] = {
        ("id",): None, ("name",): None, ("offsets",): tuple, ("absent",): None}
    read = compile_reader(SCHEMA, wanted, finish=finish)
    by_kernel = read(_block(count), count, None)
    assert by_kernel == [(i * 10**10, tuple(range(i % 5)), "lean") for i in range(count)]
    assert native_off(lambda: read(_block(count), count, None)) == [
        row[:2] for row in by_kernel]
    assert seen == [([list(range(i % 5)) for i in range(count)],
                     [1 if i % 3 else 0 for i in range(count)], None, False, True)]
    with pytest.raises(ValueError, match="negative id -1"):
        read(_block(count, negative=7), count, None)
    assert len(seen) == 2


def native_off(read: Any) -> Any:
    """``read()`` with the kernel's blocks left to the generated Python reader."""
    saved = native.MIN_RECORDS
    native.MIN_RECORDS = 10**12
    try:
        return read()
    finally:
        native.MIN_RECORDS = saved


# ----------------------------------------------------------------------------- metrics at once

TABLE = Schema.of(NestedField.optional(1, "c1", LONG), NestedField.optional(2, "c2", INT))
FILTERS = ["c1 >= 0 AND c1 < 10", "c2 > -5", "c1 = 3 AND c2 <= 20",
           "c2 < 100 AND c2 > 0 AND c1 >= -10"]


def _bound(fid: int) -> st.SearchStrategy[bytes]:
    fmt = "<q" if fid == 1 else "<i"
    return st.integers(-40, 40).map(lambda v: struct.pack(fmt, v)) | st.binary(max_size=9)


def _metrics(fids: st.SearchStrategy[int], values: st.SearchStrategy[Any]
             ) -> st.SearchStrategy[dict[int, Any] | None]:
    return st.none() | st.dictionaries(fids, values, max_size=2)


files = st.lists(st.builds(
    lambda i, counts, nulls, lower, upper: (i, counts, nulls, lower, upper),
    st.integers(0, 10**6),
    _metrics(st.sampled_from([1, 2]), st.integers(0, 4)),
    _metrics(st.sampled_from([1, 2]), st.integers(0, 4)),
    st.none() | st.fixed_dictionaries({}, optional={1: _bound(1), 2: _bound(2)}),
    st.none() | st.fixed_dictionaries({}, optional={1: _bound(1), 2: _bound(2)})),
    min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=files, expression=st.sampled_from(FILTERS))
def test_a_metrics_filter_rejects_the_same_files_at_once(
        rows: list[tuple[Any, ...]], expression: str) -> None:
    """Counts of 0, all nulls, bounds out of order, bounds of the wrong width (the file is
    kept: the evaluator decides) and missing maps, as the filter judges each file."""
    data_files = [DataFile(f"f{n}-{i}.parquet", FileFormat.PARQUET, (), 10, 100,
                           value_counts=counts, null_value_counts=nulls, lower_bounds=lower,
                           upper_bounds=upper)
                  for n, (i, counts, nulls, lower, upper) in enumerate(rows)]
    cannot_match = metrics_prefilter(bind(parse(expression), TABLE))
    assert cannot_match is not None
    expected = [f.file_path for f in data_files if not cannot_match(f)]
    with tempfile.TemporaryDirectory() as root:
        file_io = ArrowFileIO()
        with ManifestWriter(file_io, f"{root}/m.avro", UNPARTITIONED, TABLE, 2,
                            ManifestContent.DATA, 7) as writer:
            for f in data_files:
                writer.add_file(f)
        manifest = writer.to_manifest_file()
        original = native.MIN_RECORDS
        for min_records in (0, 10**12):  # the kernel, then the generated Python
            native.MIN_RECORDS = min_records
            try:
                got = [f.file_path for block in read_manifest_files(
                    file_io, manifest, stats=Stats.for_columns({1, 2}),
                    metrics_filter=cannot_match) for f in block]
            finally:
                native.MIN_RECORDS = original
            assert got == expected, min_records



class _Cycle:
    """Garbage whose finalizer runs Python code: a collection during ``ast.parse`` runs it, and
    the thread may switch there."""

    def __del__(self) -> None:
        total = 0
        for i in range(20):
            total += i


def test_readers_compile_on_many_threads_at_once() -> None:
    """CPython 3.11 counts the depth of the Python objects ``ast.parse`` builds in state every
    thread shares: readers compiled on several threads at once (read-ahead threads do) failed
    with ``SystemError: AST constructor recursion depth mismatch`` when a collection ran Python
    code and switched threads in the middle."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": f"f{i}", "type": ["null", "long"]} for i in range(150)]}
    wanted: dict[Any, Any] = {(f"f{i}",): None for i in range(150)}

    def build(_: int) -> int:
        for _ in range(15):
            for _ in range(30):
                garbage = _Cycle()
                garbage.me = garbage  # type: ignore[attr-defined]  # a cycle
            native.native_reader(schema, wanted)
        return 1

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(20)
    try:
        with ThreadPoolExecutor(4) as pool:
            assert sum(pool.map(build, range(16))) == 16
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
