"""Catalog commands: ``namespaces``, ``tables``, ``create``, ``drop`` and ``rename``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from icepark.catalog import BaseCatalog
from icepark.catalog.identifier import namespace_identifier, show, table_identifier
from icepark.cli.arguments import key_values, partition_spec, sort_order
from icepark.cli.catalog_options import open_catalog
from icepark.cli.render import Output
from icepark.cli.spark_session import add_spark_options, infer_schema
from icepark.cli.table_commands import spec_text
from icepark.errors import AlreadyExists, FileNotFound, ValidationError
from icepark.spec.schema import Schema
from icepark.spec.serde import schema_from_json
from icepark.table.change.commit import Identifier

Handler = Callable[[argparse.Namespace, Output], int]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the ``icepark`` parser."""
    ns = commands.add_parser("namespaces", parents=parents, help="list, create or drop namespaces",
                             description="List namespaces (all, or those under --parent); "
                                         "'create NS' and 'drop NS' change them.")
    ns.add_argument("action", nargs="?", choices=("list", "create", "drop"), default="list")
    ns.add_argument("namespace", nargs="?", help="the namespace to create or drop (a.b)")
    ns.add_argument("--parent", help="list only the namespaces under this one")
    ns.add_argument("--set", dest="namespace_properties", action="append", default=[],
                    metavar="KEY=VALUE", help="a property of the namespace to create")
    ns.set_defaults(handler=namespaces)

    tables_cmd = commands.add_parser("tables", parents=parents, help="list tables",
                                     description="List the tables of a namespace, or of "
                                                 "every namespace.")
    tables_cmd.add_argument("namespace", nargs="?")
    tables_cmd.set_defaults(handler=tables)

    create_cmd = commands.add_parser(
        "create", parents=parents, help="create a table",
        description="Create a table from an Iceberg schema JSON (a file or inline text) or "
                    "from the columns of a CSV, JSON or Parquet data file (read with Spark). "
                    "Column IDs are assigned afresh. A missing namespace is created.")
    create_cmd.add_argument("table", help="namespace.table")
    source = create_cmd.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema", metavar="JSON", help="schema JSON, or a file holding it")
    source.add_argument("--from-file", metavar="DATA",
                        help="infer the schema from this data file or folder (starts Spark)")
    create_cmd.add_argument("--format", choices=("csv", "json", "parquet"),
                            help="format of --from-file (default: from the file extension)")
    create_cmd.add_argument("--partition-by", metavar="SPEC",
                            help='partition transforms, e.g. "day(ts),bucket(16,id),kind"')
    create_cmd.add_argument("--sort-by", metavar="COLUMNS", help='e.g. "ts desc, id"')
    create_cmd.add_argument("--set", dest="table_properties", action="append", default=[],
                            metavar="KEY=VALUE", help="a table property (repeatable)")
    create_cmd.add_argument("--location", help="table location (default: in the warehouse)")
    create_cmd.add_argument("--format-version", type=int, choices=(1, 2, 3), default=2)
    add_spark_options(create_cmd)
    create_cmd.set_defaults(handler=create)

    drop_cmd = commands.add_parser("drop", parents=parents, help="drop a table")
    drop_cmd.add_argument("table")
    drop_cmd.add_argument("--purge", action="store_true",
                          help="also delete the table's files inside its location")
    drop_cmd.set_defaults(handler=drop)

    rename_cmd = commands.add_parser("rename", parents=parents, help="rename a table")
    rename_cmd.add_argument("source")
    rename_cmd.add_argument("destination")
    rename_cmd.set_defaults(handler=rename)


def _walk(catalog: BaseCatalog, parent: Identifier) -> list[Identifier]:
    found: list[Identifier] = []
    for child in catalog.list_namespaces(parent):
        found.append(child)
        found.extend(_walk(catalog, child))
    return found


def namespaces(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args, create=args.action == "create")
    if args.action == "list":
        if args.namespace is not None:
            raise ValidationError("'namespaces' lists with --parent NS; to create or drop one "
                                  "write 'namespaces create NS' or 'namespaces drop NS'")
        parent = namespace_identifier(args.parent) if args.parent else ()
        if parent:
            catalog.load_namespace_properties(parent)  # NoSuchNamespace when it is missing
        found = _walk(catalog, parent)
        out.rows(["namespace"], [[show(n)] for n in found], empty="(no namespaces)")
        return 0
    if args.namespace is None:
        raise ValidationError(f"'namespaces {args.action}' needs a namespace name")
    name = namespace_identifier(args.namespace)
    if args.action == "create":
        catalog.create_namespace(name, key_values(args.namespace_properties, "--set"))
        out.document({"created": show(name)}, f"created namespace {show(name)}")
    else:
        catalog.drop_namespace(name)
        out.document({"dropped": show(name)}, f"dropped namespace {show(name)}")
    return 0


def tables(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args)
    spaces = [namespace_identifier(args.namespace)] if args.namespace else _walk(catalog, ())
    found = [ident for ns in spaces for ident in catalog.list_tables(ns)]
    out.rows(["table"], [[show(t)] for t in found], empty="(no tables)")
    return 0


def read_schema_json(text: str) -> Schema:
    """A schema from ``--schema``: inline JSON (starting with ``{``) or a file holding it."""
    stripped = text.strip()
    if stripped.startswith("{"):
        raw, where = stripped, "--schema"
    else:
        path = Path(text)
        if not path.is_file():
            raise FileNotFound(text)
        raw, where = path.read_text(encoding="utf-8"), str(path)
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValidationError(f"{where} is not valid JSON: {e}") from None
    return schema_from_json(document)


def ensure_namespace(catalog: BaseCatalog, namespace: Identifier, out: Output) -> None:
    """Create ``namespace`` if it does not exist yet (and say so)."""
    if not catalog.namespace_exists(namespace):
        catalog.create_namespace(namespace)
        out.progress(f"created namespace {show(namespace)}")


def create(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args, create=True)
    ident = table_identifier(args.table)
    if args.format and not args.from_file:
        raise ValidationError("--format applies to --from-file only")
    properties = key_values(args.table_properties, "--set")
    if catalog.table_exists(ident):
        raise AlreadyExists(f"Table already exists: {show(ident)}")
    schema = read_schema_json(args.schema) if args.schema else infer_schema(args, out)
    spec = partition_spec(args.partition_by, schema)
    order = sort_order(args.sort_by, schema)
    ensure_namespace(catalog, ident[:-1], out)
    table = catalog.create_table(ident, schema, partition_spec=spec, sort_order=order,
                                 location=args.location, properties=properties,
                                 format_version=args.format_version)
    out.document({"created": table.name, "metadata_location": table.metadata_location,
                  "columns": len(table.schema().fields)},
                 lambda: f"created table {table.name}\n{table.schema()}\n"
                         f"partition spec: {spec_text(table.spec(), table.schema())}")
    return 0


def drop(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args)
    ident = table_identifier(args.table)
    catalog.drop_table(ident, purge=args.purge)
    out.document({"dropped": show(ident), "purged": args.purge},
                 f"dropped table {show(ident)}{' and its files' if args.purge else ''}")
    return 0


def rename(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args)
    ident = table_identifier(args.source)
    table = catalog.rename_table(ident, table_identifier(args.destination))
    source = show(ident)
    out.document({"renamed": source, "to": table.name},
                 f"renamed table {source} to {table.name}")
    return 0
