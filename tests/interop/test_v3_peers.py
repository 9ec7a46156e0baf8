"""DuckDB (``iceberg_scan``) and pyiceberg read icepark's format version 3 tables: row lineage
(``next-row-id``, snapshot ``first-row-id`` and ``added-rows``, manifest and data file
``first_row_id``), deletion vectors (written, merged, dropped with their data files, absorbing
the position delete files of a table upgraded from v2) and data files holding the ``_row_id``
and ``_last_updated_sequence_number`` columns (spec, *Row lineage assignment*: "When an existing
row is moved to a different data file for any reason, writers should write ``_row_id`` and
``_last_updated_sequence_number``"), which are metadata, not table columns.

What the peers support, as asserted here: DuckDB 1.5's iceberg extension reads both tables
row for row, without the stored lineage columns among the table's, and its ``_row_id`` and
``_last_updated_sequence_number`` columns equal icepark's. pyiceberg 0.12 reads both row for
row and loads the lineage fields of the metadata (``next-row-id``, ``first-row-id``,
``added-rows``), but has no row lineage columns to read; it plans, for each data file, the
deletion vector icepark plans and more delete files besides (it matches Puffin files by
partition, not by ``referenced_data_file``, and does not skip a position delete file that a
vector replaces), which leaves its rows right since each vector holds the deletes it replaced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
from pyiceberg.table import Table as PyTable
from pyiceberg.table.metadata import TableMetadataV3
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.reserved import ROW_ID
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField
from icepark.table.table import Table
from tests.interop.peers import duckdb_connection

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING),
                   NestedField.optional(3, "v", DOUBLE))
LINEAGE = ["_row_id", "_last_updated_sequence_number"]


def rows_of(ids: range | list[int]) -> list[dict[str, Any]]:
    return [{"id": i, "k": "abc"[i % 3], "v": i / 4} for i in ids]


def append(table: Table, rows: list[dict[str, Any]]) -> Table:
    table.refresh().append(pa.Table.from_pylist(rows, schema=to_arrow_schema(table.schema())))
    return table.refresh()


@dataclass(frozen=True)
class Written:
    catalog: BaseCatalog
    table: Table
    ids: set[int]
    """The ids of the rows the table holds."""


def _lineage_table(spark: SparkSession, catalog: BaseCatalog) -> Written:
    """A partitioned v3 table: appends (Arrow, Spark), deletion vectors on several files,
    merged by a second delete, whole files removed with their vectors, a copy-on-write delete
    writing the moved rows' lineage columns."""
    spec = PartitionSpecBuilder(SCHEMA).identity("k").build()
    table = catalog.create_table("db.lineage", SCHEMA, partition_spec=spec, format_version=3,
                                 properties={"write.delete.mode": "merge-on-read"})
    table = append(table, rows_of(range(30)))
    ips.write(spark.createDataFrame(rows_of(range(30, 50)), "id long, k string, v double")
              .repartition(2), table)
    ips.delete(spark, table.refresh(), "id IN (1, 11, 31, 41)")
    ips.delete(spark, table.refresh(), "id IN (4, 14, 34, 44)")
    ips.delete(spark, table.refresh(), "k = 'c' OR id = 7")
    table = table.refresh().set_properties({"write.delete.mode": "copy-on-write"})
    ips.delete(spark, table, "id = 12")
    table = table.refresh()
    gone = {1, 11, 31, 41, 4, 14, 34, 44, 7, 12} | {i for i in range(50) if i % 3 == 2}
    return Written(catalog, table, set(range(50)) - gone)


def _upgraded_table(spark: SparkSession, catalog: BaseCatalog) -> Written:
    """A v2 table with position delete files (one for two data files, one for one), upgraded
    to v3, then deleted from: the first data file gets a deletion vector that holds its old
    deletes, the second keeps the position delete file, a third (added on v3) gets a vector."""
    table = catalog.create_table("db.upgraded", SCHEMA, format_version=2,
                                 properties={"write.delete.mode": "merge-on-read"})
    table = append(table, rows_of(range(20)))
    table = append(table, rows_of(range(20, 40)))
    ips.delete(spark, table.refresh(), "id IN (3, 23)")
    ips.delete(spark, table.refresh(), "id = 5")
    table = table.refresh().upgrade_format_version(3)
    ips.delete(spark, table, "id = 7")
    table = append(table, rows_of(range(40, 45)))
    ips.delete(spark, table, "id = 41")
    return Written(catalog, table.refresh(), set(range(45)) - {3, 23, 5, 7, 41})


@pytest.fixture(scope="module")
def written(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, Written]]:
    tmp_path: Path = tmp_path_factory.mktemp("v3peers")
    catalog = load_catalog("v3peers", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    yield {"lineage": _lineage_table(spark, catalog), "upgraded": _upgraded_table(spark, catalog)}


def ours(table: Table, metadata: list[str] | None = None) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow(metadata or []).to_pylist(), key=lambda r: r["id"])


def test_the_tables_hold_what_the_peers_are_checked_against(
        written: dict[str, Written]) -> None:
    """What the peers read: deletion vectors, a position delete file kept for two data files
    (one of which reads by it), data files storing lineage columns, row IDs for every row."""
    for w in written.values():
        assert w.table.metadata.format_version == 3
        assert {r["id"] for r in ours(w.table)} == w.ids
        row_ids = [r["_row_id"] for r in ours(w.table, LINEAGE)]
        assert None not in row_ids and len(set(row_ids)) == len(row_ids)
    planned = {name: [sorted(d.is_deletion_vector for d in t.delete_files)
                      for t in w.table.scan().plan_files()] for name, w in written.items()}
    assert all(p in ([], [True]) for p in planned["lineage"])
    assert planned["lineage"].count([True]) >= 2
    assert sorted(planned["upgraded"]) == [[False], [True], [True]]  # one file still positional
    lineage = written["lineage"].table
    stored = [t.data_file for t in lineage.scan().plan_files(include_column_stats=True)
              if ROW_ID.field_id in (t.data_file.value_counts or {})]  # _row_id in the file
    assert len(stored) == 1
    upgraded = written["upgraded"].table
    kept = [f for f in _live_delete_files(upgraded) if not f.is_deletion_vector]
    assert len(kept) == 1 and kept[0].content is FileContent.POSITION_DELETES


def _live_delete_files(table: Table) -> list[DataFile]:
    return [e.data_file for m in snapshot_manifests(table.io, table.current_snapshot())
            for e in read_manifest(table.io, m, discard_deleted=True) if e.data_file.is_delete]


# ------------------------------------------------------------------------------- DuckDB


def _duckdb(location: str, select: str, where: str = "true"
            ) -> tuple[list[str], list[dict[str, Any]]]:
    with duckdb_connection() as con:
        result = con.execute(f"SELECT {select} FROM iceberg_scan(?) WHERE {where}", [location])
        names = [d[0] for d in result.description]
        rows = [dict(zip(names, values, strict=True)) for values in result.fetchall()]
    return names, sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize("name", ["lineage", "upgraded"])
def test_duckdb_reads_our_v3_rows_and_row_lineage(written: dict[str, Written],
                                                  name: str) -> None:
    table = written[name].table
    names, rows = _duckdb(table.metadata_location, "*")
    assert names == ["id", "k", "v"]  # the stored lineage columns are not table columns
    assert rows == ours(table)
    _, rows = _duckdb(table.metadata_location, "_row_id, _last_updated_sequence_number, *")
    assert rows == ours(table, LINEAGE)
    _, some = _duckdb(table.metadata_location, "_row_id, _last_updated_sequence_number, *",
                      "id >= 20 AND k <> 'a'")
    assert some == [r for r in ours(table, LINEAGE) if r["id"] >= 20 and r["k"] != "a"]


# ---------------------------------------------------------------------------- pyiceberg


def _pyiceberg(written: Written) -> PyTable:
    props = written.catalog.properties
    peer = PySqlCatalog("v3peers", uri=props["uri"], warehouse=props["warehouse"])
    table = peer.load_table(".".join(written.table.identifier))
    assert table.metadata_location == written.table.metadata_location
    return table


@pytest.mark.parametrize("name", ["lineage", "upgraded"])
def test_pyiceberg_reads_our_v3_rows_lineage_metadata_and_deletion_vectors(
        written: dict[str, Written], name: str) -> None:
    table = written[name].table
    theirs = _pyiceberg(written[name])
    assert theirs.format_version == 3
    got = theirs.scan().to_arrow()
    assert got.column_names == ["id", "k", "v"]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == ours(table)
    assert isinstance(theirs.metadata, TableMetadataV3)
    assert theirs.metadata.next_row_id == table.metadata.next_row_id
    assert [(s.snapshot_id, s.first_row_id, s.added_rows) for s in theirs.snapshots()] == [
        (s.snapshot_id, s.first_row_id, s.added_rows) for s in table.snapshots()]
    # pyiceberg plans every deletion vector icepark plans for a data file, by its Puffin file
    # (its data files do not expose content_offset: it reads Puffin files whole and maps the
    # vectors by referenced data file), and more: the other Puffin files of the partition,
    # and position delete files that a vector replaces ("There is no deletion vector that
    # must be applied to the data file" is not checked), harmless as the vectors hold them;
    # nothing that is not a live delete file
    planned = {t.file.file_path: {d.file_path for d in t.delete_files}
               for t in theirs.scan().plan_files()}
    mine = {t.data_file.file_path: {d.file_path for d in t.delete_files}
            for t in table.scan().plan_files()}
    assert set(planned) == set(mine)
    assert all(mine[path] <= planned[path] for path in mine)
    extra = set().union(*planned.values()) - set().union(*mine.values())
    assert extra <= {f.file_path for f in _live_delete_files(table)}
