"""Writing and reading manifest lists: the vectors, v1/v2 round trips, sequence numbers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icepark.errors import CorruptFile, FileNotFound, UnsupportedFeature, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest import manifest_list
from icepark.io.manifest.manifest import UNASSIGNED_SEQUENCE_NUMBER
from icepark.io.manifest.manifest_list import (
    assign_first_row_ids,
    assign_sequence_numbers,
    read_manifest_list,
    write_manifest_list,
)
from icepark.spec.manifest import FieldSummary, ManifestContent, ManifestFile
from icepark.spec.metadata import FormatVersion
from tests.vectors import vectors

VECTORS = vectors("avro")


@pytest.mark.parametrize(("name", "path", "length", "snapshot_id"), [
    ("manifest-list-v2-1.avro",
     "iceberg-warehouse/people/metadata/794bd2ee-052c-449c-9a6f-3a88857c747f-m0.avro",
     6658, 6653143792592159268),
    ("manifest-list-v2-2.avro",
     "iceberg-warehouse_2/people/metadata/80064d99-bd75-4cf3-9b27-13a60f189039-m0.avro",
     6660, 3083072880052097243),
])
def test_reads_the_vectors_with_every_field(file_io: ArrowFileIO, name: str, path: str,
                                            length: int, snapshot_id: int) -> None:
    """v2-1 names the counts ``added_data_files_count`` ...: fields are matched by ID."""
    assert read_manifest_list(file_io, str(VECTORS / name)) == [ManifestFile(
        manifest_path=path, manifest_length=length, partition_spec_id=0,
        added_snapshot_id=snapshot_id, content=ManifestContent.DATA, sequence_number=1,
        min_sequence_number=1, added_files_count=1, existing_files_count=0,
        deleted_files_count=0, added_rows_count=1, existing_rows_count=0, deleted_rows_count=0,
        partitions=(), key_metadata=None)]


def manifest(path: str, **kw: Any) -> ManifestFile:
    args: dict[str, Any] = dict(
        manifest_path=path, manifest_length=1234, partition_spec_id=1, added_snapshot_id=7,
        content=ManifestContent.DATA, sequence_number=3, min_sequence_number=2,
        added_files_count=4, existing_files_count=5, deleted_files_count=6,
        added_rows_count=2**40, existing_rows_count=8, deleted_rows_count=9,
        partitions=(FieldSummary(True, False, b"\x01\x00\x00\x00", b"\x09\x00\x00\x00"),
                    FieldSummary(False, None, None, None)),
        key_metadata=b"key")
    args.update(kw)
    return ManifestFile(**args)


def raw(path: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    with open(path.removeprefix("file://"), "rb") as f:
        reader = fastavro.reader(f)
        return dict(reader.metadata), [r for r in reader if isinstance(r, dict)]


@pytest.mark.parametrize("version", [2, 3])
def test_v2_round_trip_assigns_sequence_numbers(file_io: ArrowFileIO, location: str,
                                                version: Any) -> None:
    old = manifest("s3://t/metadata/old.avro")
    new = manifest("s3://t/metadata/new.avro", added_snapshot_id=UNASSIGNED_SEQUENCE_NUMBER,
                   sequence_number=UNASSIGNED_SEQUENCE_NUMBER,
                   min_sequence_number=UNASSIGNED_SEQUENCE_NUMBER)
    deletes = manifest("s3://t/metadata/del.avro", content=ManifestContent.DELETES,
                       added_snapshot_id=11, sequence_number=UNASSIGNED_SEQUENCE_NUMBER,
                       partitions=None, key_metadata=None)
    path = f"{location}/snap-11.avro"
    manifests: list[ManifestFile] = [old, new, deletes]
    row_ids = None
    if version == 3:
        manifests, assigned = assign_first_row_ids(manifests, 40)
        assert [m.first_row_id for m in manifests] == [40, 40 + rows(old), None]
        assert assigned == rows(old) + rows(new)
        old, new = manifests[0], manifests[1]
        row_ids = 40
    write_manifest_list(file_io, path, version, 11, 7, 12, manifests, first_row_id=row_ids)
    assert read_manifest_list(file_io, path) == [
        old,
        replace(new, added_snapshot_id=11, sequence_number=12, min_sequence_number=12),
        replace(deletes, sequence_number=12)]
    meta, records = raw(path)
    assert (meta["snapshot-id"], meta["parent-snapshot-id"], meta["sequence-number"],
            meta["format-version"]) == ("11", "7", "12", str(version))
    assert meta.get("first-row-id") == (None if version == 2 else "40")
    assert records[0]["content"] == 0 and records[2]["content"] == 1


def rows(m: ManifestFile) -> int:
    return (m.added_rows_count or 0) + (m.existing_rows_count or 0)


def test_a_v3_list_needs_every_data_manifest_assigned(file_io: ArrowFileIO,
                                                      location: str) -> None:
    """*First Row ID Assignment*: "Writers must assign a ``first_row_id`` to new data
    manifests when writing a manifest list"."""
    m = manifest("s3://t/metadata/a.avro")
    with pytest.raises(ValidationError, match="has no first_row_id"):
        write_manifest_list(file_io, f"{location}/s.avro", 3, 1, None, 1, [m], first_row_id=0)
    with pytest.raises(ValidationError, match="needs the snapshot's first-row-id"):
        write_manifest_list(file_io, f"{location}/s.avro", 3, 1, None, 1, [m])


def test_v1_round_trip_omits_sequence_numbers_and_content(file_io: ArrowFileIO,
                                                          location: str) -> None:
    m = manifest("s3://t/metadata/a.avro", sequence_number=0, min_sequence_number=0,
                 added_files_count=None, deleted_rows_count=None)
    path = f"{location}/snap-1.avro"
    write_manifest_list(file_io, path, 1, 1, None, 0, [m])
    assert read_manifest_list(file_io, path) == [m]
    meta, records = raw(path)
    assert meta["parent-snapshot-id"] == "null" and "sequence-number" not in meta
    assert not {"content", "sequence_number", "min_sequence_number"} & set(records[0])
    assert records[0]["added_files_count"] is None


def test_reading_v1_lists_defaults_to_zero(file_io: ArrowFileIO, location: str) -> None:
    """Appendix E: sequence numbers "must default to 0", content "to 0 (data)"; a null
    ``added_snapshot_id`` (some v1 writers made it optional) is the list's snapshot."""
    schema = {"type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "added_snapshot_id", "type": ["null", "long"], "default": None,
         "field-id": 503},
        {"name": "added_data_files_count", "type": ["null", "int"], "default": None,
         "field-id": 504}]}
    path = location.removeprefix("file://") + "/v1.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [
            {"manifest_path": "a", "manifest_length": 1, "partition_spec_id": 0,
             "added_snapshot_id": None, "added_data_files_count": 3}],
            metadata={"snapshot-id": "44", "format-version": "1"})
    assert read_manifest_list(file_io, path) == [ManifestFile(
        "a", 1, 0, 44, ManifestContent.DATA, 0, 0, added_files_count=3)]


def test_sequence_number_rules() -> None:
    """"the (optimistic) sequence number of the snapshot is written for all new manifest
    files"; a manifest from another snapshot cannot be missing one."""
    foreign = manifest("x", added_snapshot_id=3, sequence_number=UNASSIGNED_SEQUENCE_NUMBER)
    with pytest.raises(ValidationError, match="added by snapshot 3, not by snapshot 4"):
        assign_sequence_numbers([foreign], 4, 9)
    kept = manifest("y")
    assert assign_sequence_numbers([kept], 4, 9)[0] is kept


def test_invalid_lists_are_rejected(file_io: ArrowFileIO, location: str) -> None:
    with pytest.raises(ValidationError, match="delete manifests in a v1 manifest list"):
        write_manifest_list(file_io, f"{location}/a.avro", 1, 1, None, 0,
                            [manifest("d", content=ManifestContent.DELETES)])
    with pytest.raises(ValidationError, match="no added_files_count"):
        write_manifest_list(file_io, f"{location}/b.avro", 2, 1, None, 1,
                            [manifest("c", added_files_count=None)])


def test_missing_and_corrupt_lists(file_io: ArrowFileIO, location: str) -> None:
    with pytest.raises(FileNotFound, match=r"nope\.avro"):
        read_manifest_list(file_io, f"{location}/nope.avro")
    path = f"{location}/good.avro"
    write_manifest_list(file_io, path, 2, 1, None, 1, [manifest(f"m{i}") for i in range(50)])
    data = Path(path.removeprefix("file://")).read_bytes()
    for name, payload in {"truncated": data[:-30], "garbage": b"Obj\x01\xff\xff\xff",
                          "json": b'{"format-version": 2}'}.items():
        bad = f"{location}/{name}.avro"
        file_io.new_output(bad).write(payload)
        with pytest.raises(CorruptFile, match=name):
            read_manifest_list(file_io, bad)
    not_a_list = location.removeprefix("file://") + "/entries.avro"
    with open(not_a_list, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": [
            {"name": "x", "type": "int", "field-id": 1}]}, [{"x": 1}])
    with pytest.raises(CorruptFile, match="not a manifest list"):
        read_manifest_list(file_io, not_a_list)


def _compiled_and_fastavro(file_io: ArrowFileIO, path: str,
                           monkeypatch: pytest.MonkeyPatch) -> list[ManifestFile]:
    """The list read by its compiled reader, after checking fastavro reads it the same."""
    compiled = read_manifest_list(file_io, path)

    def uncompilable(*args: Any) -> Any:
        raise UnsupportedFeature("a schema the compiled reader cannot read")

    with monkeypatch.context() as patched:
        patched.setattr(manifest_list, "_compiled", uncompilable)
        assert read_manifest_list(file_io, path) == compiled
    return compiled


@pytest.mark.parametrize("version", [1, 2, 3])
def test_compiled_and_fastavro_reads_agree(file_io: ArrowFileIO, location: str,
                                           version: FormatVersion,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists are decoded by a reader compiled for their schema, or by fastavro for one it
    cannot compile: both read every field, summaries, v1 defaults and the vectors alike."""
    ms = [manifest(f"s3://t/metadata/m{i}.avro", sequence_number=0 if version == 1 else 3,
                   min_sequence_number=0 if version == 1 else 2,
                   key_metadata=None if i % 2 else b"key", first_row_id=(
                       100 * i if version == 3 else None),
                   partitions=None if i == 3 else manifest("x").partitions if i % 3 else (
                       FieldSummary(False, True, bytes([i % 7]), b"\x09"),
                       FieldSummary(True, None, bytes([i % 5]), None)))
          for i in range(200)]
    path = f"{location}/snap-{version}.avro"
    write_manifest_list(file_io, path, version, 1, None, 0 if version == 1 else 3, ms,
                        first_row_id=0 if version == 3 else None)
    assert _compiled_and_fastavro(file_io, path, monkeypatch) == ms
    for name in ("manifest-list-v2-1.avro", "manifest-list-v2-2.avro"):
        assert len(_compiled_and_fastavro(file_io, str(VECTORS / name), monkeypatch)) == 1


def test_summaries_are_matched_by_field_id(file_io: ArrowFileIO, location: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer may order (and name) a summary's fields its own way, or leave out
    ``contains_nan``; one without ``contains_null`` (required) is corrupt."""
    def schema(summary_fields: list[dict[str, Any]]) -> dict[str, Any]:
        return {"type": "record", "name": "manifest_file", "fields": [
            {"name": "manifest_path", "type": "string", "field-id": 500},
            {"name": "manifest_length", "type": "long", "field-id": 501},
            {"name": "partition_spec_id", "type": "int", "field-id": 502},
            {"name": "added_snapshot_id", "type": "long", "field-id": 503},
            {"name": "parts", "field-id": 507, "type": ["null", {
                "type": "array", "element-id": 508, "items": {
                    "type": "record", "name": "r508", "fields": summary_fields}}]}]}

    reordered = [{"name": "hi", "type": ["null", "bytes"], "field-id": 511},
                 {"name": "has_null", "type": "boolean", "field-id": 509},
                 {"name": "lo", "type": ["null", "bytes"], "field-id": 510}]
    path = location.removeprefix("file://") + "/reordered.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema(reordered)), [
            {"manifest_path": "a", "manifest_length": 1, "partition_spec_id": 0,
             "added_snapshot_id": 5, "parts": [{"hi": b"\x09", "has_null": True, "lo": None}]}])
    assert _compiled_and_fastavro(file_io, path, monkeypatch) == [ManifestFile(
        "a", 1, 0, 5, partitions=(FieldSummary(True, None, None, b"\x09"),))]
    path = location.removeprefix("file://") + "/no_contains_null.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema(reordered[::2])), [
            {"manifest_path": "a", "manifest_length": 1, "partition_spec_id": 0,
             "added_snapshot_id": 5, "parts": [{"hi": b"\x09", "lo": None}]}])
    with pytest.raises(CorruptFile, match=r"invalid entry.*contains_null"):
        read_manifest_list(file_io, path)
