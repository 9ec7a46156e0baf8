"""Commands that bring existing Parquet files into Iceberg tables: ``add-files`` and
``migrate`` (``migrate --snapshot`` for a table beside the directory). None starts Spark:
the work is reading the files' footers and committing metadata.

``icepark add-files db.t PATH...`` adds files (or the ``*.parquet`` files under directories)
to an existing table where they are (:func:`icepark.table.imports.add_files.add_files`).
``icepark migrate PATH db.t`` makes the directory ``PATH`` the table ``db.t`` in place; with
``--snapshot`` it leaves ``PATH`` untouched and makes a table in the warehouse that references
its files, with ``gc.enabled=false`` (:mod:`icepark.catalog.imports`). ``migrate`` creates a
missing namespace, and removes it again if the migration fails. Each prints one line (files,
rows, snapshot), or a JSON document with ``--json``; everything is checked before anything is
committed, so an error is one line on stderr and changes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Sequence

from icepark.catalog.identifier import show, table_identifier
from icepark.catalog.imports import migrate_table, snapshot_table
from icepark.cli.arguments import key_values
from icepark.cli.catalog_options import open_catalog
from icepark.cli.render import Output, count
from icepark.cli.table_commands import load
from icepark.errors import FileNotFound, ValidationError
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.imports.add_files import ImportResult, add_files


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the ``icepark`` parser."""
    add = commands.add_parser(
        "add-files", parents=parents, help="add existing Parquet files to a table, in place",
        description="Add Parquet files (or the *.parquet files under folders, skipping names "
                    "that start with _ or .) to a table where they are, in one snapshot. "
                    "Columns map by the files' field IDs, else by the table's name mapping "
                    "(set from its schema if it has none); metrics come from the footers; "
                    "partition values from key=value folders, else from the data. Files "
                    "already in the table are refused.")
    add.add_argument("table", help="namespace.table")
    add.add_argument("paths", nargs="+", metavar="PATH", help="Parquet files or folders")
    add.add_argument("--partition-filter", action="append", default=[], metavar="KEY=VALUE",
                     help="add only the files in key=value folders (repeatable)")
    add.add_argument("--no-check-duplicate-files", dest="check_duplicate_files",
                     action="store_false",
                     help="add files even if the table already has them")
    add.add_argument("--branch", default=MAIN_BRANCH, help="commit to this branch")
    add.set_defaults(handler=add_files_command)

    migrate = commands.add_parser(
        "migrate", parents=parents, help="make a folder of Parquet files an Iceberg table",
        description="Make the folder PATH of Parquet files (Hive-style key=value partition "
                    "folders become identity partitions) the table, in place: its metadata "
                    "goes to PATH/metadata and the table owns the files. With --snapshot, "
                    "PATH is left as it is and the table, in the warehouse, references its "
                    "files and never deletes them (gc.enabled=false). A missing namespace is "
                    "created.")
    migrate.add_argument("path", metavar="PATH", help="folder of Parquet files")
    migrate.add_argument("table", help="namespace.table to create")
    migrate.add_argument("--snapshot", action="store_true",
                         help="leave PATH untouched: make a table beside it")
    migrate.add_argument("--location",
                         help="with --snapshot: the table's location (default: in the "
                              "warehouse)")
    migrate.add_argument("--set", dest="table_properties", action="append", default=[],
                         metavar="KEY=VALUE", help="a table property (repeatable)")
    migrate.add_argument("--format-version", type=int, choices=(1, 2), default=2)
    migrate.set_defaults(handler=migrate_command)


def _report(result: ImportResult, out: Output, headline: str, start: float,
            **extra: object) -> None:
    """One line (``<headline>: 3 files, 150 rows in 3 partitions (snapshot N)``), or a JSON
    document with ``extra`` keys; the time taken goes to stderr."""
    table = result.table
    files, rows = count(result.added_files, "file"), count(result.added_records, "row")
    where = (f" in {count(result.changed_partitions, 'partition')}" if table.spec().fields
             else "")
    out.progress(f"done in {time.monotonic() - start:.1f} s")
    out.document({"table": table.name, **extra, "snapshot_id": result.snapshot_id,
                  "added_files": result.added_files, "added_records": result.added_records,
                  "changed_partitions": result.changed_partitions},
                 f"{headline}: {files}, {rows}{where} (snapshot {result.snapshot_id})")


def add_files_command(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    start = time.monotonic()
    result = add_files(table, args.paths,
                       partition_filter=key_values(args.partition_filter, "--partition-filter"),
                       check_duplicate_files=args.check_duplicate_files, branch=args.branch)
    _report(result, out, f"added to {table.name}", start)
    return 0


def migrate_command(args: argparse.Namespace, out: Output) -> int:
    if args.location is not None and not args.snapshot:
        raise ValidationError("--location applies to --snapshot only: a migrated table's "
                              "location is PATH")
    if "://" not in args.path and not os.path.exists(args.path):
        raise FileNotFound(args.path)
    ident = table_identifier(args.table)
    properties = key_values(args.table_properties, "--set")
    catalog = open_catalog(args, create=True)
    namespace = ident[:-1]
    new_namespace = not catalog.namespace_exists(namespace)
    if new_namespace:
        catalog.create_namespace(namespace)
    start = time.monotonic()
    try:
        if args.snapshot:
            result = snapshot_table(catalog, args.path, ident, location=args.location,
                                    properties=properties, format_version=args.format_version)
        else:
            result = migrate_table(catalog, args.path, ident, properties=properties,
                                   format_version=args.format_version)
    except BaseException:
        if new_namespace:  # nothing half-made is left behind
            with contextlib.suppress(Exception):
                catalog.drop_namespace(namespace)
        raise
    if new_namespace:
        out.progress(f"created namespace {show(namespace)}")
    location = result.table.location
    headline = (f"created {result.table.name} at {location}, over {args.path} (left as it is)"
                if args.snapshot else f"migrated {args.path} to {result.table.name} in place")
    _report(result, out, headline, start, mode="snapshot" if args.snapshot else "migrate",
            location=location)
    return 0
