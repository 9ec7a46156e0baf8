"""icepark's entry points in a Spark Connect client: metadata work in the client process,
data work on the server (see :mod:`icepark.spark.connect`). One client process runs them all
against the run's Connect server; its reads must equal what the operations mean, and the
tables must read the same through icepark's Arrow reader here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from icepark.catalog import load_catalog
from tests.cli.conftest import cli_env
from tests.spark.test_write import assert_field_ids_everywhere, live_files

CLIENT = Path(__file__).with_name("connect_client.py")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def client_run(connect_url: str, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("connect-client")
    result = subprocess.run([sys.executable, str(CLIENT), connect_url, str(folder)],
                            env=cli_env(folder), capture_output=True, text=True, timeout=900,
                            check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return folder, found


def _expected() -> list[list[Any]]:
    """The rows of db.t after the client's writes, delete, update, merge and upsert."""
    kinds = {i: "spam" if i % 10 == 0 and i < 1000 else "click" for i in range(1100)}
    kinds = {i: k for i, k in kinds.items() if k != "spam"}
    kinds.update({i: "CLICK" for i in range(1, 5)})
    kinds.update({i: "m" for i in range(995, 1005)})
    kinds.update({i: "u" for i in range(3)})
    return sorted([i, k] for i, k in kinds.items())


def test_the_client_is_a_connect_session(client_run: tuple[Path, dict[str, Any]]) -> None:
    _, found = client_run
    assert found["session"].startswith("pyspark.sql.connect")


def test_every_entry_point_runs(client_run: tuple[Path, dict[str, Any]]) -> None:
    _, found = client_run
    failed = {name: outcome for name, outcome in found["steps"].items() if outcome != "ok"}
    assert not failed, "\n\n".join(f"{k}: {v}" for k, v in failed.items())


def test_reads_in_the_client_and_here_agree(client_run: tuple[Path, dict[str, Any]]) -> None:
    folder, found = client_run
    expected = _expected()
    assert found["read"] == expected
    # ids 1000-2998 (even) updated, 3000-3998 (even) inserted
    assert found["narrow merge"] == [["n", 1500], ["x", 2000]]
    assert found["after maintenance"] == expected  # maintenance changed no row
    assert found["distributed read"] == expected
    assert found["filtered"] == len([r for r in expected if r[0] < 100])
    assert found["datasource read"] == len([r for r in expected if r[0] >= 1000])
    assert found["feed"] == expected  # streamed table to table
    assert found["changes"] > 0 and found["orphans"] == 0
    assert found["ndv"]["id"] == pytest.approx(len(expected), rel=0.05)
    row_ids = found["v3 row ids"]  # 1,000 rows got IDs 0-999; ten of them were deleted
    assert len(row_ids) == len(set(row_ids)) == 990 and set(row_ids) <= set(range(1000))
    assert found["batches"] == 990 and found["legacy"] == 50
    warehouse = folder / "warehouse"
    catalog = load_catalog("default", type="sql", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                           warehouse=str(warehouse))
    assert found["cached write"] == [[i, str(i)] for i in range(500)]
    for f in live_files(catalog.load_table("db.cached")):
        assert_field_ids_everywhere(f.file_path)
    table = catalog.load_table("db.t")
    arrow = table.scan().to_arrow()
    assert sorted(zip(arrow.column("id").to_pylist(), arrow.column("kind").to_pylist(),
                      strict=True)) == [tuple(r) for r in expected]
