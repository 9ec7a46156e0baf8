"""Orphan files: files under a table's location that no metadata of the table references.

Spec, *Table Metadata*: "Valid snapshots are snapshots for which all data files exist in the
file system. A data file must not be deleted from the file system until the last snapshot in
which it was listed is garbage collected." A writer that crashed before its commit leaves
files no snapshot lists (data and delete files, manifests, manifest lists, a metadata file
written but never swapped in); nothing else ever deletes them. Removing them means listing the
location and subtracting every file the table references:

* the current metadata file, every ``metadata-log`` entry ("timestamp and metadata file
  location pairs that encodes changes to the previous metadata files for the table"), and the
  log entries of the oldest readable earlier metadata file, recursively (logs are truncated by
  ``write.metadata.previous-versions-max``); ``metadata/version-hint.text`` (*File System
  Tables*, the filesystem catalog's pointer);
* every snapshot's manifest list ("the location of a manifest list for this snapshot that
  tracks manifest files"; v1 snapshots may list ``manifests`` inline), every manifest in it,
  and every file any entry of those manifests names, deleted entries included: data files,
  position and equality delete files, and the Puffin files of deletion vectors ("Delete
  manifests track deletion vectors individually by the containing file location
  (``file_path``)");
* the ``statistics`` and ``partition-statistics`` files.

Any manifest or manifest list that cannot be read fails the whole run: a file it lists cannot
be told from an orphan. The rules of the reference implementation's ``remove_orphan_files``:

* Only files last modified before ``older_than_ms`` (default: three days ago) are candidates,
  so the files of a write still in flight, not yet committed, are never deleted.
* Hidden paths are skipped: a file or directory below the location whose name starts with
  ``_`` or ``.`` (Spark's ``_temporary``, checksum files, a metadata file being published),
  except partition directories of a field whose name starts so (``_hour=3``).
* Locations are compared by path; scheme and authority are compared after mapping them through
  ``equal_schemes`` (default: ``s3a`` and ``s3n`` are ``s3``; keys may list several schemes,
  comma-separated) and ``equal_authorities``. A plain path is a ``file`` location. A listed
  file whose path is referenced only with another scheme or authority is a *prefix mismatch*:
  ``error`` (default) fails naming examples, ``ignore`` keeps it, ``delete`` deletes it.

icepark adds: the ``location`` searched must lie inside the table location, no file outside
the table location is ever returned or deleted, and right before deleting the table is loaded
again: files a commit that landed during the listing references are kept.

>>> rules = PrefixRules.of()
>>> rules.key("s3a://bucket/t/a.parquet"), rules.key("/wh/t/./a.parquet")
(LocationKey(scheme='s3', authority='bucket', path='/t/a.parquet'), \
LocationKey(scheme='file', authority=None, path='/wh/t/a.parquet'))
>>> is_hidden("data/_temporary/0/x.parquet", ()), is_hidden("data/_h=1/x", ("_h=",))
(True, False)
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from icepark.errors import Remedy, ValidationError
from icepark.io.fileio import FileInfo, FileIO
from icepark.io.manifest.manifest import read_manifest_blocks
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.io.manifest.reader import NO_STATS
from icepark.spec.manifest import ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import gc_enabled
from icepark.spec.serde.metadata_json import table_metadata_from_json
from icepark.table.change.metadata_builder import now_ms as clock_ms

DEFAULT_AGE_MS = 3 * 24 * 60 * 60 * 1000
"""How old a file must be to be a candidate when no ``older_than_ms`` is given: three days."""
DEFAULT_EQUAL_SCHEMES: Mapping[str, str] = {"s3n": "s3", "s3a": "s3"}
VERSION_HINT = "metadata/version-hint.text"
MAX_EXAMPLES = 5
_READERS = 8  # threads reading manifests


class PrefixMismatchMode(Enum):
    """What happens to a listed file referenced only under another scheme or authority."""

    ERROR = "error"
    IGNORE = "ignore"
    DELETE = "delete"

    @staticmethod
    def of(value: str | PrefixMismatchMode) -> PrefixMismatchMode:
        """The mode a name gives, in any case.

        >>> PrefixMismatchMode.of("IGNORE")
        <PrefixMismatchMode.IGNORE: 'ignore'>
        """
        if isinstance(value, PrefixMismatchMode):
            return value
        try:
            return PrefixMismatchMode(str(value).lower())
        except ValueError:
            names = ", ".join(repr(m.value) for m in PrefixMismatchMode)
            raise ValidationError(f"Unknown prefix_mismatch_mode {value!r}: use one of "
                                  f"{names}") from None


@dataclass(frozen=True, slots=True)
class LocationKey:
    """A location as compared: scheme and authority (lower case, mapped through the equal
    maps; None when absent) and the normalized path."""

    scheme: str | None
    authority: str | None
    path: str

    def prefix(self) -> tuple[str | None, str | None]:
        return self.scheme, self.authority


def _flatten(mapping: Mapping[str, str] | None, what: str, *,
             empty: bool = False) -> dict[str, str]:
    """``{"s3a,s3n": "s3"}`` as ``{"s3a": "s3", "s3n": "s3"}``, lower case; an empty value
    (where ``empty`` allows it) means none."""
    flat = {}
    for keys, value in (mapping or {}).items():
        if (not isinstance(keys, str) or not isinstance(value, str)
                or not (empty or value.strip())):
            wanted = "a string" if empty else "a non-empty string"
            raise ValidationError(f"An {what} entry must map a string to {wanted}, not "
                                  f"{keys!r}: {value!r}")
        for key in keys.split(","):
            if key.strip():
                flat[key.strip().lower()] = value.strip().lower()
    return flat


@dataclass(frozen=True, slots=True)
class PrefixRules:
    """How locations are compared: which schemes and which authorities are the same (an
    authority mapped to ``""`` is the same as none: ``file://host/p`` as ``file:///p``)."""

    equal_schemes: Mapping[str, str]
    equal_authorities: Mapping[str, str]

    @staticmethod
    def of(equal_schemes: Mapping[str, str] | None = None,
           equal_authorities: Mapping[str, str] | None = None) -> PrefixRules:
        """The rules with ``equal_schemes`` added to :data:`DEFAULT_EQUAL_SCHEMES`.

        >>> PrefixRules.of({"s3, gs": "x"}).equal_schemes["gs"], PrefixRules.of().key("S3N://b/k")
        ('x', LocationKey(scheme='s3', authority='b', path='/k'))
        """
        return PrefixRules({**DEFAULT_EQUAL_SCHEMES, **_flatten(equal_schemes, "equal_schemes")},
                           _flatten(equal_authorities, "equal_authorities", empty=True))

    def key(self, location: str) -> LocationKey:
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        if len(scheme) <= 1:  # a plain path (or a Windows drive letter): the local file system
            return LocationKey("file", None, _normal_path(location.replace("\\", "/")))
        authority = parts.netloc.lower() or None
        if authority is not None:
            authority = self.equal_authorities.get(authority, authority) or None
        return LocationKey(self.equal_schemes.get(scheme, scheme), authority,
                           _normal_path(parts.path or "/"))

    def inside(self, location: str, root: str, *, strictly: bool = True) -> bool:
        """Whether ``location`` lies inside the directory ``root`` (or is it, unless
        ``strictly``).

        >>> PrefixRules.of().inside("s3a://b/t/x", "s3://b/t"), PrefixRules.of().inside("/tx", "/t")
        (True, False)
        """
        loc, base = self.key(location), self.key(root)
        if loc.prefix() != base.prefix():
            return False
        if not strictly and loc.path == base.path:
            return True
        return loc.path.startswith(base.path.rstrip("/") + "/") and loc.path != base.path


def _normal_path(path: str) -> str:
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def is_hidden(relative: str, partition_prefixes: Sequence[str]) -> bool:
    """Whether a path relative to the listed location has a hidden part: a name starting with
    ``_`` or ``.``, other than a partition directory (``partition_prefixes``: ``_name=``)."""
    prefixes = tuple(partition_prefixes)
    return any(part.startswith(("_", ".")) and not (prefixes and part.startswith(prefixes))
               for part in relative.split("/") if part)


def hidden_partition_prefixes(metadata: TableMetadata) -> tuple[str, ...]:
    """``name=`` of every partition field (of any spec) whose name looks hidden."""
    return tuple(sorted({f"{field.name}=" for spec in metadata.partition_specs
                         for field in spec.fields if field.name.startswith(("_", "."))}))


class References:
    """The locations a table references, by path, with every prefix each is referenced under.

    :meth:`add` reads the manifest lists and manifests of a metadata version it has not read
    yet, so adding a newer version of the same table reads only what changed."""

    def __init__(self, file_io: FileIO, rules: PrefixRules) -> None:
        self._io, self._rules = file_io, rules
        self._by_path: dict[str, set[tuple[str | None, str | None]]] = {}
        self._read: set[str] = set()  # manifest lists and manifests already read
        self._metadata_files: set[str] = set()

    def __len__(self) -> int:
        return len(self._by_path)

    def add_location(self, location: str) -> None:
        key = self._rules.key(location)
        self._by_path.setdefault(key.path, set()).add(key.prefix())

    def add(self, metadata: TableMetadata, metadata_location: str) -> None:
        """Every file ``metadata`` (written at ``metadata_location``) references."""
        for location in (metadata_location, *self._earlier_metadata(metadata),
                         posixpath.join(metadata.location.rstrip("/"), VERSION_HINT),
                         *(s.statistics_path for s in metadata.statistics),
                         *(s.statistics_path for s in metadata.partition_statistics)):
            self.add_location(location)
        manifests: dict[str, ManifestFile] = {}
        for snapshot in metadata.snapshots:
            if snapshot.manifest_list is not None:
                self.add_location(snapshot.manifest_list)
                if snapshot.manifest_list in self._read:
                    continue
            for manifest in snapshot_manifests(self._io, snapshot):
                if manifest.manifest_path not in self._read:
                    manifests.setdefault(manifest.manifest_path, manifest)
            if snapshot.manifest_list is not None:
                self._read.add(snapshot.manifest_list)
        specs = {spec.spec_id: spec for spec in metadata.partition_specs}
        with ThreadPoolExecutor(_READERS) as pool:
            for path, files in pool.map(lambda m: (m.manifest_path, self._files(m, specs)),
                                        manifests.values()):
                self.add_location(path)
                for location in files:
                    self.add_location(location)
                self._read.add(path)

    def _files(self, manifest: ManifestFile, specs: Mapping[int, Any]) -> list[str]:
        return [entry.data_file.file_path
                for block in read_manifest_blocks(self._io, manifest, specs_by_id=specs,
                                                  stats=NO_STATS, row_ids=False)
                for entry in block]

    def _earlier_metadata(self, metadata: TableMetadata) -> Iterator[str]:
        """The ``metadata-log`` entries, then those of the oldest readable logged metadata
        file, and so on (each file read once)."""
        log = [entry.metadata_file for entry in metadata.metadata_log]
        while log:
            yield from log
            fresh = [location for location in log if location not in self._metadata_files]
            self._metadata_files.update(fresh)
            log = []
            for location in fresh:
                try:
                    earlier = table_metadata_from_json(self._io.new_input(location).read(),
                                                       location)
                except Exception:  # deleted or unreadable: try the next one
                    continue
                log = [e.metadata_file for e in earlier.metadata_log]
                break

    def match(self, key: LocationKey) -> bool | tuple[str | None, str | None]:
        """True if ``key`` is referenced with its prefix (or under an empty one), False if its
        path is not referenced at all, else a prefix its path is referenced under."""
        prefixes = self._by_path.get(key.path)
        if not prefixes:
            return False
        for scheme, authority in prefixes:
            if (scheme is None or scheme == key.scheme) and (
                    authority is None or authority == key.authority):
                return True
        return sorted(prefixes, key=str)[0]


@dataclass(frozen=True, slots=True)
class OrphanFilesResult:
    """What an orphan file removal found and did: the orphans (sorted), how many were deleted
    (none in a dry run), their bytes, and the deletes that failed (the files are left)."""

    orphan_file_locations: tuple[str, ...]
    deleted_files: int
    dry_run: bool
    orphan_bytes: int = 0
    failed: tuple[str, ...] = ()


class TableSource(Protocol):
    """What an orphan removal needs of a table (a :class:`~icepark.table.table.Table`)."""

    @property
    def io(self) -> FileIO: ...

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def metadata_location(self) -> str: ...

    def refresh(self) -> object: ...


def _show_prefix(prefix: tuple[str | None, str | None]) -> str:
    scheme, authority = prefix
    return f"{scheme or ''}://{authority or ''}"


class OrphanSearch:
    """One orphan removal's options, checked, and its comparisons against the table.

    ``location`` (default: the table location) must lie inside the table location;
    ``older_than_ms`` defaults to now minus :data:`DEFAULT_AGE_MS`. A table whose
    ``gc.enabled`` is false does not own its files: nothing may be deleted.
    """

    def __init__(self, table: TableSource, *, older_than_ms: int | None = None,
                 location: str | None = None,
                 equal_schemes: Mapping[str, str] | None = None,
                 equal_authorities: Mapping[str, str] | None = None,
                 prefix_mismatch_mode: str | PrefixMismatchMode = PrefixMismatchMode.ERROR,
                 clock: Callable[[], int] = clock_ms) -> None:
        metadata = table.metadata
        if not gc_enabled(metadata.properties):
            raise ValidationError(f"Cannot remove orphan files of {metadata.location}: "
                                  "gc.enabled is false, so the table may share its files")
        self.table = table
        self.rules = PrefixRules.of(equal_schemes, equal_authorities)
        self.mode = PrefixMismatchMode.of(prefix_mismatch_mode)
        self.table_location = metadata.location.rstrip("/")
        self.location = (location or self.table_location).rstrip("/") or "/"
        if not self.rules.inside(self.location, self.table_location, strictly=False):
            raise ValidationError(f"Cannot remove orphan files under {location}: it is not "
                                  f"inside the table location {self.table_location}")
        if older_than_ms is not None and (isinstance(older_than_ms, bool)
                                          or not isinstance(older_than_ms, int)):
            raise ValidationError(f"older_than_ms must be milliseconds since the epoch "
                                  f"(an int), not {older_than_ms!r}")
        self.older_than_ms = clock() - DEFAULT_AGE_MS if older_than_ms is None else older_than_ms
        self.partition_prefixes = hidden_partition_prefixes(metadata)
        self._seen = table.metadata_location
        self.references = References(table.io, self.rules)
        self.references.add(metadata, table.metadata_location)

    def candidate(self, info: FileInfo) -> bool:
        """Old enough and not hidden below the searched location."""
        if info.modified_ms is None or info.modified_ms >= self.older_than_ms:
            return False
        if not info.location.startswith(self.location + "/"):
            return False  # not listed from the searched location: not in its spelling
        return not is_hidden(info.location[len(self.location):], self.partition_prefixes)

    def orphans(self, listed: Iterable[FileInfo]) -> list[FileInfo]:
        """The listed candidates nothing references, sorted by location; a prefix mismatch
        is kept, deleted or raised as the mode says (raised: nothing was deleted)."""
        found: list[FileInfo] = []
        mismatches: list[tuple[str, tuple[str | None, str | None]]] = []
        for info in listed:
            if not self.candidate(info) or not self.rules.inside(info.location,
                                                                 self.table_location):
                continue
            match = self.references.match(self.rules.key(info.location))
            if match is True:
                continue
            if match is False or self.mode is PrefixMismatchMode.DELETE:
                found.append(info)
            else:
                mismatches.append((info.location, match))
        if mismatches and self.mode is PrefixMismatchMode.ERROR:
            examples = "; ".join(f"{where} (referenced as {_show_prefix(prefix)}...)"
                                 for where, prefix in sorted(mismatches)[:MAX_EXAMPLES])
            raise ValidationError(
                f"Cannot tell whether {len(mismatches)} file(s) are orphans: the metadata "
                f"references their paths under another scheme or authority, e.g. {examples}",
                remedy=Remedy("if those prefixes are the same file system, say so with {}; "
                              "else keep the files with prefix_mismatch_mode='ignore' or, only "
                              "if they are surely other files, delete them with "
                              "prefix_mismatch_mode='delete'", "equal_schemes/equal_authorities"))
        return sorted(found, key=lambda i: i.location)

    def recheck(self, orphans: Sequence[FileInfo]) -> list[FileInfo]:
        """``orphans`` less the files a commit since the search began references: the table
        is loaded again, and a newer metadata version is read (only what changed)."""
        self.table.refresh()
        if self.table.metadata_location == self._seen:
            return list(orphans)
        self._seen = self.table.metadata_location
        self.references.add(self.table.metadata, self.table.metadata_location)
        return self.orphans(orphans)

    def result(self, orphans: Sequence[FileInfo], *, dry_run: bool,
               failed: Sequence[str] = ()) -> OrphanFilesResult:
        return OrphanFilesResult(tuple(i.location for i in orphans),
                                 0 if dry_run else len(orphans) - len(failed), dry_run,
                                 sum(i.size for i in orphans), tuple(sorted(failed)))


def list_files(file_io: FileIO, location: str) -> Iterator[FileInfo]:
    """Every file below ``location``, listed here (small tables)."""
    return file_io.list_prefix(location)


@runtime_checkable
class ListsDirectories(Protocol):
    """A FileIO that lists one directory level (:meth:`ArrowFileIO.list_directory
    <icepark.io.fileio.ArrowFileIO.list_directory>`)."""

    def list_directory(self, location: str) -> tuple[list[FileInfo], list[str]]: ...


def walk(file_io: ListsDirectories, location: str, partition_prefixes: Sequence[str], *,
         max_depth: int, max_subdirs: int) -> tuple[list[FileInfo], list[str]]:
    """List ``location`` down to ``max_depth`` levels, not entering hidden directories, and
    stopping at a directory with more than ``max_subdirs`` subdirectories: the files found and
    the directories left to list (by other workers)."""
    files: list[FileInfo] = []
    pending: list[str] = []
    level = [(location, max_depth)]
    while level:
        directory, depth = level.pop()
        if depth <= 0:
            pending.append(directory)
            continue
        found, subdirs = file_io.list_directory(directory)
        files.extend(found)
        subdirs = [d for d in subdirs if not is_hidden(d.rsplit("/", 1)[-1], partition_prefixes)]
        if len(subdirs) > max_subdirs:
            pending.extend(subdirs)
        else:
            level.extend((d, depth - 1) for d in subdirs)
    return files, pending


def delete_files(file_io: FileIO, locations: Iterable[str]) -> list[str]:
    """Delete each file; the locations whose delete failed."""
    failed = []
    for location in locations:
        try:
            file_io.delete(location)
        except Exception:  # reported in the result; the others go on
            failed.append(location)
    return failed


def remove_orphan_files(table: TableSource, *, older_than_ms: int | None = None,
                        location: str | None = None, dry_run: bool = False,
                        equal_schemes: Mapping[str, str] | None = None,
                        equal_authorities: Mapping[str, str] | None = None,
                        prefix_mismatch_mode: str | PrefixMismatchMode = "error",
                        ) -> OrphanFilesResult:
    """Find the orphan files under ``location`` (default: the table location) and delete them
    (none in a ``dry_run``), all in this process: the listing is one recursive listing of the
    location, fine for small tables (``icepark.spark`` lists large ones in Spark tasks). See
    the module docstring for the rules and :class:`OrphanSearch` for the options."""
    search = OrphanSearch(table, older_than_ms=older_than_ms, location=location,
                          equal_schemes=equal_schemes, equal_authorities=equal_authorities,
                          prefix_mismatch_mode=prefix_mismatch_mode)
    orphans = search.orphans(list_files(table.io, search.location))
    if dry_run:
        return search.result(orphans, dry_run=True)
    orphans = search.recheck(orphans)
    failed = delete_files(table.io, (i.location for i in orphans))
    return search.result(orphans, dry_run=False, failed=failed)
