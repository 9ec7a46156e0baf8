"""Several processes: a writer killed mid-commit, and concurrent writers committing at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from icepark.catalog.base import BaseCatalog
from icepark.catalog.metastore import parse_version
from icepark.spec.snapshots import ancestors_of
from icepark.table.change import updates as u
from tests.catalog.catalog_helpers import (
    FAST_RETRY,
    SCHEMA,
    live_data_files,
    live_rows,
    metadata_files,
)

WORKER = Path(__file__).with_name("catalog_worker.py")
SRC = Path(__file__).resolve().parents[2] / "src"
PROCESSES, COMMITS = 4, 10


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *sys.path])
    return env


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_writer_killed_between_metadata_write_and_swap(catalog: BaseCatalog, kind: str,
                                                       warehouse: Path) -> None:
    """(d) kill -9 after the metadata file is written and before the pointer moves: the table
    is unchanged and loads; the orphan file is only garbage; later commits work."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    child = _worker("crash", kind, str(warehouse))
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, stderr
    folder = Path(table.location) / "metadata"
    leftovers = sorted(p.name for p in folder.iterdir())
    if kind == "sql":
        assert len(metadata_files(table.location)) == 2  # ours and the orphan
    else:
        assert any(n.startswith(".v2.metadata.json.") for n in leftovers), leftovers
        assert metadata_files(table.location) == [table.metadata_location]
    loaded = catalog.load_table("db.t")
    assert loaded.metadata_location == table.metadata_location
    assert loaded.metadata == table.metadata
    after = catalog.commit_table(("db", "t"), [], [u.SetProperties({"after": "crash"})])
    assert catalog.load_table("db.t").properties == {"after": "crash"}
    assert after.metadata_location.rsplit("/", 1)[-1].startswith(
        "00001-" if kind == "sql" else "v2.")


def _race(kind: str, warehouse: Path, barrier: Path, mode: str) -> list[dict[str, Any]]:
    """Start the workers, release them at once, and return their reports."""
    barrier.mkdir()
    workers = [_worker(mode, kind, str(warehouse), str(w), str(COMMITS), str(barrier))
               for w in range(PROCESSES)]
    deadline = time.monotonic() + 120
    while len(list(barrier.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
        time.sleep(0.01)
    (barrier / "go").touch()  # all start committing at once
    reports = []
    for child in workers:
        stdout, stderr = child.communicate(timeout=600)
        assert child.returncode == 0, stderr
        report = json.loads(stdout)
        assert report["error"] is None, report
        reports.append(report)
    return reports


def test_concurrent_appends_lose_no_rows(catalog: BaseCatalog, kind: str, warehouse: Path,
                                         tmp_path: Path) -> None:
    """N processes each append M small Arrow batches of unique ids with the real
    :meth:`Table.append` (merge append, merging every few manifests): every acknowledged row is
    in the final snapshot's live data files exactly once, and the history is linear."""
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, properties={
        **FAST_RETRY, "commit.manifest.min-count-to-merge": "3"})
    reports = _race(kind, warehouse, tmp_path / "barrier", "append")
    acknowledged = [i for r in reports for i in r["acknowledged"]]
    attempts = sum(r["attempts"] for r in reports)
    assert len(acknowledged) == len(set(acknowledged)) == PROCESSES * COMMITS * 3
    assert attempts > PROCESSES * COMMITS, "the writers did race (some attempts lost)"

    table = catalog.load_table("db.t")
    ids = [row["id"] for row in live_rows(table)]
    assert sorted(ids) == sorted(acknowledged), "every acknowledged row, exactly once"
    md = table.metadata
    chain = list(ancestors_of(md.current_snapshot_id, {s.snapshot_id: s for s in md.snapshots}))
    assert len(chain) == len(md.snapshots) == PROCESSES * COMMITS, "one linear history"
    assert [s.sequence_number for s in reversed(chain)] == list(range(1, len(chain) + 1))
    totals = [int(s.summary.properties["total-records"]) for s in reversed(chain) if s.summary]
    assert totals == [3 * n for n in range(1, len(chain) + 1)]
    data = Path(table.location.removeprefix("file://")) / "data"
    written = sorted(str(p) for p in data.rglob("*.parquet"))
    live = sorted(f.file_path.removeprefix("file://") for f in live_data_files(table))
    assert written == live, "no data file of a lost attempt is left behind"


def test_concurrent_writers_lose_no_update(catalog: BaseCatalog, kind: str, warehouse: Path,
                                           tmp_path: Path) -> None:
    """N processes commit M appends each to one table through the catalog, retrying on
    conflicts: every acknowledged commit is present once and history stays linear."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA, properties=FAST_RETRY)
    reports = _race(kind, warehouse, tmp_path / "barrier", "commit")
    acknowledged: list[str] = [key for r in reports for key in r["acknowledged"]]
    attempts = sum(r["attempts"] for r in reports)
    assert len(acknowledged) == PROCESSES * COMMITS
    assert attempts > len(acknowledged), "the writers did race (some attempts lost)"

    md = catalog.load_table("db.t").metadata
    keys = [s.summary.properties["commit-key"] for s in md.snapshots if s.summary]
    assert sorted(keys) == sorted(acknowledged), "every acknowledged commit, exactly once"
    assert set(acknowledged) <= set(md.properties), "no lost property update"

    chain = list(ancestors_of(md.current_snapshot_id, {s.snapshot_id: s for s in md.snapshots}))
    assert len(chain) == len(md.snapshots) == PROCESSES * COMMITS, "one linear history"
    assert [s.sequence_number for s in reversed(chain)] == list(range(1, len(chain) + 1))

    log = [e.metadata_file for e in md.metadata_log]
    assert log[0] == table.metadata_location and len(set(log)) == len(log) == len(chain)
    first = 0 if kind == "sql" else 1
    versions = [parse_version(loc) for loc in [*log, catalog.load_table("db.t").metadata_location]]
    assert versions == list(range(first, first + len(chain) + 1)), "a linear metadata log"
