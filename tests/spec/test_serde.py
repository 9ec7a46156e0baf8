"""JSON serde: Appendix C examples, type strings, per-version shapes, malformed input, the
pyiceberg interop oracle, and Hypothesis round trips of schemas and table metadata."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import pickle
import uuid
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table.metadata import TableMetadataUtil

from icepark.errors import CorruptFile, IcebergError, UnsupportedFeature, ValidationError
from icepark.spec.metadata import (
    BlobMetadata,
    MetadataLogEntry,
    PartitionStatisticsFile,
    SnapshotLogEntry,
    StatisticsFile,
    TableMetadata,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec, check_partition_source
from icepark.spec.schema import Schema
from icepark.spec.serde import (
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    snapshot_to_json,
    sort_order_from_json,
    sort_order_to_json,
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
    type_from_json,
    type_to_json,
)
from icepark.spec.snapshots import (
    MAIN_BRANCH,
    Operation,
    RefType,
    Snapshot,
    SnapshotRef,
    Summary,
    ancestors_of,
)
from icepark.spec.sorting import UNSORTED, NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from tests.vectors import vectors

EXAMPLES = Path(__file__).resolve().parent / "serde_examples"
VECTORS = vectors("metadata")
S1, S2 = 3051729675574597004, 3055729675574597004


def example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text())


# ------------------------------------------------------------------------ Appendix C examples


def test_appendix_c_schema_example() -> None:
    data = example("appendix_c_schema.json")
    schema = schema_from_json(data)
    assert schema.schema_id == 3 and schema.identifier_field_ids == (1,)
    ident = schema.find_field(1)
    assert ident.field_type == UUID and ident.is_required
    assert ident.initial_default == uuid.UUID("0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb")
    assert ident.write_default == uuid.UUID("ec5911be-b0a7-458c-8438-c9a3e53cffae")
    assert schema.find_type(2) == ListType(3, STRING, element_required=True)
    assert schema.find_type(6) == MapType(4, STRING, 5, DOUBLE, value_required=False)
    assert schema.find_field(6).doc == "a map of doubles"
    assert schema.find_type("location.lat") == PrimitiveType.decimal(9, 2)
    assert schema.find_field("location.lat").write_default == Decimal("14.20")
    assert schema.find_field("location.seen").initial_default == 1510871468123456
    assert schema.find_field("location").initial_default == {8: Decimal("1.50")}
    assert schema.find_type("location.hash") == PrimitiveType.fixed(16)
    assert schema.find_type(17) == DATE
    assert schema.find_column_name(17) == "points.element.tags.value.element"

    written = schema_to_json(schema)
    assert written["fields"][3]["type"]["fields"][0]["type"] == "decimal(9,2)"
    expected = json.loads(json.dumps(data).replace("decimal(9, 2)", "decimal(9,2)"))
    assert written == expected
    assert schema_from_json(written) == schema


def test_appendix_c_partition_spec_example() -> None:
    data = example("appendix_c_partition_spec.json")
    spec = partition_spec_from_json(data)
    assert spec.fields == (
        PartitionField(4, 1000, Transform.day(), "ts_day"),
        PartitionField(1, 1001, Transform.bucket(16), "id_bucket"),
        PartitionField(2, 1002, Transform.truncate(20), "data_trunc"),
    )
    assert partition_spec_to_json(spec) == data


def test_appendix_c_sort_order_example() -> None:
    data = example("appendix_c_sort_order.json")
    order = sort_order_from_json(data)
    assert order == SortOrder(1, (
        SortField(2, Transform.identity(), SortDirection.ASC, NullOrder.NULLS_FIRST),
        SortField(3, Transform.bucket(4), SortDirection.DESC, NullOrder.NULLS_LAST)))
    assert sort_order_to_json(order) == data


def test_appendix_c_table_metadata_snapshots_and_refs() -> None:
    data = example("appendix_c_table_metadata_v2.json")
    md = table_metadata_from_json(data)
    assert md.table_uuid == uuid.UUID("fb072c92-a02b-11e9-ae9c-1bb7bc9eca94")
    assert md.property("commit.retry.num-retries") == "4"
    assert md.current_snapshot() == md.snapshot_by_id(S2)
    s2 = md.snapshot_by_id(S2)
    assert s2 is not None and s2.summary is not None
    assert s2.summary.operation is Operation.OVERWRITE
    assert dict(s2.summary.properties) == {"added-data-files": "2", "deleted-data-files": "1"}
    assert [s.snapshot_id for s in ancestors_of(S2, md.snapshots_by_id)] == [S2, S1]
    assert md.refs[MAIN_BRANCH] == SnapshotRef.branch(S2, min_snapshots_to_keep=5,
                                                      max_snapshot_age_ms=86400000)
    assert md.refs["audit"] == SnapshotRef.branch(S2, max_ref_age_ms=604800000)
    assert md.refs["test"] == SnapshotRef.tag(S1, max_ref_age_ms=10000000)
    assert md.snapshot_by_ref("test") == md.snapshot_by_id(S1)
    assert md.snapshot_by_ref("nope") is None
    assert md.sort_order().order_id == 1 and md.spec().fields[1].name == "id_bucket"
    (stats,) = md.statistics
    assert stats.key_metadata == b"\x00\x01\x02\x03"
    assert stats.blob_metadata[0].fields == (1, 2)
    assert dict(stats.blob_metadata[0].properties) == {"ndv": "100"}
    # Everything this file holds is written back exactly.
    assert table_metadata_to_dict(md) == data
    assert snapshot_to_json(s2, 2) == data["snapshots"][1]


# ------------------------------------------------------------------------------ type strings

TYPE_STRINGS = [
    ("boolean", BOOLEAN), ("int", INT), ("long", LONG), ("float", FLOAT), ("double", DOUBLE),
    ("date", DATE), ("time", TIME), ("timestamp", TIMESTAMP), ("timestamptz", TIMESTAMPTZ),
    ("string", STRING), ("uuid", UUID), ("binary", BINARY),
    ("fixed[16]", PrimitiveType.fixed(16)), ("decimal(9,2)", PrimitiveType.decimal(9, 2)),
    ("decimal(9, 2)", PrimitiveType.decimal(9, 2)), ("decimal(38,0)", PrimitiveType.decimal(38, 0)),
]


@pytest.mark.parametrize(("text", "expected"), TYPE_STRINGS)
def test_type_strings(text: str, expected: PrimitiveType) -> None:
    assert type_from_json(text) == expected
    assert type_to_json(expected) == text.replace(", ", ",")


TYPE_REJECTS: list[tuple[Any, str]] = [
    ("varchar", "Unknown primitive type 'varchar'"),
    ("Long", "Unknown primitive type 'Long'"),
    ("", "Unknown primitive type ''"),
    ("decimal(9)", "Unknown primitive type 'decimal(9)'"),
    ("decimal(39,2)", "Invalid decimal precision 39"),
    ("fixed[0]", "Invalid fixed length 0"),
    ("fixed(16)", "Unknown primitive type 'fixed(16)'"),
    ("list<int>", "Unknown primitive type 'list<int>'"),
    (5, "must be a JSON object"),
    (None, "must be a JSON object"),
    ({"type": "array", "element": "int"}, "unknown nested type 'array'"),
    ({"element": "int"}, "missing required field 'type'"),
    ({"type": "struct"}, "missing required field 'fields'"),
    ({"type": "list", "element-id": "3", "element": "int", "element-required": True},
     "'element-id' must be an integer, not '3'"),
    ({"type": "list", "element-id": 3, "element": "int"},
     "missing required field 'element-required'"),
    ({"type": "list", "element-id": 3, "element": "int", "element-required": "yes"},
     "'element-required' must be true or false"),
    ({"type": "map", "key-id": 1, "key": "string", "value-id": 2, "value-required": True},
     "missing required field 'value'"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": True}]},
     "missing required field 'type'"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": True, "type": "int"},
                                   {"id": 1, "name": "b", "required": True, "type": "int"}]},
     "Duplicate field id 1"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": True, "type": "int",
                                    "initial-default": "x"}]},
     "Field 'a' (id 1): invalid 'initial-default'"),
]


@pytest.mark.parametrize(("data", "message"), TYPE_REJECTS)
def test_type_rejects(data: Any, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        if isinstance(data, dict) and data.get("type") == "struct" and "fields" in data:
            schema_from_json(data)
        else:
            type_from_json(data)
    assert message in str(info.value)


# --------------------------------------------------------------------- per-version JSON shape


def test_v1_written_shape_and_appendix_e_defaults() -> None:
    md = table_metadata_from_json(example("v1_legacy_snapshots.json"))
    # "Table metadata field last-sequence-number must default to 0" and "Snapshot field
    # sequence-number must default to 0"; v1 values that were written anyway are ignored.
    assert md.last_sequence_number == 0
    assert [s.sequence_number for s in md.snapshots] == [0, 0]
    legacy, current = md.snapshots
    assert legacy.manifests == ("s3://bucket/legacy/metadata/m1.avro",
                                "s3://bucket/legacy/metadata/m2.avro")
    assert legacy.manifest_list is None and legacy.summary is None
    assert current.operation is Operation.DELETE
    assert [f.field_id for f in md.spec().fields] == [1000, 1001]
    assert md.last_partition_id == 1001
    assert md.sort_orders == (UNSORTED,) and md.table_uuid is None
    assert md.refs == {MAIN_BRANCH: SnapshotRef.branch(2)}

    d = table_metadata_to_dict(md)
    assert "last-sequence-number" not in d and "table-uuid" not in d
    assert d["schema"] == d["schemas"][0]
    assert d["partition-spec"] == d["partition-specs"][0]["fields"]
    assert "refs" not in d  # only the implied main branch
    assert all("sequence-number" not in s for s in d["snapshots"])
    assert d["snapshots"][0]["manifests"] == list(legacy.manifests)
    assert "summary" not in d["snapshots"][0]
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


def test_v1_writes_refs_that_are_not_implied() -> None:
    md = table_metadata_from_json(example("v1_legacy_snapshots.json"))
    tagged = replace(md, refs={**md.refs, "v1": SnapshotRef.tag(1)})
    assert table_metadata_to_dict(tagged)["refs"] == {
        "main": {"snapshot-id": 2, "type": "branch"}, "v1": {"snapshot-id": 1, "type": "tag"}}
    assert table_metadata_from_json(table_metadata_to_json(tagged)) == tagged
    kept = replace(md, refs={MAIN_BRANCH: SnapshotRef.branch(2, min_snapshots_to_keep=3)})
    assert "refs" in table_metadata_to_dict(kept)
    assert table_metadata_from_json(table_metadata_to_json(kept)) == kept


def test_v1_read_as_v2_then_written_as_v2() -> None:
    md = table_metadata_from_json((VECTORS / "rust/TableMetadataV1Compat.json").read_text())
    v2 = replace(md, format_version=2)
    d = table_metadata_to_dict(v2)
    assert d["last-sequence-number"] == 0
    assert [s["sequence-number"] for s in d["snapshots"]] == [0]
    assert "schema" not in d and "partition-spec" not in d
    for key in ("table-uuid", "schemas", "current-schema-id", "partition-specs",
                "default-spec-id", "last-partition-id", "sort-orders", "default-sort-order-id",
                "refs"):
        assert key in d
    assert table_metadata_from_json(d) == v2


def test_v2_and_v3_written_shape() -> None:
    md = table_metadata_from_json(example("appendix_c_table_metadata_v2.json"))
    assert "next-row-id" not in table_metadata_to_dict(md)
    v3 = replace(md, format_version=3, next_row_id=42, snapshots=tuple(
        replace(s, first_row_id=10 * i, added_rows=10) for i, s in enumerate(md.snapshots)))
    d = table_metadata_to_dict(v3)
    assert d["format-version"] == 3 and d["next-row-id"] == 42
    assert [(s["first-row-id"], s["added-rows"]) for s in d["snapshots"]] == [(0, 10), (10, 10)]
    assert table_metadata_from_json(table_metadata_to_json(v3)) == v3


def test_empty_encryption_keys_hold_nothing_to_lose() -> None:
    doc = example("appendix_c_table_metadata_v2.json")
    md = table_metadata_from_json({**doc, "encryption-keys": []})
    assert md == table_metadata_from_json(doc)


def test_empty_table_writes_minus_one_current_snapshot() -> None:
    md = table_metadata_from_json((VECTORS / "java/TableMetadataV2ValidMinimal.json").read_text())
    assert table_metadata_to_dict(md)["current-snapshot-id"] == -1
    assert table_metadata_to_dict(md)["refs"] == {}
    text = table_metadata_to_json(md)
    assert ": " not in text and ", " not in text  # compact
    assert TableMetadataUtil.parse_raw(text).current_snapshot_id is None


def test_key_order_follows_the_spec_table() -> None:
    md = table_metadata_from_json(example("v1_legacy_snapshots.json"))
    assert list(table_metadata_to_dict(md)) == [
        "format-version", "location", "last-updated-ms", "last-column-id", "schema", "schemas",
        "current-schema-id", "partition-spec", "partition-specs", "default-spec-id",
        "last-partition-id", "properties", "current-snapshot-id", "snapshots", "snapshot-log",
        "metadata-log", "sort-orders", "default-sort-order-id"]


# -------------------------------------------------------------------------- malformed input

DELETE = object()


def patched(base: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(base)
    target = doc
    for step in path[:-1]:
        target = target[step]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


MALFORMED: list[tuple[tuple[Any, ...], Any, type[IcebergError], str]] = [
    # wrong JSON types
    (("location",), 5, ValidationError, "'location' must be a string, not 5"),
    (("last-updated-ms",), "1515100955770", ValidationError,
     "'last-updated-ms' must be an integer"),
    (("format-version",), "2", ValidationError, "'format-version' must be an integer"),
    (("format-version",), True, ValidationError, "'format-version' must be an integer, not true"),
    (("current-snapshot-id",), 1.5, ValidationError, "'current-snapshot-id' must be an integer"),
    (("schemas",), {}, ValidationError, "'schemas' must be a JSON list"),
    (("schemas", 0), "struct", ValidationError, "Schema must be a JSON object"),
    (("schemas", 0, "fields", 0, "id"), "1", ValidationError, "'id' must be an integer"),
    (("schemas", 0, "fields", 0, "required"), "yes", ValidationError,
     "'required' must be true or false"),
    (("properties",), {"a": 1}, ValidationError, "'properties' must map strings to strings"),
    (("properties",), [], ValidationError, "'properties' must be a JSON object"),
    (("snapshots",), "none", ValidationError, "'snapshots' must be a JSON list"),
    (("snapshots", 0), 5, ValidationError, "Snapshot must be a JSON object"),
    (("snapshots", 0, "summary"), "append", ValidationError, "'summary' must be a JSON object"),
    (("snapshots", 1, "summary", "added-data-files"), 2, ValidationError,
     "'summary' must map strings to strings"),
    (("refs",), [], ValidationError, "'refs' must be a JSON object"),
    (("refs", "test"), 7, ValidationError, "Reference 'test' must be a JSON object"),
    (("table-uuid",), "not-a-uuid", ValidationError, "'table-uuid' is not a UUID"),
    (("statistics", 0, "key-metadata"), "***", ValidationError, "'key-metadata' must be Base64"),
    (("statistics", 0, "blob-metadata", 0, "fields"), ["1"], ValidationError,
     "'fields' must be a list of integers"),
    (("snapshot-log", 0), [], ValidationError, "Snapshot log entry must be a JSON object"),
    # missing keys
    (("location",), DELETE, ValidationError, "missing required field 'location'"),
    (("last-column-id",), DELETE, ValidationError, "missing required field 'last-column-id'"),
    (("format-version",), DELETE, ValidationError, "missing required field 'format-version'"),
    (("table-uuid",), DELETE, ValidationError, "missing required field 'table-uuid'"),
    (("last-sequence-number",), DELETE, ValidationError,
     "missing required field 'last-sequence-number'"),
    (("current-schema-id",), DELETE, ValidationError, "missing required field 'current-schema-id'"),
    (("default-spec-id",), DELETE, ValidationError, "missing required field 'default-spec-id'"),
    (("default-sort-order-id",), DELETE, ValidationError,
     "missing required field 'default-sort-order-id'"),
    (("snapshots", 0, "sequence-number"), DELETE, ValidationError,
     f"Snapshot {S1} is missing required field 'sequence-number'"),
    (("snapshots", 0, "manifest-list"), DELETE, ValidationError,
     "missing required field 'manifest-list'"),
    (("snapshots", 0, "summary"), DELETE, ValidationError, "missing required field 'summary'"),
    (("snapshots", 0, "summary", "operation"), DELETE, ValidationError,
     "missing required field 'operation'"),
    (("snapshots", 0, "timestamp-ms"), DELETE, ValidationError,
     "missing required field 'timestamp-ms'"),
    (("schemas", 0, "fields", 1, "name"), DELETE, ValidationError, "missing required field 'name'"),
    (("schemas", 0, "type"), DELETE, ValidationError, "missing required field 'type'"),
    (("partition-specs", 0, "fields", 0, "transform"), DELETE, ValidationError,
     "missing required field 'transform'"),
    (("partition-specs", 0, "fields", 0, "field-id"), DELETE, ValidationError,
     "1 of 2 partition fields have no 'field-id'"),
    (("refs", "test", "type"), DELETE, ValidationError, "missing required field 'type'"),
    (("statistics", 0, "blob-metadata"), DELETE, ValidationError,
     "missing required field 'blob-metadata'"),
    # bad values
    (("format-version",), 0, ValidationError, "Unsupported format version 0"),
    (("schemas", 0, "fields", 1, "type"), "varchar", ValidationError,
     "Unknown primitive type 'varchar'"),
    (("partition-specs", 0, "fields", 0, "transform"), "", ValidationError,
     "a transform is a non-empty string"),  # an unknown one ("zorder") is read and kept
    (("partition-specs", 0, "fields", 1, "transform"), "bucket[0]", ValidationError,
     "Invalid bucket[0]"),
    (("sort-orders", 1, "fields", 0, "direction"), "up", ValidationError,
     "'direction' must be \"asc\" or \"desc\", not 'up'"),
    (("sort-orders", 1, "fields", 0, "null-order"), "first", ValidationError,
     "'null-order' must be"),
    (("snapshots", 0, "summary", "operation"), "merge", ValidationError,
     "unknown operation 'merge'"),
    (("refs", "test", "type"), "label", ValidationError, "'type' must be \"branch\" or \"tag\""),
    (("schemas", 0, "fields", 1, "id"), 1, ValidationError, "Duplicate field id 1"),
    # model invariants
    (("current-schema-id",), 7, ValidationError, "'current-schema-id' 7 is not among the schemas"),
    (("default-spec-id",), 5, ValidationError, "Default spec ID 5 is not among"),
    (("default-sort-order-id",), 9, ValidationError, "Default sort order ID 9 is not among"),
    (("current-snapshot-id",), 42, ValidationError, "Current snapshot ID 42 is not among"),
    (("snapshots", 0, "snapshot-id"), S2, ValidationError, f"Duplicate snapshot ID {S2}"),
    (("partition-specs",), [{"spec-id": 0, "fields": []}] * 2, ValidationError,
     "Duplicate partition spec ID 0"),
    (("refs", "main", "snapshot-id"), S1, ValidationError,
     f"The main branch points to snapshot {S1} but the current snapshot ID is {S2}"),
    (("refs", "main"), {"snapshot-id": S2, "type": "tag"}, ValidationError,
     "'main' reference must be a branch"),
    (("refs", "test", "min-snapshots-to-keep"), 3, ValidationError,
     "Tags cannot have min-snapshots-to-keep"),
    (("refs", "test", "max-snapshot-age-ms"), 3, ValidationError,
     "Tags cannot have max-snapshot-age-ms"),
    (("refs", "audit", "max-ref-age-ms"), 0, ValidationError,
     "max-ref-age-ms must be a positive number, not 0"),
    (("refs", "test", "snapshot-id"), 1, ValidationError,
     "Reference 'test' points to snapshot 1, which is not among"),
    (("last-sequence-number",), 1, ValidationError,
     "has sequence number 2, higher than the last sequence number 1"),
    # table encryption is outside the seed spec: never dropped silently
    (("encryption-keys",), [{"key-id": "k1", "encrypted-key-metadata": "AA=="}],
     UnsupportedFeature, "encryption-keys"),
    (("snapshots", 0, "key-id"), "k1", UnsupportedFeature,
     "table encryption (encryption-keys) is not supported"),
]


@pytest.mark.parametrize(("path", "value", "error", "message"), MALFORMED,
                         ids=[f"{'.'.join(map(str, c[0]))}="
                              f"{'<deleted>' if c[1] is DELETE else repr(c[1])}"[:60]
                              for c in MALFORMED])
def test_malformed_metadata(path: tuple[Any, ...], value: Any, error: type[IcebergError],
                            message: str) -> None:
    doc = patched(example("appendix_c_table_metadata_v2.json"), path, value)
    with pytest.raises(error) as info:
        table_metadata_from_json(json.dumps(doc))
    assert message in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ("{", "Table metadata is not valid JSON"),
    ("", "Table metadata is not valid JSON"),
    (b"\xff\xfe{", "Table metadata is not"),
    ("[1, 2]", "Table metadata must be a JSON object, not [1, 2]"),
    ("null", "Table metadata must be a JSON object, not null"),
    (42, "Table metadata must be JSON text or an object, not int"),
])
def test_not_a_metadata_object(text: Any, message: str) -> None:
    with pytest.raises((ValidationError, CorruptFile)) as info:  # CorruptFile: undecodable
        table_metadata_from_json(text)
    assert message in str(info.value)


V1_PATCHES: list[tuple[tuple[Any, ...], Any, str]] = [
    (("schema",), DELETE, "missing required field 'schema'"),
    (("partition-spec",), DELETE, "missing required field 'partition-spec'"),
    (("sort-orders",), [{"order-id": 0, "fields": []}], "missing required field "
                                                       "'default-sort-order-id'"),
    (("snapshots", 0, "manifests"), DELETE, "has neither 'manifest-list' nor 'manifests'"),
    (("snapshots", 0, "manifests"), "m.avro", "'manifests' must be a JSON list"),
    (("snapshots", 1, "summary"), {"added-records": "1"}, "missing required field 'operation'"),
]


@pytest.mark.parametrize(("path", "value", "message"), V1_PATCHES)
def test_malformed_v1_metadata(path: tuple[Any, ...], value: Any, message: str) -> None:
    doc = patched(example("v1_legacy_snapshots.json"), path, value)
    with pytest.raises(ValidationError) as info:
        table_metadata_from_json(doc)
    assert message in str(info.value)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**63) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=6)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    items: Any = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(
        doc, list) else ()
    paths = []
    for key, value in items:
        paths.append((*prefix, key))
        paths.extend(_paths(value, (*prefix, key)))
    return paths


READERS: list[tuple[str, Callable[[Any], object]]] = [
    ("appendix_c_table_metadata_v2.json", table_metadata_from_json),
    ("v1_legacy_snapshots.json", table_metadata_from_json),
    ("appendix_c_schema.json", schema_from_json),
    ("appendix_c_partition_spec.json", partition_spec_from_json),
    ("appendix_c_sort_order.json", sort_order_from_json),
]


@pytest.mark.parametrize(("name", "read"), READERS, ids=[name for name, _ in READERS])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_corruption_is_a_typed_error(name: str, read: Callable[[Any], object],
                                         data: st.DataObject) -> None:
    """Replace or delete any one value of a valid file: reading either succeeds or raises an
    IcebergError, never a KeyError, TypeError or AttributeError."""
    base = example(name)
    path = data.draw(st.sampled_from(_paths(base)))
    value = data.draw(st.just(DELETE) | JSON_VALUES)
    with contextlib.suppress(IcebergError):
        read(patched(base, path, value))


# -------------------------------------------------------------------------- model invariants


def test_model_is_immutable_hashable_and_picklable() -> None:
    md = table_metadata_from_json(example("appendix_c_table_metadata_v2.json"))
    with pytest.raises(TypeError):
        md.properties["x"] = "y"  # type: ignore[index]  # read-only by design
    with pytest.raises(TypeError):
        md.refs["x"] = SnapshotRef.tag(S1)  # type: ignore[index]  # read-only by design
    source = {"a": "1"}
    md2 = replace(md, properties=source)
    source["a"] = "2"
    assert md2.property("a") == "1"
    assert hash(md) == hash(table_metadata_from_json(table_metadata_to_json(md)))
    assert pickle.loads(pickle.dumps(md)) == md


@pytest.mark.parametrize(("change", "message"), [
    ({"table_uuid": None}, "Table UUID is required in format version 2"),
    ({"format_version": 4}, "Unsupported format version 4"),
    ({"format_version": 1}, "Format version 1 has no sequence numbers"),
    ({"next_row_id": 5}, "next_row_id (row lineage) requires format version 3"),
    ({"properties": {"a": 1}}, "Table properties must map strings to strings"),
    ({"schemas": ()}, "Current schema ID 0 is not among the table's schemas (IDs: none)"),
    ({"current_snapshot_id": None}, "The main branch points to snapshot"),
])
def test_model_invariants(change: dict[str, Any], message: str) -> None:
    md = table_metadata_from_json(example("appendix_c_table_metadata_v2.json"))
    with pytest.raises(ValidationError) as info:
        replace(md, **change)
    assert message in str(info.value)


def test_main_branch_is_implied_by_the_current_snapshot() -> None:
    md = table_metadata_from_json(example("appendix_c_table_metadata_v2.json"))
    plain = replace(md, refs={"test": md.refs["test"]})
    assert plain.refs[MAIN_BRANCH] == SnapshotRef.branch(S2)


def test_snapshot_and_ref_values() -> None:
    with pytest.raises(ValidationError, match="both a manifest list and inline manifests"):
        Snapshot(1, None, 0, 0, "l.avro", None, None, manifests=("m.avro",))
    with pytest.raises(ValidationError, match="must not contain 'operation'"):
        Summary(Operation.APPEND, {"operation": "append"})
    with pytest.raises(ValidationError, match="must be a positive number, not -1"):
        SnapshotRef.branch(1, max_snapshot_age_ms=-1)
    a = Snapshot(1, 2, 0, 0, "a", None, None)
    b = Snapshot(2, 1, 0, 0, "b", None, None)
    with pytest.raises(ValidationError, match="cycle"):
        list(ancestors_of(1, {1: a, 2: b}))
    assert [s.snapshot_id for s in ancestors_of(1, {1: a})] == [1]  # parent expired
    assert SnapshotRef(1, RefType.TAG, max_ref_age_ms=5).is_branch is False


# ------------------------------------------------------------------------ pyiceberg oracle


def _our_view(md: TableMetadata) -> dict[str, Any]:
    return {
        "format_version": md.format_version,
        "table_uuid": md.table_uuid,
        "location": md.location,
        "last_column_id": md.last_column_id,
        "schemas": list(md.schemas),
        "current_schema_id": md.current_schema_id,
        "specs": list(md.partition_specs),
        "default_spec_id": md.default_spec_id,
        "last_partition_id": md.last_partition_id,
        "sort_orders": list(md.sort_orders),
        "default_sort_order_id": md.default_sort_order_id,
        "properties": dict(md.properties),
        "current_snapshot_id": md.current_snapshot_id,
        "snapshots": [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.timestamp_ms,
                       s.manifest_list, None if s.summary is None else s.summary.operation.value,
                       None if s.summary is None else dict(s.summary.properties), s.schema_id)
                      for s in md.snapshots],
        "refs": {name: (r.snapshot_id, r.ref_type.value, r.min_snapshots_to_keep,
                        r.max_snapshot_age_ms, r.max_ref_age_ms) for name, r in md.refs.items()},
    }


def _pyiceberg_view(pm: Any) -> dict[str, Any]:
    """pyiceberg's model, its schemas, specs and orders read back through our serde."""

    def dumped(model: Any) -> Any:
        return json.loads(model.model_dump_json())

    return {
        "format_version": pm.format_version,
        "table_uuid": pm.table_uuid,
        "location": pm.location,
        "last_column_id": pm.last_column_id,
        "schemas": [schema_from_json(dumped(s)) for s in pm.schemas],
        "current_schema_id": pm.current_schema_id,
        "specs": [partition_spec_from_json(dumped(s)) for s in pm.partition_specs],
        "default_spec_id": pm.default_spec_id,
        "last_partition_id": pm.last_partition_id,
        "sort_orders": [sort_order_from_json(dumped(o)) for o in pm.sort_orders],
        "default_sort_order_id": pm.default_sort_order_id,
        "properties": dict(pm.properties),
        "current_snapshot_id": pm.current_snapshot_id,
        "snapshots": [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number or 0, s.timestamp_ms,
                       s.manifest_list, None if s.summary is None else s.summary.operation.value,
                       None if s.summary is None else dict(s.summary.additional_properties),
                       s.schema_id) for s in pm.snapshots],
        "refs": {name: (r.snapshot_id, r.snapshot_ref_type.value, r.min_snapshots_to_keep,
                        r.max_snapshot_age_ms, r.max_ref_age_ms) for name, r in pm.refs.items()},
    }


def assert_pyiceberg_reads(md: TableMetadata) -> None:
    parsed = TableMetadataUtil.parse_raw(table_metadata_to_json(md))
    theirs, ours = _pyiceberg_view(parsed), _our_view(md)
    if md.table_uuid is None:  # optional in v1: pyiceberg makes one up
        del theirs["table_uuid"], ours["table_uuid"]
    assert theirs == ours


def _parses(path: Path) -> bool:
    try:
        table_metadata_from_json(path.read_text())
    except IcebergError:
        return False
    return True


# Every vector we read (the rejected ones are covered by test_metadata_vectors.py).
INTEROP_FILES = [p for p in sorted(VECTORS.rglob("*.json")) if _parses(p)] + [
    EXAMPLES / "appendix_c_table_metadata_v2.json", EXAMPLES / "appendix_c_schema.json"]
PYICEBERG_BLOB_TYPES = {"apache-datasketches-theta-v1", "deletion-vector-v1"}


@pytest.mark.parametrize("path", INTEROP_FILES, ids=lambda p: p.name)
def test_pyiceberg_reads_what_we_write(path: Path) -> None:
    """pyiceberg reads what we write from every vector, in every format version, to the same
    snapshots, schemas, specs, sort orders and refs (even TableMetadataV1Compat, which pyiceberg
    cannot read as given because it lacks the v1-required ``schema``)."""
    if path.name == "appendix_c_schema.json":  # defaults in a v3 table
        schema = schema_from_json(example(path.name))
        # pyiceberg 0.12 cannot read a struct default ({"8": "1.50"}); keep the others.
        schema = replace(schema, fields=tuple(
            replace(f, initial_default=None) if isinstance(f.field_type, StructType) else f
            for f in schema.fields))
        md = replace(table_metadata_from_json(example("appendix_c_table_metadata_v2.json")),
                     format_version=3, schemas=(schema,), current_schema_id=3, last_column_id=17)
    else:
        md = table_metadata_from_json(path.read_text())
    if any(b.type not in PYICEBERG_BLOB_TYPES for s in md.statistics for b in s.blob_metadata):
        md = replace(md, statistics=())  # pyiceberg 0.12 rejects other blob types, e.g. "ndv"
    assert_pyiceberg_reads(md)
    for version in (1, 2, 3):
        if version == 1 and (md.last_sequence_number or any(s.sequence_number
                                                            for s in md.snapshots)):
            continue
        assert_pyiceberg_reads(replace(md, format_version=version,
                                       next_row_id=md.next_row_id if version == 3 else None))


# -------------------------------------------------------------------------------- Hypothesis

SIMPLE_PRIMITIVES = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
                     STRING, UUID, BINARY]
PRIMITIVE_TYPES = st.one_of(
    st.sampled_from(SIMPLE_PRIMITIVES),
    st.builds(PrimitiveType.fixed, st.integers(1, 64)),
    st.integers(1, 38).flatmap(
        lambda p: st.integers(0, p).map(lambda s: PrimitiveType.decimal(p, s))))
DEFAULTS: dict[PrimitiveType, st.SearchStrategy[Any]] = {
    BOOLEAN: st.booleans(), INT: st.integers(-(2**31), 2**31 - 1),
    LONG: st.integers(-(2**63), 2**63 - 1), STRING: st.text(max_size=8),
    DOUBLE: st.floats(allow_nan=False), UUID: st.uuids(),
}
NAMES = st.text(alphabet="abxyz_0é文 ", min_size=1, max_size=6)
DOCS = st.none() | st.text(max_size=8)

# A type "skeleton" without IDs: a primitive, ("list", child, required),
# ("map", key, child, required) or ("struct", [(name, child, required, doc)]).
SKELETONS = st.recursive(
    PRIMITIVE_TYPES,
    lambda children: st.one_of(
        st.tuples(st.just("list"), children, st.booleans()),
        st.tuples(st.just("map"), PRIMITIVE_TYPES, children, st.booleans()),
        st.tuples(st.just("struct"), st.lists(st.tuples(NAMES, children, st.booleans(), DOCS),
                                              max_size=3, unique_by=lambda t: t[0]))),
    max_leaves=10)
TOP_LEVEL = st.lists(st.tuples(NAMES, SKELETONS, st.booleans(), DOCS), max_size=5,
                     unique_by=lambda t: t[0])


def _build_type(skeleton: Any, ids: Callable[[], int]) -> IcebergType:
    if isinstance(skeleton, PrimitiveType):
        return skeleton
    match skeleton:
        case ("list", child, required):
            return ListType(ids(), _build_type(child, ids), required)
        case ("map", key, child, required):
            return MapType(ids(), key, ids(), _build_type(child, ids), required)
        case ("struct", fields):
            return StructType(tuple(_build_field(f, ids, None) for f in fields))
    raise AssertionError(skeleton)


FINITE_DEFAULTS = {**DEFAULTS, DOUBLE: st.floats(allow_nan=False, allow_infinity=False)}
"""For pyiceberg's view: its models write an infinite default as ``null`` (pydantic's JSON)."""


def _build_field(spec: Any, ids: Callable[[], int], draw: Any,
                 defaults: dict[PrimitiveType, st.SearchStrategy[Any]] = DEFAULTS
                 ) -> NestedField:
    name, skeleton, required, doc = spec
    field_id = ids()
    field_type = _build_type(skeleton, ids)
    initial = write = None
    if draw is not None and field_type in defaults:
        initial = draw(st.none() | defaults[field_type])
        write = draw(st.none() | defaults[field_type])
    return NestedField(field_id, name, field_type, required, doc, initial, write)


@st.composite
def schemas(draw: Any, schema_id: int = 0, finite: bool = False) -> Schema:
    start, step = draw(st.integers(1, 10_000)), draw(st.integers(1, 5))
    counter = itertools.count(start, step)
    defaults = FINITE_DEFAULTS if finite else DEFAULTS
    fields = tuple(_build_field(f, lambda: next(counter), draw, defaults)
                   for f in draw(TOP_LEVEL))
    candidates = [f.field_id for f in fields if f.is_required and isinstance(
        f.field_type, PrimitiveType) and f.field_type not in (FLOAT, DOUBLE)]
    identifiers = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    return Schema(fields, schema_id, tuple(identifiers))


@settings(max_examples=300, deadline=None)
@given(schemas(schema_id=7))
def test_schema_json_round_trip(schema: Schema) -> None:
    data = schema_to_json(schema)
    again = schema_from_json(json.loads(json.dumps(data)))
    assert again == schema
    assert [(f.initial_default, f.write_default) for f in again.fields] == [
        (f.initial_default, f.write_default) for f in schema.fields]
    assert schema_to_json(again) == data


TRANSFORMS = [Transform.identity(), Transform.bucket(16), Transform.truncate(4), Transform.year(),
              Transform.month(), Transform.day(), Transform.hour(), Transform.void()]
LONGS = st.integers(1, 2**63 - 1)


@st.composite
def table_metadata(draw: Any, format_version: int, pyiceberg_only: bool = False) -> TableMetadata:
    schema_ids = draw(st.lists(st.integers(0, 20), min_size=1, max_size=3, unique=True))
    all_schemas = tuple(draw(schemas(schema_id=i, finite=pyiceberg_only)) for i in schema_ids)
    spec_ids = draw(st.lists(st.integers(0, 10), min_size=1, max_size=3, unique=True))
    specs = tuple(PartitionSpec(i, tuple(
        PartitionField(source, 1000 + n, transform, f"p{n}")
        for n, (source, transform) in enumerate(draw(st.lists(
            st.tuples(st.integers(1, 30), st.sampled_from(TRANSFORMS)), max_size=3)))))
        for i in spec_ids)
    orders = (UNSORTED, *(SortOrder(i, tuple(
        SortField(source, transform, draw(st.sampled_from(SortDirection)),
                  draw(st.sampled_from(NullOrder)))
        for source, transform in draw(st.lists(st.tuples(
            st.integers(1, 30), st.sampled_from(TRANSFORMS[:-1])), min_size=1, max_size=2))))
        for i in range(1, draw(st.integers(1, 3)))))
    snapshot_ids = draw(st.lists(LONGS, max_size=4, unique=True))
    legacy = format_version == 1 and not pyiceberg_only
    snapshots = []
    for n, sid in enumerate(snapshot_ids):
        inline = legacy and draw(st.booleans())
        snapshots.append(Snapshot(
            sid,
            snapshot_ids[n - 1] if n and draw(st.booleans()) else None,
            0 if format_version == 1 else n + 1,
            draw(st.integers(0, 2**45)),
            None if inline else f"s3://b/t/metadata/snap-{sid}.avro",
            None if legacy and draw(st.booleans()) else Summary(
                draw(st.sampled_from(Operation)),
                draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k != "operation"),
                                     st.text(max_size=6), max_size=2))),
            draw(st.none() | st.sampled_from(schema_ids)),
            (f"s3://b/t/metadata/m-{sid}.avro",) if inline else (),
            draw(st.none() | st.integers(0, 2**40)) if format_version == 3 else None,
            draw(st.none() | st.integers(0, 2**40)) if format_version == 3 else None,
        ))
    current = draw(st.none() | st.sampled_from(snapshot_ids)) if snapshot_ids else None
    refs: dict[str, SnapshotRef] = {}
    if current is not None:
        refs[MAIN_BRANCH] = SnapshotRef.branch(current, min_snapshots_to_keep=draw(
            st.none() | st.integers(1, 10)))
    if snapshot_ids:
        for name in draw(st.lists(st.text(min_size=1, max_size=5), max_size=3, unique=True)):
            if name == MAIN_BRANCH:
                continue
            target = draw(st.sampled_from(snapshot_ids))
            age = draw(st.none() | LONGS)
            refs[name] = SnapshotRef.tag(target, max_ref_age_ms=age) if draw(st.booleans()) \
                else SnapshotRef.branch(target, min_snapshots_to_keep=draw(
                    st.none() | st.integers(1, 2**31 - 1)),
                    max_snapshot_age_ms=draw(st.none() | LONGS), max_ref_age_ms=age)
    statistics = tuple(StatisticsFile(
        sid, f"s3://b/t/metadata/{sid}.stats", draw(st.integers(0, 2**40)),
        draw(st.integers(0, 2**20)),
        tuple(BlobMetadata(draw(st.sampled_from(["apache-datasketches-theta-v1",
                                                  "deletion-vector-v1"])),
                           sid, 0, tuple(draw(st.lists(st.integers(1, 30), max_size=3))),
                           draw(st.dictionaries(st.text(max_size=4), st.text(max_size=4),
                                                max_size=2)))
              for _ in range(draw(st.integers(0, 2)))),
        None if pyiceberg_only else draw(st.none() | st.binary(max_size=8)))
        for sid in draw(st.lists(st.sampled_from(snapshot_ids), unique=True))
    ) if snapshot_ids else ()
    return _bound(TableMetadata(
        format_version=format_version,  # type: ignore[arg-type]  # drawn from 1, 2, 3
        table_uuid=draw(st.uuids() if format_version > 1 else st.none() | st.uuids()),
        location=draw(st.text(min_size=1, max_size=12)),
        last_sequence_number=0 if format_version == 1 else len(snapshots) + draw(
            st.integers(0, 3)),
        last_updated_ms=draw(st.integers(0, 2**45)),
        last_column_id=max(s.highest_field_id for s in all_schemas),
        schemas=all_schemas,
        current_schema_id=draw(st.sampled_from(schema_ids)),
        partition_specs=specs,
        default_spec_id=draw(st.sampled_from(spec_ids)),
        last_partition_id=max(s.last_assigned_field_id for s in specs),
        properties=draw(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3)),
        current_snapshot_id=current,
        snapshots=tuple(snapshots),
        snapshot_log=tuple(SnapshotLogEntry(s.snapshot_id, s.timestamp_ms) for s in snapshots),
        metadata_log=tuple(MetadataLogEntry(f"s3://b/t/metadata/v{n}.json", n)
                           for n in range(draw(st.integers(0, 2)))),
        sort_orders=orders,
        default_sort_order_id=draw(st.sampled_from([o.order_id for o in orders])),
        refs=refs,
        statistics=statistics,
        partition_statistics=tuple(PartitionStatisticsFile(sid, f"s3://b/t/{sid}.parquet", 7)
                                   for sid in snapshot_ids[:1]),
        next_row_id=draw(st.none() | st.integers(0, 2**40)) if format_version == 3 else None,
    ))


def _fits(source: PartitionField | SortField, schema: Schema) -> bool:
    try:
        if isinstance(source, PartitionField):
            check_partition_source(schema, source.source_id, source.transform, source.name)
        else:
            SortOrder(1, (source,)).check_compatible(schema)
    except ValidationError:
        return False
    return True


def _bound(md: TableMetadata) -> TableMetadata:
    """``md`` made to follow the rules of :mod:`icepark.spec.metadata_rules`: default spec
    fields whose source does not fit the current schema become ``void``, such default sort
    order fields are dropped, and ``next-row-id`` is above every snapshot's row IDs."""
    schema, spec, order = md.schema(), md.spec(), md.sort_order()
    fields = tuple(f if _fits(f, schema) else replace(f, transform=Transform.void())
                   for f in spec.fields)
    specs = tuple(replace(s, fields=fields) if s is spec else s for s in md.partition_specs)
    kept = tuple(f for f in order.fields if _fits(f, schema))
    orders = tuple(replace(o, fields=kept) if o is order and kept else o for o in md.sort_orders)
    next_row_id = md.next_row_id
    if next_row_id is not None:
        next_row_id = max([next_row_id, *(s.first_row_id + (s.added_rows or 0)
                                          for s in md.snapshots if s.first_row_id is not None)])
    return replace(md, partition_specs=specs, sort_orders=orders, next_row_id=next_row_id,
                   default_sort_order_id=md.default_sort_order_id if kept else 0)


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_table_metadata_json_round_trip(version: int, data: st.DataObject) -> None:
    md = data.draw(table_metadata(version))
    text = table_metadata_to_json(md)
    again = table_metadata_from_json(text)
    assert again == md
    assert table_metadata_to_json(again) == text


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pyiceberg_reads_random_metadata(version: int, data: st.DataObject) -> None:
    assert_pyiceberg_reads(data.draw(table_metadata(version, pyiceberg_only=True)))
