"""Format version 3 with the Java reference runtime (Apache Iceberg 1.10.2 on Spark 3.5), both
ways: row lineage and deletion vectors.

Spec (v3), *Row Lineage*: "an Iceberg table must track row lineage fields for all newly
created rows. Engines must maintain the ``next-row-id`` table field and the following
row-level fields when writing data files: ``_row_id`` ... ``_last_updated_sequence_number``".
*Deletion Vectors*: "At most one deletion vector is allowed per data file in a snapshot. If a
DV is written for a data file, it must replace all previously written position delete files".

After every step, the reference's ``SELECT _row_id, _last_updated_sequence_number, *`` equals
what icepark's Arrow reader (``scan().to_arrow(metadata_columns)``) and Spark reader
(``ips.read(metadata_columns=...)``) return, row for row; the two engines' ``data_files`` and
``delete_files`` metadata tables list the same files (data files with their inherited
``first_row_id``; deletion vectors with ``content``, ``file_format`` PUFFIN,
``referenced_data_file``, ``content_offset``, ``content_size_in_bytes``, ``record_count``);
the reference's ``position_deletes`` table lists the positions icepark decodes from the same
vectors; and the reference's Java API gives the snapshots' ``first-row-id`` and
``added-rows`` and the table's ``next-row-id`` that icepark reads (its ``snapshots`` table
does not show them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.errors import ValidationError
from icepark.io.arrow.deletes import DeleteCache
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spark.rowlevel import delete_tasks
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField
from icepark.table.inspect.tables import metadata_table
from icepark.table.table import Table
from tests.interop.conftest import Shared
from tests.interop.test_java_reference import append, by_id, theirs

pytestmark = pytest.mark.spark

LINEAGE = ["_row_id", "_last_updated_sequence_number"]
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING),
                   NestedField.optional(3, "v", DOUBLE))
MERGE_ON_READ = {"write.delete.mode": "merge-on-read"}
ROW_GROUPS_OF_5 = ("'write.parquet.row-group-size-bytes'='1', "
                   "'write.parquet.row-group-check-min-record-count'='5', "
                   "'write.parquet.row-group-check-max-record-count'='5', "
                   "'read.split.target-size'='1'")
"""The reference's Parquet files get row groups of 5 rows, and scans split at each: positions
(deletion vectors, ``_row_id``) count the rows of the row groups a read skips."""


def rows_of(ids: range | list[int]) -> list[dict[str, Any]]:
    return [{"id": i, "k": "abc"[i % 3], "v": i / 4} for i in ids]


# ------------------------------------------------------------------------------ reading


def reference_rows(shared: Shared, name: str, where: str = "true") -> list[dict[str, Any]]:
    """The reference's rows with its row lineage metadata columns."""
    return theirs(shared, f"SELECT _row_id, _last_updated_sequence_number, * FROM "
                          f"{shared.ref(name)} WHERE {where}")


def arrow_rows(table: Table, where: str = "true") -> list[dict[str, Any]]:
    return by_id(table.refresh().scan(where).to_arrow(LINEAGE).to_pylist())


def spark_rows(spark: SparkSession, table: Table, where: str | None = None
               ) -> list[dict[str, Any]]:
    return by_id(ips.read(spark, table.refresh(), where, metadata_columns=LINEAGE).toArrow()
                 .to_pylist())


def lineage(rows: list[dict[str, Any]]) -> dict[int, tuple[int | None, int | None]]:
    """``_row_id`` and ``_last_updated_sequence_number`` by ``id``."""
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


def agree(spark: SparkSession, shared: Shared, name: str, where: str | None = None
          ) -> list[dict[str, Any]]:
    """The rows (with lineage) every reader returns, after asserting that they are the same
    in the reference, icepark's Arrow reader and icepark's Spark reader (also for the rows
    matching ``where``), that no two rows share a ``_row_id``, and that both engines see the
    same files, vectors, positions and lineage metadata."""
    table = shared.ours.load_table(shared.ident(name))
    expected = reference_rows(shared, name)
    assert arrow_rows(table) == expected
    assert spark_rows(spark, table) == expected
    if where is not None:
        some = reference_rows(shared, name, where)
        assert 0 < len(some) < len(expected)
        assert some == [r for r in expected if r in some]
        assert arrow_rows(table, where) == some
        assert spark_rows(spark, table, where) == some
    row_ids = [r["_row_id"] for r in expected if r["_row_id"] is not None]
    assert len(set(row_ids)) == len(row_ids)
    assert reference_files(shared, name) == our_files(table)
    assert reference_positions(shared, name) == our_positions(table)
    assert reference_lineage(shared, name) == our_lineage(table)
    return expected


# ------------------------------------------------------------------------ file metadata

_FILE_COLUMNS = ("content", "file_path", "file_format", "spec_id", "record_count", "first_row_id",
                 "referenced_data_file", "content_offset", "content_size_in_bytes")


def reference_files(shared: Shared, name: str) -> dict[str, list[tuple[Any, ...]]]:
    """The reference's ``data_files`` and ``delete_files`` metadata tables (the live files of
    the current snapshot)."""
    return {kind: sorted(tuple(r[c] for c in _FILE_COLUMNS) for r in shared.reference.rows(
        f"SELECT {', '.join(_FILE_COLUMNS)} FROM {shared.ref(name)}.{kind}"))
        for kind in ("data_files", "delete_files")}


def our_files(table: Table) -> dict[str, list[tuple[Any, ...]]]:
    """icepark's metadata tables of the same names."""
    return {kind: sorted(tuple(r[c] for c in _FILE_COLUMNS) for r in metadata_table(
        table.refresh(), kind).select(list(_FILE_COLUMNS)).to_pylist())
        for kind in ("data_files", "delete_files")}


def live_entries(table: Table) -> list[DataFile]:
    """The live files of the current snapshot, data files with their inherited first row ID."""
    table = table.refresh()
    specs = {s.spec_id: s for s in table.metadata.partition_specs}
    return [e.data_file for m in snapshot_manifests(table.io, table.current_snapshot())
            for e in read_manifest(table.io, m, specs_by_id=specs, discard_deleted=True)]


def reference_positions(shared: Shared, name: str) -> list[tuple[Any, ...]]:
    """Every deleted position: (data file, position, delete file, offset of its vector)."""
    found = shared.reference.rows(f"SELECT file_path, pos, delete_file_path, content_offset "
                                  f"FROM {shared.ref(name)}.position_deletes")
    return sorted((r["file_path"], r["pos"], r["delete_file_path"], r["content_offset"])
                  for r in found)


def our_positions(table: Table) -> list[tuple[Any, ...]]:
    """The same, from icepark's decoding of the live deletion vectors and position deletes."""
    table = table.refresh()
    cache = DeleteCache(table.io, table.schema())
    out = []
    for d in live_entries(table):
        if d.content is not FileContent.POSITION_DELETES:
            continue
        for path, positions in cache.positions(d).items():
            out += [(path, int(p), d.file_path, d.content_offset) for p in positions]
    return sorted(out)


def reference_lineage(shared: Shared, name: str) -> dict[str, Any]:
    """The table's ``next-row-id`` and each snapshot's ``first-row-id`` and ``added-rows``
    through the reference's Java API."""
    result: dict[str, Any] = shared.reference.python(
        "t = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable("
        f"spark._jsparkSession, '{shared.ref(name)}')\n"
        "result = {'next_row_id': t.operations().current().nextRowId(), 'snapshots': "
        "[(s.snapshotId(), s.firstRowId(), s.addedRows()) for s in t.snapshots()]}\n")
    return result


def our_lineage(table: Table) -> dict[str, Any]:
    table = table.refresh()
    return {"next_row_id": table.metadata.next_row_id,
            "snapshots": [(s.snapshot_id, s.first_row_id, s.added_rows)
                          for s in table.snapshots()]}


def vectors(table: Table) -> dict[str, DataFile]:
    """The live deletion vectors by the data file each references (one each, asserted)."""
    live = live_entries(table)
    found = [f for f in live if f.is_deletion_vector]
    by_file = {f.referenced_data_file: f for f in found if f.referenced_data_file}
    assert len(by_file) == len(found), "two deletion vectors for one data file"
    data = {f.file_path: f for f in live if f.content is FileContent.DATA}
    for path, dv in by_file.items():  # "equal to the deletion vector's partition"
        if path in data:
            assert (dv.spec_id, dv.partition) == (data[path].spec_id, data[path].partition)
    return by_file


def data_paths(table: Table) -> set[str]:
    return {f.file_path for f in live_entries(table) if f.content is FileContent.DATA}


# ----------------------------------------------------------------------- icepark writes


@pytest.mark.parametrize("partitioned", [
    pytest.param(True, id="partitioned-spark-writer"),
    pytest.param(False, id="unpartitioned-icepark-writer", marks=pytest.mark.slow)])
def test_the_reference_reads_icepark_v3_deletion_vectors_and_row_lineage(
        spark: SparkSession, shared: Shared, partitioned: bool) -> None:
    """Arrow and Spark appends, merge-on-read deletes (deletion vectors; a second delete on the
    same files merges the first vectors; a delete that also removes whole files drops their
    vectors; a vector for a data file of an older partition spec), then a copy-on-write delete
    that moves rows with their lineage (by Spark's Parquet writer, or icepark's; the
    unpartitioned table's appends also merge manifests)."""
    spec = PartitionSpecBuilder(SCHEMA).identity("k").build() if partitioned else None
    properties = {**MERGE_ON_READ, "write.spark.native-writer.enabled": str(partitioned)}
    if not partitioned:  # appends merge manifests: existing files keep their first_row_id
        properties["commit.manifest.min-count-to-merge"] = "2"
    table = shared.ours.create_table(shared.ident("t"), SCHEMA, partition_spec=spec,
                                     properties=properties, format_version=3)
    table = append(table, rows_of(range(30)))
    ips.write(spark.createDataFrame(rows_of(range(30, 50)), "id long, k string, v double")
              .repartition(2), table.refresh())
    rows = agree(spark, shared, "t")
    assert sorted(r["_row_id"] for r in rows) == list(range(50))
    # a merged manifest is a new one: its range counts its existing rows again ("based on
    # the added_rows_count and existing_rows_count"), while those rows keep their IDs
    assert shared.ours.load_table(shared.ident("t")).metadata.next_row_id == (
        50 if partitioned else 30 + 50)
    known = lineage(rows)
    gone: set[int] = set()

    def delete(ids: set[int], where: str | None = None, *, every_reader: bool = True) -> None:
        """Delete rows (by ``where`` or by id) with icepark; the others keep their lineage (in
        every reader, or, between two such checks, in icepark's Arrow reader)."""
        ips.delete(spark, table.refresh(), where or f"id IN ({', '.join(map(str, sorted(ids)))})")
        gone.update(ids)
        rows = agree(spark, shared, "t") if every_reader else arrow_rows(table)
        assert lineage(rows) == {i: v for i, v in known.items() if i not in gone}

    delete({i for i in range(50) if i % 10 == 1},  # vectors on several data files
           every_reader=False)
    first = vectors(table)
    assert first and all(v.record_count >= 1 for v in first.values())

    delete({i for i in range(50) if i % 10 == 4})  # each vector replaced by a merged one
    second = vectors(table)
    assert set(second) == set(first)
    assert sum(v.record_count for v in second.values()) == len(gone)
    assert not {v.entry_key for v in second.values()} & {v.entry_key for v in first.values()}

    # a partial file and (partitioned) whole files whose vectors go with them
    delete({i for i in range(50) if i % 3 == 2 or i == 7}, "k = 'c' OR id = 7",
           every_reader=False)  # (every reader checks it with the next append)
    assert set(vectors(table)) <= data_paths(table)

    # a vector keeps the spec and partition of its data file, written before the evolution
    with table.refresh().update_spec() as evolve:
        evolve.add_field("id", "bucket[2]")
    next_row_id = table.refresh().metadata.next_row_id
    assert next_row_id is not None
    table = append(table, rows_of(range(50, 56)))
    known = lineage(agree(spark, shared, "t"))
    assert sorted(v for i, v in known.items() if i >= 50) == [
        (next_row_id + n, table.metadata.last_sequence_number) for n in range(6)]
    delete({0, 51, 53}, every_reader=False)  # (and with the copy-on-write delete next)
    assert {v.spec_id for v in vectors(table).values()} == {0, 1}

    # copy-on-write: the rewritten file's rows keep their _row_id and, not modified, their
    # _last_updated_sequence_number; its vector goes with it
    table = table.refresh().set_properties({"write.delete.mode": "copy-on-write"})
    before = data_paths(table)
    delete({12})
    assert data_paths(table) != before
    assert set(vectors(table)) <= data_paths(table)

    # new rows get new row IDs after all of the above
    next_row_id = table.refresh().metadata.next_row_id
    assert next_row_id is not None
    table = append(table, rows_of([100, 101]))
    new = lineage(agree(spark, shared, "t"))
    assert {i: new.pop(i) for i in (100, 101)} == {
        100: (next_row_id, table.metadata.last_sequence_number),
        101: (next_row_id + 1, table.metadata.last_sequence_number)}
    assert new == {i: v for i, v in known.items() if i not in gone}


@pytest.mark.slow  # suite time: the other direction runs in make test
def test_the_reference_reads_a_v2_table_with_position_deletes_upgraded_to_v3(
        spark: SparkSession, shared: Shared) -> None:
    """Position delete files of a v2 table (one for two data files, one for a single file),
    then the upgrade to v3 (*Row Lineage for Upgraded Tables*: "values for ``_row_id`` are
    read as null for all rows"), then merge-on-read deletes, one data file at a time: its
    deletion vector holds the deletes of the old position delete files too ("Existing position
    deletes must be written to delete vectors when updating the position deletes for a data
    file"), the single-file one goes, the one for two files stays while the other file still
    needs it (reads mix a vector and a position delete file), and the first snapshot after the
    upgrade assigns row IDs to the existing files ("all data manifests must be assigned a
    ``first_row_id``")."""
    table = shared.ours.create_table(shared.ident("u"), SCHEMA, properties=MERGE_ON_READ,
                                     format_version=2)
    table = append(table, rows_of(range(20)))
    (first,) = data_paths(table)
    table = append(table, rows_of(range(20, 40)))
    (second,) = data_paths(table) - {first}
    ips.delete(spark, table.refresh(), "id IN (3, 23)")  # one file for both data files
    ips.delete(spark, table.refresh(), "id = 5")  # a file for one data file
    old = [f for f in live_entries(table) if f.is_delete]
    assert len(old) == 2 and not any(f.is_deletion_vector for f in old)
    (shared_file,) = [f.file_path for f in old if f.record_count == 2]
    gone = {3, 5, 23}
    assert {r["id"] for r in theirs(shared, f"SELECT * FROM {shared.ref('u')}")} == set(
        range(40)) - gone

    table = table.refresh().upgrade_format_version(3)
    assert table.metadata.next_row_id == 0
    rows = agree(spark, shared, "u")
    present = set(range(40))
    assert {r["id"] for r in rows} == present - gone
    assert {(r["_row_id"], r["_last_updated_sequence_number"]) for r in rows} == {(None, None)}

    def delete(ids: set[int]) -> dict[str, int]:
        """Delete ``ids`` with icepark: the vectors' record counts by data file after it."""
        ips.delete(spark, table.refresh(), f"id IN ({', '.join(map(str, sorted(ids)))})")
        gone.update(ids)
        rows = agree(spark, shared, "u")
        assert {r["id"] for r in rows} == present - gone
        assert None not in {r["_row_id"] for r in rows}
        return {path: v.record_count for path, v in vectors(table).items()}

    def position_delete_files() -> list[str]:
        return [f.file_path for f in live_entries(table)
                if f.is_delete and not f.is_deletion_vector]

    assert delete({7}) == {first: 3}  # 3 and 5 from the old files
    assert position_delete_files() == [shared_file]  # the second file still needs it
    assert shared.ours.load_table(shared.ident("u")).metadata.next_row_id == 40
    table = append(table, rows_of(range(40, 45)))
    present.update(range(40, 45))
    (third,) = data_paths(table) - {first, second}
    assert delete({27, 41}) == {first: 3, second: 2, third: 1}
    assert position_delete_files() == [shared_file]  # kept: it holds deletes of two files
    assert delete({9}) == {first: 4, second: 2, third: 1}


# ----------------------------------------------------------------- the reference writes


@pytest.mark.parametrize("mode", ["merge-on-read",
                                  pytest.param("copy-on-write", marks=pytest.mark.slow)])
def test_icepark_reads_the_lineage_and_deletion_vectors_the_reference_writes(
        spark: SparkSession, shared: Shared, mode: str) -> None:
    """DELETE, UPDATE and MERGE in each row-level mode (merge-on-read: deletion vectors, merged
    by each later change of the same file), then ``rewrite_data_files`` and
    ``rewrite_position_delete_files``: icepark's readers return the reference's rows and
    lineage. An UPDATE keeps a row's ``_row_id`` and gives it the update's sequence number
    ("the ``_last_updated_sequence_number`` field must be set to ``null`` (so that the
    modification's sequence number replaces the current value)"); a compaction keeps both."""
    t = shared.ref("r")
    shared.reference.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, k STRING, v DOUBLE) USING iceberg "
        f"PARTITIONED BY (k) TBLPROPERTIES ('format-version'='3', "
        f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', "
        f"'write.merge.mode'='{mode}', {ROW_GROUPS_OF_5})")
    shared.reference.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, IF(id < 20, 'a', 'b'), "
                         "id / 4 FROM range(0, 40)")
    table = shared.ours.load_table(shared.ident("r"))
    assert {len(f.split_offsets or ()) for f in live_entries(table)} == {4}
    rows = agree(spark, shared, "r", "id >= 12")
    assert sorted(r["_row_id"] for r in rows) == list(range(40))
    inserted = lineage(rows)

    shared.reference.sql(f"DELETE FROM {t} WHERE id % 5 = 0")
    rows = agree(spark, shared, "r", "id >= 12")
    assert lineage(rows) == {i: v for i, v in inserted.items() if i % 5}

    shared.reference.sql(f"UPDATE {t} SET v = -v WHERE id % 4 = 1")
    rows = agree(spark, shared, "r", "id >= 12")
    updated = shared.ours.load_table(shared.ident("r")).metadata.last_sequence_number
    assert lineage(rows) == {i: (row_id, updated if i % 4 == 1 else seq)
                             for i, (row_id, seq) in inserted.items() if i % 5}

    shared.reference.sql(
        f"MERGE INTO {t} USING (SELECT id, 'c' AS k FROM range(35, 45)) s ON {t}.id = s.id "
        f"WHEN MATCHED THEN UPDATE SET k = s.k WHEN NOT MATCHED THEN INSERT (id, k, v) "
        f"VALUES (s.id, s.k, 0.5)")
    shared.reference.sql(f"DELETE FROM {t} WHERE id IN (2, 22)")
    rows = agree(spark, shared, "r", "id >= 12")
    assert {r["id"] for r in rows} == {i for i in range(40) if i % 5 and i not in (2, 22)} | {
        35, *range(40, 45)}  # the deleted 35 comes back
    assert len({r["_row_id"] for r in rows}) == len(rows)
    before = lineage(rows)
    if mode == "merge-on-read":
        assert vectors(shared.ours.load_table(shared.ident("r")))

    shared.reference.sql(f"CALL ref.system.rewrite_data_files(table => '{shared.namespace}.r', "
                         "options => map('min-input-files', '1'))")
    rows = agree(spark, shared, "r", "id >= 12")
    assert lineage(rows) == before
    assert not vectors(shared.ours.load_table(shared.ident("r")))


def test_icepark_reads_a_reference_v2_table_upgraded_to_v3(spark: SparkSession,
                                                           shared: Shared) -> None:
    """The reference's position delete files (v2), its upgrade to v3, its
    ``rewrite_position_delete_files`` (which on v3 turns them into one deletion vector per
    data file), its deletes and updates merging those vectors and icepark's merging the
    reference's: both engines read the same rows and lineage after each."""
    t = shared.ref("up")
    shared.reference.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, k STRING, v DOUBLE) USING iceberg "
        f"PARTITIONED BY (k) TBLPROPERTIES ('format-version'='2', "
        f"'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    shared.reference.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, IF(id < 15, 'a', 'b'), "
                         "id / 4 FROM range(0, 30)")
    shared.reference.sql(f"DELETE FROM {t} WHERE id IN (1, 2, 20)")
    shared.reference.sql(f"DELETE FROM {t} WHERE id = 3")
    table = shared.ours.load_table(shared.ident("up"))
    # position delete files, one per data file (the second delete merged the file's first)
    assert [f.file_format for f in live_entries(table) if f.is_delete] == [FileFormat.PARQUET] * 2
    shared.reference.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')")
    rows = agree(spark, shared, "up")
    assert {(r["_row_id"], r["_last_updated_sequence_number"]) for r in rows} == {(None, None)}
    gone = {1, 2, 3, 20}
    steps: list[tuple[Callable[[], object], set[int]]] = [
        (lambda: shared.reference.sql(
            f"CALL ref.system.rewrite_position_delete_files(table => '{shared.namespace}.up', "
            "options => map('rewrite-all', 'true'))"), set()),
        (lambda: shared.reference.sql(f"DELETE FROM {t} WHERE id IN (4, 21)"), {4, 21}),
        (lambda: ips.delete(spark, table.refresh(), "id IN (5, 22)"), {5, 22}),
        (lambda: shared.reference.sql(f"UPDATE {t} SET v = -1 WHERE id IN (6, 23)"), set()),
    ]
    for step, deleted in steps:
        step()
        gone |= deleted
        rows = agree(spark, shared, "up")
        assert {r["id"] for r in rows} == set(range(30)) - gone
        found = vectors(table)
        assert len(found) == 2  # one for each data file of the insert
        assert not [f for f in live_entries(table) if f.is_delete and not f.is_deletion_vector]


# ------------------------------------------------------------------ alternating writers


@pytest.mark.slow  # suite time: each engine's vectors are read by the other in make test
def test_alternating_v3_writers_merge_each_others_deletion_vectors(
        spark: SparkSession, shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference and icepark take turns on one v3 table: each merges the other's
    deletion vector when it deletes from the same data file again ("Writers must ensure that
    there is at most one deletion vector per data file and must merge new deletes with
    existing vectors"), and icepark's copy-on-write moves rows the reference updated with the
    update's sequence number. After every step both read the same rows and lineage, rows not
    changed keep theirs, an updated row keeps its ``_row_id`` with the update's sequence
    number, ``next-row-id`` never goes back and no two rows share a ``_row_id``."""
    t = shared.ref("alt")
    shared.reference.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, k STRING, v DOUBLE) USING "
                         "iceberg PARTITIONED BY (k) TBLPROPERTIES ('format-version'='3', "
                         "'write.delete.mode'='merge-on-read', "
                         "'write.update.mode'='merge-on-read')")
    table = shared.ours.load_table(shared.ident("alt"))

    def icepark_delete(where: str, mode: str = "merge-on-read") -> None:
        changed = table.refresh().set_properties({"write.delete.mode": mode})
        ips.delete(spark, changed, where)
        table.refresh().set_properties({"write.delete.mode": "merge-on-read"})

    none: set[int] = set()
    steps: list[tuple[Callable[[], object], set[int], set[int]]] = [  # deleted, updated ids
        (lambda: shared.reference.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, "
                                      "IF(id % 2 = 0, 'a', 'b'), id / 4 FROM range(0, 20)"),
         none, none),
        (lambda: ips.write(spark.createDataFrame(rows_of(range(20, 30)),
                                                 "id long, k string, v double").coalesce(1),
                           table.refresh()), none, none),
        # icepark's vectors on the reference's files and on its own
        (lambda: icepark_delete("id IN (1, 2, 21)"), {1, 2, 21}, none),
        # the reference merges icepark's vectors of the same data files; 3 and 5 (and their
        # _row_id) go to one new file
        (lambda: shared.reference.sql(f"UPDATE {t} SET v = -1 WHERE id IN (3, 4, 5, 24)"), none,
         {3, 4, 5, 24}),
        # icepark merges the reference's vectors
        (lambda: icepark_delete("id IN (6, 7, 24)"), {6, 7, 24}, none),
        (lambda: append(table, rows_of(range(30, 33))), none, none),
        (lambda: shared.reference.sql(f"DELETE FROM {t} WHERE id IN (8, 27, 31)"), {8, 27, 31},
         none),
        # copy-on-write: 5 moves with the _row_id and sequence number of the reference's
        # update; the rows of the reference's first file with its vector move too
        (lambda: icepark_delete("id IN (3, 9)", "copy-on-write"), {3, 9}, none),
        # the reference's vector and update on a file icepark's copy-on-write wrote
        (lambda: shared.reference.sql(f"UPDATE {t} SET v = -2 WHERE id IN (5, 11)"), none,
         {5, 11}),
        (lambda: icepark_delete("id IN (5, 13, 32)"), {5, 13, 32}, none),
    ]
    known: dict[int, tuple[int | None, int | None]] = {}
    next_row_ids: list[int] = []
    for step, deleted, updated in steps:
        step()
        rows = agree(spark, shared, "alt")
        table = table.refresh()
        now = lineage(rows)
        assert not deleted & set(now)
        for i, (row_id, seq) in now.items():
            if i in updated:  # same row, new sequence number
                assert (row_id, seq) == (known[i][0], table.metadata.last_sequence_number)
            elif i in known:
                assert (row_id, seq) == known[i]
        known = now
        assert table.metadata.next_row_id is not None
        next_row_ids.append(table.metadata.next_row_id)
        assert set(vectors(table)) <= data_paths(table)
    assert next_row_ids == sorted(next_row_ids)
    assert set(known) == set(range(33)) - {1, 2, 21, 6, 7, 24, 8, 27, 31, 3, 9, 5, 13, 32}
    assert {r["id"]: r["v"] for r in rows if r["id"] in (4, 11)} == {4: -1.0, 11: -2.0}

    # a branch: "the table's next-row-id must also be updated (even if the new snapshot is
    # not in the main branch)", so main's next rows get other row IDs than the branch's
    table.manage_snapshots().create_branch("side").commit()
    table.refresh().append(pa.Table.from_pylist(rows_of(range(40, 43)),
                                                schema=to_arrow_schema(SCHEMA)), branch="side")
    side = theirs(shared, f"SELECT _row_id, _last_updated_sequence_number, * FROM "
                          f"{t}.branch_side")
    assert by_id(table.refresh().scan(ref="side").to_arrow(LINEAGE).to_pylist()) == side
    shared.reference.sql(f"INSERT INTO {t} VALUES (50, 'a', 0.0)")
    rows = agree(spark, shared, "alt")
    main_ids = {r["_row_id"] for r in rows}
    assert len(main_ids | {r["_row_id"] for r in side}) == len(rows) + 3

    # the reference deletes from a data file between icepark's Spark job and its commit: a
    # second vector for the file would break "at most one deletion vector per data file", so
    # icepark's commit fails (its Puffin files deleted) and a retry merges the new vector
    collect = delete_tasks.collect

    def racing(job: Any) -> Any:
        found = collect(job)
        shared.reference.sql(f"DELETE FROM {t} WHERE id = 15")
        return found

    data = shared.location("alt") / "data"
    before = set(data.rglob("*.puffin"))
    monkeypatch.setattr(delete_tasks, "collect", racing)
    with pytest.raises(ValidationError, match="Found conflicting delete files added"):
        ips.delete(spark, table.refresh(), "id = 17")
    monkeypatch.setattr(delete_tasks, "collect", collect)
    assert {str(p) for p in set(data.rglob("*.puffin")) - before} == {
        f.file_path for f in live_entries(table) if f.is_deletion_vector} - {
        str(p) for p in before}  # only the reference's
    ips.delete(spark, table.refresh(), "id = 17")
    rows = agree(spark, shared, "alt")
    assert not {15, 17} & {r["id"] for r in rows}
