"""The catalog contract and the table flows every catalog shares.

Spec, *Optimistic Concurrency*: "An atomic swap of one table metadata file for another provides
the basis for serializable isolation. [...] Writers create table metadata files optimistically,
assuming that the current version will not be changed before the writer's commit. Once a writer
has created an update, it commits by swapping the table's metadata file pointer from the base
version to the new version."

:class:`BaseCatalog` implements that flow once: load the current version, check every
requirement, build the new metadata with the one
:class:`~icepark.table.change.metadata_builder.MetadataBuilder` (which appends the replaced file to
the
``metadata-log`` and trims it to ``write.metadata.previous-versions-max``), then let the concrete
catalog publish it atomically (:meth:`BaseCatalog._publish`): a compare-and-swap of a pointer
(:mod:`icepark.catalog.metastore`, :mod:`icepark.catalog.sql`) or an exclusive create of
``v<N+1>.metadata.json`` (:mod:`icepark.catalog.filesystem`).

Catalog properties (a SQL URI with a password, ``s3.secret-access-key`` ...) are given to the
FileIO only; they are never copied into table properties, log records or error messages.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from icepark.catalog.identifier import (
    IdentifierLike,
    NamespaceLike,
    show,
    table_identifier,
)
from icepark.catalog.locks import acquire_timeout_s, lock_enabled, once_per_thread
from icepark.catalog.purge import is_under, purge_table
from icepark.errors import AlreadyExists, NoSuchNamespace, NoSuchTable, ValidationError
from icepark.io.arrow.schema_like import SchemaLike, to_schema
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.spec import clauses
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.metadata_rules import check_last_column_id
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_json
from icepark.spec.sorting import SortOrder
from icepark.table.change.commit import CommitResult, Identifier, TableCommitter
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.change.updates import TableRequirement, TableUpdate, check_requirement
from icepark.table.table import Table

log = logging.getLogger(__name__)

PartitionSpecLike = PartitionSpec | str | Sequence[str] | None
"""A partition spec, or clauses that describe one: ``"day(ts), bucket(16, id)"``."""
SortOrderLike = SortOrder | str | Sequence[str] | None
"""A sort order, or clauses that describe one: ``"ts desc, id"``."""

DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
"""Table property: "delete the oldest tracked version metadata files after commit"."""

WAREHOUSE = "warehouse"
LOCATION = "location"


@dataclass(frozen=True, slots=True)
class PropertiesUpdate:
    """What :meth:`Catalog.update_namespace_properties` did: keys removed, keys set, and
    removals asked for that were not there."""

    removed: tuple[str, ...]
    updated: tuple[str, ...]
    missing: tuple[str, ...]


class Catalog(TableCommitter, Protocol):
    """Namespaces and the tables in them (the API of pyiceberg's ``Catalog``, Python names).

    Identifiers are ``"db.events"`` or ``("db", "events")``; namespaces ``"db"``, ``"a.b"``
    or ``("a", "b")``. Unknown namespaces raise :class:`~icepark.errors.NoSuchNamespace`,
    unknown tables :class:`~icepark.errors.NoSuchTable`, duplicates
    :class:`~icepark.errors.AlreadyExists`, and invalid names
    :class:`~icepark.errors.ValidationError`.
    """

    @property
    def name(self) -> str: ...

    def create_namespace(self, namespace: NamespaceLike,
                         properties: Mapping[str, str] | None = None) -> None: ...

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Identifier]: ...

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]: ...

    def update_namespace_properties(self, namespace: NamespaceLike,
                                    removals: Iterable[str] = (),
                                    updates: Mapping[str, str] | None = None
                                    ) -> PropertiesUpdate: ...

    def drop_namespace(self, namespace: NamespaceLike) -> None: ...

    def namespace_exists(self, namespace: NamespaceLike) -> bool: ...

    def create_table(self, identifier: IdentifierLike, schema: SchemaLike, *,
                     partition_spec: PartitionSpecLike = None,
                     sort_order: SortOrderLike = None, location: str | None = None,
                     properties: Mapping[str, str] | None = None,
                     format_version: FormatVersion = 2,
                     keep_field_ids: bool = False) -> Table: ...

    def create_table_if_not_exists(
            self, identifier: IdentifierLike, schema: SchemaLike, *,
            partition_spec: PartitionSpecLike = None, sort_order: SortOrderLike = None,
            location: str | None = None, properties: Mapping[str, str] | None = None,
            format_version: FormatVersion = 2, keep_field_ids: bool = False) -> Table: ...

    def load_table(self, identifier: IdentifierLike) -> Table: ...

    def table_exists(self, identifier: IdentifierLike) -> bool: ...

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]: ...

    def drop_table(self, identifier: IdentifierLike, purge: bool = False) -> None: ...

    def rename_table(self, source: IdentifierLike, destination: IdentifierLike) -> Table: ...

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table: ...


def _partition_spec(spec: PartitionSpecLike, schema: Schema) -> PartitionSpec | None:
    if spec is None or isinstance(spec, PartitionSpec):
        return spec
    return clauses.partition_spec(_clause_text(spec, "partition_spec", "a PartitionSpec",
                                               '["day(ts)", "bucket(16, id)"]'),
                                  schema, "partition_spec")


def _sort_order(order: SortOrderLike, schema: Schema) -> SortOrder | None:
    if order is None or isinstance(order, SortOrder):
        return order
    return clauses.sort_order(_clause_text(order, "sort_order", "a SortOrder", '"ts desc, id"'),
                              schema, "sort_order")


def _clause_text(value: object, what: str, value_kind: str, example: str) -> str | list[str]:
    """``value`` as clauses (a string or a list of strings), or a ValidationError saying what
    ``what`` accepts."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(c, str) for c in value):
        return list(value)
    raise ValidationError(f"{what} must be {value_kind} or clauses such as {example}, not "
                          f"{type(value).__name__}")


def read_metadata(file_io: FileIO, location: str) -> TableMetadata:
    """Read a metadata file (gzip-compressed ones too, as ``.gz.metadata.json`` files are):
    :class:`~icepark.errors.FileNotFound` if it is missing, and errors naming ``location``
    if it does not decode (:class:`~icepark.errors.CorruptFile`) or breaks the spec
    (:class:`~icepark.errors.ValidationError`, also for a ``last-column-id`` below a field
    ID: :func:`~icepark.spec.metadata_rules.check_last_column_id`)."""
    metadata = table_metadata_from_json(file_io.new_input(location).read(), location)
    check_last_column_id(metadata, f"Table metadata file {location}")
    return metadata


def write_metadata(file_io: FileIO, location: str, metadata: TableMetadata) -> None:
    """Publish a new metadata file; ``AlreadyExists`` if the location is taken."""
    file_io.new_output(location).write_exclusive(table_metadata_to_json(metadata).encode())


def plan_properties_update(current: Mapping[str, str], removals: Iterable[str],
                           updates: Mapping[str, str]) -> PropertiesUpdate:
    """Check a namespace property change and summarize it.

    >>> plan_properties_update({"a": "1"}, ["a", "b"], {"c": "3"})
    PropertiesUpdate(removed=('a',), updated=('c',), missing=('b',))
    """
    removal_set = set(removals)
    overlap = removal_set & set(updates)
    if overlap:
        raise ValidationError(
            f"Cannot both remove and set namespace properties {sorted(overlap)}")
    for key, value in updates.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key:
            raise ValidationError(f"Namespace properties map non-empty strings to strings, "
                                  f"not {key!r} to {value!r}")
    return PropertiesUpdate(tuple(sorted(k for k in removal_set if k in current)),
                            tuple(sorted(updates)),
                            tuple(sorted(k for k in removal_set if k not in current)))


class BaseCatalog(ABC):
    """The shared table flows; subclasses store namespaces and publish versions."""

    def __init__(self, name: str, properties: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValidationError("A catalog needs a non-empty name")
        self._name = name
        self._properties = {str(k): str(v) for k, v in (properties or {}).items()}
        self._lock_timeout_s = acquire_timeout_s(self._properties)
        self.file_io: FileIO = file_io or ArrowFileIO(self._properties)

    @property
    def name(self) -> str:
        return self._name

    @property
    def properties(self) -> dict[str, str]:
        """The catalog's properties (a copy; they may hold credentials: do not log them)."""
        return dict(self._properties)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """A catalog pickles as its class, name, properties and FileIO, and connects anew
        where it is unpickled (a Spark task, or the server-side worker of a Spark Connect
        ``foreachBatch``), so a :class:`~icepark.table.table.Table` pickles too. Its
        properties go with it, credentials included: they are what the other side needs."""
        return (type(self), (self._name, self._properties, self.file_io))

    # ------------------------------------------------------------------ namespaces (abstract)

    @abstractmethod
    def create_namespace(self, namespace: NamespaceLike,
                         properties: Mapping[str, str] | None = None) -> None: ...

    @abstractmethod
    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Identifier]: ...

    @abstractmethod
    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]: ...

    @abstractmethod
    def update_namespace_properties(self, namespace: NamespaceLike,
                                    removals: Iterable[str] = (),
                                    updates: Mapping[str, str] | None = None
                                    ) -> PropertiesUpdate: ...

    @abstractmethod
    def drop_namespace(self, namespace: NamespaceLike) -> None: ...

    @abstractmethod
    def namespace_exists(self, namespace: NamespaceLike) -> bool: ...

    def _require_namespace(self, namespace: Identifier) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespace(f"Namespace does not exist: {show(namespace)}")

    # ------------------------------------------------------------------ tables (abstract)

    @abstractmethod
    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]: ...

    @abstractmethod
    def rename_table(self, source: IdentifierLike, destination: IdentifierLike) -> Table: ...

    @abstractmethod
    def _load_current(self, identifier: Identifier) -> CommitResult:
        """The table's current version; :class:`NoSuchTable` if there is none."""

    @abstractmethod
    def _table_location(self, identifier: Identifier, requested: str | None) -> str:
        """The location of a new table (``requested`` is the caller's, if any)."""

    @abstractmethod
    def _create(self, identifier: Identifier, metadata: TableMetadata) -> CommitResult:
        """Publish the first version of a new table; :class:`AlreadyExists` if it exists."""

    @abstractmethod
    def _register(self, identifier: Identifier, metadata_location: str,
                  metadata: TableMetadata) -> CommitResult:
        """Make an existing metadata file the table's current version."""

    @abstractmethod
    def _publish(self, identifier: Identifier, base: CommitResult,
                 metadata: TableMetadata) -> CommitResult:
        """Write ``metadata`` and swap it in for ``base`` atomically: :class:`CommitFailed`
        (after deleting what was written) when another writer won, :class:`CommitStateUnknown`
        (deleting nothing) when the outcome cannot be known."""

    @abstractmethod
    def _drop(self, identifier: Identifier, purge: bool) -> None:
        """Remove the table (and with ``purge`` its files inside its location)."""

    def _commit_lock(self, identifier: Identifier,
                     timeout_s: float) -> AbstractContextManager[bool]:
        """The table's commit lock (:mod:`icepark.catalog.locks`); none by default."""
        return nullcontext(False)

    def commit_lock(self, identifier: IdentifierLike) -> AbstractContextManager[bool]:
        """Hold the table's commit lock, unless the catalog property ``lock.enabled`` is
        false (the :class:`TableCommitter` contract)."""
        if not lock_enabled(self._properties):
            return nullcontext(False)
        ident = table_identifier(identifier)
        return once_per_thread((type(self).__name__, self.name, ident),
                               lambda: self._commit_lock(ident, self._lock_timeout_s))

    # ------------------------------------------------------------------ tables (shared)

    def _table(self, identifier: Identifier, current: CommitResult) -> Table:
        return Table(identifier, current, self.file_io, self)

    def create_table(self, identifier: IdentifierLike, schema: SchemaLike, *,
                     partition_spec: PartitionSpecLike = None,
                     sort_order: SortOrderLike = None, location: str | None = None,
                     properties: Mapping[str, str] | None = None,
                     format_version: FormatVersion = 2,
                     keep_field_ids: bool = False) -> Table:
        """Create a table; its first metadata file is written before the catalog entry, and
        removed again if the entry cannot be made.

        ``schema`` is an icepark :class:`~icepark.spec.schema.Schema`, a ``pyarrow.Schema`` or
        a Spark ``StructType``; its columns get fresh IDs from 1 (the spec's rule for a new
        table, as the reference implementation and pyiceberg assign them) unless
        ``keep_field_ids`` keeps the IDs it carries. ``partition_spec`` and ``sort_order`` are
        given against ``schema``, or as clauses such as ``["day(ts)", "bucket(16, id)"]`` and
        ``"ts desc, id"``.
        """
        ident = table_identifier(identifier)
        iceberg_schema = to_schema(schema, keep_field_ids, format_version)
        spec = _partition_spec(partition_spec, iceberg_schema)
        order = _sort_order(sort_order, iceberg_schema)
        self._require_namespace(ident[:-1])
        if self.table_exists(ident):
            raise AlreadyExists(f"Table already exists: {show(ident)}")
        if location is not None and not location.strip("/"):
            raise ValidationError(f"Invalid table location {location!r}")
        table_location = self._table_location(ident, location)
        metadata, _ = MetadataBuilder.new_table(
            iceberg_schema, table_location, spec=spec, sort_order=order,
            properties=properties, format_version=format_version, fresh_ids=not keep_field_ids)
        return self._table(ident, self._create(ident, metadata))

    def create_table_if_not_exists(
            self, identifier: IdentifierLike, schema: SchemaLike, *,
            partition_spec: PartitionSpecLike = None, sort_order: SortOrderLike = None,
            location: str | None = None, properties: Mapping[str, str] | None = None,
            format_version: FormatVersion = 2, keep_field_ids: bool = False) -> Table:
        """The table ``identifier``, created as :meth:`create_table` does if it does not exist
        (also when another process creates it first); an existing table is returned as it is."""
        try:
            return self.create_table(
                identifier, schema, partition_spec=partition_spec, sort_order=sort_order,
                location=location, properties=properties, format_version=format_version,
                keep_field_ids=keep_field_ids)
        except AlreadyExists:
            return self.load_table(identifier)

    def load_table(self, identifier: IdentifierLike) -> Table:
        ident = table_identifier(identifier)
        return self._table(ident, self._load_current(ident))

    def load_metadata(self, identifier: IdentifierLike) -> CommitResult:
        """The table's current version (the :class:`TableCommitter` contract)."""
        return self._load_current(table_identifier(identifier))

    def table_exists(self, identifier: IdentifierLike) -> bool:
        ident = table_identifier(identifier)
        try:
            self._load_current(ident)
        except NoSuchTable:
            return False
        return True

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        """Add a table whose metadata file already exists (e.g. written by another catalog)."""
        ident = table_identifier(identifier)
        self._require_namespace(ident[:-1])
        metadata = read_metadata(self.file_io, metadata_location)
        return self._table(ident, self._register(ident, metadata_location, metadata))

    def drop_table(self, identifier: IdentifierLike, purge: bool = False) -> None:
        """Remove the table from the catalog. With ``purge``, also delete every file reachable
        from its current metadata (metadata files and the metadata log, manifest lists,
        manifests, data and delete files, statistics) that lies inside the table location;
        files outside it are never touched."""
        self._drop(table_identifier(identifier), purge)

    def commit_table(self, identifier: IdentifierLike, requirements: Sequence[TableRequirement],
                     updates: Sequence[TableUpdate]) -> CommitResult:
        """Check ``requirements`` on the current version, apply ``updates`` and publish.

        Spec, *Metastore Tables*: "If the swap fails, another writer has already created
        ``V+1``. The current writer goes back to step 1." Going back is the caller's job
        (:func:`icepark.table.change.commit.commit_with_retry`); this raises :class:`CommitFailed`.
        An empty ``updates`` changes nothing and writes nothing.
        """
        ident = table_identifier(identifier)
        base = self._load_current(ident)
        for requirement in requirements:
            check_requirement(requirement, base.metadata)
        if not updates:
            return base
        metadata = MetadataBuilder(base.metadata).apply_all(updates).build(
            previous_metadata_location=base.metadata_location)
        result = self._publish(ident, base, metadata)
        self._delete_replaced_metadata(base.metadata, result.metadata)
        return result

    # ------------------------------------------------------------------ file helpers

    def _delete_quietly(self, location: str) -> None:
        """Best-effort delete of a file this catalog wrote (a failure is only logged)."""
        try:
            self.file_io.delete(location)
        except Exception as e:
            log.warning("Could not delete %s: %s", location, type(e).__name__)

    def _delete_replaced_metadata(self, base: TableMetadata, new: TableMetadata) -> None:
        """With ``write.metadata.delete-after-commit.enabled``, delete the metadata files that
        dropped out of the metadata log (trimmed to ``write.metadata.previous-versions-max``
        by the builder), as the reference implementation does; only files in the table's
        ``metadata`` folder are deleted."""
        if new.properties.get(DELETE_AFTER_COMMIT, "false").strip().lower() != "true":
            return
        kept = {entry.metadata_file for entry in new.metadata_log}
        folder = f"{new.location.rstrip('/')}/metadata"
        for entry in base.metadata_log:
            if entry.metadata_file not in kept and is_under(entry.metadata_file, folder):
                self._delete_quietly(entry.metadata_file)

    def _purge(self, current: CommitResult) -> None:
        purge_table(self.file_io, current.metadata, current.metadata_location)


def warehouse_location(properties: Mapping[str, str]) -> str | None:
    """The ``warehouse`` property without a trailing slash; local paths made absolute."""
    raw = properties.get(WAREHOUSE)
    if not raw:
        return None
    return absolute_location(raw)


def absolute_location(location: str) -> str:
    """``location`` with plain relative paths made absolute (URIs are kept as they are).

    >>> absolute_location("s3://bucket/wh/")
    's3://bucket/wh'
    """
    if len(urlsplit(location).scheme) > 1:
        return location.rstrip("/")
    return os.path.abspath(location)
