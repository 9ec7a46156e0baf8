"""Changelog reads (``ips.changes``) against an independent diff of the table's rows between
snapshots (the Arrow reader at each snapshot), for copy-on-write and merge-on-read changes on v2
and v3, and equality deletes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.errors import ValidationError
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.table import Table
from tests.spark.test_write import catalog

pytestmark = pytest.mark.spark
__all__ = ["catalog"]

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "v", STRING),
                   NestedField.optional(3, "p", LONG), identifier_field_ids=[1])
Row = tuple[Any, ...]


def rows_at(table: Table, snapshot_id: int | None) -> Counter[Row]:
    """The table's rows at a snapshot, read by the Arrow reader."""
    if snapshot_id is None:
        return Counter()
    data = table.scan(snapshot_id=snapshot_id).to_arrow()
    return Counter(tuple(r[c] for c in ("id", "v", "p")) for r in data.to_pylist())


def diff(table: Table, before: int | None, after: int) -> Counter[tuple[Row, str]]:
    old, new = rows_at(table, before), rows_at(table, after)
    out: Counter[tuple[Row, str]] = Counter()
    for row, n in (old - new).items():
        out[(row, "DELETE")] += n
    for row, n in (new - old).items():
        out[(row, "INSERT")] += n
    return out


def changelog(spark: SparkSession, table: Table, **kwargs: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in ips.changes(spark, table, **kwargs).collect()]


def as_counter(found: list[dict[str, Any]]) -> Counter[tuple[Row, str]]:
    return Counter(((r["id"], r["v"], r["p"]), r["_change_type"]) for r in found)


def history(spark: SparkSession, catalog: BaseCatalog, version: int, mode: str) -> Table:
    """A table changed by appends, a delete, an update and a merge in ``mode``."""
    table = catalog.create_table(
        f"db.t{version}{mode[0]}", SCHEMA,
        partition_spec=PartitionSpecBuilder(SCHEMA).identity("p").build(),
        format_version=version,  # type: ignore[arg-type]
        properties={f"write.{op}.mode": mode for op in ("delete", "update", "merge")})
    frame = "id long, v string, p long"
    ips.write(spark.createDataFrame([(i, f"v{i}", i % 3) for i in range(30)], frame), table)
    ips.write(spark.createDataFrame([(i, f"v{i}", i % 3) for i in range(30, 40)], frame),
              table.refresh())
    ips.delete(spark, table.refresh(), "id IN (0, 7, 14, 21, 28, 35)")
    ips.update(spark, table.refresh(), set={"v": "concat(v, '!')"}, where="id < 10")
    source = spark.createDataFrame([(5, "m5", 2), (100, "m100", 1)], frame)
    ips.merge(table.refresh(), source, on="t.id = s.id").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    return table.refresh()


@pytest.mark.parametrize(("version", "mode"), [
    (2, "merge-on-read"), (3, "merge-on-read"),
    pytest.param(3, "copy-on-write", marks=pytest.mark.slow)])
def test_changes_equal_the_diff_of_each_snapshot(spark: SparkSession, catalog: BaseCatalog,
                                                 version: int, mode: str) -> None:
    """Position delete files (v2), deletion vectors (v3) and copy-on-write rewrites (whose
    carried-over rows must not appear); on v3 copy-on-write also net changes and updates by
    identifier field and by ``_row_id``."""
    table = history(spark, catalog, version, mode)
    snapshots = list(table.snapshots())
    found = changelog(spark, table)
    assert {r["_commit_snapshot_id"] for r in found} == {s.snapshot_id for s in snapshots}
    for ordinal, snapshot in enumerate(snapshots):
        mine = [r for r in found if r["_commit_snapshot_id"] == snapshot.snapshot_id]
        assert {r["_change_ordinal"] for r in mine} == {ordinal}
        assert as_counter(mine) == diff(table, snapshot.parent_snapshot_id,
                                        snapshot.snapshot_id), (ordinal, snapshot.operation)
    if (version, mode) != (3, "copy-on-write"):
        return
    first = snapshots[0].snapshot_id
    net = changelog(spark, table, start_snapshot_id=first, net_changes=True)
    assert as_counter(net) == diff(table, first, snapshots[-1].snapshot_id)

    update, merge = snapshots[3].snapshot_id, snapshots[4].snapshot_id  # UPDATE ids < 10
    for by in (None, ["_row_id"]):  # the identifier field id, or the row lineage ID
        updates = changelog(spark, table, compute_updates=True, identifier_columns=by)
        pairs = Counter(r["_change_type"] for r in updates
                        if r["_commit_snapshot_id"] == update)
        assert pairs == {"UPDATE_BEFORE": 8, "UPDATE_AFTER": 8}  # 1..9 but 7 (deleted)
        merged = [r for r in updates if r["_commit_snapshot_id"] == merge]
        assert sorted((r["id"], r["_change_type"]) for r in merged) == [
            (5, "UPDATE_AFTER"), (5, "UPDATE_BEFORE"), (100, "INSERT")]


def test_equality_deletes_appear_as_deletes(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.eq", SCHEMA)
    ips.write(spark.createDataFrame([(i, "abc"[i % 3], 0) for i in range(12)],
                                    "id long, v string, p long"), table)
    writer = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                  table.schema(), table.spec(), (), table.properties,
                                  equality_ids=[2])
    writer.write(pa.table({"v": pa.array(["b"])}))
    with table.refresh().new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    table.refresh()
    last = table.current_snapshot()
    assert last is not None
    found = changelog(spark, table, start_snapshot_id=last.parent_snapshot_id)
    assert as_counter(found) == diff(table, last.parent_snapshot_id, last.snapshot_id)
    assert sorted(r["id"] for r in found) == [1, 4, 7, 10]


def test_bad_ranges_are_errors(spark: SparkSession, catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.r", SCHEMA)
    assert changelog(spark, table) == []
    with pytest.raises(ValidationError, match="Cannot find the end snapshot 5"):
        ips.changes(spark, table, end_snapshot_id=5)
    with pytest.raises(ValidationError, match="not both"):
        ips.changes(spark, table, start_snapshot_id=1, start_timestamp=1)
    with pytest.raises(ValidationError, match="cannot be combined"):
        ips.changes(spark, table, net_changes=True, compute_updates=True)
