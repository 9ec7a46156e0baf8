"""The global options of the ``icepark`` command: which catalog, and how output looks.

The catalog is configured as :func:`icepark.catalog.load_catalog` does (built-in defaults, the
TOML file ``$ICEPARK_CONFIG`` or ``~/.icepark.toml``, ``ICEPARK_CATALOG__<NAME>__<KEY>``
environment variables), with these flags taking precedence: ``--catalog NAME`` (default
``$ICEPARK_CATALOG``, else ``default``), ``--type``, ``--uri``, ``--warehouse`` and repeated
``--property key=value``. Without any configuration the catalog is SQLite in
``./warehouse/catalog.db`` with tables under ``./warehouse``.

The options are accepted before the command (``icepark --json tables db``) and after it
(``icepark tables db --json``).
"""

from __future__ import annotations

import argparse
import os

from icepark.catalog import BaseCatalog, existing_catalog, load_catalog
from icepark.cli.arguments import key_values

CATALOG_ENV = "ICEPARK_CATALOG"


def _default(value: object, suppress: bool) -> object:
    return argparse.SUPPRESS if suppress else value


def add_output_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add ``--json``, ``--verbose`` and ``--quiet`` to ``parser``. With ``suppress`` (on
    subcommands) an option left out does not override the value given before the command."""
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", default=_default(False, suppress),
                        help="print one JSON document on stdout (JSON lines for query)")
    output.add_argument("-v", "--verbose", action="store_true", default=_default(False, suppress),
                        help="show tracebacks on errors and Spark's own log")
    output.add_argument("-q", "--quiet", action="store_true", default=_default(False, suppress),
                        help="no progress on stderr (status lines and progress bars)")


def add_catalog_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add the catalog flags to ``parser`` (``suppress`` as for :func:`add_output_options`)."""
    def default(value: object) -> object:
        return _default(value, suppress)

    catalog = parser.add_argument_group("catalog")
    catalog.add_argument("--catalog", metavar="NAME", default=default(None),
                         help=f"catalog name (default: ${CATALOG_ENV}, else 'default')")
    catalog.add_argument("--type", choices=("sql", "filesystem"), default=default(None),
                         help="catalog type (default: sql)")
    catalog.add_argument("--uri", default=default(None),
                         help="SQL catalog database URL (default: "
                              "sqlite:///<warehouse>/catalog.db)")
    catalog.add_argument("--warehouse", default=default(None),
                         help="root of table locations (default: ./warehouse)")
    catalog.add_argument("--property", dest="catalog_properties", action="append",
                         metavar="KEY=VALUE", default=default([]),
                         help="any other catalog property (repeatable)")


def catalog_name(args: argparse.Namespace) -> str:
    name: str | None = getattr(args, "catalog", None)
    return name or os.environ.get(CATALOG_ENV) or "default"


def open_catalog(args: argparse.Namespace, create: bool = False) -> BaseCatalog:
    """The catalog the global options name; a missing SQLite catalog is created only when
    ``create`` (commands that create tables or namespaces), and is
    :class:`~icepark.errors.NoSuchCatalog` otherwise."""
    properties = key_values(getattr(args, "catalog_properties", []) or [], "--property")
    for key in ("type", "uri", "warehouse"):
        value = getattr(args, key, None)
        if value is not None:
            properties[key] = str(value)
    opener = load_catalog if create else existing_catalog
    return opener(catalog_name(args), **properties)
