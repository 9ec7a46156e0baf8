"""Which table a Spark entry point means: a :class:`~icepark.table.table.Table`, or an
identifier resolved through the catalog the session was configured with.

``icepark.spark.configure(spark, catalog=...)`` names the session's catalog (a catalog object,
or a name that :func:`icepark.catalog.load_catalog` resolves with the given properties); a
session configured without one uses the default catalog (``load_catalog()``: the TOML file,
environment variables, or a SQLite catalog under ``./warehouse``). The catalog lives in this
process, with the session object: nothing of it is copied into the Spark configuration, where
its credentials would show.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from pyspark.sql import SparkSession

from icepark.catalog import Catalog, load_catalog
from icepark.catalog.identifier import IdentifierLike, show, table_identifier
from icepark.errors import NoSuchTable, ValidationError
from icepark.table.table import Table

TableLike = Table | IdentifierLike
"""A table, or its identifier in the session's catalog: ``"db.events"`` or ``("db", "events")``."""

_CATALOGS: weakref.WeakKeyDictionary[SparkSession, Catalog] = weakref.WeakKeyDictionary()


def use_catalog(spark: SparkSession, catalog: Catalog | str | None = None,
                properties: Mapping[str, str] | None = None) -> Catalog:
    """Make ``catalog`` (an object, or a name loaded with ``properties``) the one that
    identifiers given with ``spark`` resolve in; None: the default catalog."""
    if catalog is None or isinstance(catalog, str):
        resolved: Catalog = load_catalog(catalog or "default", **dict(properties or {}))
    elif properties:
        raise ValidationError("Give catalog properties with a catalog name, not with a catalog "
                              "object (it is configured already)")
    else:
        resolved = catalog
    _CATALOGS[spark] = resolved
    return resolved


def session_catalog(spark: SparkSession) -> Catalog:
    """The catalog configured for ``spark``; the default catalog if none was."""
    found = _CATALOGS.get(spark)
    return found if found is not None else use_catalog(spark)


def resolve(spark: SparkSession, table: TableLike) -> Table:
    """``table`` itself, or the table its identifier names in the session's catalog."""
    if isinstance(table, Table):
        return table
    if not isinstance(table, (str, tuple, list)):
        raise ValidationError(f"A table must be an icepark Table or an identifier such as "
                              f"'db.events', not {type(table).__name__}")
    catalog = session_catalog(spark)
    return load(catalog, table, f"the session's catalog is {catalog.name!r}",
                "ips.configure(spark, catalog={!r})")


def load(catalog: Catalog, identifier: IdentifierLike, reads: str, choose: str) -> Table:
    """The table ``identifier`` names in ``catalog``. As in Spark, an identifier may start
    with the catalog's name (``default.db.t``). When the table does not exist and the first
    part of a three-part identifier is no namespace of the catalog, the error says which
    catalog is read (``reads``) and how to choose another (``choose``, ``{}`` for its name),
    not only that the table does not exist."""
    ident = table_identifier(identifier)
    if len(ident) > 2 and ident[0] == catalog.name:
        ident = ident[1:]
    try:
        return catalog.load_table(ident)
    except NoSuchTable:
        if len(ident) > 2 and not catalog.namespace_exists(ident[:1]):
            raise NoSuchTable(
                f"Table {show(ident)} does not exist: {reads}, which has no namespace "
                f"{ident[0]!r}; if {ident[0]!r} is a catalog, use {choose.format(ident[0])} "
                f"and name the table {show(ident[1:])!r}") from None
        raise
