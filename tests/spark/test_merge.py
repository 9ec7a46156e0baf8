"""MERGE through Spark: after every combination of clauses the table holds what SQL's MERGE
leaves, computed here independently in plain Python, as icepark's Arrow and Spark readers,
pyiceberg and DuckDB read it; copy-on-write and merge-on-read, v2 and v3, partitioned or not,
with null keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import load_catalog
from icepark.errors import CardinalityViolation, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spark.reader.read import read
from icepark.spark.rowlevel import changes
from icepark.spark.rowlevel.merge import MergeBuilder, merge
from icepark.spec.manifest import FileContent
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, STRING, NestedField, StructType
from icepark.table.table import Table
from tests.interop.peers import duckdb_connection

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField.optional(1, "id", LONG),
    NestedField.required(2, "cat", STRING),
    NestedField.optional(3, "x", LONG),
    NestedField.optional(4, "s", StructType((NestedField.optional(5, "a", INT),))))
COLUMNS = ("id", "cat", "x", "s")
Row = dict[str, Any]
TARGET: list[Row] = [
    *({"id": i, "cat": "abc"[i % 3], "x": i, "s": {"a": i % 4}} for i in range(24)),
    {"id": None, "cat": "a", "x": 100, "s": None},
    {"id": None, "cat": "b", "x": 101, "s": {"a": 1}}]
SOURCE_SCHEMA = "id long, cat string, x long, s struct<a:int>, op string"
SOURCE: list[Row] = [
    *({"id": i, "cat": "abc"[i % 3], "x": 1000 + i, "s": {"a": 9}, "op": "ud"[i % 2]}
      for i in range(10, 30, 2)),
    {"id": 3, "cat": "a", "x": None, "s": None, "op": "u"},
    {"id": None, "cat": "c", "x": 7, "s": None, "op": "u"}]


@dataclass(frozen=True)
class When:
    """A clause for icepark (SQL text) and for the reference (Python)."""

    when: str
    action: str
    sql: str | None
    test: Callable[[Row | None, Row | None], bool] | None
    assign: dict[str, tuple[str, Callable[[Row | None, Row | None], Any]]] | None = None

    def add(self, builder: MergeBuilder) -> MergeBuilder:
        values = {k: v[0] for k, v in (self.assign or {}).items()}
        match self.when, self.action:
            case "matched", "update":
                return (builder.when_matched_update(values, self.sql) if values
                        else builder.when_matched_update_all(self.sql))
            case "matched", "delete":
                return builder.when_matched_delete(self.sql)
            case "not matched", "insert":
                return (builder.when_not_matched_insert(values, self.sql) if values
                        else builder.when_not_matched_insert_all(self.sql))
            case "by source", "update":
                return builder.when_not_matched_by_source_update(values, self.sql)
            case _:
                return builder.when_not_matched_by_source_delete(self.sql)


def reference(target: list[Row], source: list[Row], clauses: list[When]) -> list[Row]:
    """SQL MERGE on ``t.id = s.id``, by the book: each pair, unmatched source row and
    unmatched target row takes the first clause of its kind whose condition holds."""
    out: list[Row] = []
    matched_sources: set[int] = set()

    def first(kind: str, t: Row | None, s: Row | None) -> When | None:
        return next((c for c in clauses if c.when == kind
                     and (c.test is None or c.test(t, s))), None)

    def assigned(c: When, t: Row | None, s: Row | None, base: Row) -> Row:
        if c.assign is None:
            assert s is not None
            return {k: s[k] for k in COLUMNS}
        return {**base, **{k: f(t, s) for k, (_, f) in c.assign.items()}}

    for t in target:
        pairs = [(i, s) for i, s in enumerate(source)
                 if t["id"] is not None and s["id"] == t["id"]]
        matched_sources.update(i for i, _ in pairs)
        if not pairs:
            c = first("by source", t, None)
            if c is None:
                out.append(t)
            elif c.action == "update":
                out.append(assigned(c, t, None, t))
            continue
        applied = [(s, c) for _, s in pairs if (c := first("matched", t, s)) is not None]
        assert len(applied) <= 1, "the reference data must not violate cardinality"
        if not applied:
            out.append(t)
        elif applied[0][1].action == "update":
            out.append(assigned(applied[0][1], t, applied[0][0], t))
    for i, s in enumerate(source):
        if i in matched_sources:
            continue
        c = first("not matched", None, s)
        if c is not None:
            empty = {"id": None, "cat": None, "x": None, "s": None}
            out.append(assigned(c, None, s, empty))
    return out


def _key(r: Row) -> tuple[Any, ...]:
    s = r["s"]
    return (r["id"] is None, r["id"] or 0, r["cat"], r["x"] is None, r["x"] or 0,
            None if s is None else s.get("a"))


def _sorted(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted(_key({k: r[k] for k in COLUMNS}) for r in rows)


def _make(tmp_path: Path, mode: str, version: int, partitioned: bool, name: str = "t"
          ) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build() if partitioned else None
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec,
                                 properties={"write.merge.mode": mode},
                                 format_version=version)  # type: ignore[arg-type]
    arrow_schema = to_arrow_schema(table.schema())
    for start in (0, 13):  # two appends: several files per partition
        table.append(pa.Table.from_pylist(TARGET[start:start + 13], schema=arrow_schema))
    return table


def _check(spark: SparkSession, table: Table, expected: list[Row], peers: bool) -> None:
    """The Arrow reader sees ``expected``; with ``peers``, so do the Spark reader, pyiceberg
    and DuckDB."""
    want = _sorted(expected)
    assert _sorted(table.scan().to_arrow().to_pylist()) == want
    if not peers:
        return
    assert _sorted([r.asDict(recursive=True) for r in read(spark, table).collect()]) == want
    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert _sorted(theirs.to_pylist()) == want
    with duckdb_connection() as con:
        got = con.execute("SELECT id, cat, x, s FROM iceberg_scan(?)",
                          [table.metadata_location]).fetchall()
    assert _sorted([dict(zip(COLUMNS, v, strict=True)) for v in got]) == want


ROUNDS: list[list[When]] = [
    [When("matched", "update", "s.op = 'u'", lambda t, s: s is not None and s["op"] == "u",
          {"x": ("s.x", lambda t, s: s and s["x"]),
           "s.a": ("t.s.a + 1", lambda t, s: t and {"a": None if t["s"] is None
                                                    or t["s"]["a"] is None
                                                    else t["s"]["a"] + 1})}),
     When("matched", "delete", "s.op = 'd'", lambda t, s: s is not None and s["op"] == "d"),
     When("not matched", "insert", "s.op <> 'd'",
          lambda t, s: s is not None and s["op"] != "d"),
     When("by source", "update", "t.cat = 'a'", lambda t, s: t is not None and t["cat"] == "a",
          {"x": ("t.x * 10", lambda t, s: None if t is None or t["x"] is None
                 else t["x"] * 10)})],
    [When("matched", "update", None, None),
     When("by source", "delete", "t.x < 5",
          lambda t, s: t is not None and t["x"] is not None and t["x"] < 5),
     When("not matched", "insert", None, None,
          {"id": ("s.id", lambda t, s: s and s["id"]), "cat": ("'z'", lambda t, s: "z")})],
]
"""Every clause kind, each with and without a condition, in two MERGEs (full outer joins);
the other join shapes are in the tests below (matched only: inner; upsert: right outer)."""


def _fix_nested(clauses: list[When]) -> list[When]:
    """The reference of a ``s.a`` assignment sets the whole struct."""
    fixed = []
    for c in clauses:
        if c.assign and "s.a" in c.assign:
            sql, f = c.assign["s.a"]
            assign = {k: v for k, v in c.assign.items() if k != "s.a"}
            assign["s"] = (sql, f)
            fixed.append(When(c.when, c.action, c.sql, c.test, assign))
        else:
            fixed.append(c)
    return fixed


@pytest.mark.parametrize(("mode", "version", "partitioned"), [
    ("copy-on-write", 2, True), ("merge-on-read", 2, False),
    # v3 merges in both modes run against the Java reference in make test
    # (tests/interop/test_java_reference_merge.py); these in make test-slow
    pytest.param("copy-on-write", 3, False, marks=pytest.mark.slow),
    pytest.param("merge-on-read", 3, True, marks=pytest.mark.slow)])
def test_clause_combinations_match_the_reference(spark: SparkSession, tmp_path: Path,
                                                 mode: str, version: int,
                                                 partitioned: bool) -> None:
    table = _make(tmp_path, mode, version, partitioned)
    source = spark.createDataFrame(SOURCE, SOURCE_SCHEMA)
    expected = list(TARGET)
    for number, clauses in enumerate(ROUNDS):
        builder = merge(spark, table, source, "t.id = s.id")
        for c in clauses:
            builder = c.add(builder)
        result = builder.execute()
        before = len(expected)
        expected = reference(expected, SOURCE, _fix_nested(clauses))
        assert result.snapshot_id == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
        assert result.inserted_rows - result.deleted_rows == len(expected) - before
        _check(spark, table, expected, peers=number == len(ROUNDS) - 1)
    if mode == "merge-on-read":
        deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
        assert deletes, "merge-on-read wrote no delete files"
        assert all(d.is_deletion_vector == (version == 3) for d in deletes)
    else:
        assert not [d for t in table.scan().plan_files() for d in t.delete_files]


def test_a_small_merge_on_read_writes_its_new_rows_in_one_file(spark: SparkSession,
                                                                tmp_path: Path) -> None:
    """The join's changed rows come in one partition per shuffle partition; a few new rows on
    an unpartitioned table are written as one file, as their size asks, not one per
    partition."""
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    source = spark.createDataFrame(SOURCE, SOURCE_SCHEMA).repartition(4)
    result = (merge(spark, table, source, "t.id = s.id").when_matched_update_all()
              .when_not_matched_insert_all().execute())
    assert result.added_data_files == 1 and result.inserted_rows > 1
    # a delete file per data file holding updated rows (write.delete.granularity=file)
    touched = {t.data_file.file_path for t in table.scan().plan_files() if t.delete_files}
    assert result.updated_rows > 1 and result.added_delete_files == len(touched) >= 1
    expected = reference(list(TARGET), SOURCE, [When("matched", "update", None, None),
                                                 When("not matched", "insert", None, None)])
    _check(spark, table, expected, peers=False)


def test_deletion_vector_is_merged_and_replaced(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 3, partitioned=False)
    expected = list(TARGET)
    for ids in ([0, 3], [6, 9]):  # the same data file twice: one vector, merged
        source = spark.createDataFrame([(i,) for i in ids], "id long")
        merge(spark, table, source, "t.id = s.id").when_matched_delete().execute()
        expected = [r for r in expected if r["id"] not in ids]
    vectors = [d for t in table.scan().plan_files() for d in t.delete_files]
    assert len(vectors) == 1 and vectors[0].record_count == 4
    assert vectors[0].content is FileContent.POSITION_DELETES
    _check(spark, table, expected, peers=True)


def test_update_keeps_row_ids_on_v3(spark: SparkSession, tmp_path: Path) -> None:
    for mode in ("copy-on-write", "merge-on-read"):
        table = _make(tmp_path, mode, 3, partitioned=True, name=mode.replace("-", "_"))
        lineage = ["_row_id", "_last_updated_sequence_number"]
        before = {r["x"]: (r["_row_id"], r["_last_updated_sequence_number"])
                  for r in read(spark, table, metadata_columns=lineage).collect()}
        source = spark.createDataFrame([(4, 44), (5, 55), (999, 999)], "id long, x long")
        result = (ips.merge(table, source, "t.id = s.id")
                  .when_matched_update({"x": "s.x"})
                  .when_not_matched_insert({"id": "s.id", "cat": "'n'", "x": "s.x"})
                  .execute())
        assert (result.updated_rows, result.inserted_rows) == (2, 1)
        sequence = table.current_snapshot().sequence_number  # type: ignore[union-attr]
        after = {r["x"]: (r["_row_id"], r["_last_updated_sequence_number"])
                 for r in read(spark, table, metadata_columns=lineage).collect()}
        assert after[44] == (before[4][0], sequence)
        assert after[55] == (before[5][0], sequence)
        assert after[999][1] == sequence and after[999][0] not in {v[0] for v in before.values()}
        for x, kept in before.items():
            if x not in (4, 5):  # moved by copy-on-write or not: lineage unchanged
                assert after[x] == kept, f"row {x} lost its lineage"


def test_upsert_updates_changed_rows_and_inserts_new_ones(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    rows = [(1, "b", 1, None), (2, "c", 2, 3), (77, "a", 77, None)]  # (1) changed, (2) same
    source = spark.createDataFrame(rows, "id long, cat string, x long, a int").selectExpr(
        "id", "cat", "x", "named_struct('a', a) AS s")
    result = ips.upsert(table, source, key=["id"])
    # id 1: s changes from {a: 1} to {a: null}; id 2: s {a: 2} to {a: 3}; 77 is new
    assert (result.updated_rows, result.inserted_rows, result.deleted_rows) == (2, 1, 0)
    again = ips.upsert(table, source, key=["id"])
    assert again.snapshot_id is None and again.updated_rows == 0  # nothing differs now
    expected = [r for r in TARGET if r["id"] not in (1, 2)] + [
        {"id": 1, "cat": "b", "x": 1, "s": {"a": None}},
        {"id": 2, "cat": "c", "x": 2, "s": {"a": 3}},
        {"id": 77, "cat": "a", "x": 77, "s": {"a": None}}]
    _check(spark, table, expected, peers=False)
    with pytest.raises(CardinalityViolation):
        ips.upsert(table, source.union(source), key=["id"])
    empty = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "wh")).create_table("db.empty", SCHEMA)
    first = ips.upsert(empty, source, key=["id"])  # a table without a snapshot yet
    assert (first.inserted_rows, first.updated_rows) == (3, 0)
    assert sorted(r["id"] for r in empty.scan().to_arrow().to_pylist()) == [1, 2, 77]


def _counts(target: list[Row], source: list[Row], clauses: list[When]) -> tuple[int, int, int]:
    """(inserted, updated, deleted) rows of a MERGE on ``t.id = s.id``, by the book."""
    inserted = updated = deleted = 0
    matched: set[int] = set()
    for t in target:
        for i, s in enumerate(source):
            if t["id"] is None or s["id"] != t["id"]:
                continue
            matched.add(i)
            c = next((c for c in clauses if c.when == "matched"
                      and (c.test is None or c.test(t, s))), None)
            updated += c is not None and c.action == "update"
            deleted += c is not None and c.action == "delete"
    inserted = sum(1 for i, s in enumerate(source) if i not in matched and any(
        c.when == "not matched" and (c.test is None or c.test(None, s)) for c in clauses))
    return inserted, updated, deleted


_UPDATE_U = When("matched", "update", "s.op = 'u'", lambda t, s: s is not None and s["op"] == "u",
                 {"x": ("s.x", lambda t, s: s and s["x"])})
_DELETE = When("matched", "delete", None, None)
_INSERT = When("not matched", "insert", None, None)


@pytest.mark.parametrize(("clauses", "version"), [
    ([_UPDATE_U, _INSERT], 2), ([_DELETE, _INSERT], 3), ([_UPDATE_U, _DELETE], 2),
    ([_UPDATE_U, _DELETE, _INSERT], 3)], ids=["update+insert", "delete+insert",
                                              "update+delete", "all three"])
def test_merge_on_read_is_counted_by_the_jobs_that_write_it(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        clauses: list[When], version: int) -> None:
    """Without a ``not matched by source`` clause, a merge-on-read MERGE knows its source's
    size from its key bounds and runs no counting job before writing: the totals come from
    the files written (and, for all three kinds at once, a count run beside them)."""
    table = _make(tmp_path, "merge-on-read", version, partitioned=False)

    def counted(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the changes were counted before they were written")

    monkeypatch.setattr(changes, "_count", counted)
    builder = merge(spark, table, spark.createDataFrame(SOURCE, SOURCE_SCHEMA), "t.id = s.id")
    for c in clauses:
        builder = c.add(builder)
    result = builder.execute()
    assert (result.inserted_rows, result.updated_rows, result.deleted_rows) == \
        _counts(TARGET, SOURCE, clauses)
    _check(spark, table, reference(TARGET, SOURCE, clauses), peers=False)
    deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
    assert deletes and all(d.is_deletion_vector == (version == 3) for d in deletes)


def test_merge_on_read_counted_by_its_writes_fails_on_a_row_matched_twice(
        spark: SparkSession, tmp_path: Path) -> None:
    """The position delete job finds a target row an update applies to twice: a cardinality
    violation naming the file and position, and nothing written or committed (the new rows
    written beside it are deleted too)."""
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    location = table.metadata_location
    source = spark.createDataFrame([(5, 1), (5, 2), (500, 3)], "id long, x long")
    builder = (merge(spark, table, source, "t.id = s.id").when_matched_update({"x": "s.x"})
               .when_not_matched_insert({"id": "s.id", "cat": "'n'", "x": "s.x"}))
    with pytest.raises(CardinalityViolation, match=r"\.parquet \(e\.g\. the row at position "
                                                   r"\d+\) with more than one source row"):
        builder.execute()
    # the failed job leaves only its empty abort mark, for tasks that might still run
    left = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} - files
    assert [(p.suffix, p.stat().st_size) for p in left] == [(".aborted", 0)]
    assert table.refresh().metadata_location == location


def test_merge_on_read_counts_first_when_delete_files_span_files(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """v2 position deletes of ``partition`` granularity do not say which data files they
    cover: the changes are counted first, and only the files that change get deletes."""
    table = _make(tmp_path, "merge-on-read", 2, partitioned=True)
    table.set_properties({"write.delete.granularity": "partition"})
    calls: list[int] = []
    count = changes._count

    def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return count(*args, **kwargs)

    monkeypatch.setattr(changes, "_count", spied)
    clauses = [_UPDATE_U, _INSERT]
    builder = merge(spark, table, spark.createDataFrame(SOURCE, SOURCE_SCHEMA), "t.id = s.id")
    for c in clauses:
        builder = c.add(builder)
    result = builder.execute()
    assert calls == [1]
    assert (result.inserted_rows, result.updated_rows, result.deleted_rows) == \
        _counts(TARGET, SOURCE, clauses)
    _check(spark, table, reference(TARGET, SOURCE, clauses), peers=False)


def test_merge_on_read_that_changes_nothing_commits_nothing(spark: SparkSession,
                                                            tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    location = table.metadata_location
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    source = spark.createDataFrame([(1000, 1), (1001, 2)], "id long, x long")
    result = merge(spark, table, source, "t.id = s.id").when_matched_update(
        {"x": "s.x"}, "s.x = 1").when_matched_delete().execute()
    assert result.snapshot_id is None
    assert (result.inserted_rows, result.updated_rows, result.deleted_rows) == (0, 0, 0)
    assert table.refresh().metadata_location == location
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} == files


def test_cardinality_violation_commits_and_leaves_nothing(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    table = _make(tmp_path, "copy-on-write", 2, partitioned=False)
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    location = table.metadata_location
    source = spark.createDataFrame([(5, 1), (5, 2)], "id long, x long")
    with pytest.raises(CardinalityViolation, match="more than one source row"):
        merge(spark, table, source, "t.id = s.id").when_matched_update({"x": "s.x"}).execute()
    # a condition true for only one of the two source rows: no violation
    result = (merge(spark, table, source, "t.id = s.id")
              .when_matched_update({"x": "s.x"}, condition="s.x = 2").execute())
    assert result.updated_rows == 1
    table2 = _make(tmp_path, "merge-on-read", 3, partitioned=False, name="t2")
    with pytest.raises(CardinalityViolation):
        merge(spark, table2, source, "t.id = s.id").when_matched_delete().execute()
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()
            and "t2" not in str(p)} - files  # only the successful merge's files are new
    assert location != table.metadata_location


def test_schema_and_partition_evolution(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 2, partitioned=True)
    table.update_schema().add_column("note", STRING).rename_column("x", "xx").commit()
    table.update_spec().add_field("id", "bucket[4]").commit()
    source = spark.createDataFrame([(1, 10, "one"), (50, 5, "fifty")],
                                   "id long, xx long, note string")
    (ips.merge(table, source, "t.id = s.id")
     .when_matched_update({"xx": "s.xx", "note": "s.note"})
     .when_not_matched_insert({"id": "s.id", "cat": "'b'", "xx": "s.xx", "note": "s.note"})
     .execute())
    got = {r["id"]: (r["xx"], r["note"]) for r in read(spark, table).collect()}
    assert got[1] == (10, "one") and got[50] == (5, "fifty") and got[2] == (2, None)
    arrow = {r["id"]: (r["xx"], r["note"]) for r in table.scan().to_arrow().to_pylist()}
    assert arrow == got


def test_bad_input_fails_before_any_file(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "merge-on-read", 2, partitioned=False)
    v1 = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                      warehouse=str(tmp_path / "wh")).create_table(
        "db.v1", SCHEMA, format_version=1, properties={"write.merge.mode": "merge-on-read"})
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    source = spark.createDataFrame([(1, "x", 5)], "id long, name string, x long")

    def run(b: MergeBuilder) -> None:
        b.execute()

    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: run(merge(spark, table, source, "t.id = s.nope").when_matched_delete()),
         "cannot be resolved"),
        (lambda: run(merge(spark, table, source, "t.id = s.id")
                     .when_matched_update({"nope": "s.x"})), "no column 'nope'"),
        (lambda: run(merge(spark, table, source, "t.id = s.id")
                     .when_matched_update({"x": "s.name"})), "string"),
        (lambda: run(merge(spark, table, source, "t.id = s.id")
                     .when_matched_update({"x": "s.zzz"})), "zzz"),
        (lambda: run(merge(spark, table, source, "t.id = s.id").when_matched_update_all()),
         "no column"),
        (lambda: run(merge(spark, table, source, "t.id = s.id")
                     .when_not_matched_insert({"id": "s.id"})), "cat"),
        (lambda: merge(spark, table, source, "t.id = s.id").when_matched_delete()
         .when_matched_delete("s.x > 1"), "only the last"),
        (lambda: run(merge(spark, v1, source, "t.id = s.id").when_matched_delete()),
         "v1"),
        (lambda: run(merge(spark, table, source, "t.id = s.id")), "at least one"),
        (lambda: ips.upsert(table, source), "needs a key"),
        (lambda: ips.upsert(table, source, key=["name"]), "not a column of the table"),
    ]
    for case, message in cases:
        with pytest.raises(ValidationError, match=message):
            case()
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} == files


def test_null_in_required_column_fails_and_deletes_its_files(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    table = _make(tmp_path, "copy-on-write", 2, partitioned=False)
    files = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    location = table.metadata_location
    source = spark.createDataFrame([(1, None), (100, None)], "id long, cat string")
    with pytest.raises(Exception, match="cat"):
        (merge(spark, table, source, "t.id = s.id").when_matched_update({"cat": "s.cat"})
         .execute())
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} == files
    assert table.refresh().metadata_location == location


def test_source_key_bounds_prune_the_target(spark: SparkSession, tmp_path: Path) -> None:
    table = _make(tmp_path, "copy-on-write", 2, partitioned=True)
    builder = merge(spark, table, spark.createDataFrame([(20,), (22,)], "id long"),
                    "t.id = s.id AND t.cat = 'c'").when_matched_delete()
    changes = builder._changes(table.metadata, "main")
    assert {f.partition for f in changes.files} == {("c",)}
    assert changes.rows.count() == 1  # id 20 is in partition c; 22 is in b
    empty = merge(spark, table, spark.createDataFrame([(None,)], "id long"), "t.id = s.id")
    assert empty.when_matched_delete()._changes(
        table.metadata, "main").files == ()


def _concurrently(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> None:
    """Run ``action`` (another writer's commit) once, after the MERGE read the table and
    before it commits: when it writes its first data file."""
    from icepark.spark.rowlevel import changes  # noqa: PLC0415 - the module patched

    real = getattr(changes, "write_data_files")  # noqa: B009 - not in its __all__
    done: list[bool] = []

    def write_then_race(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(changes, "write_data_files", write_then_race)


def _other_writer(tmp_path: Path, name: str = "t") -> Table:
    return load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                        warehouse=str(tmp_path / "wh")).load_table(f"db.{name}")


@pytest.mark.parametrize("mode", [pytest.param("copy-on-write", marks=pytest.mark.slow),
                                  "merge-on-read"])
def test_isolation_levels(spark: SparkSession, tmp_path: Path, mode: str,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    table = _make(tmp_path, mode, 2, partitioned=False)
    arrow_schema = to_arrow_schema(table.schema())
    schema = "id long, cat string, x long"
    source = spark.createDataFrame([(5, "c", 50), (100, "a", 1)], schema)

    def append(ids: list[int]) -> Callable[[], object]:
        return lambda: _other_writer(tmp_path).append(pa.Table.from_pylist(
            [{"id": i, "cat": "a", "x": -1, "s": None} for i in ids], schema=arrow_schema))

    def upsert() -> MergeBuilder:
        return (merge(spark, table.refresh(), source, "t.id = s.id")
                .when_matched_update({"x": "s.x"}).when_not_matched_insert_all())

    # serializable (the default): a concurrent append of a row the merge could match fails it
    _concurrently(monkeypatch, append([100]))
    with pytest.raises(ValidationError, match="conflicting"):
        upsert().execute()
    assert sorted(r["x"] for r in read(spark, table.refresh()).collect()
                  if r["id"] in (5, 100)) == [-1, 5]  # the concurrent row; the merge's none
    # ... but one outside the source's keys (id 1000 > the bound 100) does not
    _concurrently(monkeypatch, append([1000]))
    assert upsert().execute().updated_rows == 2  # 5, and 100 that the failed race added
    # snapshot isolation: a concurrent append of matching data is allowed
    table.update_properties().set("write.merge.isolation-level", "snapshot").commit()
    source = spark.createDataFrame([(6, "a", 60), (101, "a", 1)], schema)
    _concurrently(monkeypatch, append([101]))
    result = upsert().execute()
    assert (result.updated_rows, result.inserted_rows) == (1, 1)
    assert sorted(r["x"] for r in read(spark, table.refresh()).collect()
                  if r["id"] == 101) == [-1, 1]
    # both levels: a concurrent delete of rows the merge rewrites or deletes fails it
    source = spark.createDataFrame([(7, "b", 70)], schema)
    _concurrently(monkeypatch, lambda: ips.delete(spark, _other_writer(tmp_path), "id = 7"))
    with pytest.raises(ValidationError):
        upsert().execute()
    assert 7 not in {r["id"] for r in read(spark, table.refresh()).collect()}
