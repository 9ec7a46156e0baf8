"""Dropping with purge: every reachable file inside the table location, nothing outside it."""

from __future__ import annotations

from pathlib import Path

from icepark.catalog.base import BaseCatalog
from icepark.catalog.purge import reachable_files
from icepark.table.change import updates as u
from tests.catalog.catalog_helpers import SCHEMA, all_files, register_files


def _touch(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1")
    return str(path)


def test_purge_deletes_reachable_files_inside_the_location_only(
        catalog: BaseCatalog, kind: str, tmp_path: Path) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    root = Path(table.location)
    inside = [_touch(root / "data" / f"f{i}.parquet") for i in range(3)]
    outside = _touch(tmp_path / "shared" / "imported.parquet")
    sneaky = _touch(tmp_path / "warehouse" / "escape.parquet")
    escaping = f"{table.location}/data/../../../escape.parquet"
    register_files(table, [inside[0], outside])
    register_files(table, [inside[1], escaping])
    catalog.commit_table(("db", "t"), [], [u.SetProperties({"x": "1"})])
    table.refresh()
    orphan = _touch(root / "data" / "orphan.parquet")  # not referenced by the table

    reachable = reachable_files(table.io, table.metadata, table.metadata_location)
    assert {inside[0], inside[1], outside, escaping} <= set(reachable)
    assert inside[2] not in reachable and orphan not in reachable
    assert len([p for p in reachable if p.endswith(".metadata.json")]) == 4
    assert len([p for p in reachable if "/snap-" in p]) == 2

    catalog.drop_table("db.t", purge=True)
    assert not catalog.table_exists("db.t")
    assert Path(outside).exists() and Path(sneaky).exists(), "never outside the location"
    left = all_files(root) if root.exists() else []
    if kind == "sql":  # only the unreferenced files remain
        assert left == ["data/f2.parquet", "data/orphan.parquet"]
    else:  # the directory is the table
        assert not root.exists()


def test_drop_without_purge_keeps_the_files_of_a_metastore_table(sql_catalog: BaseCatalog) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", SCHEMA)
    data = _touch(Path(table.location) / "data" / "a.parquet")
    register_files(table, [data])
    before = all_files(Path(table.location))
    sql_catalog.drop_table("db.t")
    assert all_files(Path(table.location)) == before
    back = sql_catalog.register_table("db.t", table.metadata_location)
    assert back.current_snapshot() == table.current_snapshot()
