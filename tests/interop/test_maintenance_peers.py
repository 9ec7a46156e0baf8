"""icepark's maintenance procedures and the peers: after ``rewrite_position_delete_files``,
``rewrite_manifests`` and ``rewrite_data_files`` (binpack, then sort), the Java reference
runtime (Iceberg 1.10.2), DuckDB and (v2) pyiceberg read exactly the rows icepark's readers read
before them, and the reference sees ``replace`` snapshots (spec, *Snapshots*: "Data and delete
files were added and removed without changing table data; i.e., compaction ..."). On v3 the
reference and DuckDB read the ``_row_id`` and ``_last_updated_sequence_number`` the rows had
(spec, *Row lineage assignment*: "When an existing row is moved to a different data file for
any reason, writers should write ``_row_id`` and ``_last_updated_sequence_number``").

The other way: tables the reference wrote and changed with merge-on-read DELETEs (position
deletes on v2, deletion vectors on v3) are compacted by icepark; the reference reads the same
rows (and lineage) after it, writes to the table again (INSERT, DELETE), and icepark reads what
the reference reads.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spark.maintenance.deletes import rewrite_position_delete_files
from icepark.spark.maintenance.manifests import rewrite_manifests
from icepark.spec.manifest import FileContent
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField
from icepark.table.table import Table
from tests.interop.conftest import Shared
from tests.interop.peers import duckdb_connection
from tests.interop.test_java_reference_v3 import live_entries

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING),
                   NestedField.optional(3, "v", DOUBLE))
MERGE_ON_READ = {"write.delete.mode": "merge-on-read"}
LINEAGE = ["_row_id", "_last_updated_sequence_number"]
Row = tuple[Any, ...]
"""``(id, k, v)``, or on v3 ``(id, k, v, _row_id, _last_updated_sequence_number)``."""


def _append(table: Table, ids: range) -> Table:
    rows = [{"id": i, "k": "abc"[i % 3], "v": i / 4} for i in ids]
    table.refresh().append(pa.Table.from_pylist(rows, schema=to_arrow_schema(table.schema())))
    return table.refresh()


def _in(ids: set[int]) -> str:
    return f"id IN ({', '.join(map(str, sorted(ids)))})"


def _lineage(version: int) -> list[str]:
    return LINEAGE if version >= 3 else []


def _arrow(table: Table, version: int) -> list[Row]:
    """The rows as icepark's Arrow reader reads them."""
    columns = ["id", "k", "v", *_lineage(version)]
    arrow = table.refresh().scan().to_arrow(_lineage(version)).select(columns)
    return sorted(zip(*(arrow.column(c).to_pylist() for c in columns), strict=True))


def _icepark(spark: SparkSession, table: Table, version: int) -> list[Row]:
    """The rows as icepark's Arrow and Spark readers read them (asserted equal)."""
    table = table.refresh()
    columns = ["id", "k", "v", *_lineage(version)]
    by_arrow = _arrow(table, version)
    by_spark = sorted(tuple(r) for r in ips.read(spark, table, metadata_columns=_lineage(version))
                      .select(*columns).collect())
    assert by_arrow == by_spark
    return by_spark


def _java(shared: Shared, name: str, version: int) -> list[Row]:
    columns = ["id", "k", "v", *_lineage(version)]
    found = shared.reference.rows(f"SELECT {', '.join(columns)} FROM {shared.ref(name)}")
    return sorted(tuple(r[c] for c in columns) for r in found)


def _duckdb(location: str, version: int) -> list[Row]:
    with duckdb_connection() as con:
        found = con.execute(f"SELECT {', '.join(['id', 'k', 'v', *_lineage(version)])} "
                            "FROM iceberg_scan(?)", [location]).fetchall()
    return sorted(tuple(r) for r in found)


def _pyiceberg(location: str) -> list[Row]:
    arrow = StaticTable.from_metadata(location).scan().to_arrow()
    return sorted(zip(*(arrow.column(c).to_pylist() for c in ("id", "k", "v")), strict=True))


def _reference_operations(shared: Shared, name: str) -> dict[int, str]:
    return {r["snapshot_id"]: r["operation"] for r in shared.reference.rows(
        f"SELECT snapshot_id, operation FROM {shared.ref(name)}.snapshots")}


def _delete_files(table: Table) -> dict[str, int]:
    """The live delete files' counts by kind (``position`` files, deletion ``vectors``)."""
    counts = {"position": 0, "vectors": 0}
    for f in live_entries(table):
        if f.content is FileContent.POSITION_DELETES:
            counts["vectors" if f.is_deletion_vector else "position"] += 1
    return counts


def _data_files(table: Table) -> int:
    return sum(f.content is FileContent.DATA for f in live_entries(table))


def _icepark_table(spark: SparkSession, shared: Shared, name: str, version: int) -> Table:
    """A partitioned table icepark wrote: three appends (a file per partition each) and two
    merge-on-read deletes of position delete files, a file per partition
    (``write.delete.granularity=partition``: each covers several data files); on v3 the
    table is then upgraded, gets a fourth append and deletes (deletion vectors) in new files
    and in an old one (its vector takes in the old position deletes, which stay for the other
    files)."""
    table = shared.ours.create_table(shared.ident(name), SCHEMA,
                                     partition_spec=PartitionSpecBuilder(SCHEMA)
                                     .identity("k").build(),
                                     properties={**MERGE_ON_READ,
                                                 "write.delete.granularity": "partition"},
                                     format_version=2)
    for n in range(3):
        table = _append(table, range(n * 60, (n + 1) * 60))
    ips.delete(spark, table, _in({i for i in range(180) if i % 7 == 0}))
    ips.delete(spark, table.refresh(), _in({i for i in range(180) if i % 11 == 1}))
    if version == 3:
        table = table.refresh().upgrade_format_version(3)
        table = _append(table, range(180, 240))
        ips.delete(spark, table, _in({i for i in range(180, 240) if i % 7 == 3} | {4, 10}))
    return table.refresh()


@pytest.mark.parametrize("version", [pytest.param(2, marks=pytest.mark.slow), 3])
def test_peers_read_the_same_rows_after_icepark_maintenance(
        spark: SparkSession, shared: Shared, version: int) -> None:
    name = f"maint_v{version}"
    table = _icepark_table(spark, shared, name, version)
    before = _icepark(spark, table, version)
    deleted = {i for i in range(180) if i % 7 == 0 or i % 11 == 1}
    if version == 3:
        deleted |= {i for i in range(180, 240) if i % 7 == 3} | {4, 10}
    assert [r[0] for r in before] == sorted(set(range(240 if version == 3 else 180)) - deleted)
    kinds = _delete_files(table)
    assert kinds == ({"position": 6, "vectors": 0} if version == 2
                     else {"position": 6, "vectors": 4})  # 3 new files and one old
    if version == 3:
        row_ids = [r[3] for r in before]
        assert None not in row_ids and len(set(row_ids)) == len(row_ids)

    def check(step: str, snapshot_ids: tuple[int, ...] | None) -> None:
        """Every reader reads ``before``, and the reference sees the step's snapshots (at
        least one) as ``replace`` operations."""
        location = table.refresh().metadata_location
        if snapshot_ids is not None:
            assert snapshot_ids, step
            operations = _reference_operations(shared, name)
            assert {operations[s] for s in snapshot_ids} == {"replace"}, step
        assert _arrow(table, version) == before, step
        assert _java(shared, name, version) == before, step
        assert _duckdb(location, version) == before, step
        if version == 2:  # pyiceberg 0.12 has no row lineage (tests/interop/test_v3_peers.py)
            assert _pyiceberg(location) == before, step

    check("as written", None)  # the peers agree before any procedure
    deletes = rewrite_position_delete_files(spark, table, options={"min-input-files": "2"})
    # v2: each partition's two position delete files become one; v3: the position delete files
    # become vectors of the (old) files that had none: every data file has one
    assert _delete_files(table) == ({"position": 3, "vectors": 0} if version == 2
                                    else {"position": 0, "vectors": _data_files(table)})
    check("rewrite_position_delete_files", deletes.snapshot_ids)

    manifests = rewrite_manifests(spark, table.refresh())
    assert manifests.rewritten_manifests_count > 0
    head = table.refresh().current_snapshot()
    assert head is not None
    check("rewrite_manifests", (head.snapshot_id,))

    files = _data_files(table)
    binpack = ips.rewrite_data_files(spark, table.refresh(), where="k = 'a'",
                                     options={"min-input-files": "2"})
    assert binpack.groups == 1 and binpack.added_data_files == 1
    check("rewrite_data_files binpack", binpack.snapshot_ids)

    ips.configure(spark, catalog=shared.ours)  # the front door also takes an identifier
    ordered = ips.rewrite_data_files(spark, shared.ident(name),
                                     strategy="sort", sort_order="v DESC, id",
                                     options={"rewrite-all": "true",
                                              "remove-dangling-deletes": "true"})
    assert ordered.groups == 3
    check("rewrite_data_files sort", ordered.snapshot_ids)
    # every partition is one sorted file now, with no delete left
    assert _data_files(table) == 3 < files
    assert _delete_files(table) == {"position": 0, "vectors": 0}


@pytest.mark.parametrize("version", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_the_reference_writes_on_after_icepark_compacts_its_table(
        spark: SparkSession, shared: Shared, version: int) -> None:
    """The reference creates a partitioned table, INSERTs three times and DELETEs twice with
    merge-on-read (position deletes, deletion vectors); icepark compacts it (deletes applied,
    dangling deletes removed); the reference reads the same rows and lineage, INSERTs and
    DELETEs again (also rows of icepark's new files), and icepark reads what it reads."""
    name = f"theirs_v{version}"
    t = shared.ref(name)
    shared.reference.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, k STRING, v DOUBLE) USING iceberg "
        f"PARTITIONED BY (k) TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read')")
    for n in range(3):
        shared.reference.sql(f"INSERT INTO {t} SELECT id, substr('abc', id % 3 + 1, 1), id / 4 "
                             f"FROM range({n * 60}, {(n + 1) * 60})")
    shared.reference.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    shared.reference.sql(f"DELETE FROM {t} WHERE id % 11 = 1")
    table = shared.ours.load_table(shared.ident(name))
    kinds = _delete_files(table)  # v2: file-scoped position deletes; v3: one vector a file
    assert (kinds["position"] > 0, kinds["vectors"]) == ((True, 0) if version == 2
                                                         else (False, 9))
    before = _java(shared, name, version)
    assert [r[0] for r in before] == [i for i in range(180) if i % 7 and i % 11 != 1]
    assert _icepark(spark, table, version) == before

    result = ips.rewrite_data_files(spark, table, options={
        "min-input-files": "2", "remove-dangling-deletes": "true"})
    assert (result.groups, result.rewritten_data_files, result.added_data_files) == (3, 9, 3)
    assert _delete_files(table) == {"position": 0, "vectors": 0}
    operations = _reference_operations(shared, name)
    assert {operations[s] for s in result.snapshot_ids} == {"replace"}
    assert _java(shared, name, version) == before
    assert _icepark(spark, table, version) == before
    assert _duckdb(table.refresh().metadata_location, version) == before

    shared.reference.sql(f"INSERT INTO {t} SELECT id, substr('abc', id % 3 + 1, 1), id / 4 "
                         "FROM range(500, 530)")
    shared.reference.sql(f"DELETE FROM {t} WHERE id % 10 = 5")  # old rows and new ones
    after = _java(shared, name, version)
    assert [r[0] for r in after] == sorted(
        i for i in [*range(180), *range(500, 530)]
        if (i >= 500 or (i % 7 and i % 11 != 1)) and i % 10 != 5)
    if version == 3:  # the rows kept keep their lineage; the new ones have their own
        kept = {r[0]: r[3:] for r in before}
        assert all(r[3:] == kept[r[0]] for r in after if r[0] < 500)
        row_ids = [r[3] for r in after]
        assert len(set(row_ids)) == len(row_ids)
    assert _icepark(spark, table, version) == after
    assert _duckdb(table.refresh().metadata_location, version) == after
