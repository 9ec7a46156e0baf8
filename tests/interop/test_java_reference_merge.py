"""icepark's MERGE, UPDATE and upsert read by the Java reference runtime (Iceberg 1.10.2 on
Spark 3.5), alternating with the reference's own MERGE INTO on the same table: after every
step the reference, icepark's Arrow reader and its Spark reader return the same rows (v3: with
the same ``_row_id`` and ``_last_updated_sequence_number``, and the same data files and
deletion vectors in both engines' metadata tables)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from tests.interop.conftest import Shared
from tests.interop.test_java_reference import append
from tests.interop.test_java_reference_v3 import (
    SCHEMA,
    agree,
    lineage,
    rows_of,
    vectors,
)

pytestmark = pytest.mark.spark


def _values(rows: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: (r["k"], r["v"]) for r in rows}


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_the_reference_reads_icepark_merges_and_updates_on_v3(
        spark: SparkSession, shared: Shared, mode: str) -> None:
    """MERGE (update, delete, insert), UPDATE, then the reference's MERGE INTO and an icepark
    upsert on top of it: rows, lineage, files and vectors agree at every step; an updated
    row keeps its ``_row_id`` and takes the change's sequence number."""
    name = f"m_{mode[0]}"
    properties = {"write.merge.mode": mode, "write.update.mode": mode,
                  "write.delete.mode": mode}
    table = shared.ours.create_table(shared.ident(name), SCHEMA, properties=properties,
                                     format_version=3)
    table = append(table, rows_of(range(40)))
    inserted = lineage(agree(spark, shared, name))

    source = spark.createDataFrame([(i, "new", float(i)) for i in (3, 4, 5, 60, 61)],
                                   "id long, k string, v double")
    result = (ips.merge(table.refresh(), source, "t.id = s.id")
              .when_matched_update({"v": "s.v * 10"}, condition="s.id <> 4")
              .when_matched_delete()
              .when_not_matched_insert_all()
              .execute())
    assert (result.updated_rows, result.deleted_rows, result.inserted_rows) == (2, 1, 2)
    merged = shared.ours.load_table(shared.ident(name)).metadata.last_sequence_number
    rows = agree(spark, shared, name)
    now = lineage(rows)
    assert {i: now[i] for i in (3, 5)} == {i: (inserted[i][0], merged) for i in (3, 5)}
    assert 4 not in now and now[60][1] == merged and now[60][0] not in {
        v[0] for v in inserted.values()}
    assert _values(rows)[3] == ("a", 30.0) and _values(rows)[60] == ("new", 60.0)
    if mode == "merge-on-read":
        assert vectors(shared.ours.load_table(shared.ident(name)))

    ips.update(spark, table.refresh(), {"k": "upper(k)"}, "id >= 30 AND id < 35")
    rows = agree(spark, shared, name)
    assert {r["k"] for r in rows if 30 <= r["id"] < 35} == {
        r["k"].upper() for r in rows_of(range(30, 35))}

    t = shared.ref(name)
    shared.reference.sql(
        f"MERGE INTO {t} USING (SELECT id FROM range(8, 12)) s ON {t}.id = s.id "
        f"WHEN MATCHED AND s.id % 2 = 0 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET v = -1.0")
    before = lineage(agree(spark, shared, name))

    upserted = spark.createDataFrame([(9, "nine", 9.5), (70, "seventy", 7.0)],
                                     "id long, k string, v double")
    result = ips.upsert(table.refresh(), upserted, key=["id"])
    assert (result.updated_rows, result.inserted_rows) == (1, 1)
    rows = agree(spark, shared, name)
    assert _values(rows)[9] == ("nine", 9.5) and lineage(rows)[9][0] == before[9][0]
    assert {8, 10} & {r["id"] for r in rows} == set()


def test_the_reference_reads_icepark_position_delete_merges_on_v2(
        spark: SparkSession, shared: Shared) -> None:
    """A merge-on-read MERGE on a v2 table writes position delete files the reference
    applies."""
    name = "m_v2"
    table = shared.ours.create_table(shared.ident(name), SCHEMA,
                                     properties={"write.merge.mode": "merge-on-read"},
                                     format_version=2)
    table = append(table, rows_of(range(20)))
    source = spark.createDataFrame([(i, "x", 0.0) for i in (1, 2, 30)],
                                   "id long, k string, v double")
    (ips.merge(table, source, "t.id = s.id").when_matched_update_all()
     .when_not_matched_insert_all().execute())
    theirs = shared.reference.rows(f"SELECT * FROM {shared.ref(name)}")
    ours = table.refresh().scan().to_arrow().to_pylist()
    assert sorted(_values(theirs).items()) == sorted(_values(ours).items())
    assert _values(theirs)[1] == ("x", 0.0) and 30 in _values(theirs)
