"""Iceberg types as Avro schemas (Appendix A), and the manifest schemas against the vectors."""

from __future__ import annotations

import json
from typing import Any

import fastavro
import pytest

from icepark.io.avro.schema import avro_name, decimal_size, to_avro
from icepark.io.manifest.codec import manifest_entry_type
from icepark.io.manifest.manifest_list import manifest_file_type
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    GEOGRAPHY,
    GEOMETRY,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    IcebergType,
    NestedField,
    PrimitiveType,
    StructType,
)
from tests.io.manifest_fixtures import NESTED_SCHEMA, PARTITION_SPEC
from tests.vectors import vectors

VECTORS = vectors("avro")


@pytest.mark.parametrize(("iceberg", "avro"), [
    (BOOLEAN, "boolean"),
    (INT, "int"),
    (LONG, "long"),
    (FLOAT, "float"),
    (DOUBLE, "double"),
    (PrimitiveType.decimal(9, 2),
     {"type": "fixed", "name": "decimal_9_2", "size": 4, "logicalType": "decimal",
      "precision": 9, "scale": 2}),
    (DATE, {"type": "int", "logicalType": "date"}),
    (TIME, {"type": "long", "logicalType": "time-micros"}),
    (TIMESTAMP, {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False}),
    (TIMESTAMPTZ, {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}),
    (STRING, "string"),
    (UUID, {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
    (PrimitiveType.fixed(3), {"type": "fixed", "name": "fixed_3", "size": 3}),
    (BINARY, "bytes"),
    (TIMESTAMP_NS, {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False}),
    (TIMESTAMPTZ_NS, {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True}),
    (GEOMETRY, "bytes"),
    (GEOGRAPHY, "bytes"),
    (UNKNOWN, "null"),
])
def test_primitive_type_mappings(iceberg: IcebergType, avro: Any) -> None:
    """Appendix A, *Data Type Mappings*."""
    assert to_avro(iceberg, "unused") == avro


@pytest.mark.parametrize(("precision", "size"), [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3),
                                                 (9, 4), (10, 5), (18, 8), (19, 9), (38, 16)])
def test_decimal_uses_the_minimum_bytes_for_its_precision(precision: int, size: int) -> None:
    assert decimal_size(precision) == size
    assert 10**precision - 1 < 2 ** (8 * size - 1) and (
        size == 1 or 10**precision - 1 >= 2 ** (8 * (size - 1) - 1))


def test_field_ids_and_nested_types() -> None:
    """"IDs are stored as JSON integers": field-id, element-id, key-id/value-id."""
    avro = to_avro(NESTED_SCHEMA, "table")
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["id"] == {"name": "id", "type": "long", "field-id": 1}
    assert fields["data"] == {"name": "data", "type": ["null", "string"], "field-id": 2,
                              "default": None}
    assert fields["location"]["type"][1]["name"] == "r16"
    assert [f["field-id"] for f in fields["location"]["type"][1]["fields"]] == [17, 18]
    assert fields["tags"]["type"][1] == {"type": "array", "items": ["null", "string"],
                                         "element-id": 20}
    assert fields["props"]["type"][1] == {"type": "map", "values": ["null", "string"],
                                          "key-id": 22, "value-id": 23}
    points = fields["points"]["type"][1]
    assert points["type"] == "array" and points["logicalType"] == "map"
    assert points["items"]["name"] == "k25_v26"
    assert [(f["name"], f["field-id"]) for f in points["items"]["fields"]] == [
        ("key", 25), ("value", 26)]
    assert points["items"]["fields"][1]["type"]["name"] == "r26"
    fastavro.parse_schema(avro)  # a valid Avro schema: names unique, defaults valid


def test_named_fixed_types_are_defined_once() -> None:
    d = PrimitiveType.decimal(9, 2)
    struct = StructType((NestedField.optional(1, "a", d), NestedField.optional(2, "b", d),
                         NestedField.required(3, "c", UUID), NestedField.required(4, "d", UUID)))
    fields = to_avro(struct, "r")["fields"]
    assert fields[0]["type"][1]["name"] == "decimal_9_2" and fields[1]["type"] == [
        "null", "decimal_9_2"]
    assert fields[3]["type"] == "uuid_fixed"
    fastavro.parse_schema(to_avro(struct, "r"))


def test_names_are_made_avro_compatible() -> None:
    assert avro_name("1a-b") == "_1a_x2Db"
    assert avro_name("ünï") == "_xFCn_xEF"
    field = to_avro(StructType((NestedField.optional(1, "my col", INT),)), "r")["fields"][0]
    assert field["name"] == "my_x20col" and field["iceberg-field-name"] == "my col"


def _by_id(record: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {f["field-id"]: f for f in record["fields"]}


def _base(t: Any) -> Any:
    """A type without its null branch."""
    return next(b for b in t if b != "null") if isinstance(t, list) else t


def _shape(t: Any) -> Any:
    """What must match between two writers: types, IDs and named-type names, not docs."""
    t = _base(t)
    if isinstance(t, dict):
        out = {k: _shape(v) if k in ("items", "values") else v for k, v in t.items()
               if k not in ("doc", "fields", "default")}
        if "fields" in t:
            out["fields"] = {f["field-id"]: (f["name"], _shape(f["type"])) for f in t["fields"]}
        return out
    return t


def test_manifest_entry_schema_matches_the_reference_implementation() -> None:
    vector = json.loads((VECTORS / "avro_schema_manifest_entry.json").read_text())
    ours = to_avro(manifest_entry_type(StructType(()), 1), "manifest_entry")
    assert ours["name"] == vector["name"] == "manifest_entry"
    theirs_df = _base(_by_id(vector)[2]["type"])
    ours_df = _base(_by_id(ours)[2]["type"])
    assert ours_df["name"] == theirs_df["name"] == "r2"
    ours_fields, theirs_fields = _by_id(ours_df), _by_id(theirs_df)
    assert set(theirs_fields) <= set(ours_fields)
    for field_id, theirs in theirs_fields.items():
        mine = ours_fields[field_id]
        assert mine["name"] == theirs["name"]
        if field_id == 102:
            assert _base(mine["type"])["name"] == _base(theirs["type"])["name"] == "r102"
        else:
            assert _shape(mine["type"]) == _shape(theirs["type"]), field_id
    assert set(ours_fields) == set(theirs_fields)
    with_counts = to_avro(manifest_entry_type(StructType(()), 1, distinct_counts=True), "m")
    distinct = _by_id(_base(_by_id(with_counts)[2]["type"]))[111]
    assert distinct["name"] == "distinct_counts"
    assert _base(distinct["type"])["items"]["name"] == "k123_v124"


@pytest.mark.parametrize("version", [1, 2])
def test_manifest_file_schema_matches_the_reference_implementation(version: int) -> None:
    vector = json.loads((VECTORS / f"avro_schema_manifest_file_v{version}.json").read_text())
    ours = to_avro(manifest_file_type(version), "manifest_file")
    theirs_fields, ours_fields = _by_id(vector), _by_id(ours)
    assert set(theirs_fields) <= set(ours_fields)
    assert set(ours_fields) - set(theirs_fields) == {519}  # key_metadata, in the spec's table
    for field_id, theirs in theirs_fields.items():
        assert _shape(ours_fields[field_id]["type"]) == _shape(theirs["type"]), field_id
        if version == 2 or field_id not in (504, 505, 506):  # v1 renamed them since
            assert ours_fields[field_id]["name"] == theirs["name"]


def test_partition_struct_of_every_result_type_is_a_valid_avro_schema() -> None:
    avro = to_avro(manifest_entry_type(PARTITION_SPEC.partition_type(NESTED_SCHEMA), 2),
                   "manifest_entry")
    fastavro.parse_schema(avro)
    partition = _base(_by_id(_base(_by_id(avro)[2]["type"]))[102]["type"])
    assert partition["name"] == "r102"
    assert [f["field-id"] for f in partition["fields"]] == list(range(1000, 1019))
    assert all(f["default"] is None and f["type"][0] == "null" for f in partition["fields"])
