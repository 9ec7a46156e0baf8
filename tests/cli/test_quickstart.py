"""`icepark quickstart` (what `make run` runs), at a small size, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tools import peer_read
from tools.cluster import BRIEF_SUBMIT_ARGS

from icepark.cli.quickstart.check import compare_peers
from icepark.cli.quickstart.report import Report
from tests.cli.conftest import cli_env, run_in_process

SRC = Path(__file__).resolve().parents[2] / "src"


def quickstart(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYSPARK_SUBMIT_ARGS": BRIEF_SUBMIT_ARGS}
    return subprocess.run([sys.executable, "-m", "icepark.cli", "quickstart",
                           "--master", "local[2]", "--json", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          check=False)


def spam(n: int) -> int:
    """The generator's spam events among ids 0 .. n-1: ``13 * id mod 20 == 19``."""
    return sum(1 for i in range(n) if 13 * i % 20 == 19)


def check_run(result: subprocess.CompletedProcess[str], n: int) -> dict[str, Any]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary: dict[str, Any] = json.loads(result.stdout)
    first, later, extra = n * 4 // 5, n - n * 4 // 5, n // 20
    final = n + extra - spam(n + extra)
    rows = summary["rows"]
    assert (rows["ingested"], rows["appended"], rows["appended_after_spec_change"]) == (
        first, later, extra)
    assert rows["deleted"] == spam(n + extra)
    assert rows["final"] == rows["expected_final"] == final
    assert rows["at_first_snapshot"] == first  # the time-travel read
    operations = [s["operation"] for s in summary["snapshots"]]
    assert operations[:3] == ["append", "append", "append"] and len(operations) == 4

    readers = summary["readers"]
    assert set(readers) == {"icepark", "pyiceberg", "duckdb"}
    agreed = {k: readers["icepark"][k] for k in ("rows", "groups", "sums")}
    for peer in ("pyiceberg", "duckdb"):
        assert {k: readers[peer].get(k) for k in agreed} == agreed, peer
    assert summary["agree"] is True
    assert agreed["rows"] == final
    assert "spam" not in {v for v, _ in agreed["groups"]["kind"]}
    # rows written before `country` existed read null; spam was deleted
    countries = dict(agreed["groups"]["country"])
    assert countries[None] == n - spam(n)
    assert sum(countries.values()) == final
    assert agreed["sums"]["event_id"] == sum(i for i in range(n + extra) if 13 * i % 20 != 19)
    return summary


@pytest.mark.spark
def test_quickstart_runs_and_the_three_readers_agree(tmp_path: Path, spark: SparkSession
                                                     ) -> None:
    """As ``make run`` runs it, then again in the same folder (in this process, lent the
    shared Spark session: the second run is about replacing the first one's table)."""
    summary = check_run(quickstart(tmp_path, "--rows", "20000"), 20_000)
    assert summary["warehouse"] == str((tmp_path / "warehouse").resolve())
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
    first_location = summary["metadata_location"]

    args = ["quickstart", "--master", "local[2]", "--json", "--rows", "1000"]
    again = check_run(run_in_process(args, tmp_path, cli_env(tmp_path), spark), 1000)
    assert again["metadata_location"] != first_location
    assert not Path(first_location).exists()  # the earlier table was dropped with its files


def test_bad_row_count_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "icepark.cli", "quickstart", "--rows", "5"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)},
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert "--rows: must be at least 100, not 5" in result.stderr


def test_missing_peer_script_is_skipped_not_failed(tmp_path: Path) -> None:
    lines: list[str] = []
    report = Report(as_json=False, write=lines.append, unicode=False)
    agree, peers = compare_peers(report, "unused.metadata.json", {}, group_by=("kind",),
                                 sums=(), script=tmp_path / "tools" / "peer_read.py")
    assert (agree, peers) == (None, {})
    assert len(lines) == 1 and lines[0].startswith("- peers")
    assert "skipped" in lines[0] and "install the test extras" in lines[0]


def test_a_missing_peer_engine_is_reported_as_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(*_: object) -> dict[str, Any]:
        raise ModuleNotFoundError("No module named 'duckdb'", name="duckdb")

    def broken(*_: object) -> dict[str, Any]:
        raise OSError("cannot read")

    monkeypatch.setattr(peer_read, "ENGINES", {"duckdb": not_installed, "pyiceberg": broken})
    found = peer_read.read_all("x.metadata.json", ["kind"], [])
    assert found == {"duckdb": {"skipped": "duckdb is not installed (duckdb)"},
                     "pyiceberg": {"error": "OSError: cannot read"}}
