"""Exactly once under kill -9: a streaming query into an icepark table, its driver killed at
random points 20 times and restarted from its checkpoint, holds every source row once."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icepark.catalog import BaseCatalog
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from tests.spark.test_streams import source_file
from tests.spark.test_write import catalog, live_files

pytestmark = [pytest.mark.spark, pytest.mark.slow]
__all__ = ["catalog"]

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
DRIVER = Path(__file__).with_name("stream_driver.py")
ROOT = Path(__file__).parents[2]
FILES, ROWS = 40, 25
KILLS = 20


def start(source: Path, checkpoint: Path, tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
           "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(source), str(checkpoint),
         str(tmp_path / "catalog.db"), str(tmp_path / "wh")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        start_new_session=True)  # its own process group: the JVM dies with it


def kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_every_row_lands_once_across_twenty_kills(catalog: BaseCatalog, tmp_path: Path) -> None:
    schema = SCHEMA
    table = catalog.create_table(
        "db.t", schema, partition_spec=PartitionSpecBuilder(schema).identity("s").build())
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    files = add_files(source, 0, FILES)  # ids 0 .. FILES*ROWS-1
    rng = random.Random(20261127)
    kills = 0
    while kills < KILLS:
        process = start(source, checkpoint, tmp_path)
        assert process.stdout is not None
        line = process.stdout.readline()  # "started" once the query runs ("" if it died)
        if line.strip() != "started":
            kill(process)
            pytest.fail(f"the streaming driver did not start (exit {process.returncode})")
        time.sleep(rng.uniform(0.0, 2.5))
        finished = process.poll() is not None
        kill(process)
        if finished:  # every file was read before this kill: give the next run more
            files = add_files(source, files, FILES // 2)
        else:
            kills += 1
    final = start(source, checkpoint, tmp_path)
    out, _ = final.communicate(timeout=600)
    assert final.returncode == 0 and "done" in out

    found = sorted(row["id"] for f in live_files(table.refresh())
                   for row in pq.read_table(f.file_path, columns=["id"]).to_pylist())
    assert found == list(range(files * ROWS))


def add_files(source: Path, first: int, count: int) -> int:
    """Source files ``first`` .. ``first + count - 1`` (ids ``n*ROWS`` up); the new total."""
    for n in range(first, first + count):
        source_file(source, n, ROWS)
    return first + count
