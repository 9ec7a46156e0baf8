"""Metastore tables: a pointer to the current metadata file, swapped by check-and-put.

Spec, *Metastore Tables*: "The atomic swap needed to commit new versions of table metadata can
be implemented by storing a pointer in a metastore or database that is updated with a
check-and-put operation. [...] Each version of table metadata is stored in a metadata folder
under the table's base location using a naming scheme that includes a version and UUID:
``<V>-<random-uuid>.metadata.json``. To commit a new metadata version, ``V+1``, the writer
performs the following steps:

1. Create a new table metadata file based on the current metadata.
2. Write the new table metadata to a unique file: ``<V+1>-<random-uuid>.metadata.json``.
3. Request that the metastore swap the table's metadata pointer from the location of ``V`` to
   the location of ``V+1``."

When the swap raises and its outcome is unknown (say the connection dropped after the
``UPDATE`` was sent), :meth:`MetastoreCatalog._reconcile` reloads the pointer and decides from
it and the current ``metadata-log``; only when that is impossible does the commit end in
:class:`CommitStateUnknown`, with nothing deleted.

>>> parse_version("s3://b/t/metadata/00041-6c97e413-d51b-4538-ac70-12fe2a85cb83.metadata.json")
41
>>> parse_version("/t/metadata/v7.metadata.json"), parse_version("/t/metadata/x.json")
(7, -1)
"""

from __future__ import annotations

import logging
import re
import uuid
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Mapping

from icepark.catalog.base import (
    LOCATION,
    BaseCatalog,
    absolute_location,
    read_metadata,
    warehouse_location,
    write_metadata,
)
from icepark.catalog.identifier import show
from icepark.errors import (
    AlreadyExists,
    CommitFailed,
    CommitStateUnknown,
    NoSuchTable,
    Remedy,
    ValidationError,
)
from icepark.io.fileio import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.table.change.commit import CommitResult, Identifier

log = logging.getLogger(__name__)

_VERSIONED = re.compile(
    r"(\d+)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"(?:\.gz)?\.metadata\.json(?:\.gz)?")
_HADOOP = re.compile(r"v(\d+)(?:\.gz)?\.metadata\.json(?:\.gz)?")
_DROP_ATTEMPTS = 10


def parse_version(metadata_location: str) -> int:
    """The ``V`` of ``<V>-<uuid>.metadata.json`` (or of ``v<V>.metadata.json``); -1 for any
    other name, so that the next version is 0."""
    name = metadata_location.rsplit("/", 1)[-1]
    match = _VERSIONED.fullmatch(name) or _HADOOP.fullmatch(name)
    return int(match.group(1)) if match else -1


def new_metadata_location(table_location: str, version: int) -> str:
    """``<location>/metadata/<V zero-padded to 5 digits>-<uuid4>.metadata.json``."""
    return f"{table_location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"


class MetastoreCatalog(BaseCatalog):
    """A catalog that stores a pointer per table; subclasses implement the pointer store.

    Metadata files named ``<V>-<uuid>.metadata.json`` are never rewritten, so the last few
    parsed versions are kept by location: a commit that follows a load or a commit through
    this catalog reads the pointer but does not parse the same file again.
    """

    _CACHED_VERSIONS = 16

    def __init__(self, name: str, properties: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None) -> None:
        super().__init__(name, properties, file_io)
        self._metadata_cache: OrderedDict[str, TableMetadata] = OrderedDict()

    def _cached_metadata(self, location: str) -> TableMetadata:
        metadata = self._metadata_cache.get(location)
        if metadata is None:
            metadata = read_metadata(self.file_io, location)
        self._remember(location, metadata)
        return metadata

    def _remember(self, location: str, metadata: TableMetadata) -> None:
        if _VERSIONED.search(location) is None:
            return  # only uuid-named files are known never to be replaced
        cache = self._metadata_cache
        cache[location] = metadata
        cache.move_to_end(location)
        while len(cache) > self._CACHED_VERSIONS:
            cache.popitem(last=False)

    # ------------------------------------------------------------------ pointer store

    @abstractmethod
    def _read_pointer(self, identifier: Identifier) -> str:
        """The current metadata location; :class:`NoSuchTable` if there is no entry."""

    @abstractmethod
    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """Add an entry; :class:`AlreadyExists` if one exists."""

    @abstractmethod
    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> bool:
        """Check-and-put: set the pointer to ``new`` if it is ``expected``; False if it was
        not (another writer won). Any exception means the outcome is unknown unless
        :meth:`_known_failure` says otherwise."""

    @abstractmethod
    def _delete_pointer(self, identifier: Identifier, expected: str | None) -> bool:
        """Remove the entry (only if it points to ``expected``, when given); False if no
        entry matched."""

    def _known_failure(self, error: Exception) -> bool:
        """Whether ``error``, raised by the swap, proves that nothing was changed."""
        return False

    # ------------------------------------------------------------------ BaseCatalog hooks

    def _load_current(self, identifier: Identifier) -> CommitResult:
        location = self._read_pointer(identifier)
        return CommitResult(self._cached_metadata(location), location)

    def _table_location(self, identifier: Identifier, requested: str | None) -> str:
        """The requested location, else ``<namespace location>/<table>`` when the namespace
        has a ``location`` property, else ``<warehouse>/<namespace>.db/<table>`` (the Hive
        convention pyiceberg and Java use for database directories; levels of a nested
        namespace are joined with dots)."""
        if requested is not None:
            return absolute_location(requested)
        namespace, name = identifier[:-1], identifier[-1]
        ns_location = self.load_namespace_properties(namespace).get(LOCATION)
        if ns_location:
            return f"{ns_location.rstrip('/')}/{name}"
        warehouse = warehouse_location(self._properties)
        if warehouse is None:
            raise ValidationError(
                f"Cannot choose a location for {show(identifier)}",
                remedy=Remedy("pass {} or set the catalog's 'warehouse' property", "location="))
        return f"{warehouse}/{'.'.join(namespace)}.db/{name}"

    def _create(self, identifier: Identifier, metadata: TableMetadata) -> CommitResult:
        location = new_metadata_location(metadata.location, 0)
        write_metadata(self.file_io, location, metadata)
        try:
            self._insert_pointer(identifier, location)
        except AlreadyExists:
            self._delete_quietly(location)
            raise
        except Exception as e:
            if not self._known_failure(e):
                return self._reconcile(identifier, None, location, metadata, e)
            self._delete_quietly(location)
            raise CommitFailed(f"Cannot create {show(identifier)}: {e}") from e
        return CommitResult(metadata, location)

    def _register(self, identifier: Identifier, metadata_location: str,
                  metadata: TableMetadata) -> CommitResult:
        self._insert_pointer(identifier, metadata_location)
        return CommitResult(metadata, metadata_location)

    def _publish(self, identifier: Identifier, base: CommitResult,
                 metadata: TableMetadata) -> CommitResult:
        version = parse_version(base.metadata_location) + 1
        location = new_metadata_location(metadata.location, version)
        write_metadata(self.file_io, location, metadata)
        try:
            swapped = self._swap_pointer(identifier, base.metadata_location, location)
        except Exception as e:
            if not self._known_failure(e):
                return self._reconcile(identifier, base.metadata_location, location, metadata, e)
            self._delete_quietly(location)
            raise CommitFailed(f"Cannot commit {show(identifier)}, retry: {e}") from e
        if not swapped:
            self._delete_quietly(location)
            raise CommitFailed(f"Cannot commit {show(identifier)}: the table was changed by "
                               "another writer since it was loaded")
        self._remember(location, metadata)
        return CommitResult(metadata, location)

    def _reconcile(self, identifier: Identifier, base: str | None, ours: str,
                   metadata: TableMetadata, error: Exception) -> CommitResult:
        """Decide the outcome of a swap that raised ``error``.

        Reload the pointer: if it is ``ours``, the commit succeeded. If it is another file
        whose ``metadata-log`` lists ours, it succeeded and others committed on top. If that
        log lists ``base`` (or the pointer is still ``base``) but not ours, every version
        since ``base`` is known and ours is not among them: the commit failed and our file
        is deleted. Anything else (the reload fails, the log was trimmed past ``base``) is
        :class:`CommitStateUnknown`, and nothing is deleted.
        """
        what = f"the commit to {show(identifier)}"
        try:
            current = self._read_pointer(identifier)
            if current == ours:
                log.info("Swap raised %s, but %s succeeded", type(error).__name__, what)
                return CommitResult(metadata, ours)
            if current != base:
                logged = {e.metadata_file for e in
                          read_metadata(self.file_io, current).metadata_log}
                if ours in logged:
                    return CommitResult(metadata, ours)
                if base is None or base not in logged:
                    raise CommitStateUnknown(
                        f"Cannot tell whether {what} succeeded after {type(error).__name__}: "
                        f"the table moved on and its metadata log no longer reaches the base "
                        f"version; {ours} was kept")
        except CommitStateUnknown:
            raise
        except NoSuchTable as e:
            if base is None:  # creating: no entry means the insert did not happen
                self._delete_quietly(ours)
                raise CommitFailed(f"Cannot create {show(identifier)}: {error}") from error
            raise CommitStateUnknown(
                f"Cannot tell whether {what} succeeded after {type(error).__name__}: the table "
                f"is gone ({e}); {ours} was kept") from error
        except Exception as e:
            raise CommitStateUnknown(
                f"Cannot tell whether {what} succeeded after {type(error).__name__}: reloading "
                f"the table failed too ({type(e).__name__}); {ours} was kept") from error
        self._delete_quietly(ours)
        raise CommitFailed(f"{what[0].upper()}{what[1:]} failed ({type(error).__name__}: "
                           f"{error}); another writer won") from error

    def _drop(self, identifier: Identifier, purge: bool) -> None:
        if not purge:
            if not self._delete_pointer(identifier, None):
                raise NoSuchTable(f"Table does not exist: {show(identifier)}")
            return
        for _ in range(_DROP_ATTEMPTS):
            current = self._load_current(identifier)
            if self._delete_pointer(identifier, current.metadata_location):
                self._purge(current)
                return
        raise CommitFailed(f"Cannot drop {show(identifier)}: it kept changing; retry")
