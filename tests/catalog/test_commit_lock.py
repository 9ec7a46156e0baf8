"""The commit lock: concurrent writers take turns and none gives up; the lock never blocks
forever and never decides correctness (the compare-and-swap does)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from tools.concurrent_writers import race

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.catalog.locks import flock
from icepark.errors import ValidationError
from tests.catalog.catalog_helpers import SCHEMA, make_catalog

WRITERS, APPENDS = 8, 10


def test_concurrent_appenders_never_give_up(kind: str, warehouse: Path) -> None:
    """8 processes x 10 appends with the default table properties (4 retries, as the
    reference): without the lock some of them give up under this contention; with it none
    does, every acknowledged row is there once and history is linear."""
    props = {"name": "race", "type": kind, "warehouse": str(warehouse)}
    result = race(props, WRITERS, APPENDS)
    assert result.problems == ()
    assert result.give_ups == 0
    assert result.commits == WRITERS * APPENDS
    assert result.attempts == result.commits, "holding the lock, no attempt lost a race"


def test_the_lock_excludes_threads_and_other_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "locks" / "t.lock")
    with flock(path, 1) as held:
        assert held
        with flock(path, 0.05) as again:  # another open file: excluded even in this thread
            assert not again
        child = subprocess.run(
            [sys.executable, "-c", "import sys; from icepark.catalog.locks import flock\n"
             f"with flock({path!r}, 0.05) as held: sys.exit(0 if held else 3)"],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=60,
            check=False)
        assert child.returncode == 3
    with flock(path, 0) as after:
        assert after


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "t.lock")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from icepark.catalog.locks import flock\n"
         f"with flock({path!r}, 5) as held:\n    print(held, flush=True); time.sleep(600)"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
    with flock(path, 0.05) as held:
        assert not held
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    with flock(path, 5) as held:
        assert held


def test_a_lock_not_free_in_time_commits_optimistically(catalog: BaseCatalog) -> None:
    """``lock.acquire-timeout-ms`` bounds the wait; then the commit goes ahead without the
    lock, still safe through the compare-and-swap."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    impatient = type(catalog)(catalog.name, {**catalog.properties,
                                             "lock.acquire-timeout-ms": "50"})
    release = threading.Event()
    taken = threading.Event()

    def hold() -> None:
        with catalog.commit_lock("db.t") as held:
            assert held
            taken.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(60)
        begun = time.monotonic()
        impatient.load_table("db.t").append(
            pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
        assert time.monotonic() - begun < 30
    finally:
        release.set()
        holder.join()
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 1
    assert table.refresh().current_snapshot() is not None


def test_lock_properties_are_checked(warehouse: Path) -> None:
    with pytest.raises(ValidationError, match=r"lock\.acquire-timeout-ms"):
        load_catalog("x", warehouse=str(warehouse), **{"lock.acquire-timeout-ms": "-1"})
    off = make_catalog("sql", warehouse, properties={"lock.enabled": "false"})
    with off.commit_lock("db.t") as held:
        assert not held


def test_a_real_conflict_still_fails_at_once(catalog: BaseCatalog, kind: str,
                                             warehouse: Path) -> None:
    """Holding the lock changes only who waits: an overwrite whose serializable validation
    fails on the refreshed table (rows it would replace were appended since it read the table)
    raises at once, with one attempt, and commits nothing."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    stale = catalog.load_table("db.t")
    other = make_catalog(kind, warehouse).load_table("db.t")
    other.append(pa.table({"id": pa.array([2], pa.int64()), "name": ["a"]}))
    attempts = []
    commit_table = catalog.commit_table

    def counting(*args: object, **kwargs: object) -> object:
        attempts.append(1)
        return commit_table(*args, **kwargs)  # type: ignore[arg-type]

    setattr(catalog, "commit_table", counting)  # noqa: B010 - counting this instance's calls
    with pytest.raises(ValidationError, match="conflicting"):
        stale.overwrite(pa.table({"id": pa.array([3], pa.int64()), "name": ["a"]}),
                        "name = 'a'")
    assert attempts == []  # validation failed before any swap was tried
    rows = catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()
    assert sorted(rows) == [1, 2]


def test_a_commit_nested_in_a_commit_of_the_same_table_does_not_wait(
        catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    with catalog.commit_lock("db.t") as outer:
        begun = time.monotonic()
        with catalog.commit_lock(("db", "t")) as inner:
            assert outer and inner
        catalog.load_table("db.t").append(
            pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
        assert time.monotonic() - begun < 30
