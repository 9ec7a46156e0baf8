"""The SQL catalog on PostgreSQL: a throwaway server started from the machine's PostgreSQL
binaries (run as the ``postgres`` user, on a private port), SQLAlchemy with psycopg 3.

Skipped only where no PostgreSQL server binaries are installed.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import AlreadyExists, CommitFailed
from icepark.table.change import updates as u
from tests.catalog.catalog_helpers import SCHEMA

BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(*args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *args], check=True,
                   capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    if not BIN or shutil.which("runuser") is None or os.geteuid() != 0:
        pytest.skip("needs PostgreSQL server binaries and root to run them as 'postgres'")
    bindir = BIN[-1]
    data = tempfile.mkdtemp(prefix="icepark-pg-")
    shutil.chown(data, "postgres", "postgres")
    port = _free_port()
    _as_postgres(f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
    _as_postgres(f"{bindir}/pg_ctl", "-D", data, "-w", "-l", f"{data}/log", "-o",
                 f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        shutil.rmtree(data, ignore_errors=True)


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
