"""The columnar Avro encoder writes exactly the bytes of a record-at-a-time encoder (fastavro)."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.io.avro.encoder import ListColumn, StructColumn, encode_records, zigzag_varint

SCHEMA: dict[str, Any] = {"type": "record", "name": "r", "fields": [
    {"name": "l", "type": "long"},
    {"name": "i", "type": ["null", "int"], "default": None},
    {"name": "s", "type": ["null", "string"], "default": None},
    {"name": "b", "type": "bytes"},
    {"name": "flag", "type": "boolean"},
    {"name": "f", "type": ["null", "float"], "default": None},
    {"name": "d", "type": "double"},
    {"name": "fx", "type": {"type": "fixed", "name": "fixed_3", "size": 3}},
    {"name": "fx2", "type": ["null", "fixed_3"], "default": None},
    {"name": "inner", "type": {"type": "record", "name": "r9", "fields": [
        {"name": "x", "type": ["null", "long"], "default": None},
        {"name": "y", "type": "string"}]}},
    {"name": "m", "type": ["null", {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "k1_v2", "fields": [
            {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}}],
     "default": None},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "recs", "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "r5", "fields": [
            {"name": "a", "type": "boolean"}, {"name": "b", "type": ["null", "bytes"],
                                                "default": None}]}}], "default": None},
]}

longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
small_bytes = st.binary(max_size=12)
floats32 = st.floats(width=32, allow_nan=False)
rows = st.fixed_dictionaries({
    "l": longs,
    "i": st.none() | ints,
    "s": st.none() | st.text(max_size=10),
    "b": small_bytes,
    "flag": st.booleans(),
    "f": st.none() | floats32,
    "d": st.floats(allow_nan=False),
    "fx": st.binary(min_size=3, max_size=3),
    "fx2": st.none() | st.binary(min_size=3, max_size=3),
    "inner": st.fixed_dictionaries({"x": st.none() | longs, "y": st.text(max_size=5)}),
    "m": st.none() | st.dictionaries(ints, small_bytes, max_size=4),
    "arr": st.lists(longs, max_size=4),
    "recs": st.none() | st.lists(st.fixed_dictionaries({
        "a": st.booleans(), "b": st.none() | small_bytes}), max_size=3),
})


def columns(records: list[dict[str, Any]]) -> StructColumn:
    """The columnar form of record dicts (maps flattened to key/value items)."""
    n = len(records)

    def col(name: str) -> list[Any]:
        return [r[name] for r in records]

    maps = col("m")
    items = [kv for m in maps if m is not None for kv in m.items()]
    recs = [x for r in col("recs") if r is not None for x in r]
    return StructColumn({
        **{name: col(name) for name in ("l", "i", "s", "b", "flag", "f", "d", "fx", "fx2")},
        "inner": StructColumn({"x": [r["inner"]["x"] for r in records],
                               "y": [r["inner"]["y"] for r in records]}, n),
        "m": ListColumn([None if m is None else len(m) for m in maps],
                        StructColumn({"key": [k for k, _ in items],
                                      "value": [v for _, v in items]}, len(items))),
        "arr": ListColumn([len(a) for a in col("arr")], [x for a in col("arr") for x in a]),
        "recs": ListColumn([None if r is None else len(r) for r in col("recs")],
                           StructColumn({"a": [x["a"] for x in recs],
                                         "b": [x["b"] for x in recs]}, len(recs))),
    }, n)


def reference(records: list[dict[str, Any]]) -> bytes:
    parsed = fastavro.parse_schema(SCHEMA)
    out = io.BytesIO()
    for r in records:
        record = dict(r)
        m = r["m"]
        record["m"] = None if m is None else [{"key": k, "value": v} for k, v in m.items()]
        fastavro.schemaless_writer(out, parsed, record)
    return out.getvalue()


@settings(max_examples=200, deadline=None)
@given(st.lists(rows, max_size=30))
def test_columnar_encoding_equals_record_encoding(records: list[dict[str, Any]]) -> None:
    assert encode_records(SCHEMA, columns(records)) == reference(records)


@given(longs)
def test_zigzag_varint(value: int) -> None:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "long", value)
    assert zigzag_varint(value) == out.getvalue()


def one_field(avro_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": [{"name": "v", "type": avro_type}]}


@pytest.mark.parametrize(("avro_type", "values", "message"), [
    ("long", [None], "expected integers"),
    ("long", [2**63], "64-bit range"),
    ("string", [b"bytes"], "expected strings"),
    ("string", ["\ud800"], "expected strings"),
    ("bytes", ["text"], "expected bytes"),
    ({"type": "fixed", "name": "f2", "size": 2}, [b"abc"], "2-byte values"),
    ("int", [1, 2, 3], "expected 2 values"),
])
def test_invalid_values_are_validation_errors(avro_type: Any, values: list[Any],
                                              message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        encode_records(one_field(avro_type), StructColumn({"v": values}, 2 if len(values) == 3
                                                          else len(values)))


def test_missing_required_field_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="missing values for required field"):
        encode_records(one_field("long"), StructColumn({}, 1))
    assert encode_records(one_field(["null", "long"]) | {"fields": [
        {"name": "v", "type": ["null", "long"], "default": None}]}, StructColumn({}, 2)) == \
        b"\x00\x00"
