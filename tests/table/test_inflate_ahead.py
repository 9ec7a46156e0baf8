"""Planning inflates data manifests ahead on other threads
(:data:`icepark.table.scan.planner.INFLATE_AHEAD_MAX_BYTES`): local ones in batches on one
thread, which also runs the kernel for some (:mod:`icepark.table.scan.read_ahead`), others
(and all without numba) a file at a time on threads reading them ahead. Those written a record
per block as pyiceberg writes them and those of large blocks: the plan is the same as when they
are inflated a block at a time by the decoding thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark.errors import CorruptFile, FileNotFound, IcebergError
from icepark.io.avro import ahead as ahead_module
from icepark.io.avro import native
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest import manifest as manifest_module
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.table.scan import planner as planner_module
from icepark.table.scan import read_ahead, tasks
from icepark.table.scan.scan import TableScan
from tests.io.test_avro_ahead import counted_kernel_runs
from tests.table.scan_fixtures import ScanTable, long_bounds, name_of

UNCACHED = ArrowFileIO({"io.manifest.cache-enabled": "false"})


def _no_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Manifests read ahead a file at a time on threads (as for remote storage, or without
    numba): the path of :data:`~icepark.table.scan.planner.LOCAL_READ_AHEAD`."""
    monkeypatch.setattr(planner_module, "READ_IN_BATCHES", False)


@pytest.mark.parametrize("block_rows", [1, 4096])
@pytest.mark.parametrize("row_filter", ["id > 12", "category = 'a'", "true"])
def test_manifests_plan_the_same_inflated_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str, block_rows: int
) -> None:
    monkeypatch.setattr(manifest_module, "BLOCK_ROWS", block_rows)  # 1: as pyiceberg writes
    _no_batches(monkeypatch)
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


MANIFESTS, FILES = 9, native.MIN_RECORDS + 6


def _many_files(tmp_path: Path) -> ScanTable:
    """``MANIFESTS`` data manifests of ``FILES`` files each: enough for the kernel."""
    t = ScanTable(tmp_path)
    for i in range(MANIFESTS):
        t.append(*[t.file(f"f{i}_{j}", ("a" if j % 2 else "b",),
                          **long_bounds(1, 100 * i, 100 * i + j)) for j in range(FILES)])
    return t


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("block_rows", [1, 4096])
@pytest.mark.parametrize("row_filter", ["id > 250", "category = 'a'", "true"])
def test_manifests_plan_the_same_inflated_and_run_in_batches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str, block_rows: int,
        share: float) -> None:
    """Local manifests read by the planning thread, inflated in batches on another, with the
    kernel run there for a share of them (:mod:`icepark.table.scan.read_ahead`): the plan is
    the one of manifests read ahead a file at a time, and of manifests never inflated whole.
    The kernel runs on the planning thread only for the manifests not run ahead: the first
    three (submitted before a manifest of their schema was decoded) and those left out by
    the share."""
    monkeypatch.setattr(manifest_module, "BLOCK_ROWS", block_rows)
    t = _many_files(tmp_path)
    monkeypatch.setattr(read_ahead, "FIRST_SHARE", share)
    monkeypatch.setattr(read_ahead, "SHARE_STEP", 0.0)  # the share kept throughout
    runs = counted_kernel_runs(monkeypatch)
    submitted: list[int] = []
    submit = ahead_module.InflateAhead.submit

    def counted(self: Any, files: Any, program: Any) -> Any:
        submitted.append(len(files))
        return submit(self, files, program)

    monkeypatch.setattr(ahead_module.InflateAhead, "submit", counted)
    batched = list(TableScan(t.metadata, UNCACHED, row_filter=row_filter).plan_files())
    assert submitted == [1, 2, 4, 2]  # every data manifest, batch after batch
    # the batches asked of 4 and 8 (holding 4 and 2) ran the kernel ahead for a share of
    # theirs: 0, 2 + 2 (the first half of 4 and of 8) or all 6
    assert len(runs) == {0.0: MANIFESTS, 0.5: MANIFESTS - 4, 1.0: MANIFESTS - 6}[share]
    runs.clear()
    _no_batches(monkeypatch)
    by_file = list(TableScan(t.metadata, UNCACHED, row_filter=row_filter).plan_files())
    assert len(runs) == MANIFESTS
    monkeypatch.setattr(planner_module, "INFLATE_AHEAD_MAX_BYTES", -1)
    never = list(TableScan(t.metadata, UNCACHED, row_filter=row_filter).plan_files())
    assert batched == by_file == never
    assert len(batched) == {"id > 250": 6 * FILES + sum(1 for j in range(FILES) if j > 50),
                            "category = 'a'": MANIFESTS * (FILES // 2),
                            "true": MANIFESTS * FILES}[row_filter]


class _Scripted:
    """A batch's future that says whether it is done as the test says (its result is real)."""

    def __init__(self, future: Any, ready: bool) -> None:
        self.future, self.ready = future, ready

    def done(self) -> bool:
        return self.ready

    def result(self) -> Any:
        return self.future.result()


@pytest.mark.parametrize("ready", [True, False])
def test_the_share_run_ahead_follows_which_thread_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ready: bool) -> None:
    """After a batch that was ready when the planning thread came to it, the inflating thread
    runs the kernel for more of a batch's manifests; after one the planning thread waited
    for, for fewer (from half, a quarter at a time)."""
    t = _many_files(tmp_path)
    flags: list[list[bool]] = []
    submit = ahead_module.InflateAhead.submit

    def scripted(self: Any, files: Any, program: Any) -> Any:
        flags.append([run and program is not None for _, run in files])
        return _Scripted(submit(self, files, program), ready)

    monkeypatch.setattr(ahead_module.InflateAhead, "submit", scripted)
    planned = list(TableScan(t.metadata, UNCACHED).plan_files())
    assert len(planned) == MANIFESTS * FILES
    # the first two batches are asked before any manifest taught the program; the third
    # after the first was taken (a share of 0.75 or 0.25 of 4), the fourth after the second
    # (1.0 or 0.0 of 8, holding the last 2)
    assert flags == [[False], [False, False],
                     [True, True, True, False] if ready else [True, False, False, False],
                     [True, True] if ready else [False, False]]


@pytest.mark.parametrize("how", ["corrupt", "missing"])
def test_a_bad_manifest_in_a_batch_is_reported_as_it_is_without_batches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A manifest the inflating thread cannot inflate is decoded as it is read, and its error
    is the one planning reports without batches; a manifest that cannot be read fails in its
    turn. Either way the manifests before it are planned first."""
    t = _many_files(tmp_path)
    monkeypatch.setattr(read_ahead, "FIRST_SHARE", 1.0)
    snapshot = t.metadata.current_snapshot()
    assert snapshot is not None
    manifests = read_manifest_list(t.io, snapshot.manifest_list or "")
    victim = Path(manifests[5].manifest_path.removeprefix("file://"))
    if how == "missing":
        victim.unlink()
    else:
        content = victim.read_bytes()
        middle = len(content) // 2
        victim.write_bytes(content[:middle] + bytes(64) + content[middle + 64:])

    def planned() -> tuple[int, str, type[Exception]]:
        seen = 0
        with pytest.raises(IcebergError) as e:
            for _ in TableScan(t.metadata, UNCACHED).plan_files():
                seen += 1
        return seen, str(e.value), type(e.value)

    batched = planned()
    _no_batches(monkeypatch)
    assert planned() == batched
    assert victim.name in batched[1] and batched[0] >= 5 * FILES
    assert batched[2] is (FileNotFound if how == "missing" else CorruptFile)


def test_local_manifests_are_read_ahead_by_one_thread_remote_ones_by_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without batches, one thread keeps ahead of decoding manifests on this machine's file
    system (more only take the GIL from the decoding thread); waits on remote storage are
    overlapped by :data:`~icepark.table.scan.tasks.READ_THREADS`, with batches or without
    (remote manifests are never read in batches: reading them on the planning thread would
    wait on storage one file at a time)."""
    t = ScanTable(tmp_path)
    for i in range(3):
        t.append(t.file(f"f{i}", **long_bounds(1, i, i)))
    threads: list[int] = []
    parallel_map = tasks.parallel_map

    def counted(fn: Any, items: Any, count: int = -1) -> Any:
        threads.append(count)
        return parallel_map(fn, items, count)

    monkeypatch.setattr(planner_module, "parallel_map", counted)
    batched = list(TableScan(t.metadata, UNCACHED).plan_files())
    assert threads == ([] if native.inflate_ahead() is not None else [1])
    _no_batches(monkeypatch)
    threads.clear()
    planned = list(TableScan(t.metadata, UNCACHED).plan_files())
    assert threads == [planner_module.LOCAL_READ_AHEAD] == [1] and len(planned) == 3
    assert batched == planned
    threads.clear()
    monkeypatch.setattr(planner_module, "READ_IN_BATCHES", True)
    monkeypatch.setattr(planner_module, "is_local", lambda _: False)  # as for s3://
    assert list(TableScan(t.metadata, UNCACHED).plan_files()) == planned
    assert threads == [tasks.READ_THREADS] and tasks.READ_THREADS > 1
