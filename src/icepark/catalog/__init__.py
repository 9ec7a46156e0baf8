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

from icepark.catalog.base import BaseCatalog, Catalog, PropertiesUpdate
from icepark.catalog.config import catalog_properties
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.catalog.sql import SqlCatalog
from icepark.errors import ValidationError

TYPES: dict[str, type[BaseCatalog]] = {"sql": SqlCatalog, "filesystem": FilesystemCatalog}


def load_catalog(name: str = "default", **properties: str) -> BaseCatalog:
    """The catalog ``name``, configured from built-in defaults, the TOML config file,
    ``ICEPARK_CATALOG__<NAME>__<KEY>`` environment variables and ``properties`` (highest
    precedence); see :mod:`icepark.catalog.config`. ``type`` picks the implementation, ``uri``
    the SQL database, ``warehouse`` the root of table locations."""
    merged = catalog_properties(name, properties)
    kind = merged.get("type", "sql").strip().lower()
    implementation = TYPES.get(kind)
    if implementation is None:
        raise ValidationError(f"Unknown catalog type {kind!r}: use 'sql' or 'filesystem'")
    return implementation(name, merged)


__all__ = [
    "BaseCatalog",
    "Catalog",
    "FilesystemCatalog",
    "PropertiesUpdate",
    "SqlCatalog",
    "load_catalog",
]
