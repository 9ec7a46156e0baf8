"""The compiled Avro reader decodes what fastavro decodes, for the fields asked for."""

from __future__ import annotations

import io
import struct
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import CorruptFile, UnsupportedFeature
from icepark.io.avro import native
from icepark.io.avro import pattern as avro_pattern
from icepark.io.avro.compiled import compile_reader, read_blocks
from icepark.io.avro.encoder import zigzag_varint


@pytest.fixture(autouse=True, params=["patterns", "no patterns"])
def skip_patterns(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipped runs of fields are matched by a compiled pattern once enough records were read:
    from the first record, or never."""
    monkeypatch.setattr(avro_pattern, "COMPILE_AFTER", 0 if request.param == "patterns"
                        else 10**12)


@pytest.fixture(autouse=True, params=["python", "kernel"])
def block_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block read by the generated Python, or by the compiled kernel
    (:mod:`icepark.io.avro.native`)."""
    monkeypatch.setattr(native, "MIN_RECORDS", 0 if request.param == "kernel" else 10**12)

PAIR = {"type": "record", "name": "k1_v2", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "long"}]}
BOUND = {"type": "record", "name": "k3_v4", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}
INNER = {"type": "record", "name": "inner", "namespace": "ns", "fields": [
    {"name": "a", "type": ["null", "int"]}, {"name": "b", "type": "string"},
    {"name": "c", "type": {"type": "fixed", "name": "f3", "size": 3}}]}
SCHEMA: dict[str, Any] = {"type": "record", "name": "rec", "fields": [
    {"name": "status", "type": "int"},
    {"name": "flag", "type": "boolean"},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": ["null", "double"]},
    {"name": "name", "type": "string"},
    {"name": "blob", "type": ["null", "bytes"]},
    {"name": "color", "type": {"type": "enum", "name": "color", "symbols": ["R", "G", "B"]}},
    {"name": "inner", "type": INNER},
    {"name": "again", "type": ["null", "ns.inner"]},
    {"name": "counts", "type": ["null", {"type": "array", "items": PAIR}]},
    {"name": "bounds", "type": ["null", {"type": "array", "items": BOUND}]},
    {"name": "offsets", "type": ["null", {"type": "array", "items": "long"}]},
    {"name": "props", "type": {"type": "map", "values": ["null", "string"]}},
    {"name": "choice", "type": ["null", "long", "string", "k1_v2"]},
    {"name": "big", "type": "long"},
]}
NAMES = [f["name"] for f in SCHEMA["fields"]]

ints = st.integers(-(2**31), 2**31 - 1)
longs = st.integers(-(2**63), 2**63 - 1)
floats32 = st.floats(width=32, allow_nan=False)
inner = st.fixed_dictionaries({"a": st.none() | ints, "b": st.text(max_size=5),
                               "c": st.binary(min_size=3, max_size=3)})
records = st.fixed_dictionaries({
    "status": st.integers(0, 2), "flag": st.booleans(), "ratio": floats32,
    "score": st.none() | st.floats(allow_nan=False), "name": st.text(max_size=80),
    "blob": st.none() | st.binary(max_size=20), "color": st.sampled_from(["R", "G", "B"]),
    "inner": inner, "again": st.none() | inner,
    "counts": st.none() | st.lists(st.fixed_dictionaries({"key": ints, "value": longs}),
                                   max_size=6),
    "bounds": st.none() | st.lists(st.fixed_dictionaries(
        {"key": st.integers(0, 9), "value": st.binary(max_size=70)}), max_size=6),
    "offsets": st.none() | st.lists(longs, max_size=70),
    "props": st.dictionaries(st.text(max_size=3), st.none() | st.text(max_size=3), max_size=3),
    "choice": st.none() | longs | st.text(max_size=4)
    | st.fixed_dictionaries({"key": ints, "value": longs}),
    "big": longs,
})


def _write(rows: list[dict[str, Any]], sync_interval: int) -> list[tuple[int, bytes]]:
    """The (count, data) blocks fastavro writes for ``rows``."""
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="null", sync_interval=sync_interval)
    buf.seek(0)
    blocks: list[tuple[int, bytes]] = [
        (b.num_records, bytes(b.bytes_.getvalue()))  # type: ignore[attr-defined]  # untyped
        for b in fastavro.block_reader(buf)]
    return blocks


def _decoded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="null")
    buf.seek(0)
    return [r for r in fastavro.reader(buf) if isinstance(r, dict)]


def _as_tuple(value: Any) -> Any:
    """fastavro's value as the compiled reader gives it: records as tuples."""
    if isinstance(value, list):
        return [_as_tuple(v) for v in value]
    if isinstance(value, dict) and set(value) == {"a", "b", "c"}:
        return (value["a"], value["b"], value["c"])
    if isinstance(value, dict) and set(value) == {"key", "value"}:
        return (value["key"], value["value"])
    return value


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(records, max_size=12), wanted=st.sets(st.sampled_from(NAMES)),
       interval=st.sampled_from([1, 200, 16000]))
def test_wanted_fields_read_as_fastavro_reads_them(rows: list[dict[str, Any]],
                                                   wanted: set[str], interval: int) -> None:
    order = sorted(wanted)
    read = compile_reader(SCHEMA, {(name,): None for name in order})
    got = [row for count, data in _write(rows, interval) for row in read(data, count, None)]
    expected = [tuple(_as_tuple(r[name]) for name in order) for r in _decoded(rows)]
    assert got == expected


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(records, max_size=8), keys=st.none() | st.frozensets(st.integers(0, 9)))
def test_pairs_read_as_dicts_of_the_keys_asked_for(rows: list[dict[str, Any]],
                                                   keys: frozenset[int] | None) -> None:
    read = compile_reader(SCHEMA, {("bounds",): None, ("counts",): None, ("big",): None},
                          pairs={("bounds",): keys, ("counts",): None})
    got = [row for count, data in _write(rows, 16000) for row in read(data, count, None)]

    def as_dict(items: list[dict[str, Any]] | None, keep: frozenset[int] | None) -> Any:
        if items is None:
            return None
        return {i["key"]: i["value"] for i in items if keep is None or i["key"] in keep}

    assert got == [(as_dict(r["bounds"], keys), as_dict(r["counts"], None), r["big"])
                   for r in rows]


def test_nested_fields_converters_and_missing_paths() -> None:
    rows = [{**_row(i), "inner": {"a": i, "b": f"b{i}", "c": b"xyz"}} for i in range(3)]
    read = compile_reader(SCHEMA, {("inner", "b"): str.upper, ("nope",): None,
                                   ("inner", "a"): None})
    [(count, data)] = _write(rows, 16000)
    assert read(data, count, None) == [("B0", None, 0), ("B1", None, 1), ("B2", None, 2)]
    with pytest.raises(UnsupportedFeature, match="not a record"):
        compile_reader(SCHEMA, {("name", "x"): None})


def _row(i: int) -> dict[str, Any]:
    return {"status": i % 3, "flag": True, "ratio": 1.5, "score": None, "name": f"n{i}",
            "blob": None, "color": "G", "inner": {"a": None, "b": "", "c": b"abc"},
            "again": None, "counts": [{"key": 1, "value": i}] * i, "bounds": None,
            "offsets": [i], "props": {}, "choice": i, "big": i * 10**12}


def test_skipping_past_the_common_encodings() -> None:
    """Counts and lengths of 64 or more are not single bytes: the fields are skipped the slow
    way, in the same records as fields skipped by one match."""
    rows = [_row(i) for i in range(4)]
    rows[1] = {**rows[1], "offsets": list(range(100)), "blob": b"x" * 300}
    rows[2] = {**rows[2], "props": {str(i): "v" for i in range(70)}, "name": "n" * 200}
    read = compile_reader(SCHEMA, {("status",): None, ("big",): None})
    [(count, data)] = _write(rows, 16000)
    assert read(data, count, None) == [(i % 3, i * 10**12) for i in range(4)]


def test_a_gate_skips_the_rest_of_rejected_records() -> None:
    rows = [_row(i) for i in range(10)]
    read = compile_reader(SCHEMA, {("inner", "a"): None, ("name",): None, ("big",): None},
                          gate=("name",))
    [(count, data)] = _write(rows, 16000)
    got = read(data, count, lambda name: name.endswith(("3", "7")))
    assert got == [(None, "n3", 3 * 10**12), (None, "n7", 7 * 10**12)]


def _array_block_record(items: list[int], *, sized: bool) -> bytes:
    """An ``offsets`` array written in one block with a negative count (and its byte size)."""
    body = b"".join(zigzag_varint(v) for v in items)
    count = zigzag_varint(-len(items)) + zigzag_varint(len(body)) if sized else \
        zigzag_varint(len(items))
    return zigzag_varint(1) + count + body + b"\x00"


@pytest.mark.parametrize("sized", [True, False])
def test_array_blocks_with_negative_counts(sized: bool) -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "offsets", "type": ["null", {"type": "array", "items": "long"}]},
        {"name": "tail", "type": "int"}]}
    data = (_array_block_record([5, 300, -7], sized=sized) + zigzag_varint(9)) * 2
    assert compile_reader(schema, {("offsets",): None, ("tail",): None})(data, 2, None) == \
        [([5, 300, -7], 9)] * 2
    assert compile_reader(schema, {("tail",): None})(data, 2, None) == [(9,)] * 2


@pytest.mark.parametrize("sized", [True, False])
@pytest.mark.parametrize("keys", [None, frozenset({2})])
def test_map_blocks_with_negative_counts(sized: bool, keys: frozenset[int] | None) -> None:
    """An Iceberg map (an array of key-value records) in blocks of negative counts, read as a
    dict, kept (with its keys filtered) or skipped."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "counts", "type": ["null", {"type": "array", "items": PAIR}]},
        {"name": "tail", "type": "int"}]}
    pairs = [zigzag_varint(1) + zigzag_varint(5), zigzag_varint(2) + zigzag_varint(300),
             zigzag_varint(3) + zigzag_varint(-7)]
    blocks = b"".join(
        (zigzag_varint(-len(part)) + zigzag_varint(len(b"".join(part))) if sized
         else zigzag_varint(len(part))) + b"".join(part) for part in (pairs[:2], pairs[2:]))
    data = (zigzag_varint(1) + blocks + b"\x00" + zigzag_varint(9)) * 2
    read = compile_reader(schema, {("counts",): None, ("tail",): None},
                          pairs={("counts",): keys})
    expected = {1: 5, 2: 300, 3: -7} if keys is None else {2: 300}
    assert read(data, 2, None) == [(expected, 9)] * 2
    assert compile_reader(schema, {("tail",): None})(data, 2, None) == [(9,)] * 2


@pytest.mark.parametrize(("data", "count"), [
    (b"\x02", 1),  # truncated: a union branch without its value
    (zigzag_varint(1) + zigzag_varint(5) + b"\x00\x00", 2),  # trailing bytes
    (b"\x08", 1),  # union branch 4 of 2
    (zigzag_varint(1) + zigzag_varint(-3) + zigzag_varint(-10) + zigzag_varint(1), 1),
])
def test_bad_data_is_a_corrupt_file(data: bytes, count: int) -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "offsets", "type": ["null", {"type": "array", "items": "long"}]}]}
    choices: list[dict[tuple[str, ...], Any]] = [{("offsets",): None}, {}]
    for wanted in choices:
        read = compile_reader(schema, wanted)
        with pytest.raises(CorruptFile, match="mem is corrupt"):
            list(read_blocks(read, iter([(count, data)]), None, "mem"))


def test_floats_and_strings_decode_exactly() -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "f", "type": "float"}, {"name": "s", "type": "string"}]}
    data = struct.pack("<f", -0.0) + zigzag_varint(3) + "é!".encode()
    [(f, s)] = compile_reader(schema, {("f",): None, ("s",): None})(data, 1, None)
    assert (str(f), s) == ("-0.0", "é!")


def test_schemas_it_cannot_compile() -> None:
    with pytest.raises(UnsupportedFeature):
        compile_reader({"type": "array", "items": "long"}, {})
    recursive = {"type": "record", "name": "node", "fields": [
        {"name": "next", "type": ["null", "node"]}]}
    with pytest.raises(UnsupportedFeature):
        compile_reader(recursive, {})
