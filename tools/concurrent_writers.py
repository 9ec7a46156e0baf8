"""Many writer processes appending to one table at once, and the checks of what they left.

Used by the concurrency test (``tests/catalog/test_concurrent_writers.py``) and benchmark
(``benchmarks/bench_concurrent_commits.py``). :func:`race` creates ``db.t`` with default table
properties, starts ``writers`` processes that each make ``appends`` appends of a small Arrow
batch of ids unique to it (:meth:`Table.append`, the default merge append), releases them at
once, and checks the table afterwards: every acknowledged row is present exactly once, nothing
else is, history is linear, and no data file of a failed attempt is left behind. A writer
whose append raises :class:`~icepark.errors.CommitFailed` counts a give-up and goes on.

A writer runs as ``python -m tools.concurrent_writers '<json config>'``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import CommitFailed
from icepark.spec.schema import Schema
from icepark.spec.snapshots import ancestors_of
from icepark.spec.types import LONG, STRING, NestedField

ROWS_PER_APPEND = 3
IDENTIFIER = "db.t"
SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "name", STRING))
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RaceResult:
    """What the writers did and what the table holds afterwards."""

    writers: int
    appends: int
    commits: int
    give_ups: int
    attempts: int
    seconds: float
    p50_ms: float
    max_ms: float
    problems: tuple[str, ...]

    @property
    def commits_per_second(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0


def race(catalog_properties: dict[str, str], writers: int, appends: int,
         table_properties: dict[str, str] | None = None) -> RaceResult:
    """Create ``db.t`` in the catalog ``catalog_properties`` open (``name`` among them), run
    the writers and check the table."""
    props = dict(catalog_properties)
    catalog = load_catalog(props.pop("name"), **props)
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    catalog.create_table(IDENTIFIER, SCHEMA, properties=table_properties or {})
    with tempfile.TemporaryDirectory(prefix="icepark-race-") as barrier:
        children = [_start(catalog_properties, w, appends, barrier) for w in range(writers)]
        deadline = time.monotonic() + 300
        while (len(list(Path(barrier).glob("ready-*"))) < writers
               and time.monotonic() < deadline):
            time.sleep(0.01)
        (Path(barrier) / "go").touch()
        reports = [_finish(child) for child in children]
    started = min(r["started"] for r in reports)
    ended = max(r["ended"] for r in reports)
    latencies = [ms for r in reports for ms in r["latencies_ms"]]
    acknowledged = [i for r in reports for i in r["acknowledged"]]
    commits = len(acknowledged) // ROWS_PER_APPEND
    return RaceResult(
        writers, appends, commits, sum(r["give_ups"] for r in reports),
        sum(r["attempts"] for r in reports), ended - started,
        statistics.median(latencies) if latencies else 0.0, max(latencies, default=0.0),
        tuple(check_table(catalog_properties, acknowledged, commits)))


def check_table(catalog_properties: dict[str, str], acknowledged: list[int],
                commits: int) -> list[str]:
    """What is wrong with ``db.t`` after the race (nothing, if the list is empty)."""
    props = dict(catalog_properties)
    table = load_catalog(props.pop("name"), **props).load_table(IDENTIFIER)
    problems = []
    ids = table.scan().to_arrow().column("id").to_pylist()
    if sorted(ids) != sorted(acknowledged):
        problems.append(f"{len(ids)} rows in the table, {len(acknowledged)} acknowledged "
                        f"({len(set(ids) - set(acknowledged))} unacknowledged, "
                        f"{len(set(acknowledged) - set(ids))} lost, "
                        f"{len(ids) - len(set(ids))} duplicated)")
    md = table.metadata
    by_id = {s.snapshot_id: s for s in md.snapshots}
    chain = list(ancestors_of(md.current_snapshot_id, by_id))
    if not len(chain) == len(md.snapshots) == commits:
        problems.append(f"history is not linear: {len(chain)} ancestors, {len(md.snapshots)} "
                        f"snapshots, {commits} commits")
    if [s.sequence_number for s in reversed(chain)] != list(range(1, len(chain) + 1)):
        problems.append("sequence numbers are not 1, 2, 3, ...")
    data = Path(table.location.removeprefix("file://")) / "data"
    written = {str(p) for p in data.rglob("*.parquet")}
    live = {t.data_file.file_path.removeprefix("file://") for t in table.scan().plan_files()}
    if written != live:
        problems.append(f"{len(written - live)} data files left behind by failed attempts")
    return problems


def _start(catalog_properties: dict[str, str], worker: int, appends: int,
           barrier: str) -> subprocess.Popen[str]:
    config = {"catalog": catalog_properties, "worker": worker, "appends": appends,
              "barrier": barrier}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), *sys.path])
    return subprocess.Popen([sys.executable, "-m", "tools.concurrent_writers", json.dumps(config)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(child: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = child.communicate(timeout=1800)
    if child.returncode != 0:
        raise RuntimeError(f"A writer failed (exit {child.returncode}): {stderr[-2000:]}")
    report: dict[str, Any] = json.loads(stdout)
    return report


def count_attempts(catalog: BaseCatalog) -> list[int]:
    """Count the catalog's ``commit_table`` calls (commit attempts) from now on, in the
    one-element list returned."""
    attempts = [0]
    commit_table = catalog.commit_table

    def counting(*args: Any, **kwargs: Any) -> Any:
        attempts[0] += 1
        return commit_table(*args, **kwargs)

    setattr(catalog, "commit_table", counting)  # noqa: B010 - counting this instance's calls
    return attempts


def _write(config: dict[str, Any]) -> dict[str, Any]:
    """One writer: wait for the start, append, report."""
    props = dict(config["catalog"])
    catalog = load_catalog(props.pop("name"), **props)
    table = catalog.load_table(IDENTIFIER)
    worker, appends, barrier = config["worker"], config["appends"], Path(config["barrier"])
    attempts = count_attempts(catalog)
    (barrier / f"ready-{worker}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.001)
    started = time.time()
    acknowledged: list[int] = []
    latencies: list[float] = []
    give_ups = 0
    for i in range(appends):
        ids = [(worker * appends + i) * ROWS_PER_APPEND + j for j in range(ROWS_PER_APPEND)]
        batch = pa.table({"id": pa.array(ids, pa.int64()),
                          "name": [f"w{worker}-{i}"] * ROWS_PER_APPEND})
        begun = time.perf_counter()
        try:
            table.append(batch)
        except CommitFailed:
            give_ups += 1
            continue
        latencies.append((time.perf_counter() - begun) * 1000)
        acknowledged += ids
    return {"acknowledged": acknowledged, "give_ups": give_ups, "attempts": attempts[0],
            "latencies_ms": latencies, "started": started, "ended": time.time()}


if __name__ == "__main__":
    print(json.dumps(_write(json.loads(sys.argv[1]))))
