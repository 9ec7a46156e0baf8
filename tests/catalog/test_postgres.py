"""The SQL catalog on PostgreSQL: a throwaway server started from the machine's PostgreSQL
binaries (run as the ``postgres`` user, on a private port), SQLAlchemy with psycopg 3.

Skipped only where no PostgreSQL server binaries are installed.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
from tools import postgres
from tools.concurrent_writers import race

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import AlreadyExists, CatalogUnavailable, CommitFailed
from icepark.table.change import updates as u
from tests.catalog.catalog_helpers import SCHEMA


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    reason = postgres.available()
    if reason is not None:
        pytest.skip(reason)
    with postgres.postgres_server() as server:
        yield server.url


@pytest.fixture
def catalog(postgres_url: str, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[BaseCatalog]:
    warehouse = tmp_path_factory.mktemp("pg-warehouse")
    name = f"pg_{uuid.uuid4().hex[:8]}"  # one catalog name per test in the shared database
    catalog = load_catalog(name, uri=postgres_url, warehouse=str(warehouse))
    yield catalog


def test_tables_live_and_commit_atomically_on_postgres(catalog: BaseCatalog,
                                                       postgres_url: str) -> None:
    catalog.create_namespace("db", {"owner": "pg"})
    assert catalog.load_namespace_properties("db")["owner"] == "pg"
    table = catalog.create_table("db.events", SCHEMA)
    with pytest.raises(AlreadyExists):
        catalog.create_table("db.events", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                           "name": pa.array(["a", None, "c"], pa.string())}))
    assert catalog.list_tables("db") == [("db", "events")]

    # A change based on a state that no longer holds fails and changes nothing (the racing
    # compare-and-swap itself is exercised by the concurrent test below).
    stale = catalog.load_table("db.events")
    table.set_properties({"winner": "first"})
    with pytest.raises(CommitFailed):
        catalog.commit_table(stale.identifier, [u.AssertRefSnapshotId(
            "main", None)], [u.SetProperties({"winner": "stale"})])

    reloaded = catalog.load_table("db.events")
    assert reloaded.properties["winner"] == "first"
    assert sorted(reloaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]

    peer = PySqlCatalog(catalog.name, uri=postgres_url,
                        warehouse=catalog.properties["warehouse"])
    assert peer.load_table("db.events").metadata_location == reloaded.metadata_location


def test_concurrent_commits_on_postgres_lose_nothing(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.counters", SCHEMA, properties={
        "commit.retry.num-retries": "50", "commit.retry.min-wait-ms": "1",
        "commit.retry.max-wait-ms": "20"})
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            table = catalog.load_table("db.counters")
            for i in range(5):
                table.set_properties({f"w{n}-{i}": "1"})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    props = catalog.load_table("db.counters").properties
    assert {k for k in props if k.startswith("w")} == {
        f"w{n}-{i}" for n in range(4) for i in range(5)}


def test_concurrent_appenders_on_postgres_never_give_up(postgres_url: str,
                                                        tmp_path: Path) -> None:
    """8 processes x 10 appends, default table properties: the advisory commit lock makes
    them take turns, so none gives up and no attempt loses a race."""
    props = {"name": f"pg_{uuid.uuid4().hex[:8]}", "uri": postgres_url,
             "warehouse": str(tmp_path)}
    result = race(props, 8, 10)
    assert result.problems == ()
    assert (result.give_ups, result.commits, result.attempts) == (0, 80, 80)


def test_a_server_that_goes_away_makes_the_catalog_unavailable(tmp_path: Path) -> None:
    """Stopped mid-session: loads and commits raise CatalogUnavailable, and the data files
    the failed append wrote are deleted."""
    with postgres.postgres_server() as server:
        catalog = load_catalog("gone", uri=server.url, warehouse=str(tmp_path))
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", SCHEMA)
        server.stop()
        with pytest.raises(CatalogUnavailable, match=r"^Catalog 'gone' is unavailable: "):
            catalog.load_table("db.t")
        with pytest.raises(CatalogUnavailable):
            table.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    assert not list(tmp_path.rglob("*.parquet"))
