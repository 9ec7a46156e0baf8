"""Row-level deletes through Spark: the table's rows afterwards are what SQL's DELETE leaves,
as icepark's Arrow reader, its Spark reader, pyiceberg and DuckDB all read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY, create_mapping, to_json
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spark.reader.read import read
from icepark.spark.rowlevel.delete import DeleteResult, delete_rows
from icepark.spark.writer.write import JOB_ID_PROPERTY
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, STRING, ListType, NestedField, StructType
from icepark.table.table import Table
from tests.interop.peers import duckdb_connection
from tests.spark.test_write import assert_field_ids_everywhere

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.required(2, "cat", STRING),
    NestedField.optional(3, "x", LONG),
    NestedField.optional(4, "s", StructType((NestedField.optional(5, "a", INT),))))
CATS = ("a", "b", "c")
ROWS: list[dict[str, Any]] = [
    {"id": i, "cat": CATS[i % 3], "x": None if i % 5 == 0 else i, "s": {"a": i % 7}}
    for i in range(40)]
MODES = ("copy-on-write", "merge-on-read")


def _make(tmp_path: Path, mode: str | None, partitioned: bool, version: int = 2) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build() if partitioned else None
    table = catalog.create_table("db.t", SCHEMA, partition_spec=spec,
                                 properties={} if mode is None else {"write.delete.mode": mode},
                                 format_version=version)  # type: ignore[arg-type]  # 1 or 2
    arrow_schema = to_arrow_schema(table.schema())
    for start in (0, 20):  # two appends: several files per partition
        table.append(pa.Table.from_pylist(ROWS[start:start + 20], schema=arrow_schema))
    return table


def _expected(keep: Any) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["cat"], r["x"], r["s"]["a"]) for r in ROWS if keep(r))


def _tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["cat"], r["x"], (r["s"] or {}).get("a")) for r in rows)


def _check(spark: SparkSession, table: Table, expected: list[tuple[Any, ...]],
           peers: bool = True) -> None:
    """Every reader sees exactly ``expected`` (pyiceberg and DuckDB too, with ``peers``)."""
    assert _tuples(table.scan().to_arrow().to_pylist()) == expected
    got = [r.asDict(recursive=True) for r in read(spark, table).collect()]
    assert _tuples(got) == expected
    if not peers:
        return
    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert _tuples(theirs.to_pylist()) == expected
    with duckdb_connection() as con:
        result = con.execute("SELECT id, cat, x, s FROM iceberg_scan(?)",
                             [table.metadata_location])
        duck = [dict(zip(["id", "cat", "x", "s"], v, strict=True)) for v in result.fetchall()]
    assert _tuples(duck) == expected


def _operation(table: Table) -> str:
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return snapshot.summary.operation.value


def _files(root: Path) -> set[Path]:
    return {p for p in (root / "wh").rglob("*") if p.is_file()}


def _live_files(table: Table) -> int:
    return sum(1 for _ in table.scan().plan_files())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("partitioned", [True, False])
def test_part_of_files_then_a_second_delete(spark: SparkSession, tmp_path: Path, mode: str,
                                            partitioned: bool) -> None:
    table = _make(tmp_path, mode, partitioned)
    files_before = _live_files(table)
    result = delete_rows(spark, table, "x > 30", snapshot_properties={"who": "test"})
    matched = sum(1 for r in ROWS if r["x"] is not None and r["x"] > 30)
    assert result.deleted_rows == matched and result.removed_files == 0
    if mode == "merge-on-read":
        assert result.rewritten_files == 0 and result.delete_files >= 1
        assert _operation(table) == "delete"
        assert _live_files(table) == files_before
    else:
        assert result.delete_files == 0 and result.rewritten_files >= 1
        assert _operation(table) == "overwrite"
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.snapshot_id == result.snapshot_id
    assert snapshot.summary is not None and snapshot.summary.properties["who"] == "test"

    def first(r: dict[str, Any]) -> bool:
        return not (r["x"] is not None and r["x"] > 30)

    _check(spark, table, _expected(first))

    # the second delete counts only rows still live: the x > 30 ones are gone already
    second = delete_rows(spark, table, "id < 10 OR x > 25")
    again = [r for r in ROWS if first(r) and (r["id"] < 10 or (r["x"] or 0) > 25)]
    assert second.deleted_rows == len(again)
    _check(spark, table, _expected(
        lambda r: first(r) and not (r["id"] < 10 or (r["x"] or 0) > 25)))


@pytest.mark.parametrize("mode", MODES)
def test_whole_partitions_then_rows_across_partitions(spark: SparkSession, tmp_path: Path,
                                                      mode: str) -> None:
    table = _make(tmp_path, mode, partitioned=True)
    whole = delete_rows(spark, table, "cat = 'a'")
    assert whole == DeleteResult(sum(1 for r in ROWS if r["cat"] == "a"), 2, 0, 0,
                                 whole.snapshot_id)
    assert _operation(table) == "delete"
    _check(spark, table, _expected(lambda r: r["cat"] != "a"))

    ids = (1, 5, 22, 37, 38)  # partitions b and c, both appends' files
    across = delete_rows(spark, table, f"id IN {ids}")
    assert across.deleted_rows == len(ids) and across.removed_files == 0
    if mode == "merge-on-read":  # one delete file per data file holding one of the rows
        assert (across.delete_files, across.rewritten_files) == (4, 0)
    else:  # every data file holding one of the rows
        assert (across.delete_files, across.rewritten_files) == (0, 4)
    _check(spark, table, _expected(lambda r: r["cat"] != "a" and r["id"] not in ids))


@pytest.mark.parametrize("mode", MODES)
def test_whole_files_with_existing_deletes(spark: SparkSession, tmp_path: Path,
                                           mode: str) -> None:
    table = _make(tmp_path, mode, partitioned=False)
    delete_rows(spark, table, "id IN (3, 4)")  # rows of the first file only
    result = delete_rows(spark, table, "id < 20")  # the first file matches whole
    assert result.removed_files == 1 and result.deleted_rows == 18
    assert _operation(table) == "delete"
    _check(spark, table, _expected(lambda r: r["id"] >= 20))
    everything = delete_rows(spark, table, "id >= 0")
    assert everything.deleted_rows == 20
    _check(spark, table, [])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("partitioned", [True, False])
def test_nested_field_filter_and_nulls_kept(spark: SparkSession, tmp_path: Path, mode: str,
                                            partitioned: bool) -> None:
    table = _make(tmp_path, mode, partitioned)
    nested = delete_rows(spark, table, "s.a = 3")
    assert nested.deleted_rows == sum(1 for r in ROWS if r["s"]["a"] == 3)
    _check(spark, table, _expected(lambda r: r["s"]["a"] != 3))
    # SQL DELETE: a row where the filter is null (x is null) is not deleted
    nulls = delete_rows(spark, table, "x > 5")
    assert nulls.deleted_rows == sum(1 for r in ROWS if r["s"]["a"] != 3 and (r["x"] or 0) > 5)
    _check(spark, table, _expected(
        lambda r: r["s"]["a"] != 3 and (r["x"] is None or r["x"] <= 5)))
    assert sum(1 for r in table.scan("x IS NULL").to_arrow().to_pylist()) == sum(
        1 for r in ROWS if r["x"] is None and r["s"]["a"] != 3)


@pytest.mark.parametrize("mode", MODES)
def test_rows_deleted_by_equality_deletes_stay_deleted(spark: SparkSession, tmp_path: Path,
                                                       mode: str) -> None:
    table = _make(tmp_path, mode, partitioned=False)
    writer = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                  table.schema(), table.spec(), (), table.properties,
                                  equality_ids=[3])
    writer.write(pa.table({"x": pa.array([7, 33], pa.int64())}))
    with table.new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    result = delete_rows(spark, table.refresh(), "id < 12")
    assert result.deleted_rows == 11  # id 7 was deleted already
    # measured: DuckDB 1.5's equality deletes also drop the rows where x is null, and
    # pyiceberg does not apply equality deletes; icepark's two readers are the reference
    _check(spark, table, _expected(lambda r: r["id"] >= 12 and r["x"] not in (7, 33)),
           peers=False)


@pytest.mark.parametrize("mode", MODES)
def test_nothing_matches_commits_nothing(spark: SparkSession, tmp_path: Path,
                                         mode: str) -> None:
    table = _make(tmp_path, mode, partitioned=True)
    before = table.metadata_location
    for where in ("id > 1000", "id = 3 AND x = 4", "false"):
        assert delete_rows(spark, table, where) == DeleteResult(0, 0, 0, 0, None)
    assert table.refresh().metadata_location == before


def test_v1_table_copies_on_write(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, None, partitioned=True, version=1)
    result = delete_rows(spark, table, "x > 30")
    assert result.rewritten_files >= 1 and result.delete_files == 0
    _check(spark, table, _expected(lambda r: not (r["x"] is not None and r["x"] > 30)))


def test_merge_on_read_on_v1_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=False, version=1)
    with pytest.raises(ValidationError, match="not supported in v1"):
        delete_rows(spark, table, "x > 30")


def test_bad_input_fails_before_any_job(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, None, partitioned=False)
    with pytest.raises(ValidationError, match="nope"):
        delete_rows(spark, table, "nope > 3")
    with pytest.raises(ValidationError):
        delete_rows(spark, table, "x >")
    table.set_properties({"write.delete.mode": "sometimes"})
    with pytest.raises(ValidationError, match=r"write\.delete\.mode"):
        delete_rows(spark, table, "x > 3")


@pytest.mark.parametrize("mode", MODES)
def test_failed_commit_leaves_no_new_files(spark: SparkSession, tmp_path: Path, mode: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, mode, partitioned=True)
    before, location = _files(tmp_path), table.metadata_location

    def fail(self: Table, *changes: Any) -> Table:
        raise CommitFailed("injected")

    monkeypatch.setattr(Table, "commit", fail)
    with pytest.raises(CommitFailed, match="injected"):
        delete_rows(spark, table, "x > 30")
    assert _files(tmp_path) == before
    assert table.refresh().metadata_location == location


def test_unknown_commit_outcome_deletes_nothing(spark: SparkSession, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, "merge-on-read", partitioned=True)
    before = _files(tmp_path)

    def unknown(self: Table, *changes: Any) -> Table:
        raise CommitStateUnknown("injected")

    monkeypatch.setattr(Table, "commit", unknown)
    with pytest.raises(CommitStateUnknown):
        delete_rows(spark, table, "x > 30")
    new = _files(tmp_path) - before
    assert new and all(p.name.endswith("-deletes.parquet") for p in new)


@pytest.mark.parametrize("mode", MODES)
def test_file_matching_whole_by_count_is_removed(spark: SparkSession, tmp_path: Path,
                                                 mode: str) -> None:
    """No metrics prove it, but every row of the first file (ids 0-19) matches: it is removed
    instead of rewritten or covered by position deletes; the second file matches in part."""
    table = _make(tmp_path, mode, partitioned=False)
    first, second = sorted((t.data_file for t in table.scan().plan_files()),
                           key=lambda f: min(pq.read_table(f.file_path)["id"].to_pylist()))
    where = "x IS NULL OR x < 20"
    result = delete_rows(spark, table, where)

    def matches(r: dict[str, Any]) -> bool:
        return r["x"] is None or r["x"] < 20

    assert result.deleted_rows == sum(1 for r in ROWS if matches(r)) == 24
    assert result.removed_files == 1
    (task,) = table.scan().plan_files()
    if mode == "merge-on-read":
        assert (result.rewritten_files, result.delete_files) == (0, 1)
        assert task.data_file.file_path == second.file_path
        (deletes,) = task.delete_files
        assert deletes.record_count == 4  # ids 20, 25, 30, 35 of the second file
        positions = pq.read_table(deletes.file_path).to_pylist()
        assert {p["file_path"] for p in positions} == {second.file_path}
    else:  # the second file is rewritten, the first is not
        assert (result.rewritten_files, result.delete_files) == (1, 0)
        assert task.data_file.file_path not in (first.file_path, second.file_path)
        assert task.data_file.record_count == 16 and not task.delete_files
    _check(spark, table, _expected(lambda r: not matches(r)))


MAPPED = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "cat", STRING),
                   NestedField.optional(3, "x", LONG))


@pytest.mark.parametrize("mode", MODES)
def test_name_mapped_file_with_identity_partition_fill(spark: SparkSession, tmp_path: Path,
                                                       mode: str) -> None:
    """A file without field IDs (read through the name mapping) that lacks the identity
    partition column ``cat`` (filled from its partition value): its rows match the filter on
    ``cat`` and are deleted by position or rewritten."""
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.m", MAPPED, partition_spec=PartitionSpecBuilder(MAPPED).identity("cat").build(),
        properties={"write.delete.mode": mode,
                    NAME_MAPPING_PROPERTY: to_json(create_mapping(MAPPED))})
    Path(table.location, "data").mkdir(parents=True, exist_ok=True)
    path = f"{table.location}/data/raw.parquet"
    pq.write_table(pa.table({"x": pa.array(range(6), pa.int64()),
                             "id": pa.array(range(100, 106), pa.int64())}), path)
    with table.new_append() as append:
        append.append_file(DataFile(path, FileFormat.PARQUET, ("a",), 6,
                                    Path(path).stat().st_size, spec_id=table.spec().spec_id))
    table.refresh().append(pa.Table.from_pylist(
        [{"id": i, "cat": "ab"[i % 2], "x": i} for i in range(10)],
        schema=to_arrow_schema(table.schema())))
    before = sorted((r["id"], r["cat"], r["x"]) for r in table.scan().to_arrow().to_pylist())
    assert ("a", 3) in {(c, x) for i, c, x in before if i >= 100}  # the fill is read

    result = delete_rows(spark, table, "cat = 'a' AND x > 2")
    expected = [r for r in before if not (r[1] == "a" and r[2] > 2)]
    assert result.deleted_rows == len(before) - len(expected) == 3 + 3  # raw 3-5; 4, 6, 8
    assert result.removed_files == 0
    assert (result.delete_files > 0) == (mode == "merge-on-read")
    assert sorted((r["id"], r["cat"], r["x"]) for r in table.scan().to_arrow().to_pylist()
                  ) == expected
    assert sorted((r.id, r.cat, r.x) for r in read(spark, table).collect()) == expected


# -- which writer rewrites the files -------------------------------------------------------------

SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"
"""The footer key Spark's own Parquet writer adds (and no other writer does)."""


def _added_by_current(table: Table, before: set[str]) -> tuple[str, list[DataFile]]:
    """The job ID of the current snapshot and the live data files that are not in ``before``."""
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    new = [t.data_file for t in table.scan().plan_files() if t.data_file.file_path not in before]
    return snapshot.summary.properties[JOB_ID_PROPERTY], new


@pytest.mark.parametrize("partitioned", [True, False])
def test_copy_on_write_rewrites_flat_tables_with_sparks_writer(spark: SparkSession,
                                                               tmp_path: Path,
                                                               partitioned: bool) -> None:
    """Longs, strings and a struct: Spark's own Parquet writer rewrites the files (named by
    the native job, moved to their partition's directory), with field IDs on every column."""
    table = _make(tmp_path, "copy-on-write", partitioned)
    before = {t.data_file.file_path for t in table.scan().plan_files()}
    result = delete_rows(spark, table, "x > 30")
    job, new = _added_by_current(table, before)
    assert result.rewritten_files >= 1 and new
    for f in new:
        assert f"/data/{job}/" not in f.file_path, f.file_path
        assert f.file_path.rsplit("/", 1)[-1].startswith(f"{job}-")
        assert f.file_path.endswith(".zstd.parquet")  # Spark's file name (with its codec)
        assert SPARK_ROW_METADATA in (pq.read_metadata(f.file_path).metadata or {})
        assert_field_ids_everywhere(f.file_path)
    expected = _expected(lambda r: not (r["x"] is not None and r["x"] > 30))
    assert sum(t.data_file.record_count for t in table.scan().plan_files()) == len(expected)
    _check(spark, table, expected)


LISTED = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "x", LONG),
                   NestedField.optional(3, "tags", ListType(4, STRING, element_required=False)))


def test_copy_on_write_of_a_list_column_uses_the_python_workers(spark: SparkSession,
                                                                tmp_path: Path) -> None:
    """Spark's writer gives list elements no field ID: the Python workers rewrite the file."""
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.l", LISTED)
    rows = [{"id": i, "x": i, "tags": None if i % 3 == 0 else [f"t{i}", None]}
            for i in range(20)]
    table.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(table.schema())))
    before = {t.data_file.file_path for t in table.scan().plan_files()}
    result = delete_rows(spark, table, "x >= 15")
    assert (result.deleted_rows, result.rewritten_files) == (5, 1)
    job, (new,) = _added_by_current(table, before)
    assert f"/data/{job}-" in new.file_path, new.file_path  # no job directory
    assert SPARK_ROW_METADATA not in (pq.read_metadata(new.file_path).metadata or {})
    assert_field_ids_everywhere(new.file_path)
    assert new.record_count == 15
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == rows[:15]
    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow().to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == rows[:15]
