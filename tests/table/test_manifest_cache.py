"""The manifest cache: repeated scans reuse decoded manifests, plan exactly what a scan that
decodes them plans, and the cache stays within its bound; manifests with a block per record
(as pyiceberg writes them) plan the same as any other."""

from __future__ import annotations

import os
from pathlib import Path

import fastavro
import pytest

from icepark.errors import FileNotFound, ValidationError
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.cache import (
    DECODED_PER_MANIFEST_BYTE,
    ENABLED_PROPERTY,
    MANIFEST_CACHE,
    MAX_BYTES_PROPERTY,
    ManifestCache,
    configured_cache,
    estimate_bytes,
)
from icepark.io.manifest.list_cache import forget_manifest_lists
from icepark.io.manifest.manifest import read_manifest_blocks
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.manifest import ManifestContent
from icepark.table.scan.scan import TableScan
from tests.table.scan_fixtures import ScanTable, long_bounds, name_of

UNCACHED = ArrowFileIO({ENABLED_PROPERTY: "false"})
FILTERS = [None, "category = 'a'", "category = 'b' AND id > 12", "id < 5", "id IN (3, 25)",
           "category IS NULL OR id >= 10", "id > 100"]


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    MANIFEST_CACHE.clear()
    forget_manifest_lists()


def _table(tmp_path: Path) -> ScanTable:
    t = ScanTable(tmp_path)
    t.append(t.file("a-low", ("a",), **long_bounds(1, 0, 9)),
             t.file("a-high", ("a",), **long_bounds(1, 10, 19)))
    t.append(t.file("b-low", ("b",), **long_bounds(1, 0, 9)), t.file("n", (None,)),
             t.file("empty", ("b",), records=0))
    t.row_delta(t.file("b-high", ("b",), **long_bounds(1, 10, 19)),
                t.position_deletes("del", ("b",), target="b-low"))
    return t


def _plan(t: ScanTable, io: ArrowFileIO, row_filter: str | None) -> list[tuple[str, ...]]:
    scan = TableScan(t.metadata, io) if row_filter is None else TableScan(
        t.metadata, io, row_filter)
    return sorted((name_of(task.data_file), str(task.residual),
                   *(name_of(d) for d in task.delete_files)) for task in scan.plan_files())


@pytest.mark.parametrize("row_filter", FILTERS)
def test_cached_plans_equal_decoded_plans(tmp_path: Path, row_filter: str | None) -> None:
    t = _table(tmp_path)
    decoded = _plan(t, UNCACHED, row_filter)
    assert len(MANIFEST_CACHE._entries) == 0  # the disabled cache kept nothing
    cached_io = ArrowFileIO()
    assert _plan(t, cached_io, row_filter) == decoded  # decoded and kept
    assert MANIFEST_CACHE.total_bytes > 0
    assert _plan(t, cached_io, row_filter) == decoded  # from the cache
    for other in FILTERS:  # other filters with the same metric maps use it too
        assert _plan(t, cached_io, other) == _plan(t, UNCACHED, other)


def test_repeated_scans_do_not_read_manifests_again(tmp_path: Path) -> None:
    t = _table(tmp_path)
    first = _plan(t, ArrowFileIO(), "id < 5")
    for m in snapshot_manifests(t.io, t.current()):
        os.remove(m.manifest_path)  # (never done to a real table: files are immutable)
    assert _plan(t, ArrowFileIO(), "id < 5") == first
    with pytest.raises(FileNotFound):
        _plan(t, UNCACHED, "id < 5")


def test_repeated_scans_do_not_read_the_manifest_list_again(tmp_path: Path) -> None:
    """Even with the manifest cache off, as the reference keeps a snapshot's manifests with
    the snapshot: a list never changes at its location."""
    t = _table(tmp_path)
    forget_manifest_lists()  # (the commits kept the lists they wrote)
    first = _plan(t, UNCACHED, "id < 5")
    listed = t.current().manifest_list
    assert listed is not None
    os.remove(listed.removeprefix("file://"))  # (never done to a real table: files are immutable)
    assert _plan(t, UNCACHED, "id < 5") == first
    forget_manifest_lists()
    with pytest.raises(FileNotFound, match="snap-"):
        _plan(t, UNCACHED, "id < 5")


def test_bad_cache_properties_are_refused(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for props, message in [({ENABLED_PROPERTY: "maybe"}, "use true or false"),
                           ({MAX_BYTES_PROPERTY: "-1"}, "number of bytes")]:
        with pytest.raises(ValidationError, match=message):
            _plan(t, ArrowFileIO(props), None)


def test_the_cache_stays_within_its_bound(tmp_path: Path) -> None:
    t = _table(tmp_path)
    manifests = [m for m in snapshot_manifests(t.io, t.current())
                 if m.content is ManifestContent.DATA]
    sizes = [estimate_bytes(list(read_manifest_blocks(t.io, m))) for m in manifests]
    assert all(s > 0 for s in sizes)
    bound = max(sizes) + min(sizes) - 1  # never two of the largest and smallest together
    cache = ManifestCache(bound)
    for m, size in zip(manifests, sizes, strict=True):
        cache.put((m.manifest_path,), [["x"]], size)
        assert cache.total_bytes <= bound
    assert cache.holds(manifests[-1].manifest_path)
    assert not cache.holds(manifests[0].manifest_path)
    cache.put(("huge",), [["x"]], bound + 1)  # alone over the bound: not kept
    assert not cache.holds("huge")
    cache.resize(0)
    assert cache.total_bytes == 0 and not cache.holds(manifests[-1].manifest_path)
    assert configured_cache({MAX_BYTES_PROPERTY: "0"}) is None  # a zero bound disables it


def test_a_scan_larger_than_the_cache_decodes_without_it(tmp_path: Path) -> None:
    """Admitting its manifests would only evict them again: the scan is planned as if
    uncached (its filter skipping entries), and the cache keeps nothing of it."""
    t = _table(tmp_path)
    data = [m for m in snapshot_manifests(t.io, t.current())
            if m.content is ManifestContent.DATA]
    work = sum(m.manifest_length for m in data)
    small = ArrowFileIO({MAX_BYTES_PROPERTY: str(work * DECODED_PER_MANIFEST_BYTE - 1)})
    assert _plan(t, small, None) == _plan(t, UNCACHED, None)  # every data manifest
    assert not any(MANIFEST_CACHE.holds(m.manifest_path) for m in data)
    for row_filter in FILTERS:  # (those that skip manifests may fit)
        assert _plan(t, small, row_filter) == _plan(t, UNCACHED, row_filter)
    MANIFEST_CACHE.clear()
    enough = ArrowFileIO({MAX_BYTES_PROPERTY: str(work * DECODED_PER_MANIFEST_BYTE)})
    assert _plan(t, enough, None) == _plan(t, UNCACHED, None)
    assert all(MANIFEST_CACHE.holds(m.manifest_path) for m in data)


def test_a_block_per_record_plans_the_same(tmp_path: Path) -> None:
    """pyiceberg writes each manifest record in an Avro block of its own; the blocks are
    joined before decoding, and the entries come out the same."""
    t = _table(tmp_path)
    expected = {flt: _plan(t, UNCACHED, flt) for flt in FILTERS}
    blocks = 0
    for m in snapshot_manifests(t.io, t.current()):
        with open(m.manifest_path, "rb") as f:
            reader = fastavro.reader(f)
            schema, meta, records = reader.writer_schema, reader.metadata, list(reader)
        blocks += len(records)
        with open(m.manifest_path, "wb") as f:  # (rewritten before this test plans it)
            fastavro.writer(f, schema, records, codec="deflate", sync_interval=1,
                            metadata={k: v for k, v in meta.items()
                                      if not k.startswith("avro.")})
    assert blocks > len(snapshot_manifests(t.io, t.current()))  # some held several records
    for flt, plan in expected.items():
        assert _plan(t, UNCACHED, flt) == plan
