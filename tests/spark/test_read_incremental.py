"""Incremental reads: the rows appended between two snapshots, as the Arrow reader reads the
same incremental plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import load_catalog
from icepark.errors import ValidationError
from icepark.io.arrow.reader import ArrowReader
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spark.reader.read import read_incremental
from icepark.table.scan.incremental import IncrementalAppendScan
from icepark.table.table import Table

from .test_read import SCHEMA, _rows, _sorted

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Three appends of 10 rows, a rename between the second and the third."""
    root: Path = tmp_path_factory.mktemp("incremental")
    catalog = load_catalog("i", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    for n in range(3):
        if n == 2:
            with t.update_schema() as u:
                u.rename_column("kind", "category")
            t.refresh()
        rows = [{("category" if k == "kind" and n == 2 else k): v for k, v in r.items()}
                for r in _rows(range(n * 10, n * 10 + 10))]
        t.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(t.schema())))
        t.refresh()
    return t


def _expected(table: Table, start: int | None, end: int | None, row_filter: str,
              columns: tuple[str, ...]) -> list[dict[str, Any]]:
    scan = IncrementalAppendScan(table.metadata, table.io, start, end, row_filter, columns)
    reader = ArrowReader(table.io, scan.projection(), row_filter=scan.row_filter,
                         full_schema=scan.schema(),
                         partition_specs={s.spec_id: s for s in table.metadata.partition_specs})
    rows: list[dict[str, Any]] = reader.to_table(scan.plan_files()).to_pylist()
    return rows


@pytest.mark.parametrize(("span", "row_filter", "columns"), [
    ((0, None), "true", ("*",)), ((None, 1), "true", ("*",)), ((0, 1), "id > 12", ("id", "x")),
    ((1, 2), "category IS NOT NULL", ("category",)), ((2, 2), "true", ("*",))])
def test_incremental_read_equals_arrow(spark: SparkSession, table: Table,
                                       span: tuple[int | None, int | None], row_filter: str,
                                       columns: tuple[str, ...]) -> None:
    start, end = span
    ids = [s.snapshot_id for s in table.metadata.snapshots]
    first, last = (None if start is None else ids[start]), (None if end is None else ids[end])
    expected = _expected(table, first, last, row_filter, columns)
    df = read_incremental(spark, table, first, last, row_filter,
                          None if columns == ("*",) else columns)
    got = [r.asDict(recursive=True) for r in df.collect()]
    assert _sorted(got) == _sorted(expected)
    assert len(got) == {(0, None): 20, (None, 1): 20, (1, 2): 8, (2, 2): 0}.get(
        (start, end), len(expected))


def test_incremental_read_rejects_a_delete_in_range(spark: SparkSession,
                                                    tmp_path: Path) -> None:
    catalog = load_catalog("j", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "w"))
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.append(pa.Table.from_pylist(_rows(range(5)), schema=to_arrow_schema(t.schema())))
    first = t.refresh().metadata.current_snapshot_id
    t.delete("id >= 0")
    with pytest.raises(ValidationError, match="cannot cross a delete"):
        read_incremental(spark, t.refresh(), first)
