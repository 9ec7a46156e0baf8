"""The SQL catalog: the Iceberg JDBC catalog's tables, on SQLAlchemy (SQLite or PostgreSQL).

It uses exactly the tables and columns of the reference JDBC catalog (and pyiceberg's
``SqlCatalog``), so those clients open the same database and see the same namespaces and tables:

* ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location, iceberg_type)``: one row per table (``iceberg_type`` is
  ``'TABLE'``, or NULL in catalogs created before views; rows of views are ignored);
* ``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)``: one
  row per namespace property, with the marker ``exists = true`` that every namespace has.

A namespace is stored as its levels joined by ``.``. A namespace exists if it has property
rows, holds tables, or has a child namespace (as in both reference clients).

Spec, *Metastore Tables*: the pointer "is updated with a check-and-put operation". A commit is
one statement, ``UPDATE iceberg_tables SET metadata_location = :new,
previous_metadata_location = :old WHERE catalog_name = :c AND table_namespace = :ns AND
table_name = :t AND metadata_location = :old``; zero rows updated means another writer won.
SQLite runs in WAL mode with a busy timeout, and a "database is locked" error during the swap
proves nothing was changed, so it becomes a retryable :class:`CommitFailed`.

>>> import tempfile
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> catalog = SqlCatalog("demo", {"warehouse": tempfile.mkdtemp()})
>>> catalog.create_namespace("db", {"owner": "me"})
>>> table = catalog.create_table("db.events", Schema.of(NestedField.required(1, "id", LONG)))
>>> catalog.list_tables("db"), table.metadata_location.rsplit("/", 1)[-1][:6]
([('db', 'events')], '00000-')
>>> catalog.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, OperationalError

from icepark.catalog.base import PropertiesUpdate, plan_properties_update, warehouse_location
from icepark.catalog.identifier import (
    IdentifierLike,
    NamespaceLike,
    namespace_identifier,
    optional_namespace,
    show,
    table_identifier,
)
from icepark.catalog.locks import flock, lock_key
from icepark.catalog.metastore import MetastoreCatalog
from icepark.errors import (
    AlreadyExists,
    CatalogUnavailable,
    NoSuchNamespace,
    NoSuchTable,
    ValidationError,
)
from icepark.io.fileio import FileIO
from icepark.table.change.commit import Identifier
from icepark.table.table import Table

log = logging.getLogger(__name__)

URI = "uri"
EXISTS = "exists"
"""The namespace property every namespace row set carries (hidden from callers)."""
TABLE_TYPE = "TABLE"
_SQLITE_BUSY_MS = 30_000
_LOCK_NOT_AVAILABLE = "55P03"
"""PostgreSQL's SQLSTATE for a lock wait that ran past ``lock_timeout``."""


def _define(metadata: sa.MetaData, with_type: bool) -> tuple[sa.Table, sa.Table]:
    columns: list[sa.Column[Any]] = [
        sa.Column("catalog_name", sa.String(255), primary_key=True, nullable=False),
        sa.Column("table_namespace", sa.String(255), primary_key=True, nullable=False),
        sa.Column("table_name", sa.String(255), primary_key=True, nullable=False),
        sa.Column("metadata_location", sa.String(1000), nullable=True),
        sa.Column("previous_metadata_location", sa.String(1000), nullable=True),
    ]
    if with_type:
        columns.append(sa.Column("iceberg_type", sa.String(5), nullable=True))
    tables = sa.Table("iceberg_tables", metadata, *columns)
    properties = sa.Table(
        "iceberg_namespace_properties", metadata,
        sa.Column("catalog_name", sa.String(255), primary_key=True, nullable=False),
        sa.Column("namespace", sa.String(255), primary_key=True, nullable=False),
        sa.Column("property_key", sa.String(255), primary_key=True, nullable=False),
        sa.Column("property_value", sa.String(1000), nullable=True))
    return tables, properties


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Several processes commit to one SQLite file: wait for locks instead of failing, and let
    readers run beside the writer (WAL)."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_MS}")
        # Another connection may hold the lock; the mode is persistent, so it is set anyway.
        with contextlib.suppress(Exception):
            cursor.execute("PRAGMA journal_mode = WAL")
    finally:
        cursor.close()


def _like_prefix(namespace: str) -> str:
    escaped = namespace.replace("!", "!!").replace("_", "!_").replace("%", "!%")
    return escaped + ".%"


def database_uri(properties: Mapping[str, str]) -> str:
    """The catalog database's URL: ``uri``, else a SQLite file in a local ``warehouse``."""
    uri = properties.get(URI)
    if uri:
        return uri
    warehouse = warehouse_location(properties) or ""
    if warehouse.startswith("file:"):
        warehouse = urlsplit(warehouse).path
    if not warehouse or "://" in warehouse:
        raise ValidationError("The SQL catalog needs a 'uri' property (or a local "
                              "'warehouse' to keep a SQLite file in)")
    return f"sqlite:///{warehouse}/catalog.db"


def sqlite_file(uri: str) -> str | None:
    """The database file of a SQLite URL (None for another database or an in-memory one).

    >>> sqlite_file("sqlite:////tmp/wh/catalog.db"), sqlite_file("sqlite://")
    ('/tmp/wh/catalog.db', None)
    """
    url = sa.engine.make_url(uri)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return url.database


class SqlCatalog(MetastoreCatalog):
    """A catalog in a SQL database (properties: ``uri``, default
    ``sqlite:///<warehouse>/catalog.db``; ``warehouse``, the root of default table
    locations)."""

    def __init__(self, name: str, properties: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None) -> None:
        super().__init__(name, properties, file_io)
        self._engine = _create_engine(database_uri(self._properties))
        sa.event.listen(self._engine, "handle_error", self._unavailable)
        self._tables, self._props = _define(sa.MetaData(), with_type=True)
        self._has_type = self._create_tables()
        if not self._has_type:  # a catalog created before views: no iceberg_type column
            self._tables, self._props = _define(sa.MetaData(), with_type=False)

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SqlCatalog({self.name!r}, uri={url!r})"

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    def _unavailable(self, context: sa.engine.ExceptionContext) -> None:
        """Turn "cannot connect" and "connection lost" into :class:`CatalogUnavailable`
        (SQLAlchemy's ``handle_error`` event; the URL is never shown: it may hold a
        password). Other database errors, and failed pool pings, pass unchanged."""
        if context.is_pre_ping or not (context.is_disconnect or context.connection is None):
            return
        original = context.original_exception
        reason = (str(original).strip().splitlines() or [type(original).__name__])[0]
        where = sqlite_file(self._engine.url.render_as_string())
        target = f"its database {where}" if where else "its database"
        raise CatalogUnavailable(
            f"Catalog {self.name!r} is unavailable: cannot "
            f"{'use' if context.is_disconnect else 'open'} {target} ({reason})")

    def _create_tables(self) -> bool:
        """Create the two tables if missing (racing processes may both try); return whether
        ``iceberg_tables`` has the ``iceberg_type`` column."""
        for attempt in range(5):
            try:
                self._tables.metadata.create_all(self._engine, checkfirst=True)
                break
            except (OperationalError, IntegrityError, sa.exc.ProgrammingError):
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
        columns = sa.inspect(self._engine).get_columns("iceberg_tables")
        return any(c["name"] == "iceberg_type" for c in columns)

    # ------------------------------------------------------------------ helpers

    def _table_key(self, identifier: Identifier) -> list[sa.ColumnElement[bool]]:
        t = self._tables.c
        return [t.catalog_name == self.name, t.table_namespace == ".".join(identifier[:-1]),
                t.table_name == identifier[-1]]

    def _only_tables(self) -> list[sa.ColumnElement[bool]]:
        if not self._has_type:
            return []
        t = self._tables.c
        return [sa.or_(t.iceberg_type == TABLE_TYPE, t.iceberg_type.is_(None))]

    def _namespace_strings(self, under: Identifier) -> set[str]:
        """Every stored namespace string equal to or below ``under`` (all when empty)."""
        t, p = self._tables.c, self._props.c
        tq = sa.select(t.table_namespace).where(t.catalog_name == self.name)
        pq = sa.select(p.namespace).where(p.catalog_name == self.name)
        if under:
            ns = ".".join(under)
            tq = tq.where(sa.or_(t.table_namespace == ns,
                                 t.table_namespace.like(_like_prefix(ns), escape="!")))
            pq = pq.where(sa.or_(p.namespace == ns,
                                 p.namespace.like(_like_prefix(ns), escape="!")))
        with self._engine.connect() as conn:
            return set(conn.execute(sa.union(tq, pq)).scalars())

    # ------------------------------------------------------------------ namespaces

    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        return bool(self._namespace_strings(namespace_identifier(namespace)))

    def create_namespace(self, namespace: NamespaceLike,
                         properties: Mapping[str, str] | None = None) -> None:
        ns = namespace_identifier(namespace)
        props = dict(properties or {})
        plan_properties_update({}, (), props)
        if EXISTS in props:
            raise ValidationError(f"Namespace property {EXISTS!r} is reserved")
        if self.namespace_exists(ns):
            raise AlreadyExists(f"Namespace already exists: {show(ns)}")
        rows = [{"catalog_name": self.name, "namespace": ".".join(ns), "property_key": k,
                 "property_value": v} for k, v in {**props, EXISTS: "true"}.items()]
        try:
            with self._engine.begin() as conn:
                conn.execute(sa.insert(self._props), rows)
        except IntegrityError:
            raise AlreadyExists(f"Namespace already exists: {show(ns)}") from None

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Identifier]:
        """The namespaces one level below ``parent`` (top-level ones by default)."""
        base = optional_namespace(parent)
        found = self._namespace_strings(base)
        if base and not found:
            raise NoSuchNamespace(f"Namespace does not exist: {show(base)}")
        children = {tuple(s.split("."))[:len(base) + 1] for s in found}
        return sorted(c for c in children if len(c) == len(base) + 1 and c[:len(base)] == base)

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        ns = namespace_identifier(namespace)
        self._require_namespace(ns)
        p = self._props.c
        query = sa.select(p.property_key, p.property_value).where(
            p.catalog_name == self.name, p.namespace == ".".join(ns))
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return {k: v or "" for k, v in rows if k != EXISTS}

    def update_namespace_properties(self, namespace: NamespaceLike,
                                    removals: Iterable[str] = (),
                                    updates: Mapping[str, str] | None = None
                                    ) -> PropertiesUpdate:
        ns = namespace_identifier(namespace)
        updates = dict(updates or {})
        removals = tuple(removals)
        if EXISTS in updates or EXISTS in removals:
            raise ValidationError(f"Namespace property {EXISTS!r} is reserved")
        summary = plan_properties_update(self.load_namespace_properties(ns), removals, updates)
        p = self._props.c
        ns_str = ".".join(ns)
        touched = {*removals, *updates, EXISTS}
        rows = [{"catalog_name": self.name, "namespace": ns_str, "property_key": k,
                 "property_value": v} for k, v in {**updates, EXISTS: "true"}.items()]
        with self._engine.begin() as conn:  # one transaction: delete, then insert
            conn.execute(sa.delete(self._props).where(
                p.catalog_name == self.name, p.namespace == ns_str, p.property_key.in_(touched)))
            conn.execute(sa.insert(self._props), rows)
        return summary

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        """Drop an empty namespace: one without tables and without child namespaces."""
        ns = namespace_identifier(namespace)
        ns_str = ".".join(ns)
        found = self._namespace_strings(ns)
        if not found:
            raise NoSuchNamespace(f"Namespace does not exist: {show(ns)}")
        t = self._tables.c
        with self._engine.connect() as conn:
            has_tables = conn.execute(sa.select(sa.func.count()).where(
                t.catalog_name == self.name, t.table_namespace == ns_str)).scalar_one()
        if has_tables or found - {ns_str}:
            raise ValidationError(f"Namespace {show(ns)} is not empty: drop its tables and "
                                  "child namespaces first")
        p = self._props.c
        with self._engine.begin() as conn:
            conn.execute(sa.delete(self._props).where(p.catalog_name == self.name,
                                                      p.namespace == ns_str))

    # ------------------------------------------------------------------ tables

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        ns = namespace_identifier(namespace)
        self._require_namespace(ns)
        t = self._tables.c
        query = sa.select(t.table_name).where(
            t.catalog_name == self.name, t.table_namespace == ".".join(ns), *self._only_tables())
        with self._engine.connect() as conn:
            return sorted((*ns, name) for name in conn.execute(query).scalars())

    def rename_table(self, source: IdentifierLike, destination: IdentifierLike) -> Table:
        """Rename a table; its files stay where they are (the location is in the metadata)."""
        src, dst = table_identifier(source), table_identifier(destination)
        self._require_namespace(dst[:-1])
        if self.table_exists(dst):
            raise AlreadyExists(f"Table already exists: {show(dst)}")
        stmt = sa.update(self._tables).where(*self._table_key(src), *self._only_tables()).values(
            table_namespace=".".join(dst[:-1]), table_name=dst[-1])
        try:
            with self._engine.begin() as conn:
                renamed = conn.execute(stmt).rowcount
        except IntegrityError:
            raise AlreadyExists(f"Table already exists: {show(dst)}") from None
        if not renamed:
            raise NoSuchTable(f"Table does not exist: {show(src)}")
        return self.load_table(dst)

    # ------------------------------------------------------------------ pointer store

    def _read_pointer(self, identifier: Identifier) -> str:
        t = self._tables.c
        query = sa.select(t.metadata_location).where(*self._table_key(identifier),
                                                     *self._only_tables())
        with self._engine.connect() as conn:
            location = conn.execute(query).scalar_one_or_none()
        if not location:
            raise NoSuchTable(f"Table does not exist: {show(identifier)}")
        return str(location)

    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        row: dict[str, Any] = {
            "catalog_name": self.name, "table_namespace": ".".join(identifier[:-1]),
            "table_name": identifier[-1], "metadata_location": metadata_location,
            "previous_metadata_location": None}
        if self._has_type:
            row["iceberg_type"] = TABLE_TYPE
        try:
            with self._engine.begin() as conn:
                conn.execute(sa.insert(self._tables).values(**row))
        except IntegrityError:
            raise AlreadyExists(f"Table already exists: {show(identifier)}") from None

    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> bool:
        t = self._tables.c
        stmt = sa.update(self._tables).where(
            *self._table_key(identifier), t.metadata_location == expected).values(
            metadata_location=new, previous_metadata_location=expected)
        with self._engine.begin() as conn:
            return bool(conn.execute(stmt).rowcount == 1)

    def _delete_pointer(self, identifier: Identifier, expected: str | None) -> bool:
        t = self._tables.c
        conditions = [*self._table_key(identifier), *self._only_tables()]
        if expected is not None:
            conditions.append(t.metadata_location == expected)
        with self._engine.begin() as conn:
            return bool(conn.execute(sa.delete(self._tables).where(*conditions)).rowcount)

    def _commit_lock(self, identifier: Identifier,
                     timeout_s: float) -> AbstractContextManager[bool]:
        """PostgreSQL: a transaction-level advisory lock keyed by the table (released by the
        server when the holder's connection ends). SQLite: an ``flock`` on a lock file per table
        in ``<database>-locks/`` beside the database (SQLite needs all its writers on one
        machine anyway). Other databases: none."""
        key = lock_key(self.name, *identifier)
        if self._engine.dialect.name == "postgresql":
            return self._advisory_lock(int.from_bytes(key[:8], "big", signed=True), timeout_s)
        database = sqlite_file(self._engine.url.render_as_string())
        if database is None:
            return contextlib.nullcontext(False)
        return flock(f"{database}-locks/{key.hex()[:32]}.lock", timeout_s)

    @contextlib.contextmanager
    def _advisory_lock(self, key: int, timeout_s: float) -> Iterator[bool]:
        with self._engine.connect() as conn:
            try:
                if timeout_s > 0:
                    conn.execute(sa.text("SELECT set_config('lock_timeout', :t, true)"),
                                 {"t": f"{max(1, round(timeout_s * 1000))}ms"})
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
                    held = True
                else:
                    held = bool(conn.execute(sa.text("SELECT pg_try_advisory_xact_lock(:k)"),
                                             {"k": key}).scalar())
            except OperationalError as e:
                if getattr(e.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                    raise
                held = False
            if not held:
                log.warning("The commit lock was not free within %.1f s: committing without "
                            "it", timeout_s)
                conn.rollback()
            try:
                yield held
            finally:
                conn.rollback()  # ends the transaction: releases the lock

    def _known_failure(self, error: Exception) -> bool:
        """SQLite's "database is locked"/"busy": the statement did not run (or its
        transaction was not committed), so nothing changed."""
        if not isinstance(error, OperationalError) or self._engine.dialect.name != "sqlite":
            return False
        text = str(error.orig).lower()
        return "database is locked" in text or "database is busy" in text


def _create_engine(uri: str) -> sa.Engine:
    """An engine for ``uri``; parse errors never echo the URI (it may hold a password)."""
    try:
        url = sa.engine.make_url(uri)
        if url.get_backend_name() != "sqlite":
            return sa.create_engine(url, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError, ValueError) as e:
        raise ValidationError(
            f"Invalid SQL catalog uri ({type(e).__name__}; the uri is not shown as it may "
            "hold credentials)") from None
    database = url.database
    if database and database != ":memory:" and not database.startswith("file:"):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)
        except OSError as e:
            raise CatalogUnavailable(f"Cannot open the SQLite catalog database {database}: "
                                     f"cannot create its folder ({e.strerror})") from None
    engine = sa.create_engine(url, connect_args={"timeout": _SQLITE_BUSY_MS / 1000})
    sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine
