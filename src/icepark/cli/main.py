"""The ``icepark`` command: parser assembly, error handling and exit codes.

Commands live in :mod:`~icepark.cli.catalog_commands` (namespaces, tables, create, drop,
rename), :mod:`~icepark.cli.table_commands` (describe, schema, history, snapshots, files,
properties, expire-snapshots), :mod:`~icepark.cli.spark_commands` (ingest, query, count,
delete, update) and :mod:`~icepark.cli.maintenance_commands` (rewrite-data-files,
rewrite-manifests, rewrite-deletes, remove-orphan-files, compute-stats);
Spark is imported only when a Spark command runs. Errors print one line on stderr
(``icepark: error: ...``) with the exit code of :data:`EXIT_CODES`; ``--verbose`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from icepark import __version__
from icepark.cli import (
    catalog_commands,
    import_commands,
    maintenance_commands,
    spark_commands,
    table_commands,
)
from icepark.cli.catalog_options import add_catalog_options, add_output_options
from icepark.cli.render import Output
from icepark.cli.table_commands import NoSuchProperty
from icepark.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitFailed,
    CommitStateUnknown,
    CorruptFile,
    IcebergError,
    NoSuchCatalog,
    NoSuchNamespace,
    NoSuchSnapshot,
    NoSuchTable,
    ValidationError,
)
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_dict

(EXIT_OK, EXIT_FAILURE, EXIT_INVALID, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNKNOWN,
 EXIT_UNAVAILABLE, EXIT_CORRUPT) = range(8)
EXIT_INTERRUPTED = 130

EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (NoSuchTable, EXIT_NOT_FOUND),
    (NoSuchSnapshot, EXIT_NOT_FOUND),  # also a ValidationError: must come first
    (NoSuchNamespace, EXIT_NOT_FOUND),
    (NoSuchCatalog, EXIT_NOT_FOUND),
    (NoSuchProperty, EXIT_NOT_FOUND),
    (FileNotFoundError, EXIT_NOT_FOUND),  # icepark's FileNotFound too
    (AlreadyExists, EXIT_CONFLICT),
    (CommitFailed, EXIT_CONFLICT),
    (CommitStateUnknown, EXIT_UNKNOWN),
    (CatalogUnavailable, EXIT_UNAVAILABLE),
    (CorruptFile, EXIT_CORRUPT),
    (ValidationError, EXIT_INVALID),  # also malformed filters and data that does not fit
)
"""The exit code of each error class (the first match wins); anything else exits 1."""

CLI_SPELLINGS: dict[str, str] = {
    "merge_schema=True": "--merge-schema",
    "upgrade_format_version()": "'icepark properties set TABLE format-version=N'",
    "location=": "--location",
    "check_duplicate_files=False": "--no-check-duplicate-files",
    "equal_schemes/equal_authorities": "--equal-scheme/--equal-authority",
}
"""The CLI's spelling of each Python API option an error's remedy names
(:class:`~icepark.errors.Remedy`): a message names what the user can type."""

EPILOG = """\
exit codes:
  0  success
  1  unexpected failure (I/O errors, unsupported Iceberg features, Spark errors such as an
     unreadable input file)
  2  usage error or invalid input (bad arguments, input files of an unknown format,
     malformed filter, data that does not fit the table)
  3  not found (catalog, table, namespace, snapshot, branch or tag, property, input file)
  4  conflict (already exists, concurrent commit); retrying may succeed
  5  commit state unknown: check the table before retrying
  6  catalog unavailable (its database cannot be reached or opened, its warehouse is not a
     readable directory); retrying once it is back may succeed
  7  corrupt file (a metadata, manifest, data or delete file that cannot be decoded; the
     message names it)

catalog: --catalog NAME (or $ICEPARK_CATALOG) reads [catalog.NAME] of $ICEPARK_CONFIG or
~/.icepark.toml and ICEPARK_CATALOG__NAME__KEY variables; --type/--uri/--warehouse/--property
override them. The default is SQLite in ./warehouse/catalog.db with tables under ./warehouse.
Global options may also follow the command: icepark tables db --json
"""


EXAMPLES: dict[str, str] = {
    "namespaces": "icepark namespaces create db --set owner=ana",
    "tables": "icepark tables db --json",
    "create": 'icepark create db.events --schema schema.json --partition-by "day(ts),kind"',
    "drop": "icepark drop db.events --purge",
    "rename": "icepark rename db.events prod.events",
    "describe": "icepark describe db.events",
    "schema": "icepark schema db.events --json",
    "history": "icepark history db.events",
    "snapshots": "icepark snapshots db.events --json",
    "files": "icepark files db.events --snapshot 123",
    "properties": "icepark properties set db.events owner=ana",
    "properties list": "icepark properties list db.events --json",
    "properties get": "icepark properties get db.events owner",
    "properties set": "icepark properties set db.events owner=ana write.format.default=parquet",
    "properties remove": "icepark properties remove db.events owner",
    "expire-snapshots": "icepark expire-snapshots db.events --older-than 7d --retain-last 5",
    "ingest": 'icepark ingest db.events data/ --partition-by "day(ts),kind" --mode append',
    "query": "icepark query db.events --where \"kind = 'click'\" --columns id,ts --limit 5",
    "count": "icepark count db.events --where \"kind = 'click'\" --as-of 2024-03-01T12:00:00Z",
    "delete": "icepark delete db.events --where \"kind = 'spam'\"",
    "update": "icepark update db.events --set \"kind = upper(kind)\" --where \"id < 10\"",
    "add-files": "icepark add-files db.events /data/events --partition-filter dt=2024-03-01",
    "migrate": "icepark migrate /data/events db.events --snapshot",
    "rewrite-data-files": "icepark rewrite-data-files db.events --strategy sort "
                          "--sort-order \"ts DESC\" --option min-input-files=2",
    "rewrite-manifests": "icepark rewrite-manifests db.events",
    "rewrite-deletes": "icepark rewrite-deletes db.events --option rewrite-all=true",
    "remove-orphan-files": "icepark remove-orphan-files db.events --dry-run",
    "compute-stats": "icepark compute-stats db.events --columns id,kind --partition-stats",
    "quickstart": "icepark quickstart --rows 100000",
    "metadata": "icepark metadata warehouse/db/events/metadata/00001-x.metadata.json",
}
"""One example per command, shown at the end of its ``--help``."""


def _add_examples(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Put the example of each (sub)command of ``parser`` under its help text."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                command = f"{path} {name}".strip()
                example = EXAMPLES.get(command)
                if example is not None:
                    sub.epilog = f"example:\n  {example}"
                    sub.formatter_class = argparse.RawDescriptionHelpFormatter
                _add_examples(sub, command)


def exit_code(error: BaseException) -> int:
    """The exit code for ``error`` (see :data:`EXIT_CODES`).

    >>> exit_code(NoSuchTable("x")), exit_code(ValidationError("x")), exit_code(OSError())
    (3, 2, 1)
    """
    for kind, code in EXIT_CODES:
        if isinstance(error, kind):
            return code
    return EXIT_FAILURE


def one_line(error: BaseException) -> str:
    """The error as one line: icepark's messages whole, others by type and first line (a
    Spark error's first line names the error; the rest is a JVM stack trace).

    A remedy names the CLI's flags (:data:`CLI_SPELLINGS`), not the Python API's options.

    >>> one_line(ValueError("bad\\n  at line 2")), one_line(ValidationError("a\\n  b"))
    ('ValueError: bad', 'a b')
    >>> from icepark.errors import Remedy
    >>> one_line(ValidationError("No column x", remedy=Remedy("use {}", "merge_schema=True")))
    'No column x; use --merge-schema'
    """
    if isinstance(error, IcebergError):
        text = error.explain(CLI_SPELLINGS).strip()
        return " ".join(line.strip() for line in text.splitlines()) or type(error).__name__
    text = str(error).strip()
    first = text.splitlines()[0].strip() if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icepark", description="Apache Iceberg tables on PySpark", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"icepark {__version__}")
    add_output_options(parser, suppress=False)
    add_catalog_options(parser, suppress=False)
    output = argparse.ArgumentParser(add_help=False)
    add_output_options(output, suppress=True)
    catalog = argparse.ArgumentParser(add_help=False)
    add_catalog_options(catalog, suppress=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    catalog_commands.register(commands, [output, catalog])
    table_commands.register(commands, [output, catalog])
    spark_commands.register(commands, [output, catalog])
    import_commands.register(commands, [output, catalog])
    maintenance_commands.register(commands, [output, catalog])

    quickstart = commands.add_parser(
        "quickstart", add_help=False, help="run the end-to-end quickstart pipeline (Spark)",
        description="see 'icepark quickstart --help'")
    quickstart.set_defaults(handler=_quickstart)
    show = commands.add_parser("metadata", parents=[output],
                               help="describe a table metadata JSON file")
    show.add_argument("path", type=Path)
    show.set_defaults(handler=_metadata)
    _add_examples(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "quickstart":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    out = Output(args.json, quiet=args.quiet)
    try:
        code: int = args.handler(args, out)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
    except BrokenPipeError:
        _silence_stdout()  # the reader (``| head``) has what it wanted: not an error
        return EXIT_OK
    except KeyboardInterrupt:
        print("icepark: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"icepark: error: {one_line(exc)}", file=sys.stderr)
        return exit_code(exc)
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _quickstart(args: argparse.Namespace, out: Output) -> int:
    from icepark.cli.quickstart import run as quickstart  # noqa: PLC0415 - keeps `icepark --help` fast

    summary = (quickstart.__doc__ or "").strip().split("\n\n")[0].replace("``", "")
    parser = argparse.ArgumentParser(
        prog="icepark quickstart", description=summary,
        epilog=f"example:\n  {EXAMPLES['quickstart']}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    quickstart.add_arguments(parser)
    return quickstart.run(parser.parse_args(args.extra, namespace=args))


def _metadata(args: argparse.Namespace, out: Output) -> int:
    md = table_metadata_from_json(args.path.read_bytes(), str(args.path))

    def text() -> str:
        current = md.current_snapshot()
        lines = [f"format version {md.format_version}, table {md.table_uuid}",
                 f"location {md.location}", f"schema {md.current_schema_id}:",
                 *(f"  {line}" for line in str(md.schema()).splitlines()),
                 f"partition spec {md.default_spec_id}: {md.spec()}",
                 f"sort order {md.default_sort_order_id}: {md.sort_order()}",
                 f"snapshots: {len(md.snapshots)}; current: "
                 f"{current.snapshot_id if current else 'none'}",
                 *(f"  {ref.ref_type} {name} -> {ref.snapshot_id}"
                   for name, ref in sorted(md.refs.items()))]
        return "\n".join(lines)

    out.document(table_metadata_to_dict(md), text)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
