"""The write API: append, overwrite, delete and the bound producers, through the in-memory
committer with real Parquet files in tmp_path; rows read back with pyarrow."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.io.arrow.transforms import source_column, to_python_values
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import FormatVersion
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot
from icepark.spec.sorting import NullOrder, SortOrder, SortOrderBuilder
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
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.snapshot.writes import BoundFastAppend, BoundMergeAppend, write_files
from icepark.table.table import Table, TableTransaction
from tests.table.committer import FAST_RETRIES, InMemoryCommitter

ALL_TYPES = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "b", BOOLEAN),
    NestedField.optional(3, "i", INT),
    NestedField.optional(4, "f", FLOAT),
    NestedField.optional(5, "d", DOUBLE),
    NestedField.optional(6, "dec", PrimitiveType.decimal(9, 2)),
    NestedField.optional(7, "wide", PrimitiveType.decimal(38, 10)),
    NestedField.optional(8, "day", DATE),
    NestedField.optional(9, "t", TIME),
    NestedField.optional(10, "ts", TIMESTAMP),
    NestedField.optional(11, "tstz", TIMESTAMPTZ),
    NestedField.optional(12, "s", STRING),
    NestedField.optional(13, "u", UUID),
    NestedField.optional(14, "fx", PrimitiveType.fixed(4)),
    NestedField.optional(15, "bin", BINARY),
    NestedField.optional(16, "st", StructType((NestedField.required(17, "x", LONG),
                                               NestedField.optional(18, "y", STRING)))),
    NestedField.optional(19, "l", ListType(20, StructType((
        NestedField.optional(21, "a", INT),)), element_required=False)),
    NestedField.optional(22, "m", MapType(23, STRING, 24, ListType(25, LONG, False), False)),
)
WORDS = ["a", "ab", "b", "é😀", "", "zz"]


def _rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rnd = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rnd.random() < 0.15 else value

    epoch = datetime(1970, 1, 1)
    rows = []
    for k in range(n):
        ts = epoch + timedelta(microseconds=rnd.randint(-3 * 10**14, 3 * 10**14))
        rows.append({
            "id": k, "b": maybe(rnd.random() < 0.5), "i": maybe(rnd.randint(-2**31, 2**31 - 1)),
            "f": maybe(rnd.choice([1.5, -0.0, float("nan"), 3.25])),
            "d": maybe(rnd.uniform(-1e9, 1e9)),
            "dec": maybe(Decimal(rnd.randint(-10**9 + 1, 10**9 - 1)).scaleb(-2)),
            "wide": maybe(Decimal(f"{rnd.randint(-10**38 + 1, 10**38 - 1)}E-10")),
            "day": maybe(date(1970, 1, 1) + timedelta(days=rnd.randint(-5000, 5000))),
            "t": maybe(time(rnd.randint(0, 23), rnd.randint(0, 59), 0, rnd.randint(0, 999999))),
            "ts": maybe(ts), "tstz": maybe(ts.replace(tzinfo=UTC)),
            "s": maybe(rnd.choice(WORDS)), "u": maybe(uuid.UUID(int=rnd.getrandbits(128))),
            "fx": maybe(rnd.randbytes(4)), "bin": maybe(rnd.randbytes(rnd.randint(0, 5))),
            "st": maybe({"x": rnd.randint(0, 9), "y": maybe(rnd.choice(WORDS))}),
            "l": maybe([maybe({"a": maybe(rnd.randint(0, 5))}) for _ in range(rnd.randint(0, 3))]),
            "m": maybe([(w, maybe([rnd.randint(0, 9)])) for w in rnd.sample(WORDS, 2)]),
        })
    return rows


ARROW_TYPES = pa.schema([
    ("id", pa.int64()), ("b", pa.bool_()), ("i", pa.int32()), ("f", pa.float32()),
    ("d", pa.float64()), ("dec", pa.decimal128(9, 2)), ("wide", pa.decimal128(38, 10)),
    ("day", pa.date32()), ("t", pa.time64("us")), ("ts", pa.timestamp("us")),
    ("tstz", pa.timestamp("us", tz="UTC")), ("s", pa.string()), ("u", pa.uuid()),
    ("fx", pa.binary(4)), ("bin", pa.binary()),
    ("st", pa.struct([pa.field("x", pa.int64(), nullable=False), ("y", pa.string())])),
    ("l", pa.list_(pa.struct([("a", pa.int32())]))),
    ("m", pa.map_(pa.string(), pa.list_(pa.int64()))),
])


def _data(n: int = 60, seed: int = 0) -> pa.Table:
    rows = _rows(n, seed)
    for row in rows:
        row["u"] = None if row["u"] is None else row["u"].bytes
    return pa.Table.from_pylist(rows, schema=ARROW_TYPES)


def make(committer: InMemoryCommitter, tmp_path: Path, schema: Schema = ALL_TYPES, *,
         spec: PartitionSpec | None = None, order: SortOrder | None = None,
         format_version: FormatVersion = 2, properties: dict[str, str] | None = None) -> Table:
    metadata, _ = MetadataBuilder.new_table(
        schema, str(tmp_path / "t"), spec=spec, sort_order=order, format_version=format_version,
        properties={**FAST_RETRIES, **(properties or {})})
    identifier = ("db", "t")
    return Table(identifier, committer.create(identifier, metadata), ArrowFileIO(), committer)


def data_files(table: Table, snapshot: Snapshot | None = None) -> list[DataFile]:
    snapshot = snapshot or table.current_snapshot()
    if snapshot is None:
        return []
    return [e.data_file for m in snapshot_manifests(table.io, snapshot)
            for e in read_manifest(table.io, m, discard_deleted=True)]


def read_rows(table: Table, snapshot: Snapshot | None = None) -> list[dict[str, Any]]:
    return [row for f in data_files(table, snapshot)
            for row in pq.read_table(f.file_path).to_pylist()]


def bag(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(repr(row) for row in rows)


def parquet_files(table: Table) -> list[Path]:
    return sorted(Path(table.location).rglob("*.parquet"))


@pytest.fixture
def committer() -> InMemoryCommitter:
    return InMemoryCommitter()


# ----------------------------------------------------------------------------- append


def _spec(build: str) -> PartitionSpec:
    b = PartitionSpecBuilder(ALL_TYPES)
    match build:
        case "unpartitioned":
            return PartitionSpec()
        case "identity":
            return b.identity("s").identity("b").build()
        case "bucket":
            return b.bucket("id", 4).bucket("u", 3).bucket("wide", 2).build()
        case "truncate":
            return b.truncate("s", 1).truncate("dec", 50_000).truncate("bin", 1).build()
        case "day":
            return b.day("tstz").build()
        case "hour":
            return b.hour("ts").build()
        case "year":
            return b.year("day").build()
        case "month":
            return b.month("ts").build()
        case "nested":
            return b.identity("st.y").bucket("fx", 2).build()
    raise AssertionError(build)


SPECS = ["unpartitioned", "identity", "bucket", "truncate", "day", "hour", "year", "month",
         "nested"]


@pytest.mark.parametrize("spec_name", SPECS)
def test_append_round_trips_every_type_partitioned_by_each_transform(
        committer: InMemoryCommitter, tmp_path: Path, spec_name: str) -> None:
    table = make(committer, tmp_path, spec=_spec(spec_name))
    data = _data()
    table.append(data)
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.operation is Operation.APPEND
    assert snapshot.summary is not None
    assert snapshot.summary.properties["added-records"] == str(data.num_rows)
    assert bag(read_rows(table)) == bag(data.to_pylist())
    schema, spec = table.schema(), table.spec()
    files = data_files(table)
    assert len({f.partition for f in files}) == len(files), "one file per partition"
    for f in files:  # every row of a file has the file's partition tuple
        assert f.spec_id == spec.spec_id and f.sort_order_id is None
        assert f.file_path.startswith(f"{table.location}/data/")
        if spec.fields:
            assert f"/{spec.partition_path(f.partition, schema)}/" in f.file_path
        rows = pq.read_table(f.file_path)
        for i, pf in enumerate(spec.fields):
            source = schema.find_type(pf.source_id)
            values = to_python_values(source_column(rows, schema, pf.source_id), source)
            assert {pf.transform.apply(source, v) for v in values} == {f.partition[i]}


def test_append_a_record_batch_reader_streams_into_one_file_per_partition(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make(committer, tmp_path, spec=_spec("bucket"))
    data = _data(90)
    table.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=7)))
    assert bag(read_rows(table)) == bag(data.to_pylist())
    files = data_files(table)
    assert len({f.partition for f in files}) == len(files)


def test_append_fits_input_by_name_and_casts_within_a_kind(committer: InMemoryCommitter,
                                                            tmp_path: Path) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING),
                       NestedField.optional(3, "n", INT))
    table = make(committer, tmp_path, schema)
    table.append(pa.table({"s": pa.array(["x", None], pa.large_string()),
                           "id": pa.array([1, 2], pa.int32())}))
    assert sorted(read_rows(table), key=lambda r: r["id"]) == [
        {"id": 1, "s": "x", "n": None}, {"id": 2, "s": None, "n": None}]


def test_append_sorts_within_files_and_records_the_order(committer: InMemoryCommitter,
                                                         tmp_path: Path) -> None:
    order = (SortOrderBuilder(ALL_TYPES).desc("s", NullOrder.NULLS_FIRST)
             .asc("id").build())
    table = make(committer, tmp_path, spec=_spec("bucket"), order=order)
    table.append(_data(80))
    for f in data_files(table):
        assert f.sort_order_id == table.sort_order().order_id == 1
        assert _sorted_desc(pq.read_table(f.file_path).to_pylist())


def _sorted_desc(rows: list[dict[str, Any]]) -> bool:
    """s descending with nulls first, then id ascending."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        s = r["s"] or ""
        return (r["s"] is not None, (*(-ord(c) for c in s), 1), r["id"])
    return [key(r) for r in rows] == sorted(key(r) for r in rows)


def test_append_honors_write_properties(committer: InMemoryCommitter, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    table = make(committer, tmp_path, properties={
        "write.target-file-size-bytes": "2000", "write.parquet.row-group-size-bytes": "1000",
        "write.data.path": str(elsewhere), "write.parquet.compression-codec": "gzip"})
    data = _data(300)
    table.append(data)
    files = data_files(table)
    assert len(files) > 1, "rolled over at the target file size"
    assert all(f.file_path.startswith(f"{elsewhere}/") for f in files)
    assert pq.ParquetFile(files[0].file_path).metadata.row_group(0).column(0).compression \
        == "GZIP"
    assert bag(read_rows(table)) == bag(data.to_pylist())


def test_append_to_a_branch_leaves_main_alone(committer: InMemoryCommitter,
                                              tmp_path: Path) -> None:
    table = make(committer, tmp_path, spec=_spec("identity"))
    first, second = _data(10, 1), _data(10, 2)
    table.append(first)
    main = table.current_snapshot()
    table.append(second, branch="dev", snapshot_properties={"snapshot-property.app": "etl",
                                                            "owner": "me"})
    assert table.current_snapshot() == main
    dev = table.snapshot_by_ref("dev")
    assert dev is not None and main is not None and dev.parent_snapshot_id == main.snapshot_id
    assert dev.summary is not None
    assert (dev.summary.properties["app"], dev.summary.properties["owner"]) == ("etl", "me")
    assert bag(read_rows(table, dev)) == bag(first.to_pylist() + second.to_pylist())
    assert bag(read_rows(table)) == bag(first.to_pylist())
    table.overwrite(second, branch="dev")
    assert bag(read_rows(table, table.snapshot_by_ref("dev"))) == bag(second.to_pylist())
    assert bag(read_rows(table)) == bag(first.to_pylist())


def test_an_empty_append_commits_an_empty_snapshot(committer: InMemoryCommitter,
                                                   tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    table.append(_data(0))
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.properties["total-records"] == "0" and not parquet_files(table)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("data", "message"), [
    (pa.table({"s": ["x"]}), "Column 'id' is required but missing"),
    (pa.table({"id": [1], "extra": [2]}), "Column(s) 'extra' are not in the table schema"),
    (pa.table({"id": [1], "st": pa.array([{"x": 1, "z": 2}])}),
     "Column(s) 'st.z' are not in the table schema"),
    (pa.table({"id": [1], "st": pa.array([{"y": "a"}])}), "Column 'st.x' is required"),
    (pa.table({"id": [1], "l": pa.array([[{"a": 1, "q": 1}]])}), "'l.element.q'"),
    (pa.table({"id": ["one"]}), "Column 'id' has Arrow type string"),
    (pa.table({"id": [1], "i": [2**40]}), "Column 'i'"),
    (pa.table({"id": [1, None]}), "Column 'id' is required but has 1 null"),
])
def test_bad_input_names_the_column_and_writes_no_file(
        committer: InMemoryCommitter, tmp_path: Path, data: pa.Table, message: str) -> None:
    table = make(committer, tmp_path, spec=_spec("identity"))
    with pytest.raises(ValidationError) as e:
        table.append(data)
    assert message in str(e.value)
    assert table.current_snapshot() is None and not parquet_files(table)
    with pytest.raises(ValidationError):
        table.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches()))
    assert not parquet_files(table)


def test_a_bad_batch_mid_stream_deletes_the_files_written_before_it(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make(committer, tmp_path, spec=_spec("bucket"))
    good = _data(30)
    bad = pa.table({"id": pa.array([None], pa.int64())})
    schema = pa.schema([pa.field("id", pa.int64())])
    batches = [good.select(["id"]).to_batches()[0], bad.to_batches()[0]]
    with pytest.raises(ValidationError, match="'id' is required but has 1 null"):
        table.append(pa.RecordBatchReader.from_batches(schema, batches))
    assert table.current_snapshot() is None and not parquet_files(table)


def test_write_defaults_fill_missing_fields_on_a_v3_table(committer: InMemoryCommitter,
                                                          tmp_path: Path) -> None:
    """The data files of a v3 table get each missing field's write-default (committing them
    waits for row lineage: see test_a_v3_table_refuses_new_snapshots)."""
    schema = Schema.of(
        NestedField.required(1, "id", LONG),
        NestedField.required(2, "region", STRING, write_default="eu"),
        NestedField.optional(3, "score", DOUBLE, write_default=1.5),
        NestedField.optional(4, "on", DATE, write_default=19000),
        NestedField.optional(5, "p", StructType((
            NestedField.required(6, "q", INT, write_default=7),
            NestedField.optional(7, "r", STRING)))),
        NestedField.optional(8, "note", STRING),
    )
    table = make(committer, tmp_path, schema, format_version=3,
                 spec=PartitionSpecBuilder(schema).identity("region").build())
    files = write_files(table.io, table.metadata,
                        pa.table({"id": [1, 2], "p": pa.array([{"r": "x"}, None]),
                                  "score": [None, 2.0]}))
    rows = sorted((r for f in files for r in pq.read_table(f.file_path).to_pylist()),
                  key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "region": "eu", "score": None, "on": date(2022, 1, 8),
         "p": {"q": 7, "r": "x"}, "note": None},
        {"id": 2, "region": "eu", "score": 2.0, "on": date(2022, 1, 8), "p": None,
         "note": None}]
    assert [f.partition for f in files] == [("eu",)]
    with pytest.raises(ValidationError, match="'id' is required but missing"):
        write_files(table.io, table.metadata, pa.table({"region": ["us"]}))


def test_a_v3_table_assigns_row_lineage_to_every_snapshot(committer: InMemoryCommitter,
                                                           tmp_path: Path) -> None:
    """Spec (v3), *Snapshot Row IDs*: "A snapshot's ``first-row-id`` is assigned to the table's
    current ``next-row-id`` on each commit attempt" and "The ``first-row-id`` field is required
    even if a commit does not assign any ID space"."""
    schema = Schema.of(NestedField.required(1, "id", LONG))
    table = make(committer, tmp_path, schema, format_version=3)
    assert table.metadata.next_row_id == 0
    table = table.append(pa.table({"id": [1, 2, 3]})).refresh()
    table = table.append(pa.table({"id": [4]})).refresh()
    table = table.delete("id = 4").refresh()  # removes a file: no new data manifest rows
    table = table.overwrite(pa.table({"id": [7, 8]})).refresh()
    lineage = [(s.operation, s.first_row_id, s.added_rows) for s in table.snapshots()]
    assert lineage == [(Operation.APPEND, 0, 3), (Operation.APPEND, 3, 1),
                       (Operation.DELETE, 4, 0), (Operation.OVERWRITE, 4, 2)]
    assert table.metadata.next_row_id == 6
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [7, 8]


# ----------------------------------------------------------------------------- failures


def test_a_known_commit_failure_deletes_the_written_files(committer: InMemoryCommitter,
                                                          tmp_path: Path) -> None:
    table = make(committer, tmp_path, spec=_spec("identity"))
    committer.fail_next(100)
    with pytest.raises(CommitFailed):
        table.append(_data(20))
    assert not parquet_files(table) and table.refresh().current_snapshot() is None
    assert not [p for p in Path(table.location).rglob("*.avro")]


def test_a_retried_commit_keeps_its_files(committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    table.append(_data(5, 1))
    committer.fail_next(2, lambda md: [], lambda md: [])
    data = _data(5, 2)
    table.append(data)
    assert bag(read_rows(table)) == bag(_data(5, 1).to_pylist() + data.to_pylist())
    assert len(parquet_files(table)) == 2


def test_commit_state_unknown_deletes_nothing(committer: InMemoryCommitter,
                                              tmp_path: Path) -> None:
    table = make(committer, tmp_path, spec=_spec("identity"))
    committer.unknown_next(applied=False)
    with pytest.raises(CommitStateUnknown):
        table.append(_data(20))
    written = parquet_files(table)
    assert written and all(p.exists() for p in written)


def test_append_data_files_never_deletes_the_callers_files(committer: InMemoryCommitter,
                                                           tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    files = write_files(table.io, table.metadata, _data(10))
    committer.fail_next(100)
    with pytest.raises(CommitFailed):
        table.append_data_files(files)
    committer.fail_next(0)
    assert all(Path(f.file_path).exists() for f in files)
    table.append_data_files(files, snapshot_properties={"source": "spark"})
    assert bag(read_rows(table)) == bag(_data(10).to_pylist())


# ----------------------------------------------------------------------------- overwrite/delete


def _by_category(committer: InMemoryCommitter, tmp_path: Path) -> Table:
    table = make(committer, tmp_path, spec=_spec("identity"))
    table.append(_data(60))
    return table


def test_overwrite_replaces_the_matching_partitions(committer: InMemoryCommitter,
                                                    tmp_path: Path) -> None:
    table = _by_category(committer, tmp_path)
    before = read_rows(table)
    new = _data(12, 5).filter(pa.compute.equal(_data(12, 5)["s"], "ab"))
    assert new.num_rows > 0
    table.overwrite(new, "s = 'ab'", snapshot_properties={"why": "fix"})
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.operation is Operation.OVERWRITE
    assert snapshot.summary is not None and snapshot.summary.properties["why"] == "fix"
    assert bag(read_rows(table)) == bag([r for r in before if r["s"] != "ab"] + new.to_pylist())


def test_overwrite_without_a_filter_replaces_everything(committer: InMemoryCommitter,
                                                        tmp_path: Path) -> None:
    table = _by_category(committer, tmp_path)
    new = _data(7, 9)
    table.overwrite(new)
    assert bag(read_rows(table)) == bag(new.to_pylist())


def test_overwrite_refuses_rows_outside_its_filter_before_writing(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = _by_category(committer, tmp_path)
    files = parquet_files(table)
    with pytest.raises(ValidationError, match=r"outside the overwrite filter s = 'ab'.*s='a'"):
        table.overwrite(pa.table({"id": [1, 2], "s": ["ab", "a"]}), "s = 'ab'")
    with pytest.raises(ValidationError, match=r"st\.x=5"):
        table.overwrite(pa.table({"id": [1], "st": pa.array([{"x": 5}])}), "st.x < 3")
    assert parquet_files(table) == files


def test_overwrite_of_part_of_a_file_fails_and_deletes_its_files(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = _by_category(committer, tmp_path)
    files = parquet_files(table)
    with pytest.raises(ValidationError, match="Cannot delete part of file"):
        table.overwrite(pa.table({"id": [1000]}), "id = 1000 OR id < 5")
    assert parquet_files(table) == files


def test_delete_removes_whole_files(committer: InMemoryCommitter, tmp_path: Path) -> None:
    table = _by_category(committer, tmp_path)
    before = read_rows(table)
    table.delete("s IN ('a', 'b') OR s IS NULL", snapshot_properties={"k": "v"})
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.operation is Operation.DELETE
    assert bag(read_rows(table)) == bag([r for r in before if r["s"] not in ("a", "b", None)])
    with pytest.raises(ValidationError, match="Cannot delete part of file"):
        table.delete("id < 30")
    path = data_files(table)[0].file_path
    table.delete_files([path])
    assert path not in {f.file_path for f in data_files(table)}
    with pytest.raises(ValidationError, match="no longer in the table"):
        table.delete_files([path])


# ----------------------------------------------------------------------------- producers


def test_bound_producers_commit_to_their_table(committer: InMemoryCommitter,
                                               tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    files = write_files(table.io, table.metadata, _data(10))
    append = table.new_append()
    assert isinstance(append, BoundMergeAppend)
    with append as a:
        a.append_files(files[:1])
    assert len(data_files(table)) == 1
    with pytest.raises(ValidationError, match="already committed"):
        append.commit()
    table.set_properties({"commit.manifest-merge.enabled": "false"})
    fast = table.new_append(snapshot_properties={"k": "v"})
    assert isinstance(fast, BoundFastAppend)
    fast.append_files(files[1:]).commit()
    with table.new_overwrite() as o:
        o.delete_where("id >= 0")
    assert data_files(table) == []
    with pytest.raises(RuntimeError), table.new_append() as abandoned:
        abandoned.append_files(files)
        raise RuntimeError("abandon")
    assert data_files(table) == [] and all(Path(f.file_path).exists() for f in files)


def test_rewrite_and_row_delta_are_bound_too(committer: InMemoryCommitter,
                                             tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    table.append(_data(10))
    old = data_files(table)
    new = write_files(table.io, table.metadata, _data(10))
    table.new_rewrite().rewrite(old, new).commit()
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.operation is Operation.REPLACE
    extra = write_files(table.io, table.metadata, _data(3, 4))
    table.new_row_delta().add_rows(extra[0]).commit()
    assert len(data_files(table)) == 2


def test_a_transaction_stages_writes_with_other_changes(committer: InMemoryCommitter,
                                                        tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    commits = committer.commits
    with table.transaction() as tx:
        assert isinstance(tx, TableTransaction)
        tx.update_schema().add_column("extra", STRING).commit()
        tx.append(pa.table({"id": [1, 2], "extra": ["x", "y"]}))
        tx.set_properties(k="v")
        tx.delete_files([f.file_path for f in data_files(table)])
    assert committer.commits == commits + 1
    assert table.properties["k"] == "v"
    rows = read_rows(table)
    assert [(r["id"], r["extra"]) for r in sorted(rows, key=lambda r: r["id"])] == [
        (1, "x"), (2, "y")]
    with pytest.raises(RuntimeError), table.transaction() as tx:
        tx.append(_data(5))
        raise RuntimeError("abandon")
    assert len(parquet_files(table)) == 1, "an abandoned transaction deletes what it wrote"
