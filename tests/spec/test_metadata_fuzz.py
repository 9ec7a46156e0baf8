"""Fuzzing the metadata file reader: random mutations of valid metadata files (the spec vectors
and files icepark writes) either read to the right value or raise a typed icepark error
(:class:`~icepark.errors.IcebergError`), never another exception and never a hang.

Byte mutations (flip, delete, insert, truncate; also inside gzip) test the decoding layer;
JSON mutations (drop, duplicate or retype a key; numbers made huge, negative, float or string;
values nested in lists or objects) test every field reader and rule behind it. A mutation that
leaves the JSON value unchanged must read to the original model, and whatever reads must
survive a write and a second read unchanged.
"""

from __future__ import annotations

import copy
import gzip
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import IcebergError
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_json
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, ListType, NestedField, StructType
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import MetadataBuilder
from tests.vectors import vectors

VECTORS = vectors("metadata")
VECTOR_FILES = ["java/TableMetadataV1Valid.json", "java/TableMetadataV2Valid.json",
                "java/TableMetadataV3ValidMinimal.json", "java/TableMetadataStatisticsFiles.json",
                "rust/TableMetadataV1Compat.json",
                "rust/example_table_metadata_v2_partition_evolution.json"]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""About 1-3 s per test: small inputs, no deadline (a slow machine is not a failure)."""


def _written(version: int) -> str:
    """A metadata file as icepark writes it: partitioned, sorted, evolved, with a snapshot."""
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.optional(2, "ts", TIMESTAMPTZ),
                       NestedField.optional(3, "tags", ListType(4, STRING)),
                       NestedField.optional(5, "s", StructType((
                           NestedField.optional(6, "a", STRING),))))
    spec = PartitionSpecBuilder(schema).day("ts").bucket("id", 4).build()
    order = SortOrderBuilder(schema).asc("id").build()
    md, _ = MetadataBuilder.new_table(schema, "file:///wh/db/t", spec=spec, sort_order=order,
                                      format_version=version,  # type: ignore[arg-type]
                                      properties={"k": "v"})
    evolved = Schema.of(*schema.fields, NestedField.optional(7, "extra", STRING), schema_id=1)
    md = MetadataBuilder(md).apply_all([u.AddSchema(evolved, 7),
                                        u.SetCurrentSchema(u.LAST_ADDED)]).build(
        previous_metadata_location="file:///wh/db/t/metadata/v1.metadata.json")
    return table_metadata_to_json(md)


BASES: dict[str, str] = {
    **{name: (VECTORS / name).read_text() for name in VECTOR_FILES},
    **{f"written v{v}": _written(v) for v in (1, 2, 3)},
}
NAMES = sorted(BASES)


def _read(data: str | bytes) -> TableMetadata | None:
    """The model, or None when the reader raised a typed error (anything else fails)."""
    try:
        return table_metadata_from_json(data, "/wh/db/t/metadata/v3.metadata.json")
    except IcebergError:
        return None


def _survives_a_round_trip(md: TableMetadata) -> None:
    text = table_metadata_to_json(md)
    assert table_metadata_from_json(text) == md


# -------------------------------------------------------------------------- byte mutations


@st.composite
def byte_mutations(draw: st.DrawFn, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == "flip" and out:
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "delete":
            del out[at:at + draw(st.integers(1, 8))]
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=4) | st.sampled_from(
                [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\xff", b"-", b"e9"]))
        else:
            del out[at:]
    return bytes(out)


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(data=st.data())
def test_byte_mutations(name: str, data: st.DataObject) -> None:
    original = BASES[name].encode()
    compressed = data.draw(st.booleans())
    mutated = data.draw(byte_mutations(gzip.compress(original, mtime=0) if compressed
                                       else original))
    md = _read(mutated)
    if md is None:
        return
    _survives_a_round_trip(md)
    if not compressed:
        try:
            same = json.loads(mutated) == json.loads(original)
        except ValueError:
            same = False
        if same:
            assert md == table_metadata_from_json(original)


# -------------------------------------------------------------------------- JSON mutations


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    items: Any = (doc.items() if isinstance(doc, dict)
                  else enumerate(doc) if isinstance(doc, list) else ())
    out = []
    for key, value in items:
        out.append((*prefix, key))
        out.extend(_paths(value, (*prefix, key)))
    return out


def _retyped(value: Any) -> st.SearchStrategy[Any]:
    numbers = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -1, -(2**31), 0.5, 1e308,
                               float("nan"), float("inf"), True])
    if isinstance(value, int) and not isinstance(value, bool):
        return (numbers | st.just(str(value)) | st.just(-value) | st.just(float(value))
                | st.integers())
    if isinstance(value, str):
        return st.sampled_from(["", " ", "-1", "1e999", "\x00", "\ud800", value * 50,
                                value.upper()]) | numbers
    return st.none() | st.just([value]) | st.just({"value": value}) | st.just({}) | st.just([])


@st.composite
def json_mutations(draw: st.DrawFn, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        value = parent[key]
        action = draw(st.sampled_from(["drop", "duplicate", "retype", "nest", "null"]))
        if action == "drop":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))
        elif action == "duplicate":
            other = draw(st.sampled_from(sorted(parent)))
            parent[other] = copy.deepcopy(value)
        elif action == "retype":
            parent[key] = draw(_retyped(value))
        elif action == "nest":
            parent[key] = draw(st.sampled_from([[value], {"x": value}, [[value]]]))
        else:
            parent[key] = None
    return doc


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(data=st.data())
def test_json_mutations(name: str, data: st.DataObject) -> None:
    doc = data.draw(json_mutations(json.loads(BASES[name])))
    md = _read(json.dumps(doc))
    if md is not None:
        _survives_a_round_trip(md)
    as_object = _read_object(doc)
    assert (as_object is None) == (md is None)


def _read_object(doc: Any) -> TableMetadata | None:
    """The reader given the decoded object instead of the text (the same checks apply)."""
    try:
        return table_metadata_from_json(doc) if isinstance(doc, dict) else None
    except IcebergError:
        return None


@pytest.mark.parametrize("text", [
    "[" * 50_000, '{"a":' * 50_000, '{"format-version": ' + "1" * 10_000 + "}",
    '{"format-version": 2, "schemas": [' + '{"type": "list", "element": ' * 5000 + "}",
])
def test_pathological_inputs_are_typed_errors(text: str) -> None:
    assert _read(text) is None
    assert _read(gzip.compress(text.encode())) is None


def test_deeply_nested_schema_is_a_typed_error() -> None:
    """A type nested deeper than Python's recursion limit (valid JSON, decoded fine)."""
    doc = json.loads(BASES["java/TableMetadataV2Valid.json"])
    doc["schemas"][1]["fields"].append({"id": 99, "name": "deep", "required": False,
                                        "type": "DEEP"})
    nested = "".join(f'{{"type": "list", "element-id": {100 + i}, "element-required": true, '
                     '"element": ' for i in range(900)) + '"long"' + "}" * 900
    assert _read(json.dumps(doc).replace('"DEEP"', nested)) is None
