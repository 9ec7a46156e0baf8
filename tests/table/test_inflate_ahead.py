"""Planning reads data manifests ahead on threads and inflates them there
(:data:`icepark.table.scan.planner.INFLATE_AHEAD_MAX_BYTES`), those written a record per block
as pyiceberg writes them and those of large blocks: the plan is the same as when they are
inflated a block at a time by the decoding thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark.io.avro import native
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest import manifest as manifest_module
from icepark.table.scan import planner as planner_module
from icepark.table.scan import tasks
from icepark.table.scan.scan import TableScan
from tests.table.scan_fixtures import ScanTable, long_bounds, name_of

UNCACHED = ArrowFileIO({"io.manifest.cache-enabled": "false"})


@pytest.mark.parametrize("block_rows", [1, 4096])
@pytest.mark.parametrize("row_filter", ["id > 12", "category = 'a'", "true"])
def test_manifests_plan_the_same_inflated_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str, block_rows: int
) -> None:
    monkeypatch.setattr(manifest_module, "BLOCK_ROWS", block_rows)  # 1: as pyiceberg writes
    t = ScanTable(tmp_path)
    for i in range(4):
        t.append(*[t.file(f"f{i}{j}", ("a" if j % 2 else "b",),
                          **long_bounds(1, 10 * i, 10 * i + j)) for j in range(5)])
    outcomes: list[bool] = []
    def inflated(content: bytes, block_bytes: int) -> bytes:
        out = native.inflated(content, block_bytes)
        outcomes.append(out is not content)
        return out

    monkeypatch.setattr(planner_module, "inflated", inflated)
    ahead = list(TableScan(t.metadata, UNCACHED, row_filter=row_filter).plan_files())
    assert outcomes == [True] * 4  # every data manifest, on the read-ahead threads
    monkeypatch.setattr(planner_module, "INFLATE_AHEAD_MAX_BYTES", -1)
    outcomes.clear()
    decoded = list(TableScan(t.metadata, UNCACHED, row_filter=row_filter).plan_files())
    assert outcomes == []
    assert ahead == decoded
    expected = {"id > 12": {f"f{i}{j}" for i in range(4) for j in range(5) if 10 * i + j > 12},
                "category = 'a'": {f"f{i}{j}" for i in range(4) for j in (1, 3)},
                "true": {f"f{i}{j}" for i in range(4) for j in range(5)}}[row_filter]
    assert {name_of(task.data_file) for task in ahead} == expected


def test_local_manifests_are_read_ahead_by_one_thread_remote_ones_by_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One thread keeps ahead of decoding manifests on this machine's file system (more only
    take the GIL from the decoding thread); waits on remote storage are overlapped by
    :data:`~icepark.table.scan.tasks.READ_THREADS`."""
    t = ScanTable(tmp_path)
    for i in range(3):
        t.append(t.file(f"f{i}", **long_bounds(1, i, i)))
    threads: list[int] = []
    parallel_map = tasks.parallel_map

    def counted(fn: Any, items: Any, count: int = -1) -> Any:
        threads.append(count)
        return parallel_map(fn, items, count)

    monkeypatch.setattr(planner_module, "parallel_map", counted)
    planned = list(TableScan(t.metadata, UNCACHED).plan_files())
    assert threads == [planner_module.LOCAL_READ_AHEAD] == [1] and len(planned) == 3
    threads.clear()
    monkeypatch.setattr(planner_module, "is_local", lambda _: False)  # as for s3://
    assert list(TableScan(t.metadata, UNCACHED).plan_files()) == planned
    assert threads == [tasks.READ_THREADS] and tasks.READ_THREADS > 1
