"""Writing and reading manifests: round trips, key-value metadata, inheritance, summaries."""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icepark.errors import CorruptFile, FileNotFound, ValidationError
from icepark.io.avro.schema import to_avro
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.codec import DEFAULT_BLOCK_SIZE, manifest_entry_type
from icepark.io.manifest.manifest import (
    BLOCK_ROWS,
    UNASSIGNED_SEQUENCE_NUMBER,
    ManifestWriter,
    read_manifest,
    read_manifest_metadata,
)
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FieldSummary,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    inherit,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.serde.specs_json import partition_fields_to_json
from icepark.spec.serde.types_json import schema_to_json
from icepark.spec.transforms import Transform
from icepark.spec.types import DOUBLE, FLOAT, LONG, NestedField, PrimitiveType
from tests.io.manifest_fixtures import PARTITION_SPEC, data_file, partition_values


def write(  # noqa: PLR0917 - the writer's own positional arguments plus the entries
        file_io: ArrowFileIO, path: str, spec: PartitionSpec, schema: Schema, version: Any,
        entries: list[ManifestEntry], content: ManifestContent = ManifestContent.DATA,
        snapshot_id: int | None = 9, **kw: Any) -> ManifestFile:
    with ManifestWriter(file_io, path, spec, schema, version, content, snapshot_id, **kw) as w:
        for e in entries:
            w.add(e)
    return w.to_manifest_file()


def read(file_io: ArrowFileIO, manifest: ManifestFile, **kw: Any) -> list[ManifestEntry]:
    return list(read_manifest(file_io, manifest, **kw))


def raw_records(path: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Metadata and records as a generic Avro reader sees them."""
    with open(path.removeprefix("file://"), "rb") as f:
        reader = fastavro.reader(f)
        return dict(reader.metadata), [r for r in reader if isinstance(r, dict)]


@pytest.mark.parametrize("version", [2, 3])
def test_v2_data_manifest_round_trip(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                                     schema: Schema, version: int) -> None:
    entries = [ManifestEntry(EntryStatus.ADDED, data_file(0)),
               ManifestEntry(EntryStatus.ADDED, data_file(1), 9, sequence_number=3),
               ManifestEntry(EntryStatus.EXISTING, data_file(2), 5, 2, 2),
               ManifestEntry(EntryStatus.DELETED, data_file(3), 9, 1, 1)]
    path = f"{location}/m.avro"
    manifest = write(file_io, path, spec, schema, version, entries)
    assert manifest.manifest_length == Path(path.removeprefix("file://")).stat().st_size
    committed = replace(manifest, sequence_number=7, min_sequence_number=2)
    got = read(file_io, committed)
    assert got == [inherit(replace(e, snapshot_id=e.snapshot_id or 9), committed)
                   for e in entries]
    assert [(e.sequence_number, e.file_sequence_number) for e in got] == [
        (7, 7), (3, 7), (2, 2), (1, 1)]
    assert got[0].data_file == data_file(0)  # every field, bounds bytes, split offsets
    assert read(file_io, committed, discard_deleted=True) == got[:3]
    meta, records = raw_records(path)
    assert meta["format-version"] == str(version) and meta["content"] == "data"
    assert meta["schema-id"] == "3" and meta["partition-spec-id"] == "2"
    assert json.loads(meta["schema"]) == schema_to_json(schema)
    assert json.loads(meta["partition-spec"]) == partition_fields_to_json(spec.fields)
    assert meta["avro.codec"] == "deflate"
    assert records[0]["sequence_number"] is None and records[0]["snapshot_id"] == 9
    assert "block_size_in_bytes" not in records[0]["data_file"]
    assert records[0]["data_file"]["content"] == 0


def test_delete_manifests_round_trip(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                                     schema: Schema) -> None:
    entries = [ManifestEntry(EntryStatus.ADDED, data_file(
                   0, content=FileContent.POSITION_DELETES)),
               ManifestEntry(EntryStatus.ADDED, data_file(
                   1, content=FileContent.EQUALITY_DELETES, equality_ids=(1, 3)))]
    manifest = write(file_io, f"{location}/d.avro", spec, schema, 2, entries,
                     ManifestContent.DELETES)
    assert manifest.content is ManifestContent.DELETES
    got = read(file_io, replace(manifest, sequence_number=4))
    assert [e.data_file for e in got] == [e.data_file for e in entries]
    assert got[1].data_file.equality_ids == (1, 3) and got[0].data_file.sort_order_id is None
    assert read_manifest_metadata(file_io, manifest.manifest_path).content is \
        ManifestContent.DELETES


def test_v1_manifest_round_trip(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                                schema: Schema) -> None:
    """"Always write a default in v1"; no sequence numbers, no content; reading defaults them
    to 0 (Appendix E)."""
    entries = [ManifestEntry(EntryStatus.ADDED, data_file(0)),
               ManifestEntry(EntryStatus.EXISTING, data_file(1), 4)]
    manifest = write(file_io, f"{location}/v1.avro", spec, schema, 1, entries)
    assert (manifest.sequence_number, manifest.min_sequence_number) == (0, 0)
    got = read(file_io, manifest)
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (9, 0, 0), (4, 0, 0)]
    assert [e.data_file for e in got] == [e.data_file for e in entries]
    meta, records = raw_records(manifest.manifest_path)
    assert "content" not in meta and meta["format-version"] == "1"
    assert set(records[0]) == {"status", "snapshot_id", "data_file"}
    assert records[0]["data_file"]["block_size_in_bytes"] == DEFAULT_BLOCK_SIZE
    assert "content" not in records[0]["data_file"]
    assert "equality_ids" not in records[0]["data_file"]


def test_v1_rules(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                  schema: Schema) -> None:
    with pytest.raises(ValidationError, match="v1 manifests hold data files only"):
        ManifestWriter(file_io, f"{location}/x.avro", spec, schema, 1, ManifestContent.DELETES)
    with pytest.raises(ValidationError, match="need a snapshot ID"):
        write(file_io, f"{location}/y.avro", spec, schema, 1,
              [ManifestEntry(EntryStatus.ADDED, data_file(0))], snapshot_id=None)
    assert not ArrowFileIO().exists(f"{location}/y.avro")  # a failed writer cleans up


def test_content_must_match_the_manifest(file_io: ArrowFileIO, location: str,
                                         spec: PartitionSpec, schema: Schema) -> None:
    delete = ManifestEntry(EntryStatus.ADDED, data_file(0, content=FileContent.POSITION_DELETES))
    with pytest.raises(ValidationError, match="data files or delete files, not both"):
        write(file_io, f"{location}/a.avro", spec, schema, 2, [delete])
    with pytest.raises(ValidationError, match="data files or delete files, not both"):
        write(file_io, f"{location}/b.avro", spec, schema, 2,
              [ManifestEntry(EntryStatus.ADDED, data_file(0))], ManifestContent.DELETES)


def test_existing_and_deleted_entries_need_sequence_numbers(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    """"If the entry status is 0 (existing) or 2 (deleted), the entry must include both
    sequence numbers explicitly"."""
    for status in (EntryStatus.EXISTING, EntryStatus.DELETED):
        with pytest.raises(ValidationError, match="needs both sequence numbers"):
            write(file_io, f"{location}/{status.name}.avro", spec, schema, 2,
                  [ManifestEntry(status, data_file(0), 1, 1, None)])


def test_partition_values_of_every_result_type_round_trip(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    all_null = tuple(None for _ in spec.fields)
    files = [data_file(i) for i in range(40)] + [data_file(40, all_null)]
    manifest = write(file_io, f"{location}/p.avro", spec, schema, 2,
                     [ManifestEntry(EntryStatus.ADDED, f) for f in files])
    got = [e.data_file.partition for e in read(file_io, replace(manifest, sequence_number=1))]
    assert got == [f.partition for f in files]
    # decimals keep their scale, uuids are UUIDs, timestamps stay ints
    assert got[3][4].as_tuple().exponent == -2 and str(got[3][13]).endswith("0123456789")


def test_manifest_file_counts_and_sequence_numbers(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    entries = [ManifestEntry(EntryStatus.ADDED, data_file(0)),
               ManifestEntry(EntryStatus.ADDED, data_file(1)),
               ManifestEntry(EntryStatus.EXISTING, data_file(2), 1, 5, 5),
               ManifestEntry(EntryStatus.DELETED, data_file(3), 9, 2, 2)]
    m = write(file_io, f"{location}/c.avro", spec, schema, 2, entries)
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (2, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (201, 102, 103)
    assert (m.partition_spec_id, m.added_snapshot_id, m.content) == (2, 9, ManifestContent.DATA)
    # "the minimum data sequence number of all live data or delete files": 5, not deleted 2
    assert (m.sequence_number, m.min_sequence_number) == (UNASSIGNED_SEQUENCE_NUMBER, 5)
    only_new = write(file_io, f"{location}/n.avro", spec, schema, 2, entries[:2],
                     snapshot_id=None)
    assert only_new.min_sequence_number == UNASSIGNED_SEQUENCE_NUMBER
    assert only_new.added_snapshot_id == UNASSIGNED_SEQUENCE_NUMBER
    old = write(file_io, f"{location}/o.avro", spec, schema, 2,
                [ManifestEntry(EntryStatus.ADDED, data_file(0), sequence_number=3)])
    assert old.min_sequence_number == 3


def _summary_of(file_io: ArrowFileIO, location: str, values: list[Any],
                type_: PrimitiveType) -> FieldSummary:
    schema = Schema.of(NestedField.optional(1, "v", type_))
    spec = PartitionSpec(0, (PartitionField(1, 1000, Transform.identity(), "v"),))
    entries = [ManifestEntry(EntryStatus.ADDED, data_file(i, (v,), spec_id=0))
               for i, v in enumerate(values)]
    m = write(file_io, f"{location}/{uuid.uuid4()}.avro", spec, schema, 2, entries)
    assert m.partitions is not None
    got = read(file_io, replace(m, sequence_number=1))
    assert [str(e.data_file.partition[0]) for e in got] == [str(v) for v in values]
    return m.partitions[0]


@pytest.mark.parametrize(("values", "expected"), [
    ([3, None, -1], FieldSummary(True, False, to_bytes(LONG, -1), to_bytes(LONG, 3))),
    ([None, None], FieldSummary(True, False, None, None)),
    ([7], FieldSummary(False, False, to_bytes(LONG, 7), to_bytes(LONG, 7))),
])
def test_field_summaries(file_io: ArrowFileIO, location: str, values: list[Any],
                         expected: FieldSummary) -> None:
    assert _summary_of(file_io, location, values, LONG) == expected


@pytest.mark.parametrize("type_", [FLOAT, DOUBLE])
def test_float_summaries_skip_nan_and_order_signed_zeros(
        file_io: ArrowFileIO, location: str, type_: PrimitiveType) -> None:
    """"NaNs are not permitted as lower or upper bounds"; "If -0.0 is a value of the partition
    field, the lower_bound must not be +0.0"."""
    s = _summary_of(file_io, location, [0.0, math.nan, 1.5, -0.0, math.nan], type_)
    assert s == FieldSummary(False, True, to_bytes(type_, -0.0), to_bytes(type_, 1.5))
    s = _summary_of(file_io, location, [-0.0, 0.0], type_)
    assert (s.lower_bound, s.upper_bound) == (to_bytes(type_, -0.0), to_bytes(type_, 0.0))
    s = _summary_of(file_io, location, [math.nan, None], type_)
    assert s == FieldSummary(True, True, None, None)


def test_summaries_of_the_fixture_spec(file_io: ArrowFileIO, location: str,
                                       spec: PartitionSpec, schema: Schema) -> None:
    files = [data_file(i) for i in range(5)]
    m = write(file_io, f"{location}/f.avro", spec, schema, 2,
              [ManifestEntry(EntryStatus.ADDED, f) for f in files])
    assert m.partitions is not None and len(m.partitions) == len(spec.fields)
    types = spec.partition_type(schema).fields
    day = next(i for i, f in enumerate(types) if f.name == "p_day")
    day_type = types[day].field_type
    assert isinstance(day_type, PrimitiveType)
    assert m.partitions[day] == FieldSummary(False, False, to_bytes(day_type, 19000),
                                             to_bytes(day_type, 19004))
    assert m.partitions[-1] == FieldSummary(True, False, None, None)  # the void field


@pytest.mark.parametrize("codec", ["gzip", "zstd", "uncompressed"])
def test_many_entries_in_many_blocks(file_io: ArrowFileIO, location: str, codec: str) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG))
    spec = PartitionSpec(0, (PartitionField(1, 1000, Transform.bucket(8), "b"),))
    n = BLOCK_ROWS * 2 + 17
    with ManifestWriter(file_io, f"{location}/big.avro", spec, schema, 2, snapshot_id=1,
                        properties={"write.avro.compression-codec": codec,
                                    "write.avro.compression-level": "1"}) as w:
        w.add_files(DataFile(f"s3://b/{i}.parquet", data_file(0).file_format, (i % 8,), i, 1,
                             value_counts={1: i}) for i in range(n))
    m = w.to_manifest_file()
    assert m.added_files_count == n and m.added_rows_count == n * (n - 1) // 2
    got = read_manifest(file_io, replace(m, sequence_number=2))
    count = 0
    for i, e in enumerate(got):
        assert e.data_file.file_path == f"s3://b/{i}.parquet"
        assert e.data_file.value_counts == {1: i} and e.data_file.partition == (i % 8,)
        count += 1
    assert count == n
    with open(m.manifest_path.removeprefix("file://"), "rb") as f:
        assert fastavro.reader(f).metadata["avro.codec"] == {
            "gzip": "deflate", "zstd": "zstandard", "uncompressed": "null"}[codec]


def test_reads_manifests_of_another_avro_writer_and_falls_back_to_the_table_spec(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    """A manifest without ``partition-spec`` metadata, written by fastavro with names of its
    own choosing: fields are matched by ID, partitions ordered by the table's spec."""
    small = PartitionSpec(5, (PartitionField(1, 1000, Transform.identity(), "a"),
                              PartitionField(2, 1001, Transform.identity(), "b")))
    avro = to_avro(manifest_entry_type(small.partition_type(schema), 2), "manifest_entry")
    df = avro["fields"][4]["type"]
    df["fields"][0]["name"] = "kind"  # content, renamed
    partition = next(f for f in df["fields"] if f["field-id"] == 102)["type"]
    partition["fields"].reverse()  # b before a: order comes from the spec
    record = {"status": 1, "snapshot_id": 4, "sequence_number": None,
              "file_sequence_number": None,
              "data_file": {"kind": 0, "file_path": "s3://x/1.parquet", "file_format": "parquet",
                            "partition": {"a": 10, "b": "x"}, "record_count": 5,
                            "file_size_in_bytes": 50}}
    path = location.removeprefix("file://") + "/other.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(avro), [record], metadata={"format-version": "2"})
    manifest = ManifestFile(path, 1, 5, 4, sequence_number=3)
    (entry,) = read(file_io, manifest, specs_by_id={5: small})
    assert entry.data_file.partition == (10, "x")
    assert entry.data_file.file_format.value == "PARQUET" and entry.sequence_number == 3
    (entry,) = read(file_io, manifest)  # no spec at all: the Avro record's order
    assert entry.data_file.partition == ("x", 10)
    meta = read_manifest_metadata(file_io, path)
    assert (meta.format_version, meta.spec, meta.schema) == (2, None, None)


def test_missing_manifest_raises_file_not_found_at_once(file_io: ArrowFileIO,
                                                        location: str) -> None:
    with pytest.raises(FileNotFound, match=r"gone\.avro"):
        read_manifest(file_io, ManifestFile(f"{location}/gone.avro", 1, 0, 1))
    with pytest.raises(FileNotFound, match=r"gone\.avro"):
        read_manifest_metadata(file_io, f"{location}/gone.avro")


def _good_manifest(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                   schema: Schema) -> tuple[ManifestFile, bytes]:
    with ManifestWriter(file_io, f"{location}/good.avro", spec, schema, 2, snapshot_id=1,
                        properties={"write.avro.compression-codec": "uncompressed"}) as w:
        w.add_files(data_file(i) for i in range(BLOCK_ROWS + 10))
    m = replace(w.to_manifest_file(), sequence_number=1)
    return m, Path(m.manifest_path.removeprefix("file://")).read_bytes()


def test_corrupt_and_truncated_manifests_raise_corrupt_file(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    manifest, data = _good_manifest(file_io, location, spec, schema)
    assert len(read(file_io, manifest)) == BLOCK_ROWS + 10
    cases = {"empty": b"", "not avro": b"PAR1" + data[4:], "header only": data[:40],
             "cut in a block": data[:len(data) * 2 // 3],
             "flipped": data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) +
             data[len(data) // 2 + 1:]}
    for name, payload in cases.items():
        path = f"{location}/{name.replace(' ', '-')}.avro"
        file_io.new_output(path).write(payload)
        with pytest.raises(CorruptFile, match=name.replace(" ", "-")):
            read(file_io, replace(manifest, manifest_path=path))


def test_a_manifest_cut_at_a_block_boundary_is_caught_by_the_counts(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    """Never silently fewer rows: the list entry's counts must match what was read."""
    manifest, data = _good_manifest(file_io, location, spec, schema)
    sync = data[-16:]
    first_block_end = data.index(sync, data.index(sync) + 16) + 16  # after header + 1 block
    path = f"{location}/cut.avro"
    file_io.new_output(path).write(data[:first_block_end])
    with pytest.raises(CorruptFile,
                       match=r"cut\.avro has \d+ entries but its manifest list entry counts 4106"):
        read(file_io, replace(manifest, manifest_path=path))


def test_writer_lifecycle(file_io: ArrowFileIO, location: str, spec: PartitionSpec,
                          schema: Schema) -> None:
    path = f"{location}/life.avro"
    writer = ManifestWriter(file_io, path, spec, schema, 2, snapshot_id=1)
    with pytest.raises(ValidationError, match="not closed"):
        writer.to_manifest_file()
    with pytest.raises(RuntimeError), writer:
        writer.add_file(data_file(0))
        raise RuntimeError("boom")
    assert not file_io.exists(path)  # aborted: the partial file is deleted
    with pytest.raises(ValidationError, match="already closed"):
        writer.add_file(data_file(1))
    empty = write(file_io, f"{location}/empty.avro", spec, schema, 2, [])
    assert empty.added_files_count == 0 and read(file_io, empty) == []
    with pytest.raises(ValidationError, match="does not match the partition spec"):
        write(file_io, f"{location}/bad.avro", spec, schema, 2,
              [ManifestEntry(EntryStatus.ADDED, data_file(0, (1, 2)))])
    with pytest.raises(ValidationError, match="Invalid decimal"):
        values = list(partition_values(0))
        values[4] = 1.5
        write(file_io, f"{location}/bad2.avro", spec, schema, 2,
              [ManifestEntry(EntryStatus.ADDED, data_file(0, tuple(values)))])


def test_spec_fixture_is_the_shared_one() -> None:
    assert PARTITION_SPEC.spec_id == 2


def test_distinct_counts_column_only_when_the_first_block_has_some(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema) -> None:
    """The reference implementations never write ``111 distinct_counts`` (and pyiceberg cannot
    read a manifest that has it), so the column is written only for files that carry them."""
    without = write(file_io, f"{location}/a.avro", spec, schema, 2,
                    [ManifestEntry(EntryStatus.ADDED, data_file(0, distinct_counts=None))])
    assert "distinct_counts" not in raw_records(without.manifest_path)[1][0]["data_file"]
    with_counts = write(file_io, f"{location}/b.avro", spec, schema, 2,
                        [ManifestEntry(EntryStatus.ADDED, data_file(0)),
                         ManifestEntry(EntryStatus.ADDED, data_file(1, distinct_counts=None))])
    got = read(file_io, replace(with_counts, sequence_number=1))
    assert [e.data_file.distinct_counts for e in got] == [{1: 100}, None]
    with (pytest.raises(ValidationError, match="first block had none"),
          ManifestWriter(file_io, f"{location}/c.avro", spec, schema, 2, snapshot_id=1) as w):
        w.add_files(data_file(i, distinct_counts=None) for i in range(BLOCK_ROWS))
        w.add_file(data_file(0))
    assert not file_io.exists(f"{location}/c.avro")
