"""icepark on a standalone Spark cluster: a driver process (``cluster_driver.py``) runs the data
work against the run's cluster (a master and two one-core workers, ``conftest.py``), with a
warehouse on local disk that every process sees and a table in S3. Its tasks must run in the
executors' processes, on both workers; the S3 table, whose files only the catalog's FileIO
properties open, must be written and read there; and what the driver reads, and what icepark's
Arrow reader reads here, must equal what the operations mean."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tools.cluster import Cluster, clean_env
from tools.s3_server import S3Server

from icepark.catalog import load_catalog
from icepark.table.table import Table

DRIVER = Path(__file__).with_name("cluster_driver.py")

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def driver_run(spark_cluster: Cluster, s3_endpoint: S3Server,
               tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("cluster-driver")
    (folder / "s3.json").write_text(json.dumps(
        {"bucket": s3_endpoint.new_bucket(), "properties": s3_endpoint.properties()}))
    with subprocess.Popen([sys.executable, str(DRIVER), spark_cluster.master, str(folder)],
                          cwd=folder, env=clean_env(folder), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as driver:
        try:  # the workers register while the driver starts
            spark_cluster.await_workers()
            out, err = driver.communicate(timeout=900)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)  # the driver and its JVM
            driver.communicate()
            raise
    assert driver.returncode == 0, f"{err[-5000:]}\n{spark_cluster.log_tails()}"
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    failed = {name: outcome for name, outcome in found["steps"].items() if outcome != "ok"}
    assert not failed, "\n\n".join(f"{k}: {v}" for k, v in failed.items()) + \
        f"\n{spark_cluster.log_tails()}"
    return folder, found


def _worker(cwd: str, cluster: Cluster) -> Path | None:
    """The work directory of the worker whose executor ran in ``cwd``, if any: an executor
    runs in ``<work dir>/<app id>/<executor id>``."""
    parent = Path(cwd).resolve().parent.parent
    return next((d for d in cluster.work_dirs if parent == d.resolve()), None)


def _events() -> list[list[Any]]:
    """The rows of db.events after the driver's write, delete, update and merge."""
    kinds = {i: "click" for i in range(2000) if i % 10 != 0}
    kinds.update({i: "CLICK" for i in range(1, 5)})
    kinds.update({i: "m" for i in range(1995, 2005)})
    return sorted([i, k] for i, k in kinds.items())


def _nested() -> list[tuple[Any, ...]]:
    return [(i, [str(i), "x"], {"n": i}, str(i % 3)) for i in range(300)]


def _writers(table: Table) -> set[str]:
    """The ``created_by`` of the table's live data files' Parquet footers."""
    return {pq.ParquetFile(t.data_file.file_path.removeprefix("file:")).metadata.created_by
            .split(" version")[0] for t in table.scan().plan_files()}


def test_tasks_run_in_executors_on_both_workers(
        spark_cluster: Cluster, driver_run: tuple[Path, dict[str, Any]]) -> None:
    _, found = driver_run
    driver, tasks = found["driver"], found["tasks"]
    assert driver["pid"] not in {t["pid"] for t in tasks}
    assert _worker(driver["cwd"], spark_cluster) is None
    assert {_worker(t["cwd"], spark_cluster) for t in tasks} == set(spark_cluster.work_dirs)


def test_reads_in_the_driver_and_here_agree(driver_run: tuple[Path, dict[str, Any]]) -> None:
    folder, found = driver_run
    expected = _events()
    assert found["read"] == expected
    assert found["after maintenance"] == expected  # maintenance changed no row
    assert found["filtered"] == len([r for r in expected if r[0] < 100])
    assert found["deletes rewritten"] > 0 and found["data rewritten"] > 0
    assert [o.removeprefix("file:") for o in found["orphans"]] == [found["planted"]]
    nested = _nested()
    assert [list(r) for r in found["source read"]] == \
        [[i, tags, attrs] for i, tags, attrs, _ in nested if i >= 250]
    warehouse = folder / "warehouse"
    catalog = load_catalog("default", type="sql", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                           warehouse=str(warehouse))
    events_table, nested_table = catalog.load_table("db.events"), catalog.load_table("db.nested")
    # Spark's own Parquet writer (parquet-mr) wrote the flat table, pyarrow the nested one
    assert _writers(events_table) == {"parquet-mr"}
    assert _writers(nested_table) == {"parquet-cpp-arrow"}
    events = events_table.scan().to_arrow()
    assert sorted(zip(events.column("id").to_pylist(), events.column("kind").to_pylist(),
                      strict=True)) == [tuple(r) for r in expected]
    table = nested_table.scan().to_arrow()
    rows = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "tags", "attrs", "part")),
                      strict=True))
    assert [(i, t, dict(a), p) for i, t, a, p in rows] == nested


def test_the_executors_open_s3_files_with_the_catalogs_properties(
        s3_endpoint: S3Server, driver_run: tuple[Path, dict[str, Any]]) -> None:
    """The executors' environment has no S3 endpoint or key: the remote table's files were
    written, deleted from and read there with the FileIO properties that came with the
    tasks, and its manifests were planned there the same way."""
    folder, found = driver_run
    expected = sorted((i, "spam" if i % 10 == 0 else "click") for i in range(2000)
                      if i % 10 != 0 or i >= 1000)
    assert [tuple(r) for r in found["remote"]] == expected
    assert [tuple(r) for r in found["remote planned in tasks"]] == expected
    s3 = json.loads((folder / "s3.json").read_text(encoding="utf-8"))
    remote = load_catalog("remote", type="sql", uri=f"sqlite:///{folder / 'remote.db'}",
                          **s3["properties"]).load_table("db.remote")
    assert remote.location.startswith(f"s3://{s3['bucket']}/")
    arrow = remote.scan().to_arrow()
    assert sorted(zip(arrow.column("id").to_pylist(), arrow.column("kind").to_pylist(),
                      strict=True)) == expected
    keys = [o["Key"] for o in s3_endpoint.client().list_objects_v2(
        Bucket=s3["bucket"])["Contents"]]
    assert any(k.endswith("-deletes.parquet") for k in keys)  # written in an executor
