"""Runs of Iceberg maps read by the pattern of their shape read as the slow way reads them."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.io.avro.compiled import Finish, compile_reader
from icepark.io.avro.shape import MAX_BYTES, MapField, MapRun

PAIR = {"type": "record", "name": "k1_v2", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "long"}]}
BOUND = {"type": "record", "name": "k3_v4", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}
SCHEMA: dict[str, Any] = {"type": "record", "name": "rec", "fields": [
    {"name": "id", "type": "long"},
    {"name": "sizes", "type": ["null", {"type": "array", "items": PAIR}]},
    {"name": "counts", "type": ["null", {"type": "array", "items": "k1_v2"}]},
    {"name": "lower", "type": ["null", {"type": "array", "items": BOUND}]},
    {"name": "upper", "type": {"type": "array", "items": "k3_v4"}},
    {"name": "tail", "type": ["null", "string"]},
]}


def _blocks(rows: list[dict[str, Any]]) -> list[tuple[int, bytes]]:
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="null", sync_interval=1 << 20)
    buf.seek(0)
    return [(b.num_records, bytes(b.bytes_.getvalue()))  # type: ignore[attr-defined]  # untyped
            for b in fastavro.block_reader(buf)]


@st.composite
def tables(draw: Any) -> list[dict[str, Any]]:
    """Rows whose maps mostly share one shape (the same keys in the same order), as the
    files of one table do, with values of every size, and now and then another shape."""
    keys = draw(st.lists(st.integers(0, 200), max_size=8, unique=True))
    longs = st.integers(-(2**63), 2**63 - 1)
    value_bytes = st.binary(max_size=8) | st.binary(min_size=MAX_BYTES - 1,
                                                    max_size=MAX_BYTES + 2)

    def pairs(values: Any, ks: list[int]) -> Any:
        return st.tuples(*(values for _ in ks)).map(
            lambda vs: [{"key": k, "value": v} for k, v in zip(ks, vs, strict=True)])

    def row(ks: list[int]) -> Any:
        return st.fixed_dictionaries({
            "id": longs, "sizes": st.none() | pairs(longs, ks), "counts": pairs(longs, ks),
            "lower": pairs(value_bytes, ks), "upper": pairs(value_bytes, ks),
            "tail": st.none() | st.text(max_size=3)})

    other = st.lists(st.integers(0, 70), max_size=70, unique=True)
    rows = draw(st.lists(row(keys) | other.flatmap(row), min_size=1, max_size=12))
    return list(rows)


def _as_dict(items: list[dict[str, Any]] | None, keep: frozenset[int] | None) -> Any:
    if items is None:
        return None
    return {i["key"]: i["value"] for i in items if keep is None or i["key"] in keep}


@settings(max_examples=60, deadline=None)
@given(rows=tables(), keys=st.none() | st.frozensets(st.integers(0, 200), max_size=4))
def test_maps_read_by_shape_as_the_slow_way_reads_them(rows: list[dict[str, Any]],
                                                       keys: frozenset[int] | None) -> None:
    read = compile_reader(SCHEMA, {("id",): None, ("counts",): None, ("upper",): None,
                                   ("tail",): None},
                          pairs={("counts",): keys, ("upper",): None})
    for _ in range(2):  # then with every shape learned
        got = [row for count, data in _blocks(rows) for row in read(data, count, None)]
        assert got == [(r["id"], _as_dict(r["counts"], keys), _as_dict(r["upper"], None),
                        r["tail"]) for r in rows]


def test_a_learned_shape_matches_records_of_that_shape_only() -> None:
    run = MapRun([MapField(True, False, frozenset({1})), MapField(False, True, None, False)])
    one = bytes([2, 2, 2, 0x10, 0, 2, 2, 2, 0xAA, 0])  # {1: 8}, then {1: b"\xaa"} skipped
    other_value = bytes([2, 2, 2, 0x90, 0x01, 0, 2, 2, 4, 0xAA, 0xBB, 0])  # same keys
    other_keys = bytes([2, 2, 4, 0x10, 0, 2, 4, 2, 0xAA, 0])  # key 2: another shape
    assert run.read(one, 0) is None
    run.learn(one, 0)
    assert run.read(one, 0) == (len(one), ({1: 8},))
    assert run.read(other_value, 0) == (len(other_value), ({1: 72},))
    assert run.read(other_keys, 0) is None
    run.learn(other_keys, 0)
    assert run.read(other_keys, 0) == (len(other_keys), ({},))
    assert run.read(one, 0) is None  # the latest shape is tried


def test_shapes_no_pattern_describes_are_not_learned() -> None:
    run = MapRun([MapField(False, True, None)])
    long_value = bytes([2, 2, 2 * (MAX_BYTES + 1)]) + bytes(MAX_BYTES + 1) + b"\0"
    many = bytes([0x80, 0x01]) + b"\x02\x00" * 64 + b"\0"  # 64 items: a two-byte count
    sized = bytes([1, 6, 2, 2, 0xAA, 0])  # a block with a negative count and its size
    for data in (long_value, many, sized, b"", bytes([2, 2])):
        run.learn(data, 0)
        assert run.read(data, 0) is None


@settings(max_examples=40, deadline=None)
@given(rows=tables(), limit=st.integers(-10, 10))
def test_a_finish_check_leaves_out_rejected_records_undecoded(rows: list[dict[str, Any]],
                                                              limit: int) -> None:
    finish = Finish(("limit = ctx",), ("append(({0}, {2}))",),
                    check=("rejected = {1}.get(0, 0) > limit",), check_reads=(1,))
    read = compile_reader(SCHEMA, {("id",): None, ("counts",): None, ("tail",): None},
                          pairs={("counts",): frozenset({0})}, finish=finish)
    for _ in range(2):
        got = [row for count, data in _blocks(rows) for row in read(data, count, None, limit)]
        assert got == [(r["id"], r["tail"]) for r in rows
                       if _as_dict(r["counts"], None).get(0, 0) <= limit]
