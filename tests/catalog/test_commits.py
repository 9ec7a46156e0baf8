"""Commits: file naming, the metadata log, cleanup, conflicts and unknown outcomes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from icepark.catalog import SqlCatalog
from icepark.catalog.base import BaseCatalog
from icepark.catalog.metastore import parse_version
from icepark.errors import CommitFailed, CommitStateUnknown, ValidationError
from icepark.table.change import updates as u
from icepark.table.change.commit import CommitResult, Identifier
from icepark.table.table import Table
from tests.catalog.catalog_helpers import (
    OPTIMISTIC,
    SCHEMA,
    FakeAppend,
    make_catalog,
    metadata_files,
)

IDENT = ("db", "t")


def new_table(catalog: BaseCatalog, **properties: str) -> Table:
    catalog.create_namespace("db")
    return catalog.create_table("db.t", SCHEMA, properties=properties)


def commit_properties(catalog: BaseCatalog, n: int, prefix: str = "k") -> list[CommitResult]:
    return [catalog.commit_table(IDENT, [], [u.SetProperties({f"{prefix}{i}": "v"})])
            for i in range(n)]


def version(kind: str, location: str) -> int:
    name = location.rsplit("/", 1)[-1]
    return parse_version(location) if kind == "sql" else int(name[1:].split(".")[0])


def test_versions_and_metadata_log_grow_by_one(catalog: BaseCatalog, kind: str) -> None:
    table = new_table(catalog)
    results = commit_properties(catalog, 4)
    locations = [table.metadata_location, *(r.metadata_location for r in results)]
    first = 0 if kind == "sql" else 1
    assert [version(kind, loc) for loc in locations] == list(range(first, first + 5))
    current = catalog.load_table("db.t")
    assert current.metadata_location == locations[-1]
    assert [e.metadata_file for e in current.metadata_log()] == locations[:-1]
    stamps = [e.timestamp_ms for e in current.metadata_log()]
    assert stamps == sorted(stamps)
    assert current.properties == {f"k{i}": "v" for i in range(4)}
    if kind == "sql":
        assert all(Path(loc).name.startswith(f"{i:05d}-") for i, loc in enumerate(locations))
    assert metadata_files(table.location) == sorted(locations)


def test_log_is_trimmed_to_previous_versions_max(catalog: BaseCatalog) -> None:
    table = new_table(catalog, **{"write.metadata.previous-versions-max": "2"})
    results = commit_properties(catalog, 5)
    log = catalog.load_table("db.t").metadata_log()
    assert [e.metadata_file for e in log] == [r.metadata_location for r in results[-3:-1]]
    assert len(metadata_files(table.location)) == 6, "without delete-after-commit, files stay"


def test_delete_after_commit_removes_files_that_left_the_log(catalog: BaseCatalog) -> None:
    table = new_table(catalog, **{"write.metadata.previous-versions-max": "2",
                                  "write.metadata.delete-after-commit.enabled": "true"})
    results = commit_properties(catalog, 5)
    current = catalog.load_table("db.t")
    kept = [*(e.metadata_file for e in current.metadata_log()), current.metadata_location]
    assert metadata_files(table.location) == sorted(kept)
    assert kept == [r.metadata_location for r in results[-3:]]


def test_delete_after_commit_never_leaves_the_metadata_folder(sql_catalog: BaseCatalog,
                                                              tmp_path: Path) -> None:
    outside = tmp_path / "outside.metadata.json"
    table = new_table(sql_catalog, **{"write.metadata.previous-versions-max": "1",
                                      "write.metadata.delete-after-commit.enabled": "true"})
    outside.write_text(Path(table.metadata_location).read_text())
    sql_catalog.drop_table("db.t")
    sql_catalog.register_table("db.t", str(outside))
    commit_properties(sql_catalog, 3)
    assert outside.exists(), "a registered file outside <location>/metadata is never deleted"


@pytest.mark.parametrize("requirement", [
    u.AssertCurrentSchemaId(99), u.AssertTableUUID(__import__("uuid").uuid4()),
    u.AssertRefSnapshotId("main", 5), u.AssertDefaultSpecId(3), u.AssertCreate(),
    u.AssertLastAssignedFieldId(1), u.AssertLastAssignedPartitionId(0),
    u.AssertDefaultSortOrderId(7),
], ids=lambda r: type(r).__name__)
def test_failed_requirement_is_commit_failed_and_writes_nothing(
        catalog: BaseCatalog, requirement: u.TableRequirement) -> None:
    table = new_table(catalog)
    before = metadata_files(table.location)
    with pytest.raises(CommitFailed, match="Requirement failed"):
        catalog.commit_table(IDENT, [requirement], [u.SetProperties({"a": "b"})])
    assert metadata_files(table.location) == before
    assert catalog.load_table("db.t").metadata_location == table.metadata_location


def test_invalid_update_writes_nothing(catalog: BaseCatalog) -> None:
    table = new_table(catalog)
    before = metadata_files(table.location)
    with pytest.raises(ValidationError):
        catalog.commit_table(IDENT, [], [u.SetCurrentSchema(42)])
    assert metadata_files(table.location) == before


def test_no_updates_write_nothing(catalog: BaseCatalog) -> None:
    table = new_table(catalog)
    assert catalog.commit_table(IDENT, [], []).metadata_location == table.metadata_location
    assert metadata_files(table.location) == [table.metadata_location]


def test_lost_race_is_commit_failed_and_cleaned_up(catalog: BaseCatalog, kind: str,
                                                  warehouse: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """(a) A concurrent writer commits between our load and our swap: the CAS matches no row
    (SQL) or v<N+1> exists (filesystem)."""
    table = new_table(catalog)
    stale = catalog.load_metadata(IDENT)
    rival = make_catalog(kind, warehouse)
    winner = rival.commit_table(IDENT, [], [u.SetProperties({"winner": "yes"})])
    monkeypatch.setattr(catalog, "_load_current", lambda ident: stale)
    with pytest.raises(CommitFailed):
        catalog.commit_table(IDENT, [], [u.SetProperties({"loser": "yes"})])
    monkeypatch.undo()
    assert metadata_files(table.location) == sorted([table.metadata_location,
                                                     winner.metadata_location])
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner.metadata_location
    assert current.properties == {"winner": "yes"}


@pytest.mark.parametrize("locking", [True, False], ids=["lock", "optimistic"])
def test_table_commit_retries_after_a_lost_race(kind: str, warehouse: Path,
                                                locking: bool) -> None:
    """A change based on a stale version: holding the commit lock, it is applied to the
    refreshed table at once; without the lock the first attempt loses and the retry wins."""
    catalog = make_catalog(kind, warehouse, properties={} if locking else OPTIMISTIC)
    table = new_table(catalog, **{"commit.retry.min-wait-ms": "1"})
    make_catalog(kind, warehouse).load_table("db.t").commit(FakeAppend("rival"))
    change = FakeAppend("mine")
    table.commit(change)
    assert len(change.attempts) == (1 if locking else 2)
    snapshots = table.snapshots()
    assert [s.summary.properties["commit-key"] for s in snapshots if s.summary] == ["rival",
                                                                                  "mine"]
    assert snapshots[1].parent_snapshot_id == snapshots[0].snapshot_id


# ---------------------------------------------------------------- SQL: unknown swap outcomes


def _drop_connection() -> OperationalError:
    return OperationalError("UPDATE iceberg_tables ...", {},
                            Exception("server closed the connection unexpectedly"))


def _patch_swap(monkeypatch: pytest.MonkeyPatch, catalog: BaseCatalog, *, apply: bool,
                then: Any = None) -> None:
    original = catalog._swap_pointer  # type: ignore[attr-defined]

    def swap(identifier: Identifier, expected: str, new: str) -> bool:
        if apply:
            original(identifier, expected, new)
        if then is not None:
            then()
        raise _drop_connection()

    monkeypatch.setattr(catalog, "_swap_pointer", swap)


def test_swap_applied_then_raised_is_reconciled_as_success(
        sql_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """(b) The UPDATE went through, then the connection dropped."""
    table = new_table(sql_catalog)
    _patch_swap(monkeypatch, sql_catalog, apply=True)
    result = sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    monkeypatch.undo()
    current = sql_catalog.load_table("db.t")
    assert current.metadata_location == result.metadata_location
    assert current.properties == {"a": "1"}
    assert Path(result.metadata_location).exists()
    assert table.metadata_location in [e.metadata_file for e in current.metadata_log()]


def test_swap_applied_then_overtaken_is_found_in_the_metadata_log(
        sql_catalog: BaseCatalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new_table(sql_catalog)
    rival = make_catalog("sql", warehouse)
    _patch_swap(monkeypatch, sql_catalog, apply=True,
                then=lambda: rival.commit_table(IDENT, [], [u.SetProperties({"b": "2"})]))
    result = sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    monkeypatch.undo()
    current = sql_catalog.load_table("db.t")
    assert current.metadata_location != result.metadata_location
    assert current.properties == {"a": "1", "b": "2"}
    assert Path(result.metadata_location).exists()


def test_swap_not_applied_then_raised_is_reconciled_as_failure(
        sql_catalog: BaseCatalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = new_table(sql_catalog)
    rival = make_catalog("sql", warehouse)
    _patch_swap(monkeypatch, sql_catalog, apply=False,
                then=lambda: rival.commit_table(IDENT, [], [u.SetProperties({"b": "2"})]))
    with pytest.raises(CommitFailed, match="another writer won"):
        sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    monkeypatch.undo()
    current = sql_catalog.load_table("db.t")
    assert current.properties == {"b": "2"}
    assert metadata_files(table.location) == sorted([table.metadata_location,
                                                     current.metadata_location])


def test_unknown_outcome_with_failed_reload_deletes_nothing(
        sql_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """(c) The swap raised and the reload fails too."""
    table = new_table(sql_catalog)
    _patch_swap(monkeypatch, sql_catalog, apply=False)

    def unreachable(identifier: Identifier) -> str:
        raise _drop_connection()

    monkeypatch.setattr(sql_catalog, "_read_pointer", unreachable)
    monkeypatch.setattr(sql_catalog, "_load_current",
                        lambda ident: CommitResult(table.metadata, table.metadata_location))
    with pytest.raises(CommitStateUnknown, match="was kept"):
        sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    monkeypatch.undo()
    files = metadata_files(table.location)
    assert len(files) == 2 and table.metadata_location in files
    assert sql_catalog.load_table("db.t").metadata_location == table.metadata_location


def test_unknown_outcome_when_the_log_no_longer_reaches_the_base(
        sql_catalog: BaseCatalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = new_table(sql_catalog, **{"write.metadata.previous-versions-max": "1"})
    rival = make_catalog("sql", warehouse)

    def two_rival_commits() -> None:
        commit_properties(rival, 2, prefix="r")

    _patch_swap(monkeypatch, sql_catalog, apply=False, then=two_rival_commits)
    with pytest.raises(CommitStateUnknown):
        sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    monkeypatch.undo()
    assert len(metadata_files(table.location)) == 4, "nothing deleted"


def test_sqlite_locked_during_swap_is_a_retryable_failure(
        sql_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = new_table(sql_catalog)

    def locked(identifier: Identifier, expected: str, new: str) -> bool:
        raise OperationalError("UPDATE", {}, sqlite3.OperationalError("database is locked"))

    monkeypatch.setattr(sql_catalog, "_swap_pointer", locked)
    with pytest.raises(CommitFailed, match="database is locked"):
        sql_catalog.commit_table(IDENT, [], [u.SetProperties({"a": "1"})])
    assert metadata_files(table.location) == [table.metadata_location]


def test_insert_raising_after_it_applied_is_a_created_table(
        sql_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    sql_catalog.create_namespace("db")
    original = sql_catalog._insert_pointer  # type: ignore[attr-defined]

    def insert(identifier: Identifier, location: str) -> None:
        original(identifier, location)
        raise _drop_connection()

    monkeypatch.setattr(sql_catalog, "_insert_pointer", insert)
    table = sql_catalog.create_table("db.t", SCHEMA)
    monkeypatch.undo()
    assert sql_catalog.load_table("db.t").metadata_location == table.metadata_location


def test_create_losing_the_insert_race_removes_its_file(
        sql_catalog: BaseCatalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sql_catalog.create_namespace("db")
    rival = make_catalog("sql", warehouse)
    monkeypatch.setattr(sql_catalog, "table_exists", lambda ident: False)
    winner = rival.create_table("db.t", SCHEMA)
    with pytest.raises(Exception, match="already exists"):
        sql_catalog.create_table("db.t", SCHEMA)
    assert metadata_files(winner.location) == [winner.metadata_location]
    assert isinstance(sql_catalog, SqlCatalog)


# ---------------------------------------------------------------- filesystem: the version hint


@pytest.mark.parametrize("hint", ["1", "2", "garbage", "", "99", None])
def test_filesystem_rolls_forward_past_a_stale_or_bad_hint(
        fs_catalog: BaseCatalog, warehouse: Path, hint: str | None) -> None:
    table = new_table(fs_catalog)
    results = commit_properties(fs_catalog, 3)
    hint_file = warehouse / "db/t/metadata/version-hint.text"
    assert hint_file.read_text() == "4"
    if hint is None:
        hint_file.unlink()
    else:
        hint_file.write_text(hint)
    loaded = fs_catalog.load_table("db.t")
    assert loaded.metadata_location == results[-1].metadata_location
    assert loaded.metadata_location.endswith("/v4.metadata.json")
    fs_catalog.commit_table(IDENT, [], [u.SetProperties({"after": "1"})])
    assert fs_catalog.load_table("db.t").metadata_location.endswith("/v5.metadata.json")
    assert table.location == loaded.location


def test_filesystem_hint_to_a_deleted_version_falls_back_to_listing(
        fs_catalog: BaseCatalog, warehouse: Path) -> None:
    new_table(fs_catalog, **{"write.metadata.previous-versions-max": "1",
                             "write.metadata.delete-after-commit.enabled": "true"})
    commit_properties(fs_catalog, 4)
    folder = warehouse / "db/t/metadata"
    assert sorted(p.name for p in folder.glob("v*.metadata.json")) == [
        "v4.metadata.json", "v5.metadata.json"]
    (folder / "version-hint.text").write_text("2")
    assert fs_catalog.load_table("db.t").metadata_location.endswith("/v5.metadata.json")


def test_filesystem_refuses_relocation(fs_catalog: BaseCatalog, tmp_path: Path) -> None:
    table = new_table(fs_catalog)
    with pytest.raises(ValidationError, match="relocate"):
        fs_catalog.commit_table(IDENT, [], [u.SetLocation(str(tmp_path / "elsewhere"))])
    assert metadata_files(table.location) == [table.metadata_location]


def test_filesystem_temp_files_are_not_versions(fs_catalog: BaseCatalog,
                                                warehouse: Path) -> None:
    new_table(fs_catalog)
    folder = warehouse / "db/t/metadata"
    (folder / ".v2.metadata.json.abc.tmp").write_text("{partial")
    (folder / "00002-x.metadata.json").write_text("{}")
    assert fs_catalog.load_table("db.t").metadata_location.endswith("/v1.metadata.json")
    assert os.path.exists(folder / "v1.metadata.json")
