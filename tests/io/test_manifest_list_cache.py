"""The kept manifest lists: a list is decoded once per process and reused, what a committer
wrote is kept as a reader would decode it, and the kept lists stay within both bounds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icepark.errors import FileNotFound
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest import list_cache
from icepark.io.manifest.list_cache import (
    cached_manifest_list,
    forget_manifest_lists,
    remember_manifest_list,
    snapshot_manifests,
)
from icepark.io.manifest.manifest_list import read_manifest_list, write_manifest_list
from icepark.spec.snapshots import Operation, Snapshot, Summary
from tests.io.test_manifest_list_rw import manifest


@pytest.fixture(autouse=True)
def _nothing_kept() -> Iterator[None]:
    forget_manifest_lists()
    yield
    forget_manifest_lists()


def _list(file_io: ArrowFileIO, location: str, name: str, manifests: int) -> str:
    path = f"{location}/{name}.avro"
    write_manifest_list(file_io, path, 2, 7, None, 3,
                        [manifest(f"{name}-m{i}") for i in range(manifests)])
    return path


def _remove(path: str) -> None:
    Path(path.removeprefix("file://")).unlink()  # (never done to a real table's list)


def test_a_list_is_decoded_once(file_io: ArrowFileIO, location: str) -> None:
    path = _list(file_io, location, "snap-1", 3)
    first = cached_manifest_list(file_io, path)
    assert list(first) == read_manifest_list(file_io, path)
    _remove(path)
    assert cached_manifest_list(file_io, path) is first
    snapshot = Snapshot(1, None, 3, 1000, path, Summary(Operation.APPEND), 0)
    manifests = snapshot_manifests(file_io, snapshot)
    assert manifests == list(first)
    manifests.clear()  # the caller's own list: the kept one is untouched
    assert len(snapshot_manifests(file_io, snapshot)) == 3
    with pytest.raises(FileNotFound, match="snap-1"):
        read_manifest_list(file_io, path)  # the uncached read goes to storage
    forget_manifest_lists()
    with pytest.raises(FileNotFound, match="snap-1"):
        cached_manifest_list(file_io, path)


def test_a_written_list_is_kept_without_reading_it(file_io: ArrowFileIO, location: str) -> None:
    path = _list(file_io, location, "snap-2", 2)
    written = read_manifest_list(file_io, path)
    _remove(path)
    remember_manifest_list(path, written)
    assert list(cached_manifest_list(file_io, path)) == written


def test_the_kept_lists_stay_within_their_bounds(file_io: ArrowFileIO, location: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(list_cache, "MAX_LISTS", 3)
    monkeypatch.setattr(list_cache, "MAX_MANIFESTS", 5)
    paths = {name: _list(file_io, location, name, n)
             for name, n in [("a", 1), ("b", 2), ("c", 1), ("d", 1), ("e", 3), ("huge", 6)]}
    for name in ("a", "b", "c"):
        cached_manifest_list(file_io, paths[name])
    cached_manifest_list(file_io, paths["a"])  # used again: "b" is now the oldest
    cached_manifest_list(file_io, paths["d"])  # a fourth list: "b" goes
    cached_manifest_list(file_io, paths["huge"])  # more records than the bound: not kept
    for path in paths.values():
        _remove(path)
    for name in ("a", "c", "d"):
        assert len(cached_manifest_list(file_io, paths[name])) > 0
    for name in ("b", "huge", "e"):
        with pytest.raises(FileNotFound):
            cached_manifest_list(file_io, paths[name])
    remember_manifest_list(paths["e"], [manifest(f"e-m{i}") for i in range(4)])
    # four records more: a, c and d held three, so the oldest two go to stay within five
    assert len(cached_manifest_list(file_io, paths["d"])) == 1
    for name in ("a", "c"):
        with pytest.raises(FileNotFound):
            cached_manifest_list(file_io, paths[name])
