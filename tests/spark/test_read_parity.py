"""Parity corpus: the Spark read path returns exactly the Arrow reader's rows (the reference) on
tables with schema evolution, defaults, name mappings, imported files, position and equality
deletes at several sequence numbers and partition evolution."""

from __future__ import annotations

import itertools
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import BaseCatalog, load_catalog
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY, create_mapping, to_json
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.table import Table

from .test_read import _same

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG), NestedField.optional(2, "i", INT),
    NestedField.optional(3, "f", FLOAT), NestedField.optional(4, "d", PrimitiveType.decimal(9, 2)),
    NestedField.optional(5, "s", StructType((NestedField.optional(6, "a", INT),
                                             NestedField.optional(7, "b", STRING)))),
    NestedField.optional(8, "name", STRING), NestedField.optional(9, "cat", STRING),
    NestedField.optional(10, "z", STRING))
CATS = ["x", "y", None]


def _row(i: int) -> dict[str, Any]:
    return {"id": i, "i": None if i % 7 == 0 else i * 3, "f": i / 2,
            "d": Decimal(i) / 4, "s": None if i % 5 == 0 else {"a": i, "b": f"b{i % 3}"},
            "name": f"n{i}", "cat": CATS[i % 3], "z": [None, "q", "r"][i % 3]}


def _catalog(root: Path) -> BaseCatalog:
    catalog = load_catalog("p", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    return catalog


def _append(t: Table, rows: list[dict[str, Any]]) -> None:
    t.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(t.schema())))
    t.refresh()


def _deletes(t: Table, ids: set[int], column: str | None = None,
             values: list[Any] | None = None) -> None:
    """Position deletes for rows ``ids`` and equality deletes on ``column`` (``values``), in
    every partition holding a data file."""
    counter = itertools.count()
    files: list[DataFile] = []
    spec, schema = t.spec(), t.schema()
    for task in t.scan().plan_files():
        if task.data_file.spec_id != spec.spec_id:
            continue
        found = pq.read_table(task.data_file.file_path).column("id").to_pylist()
        positions = [p for p, i in enumerate(found) if i in ids]

        def location() -> str:
            return f"{t.location}/data/del-{len(t.metadata.snapshots)}-{next(counter)}.parquet"

        if positions:
            writer = PositionDeleteWriter(t.io, location, schema, spec, task.data_file.partition,
                                          t.properties)
            writer.write(position_deletes_batch({task.data_file.file_path: positions}))
            files += writer.close()
        if column is not None and values is not None:
            field = schema.find_field(column)
            eq = EqualityDeleteWriter(t.io, location, schema, spec, task.data_file.partition,
                                      t.properties, equality_ids=[field.field_id])
            eq.write(pa.table({column: pa.array(values, to_arrow_schema(
                Schema.of(field)).field(0).type)}))
            files += eq.close()
    with t.new_row_delta() as delta:
        for f in {f.file_path: f for f in files}.values():
            delta.add_deletes(f)
    t.refresh()


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Every kind of evolution and delete in one table, written as v2 and then upgraded to v3
    for an initial default (see the steps)."""
    catalog = _catalog(tmp_path_factory.mktemp("parity"))
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build()
    t = catalog.create_table("db.e", SCHEMA, partition_spec=spec, format_version=2)
    _append(t, [_row(i) for i in range(18)])
    # deletes at the first sequence numbers: positions, equality on z (a null included)
    _deletes(t, {1, 4, 11}, "z", ["r", None])
    with t.update_schema() as u:  # renames, promotions, default, drop + re-add, dropped eq col
        u.rename_column("s.b", "bee").rename_column("name", "label")
        u.update_column("i", LONG).update_column("f", DOUBLE)
        u.update_column("d", PrimitiveType.decimal(12, 2))
        u.add_column("extra", INT)
    with t.update_schema() as u:
        u.delete_column("label").delete_column("z")
    with t.update_schema() as u:
        u.add_column("label", LONG)
    t.refresh()
    _append(t, [{"id": i, "i": i * 10**10, "f": 1.5, "d": Decimal("1234567890.12"),
                 "s": {"a": -i, "bee": "new"}, "cat": CATS[i % 3], "extra": None,
                 "label": i} for i in range(18, 30)])
    with t.update_spec() as s:  # partition evolution
        s.add_field("id", "bucket[2]")
    t.refresh()
    _append(t, [{"id": i, "i": i, "f": None, "d": None, "s": None, "cat": "y",
                 "extra": i, "label": -i} for i in range(30, 40)])
    # newer deletes: positions in the new spec's files, equality on the re-added label
    _deletes(t, {31, 35}, "label", [-33, None])
    # an imported file without the identity partition column (cat) and without metrics
    imported = Schema.of(*(f for f in t.schema().fields if f.name != "cat"))
    path = f"{t.location}/data/imported.parquet"
    pq.write_table(pa.Table.from_pylist(
        [{"id": 100 + i, "i": i, "f": 0.5, "d": Decimal("1.00"), "s": {"a": i, "bee": "imp"},
          "extra": None, "label": 7} for i in range(4)],
        schema=to_arrow_schema(imported)), path)
    data_file = DataFile(path, FileFormat.PARQUET, ("x", 1), 4, Path(path).stat().st_size,
                         spec_id=t.spec().spec_id)
    with t.new_append() as a:
        a.append_file(data_file)
    t.upgrade_format_version(3)  # v3: a column with an initial default, in no data file
    with t.update_schema() as u:
        u.add_column("bonus", INT, initial_default=42)
    return t.refresh()


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Files without field IDs, read through ``schema.name-mapping.default``, with a renamed
    column afterwards and position deletes."""
    catalog = _catalog(tmp_path_factory.mktemp("mapped"))
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "v", STRING),
                       NestedField.optional(3, "s", StructType((
                           NestedField.optional(4, "a", INT),))))
    t = catalog.create_table("db.m", schema, properties={
        NAME_MAPPING_PROPERTY: to_json(create_mapping(schema))})
    Path(t.location, "data").mkdir(parents=True, exist_ok=True)
    for n in range(2):
        path = f"{t.location}/data/raw-{n}.parquet"
        pq.write_table(pa.table({"id": pa.array([n * 10 + i for i in range(6)], pa.int64()),
                                 "s": pa.array([{"a": i} if i % 2 else None for i in range(6)],
                                               pa.struct([("a", pa.int32())])),
                                 "v": [f"v{i}" if i != 3 else None for i in range(6)]}), path)
        with t.new_append() as a:
            a.append_file(DataFile(path, FileFormat.PARQUET, (), 6, Path(path).stat().st_size))
    t.refresh()
    _append(t, [{"id": 100, "v": "ids", "s": {"a": 1}}])  # a file with field IDs too
    with t.update_schema() as u:
        u.rename_column("v", "value")
    t.refresh()
    _deletes(t, {2, 14, 100})
    return t.refresh()


CASES = [(None, None), ("id > 5 AND id < 36", None), (None, ("id", "s")),
         ("bonus = 42 AND (extra = 33 OR label IS NULL)", ("label", "extra", "bonus", "id")),
         ("cat = 'x'", ("cat", "d", "i")), ("s.bee = 'imp' OR f > 4.0", ("s.a", "id"))]


@pytest.mark.parametrize(("row_filter", "columns"), CASES)
def test_evolved_table_reads_like_arrow(spark: SparkSession, evolved: Table,
                                        row_filter: str | None,
                                        columns: tuple[str, ...] | None) -> None:
    _same(spark, evolved, row_filter, columns)


def test_evolved_table_covers_the_scenarios(spark: SparkSession, evolved: Table) -> None:
    rows = {r["id"]: r for r in evolved.scan().to_arrow().to_pylist()}
    assert {1, 4, 11, 31, 35}.isdisjoint(rows)  # position deletes, old and new
    assert all(i % 3 == 1 for i in range(18) if i in rows)  # z in ('r', null) deleted
    assert 33 not in rows and 34 in rows  # equality on label, newer sequence number only
    assert rows[100]["cat"] == "x" and rows[7]["extra"] is None and rows[33 - 1]["extra"] == 32
    assert {r["bonus"] for r in rows.values()} == {42}
    assert _same(spark, evolved) == len(rows)


def test_old_snapshot_reads_like_arrow(spark: SparkSession, evolved: Table) -> None:
    second = evolved.metadata.snapshots[1].snapshot_id
    _same(spark, evolved, "id < 10", None, snapshot_id=second)


@pytest.mark.parametrize(("row_filter", "columns"), [
    (None, None), ("value IS NOT NULL", ("value", "id")), ("s.a = 1", ("s",))])
def test_name_mapped_files_read_like_arrow(spark: SparkSession, mapped: Table,
                                           row_filter: str | None,
                                           columns: tuple[str, ...] | None) -> None:
    assert _same(spark, mapped, row_filter, columns) > 0
