"""Metadata tables: every table's rows checked against a table with a known history, and
cross-checked against pyiceberg's ``inspect`` on the columns both have.

The history (format v2, partitioned by identity(category), later also by bucket[4](id)):

1. append A (a) and B (b)
2. append C (a); then tag v1 -> 1 and branch dev -> 2
3. overwrite: remove B, add D (b)
4. spec 1 adds bucket[4](id); append E (c)
5. row delta: a position delete on A, an equality delete on id in E's partition
6. delete C
7. append F on branch dev
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.data_writer import write_data_files
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UUID,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.inspect import tables as inspect
from icepark.table.inspect.files import table_partition_type
from icepark.table.snapshot.append import FastAppend, new_append
from icepark.table.snapshot.overwrite import DeleteFiles, Overwrite
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.table import Table
from tests.table.committer import InMemoryCommitter

SCHEMA = Schema.of(NestedField.required(1, "id", LONG),
                   NestedField.optional(2, "category", STRING),
                   NestedField.optional(3, "value", DOUBLE))
BUCKET_8 = Transform.bucket(4).apply(LONG, 8)
BUCKET_9 = Transform.bucket(4).apply(LONG, 9)


@dataclass
class History:
    table: Table
    files: dict[str, DataFile]
    s: list[int]  # snapshot IDs 1..7 at s[1]..s[7]

    def seq(self, n: int) -> int:
        snapshot = self.table.snapshot(self.s[n])
        assert snapshot is not None
        return snapshot.sequence_number


def new_catalog(warehouse: Path) -> Any:
    with pytest.MonkeyPatch.context() as mp:  # no user config leaks in
        mp.setenv("HOME", str(warehouse / "home"))
        mp.delenv("ICEPARK_CONFIG", raising=False)
        for name in [n for n in os.environ if n.upper().startswith("ICEPARK_CATALOG__")]:
            mp.delenv(name)
        return load_catalog("inspect", type="sql", warehouse=str(warehouse))


def build_history(warehouse: Path) -> History:
    catalog = new_catalog(warehouse)
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA,
                             partition_spec=PartitionSpecBuilder(SCHEMA).identity("category").build())
    names = iter(range(100))

    def location() -> str:
        return f"{t.location}/data/f{next(names)}.parquet"

    def write(partition: tuple[Any, ...], rows: dict[str, list[Any]]) -> DataFile:
        [f] = write_data_files(t.io, location, t.schema(), t.spec(), partition, {},
                               [pa.table(rows)])
        return f

    files = {"A": write(("a",), {"id": [1, 2, 3], "category": ["a"] * 3,
                                 "value": [1.0, float("nan"), None]}),
             "B": write(("b",), {"id": [4, 5], "category": ["b"] * 2, "value": [4.0, 5.0]})}
    t.commit(new_append(t.io, t.metadata).append_files([files["A"], files["B"]]))
    files["C"] = write(("a",), {"id": [6], "category": ["a"], "value": [6.0]})
    t.commit(new_append(t.io, t.metadata).append_file(files["C"]))
    s1, s2 = (s.snapshot_id for s in t.snapshots())
    with t.manage_snapshots() as refs:
        refs.create_tag("v1", s1, max_ref_age_ms=86_400_000)
        refs.create_branch("dev", s2, min_snapshots_to_keep=2, max_snapshot_age_ms=3_600_000)
    files["D"] = write(("b",), {"id": [7], "category": ["b"], "value": [7.0]})
    t.commit(Overwrite(t.io, t.metadata).delete_file(files["B"]).add_file(files["D"]))
    with t.update_spec() as spec:
        spec.add_field("id", "bucket[4]")
    files["E"] = write(("c", BUCKET_8), {"id": [8], "category": ["c"], "value": [8.0]})
    t.commit(new_append(t.io, t.metadata).append_file(files["E"]))
    spec0 = t.metadata.spec_by_id(0)
    assert spec0 is not None
    with PositionDeleteWriter(t.io, location, t.schema(), spec0, ("a",), {}) as pos:
        pos.write(position_deletes_batch({files["A"].file_path: [0]}))
    with EqualityDeleteWriter(t.io, location, t.schema(), t.spec(), ("c", BUCKET_8), {},
                              [1]) as eq:
        eq.write(pa.table({"id": [8]}))
    [files["pos"]], [files["eq"]] = pos.close(), eq.close()
    t.commit(RowDelta(t.io, t.metadata).add_deletes(files["pos"]).add_deletes(files["eq"]))
    t.commit(DeleteFiles(t.io, t.metadata).delete_file(files["C"]))
    files["F"] = write(("d", BUCKET_9), {"id": [9], "category": ["d"], "value": [9.0]})
    t.commit(new_append(t.io, t.metadata, branch="dev").append_file(files["F"]))
    return History(t, files, [0, *(s.snapshot_id for s in t.snapshots())])


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_history(tmp_path_factory.mktemp("inspect"))


def rows(table: Any, *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in columns) for r in table.to_pylist()]


def ms(value: dt.datetime) -> int:
    return round(value.replace(tzinfo=value.tzinfo or dt.UTC).timestamp() * 1000)


# ----------------------------------------------------------------------------- table level

def test_snapshots(h: History) -> None:
    s, md = h.s, h.table.metadata
    got = inspect.snapshots(h.table)
    assert got.schema.field("committed_at").type == pa.timestamp("us", tz="UTC")
    assert rows(got, "snapshot_id", "parent_id", "operation") == [
        (s[1], None, "append"), (s[2], s[1], "append"), (s[3], s[2], "overwrite"),
        (s[4], s[3], "append"), (s[5], s[4], "delete"), (s[6], s[5], "delete"),
        (s[7], s[2], "append")]
    for row, snapshot in zip(got.to_pylist(), md.snapshots, strict=True):
        assert ms(row["committed_at"]) == snapshot.timestamp_ms
        assert row["manifest_list"] == snapshot.manifest_list
        assert snapshot.summary is not None
        assert dict(row["summary"]) == dict(snapshot.summary.properties)
    assert dict(got.to_pylist()[2]["summary"])["deleted-data-files"] == "1"


def test_history(h: History) -> None:
    s = h.s
    got = inspect.history(h.table)
    assert rows(got, "snapshot_id", "parent_id", "is_current_ancestor") == [
        (s[1], None, True), (s[2], s[1], True), (s[3], s[2], True), (s[4], s[3], True),
        (s[5], s[4], True), (s[6], s[5], True)]
    assert [ms(r["made_current_at"]) for r in got.to_pylist()] == [
        e.timestamp_ms for e in h.table.metadata.snapshot_log]


def test_history_after_a_rollback(tmp_path: Path) -> None:
    catalog = new_catalog(tmp_path)
    catalog.create_namespace("db")
    t = catalog.create_table("db.r", SCHEMA)
    for i in range(2):
        t.commit(FastAppend(t.io, t.metadata).append_file(
            DataFile(f"{t.location}/data/{i}.parquet", FileFormat.PARQUET, (), 1, 10)))
    s1, s2 = (s.snapshot_id for s in t.snapshots())
    t.manage_snapshots().rollback_to_snapshot(s1).commit()
    assert rows(inspect.history(t), "snapshot_id", "parent_id", "is_current_ancestor") == [
        (s1, None, True), (s2, s1, False), (s1, None, True)]


def test_refs(h: History) -> None:
    s = h.s
    got = inspect.refs(h.table)
    assert sorted(rows(got, "name", "type", "snapshot_id", "max_reference_age_in_ms",
                       "min_snapshots_to_keep", "max_snapshot_age_in_ms")) == [
        ("dev", "BRANCH", s[7], None, 2, 3_600_000),
        ("main", "BRANCH", s[6], None, None, None),
        ("v1", "TAG", s[1], 86_400_000, None, None)]


def test_metadata_log_entries(h: History) -> None:
    md = h.table.metadata
    got = inspect.metadata_log_entries(h.table).to_pylist()
    assert [r["file"] for r in got] == [
        *(e.metadata_file for e in md.metadata_log), h.table.metadata_location]
    assert [ms(r["timestamp"]) for r in got] == [
        *(e.timestamp_ms for e in md.metadata_log), md.last_updated_ms]
    first, last = got[0], got[-1]
    assert (first["latest_snapshot_id"], first["latest_schema_id"],
            first["latest_sequence_number"]) == (None, None, None)
    # the last commit went to branch dev: snapshot 6 is still the current one
    assert (last["latest_snapshot_id"], last["latest_schema_id"],
            last["latest_sequence_number"]) == (h.s[6], 0, h.seq(6))
    assert [r["latest_snapshot_id"] for r in got].count(h.s[1]) >= 1


# ----------------------------------------------------------------------------- manifests

SUMMARY_A, SUMMARY_B = [(False, False, "a", "a")], [(False, False, "b", "b")]
SUMMARY_C = [(False, False, "c", "c"), (False, False, str(BUCKET_8), str(BUCKET_8))]


def manifest_rows(table: Any, extra: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    for r in table.to_pylist():
        summaries = [tuple(p.values()) for p in r["partition_summaries"]]
        out.append((r["content"], r["partition_spec_id"], r["added_snapshot_id"],
                    r["added_data_files_count"], r["existing_data_files_count"],
                    r["deleted_data_files_count"], r["added_delete_files_count"],
                    r["existing_delete_files_count"], r["deleted_delete_files_count"],
                    summaries, *(r[c] for c in extra)))
    return sorted(out, key=repr)


def test_manifests(h: History) -> None:
    s = h.s
    got = inspect.manifests(h.table)
    assert manifest_rows(got) == sorted([
        (0, 1, s[4], 1, 0, 0, 0, 0, 0, SUMMARY_C),
        (0, 0, s[3], 1, 0, 0, 0, 0, 0, SUMMARY_B),
        (0, 0, s[3], 0, 1, 1, 0, 0, 0, [(False, False, "a", "b")]),
        (0, 0, s[6], 0, 0, 1, 0, 0, 0, SUMMARY_A),
        (1, 0, s[5], 0, 0, 0, 1, 0, 0, SUMMARY_A),
        (1, 1, s[5], 0, 0, 0, 1, 0, 0, SUMMARY_C)], key=repr)
    for r in got.to_pylist():
        assert Path(r["path"]).stat().st_size == r["length"]


def test_manifests_at_a_snapshot_and_all_manifests(h: History) -> None:
    s = h.s
    assert manifest_rows(inspect.manifests(h.table, s[2])) == sorted([
        (0, 0, s[1], 2, 0, 0, 0, 0, 0, [(False, False, "a", "b")]),
        (0, 0, s[2], 1, 0, 0, 0, 0, 0, SUMMARY_A)], key=repr)
    everything = inspect.all_manifests(h.table)
    per_snapshot = [r["reference_snapshot_id"] for r in everything.to_pylist()]
    assert [per_snapshot.count(s[i]) for i in range(1, 8)] == [1, 2, 3, 4, 6, 6, 3]
    at_5 = everything.filter(pa.compute.equal(everything["reference_snapshot_id"], s[5]))
    assert manifest_rows(at_5.drop(["reference_snapshot_id"])) == manifest_rows(
        inspect.manifests(h.table, s[5]))


# ----------------------------------------------------------------------------- files

def file_row(f: DataFile) -> tuple[Any, ...]:
    return (int(f.content), f.file_path, f.spec_id, f.record_count, f.file_size_in_bytes,
            sorted((f.lower_bounds or {}).items()), f.equality_ids and list(f.equality_ids))


def got_files(table: Any) -> list[tuple[Any, ...]]:
    return sorted((r["content"], r["file_path"], r["spec_id"], r["record_count"],
                   r["file_size_in_bytes"], sorted(r["lower_bounds"]), r["equality_ids"])
                  for r in table.to_pylist())


def expect(h: History, *names: str) -> list[tuple[Any, ...]]:
    return sorted(file_row(h.files[n]) for n in names)


def test_files_data_files_and_delete_files(h: History) -> None:
    assert got_files(inspect.files(h.table)) == expect(h, "A", "D", "E", "pos", "eq")
    assert got_files(inspect.data_files(h.table)) == expect(h, "A", "D", "E")
    assert got_files(inspect.delete_files(h.table)) == expect(h, "pos", "eq")
    partitions = {r["file_path"]: r["partition"] for r in inspect.files(h.table).to_pylist()}
    assert partitions[h.files["A"].file_path] == {"category": "a", "id_bucket_4": None}
    assert partitions[h.files["E"].file_path] == {"category": "c", "id_bucket_4": BUCKET_8}
    assert partitions[h.files["eq"].file_path] == {"category": "c", "id_bucket_4": BUCKET_8}


def test_files_columns_and_readable_metrics(h: History) -> None:
    got = inspect.files(h.table)
    assert got.column_names == [
        "content", "file_path", "file_format", "spec_id", "partition", "record_count",
        "file_size_in_bytes", "column_sizes", "value_counts", "null_value_counts",
        "nan_value_counts", "lower_bounds", "upper_bounds", "key_metadata", "split_offsets",
        "equality_ids", "sort_order_id", "first_row_id", "referenced_data_file",
        "content_offset", "content_size_in_bytes", "readable_metrics"]
    assert got.schema.field("lower_bounds").type.item_type == pa.binary()
    a = h.files["A"]
    row = next(r for r in got.to_pylist() if r["file_path"] == a.file_path)
    assert row["file_format"] == "PARQUET"
    assert dict(row["column_sizes"]) == dict(a.column_sizes or {})
    assert dict(row["nan_value_counts"]) == {3: 1}
    assert row["split_offsets"] == list(a.split_offsets or ())
    assert row["readable_metrics"] == {
        "category": {"column_size": (a.column_sizes or {})[2], "value_count": 3,
                     "null_value_count": 0, "nan_value_count": None,
                     "lower_bound": "a", "upper_bound": "a"},
        "id": {"column_size": (a.column_sizes or {})[1], "value_count": 3,
               "null_value_count": 0, "nan_value_count": None,
               "lower_bound": 1, "upper_bound": 3},
        "value": {"column_size": (a.column_sizes or {})[3], "value_count": 3,
                  "null_value_count": 1, "nan_value_count": 1,
                  "lower_bound": 1.0, "upper_bound": 1.0}}
    eq = next(r for r in got.to_pylist() if r["file_path"] == h.files["eq"].file_path)
    assert eq["readable_metrics"]["id"]["lower_bound"] == 8
    assert eq["readable_metrics"]["value"]["value_count"] is None


def test_files_at_a_snapshot(h: History) -> None:
    assert got_files(inspect.files(h.table, h.s[1])) == expect(h, "A", "B")
    assert got_files(inspect.metadata_table(h.table, "files", h.s[7])) == expect(
        h, "A", "B", "C", "F")
    assert got_files(inspect.delete_files(h.table, h.s[4])) == []


def test_all_files_lists_each_path_once(h: History) -> None:
    assert got_files(inspect.all_files(h.table)) == expect(
        h, "A", "B", "C", "D", "E", "F", "pos", "eq")
    assert got_files(inspect.all_data_files(h.table)) == expect(h, "A", "B", "C", "D", "E", "F")
    assert got_files(inspect.all_delete_files(h.table)) == expect(h, "pos", "eq")


def entry_rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted((r["data_file"]["file_path"], r["status"], r["snapshot_id"],
                   r["sequence_number"], r["file_sequence_number"]) for r in table.to_pylist())


def test_entries(h: History) -> None:
    s, p = h.s, {n: f.file_path for n, f in h.files.items()}
    got = inspect.entries(h.table)
    assert got.column_names == ["status", "snapshot_id", "sequence_number",
                                "file_sequence_number", "data_file", "readable_metrics"]
    assert entry_rows(got) == sorted([
        (p["A"], 0, s[1], h.seq(1), h.seq(1)),  # EXISTING in the rewritten manifest
        (p["B"], 2, s[3], h.seq(1), h.seq(1)),  # DELETED by the overwrite
        (p["C"], 2, s[6], h.seq(2), h.seq(2)),
        (p["D"], 1, s[3], h.seq(3), h.seq(3)),
        (p["E"], 1, s[4], h.seq(4), h.seq(4)),
        (p["pos"], 1, s[5], h.seq(5), h.seq(5)),
        (p["eq"], 1, s[5], h.seq(5), h.seq(5))])
    data_file = next(r["data_file"] for r in got.to_pylist() if r["data_file"]["content"] == 2)
    assert (data_file["spec_id"], data_file["equality_ids"]) == (1, [1])


def test_entries_at_a_snapshot_and_all_entries(h: History) -> None:
    s, p = h.s, {n: f.file_path for n, f in h.files.items()}
    assert entry_rows(inspect.entries(h.table, s[7])) == sorted([
        (p["A"], 1, s[1], h.seq(1), h.seq(1)), (p["B"], 1, s[1], h.seq(1), h.seq(1)),
        (p["C"], 1, s[2], h.seq(2), h.seq(2)), (p["F"], 1, s[7], h.seq(7), h.seq(7))])
    everything = entry_rows(inspect.all_entries(h.table))
    assert len(everything) == 11  # every entry of the 9 distinct manifests
    assert set(entry_rows(inspect.entries(h.table))) < set(everything)


# ----------------------------------------------------------------------------- partitions

def test_partitions(h: History) -> None:
    s, f = h.s, h.files
    got = inspect.partitions(h.table)
    by_partition = {tuple(r["partition"].values()): r for r in got.to_pylist()}
    assert sorted(by_partition, key=repr) == [("a", None), ("b", None), ("c", BUCKET_8)]
    columns = ("spec_id", "record_count", "file_count", "total_data_file_size_in_bytes",
               "position_delete_record_count", "position_delete_file_count",
               "equality_delete_record_count", "equality_delete_file_count",
               "last_updated_snapshot_id")
    assert {k: tuple(r[c] for c in columns) for k, r in by_partition.items()} == {
        ("a", None): (0, 3, 1, f["A"].file_size_in_bytes, 1, 1, 0, 0, s[5]),
        ("b", None): (0, 1, 1, f["D"].file_size_in_bytes, 0, 0, 0, 0, s[3]),
        ("c", BUCKET_8): (1, 1, 1, f["E"].file_size_in_bytes, 0, 0, 1, 1, s[5])}
    fifth = h.table.snapshot(s[5])
    assert fifth is not None
    assert ms(by_partition[("a", None)]["last_updated_at"]) == fifth.timestamp_ms


def test_partitions_at_a_snapshot(h: History) -> None:
    got = inspect.partitions(h.table, h.s[1]).to_pylist()
    assert sorted((r["partition"]["category"], r["record_count"], r["file_count"])
                  for r in got) == [("a", 3, 1), ("b", 2, 1)]


# ----------------------------------------------------------------------------- dispatch

def test_metadata_table_dispatch_and_errors(h: History) -> None:
    assert inspect.metadata_table(h.table, "Snapshots").num_rows == 7
    with pytest.raises(ValidationError, match="Unknown metadata table 'snapshot': use one of "
                       "all_data_files, all_delete_files, all_entries, all_files"):
        inspect.metadata_table(h.table, "snapshot")
    with pytest.raises(ValidationError, match="covers the whole table"):
        inspect.metadata_table(h.table, "all_files", h.s[1])
    with pytest.raises(ValidationError, match="Cannot inspect snapshot 42: it is not a snapshot"):
        inspect.metadata_table(h.table, "files", 42)
    assert set(inspect.METADATA_TABLES) == {
        "snapshots", "history", "refs", "metadata_log_entries", "manifests", "all_manifests",
        "files", "data_files", "delete_files", "all_files", "all_data_files",
        "all_delete_files", "entries", "all_entries", "partitions"}


def test_empty_and_unpartitioned_tables(tmp_path: Path) -> None:
    catalog = new_catalog(tmp_path)
    catalog.create_namespace("db")
    t = catalog.create_table("db.u", SCHEMA)
    counts = {name: inspect.metadata_table(t, name).num_rows for name in inspect.METADATA_TABLES}
    assert counts == {name: 1 if name == "metadata_log_entries" else 0
                      for name in inspect.METADATA_TABLES}
    assert "partition" not in inspect.files(t).column_names
    assert "partition" not in inspect.entries(t).schema.field("data_file").type.names
    t.commit(FastAppend(t.io, t.metadata).append_files(
        DataFile(f"{t.location}/data/{i}.parquet", FileFormat.PARQUET, (), 5, 100)
        for i in range(2)))
    got = inspect.partitions(t)
    assert got.column_names[:3] == ["record_count", "file_count",
                                    "total_data_file_size_in_bytes"]
    assert rows(got, "record_count", "file_count", "total_data_file_size_in_bytes") == [
        (10, 2, 200)]


# ----------------------------------------------------------------------------- types

def memory_table(schema: Schema, spec: PartitionSpec, location: str,
                 format_version: FormatVersion = 2) -> Table:
    md, _ = MetadataBuilder.new_table(schema, location, spec=spec,
                                      format_version=format_version)
    committer = InMemoryCommitter()
    return Table(("db", "t"), committer.create(("db", "t"), md), ArrowFileIO(), committer)


def test_readable_metrics_decode_every_type_and_partition_summaries_are_readable(
        tmp_path: Path) -> None:
    dec = PrimitiveType.decimal(9, 2)
    schema = Schema.of(
        NestedField.required(1, "id", LONG), NestedField.optional(2, "d", DATE),
        NestedField.optional(3, "ts", TIMESTAMPTZ), NestedField.optional(4, "amount", dec),
        NestedField.optional(5, "u", UUID),
        NestedField.optional(6, "s", StructType((NestedField.optional(7, "x", INT),))),
        NestedField.optional(8, "tags", ListType(9, STRING)))
    t = memory_table(schema, PartitionSpecBuilder(schema).day("ts").build(), str(tmp_path))
    ts = 1510871468123456  # 2017-11-16T22:31:08.123456Z
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    values = {"id": (LONG, 5), "d": (DATE, 17486), "ts": (TIMESTAMPTZ, ts),
              "amount": (dec, Decimal("1.50")), "u": (UUID, u), "s.x": (INT, -1),
              "tags.element": (STRING, "x")}
    ids = {name: t.schema().find_field(name).field_id for name in values}  # IDs reassigned
    bounds = {ids[name]: to_bytes(*typed) for name, typed in values.items()}
    day = Transform.day().apply(TIMESTAMPTZ, ts)
    t.commit(FastAppend(t.io, t.metadata).append_file(DataFile(
        f"{tmp_path}/data/0.parquet", FileFormat.PARQUET, (day,), 1, 10,
        lower_bounds=bounds, upper_bounds=bounds, value_counts={ids["tags.element"]: 2})))
    [row] = inspect.files(t).to_pylist()
    metrics = row["readable_metrics"]
    assert list(metrics) == ["amount", "d", "id", "s.x", "tags.element", "ts", "u"]
    assert {k: v["lower_bound"] for k, v in metrics.items()} == {
        "amount": Decimal("1.50"), "d": dt.date(2017, 11, 16), "id": 5, "s.x": -1,
        "tags.element": "x", "u": u,
        "ts": dt.datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=dt.UTC)}
    assert metrics["tags.element"]["value_count"] == 2
    assert row["partition"] == {"ts_day": dt.date(2017, 11, 16)}
    [manifest] = inspect.manifests(t).to_pylist()
    assert manifest["partition_summaries"] == [
        {"contains_null": False, "contains_nan": False, "lower_bound": "2017-11-16",
         "upper_bound": "2017-11-16"}]


def test_a_v1_table_and_a_bound_that_cannot_be_read(tmp_path: Path) -> None:
    t = memory_table(SCHEMA, PartitionSpec(), str(tmp_path), format_version=1)

    def append(name: str, bounds: dict[int, bytes]) -> None:
        t.commit(FastAppend(t.io, t.metadata).append_file(DataFile(
            f"{tmp_path}/data/{name}.parquet", FileFormat.PARQUET, (), 1, 10,
            lower_bounds=bounds)))

    append("good", {1: to_bytes(LONG, 7)})
    # Appendix E: sequence numbers of v1 manifests "must default to 0"
    assert rows(inspect.entries(t), "status", "sequence_number", "file_sequence_number") == [
        (1, 0, 0)]
    assert rows(inspect.manifests(t), "content", "added_data_files_count",
                "partition_summaries") == [(0, 1, [])]
    append("bad", {1: b"\x01\x02\x03"})
    for name in ("files", "entries"):
        with pytest.raises(ValidationError, match=r"bad\.parquet: cannot read the bounds of "
                           "column 'id': Cannot decode long from 3 bytes"):
            inspect.metadata_table(t, name)


def test_unified_partition_type_across_specs() -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.optional(2, "category", STRING))
    identity, void = Transform.identity(), Transform.void()

    def metadata(*specs: PartitionSpec) -> TableMetadata:
        md, _ = MetadataBuilder.new_table(schema, "/t", format_version=1)
        return TableMetadata(
            format_version=1, table_uuid=None, location="/t", last_sequence_number=0,
            last_updated_ms=md.last_updated_ms, last_column_id=2, schemas=(schema,),
            current_schema_id=0, partition_specs=specs, default_spec_id=specs[-1].spec_id,
            last_partition_id=1001)

    v1_dropped = metadata(
        PartitionSpec(0, (PartitionField(2, 1000, identity, "category"),)),
        PartitionSpec(1, (PartitionField(2, 1000, void, "category_null"),
                          PartitionField(1, 1001, Transform.bucket(4), "id_bucket"))))
    assert [(f.field_id, f.name, str(f.field_type)) for f in
            table_partition_type(v1_dropped).fields] == [
        (1000, "category", "string"), (1001, "id_bucket", "int")]
    clash = metadata(PartitionSpec(0, (PartitionField(2, 1000, identity, "p"),)),
                     PartitionSpec(1, (PartitionField(1, 1001, identity, "p"),)))
    assert [f.name for f in table_partition_type(clash).fields] == ["p_1000", "p"]
    conflict = metadata(PartitionSpec(0, (PartitionField(2, 1000, identity, "p"),)),
                        PartitionSpec(1, (PartitionField(1, 1000, identity, "q"),)))
    with pytest.raises(ValidationError, match="Partition field 1000 is"):
        table_partition_type(conflict)


# ----------------------------------------------------------------------------- pyiceberg

def normalized(value: Any) -> Any:
    """Plain comparable values: timestamps as epoch ms (pyiceberg's have no zone), dicts with
    sorted keys, maps as sorted pairs."""
    if isinstance(value, dt.datetime):
        return ms(value)
    if isinstance(value, dict):
        return {k: normalized(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def comparable(table: Any, columns: list[str]) -> list[str]:
    return sorted(repr(normalized(r)) for r in table.select(columns).to_pylist())


@pytest.mark.parametrize("name", ["snapshots", "history", "refs", "manifests", "files",
                                  "data_files", "delete_files", "entries", "partitions",
                                  "metadata_log_entries"])
def test_matches_pyiceberg(h: History, name: str) -> None:
    theirs = getattr(StaticTable.from_metadata(h.table.metadata_location).inspect, name)()
    ours = inspect.metadata_table(h.table, name)
    columns = [c for c in theirs.column_names if c in ours.column_names]
    assert len(columns) == len(theirs.column_names)
    if name == "entries":  # pyiceberg's data_file has no spec_id, nor the v3 fields
        data_file = ours.column("data_file").combine_chunks()
        their_type = theirs.schema.field("data_file").type
        names = {their_type.field(i).name for i in range(their_type.num_fields)}
        kept = [data_file.type.field(i).name for i in range(data_file.type.num_fields)
                if data_file.type.field(i).name in names]
        ours = ours.set_column(ours.schema.get_field_index("data_file"), "data_file",
                               pa.StructArray.from_arrays(
                                   [data_file.field(n) for n in kept], names=kept))
    assert ours.num_rows == theirs.num_rows
    assert comparable(ours, columns) == comparable(theirs, columns)
