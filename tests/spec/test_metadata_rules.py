"""Spec-violating metadata is rejected at load with the rule named, one test per rule, each a
mutation of a valid metadata file; and a metadata file that does not decode names the file."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icepark.catalog.base import read_metadata
from icepark.errors import CorruptFile, FileNotFound, UnsupportedFeature, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_json
from tests.vectors import vectors

VECTORS = vectors("metadata")
Doc = dict[str, Any]


def valid(version: int = 2) -> Doc:
    name = {1: "TableMetadataV1Valid.json", 2: "TableMetadataV2Valid.json",
            3: "TableMetadataV3ValidMinimal.json"}[version]
    doc: Doc = json.loads((VECTORS / "java" / name).read_text())
    return doc


def _set(**changes: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc.update({k.replace("_", "-"): v for k, v in changes.items()})
    return change


def _spec_source(source: int, transform: str = "identity") -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["partition-specs"][0]["fields"][0].update({"source-id": source,
                                                       "transform": transform})
    return change


def _sort_source(source: int) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["sort-orders"][0]["fields"][0]["source-id"] = source
    return change


def _snapshot(index: int, **changes: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["snapshots"][index].update({k.replace("_", "-"): v for k, v in changes.items()})
    return change


def _ref(snapshot_id: int) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["refs"] = {"main": {"snapshot-id": doc["current-snapshot-id"], "type": "branch"},
                       "old": {"snapshot-id": snapshot_id, "type": "tag"}}
    return change


def _old_spec_with_dropped_source(doc: Doc) -> None:
    doc["partition-specs"].append({"spec-id": 1, "fields": [
        {"name": "gone", "transform": "bucket[4]", "source-id": 99, "field-id": 1001}]})
    doc["last-partition-id"] = 1001


def _old_order_with_dropped_source(doc: Doc) -> None:
    doc["sort-orders"].append({"order-id": 4, "fields": [
        {"transform": "identity", "source-id": 99, "direction": "asc",
         "null-order": "nulls-first"}]})


RULES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("last-partition-id below a partition field ID", _set(last_partition_id=999),
     "'last-partition-id' is 999, but partition spec 0 has field ID 1000"),
    ("default spec source not in the current schema", _spec_source(99),
     "the default partition spec 0 does not fit the current schema 1: Cannot find source "
     "column 99"),
    ("default spec transform does not accept the source", _spec_source(1, "day"),
     "does not fit the current schema 1: Cannot partition 'x' by day(x): day does not accept"),
    ("default sort order source not in the current schema", _sort_source(42),
     "the default sort order 3 does not fit the current schema 1: Cannot find source column 42"),
    ("current-schema-id not among the schemas", _set(current_schema_id=7),
     "'current-schema-id' 7 is not among the schemas (IDs: 0, 1)"),
    ("default-spec-id not among the specs", _set(default_spec_id=5),
     "Default spec ID 5 is not among the table's partition specs"),
    ("default-sort-order-id not among the orders", _set(default_sort_order_id=9),
     "Default sort order ID 9 is not among the table's sort orders"),
    ("current-snapshot-id not among the snapshots", _set(current_snapshot_id=123),
     "Current snapshot ID 123 is not among the table's snapshots"),
    ("a ref to a missing snapshot", _ref(77),
     "Reference 'old' points to snapshot 77, which is not among the table's snapshots"),
    ("main ref differs from current-snapshot-id",
     _set(refs={"main": {"snapshot-id": 3051729675574597004, "type": "branch"}}),
     "There is always a main branch reference pointing to the current-snapshot-id"),
    ("snapshot sequence number above last-sequence-number", _set(last_sequence_number=0),
     "has sequence number 1, higher than the last sequence number 0"),
    ("snapshot schema-id not among the schemas", _snapshot(1, schema_id=5),
     "snapshot 3055729675574597004 has 'schema-id' 5, which is not among the table's schemas "
     "(IDs: 0, 1)"),
    ("unknown format version", _set(format_version=9), "Unsupported format version 9"),
    ("no table-uuid in v2", lambda doc: doc.pop("table-uuid"),
     "missing required field 'table-uuid'"),
    ("a required field missing", lambda doc: doc.pop("location"),
     "missing required field 'location'"),
]


@pytest.mark.parametrize(("rule", "change", "message"), RULES, ids=[r[0] for r in RULES])
def test_rule(rule: str, change: Callable[[Doc], None], message: str) -> None:
    table_metadata_from_json(valid())  # the base is valid
    doc = copy.deepcopy(valid())
    change(doc)
    with pytest.raises(ValidationError) as info:
        table_metadata_from_json(json.dumps(doc))
    assert message in str(info.value)


def test_next_row_id_is_above_every_assigned_row_id() -> None:
    doc = valid(3)
    doc["next-row-id"] = 100
    doc["snapshots"] = [{"snapshot-id": 1, "timestamp-ms": 1, "sequence-number": 1,
                         "summary": {"operation": "append"}, "manifest-list": "s3://a/1.avro",
                         "first-row-id": 40, "added-rows": 60}]
    doc["current-snapshot-id"] = 1
    doc["last-sequence-number"] = 1
    assert table_metadata_from_json(doc).next_row_id == 100
    doc["snapshots"][0]["added-rows"] = 61
    with pytest.raises(ValidationError, match="snapshot 1 assigned row IDs up to 100, but "
                                              "'next-row-id' is 100"):
        table_metadata_from_json(doc)


@pytest.mark.parametrize("change", [_old_spec_with_dropped_source,
                                    _old_order_with_dropped_source, _spec_source(99, "void")])
def test_what_the_reference_accepts_is_accepted(change: Callable[[Doc], None]) -> None:
    """A spec or sort order that is not the default may name a dropped column, and so may a
    void partition field (a v1 table's dropped partition); the reference implementation binds
    only the default spec and sort order to the current schema."""
    doc = valid()
    change(doc)
    md = table_metadata_from_json(doc)
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


# --------------------------------------------------------- errors of a file name the file


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "v3.metadata.json"
    path.write_bytes(data)
    return str(path)


GOOD = json.dumps(valid()).encode()
FILES: list[tuple[str, bytes, type[Exception], str]] = [
    ("empty", b"", CorruptFile, "is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    ("truncated", GOOD[:100], CorruptFile, "is not valid JSON"),
    ("not UTF-8", b'{"location": "\xff"}', CorruptFile, "is not UTF-8 text"),
    ("broken gzip", gzip.compress(GOOD)[:30], CorruptFile, "is not a valid gzip file"),
    ("gzip of garbage", gzip.compress(b"\x00garbage"), CorruptFile, "is not valid JSON"),
    ("a list", b"[1, 2]", ValidationError, "must be a JSON object, not [1, 2]"),
    ("a string", b'"metadata"', ValidationError, "must be a JSON object, not 'metadata'"),
    ("nested too deeply", b"[" * 100_000, CorruptFile, "is nested too deeply"),
    ("huge number", b'{"format-version": ' + b"9" * 5000 + b"}", CorruptFile,
     "is not valid JSON"),
    ("missing field", json.dumps({k: v for k, v in valid().items() if k != "schemas"}).encode(),
     ValidationError,
     "v2 is missing required field 'schemas'"),
    ("wrong type", json.dumps({**valid(), "location": 5}).encode(), ValidationError,
     "'location' must be a string, not 5"),
    ("nested error", json.dumps({**valid(), "sort-orders": [{"order-id": 1}]}).encode(),
     ValidationError, ": Sort order 1 is missing required field 'fields'"),
    ("encryption", json.dumps({**valid(), "encryption-keys": [{"key-id": "k"}]}).encode(),
     UnsupportedFeature, "encryption-keys"),
    ("rule", json.dumps({**valid(), "last-partition-id": 5}).encode(), ValidationError,
     "'last-partition-id' is 5"),
]


@pytest.mark.parametrize(("case", "data", "error", "message"), FILES, ids=[f[0] for f in FILES])
def test_errors_name_the_metadata_file(tmp_path: Path, case: str, data: bytes,
                                       error: type[Exception], message: str) -> None:
    location = _write(tmp_path, data)
    with pytest.raises(error) as info:
        read_metadata(ArrowFileIO(), location)
    assert type(info.value) is error
    assert str(info.value).startswith(f"Table metadata file {location}")
    assert message in str(info.value)


def test_gzip_metadata_and_missing_files(tmp_path: Path) -> None:
    location = _write(tmp_path, gzip.compress(GOOD))
    assert read_metadata(ArrowFileIO(), location) == table_metadata_from_json(GOOD)
    with pytest.raises(FileNotFound, match=r"nothing\.metadata\.json"):
        read_metadata(ArrowFileIO(), str(tmp_path / "nothing.metadata.json"))
