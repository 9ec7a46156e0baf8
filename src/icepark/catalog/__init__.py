"""Catalogs: namespaces, tables, and the atomic swap that commits a table version.

* :class:`~icepark.catalog.sql.SqlCatalog` (``type = "sql"``, the default): the Iceberg JDBC
  catalog's tables in SQLite or PostgreSQL, shared with pyiceberg and Java clients;
* :class:`~icepark.catalog.filesystem.FilesystemCatalog` (``type = "filesystem"``):
  path-based tables with ``v<N>.metadata.json`` files in a local warehouse.

>>> import tempfile
>>> catalog = load_catalog("demo", warehouse=tempfile.mkdtemp())
>>> type(catalog).__name__
'SqlCatalog'
>>> load_catalog("demo", type="hive")
Traceback (most recent call last):
...
icepark.errors.ValidationError: Unknown catalog type 'hive': use 'sql' or 'filesystem'
"""

from __future__ import annotations

import os

from icepark.catalog.base import BaseCatalog, Catalog, PropertiesUpdate
from icepark.catalog.config import catalog_properties
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.catalog.sql import SqlCatalog, database_uri, sqlite_file
from icepark.errors import NoSuchCatalog, ValidationError

TYPES: dict[str, type[BaseCatalog]] = {"sql": SqlCatalog, "filesystem": FilesystemCatalog}


def load_catalog(name: str = "default", **properties: str) -> BaseCatalog:
    """The catalog ``name``, configured from built-in defaults, the TOML config file,
    ``ICEPARK_CATALOG__<NAME>__<KEY>`` environment variables and ``properties`` (highest
    precedence); see :mod:`icepark.catalog.config`. ``type`` picks the implementation, ``uri``
    the SQL database, ``warehouse`` the root of table locations."""
    merged = catalog_properties(name, properties)
    return _implementation(merged)(name, merged)


def existing_catalog(name: str = "default", **properties: str) -> BaseCatalog:
    """The catalog :func:`load_catalog` opens, but only if it exists: a SQLite catalog whose
    database file is missing raises :class:`~icepark.errors.NoSuchCatalog` instead of being
    created (for commands that only read or change what is there)."""
    merged = catalog_properties(name, properties)
    implementation = _implementation(merged)
    if implementation is SqlCatalog:
        path = sqlite_file(database_uri(merged))
        if path is not None and not os.path.exists(path):
            raise NoSuchCatalog(f"No catalog {name!r} here: {path} does not exist (create a "
                                "table first, or name the catalog's uri or warehouse)")
    return implementation(name, merged)


def _implementation(merged: dict[str, str]) -> type[BaseCatalog]:
    kind = merged.get("type", "sql").strip().lower()
    implementation = TYPES.get(kind)
    if implementation is None:
        raise ValidationError(f"Unknown catalog type {kind!r}: use 'sql' or 'filesystem'")
    return implementation


__all__ = [
    "BaseCatalog",
    "Catalog",
    "FilesystemCatalog",
    "PropertiesUpdate",
    "SqlCatalog",
    "existing_catalog",
    "load_catalog",
]
