"""The declarative-pipelines example (``examples/pipelines``) runs as its header says:
``spark-pipelines run`` in its folder streams the landing JSON files into the icepark table
``db.events``; a second run after more files land appends only those, each row once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icepark.catalog import load_catalog
from icepark.table.streams.epochs import QUERY_ID_PROPERTY
from tests.cli.conftest import cli_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
SPARK_PIPELINES = Path(sys.executable).parent / "spark-pipelines"
STORAGE = "file:///tmp/icepark-example-pipeline/storage"

# Two `spark-pipelines run`s, each starting its own Spark Connect server: about four minutes
# on a loaded 2-core machine, which the 30-minute suite cannot afford beside the Connect,
# cluster and S3 tests; `make test-slow` runs it.
pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _run(args: list[str], folder: Path, env: dict[str, str]) -> str:
    result = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout + result.stderr


def _landed(folder: Path) -> list[int]:
    """The ids the flow must deliver: every landed event but the spam."""
    ids = []
    for path in sorted((folder / "landing").glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event["kind"] != "spam":
                ids.append(event["id"])
    return sorted(ids)


def test_the_pipeline_streams_landing_files_into_the_table_once(tmp_path: Path) -> None:
    folder = tmp_path / "pipelines"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(
        "warehouse", "landing", "__pycache__"))
    spec = folder / "spark-pipeline.yml"  # its checkpoints here instead of under /tmp
    text = spec.read_text(encoding="utf-8")
    assert STORAGE in text
    spec.write_text(text.replace(STORAGE, (tmp_path / "storage").as_uri()), encoding="utf-8")
    env = cli_env(tmp_path, PATH=f"{SPARK_PIPELINES.parent}{os.pathsep}{os.environ['PATH']}")
    _run([sys.executable, "setup_tables.py"], folder, env)
    output = _run([str(SPARK_PIPELINES), "run"], folder, env)
    assert "Run is COMPLETED" in output, output[-3000:]

    catalog = load_catalog("default", type="sql",
                           uri=f"sqlite:///{folder / 'warehouse' / 'catalog.db'}",
                           warehouse=str(folder / "warehouse"))
    table = catalog.load_table("db.events")
    first = _landed(folder)
    assert len(first) == 270
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == first
    head = table.current_snapshot()
    assert head is not None and head.summary is not None
    assert QUERY_ID_PROPERTY in head.summary.properties

    _run([sys.executable, "setup_tables.py", "--more", "2"], folder, env)
    _run([str(SPARK_PIPELINES), "run"], folder, env)
    table = table.refresh()
    everything = _landed(folder)
    assert len(everything) == 450
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == everything
    days = {t.data_file.partition for t in table.scan().plan_files()}
    assert len(days) > 1  # partitioned by day(ts)
