"""Scan planning in Spark tasks (:mod:`icepark.spark.reader.planning`): the same tasks as on the
driver, for every kind of delete and filter, chosen by the table's properties.

Spec, *Scan Planning*: "Scans are planned by reading the manifest files for the current
snapshot" — each manifest on its own, which is what lets executors plan them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark import spark as ips
from icepark.catalog import load_catalog
from icepark.errors import CorruptFile, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spark.reader import planning
from icepark.spark.reader.planning import MIN_MANIFESTS, PLANNING_MODE, plan_files
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.scan.tasks import FileScanTask
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING),
                   NestedField.optional(3, "x", LONG))
APPENDS = 6
"""One manifest each (manifests are not merged)."""


def rows(start: int, count: int) -> list[dict[str, Any]]:
    return [{"id": i, "k": "abc"[i % 3], "x": i * 10} for i in range(start, start + count)]


def make(tmp_path: Path, version: int, **properties: str) -> Table:
    catalog = load_catalog("test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, partition_spec=PartitionSpecBuilder(SCHEMA).identity("k").build(),
        properties={"commit.manifest-merge.enabled": "false",
                    "write.delete.mode": "merge-on-read", **properties},
        format_version=version)  # type: ignore[arg-type]  # 2 or 3
    arrow_schema = to_arrow_schema(table.schema())
    for n in range(APPENDS):
        table.append(pa.Table.from_pylist(rows(n * 10, 10), schema=arrow_schema))
        table = table.refresh()
    return table


def ids_in(ids: range) -> str:
    return f"id IN ({', '.join(map(str, ids))})"


def described(tasks: Iterator[FileScanTask] | list[FileScanTask]) -> list[tuple[Any, ...]]:
    """Everything a reader uses of each task, in path order."""
    return sorted((t.data_file.file_path, t.data_file.record_count, t.data_file.partition,
                   t.data_file.first_row_id, t.data_file.lower_bounds,
                   tuple(sorted(d.file_path for d in t.delete_files)), str(t.residual),
                   t.start, t.length, t.data_sequence_number, t.spec_id) for t in tasks)


def jobs_run(spark: SparkSession, plan: Any) -> tuple[Any, int]:
    """``plan()`` and the number of Spark jobs it ran."""
    group = f"planning-{uuid.uuid4().hex}"
    context = spark.sparkContext
    context.setJobGroup(group, "planning test")
    try:
        result = plan()
    finally:
        context.setJobGroup("", "")
    return result, len(context.statusTracker().getJobIdsForGroup(group))


def distributed(table: Table) -> Table:
    return table.set_properties({PLANNING_MODE: "distributed"}).refresh()


def test_tasks_equal_the_drivers_with_position_and_equality_deletes(
        spark: SparkSession, tmp_path: Path) -> None:
    table = make(tmp_path, 2)
    ips.delete(spark, table, ids_in(range(3, 60, 7)))  # position delete files
    table = table.refresh()
    writer = EqualityDeleteWriter(table.io, lambda: f"{table.location}/data/eq.parquet",
                                  table.schema(), table.spec(), ("b",), table.properties,
                                  equality_ids=[3])
    writer.write(pa.table({"x": pa.array([40, 70, 330], pa.int64())}))
    with table.new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    table = distributed(table)
    for where in (None, "k = 'b'", "x >= 250", "id IN (1, 17, 42) OR k = 'c'"):
        scan = table.scan(where) if where else table.scan()
        local = described(scan.plan_files())
        assert any(t[5] for t in local)  # deletes are attached
        planned, jobs = jobs_run(spark, lambda s=scan: described(plan_files(spark, s)))
        assert (planned, jobs) == (local, 1), where
    expected = sorted(r["id"] for r in table.scan("x >= 250").to_arrow().to_pylist())
    assert expected and sorted(
        r.id for r in ips.read(spark, table, "x >= 250").select("id").collect()) == expected


def test_deletion_vectors_and_row_lineage_on_v3(spark: SparkSession, tmp_path: Path) -> None:
    table = make(tmp_path, 3)
    ips.delete(spark, table, ids_in(range(1, 60, 4)))  # deletion vectors
    ips.update(spark, table.refresh(), {"x": "x + 1"}, "id < 15")
    table = distributed(table.refresh())
    scan = table.scan()
    local = described(scan.plan_files(row_lineage=True))
    assert (described(plan_files(spark, scan, row_lineage=True))) == local
    lineage = ["_row_id", "_last_updated_sequence_number"]
    expected = sorted(table.scan().to_arrow(lineage).to_pylist(), key=lambda r: r["id"])
    got = ips.read(spark, table, metadata_columns=lineage).toArrow().to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == expected


def test_row_level_jobs_plan_in_tasks(spark: SparkSession, tmp_path: Path) -> None:
    """Deletes, updates, merges and compaction plan their scans the same way."""
    table = distributed(make(tmp_path, 2))
    _, jobs = jobs_run(spark, lambda: ips.delete(spark, table, "x > 500"))
    assert jobs >= 2  # planning, then the delete's own
    ips.update(spark, table.refresh(), {"k": "'z'"}, "id = 3")
    source = spark.createDataFrame([(3, "y", 1), (100, "q", 2)], "id long, k string, x long")
    ips.merge(table.refresh(), source, "t.id = s.id").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    ips.rewrite_data_files(spark, table.refresh(), options={"rewrite-all": "true"})
    got = sorted(tuple(r) for r in ips.read(spark, table.refresh()).collect())
    assert got == sorted([(3, "y", 1), (100, "q", 2)] + [
        (r["id"], r["k"], r["x"]) for r in rows(0, APPENDS * 10)
        if r["x"] <= 500 and r["id"] != 3])


def test_auto_mode_plans_in_tasks_from_the_threshold_on(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    table = make(tmp_path, 2, **{MIN_MANIFESTS: str(APPENDS)})
    assert jobs_run(spark, lambda: list(plan_files(spark, table.scan())))[1] == 1
    # manifests the summaries rule out do not count: k = 'a' matches all six still, id < 0 none
    table = table.set_properties({MIN_MANIFESTS: str(APPENDS + 1)}).refresh()
    assert jobs_run(spark, lambda: list(plan_files(spark, table.scan())))[1] == 0
    table = table.set_properties({PLANNING_MODE: "local", MIN_MANIFESTS: "1"}).refresh()
    assert jobs_run(spark, lambda: list(plan_files(spark, table.scan())))[1] == 0


def test_a_dangling_deletion_vector_is_corrupt_there_too(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    table = distributed(make(tmp_path, 3))
    task = next(iter(table.scan().plan_files()))
    written = write_deletion_vectors(table.io, f"{table.location}/data/dv.puffin",
                                     {task.file_path: [0]})
    [dv] = written.data_files({task.file_path: task.data_file})
    ghost = replace(dv, referenced_data_file=f"{table.location}/data/ghost.parquet")
    table.new_row_delta().add_deletes(ghost).commit()
    with pytest.raises(CorruptFile, match=r"ghost\.parquet, which is not a live data file"):
        list(plan_files(spark, table.refresh().scan()))


@pytest.mark.parametrize(("properties", "message"), [
    ({PLANNING_MODE: "sometimes"}, "read.data-planning-mode must be one of auto, local"),
    ({MIN_MANIFESTS: "many"}, "distributed-min-manifests must be an integer"),
    ({MIN_MANIFESTS: "0"}, "distributed-min-manifests"),
])
def test_bad_properties_are_named(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        planning.plans_in_tasks(properties, 10)


def test_waves_bound_each_jobs_manifest_bytes() -> None:
    lengths = [100, 300, 50, 50, 400, 1000, 10]
    waves = planning.waves(lengths, 400)
    assert [i for w in waves for i in w] == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in w) <= 400 for w in waves if len(w) > 1)
    slots = planning.balanced(lengths, 3)
    assert sorted(i for s in slots for i in s) == list(range(len(lengths)))
    assert max(sum(lengths[i] for i in s) for s in slots) == 1000
