"""The filesystem catalog: path-based tables with ``v<N>.metadata.json`` files and no server.

Spec, *File System Tables*: "Each version of table metadata is stored in a metadata folder under
the table's base location using a file naming scheme that includes a version number, ``V``:
``v<V>.metadata.json``. To commit a new metadata version, ``V+1``, the writer performs the
following steps: 1. Read the current table metadata version ``V``. 2. Create new table metadata
based on version ``V``. 3. Write the new table metadata to a unique file:
``<random-uuid>.metadata.json``. 4. Rename the unique file to the well-known file for version
``V``: ``v<V+1>.metadata.json``. If the rename succeeds, the commit succeeded [...] If the rename
fails, go back to step 1."

Layout (the reference implementation's ``HadoopCatalog``): a namespace is a directory, a table
is ``<warehouse>/<namespace levels...>/<table>`` with ``metadata/v<N>.metadata.json`` and a
``metadata/version-hint.text`` holding ``N``. Decisions where the spec is silent:

* Step 4 is an exclusive create (``write_exclusive``: ``os.link`` of a fully written, fsynced
  temporary file, which fails if the target exists), never ``os.rename``, which silently
  replaces on POSIX. Losing the race is :class:`CommitFailed`.
* ``version-hint.text`` is a best-effort pointer: loading starts at the hint, falls back to
  listing the folder when the hint is missing, garbage or names a deleted version, and then
  rolls forward while ``v<N+1>.metadata.json`` exists.
* Only local file systems are supported: object stores have no atomic exclusive create.
* A table's location is its path, so it cannot be created elsewhere, relocated, or renamed
  (:class:`UnsupportedFeature`); dropping a table deletes its directory, as ``HadoopCatalog``
  does (with or without ``purge``), and nothing outside it.
* Namespace properties live in ``.namespace-properties.json`` in the namespace directory.

>>> import tempfile
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> catalog = FilesystemCatalog("fs", {"warehouse": tempfile.mkdtemp()})
>>> catalog.create_namespace(("a", "b"))
>>> table = catalog.create_table("a.b.t", Schema.of(NestedField.required(1, "id", LONG)))
>>> table.metadata_location.endswith("/a/b/t/metadata/v1.metadata.json")
True
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from urllib.parse import urlsplit

from icepark.catalog.base import (
    BaseCatalog,
    PropertiesUpdate,
    absolute_location,
    plan_properties_update,
    write_metadata,
)
from icepark.catalog.base import read_metadata as _read_metadata
from icepark.catalog.identifier import (
    IdentifierLike,
    NamespaceLike,
    check_part,
    namespace_identifier,
    optional_namespace,
    show,
    table_identifier,
)
from icepark.catalog.locks import flock
from icepark.catalog.purge import normalize_location
from icepark.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitFailed,
    CommitStateUnknown,
    FileNotFound,
    NoSuchNamespace,
    NoSuchTable,
    UnsupportedFeature,
    ValidationError,
)
from icepark.io.fileio import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.spec.serde import table_metadata_to_json
from icepark.table.change.commit import CommitResult, Identifier
from icepark.table.table import Table

log = logging.getLogger(__name__)

HINT = "version-hint.text"
NAMESPACE_FILE = ".namespace-properties.json"
_VERSION_FILE = re.compile(r"v(\d+)\.metadata\.json")


def version_of(metadata_location: str) -> int:
    """The ``N`` of ``.../v<N>.metadata.json``.

    >>> version_of("/wh/db/t/metadata/v12.metadata.json")
    12
    """
    match = _VERSION_FILE.fullmatch(metadata_location.rsplit("/", 1)[-1])
    if match is None:
        raise ValidationError(f"Not a path-based table metadata file: {metadata_location}")
    return int(match.group(1))


def _versions(metadata_dir: str) -> list[int]:
    try:
        names = os.listdir(metadata_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [int(m.group(1)) for m in map(_VERSION_FILE.fullmatch, names) if m]


class FilesystemCatalog(BaseCatalog):
    """Path-based tables under a local ``warehouse`` directory (see the module docstring)."""

    def __init__(self, name: str, properties: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None) -> None:
        super().__init__(name, properties, file_io)
        raw = self._properties.get("warehouse")
        if not raw:
            raise ValidationError("The filesystem catalog needs a 'warehouse' directory")
        self._base = absolute_location(raw)
        parts = urlsplit(self._base)
        if len(parts.scheme) > 1 and parts.scheme.lower() != "file":
            raise UnsupportedFeature(
                f"The filesystem catalog needs a local warehouse, not {parts.scheme}://: object "
                "stores cannot create a file exclusively; use the SQL catalog")
        self._root = os.path.abspath(parts.path if parts.scheme.lower() == "file" else raw)
        if os.path.exists(self._root) and not (
                os.path.isdir(self._root) and os.access(self._root, os.R_OK | os.X_OK)):
            what = "not a directory" if not os.path.isdir(self._root) else "not readable"
            raise CatalogUnavailable(f"Catalog {name!r} is unavailable: its warehouse "
                                     f"{self._root} is {what}")

    # ------------------------------------------------------------------ layout

    def _path(self, parts: Identifier) -> str:
        return os.path.join(self._root, *parts)

    def _location(self, parts: Identifier) -> str:
        return "/".join((self._base, *parts))

    def _is_table_dir(self, path: str) -> bool:
        metadata_dir = os.path.join(path, "metadata")
        return bool(_versions(metadata_dir)) or os.path.isfile(os.path.join(metadata_dir, HINT))

    def _inside_table(self, parts: Identifier) -> bool:
        """Whether ``parts`` or one of its ancestors is a table directory."""
        return any(self._is_table_dir(self._path(parts[:i])) for i in range(1, len(parts) + 1))

    # ------------------------------------------------------------------ namespaces

    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        return self._is_namespace(namespace_identifier(namespace))

    def _is_namespace(self, parts: Identifier) -> bool:
        """Whether ``parts`` (validated: a namespace, or a table identifier whose joined parts
        may be longer than a namespace may be) is a namespace directory."""
        return os.path.isdir(self._path(parts)) and not self._inside_table(parts)

    def create_namespace(self, namespace: NamespaceLike,
                         properties: Mapping[str, str] | None = None) -> None:
        ns = namespace_identifier(namespace)
        props = dict(properties or {})
        plan_properties_update({}, (), props)
        if self._inside_table(ns[:-1]) or self._is_table_dir(self._path(ns)):
            raise AlreadyExists(f"Cannot create namespace {show(ns)}: a table has that path")
        os.makedirs(self._path(ns[:-1]), exist_ok=True)
        try:
            os.mkdir(self._path(ns))
        except FileExistsError:
            raise AlreadyExists(f"Namespace already exists: {show(ns)}") from None
        if props:
            self._write_properties(ns, props)

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Identifier]:
        base = optional_namespace(parent)
        if base and not self.namespace_exists(base):
            raise NoSuchNamespace(f"Namespace does not exist: {show(base)}")
        return sorted((*base, name) for name in self._children(base)
                      if not self._is_table_dir(self._path((*base, name))))

    def _children(self, parent: Identifier) -> list[str]:
        """Subdirectories with valid identifier names (hidden ones skipped)."""
        try:
            entries = list(os.scandir(self._path(parent)))
        except FileNotFoundError:
            return []
        names = []
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith("."):
                try:
                    names.append(check_part(entry.name))
                except ValidationError:
                    continue
        return names

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        ns = namespace_identifier(namespace)
        self._require_namespace(ns)
        try:
            with open(os.path.join(self._path(ns), NAMESPACE_FILE), encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise ValidationError(
                f"Cannot read the properties of namespace {show(ns)}: {e}") from None
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write_properties(self, ns: Identifier, properties: Mapping[str, str]) -> None:
        """Replace the properties file at once (a temporary file moved over it)."""
        directory = self._path(ns)
        fd, tmp = tempfile.mkstemp(prefix=f"{NAMESPACE_FILE}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(dict(sorted(properties.items())), f, indent=2)
            os.replace(tmp, os.path.join(directory, NAMESPACE_FILE))
        except BaseException:
            os.unlink(tmp)
            raise

    def update_namespace_properties(self, namespace: NamespaceLike,
                                    removals: Iterable[str] = (),
                                    updates: Mapping[str, str] | None = None
                                    ) -> PropertiesUpdate:
        ns = namespace_identifier(namespace)
        current = self.load_namespace_properties(ns)
        updates = dict(updates or {})
        summary = plan_properties_update(current, removals, updates)
        for key in summary.removed:
            del current[key]
        current.update(updates)
        self._write_properties(ns, current)
        return summary

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        """Drop an empty namespace: its directory may hold nothing but its properties."""
        ns = namespace_identifier(namespace)
        self._require_namespace(ns)
        path = self._path(ns)
        if set(os.listdir(path)) - {NAMESPACE_FILE}:
            raise ValidationError(f"Namespace {show(ns)} is not empty: drop its tables and "
                                  "child namespaces first")
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(path, NAMESPACE_FILE))
        try:
            os.rmdir(path)
        except OSError as e:
            raise ValidationError(f"Namespace {show(ns)} is not empty: {e}") from None

    # ------------------------------------------------------------------ tables

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        ns = namespace_identifier(namespace)
        self._require_namespace(ns)
        return sorted((*ns, name) for name in self._children(ns)
                      if self._is_table_dir(self._path((*ns, name))))

    def rename_table(self, source: IdentifierLike, destination: IdentifierLike) -> Table:
        """Refused: a path-based table's location is its path, and files are never moved."""
        table_identifier(source), table_identifier(destination)
        raise UnsupportedFeature(
            "The filesystem catalog cannot rename tables: a path-based table's location is its "
            "path; create a new table (or use the SQL catalog)")

    def _table_location(self, identifier: Identifier, requested: str | None) -> str:
        location = self._location(identifier)
        if requested is not None and normalize_location(requested) != normalize_location(location):
            raise ValidationError(
                f"Cannot create {show(identifier)} at {requested}: a path-based table's "
                f"location is its path, {location}")
        return location

    def _metadata_dir(self, identifier: Identifier) -> str:
        return os.path.join(self._path(identifier), "metadata")

    def _metadata_location(self, identifier: Identifier, version: int) -> str:
        return f"{self._location(identifier)}/metadata/v{version}.metadata.json"

    def _current_version(self, identifier: Identifier) -> int | None:
        """The hint's version if its file exists, else the highest listed, rolled forward
        while ``v<N+1>.metadata.json`` exists; None for no table."""
        if self._inside_table(identifier[:-1]):
            return None
        metadata_dir = self._metadata_dir(identifier)
        version: int | None = None
        try:
            with open(os.path.join(metadata_dir, HINT), encoding="utf-8") as f:
                version = int(f.read().strip())
        except (OSError, ValueError):
            pass
        if version is None or not os.path.isfile(
                os.path.join(metadata_dir, f"v{version}.metadata.json")):
            version = max(_versions(metadata_dir), default=None)
            if version is None:
                return None
        while os.path.isfile(os.path.join(metadata_dir, f"v{version + 1}.metadata.json")):
            version += 1
        return version

    def _load_current(self, identifier: Identifier) -> CommitResult:
        version = self._current_version(identifier)
        if version is None:
            raise NoSuchTable(f"Table does not exist: {show(identifier)}")
        location = self._metadata_location(identifier, version)
        return CommitResult(_read_metadata(self.file_io, location), location)

    def _write_hint(self, identifier: Identifier, version: int) -> None:
        """Best effort: a stale or missing hint only costs a roll-forward."""
        metadata_dir = self._metadata_dir(identifier)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{HINT}.", dir=metadata_dir)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(str(version))
            os.replace(tmp, os.path.join(metadata_dir, HINT))
        except OSError as e:
            log.warning("Could not update %s of %s: %s", HINT, show(identifier), e)

    def _write_version(self, identifier: Identifier, version: int,
                       metadata: TableMetadata) -> CommitResult:
        """Publish ``v<version>.metadata.json`` exclusively, then move the hint."""
        location = self._metadata_location(identifier, version)
        try:
            write_metadata(self.file_io, location, metadata)
        except AlreadyExists:
            raise
        except Exception as e:  # did the link land before the error? Look at the file.
            try:
                published = self.file_io.new_input(location).read()
            except FileNotFound:
                raise e from None  # nothing was published
            except Exception as check:
                raise CommitStateUnknown(
                    f"Cannot tell whether v{version} of {show(identifier)} was published "
                    f"({type(e).__name__}, then {type(check).__name__})") from e
            if published != table_metadata_to_json(metadata).encode():
                raise CommitFailed(f"Cannot commit {show(identifier)}: another writer "
                                   f"published v{version}") from e
        self._write_hint(identifier, version)
        return CommitResult(metadata, location)

    def _create(self, identifier: Identifier, metadata: TableMetadata) -> CommitResult:
        if self._is_namespace(identifier):
            raise AlreadyExists(f"Cannot create table {show(identifier)}: a namespace has "
                                "that path")
        try:
            return self._write_version(identifier, 1, metadata)
        except AlreadyExists:
            raise AlreadyExists(f"Table already exists: {show(identifier)}") from None

    def _register(self, identifier: Identifier, metadata_location: str,
                  metadata: TableMetadata) -> CommitResult:
        """Copy the metadata file in as ``v1`` (its location must be the table's path)."""
        self._table_location(identifier, metadata.location)
        if self._current_version(identifier) is not None:
            raise AlreadyExists(f"Table already exists: {show(identifier)}")
        try:
            return self._write_version(identifier, 1, metadata)
        except AlreadyExists:
            raise AlreadyExists(f"Table already exists: {show(identifier)}") from None

    def _publish(self, identifier: Identifier, base: CommitResult,
                 metadata: TableMetadata) -> CommitResult:
        if normalize_location(metadata.location) != normalize_location(base.metadata.location):
            raise ValidationError(f"Cannot relocate {show(identifier)}: a path-based table's "
                                  "location is its path")
        version = version_of(base.metadata_location) + 1
        try:
            return self._write_version(identifier, version, metadata)
        except AlreadyExists:
            raise CommitFailed(f"Cannot commit {show(identifier)}: another writer published "
                               f"v{version} first") from None

    def _commit_lock(self, identifier: Identifier,
                     timeout_s: float) -> AbstractContextManager[bool]:
        """An ``flock`` on the table's ``metadata`` directory (no lock file is left behind)."""
        return flock(self._metadata_dir(identifier), timeout_s, create=False)

    def _drop(self, identifier: Identifier, purge: bool) -> None:
        """Delete the table directory (after the reachable files inside the table location,
        with ``purge``); the directory is the table, as in ``HadoopCatalog``."""
        current = self._load_current(identifier)
        if purge:
            self._purge(current)
        shutil.rmtree(self._path(identifier), ignore_errors=False)
