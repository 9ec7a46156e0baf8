"""A snapshot's manifests, its manifest list kept decoded across scans and commits.

Spec, *Manifest Lists*: "A new manifest list is written for each attempt to commit a snapshot
because the list of manifests always changes to produce a new snapshot." A list at a location
therefore never changes, and a decoded one can be reused for as long as it is wanted: by the
next scan of an unchanged table (a notebook re-running a query, a stream polling), and by the
next commit, which re-reads its parent's list.

The cache keeps the most recently used lists, at most :data:`MAX_LISTS` of them and
:data:`MAX_MANIFESTS` ``manifest_file`` records in all (a record with one partition field's
summary is about half a kilobyte, so at most some 50 MB); a list longer than that is decoded
each time. Work that visits every list once (expiring snapshots, finding orphans, purging)
reads through :func:`icepark.io.manifest.manifest_list.snapshot_manifests` instead and leaves
the cache to the lists that are read again.

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.io.manifest.manifest_list import write_manifest_list
>>> from icepark.spec.manifest import ManifestFile
>>> io, path = ArrowFileIO(), tempfile.mkdtemp() + "/snap-1.avro"
>>> m0 = ManifestFile("/t/metadata/m0.avro", 5120, 0, added_snapshot_id=1, added_files_count=1,
...                   existing_files_count=0, deleted_files_count=0, added_rows_count=10,
...                   existing_rows_count=0, deleted_rows_count=0)
>>> write_manifest_list(io, path, 2, snapshot_id=1, parent_snapshot_id=None, sequence_number=1,
...                     manifests=[m0])
>>> first = cached_manifest_list(io, path)
>>> cached_manifest_list(io, path) is first, len(first)
(True, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.io.manifest.manifest_list import snapshot_manifests as read_snapshot_manifests
from icepark.spec.manifest import ManifestFile
from icepark.spec.snapshots import Snapshot

MAX_LISTS = 32
"""How many decoded manifest lists are kept."""

MAX_MANIFESTS = 100_000
"""How many ``manifest_file`` records the kept lists hold in all."""

_LISTS: OrderedDict[str, tuple[ManifestFile, ...]] = OrderedDict()
_LOCK = threading.Lock()


def snapshot_manifests(file_io: FileIO, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The manifests of a snapshot (a new list the caller may change), its manifest list
    from the cache (see :func:`cached_manifest_list`); a v1 snapshot without a list as
    :func:`icepark.io.manifest.manifest_list.snapshot_manifests` reads it. A missing file
    raises ``FileNotFound`` naming it."""
    if snapshot is not None and snapshot.manifest_list is not None:
        return list(cached_manifest_list(file_io, snapshot.manifest_list))
    return read_snapshot_manifests(file_io, snapshot)


def cached_manifest_list(file_io: FileIO, location: str) -> tuple[ManifestFile, ...]:
    """The ``manifest_file`` records of the list at ``location``: the kept ones, or read
    with :func:`icepark.io.manifest.manifest_list.read_manifest_list` and kept. Two threads
    asking for the same list at once may both read it; either result is the list."""
    with _LOCK:
        cached = _LISTS.get(location)
        if cached is not None:
            _LISTS.move_to_end(location)
            return cached
    manifests = tuple(read_manifest_list(file_io, location))
    remember_manifest_list(location, manifests)
    return manifests


def remember_manifest_list(location: str, manifests: Sequence[ManifestFile]) -> None:
    """Keep ``manifests`` as the records of the list at ``location``: what a committer just
    wrote there, as a reader will decode it (sequence numbers and first row IDs assigned)."""
    kept = tuple(manifests)
    if len(kept) > MAX_MANIFESTS:
        return
    with _LOCK:
        _LISTS[location] = kept
        _LISTS.move_to_end(location)
        while len(_LISTS) > MAX_LISTS or sum(map(len, _LISTS.values())) > MAX_MANIFESTS:
            _LISTS.popitem(last=False)


def forget_manifest_lists() -> None:
    """Drop every kept list (what a process that rewrote files under their names, which the
    spec never does, would need)."""
    with _LOCK:
        _LISTS.clear()
