"""Table metadata vectors from the Java and Rust implementations (../shared/vectors/README.md).

Each "parses" vector is read, checked against the key facts the README names, written back and
read again to an equal model. Each "rejected" vector raises a typed error whose message names
the field or rule at fault.
"""

from __future__ import annotations

from typing import Any

import pytest

from icepark.errors import IcebergError, UnsupportedFeature, ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.serde import (
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from tests.vectors import vectors

VECTORS = vectors("metadata")

V2_SNAPSHOT = 3055729675574597004
V2_DEEP_SNAPSHOT = 3059729675574597004
V2_FIRST_SNAPSHOT = 3051729675574597004

# Expected facts (a subset of facts(md)) for every vector that must parse.
PARSES: dict[str, dict[str, Any]] = {
    "java/TableMetadataV1Valid.json": {
        "format_version": 1, "columns": ["x", "y", "z"], "spec_fields": [(1000, "x", "identity")],
        "last_partition_id": 1000, "current_snapshot_id": None, "refs": {},
        "sort_order_id": 0, "last_sequence_number": 0,
    },
    "java/TableMetadataV2Valid.json": {
        "format_version": 2, "current_schema_id": 1, "schema_ids": [0, 1],
        "identifier_field_ids": (1, 2), "current_snapshot_id": V2_SNAPSHOT,
        "snapshot_ids": [V2_FIRST_SNAPSHOT, V2_SNAPSHOT], "sort_order_id": 3,
        "refs": {"main": ("branch", V2_SNAPSHOT)}, "last_sequence_number": 34,
    },
    "java/TableMetadataV2ValidMinimal.json": {
        "format_version": 2, "current_snapshot_id": None, "snapshot_ids": [], "refs": {},
        "sort_order_id": 3,
    },
    "java/TableMetadataV3ValidMinimal.json": {
        "format_version": 3, "next_row_id": 0, "defaults": {1: (1, 1)},
    },
    "java/TableMetadataStatisticsFiles.json": {
        "format_version": 2,
        "statistics": [(V2_SNAPSHOT, "s3://a/b/stats.puffin", 413, 42,
                        [("ndv", V2_SNAPSHOT, 1, (1,))])],
    },
    "java/TableMetadataPartitionStatisticsFiles.json": {
        "format_version": 2,
        "partition_statistics": [(V2_SNAPSHOT, "s3://a/b/partition-stats.parquet", 43)],
    },
    "rust/TableMetadataV1Compat.json": {
        "format_version": 1, "current_snapshot_id": 917896971991367610,
        "operation": "overwrite", "refs": {"main": ("branch", 917896971991367610)},
        "last_partition_id": 999, "spec_fields": [],
    },
    "rust/TableMetadataV1PartitionSpecsWithoutDefaultId.json": {
        "format_version": 1, "default_spec_id": 2, "spec_fields": [(1001, "y", "identity")],
        "last_partition_id": 1001,
    },
    "rust/TableMetadataV1SchemasWithoutCurrentId.json": {
        "format_version": 1, "current_schema_id": 0, "columns": ["x", "y", "z"],
    },
    "rust/example_empty_table_metadata_v2.json": {
        "format_version": 2, "current_snapshot_id": None, "refs": {}, "current_schema_id": 1,
    },
    "rust/example_table_metadata_v2.json": {
        "format_version": 2, "current_snapshot_id": V2_SNAPSHOT,
        "refs": {"main": ("branch", V2_SNAPSHOT), "test": ("tag", V2_FIRST_SNAPSHOT)},
    },
    "rust/example_table_metadata_v2_deep_history.json": {
        "format_version": 2, "current_snapshot_id": V2_DEEP_SNAPSHOT, "snapshot_count": 5,
        "refs": {"main": ("branch", V2_DEEP_SNAPSHOT)},
    },
    "rust/example_table_metadata_v2_partition_evolution.json": {
        "format_version": 2, "default_spec_id": 2, "spec_ids": [0, 1, 2],
        "spec_fields": [(1000, "x", "identity"), (1001, "a_trunc_3", "truncate[3]"),
                        (1002, "z_bucket_32", "bucket[32]")],
        "last_partition_id": 1002,
    },
}

# (error type, substring of the message) for every vector that must be rejected.
REJECTED: dict[str, tuple[type[IcebergError], str]] = {
    "java/TableMetadataUnsupportedVersion.json": (ValidationError, "Unsupported format version 42"),
    "java/TableMetadataV1MissingSchemaType.json": (
        ValidationError, "Schema is missing required field 'type'"),
    "java/TableMetadataV2CurrentSchemaNotFound.json": (
        ValidationError, "'current-schema-id' 2 is not among the schemas"),
    "java/TableMetadataV2MissingLastPartitionId.json": (
        ValidationError, "missing required field 'last-partition-id'"),
    "java/TableMetadataV2MissingPartitionSpecs.json": (
        ValidationError, "missing required field 'partition-specs'"),
    "java/TableMetadataV2MissingSchemas.json": (
        ValidationError, "missing required field 'schemas'"),
    "java/TableMetadataV2MissingSortOrder.json": (
        ValidationError, "missing required field 'sort-orders'"),
    "rust/TableMetadataV1NoValidSchema.json": (ValidationError, "no valid schema"),
    # Outside the seed spec: rejected with a clear "unsupported" error rather than dropped.
    "rust/TableMetadataV3ValidEncryption.json": (
        UnsupportedFeature, "table encryption (encryption-keys) is not supported"),
}


def facts(md: TableMetadata) -> dict[str, Any]:
    """The facts a vector's expectations are stated in."""
    current = md.current_snapshot()
    return {
        "format_version": md.format_version,
        "current_schema_id": md.current_schema_id,
        "schema_ids": [s.schema_id for s in md.schemas],
        "columns": [f.name for f in md.schema().fields],
        "identifier_field_ids": md.schema().identifier_field_ids,
        "defaults": {f.field_id: (f.initial_default, f.write_default)
                     for f in md.schema().fields
                     if f.initial_default is not None or f.write_default is not None},
        "default_spec_id": md.default_spec_id,
        "spec_ids": [s.spec_id for s in md.partition_specs],
        "spec_fields": [(f.field_id, f.name, str(f.transform)) for f in md.spec().fields],
        "last_partition_id": md.last_partition_id,
        "sort_order_id": md.sort_order().order_id,
        "last_sequence_number": md.last_sequence_number,
        "current_snapshot_id": md.current_snapshot_id,
        "snapshot_ids": [s.snapshot_id for s in md.snapshots],
        "snapshot_count": len(md.snapshots),
        "operation": None if current is None else current.operation,
        "refs": {name: (ref.ref_type.value, ref.snapshot_id) for name, ref in md.refs.items()},
        "statistics": [(s.snapshot_id, s.statistics_path, s.file_size_in_bytes,
                        s.file_footer_size_in_bytes,
                        [(b.type, b.snapshot_id, b.sequence_number, b.fields)
                         for b in s.blob_metadata]) for s in md.statistics],
        "partition_statistics": [(s.snapshot_id, s.statistics_path, s.file_size_in_bytes)
                                 for s in md.partition_statistics],
        "next_row_id": md.next_row_id,
    }


def test_every_vector_has_an_expectation() -> None:
    on_disk = {p.relative_to(VECTORS).as_posix() for p in VECTORS.rglob("*.json")}
    assert on_disk, f"no metadata vectors found under {VECTORS}"
    assert on_disk == set(PARSES) | set(REJECTED)


@pytest.mark.parametrize("name", sorted(PARSES))
def test_vector_parses_and_round_trips(name: str) -> None:
    md = table_metadata_from_json((VECTORS / name).read_bytes())
    expected = PARSES[name]
    assert {k: facts(md)[k] for k in expected} == expected

    written = table_metadata_to_json(md)
    again = table_metadata_from_json(written)
    assert again == md
    assert facts(again) == facts(md)
    assert table_metadata_to_dict(again) == table_metadata_to_dict(md)


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_vector_is_rejected(name: str) -> None:
    error, message = REJECTED[name]
    with pytest.raises(error) as info:
        table_metadata_from_json((VECTORS / name).read_text())
    assert type(info.value) is error
    assert message in str(info.value)


def test_statistics_survive_a_round_trip_in_the_written_json() -> None:
    md = table_metadata_from_json((VECTORS / "java/TableMetadataStatisticsFiles.json").read_text())
    written = table_metadata_to_dict(md)
    assert written["statistics"] == [{
        "snapshot-id": V2_SNAPSHOT, "statistics-path": "s3://a/b/stats.puffin",
        "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42,
        "blob-metadata": [{"type": "ndv", "snapshot-id": V2_SNAPSHOT, "sequence-number": 1,
                           "fields": [1]}],
    }]
    md = table_metadata_from_json(
        (VECTORS / "java/TableMetadataPartitionStatisticsFiles.json").read_text())
    assert table_metadata_to_dict(md)["partition-statistics"] == [{
        "snapshot-id": V2_SNAPSHOT, "statistics-path": "s3://a/b/partition-stats.parquet",
        "file-size-in-bytes": 43}]
