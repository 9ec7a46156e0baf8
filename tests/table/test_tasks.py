"""Scan tasks: splitting at split offsets, bin-packing, and plan_tasks of a scan."""

from __future__ import annotations

import gc
import itertools
import pickle
import random
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import ValidationError
from icepark.expressions import parse
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.table.scan.tasks import (
    CombinedScanTask,
    FileScanTask,
    bin_pack,
    cyclic_gc_paused,
    plan_tasks,
    split,
    task_weight,
    valid_split_offsets,
)
from tests.table.scan_fixtures import ScanTable, name_of, unpartitioned


def data_file(size: int, offsets: tuple[int, ...] | None = None, name: str = "f") -> DataFile:
    return DataFile(f"/t/{name}.parquet", FileFormat.PARQUET, (), 10, size,
                    split_offsets=offsets)


def ranges(tasks: Any) -> list[tuple[int, int]]:
    return [(t.start, t.length) for t in tasks]


SPLITS = [
    # (size, offsets, target, expected ranges)
    (100, None, 200, [(0, 100)]),                       # small: whole file
    (100, None, 30, [(0, 30), (30, 30), (60, 30), (90, 10)]),  # no offsets: fixed size
    (100, (4, 40, 70), 30, [(0, 40), (40, 30), (70, 30)]),     # a row group per split
    (100, (4, 40, 70), 60, [(0, 40), (40, 60)]),        # row groups grouped up to the target
    (100, (4, 40, 70), 100, [(0, 100)]),
    (100, (4, 10, 20, 30), 25, [(0, 20), (20, 10), (30, 70)]),  # a big last row group alone
    (100, (4, 150), 30, [(0, 30), (30, 30), (60, 30), (90, 10)]),  # bad offsets: ignored
    (100, (0, 50), 40, [(0, 50), (50, 50)]),
]


@pytest.mark.parametrize(("size", "offsets", "target", "expected"), SPLITS)
def test_split(size: int, offsets: tuple[int, ...] | None, target: int,
               expected: list[tuple[int, int]]) -> None:
    task = FileScanTask.of(data_file(size, offsets))
    pieces = list(split(task, target))
    assert ranges(pieces) == expected
    assert sum(p.length for p in pieces) == size
    assert all(p.data_file == task.data_file for p in pieces)


def test_split_keeps_deletes_and_residual() -> None:
    delete = DataFile("/t/d.parquet", FileFormat.PARQUET, (), 1, 5, FileContent.POSITION_DELETES)
    task = FileScanTask.of(data_file(100, (4, 50)), (delete,), parse("id > 3"))
    pieces = list(split(task, 50))
    assert len(pieces) == 2
    assert all(p.delete_files == (delete,) and str(p.residual) == "id > 3" for p in pieces)


def test_split_offsets_validity() -> None:
    assert valid_split_offsets(data_file(100, (4, 50))) == (4, 50)
    assert valid_split_offsets(data_file(100, (4, 100))) is None
    assert valid_split_offsets(data_file(100, ())) is None
    with pytest.raises(ValidationError, match="sorted"):
        data_file(100, (50, 4))
    with pytest.raises(ValidationError, match="positive"):
        list(split(FileScanTask.of(data_file(100)), 0))


def test_random_splits_cover_the_file_at_offsets() -> None:
    rng = random.Random(3)
    for _ in range(300):
        size = rng.randint(1, 10_000)
        offsets = tuple(sorted(rng.sample(range(size), rng.randint(0, min(size, 8)))))
        target = rng.randint(1, 3000)
        pieces = list(split(FileScanTask.of(data_file(size, offsets or None)), target))
        assert pieces[0].start == 0
        assert all(a.start + a.length == b.start for a, b in itertools.pairwise(pieces))
        assert pieces[-1].start + pieces[-1].length == size
        if offsets and size > target:
            assert all(p.start in offsets[1:] for p in pieces[1:])


def test_bin_pack_respects_target_and_order() -> None:
    tasks = [FileScanTask.of(data_file(size, name=f"f{i}"))
             for i, size in enumerate([50, 30, 60, 20, 10, 90, 40])]
    bins = list(bin_pack(tasks, target_size=100, lookback=2, open_file_cost=0))
    assert [[t.data_file.file_path[3:-8] for t in b.tasks] for b in bins] == [
        ["f0", "f1", "f3"], ["f5"], ["f2", "f4"], ["f6"]]  # the fullest open bin goes first
    assert all(b.size_bytes <= 100 for b in bins)
    assert sorted(t.file_path for b in bins for t in b.tasks) == sorted(
        t.file_path for t in tasks)


def test_bin_pack_open_file_cost_and_oversized_tasks() -> None:
    small = [FileScanTask.of(data_file(1, name=f"s{i}")) for i in range(10)]
    assert task_weight(small[0], 25) == 25
    bins = list(bin_pack(small, target_size=100, lookback=10, open_file_cost=25))
    assert [len(b.tasks) for b in bins] == [4, 4, 2]
    big = FileScanTask.of(data_file(500))
    assert [len(b.tasks) for b in bin_pack([big, *small[:2]], 100, 1, 0)] == [1, 2]
    with pytest.raises(ValidationError, match="positive"):
        list(bin_pack(small, 100, 0, 0))


def test_deletes_weigh_in() -> None:
    delete = DataFile("/t/d.parquet", FileFormat.PARQUET, (), 1, 40, FileContent.POSITION_DELETES)
    task = FileScanTask.of(data_file(50), (delete,))
    assert task.size_bytes == 90 and task.files_count == 2
    assert task_weight(task, 60) == 120


def test_tasks_pickle() -> None:
    combined = CombinedScanTask((FileScanTask.of(data_file(10, (4,)), (), parse("id = 1")),))
    assert pickle.loads(pickle.dumps(combined)) == combined


def test_plan_tasks_of_a_scan(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned, properties={"read.split.target-size": "100",
                                                       "read.split.open-file-cost": "10"})
    t.append(t.file("big", size=250, split_offsets=(4, 100, 200)),
             *(t.file(f"small{i}", size=30) for i in range(4)))
    combined = t.scan().plan_tasks()
    pieces = sorted((name_of(x.data_file), x.start, x.length) for c in combined for x in c.tasks)
    assert [p for p in pieces if p[0] == "big"] == [("big", 0, 100), ("big", 100, 100),
                                                    ("big", 200, 50)]
    assert all(c.size_bytes <= 100 for c in combined)
    assert len(combined) == 4  # 100 | 100 | 50 + 30 | 30 + 30 + 30
    # options override the table properties
    whole = t.scan(options={"read.split.target-size": "1000"}).plan_tasks()
    assert len(whole) == 1 and len(whole[0].tasks) == 5


def test_plan_tasks_module_function() -> None:
    tasks = [FileScanTask.of(data_file(300, (4, 150), name="a")),
             FileScanTask.of(data_file(20, name="b"))]
    combined = plan_tasks(tasks, target_size=200, lookback=5, open_file_cost=1)
    assert [ranges(c.tasks) for c in combined] == [[(0, 150), (0, 20)], [(150, 150)]]


class _Node:
    """An object the cyclic collector tracks, to build a reference cycle of."""

    def __init__(self) -> None:
        self.other: Any = None


def test_a_gc_pause_leaves_nothing_young_and_nothing_uncollectable() -> None:
    """What is allocated while the collector is paused goes to the oldest generation as the
    pause ends (no collection walks it at once), and a cycle made then is still found by a
    full collection: nothing stays frozen."""
    assert gc.isenabled()
    gc.collect()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        kept = [[i] for i in range(5000)]
        del a, b
    assert gc.isenabled()
    assert gc.get_count()[0] < 50  # not the 5,000 lists: moved on, not collected young
    assert gc.get_freeze_count() == 0
    assert gc.collect() >= 2  # the cycle
    assert len(kept) == 5000


def test_a_gc_pause_inside_a_disabled_collector_leaves_it_disabled() -> None:
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
