"""v3 row lineage through Spark: the Spark reader's metadata columns equal the Arrow reader's,
Spark writes assign row IDs, and a copy-on-write delete moves rows with their lineage.

Spec (v3), *Row lineage assignment*: "When an existing row is moved to a different data file
for any reason, writers should write ``_row_id`` and ``_last_updated_sequence_number``": "The
row's existing non-null ``_row_id`` must be copied into the new data file" and "If the write
has not modified the row, the existing non-null ``_last_updated_sequence_number`` value must be
copied to the new data file".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.spark.reader.read import read
from icepark.spark.rowlevel.delete import delete_rows
from icepark.spark.writer.write import write
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, ListType, NestedField
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))
META = ["_file", "_pos", "_spec_id", "_row_id", "_last_updated_sequence_number"]


def make(tmp_path: Path, schema: Schema = SCHEMA,
         properties: dict[str, str] | None = None) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(schema).identity("k").build()
    return catalog.create_table("db.t", schema, partition_spec=spec,
                                properties=properties or {}, format_version=3)


def frame(spark: SparkSession, ids: range, k: str) -> Any:
    return spark.range(ids.start, ids.stop).selectExpr("id", f"'{k}' AS k")


def arrow_rows(table: Table, **scan: Any) -> list[dict[str, Any]]:
    got = table.refresh().scan(**scan).to_arrow(META).to_pylist()
    return sorted(got, key=lambda r: r["id"])


def spark_rows(spark: SparkSession, table: Table, **options: Any) -> list[dict[str, Any]]:
    df = read(spark, table.refresh(), metadata_columns=META, **options)
    assert df.columns[-len(META):] == META
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def lineage(rows: list[dict[str, Any]]) -> dict[int, tuple[Any, Any]]:
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


def test_spark_writes_assign_row_ids_and_both_readers_agree(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    table = make(tmp_path)
    table = write(frame(spark, range(0, 6), "a"), table)
    table = write(frame(spark, range(6, 10), "b"), table)
    assert table.metadata.next_row_id == 10
    ours = arrow_rows(table)
    assert sorted(r["_row_id"] for r in ours) == list(range(10))
    assert {r["_last_updated_sequence_number"] for r in ours if r["k"] == "b"} == {2}
    assert spark_rows(spark, table) == ours
    assert spark_rows(spark, table, row_filter="id >= 7") == [r for r in ours if r["id"] >= 7]
    only_k = read(spark, table, columns=["k"], row_filter="k = 'a'",
                  metadata_columns=["_row_id"]).collect()
    assert sorted(r["_row_id"] for r in only_k) == [
        r["_row_id"] for r in ours if r["k"] == "a"]


@pytest.mark.parametrize("native", [True, False])
def test_copy_on_write_moves_rows_with_their_lineage(spark: SparkSession, tmp_path: Path,
                                                     native: bool) -> None:
    table = make(tmp_path, properties={"write.spark.native-writer.enabled": str(native).lower()})
    table = write(frame(spark, range(0, 8), "a"), table)
    table = write(frame(spark, range(8, 12), "a"), table)
    before = lineage(arrow_rows(table))
    result = delete_rows(spark, table, "id IN (0, 3, 6, 9)")
    assert result.rewritten_files == 2
    table = table.refresh()
    after = arrow_rows(table)
    assert lineage(after) == {i: before[i] for i in before if i % 3}
    assert spark_rows(spark, table) == after
    # the new files store both columns by their reserved field IDs
    written = {r["_file"] for r in after}
    for path in written:
        ids = {f.metadata[b"PARQUET:field_id"] for f in pq.read_schema(path)
               if f.metadata and b"PARQUET:field_id" in f.metadata}
        assert {str(ROW_ID.field_id).encode(),
                str(LAST_UPDATED_SEQUENCE_NUMBER.field_id).encode()} <= ids
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.first_row_id == 12
    assert table.metadata.next_row_id == 12 + snapshot.added_rows  # type: ignore[operator]


def test_python_writer_tables_move_rows_with_lineage_too(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    """A list column sends writes through the Python workers, lineage columns included."""
    schema = Schema.of(*SCHEMA.fields, NestedField.optional(3, "tags", ListType(4, STRING)))
    table = make(tmp_path, schema)
    df = spark.range(0, 10).selectExpr("id", "'a' AS k", "array(CAST(id AS STRING)) AS tags")
    table = write(df, table)
    before = lineage(arrow_rows(table))
    delete_rows(spark, table, "id < 3")
    table = table.refresh()
    assert lineage(arrow_rows(table)) == {i: before[i] for i in range(3, 10)}
    assert lineage(spark_rows(spark, table)) == {i: before[i] for i in range(3, 10)}


def test_upgraded_tables_read_null_lineage_in_spark_until_the_next_commit(
        spark: SparkSession, tmp_path: Path) -> None:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "k": ["a", "a"]}))
    table = table.refresh().upgrade_format_version(3).refresh()
    assert lineage(spark_rows(spark, table)) == {1: (None, None), 2: (None, None)}
    table = write(frame(spark, range(3, 4), "b"), table)
    got = lineage(spark_rows(spark, table))
    assert sorted(v[0] for v in got.values()) == [0, 1, 2]
    assert got == lineage(arrow_rows(table))
