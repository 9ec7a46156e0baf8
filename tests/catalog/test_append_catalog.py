"""The write API through both real catalogs: append, overwrite, delete and branches, rows read
back with pyarrow and by pyiceberg; failures that must (and must not) delete written files."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from icepark.catalog.base import BaseCatalog
from icepark.errors import CommitStateUnknown, ValidationError
from icepark.io.arrow.transforms import source_column, to_python_values
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.types import (
    DATE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.table import Table
from tests.catalog.catalog_helpers import live_data_files, live_rows, metadata_files

EVENTS = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "s", STRING),
    NestedField.optional(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "day", DATE),
    NestedField.optional(5, "amount", PrimitiveType.decimal(9, 2)),
    NestedField.optional(6, "st", StructType((NestedField.optional(7, "x", LONG),
                                              NestedField.optional(8, "y", STRING)))),
    NestedField.optional(9, "l", ListType(10, LONG, element_required=False)),
    NestedField.optional(11, "m", MapType(12, STRING, 13, LONG, value_required=False)),
)
SPEC = (PartitionSpecBuilder(EVENTS).identity("s").bucket("id", 4).truncate("st.y", 1)
        .day("ts").month("day").build())
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def events(ids: range, s: str | None = None) -> pa.Table:
    words = ["a", "b", None]
    rows: list[dict[str, Any]] = [{
        "id": i, "s": s if s is not None else words[i % 3],
        "ts": None if i % 7 == 0 else EPOCH + timedelta(hours=i * 13 - 400),
        "day": date(1969, 12, 1) + timedelta(days=i * 5),
        "amount": Decimal(i * 101 - 3000).scaleb(-2),
        "st": None if i % 5 == 0 else {"x": i, "y": ["p", "q", None][i % 3]},
        "l": [i, None, -i] if i % 2 else None,
        "m": [("k", i)] if i % 4 else [],
    } for i in ids]
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
        ("day", pa.date32()), ("amount", pa.decimal128(9, 2)),
        ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ("l", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int64()))]))


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def parquet_files(table: Table) -> set[str]:
    return {str(p) for p in Path(table.location.removeprefix("file://")).rglob("*.parquet")}


@pytest.fixture
def table(catalog: BaseCatalog) -> Table:
    catalog.create_namespace("db")
    return catalog.create_table("db.events", EVENTS, partition_spec=SPEC,
                                properties={"commit.retry.min-wait-ms": "1"})


def test_append_overwrite_delete_through_the_catalog(catalog: BaseCatalog,
                                                     table: Table) -> None:
    first, second = events(range(0, 40)), events(range(40, 70))
    table.append(first)
    table.append(pa.RecordBatchReader.from_batches(second.schema, second.to_batches(10)))
    loaded = catalog.load_table("db.events")
    assert loaded.metadata_location == table.metadata_location
    expected = first.to_pylist() + second.to_pylist()
    assert by_id(live_rows(loaded)) == by_id(expected)

    replacement = events(range(100, 110), s="a")
    loaded.overwrite(replacement, "s = 'a'")
    expected = [r for r in expected if r["s"] != "a"] + replacement.to_pylist()
    reloaded = catalog.load_table("db.events")
    current = reloaded.current_snapshot()
    assert current is not None and current.operation is Operation.OVERWRITE
    assert by_id(live_rows(reloaded)) == by_id(expected)

    reloaded.delete("s IS NULL")
    expected = [r for r in expected if r["s"] is not None]
    assert by_id(live_rows(catalog.load_table("db.events"))) == by_id(expected)
    chain = [s.operation for s in catalog.load_table("db.events").snapshots()]
    assert chain == [Operation.APPEND, Operation.APPEND, Operation.OVERWRITE, Operation.DELETE]


def test_pyiceberg_reads_what_we_wrote(catalog: BaseCatalog, table: Table) -> None:
    data = events(range(0, 50))
    table.append(data)
    theirs = StaticTable.from_metadata(table.metadata_location)
    assert by_id(theirs.scan().to_arrow().to_pylist()) == by_id(data.to_pylist())
    filtered = theirs.scan(row_filter="s == 'b' and id >= 10").to_arrow()
    assert sorted(filtered["id"].to_pylist()) == sorted(
        r["id"] for r in data.to_pylist() if r["s"] == "b" and r["id"] >= 10)


def test_sorted_unpartitioned_table_through_the_catalog(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    order = SortOrderBuilder(EVENTS).desc("amount").build()
    table = catalog.create_table("db.sorted", EVENTS, sort_order=order)
    data = events(range(0, 30))
    table.append(data)
    [data_file] = live_data_files(catalog.load_table("db.sorted"))
    assert data_file.sort_order_id == 1 and data_file.partition == ()
    amounts = [r["amount"] for r in live_rows(table)]
    assert amounts == sorted(amounts, reverse=True)


def test_branch_writes_through_the_catalog(catalog: BaseCatalog, table: Table) -> None:
    table.append(events(range(0, 10)))
    table.append(events(range(10, 20)), branch="audit")
    loaded = catalog.load_table("db.events")
    assert [r["id"] for r in by_id(live_rows(loaded))] == list(range(10))
    assert [r["id"] for r in by_id(live_rows(loaded, loaded.snapshot_by_ref("audit")))] == \
        list(range(20))
    loaded.delete("id >= 0", branch="audit")
    loaded = catalog.load_table("db.events")
    assert live_rows(loaded, loaded.snapshot_by_ref("audit")) == []
    assert len(live_rows(loaded)) == 10


def test_v3_tables_keep_write_defaults_and_assign_row_ids(catalog: BaseCatalog) -> None:
    """v3 metadata (defaults, next-row-id) round-trips through the catalog; appends fill the
    write defaults and advance next-row-id by the rows they add."""
    catalog.create_namespace("db")
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.required(2, "tier", STRING, write_default="free"),
                       NestedField.optional(3, "seen", DATE, write_default=0))
    table = catalog.create_table("db.v3", schema, format_version=3)
    table.append(pa.table({"id": [1, 2]}))
    loaded = catalog.load_table("db.v3")
    assert loaded.schema().find_field("tier").write_default == "free"
    assert loaded.metadata.next_row_id == 2
    snapshot = loaded.current_snapshot()
    assert snapshot is not None and (snapshot.first_row_id, snapshot.added_rows) == (0, 2)
    assert sorted(loaded.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "tier": "free", "seen": date(1970, 1, 1)},
        {"id": 2, "tier": "free", "seen": date(1970, 1, 1)}]


def test_bad_input_leaves_no_file_and_no_version(catalog: BaseCatalog, table: Table) -> None:
    table.append(events(range(0, 5)))
    before, versions = parquet_files(table), metadata_files(table.location)
    for bad in (pa.table({"s": ["x"]}), pa.table({"id": [1], "nope": [1]}),
                pa.table({"id": [1], "st": pa.array([{"x": "not a long"}])})):
        with pytest.raises(ValidationError, match=r"'id'|'nope'|'st\.x'"):
            table.append(bad)
    assert parquet_files(table) == before
    assert metadata_files(table.location) == versions


def test_a_conflicting_overwrite_fails_and_deletes_its_files(catalog: BaseCatalog,
                                                             table: Table) -> None:
    """Another writer appends rows matching the overwrite's filter after it was planned: the
    catalog refuses the stale commit, the retry's validation fails, and the overwrite's own
    data files are deleted (a known failure)."""
    table.append(events(range(0, 9)))
    other = catalog.load_table("db.events")
    other.append(events(range(50, 53), s="a"))
    kept = parquet_files(table)
    with pytest.raises(ValidationError, match=r"conflicting data files added matching s = 'a'"):
        table.overwrite(events(range(100, 103), s="a"), "s = 'a'")
    assert parquet_files(table) == kept
    assert catalog.load_table("db.events").metadata_location == other.metadata_location


def test_commit_state_unknown_keeps_the_files(catalog: BaseCatalog, table: Table,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    commit_table = catalog.commit_table

    def lost_reply(*args: Any, **kwargs: Any) -> Any:
        commit_table(*args, **kwargs)
        raise CommitStateUnknown("the reply was lost")

    monkeypatch.setattr(catalog, "commit_table", lost_reply)
    data = events(range(0, 12))
    with pytest.raises(CommitStateUnknown):
        table.append(data)
    monkeypatch.undo()
    loaded = catalog.load_table("db.events")  # the commit did land: its files must exist
    assert by_id(live_rows(loaded)) == by_id(data.to_pylist())
    assert parquet_files(loaded) == {f.file_path.removeprefix("file://")
                                     for f in live_data_files(loaded)}


def test_rows_of_every_partition_land_in_their_partition(catalog: BaseCatalog,
                                                         table: Table) -> None:
    data = events(range(0, 60))
    table.append(data)
    loaded = catalog.load_table("db.events")
    schema, spec = loaded.schema(), loaded.spec()
    files = live_data_files(loaded)
    assert len({f.partition for f in files}) == len(files) > 1
    assert sum(f.record_count for f in files) == data.num_rows
    for f in files:
        assert f"/data/{spec.partition_path(f.partition, schema)}/" in f.file_path
        rows = pq.read_table(f.file_path.removeprefix("file://"))
        for i, pf in enumerate(spec.fields):
            source = schema.find_type(pf.source_id)
            values = to_python_values(source_column(rows, schema, pf.source_id), source)
            assert {pf.transform.apply(source, v) for v in values} == {f.partition[i]}
