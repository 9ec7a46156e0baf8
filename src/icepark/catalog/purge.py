"""Purging a dropped table: the files reachable from its metadata, inside its location only.

A table's files are found by walking its metadata, as the spec lays them out: the metadata file
and the ``metadata-log`` ("timestamp and metadata file location pairs that encodes changes to
the previous metadata files for the table"), each snapshot's manifest list ("the location of a
manifest list for this snapshot that tracks manifest files"; v1 snapshots may list
``manifests`` inline), each manifest, and every data and delete file a manifest lists, plus the
statistics files. A file is deleted only if it lies inside the table location: a table may
reference files it does not own (imported or shared), and a purge must never reach them.

>>> is_under("file:///wh/db/t/data/a.parquet", "/wh/db/t")
True
>>> is_under("/wh/db/t/../other/a.parquet", "/wh/db/t"), is_under("/wh/db/tx/a", "/wh/db/t")
(False, False)
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator
from urllib.parse import urlsplit

from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spec.manifest import ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import gc_enabled

log = logging.getLogger(__name__)


def normalize_location(location: str) -> str:
    """A comparable spelling: ``file:`` URIs and plain paths become normalized paths, other
    URIs ``scheme://authority`` plus a normalized path."""
    parts = urlsplit(location)
    scheme = parts.scheme.lower()
    if len(scheme) <= 1:
        return posixpath.normpath(location.replace("\\", "/"))
    if scheme == "file":
        return posixpath.normpath(parts.path or "/")
    return f"{scheme}://{parts.netloc}{posixpath.normpath(parts.path or '/')}"


def is_under(location: str, root: str) -> bool:
    """Whether ``location`` lies strictly inside the directory ``root`` (after resolving
    ``..`` and ``file:`` spellings)."""
    loc, base = normalize_location(location), normalize_location(root).rstrip("/")
    return loc.startswith(base + "/") and loc != base


def _manifests(file_io: FileIO, metadata: TableMetadata,
               found: list[str]) -> Iterator[ManifestFile]:
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list is not None:
            found.append(snapshot.manifest_list)
            try:
                yield from read_manifest_list(file_io, snapshot.manifest_list)
            except Exception as e:
                log.warning("Purge: cannot read manifest list %s: %s", snapshot.manifest_list, e)
        for path in snapshot.manifests:  # v1 inline manifest list
            yield ManifestFile(path, 0, metadata.default_spec_id, snapshot.snapshot_id)


def reachable_files(file_io: FileIO, metadata: TableMetadata,
                    metadata_location: str, *, data: bool = True) -> list[str]:
    """Every file reachable from ``metadata``, data and delete files first (none unless
    ``data``) and metadata files last (so an interrupted purge leaves the table's entry points
    for last). Unreadable manifests or manifest lists are logged and skipped."""
    metadata_files = [metadata_location, *(e.metadata_file for e in metadata.metadata_log)]
    metadata_files += [s.statistics_path for s in metadata.statistics]
    metadata_files += [s.statistics_path for s in metadata.partition_statistics]
    lists: list[str] = []
    manifests: list[str] = []
    content: list[str] = []
    seen: set[str] = set()
    specs = {spec.spec_id: spec for spec in metadata.partition_specs}
    for manifest in _manifests(file_io, metadata, lists):
        if manifest.manifest_path in seen:
            continue
        seen.add(manifest.manifest_path)
        manifests.append(manifest.manifest_path)
        if not data:
            continue
        try:
            content.extend(entry.data_file.file_path
                           for entry in read_manifest(file_io, manifest, specs_by_id=specs))
        except Exception as e:
            log.warning("Purge: cannot read manifest %s: %s", manifest.manifest_path, e)
    ordered: list[str] = []
    done: set[str] = set()
    for path in (*content, *manifests, *lists, *metadata_files):
        if path not in done:
            done.add(path)
            ordered.append(path)
    return ordered


def purge_table(file_io: FileIO, metadata: TableMetadata, metadata_location: str) -> int:
    """Delete the reachable files inside ``metadata.location``; returns how many were
    deleted (attempted). Files outside the table location are skipped, and so are data and
    delete files when ``gc.enabled`` is false (the table does not own them)."""
    deleted = 0
    for path in reachable_files(file_io, metadata, metadata_location,
                                data=gc_enabled(metadata.properties)):
        if not is_under(path, metadata.location):
            log.info("Purge: keeping %s, outside the table location", path)
            continue
        try:
            file_io.delete(path)
            deleted += 1
        except Exception as e:
            log.warning("Purge: cannot delete %s: %s", path, type(e).__name__)
    return deleted
