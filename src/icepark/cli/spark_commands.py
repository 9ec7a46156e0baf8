"""Spark-powered commands: ``ingest``, ``query``, ``count``, ``delete`` and ``update`` (and the
schema inference of ``create --from-file``). ``query`` and ``count`` start Spark only for large
reads (:mod:`icepark.cli.local_read`).

Everything that can be checked without Spark (the table, the filter, the columns, the input
paths) is checked first, so bad input fails in a moment with a one-line error. Only then is a
local Spark session started (``--master`` to use another), with the JVM's own console output
sent to the null device unless ``--verbose`` (see :mod:`icepark.cli.spark_session`). While
Spark works, a progress bar is drawn on stderr when it is a terminal
(:mod:`icepark.cli.progress`).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from icepark.catalog.identifier import show, table_identifier
from icepark.cli.arguments import parse_timestamp_ms, partition_spec
from icepark.cli.catalog_commands import ensure_namespace
from icepark.cli.catalog_options import open_catalog
from icepark.cli.data_inputs import FORMATS, resolve_inputs
from icepark.cli.local_read import (
    LocalPlan,
    add_read_options,
    local_max,
    plan_count,
    plan_rows,
    read_count,
)
from icepark.cli.progress import progress_bar, size_text
from icepark.cli.render import Output, count
from icepark.cli.spark_session import add_spark_options, read_inputs, spark_session
from icepark.cli.table_commands import load, spec_text
from icepark.errors import NoSuchTable, ValidationError
from icepark.expressions import bind, parse
from icepark.spark.progress import ProgressCallback, track
from icepark.spec.schema import Schema
from icepark.table.scan.read import DataScan
from icepark.table.table import Table


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the ``icepark`` parser."""
    ingest_cmd = commands.add_parser(
        "ingest", parents=parents, help="load CSV, JSON or Parquet files into a table (Spark)",
        description="Write CSV (with a header row), JSON lines or Parquet files or folders "
                    "into a table in one snapshot. A missing table is created from the data's "
                    "columns (and its namespace too).")
    ingest_cmd.add_argument("table", help="namespace.table")
    ingest_cmd.add_argument("inputs", nargs="+", metavar="PATH", help="files or folders")
    ingest_cmd.add_argument("--format", choices=FORMATS,
                            help="input format (default: from the file extensions)")
    ingest_cmd.add_argument("--mode", choices=("append", "overwrite", "dynamic"),
                            default="append",
                            help="append rows, overwrite the table, or replace the partitions "
                                 "present in the data (default: append)")
    ingest_cmd.add_argument("--partition-by", metavar="SPEC",
                            help='partitioning of a new table, e.g. "day(ts),bucket(16,id),kind"')
    ingest_cmd.add_argument("--merge-schema", action="store_true",
                            help="add columns the table does not have yet")
    add_spark_options(ingest_cmd)
    ingest_cmd.set_defaults(handler=ingest)

    query_cmd = commands.add_parser(
        "query", parents=parents, help="show a table's rows (Spark for large reads)",
        description="Show rows of a table. Small reads use the Arrow reader, without Spark; "
                    "reads of more than --local-max of files, or with --spark, run on Spark. "
                    "The rows are the same either way; which rows a --limit shows is not "
                    "defined (as with SQL's LIMIT without ORDER BY).")
    _add_read_arguments(query_cmd, columns=True)
    size = query_cmd.add_mutually_exclusive_group()
    size.add_argument("--limit", type=int, default=100, metavar="N",
                      help="show at most N rows (default: 100)")
    size.add_argument("--all", action="store_true", help="show every row")
    query_cmd.set_defaults(handler=query)

    count_cmd = commands.add_parser(
        "count", parents=parents, help="count a table's rows (Spark for large reads)",
        description="Count the rows of a table (matching --where). Files whose rows all "
                    "match and that have no delete files are counted from metadata; the "
                    "others are read as query reads them.")
    _add_read_arguments(count_cmd)
    count_cmd.set_defaults(handler=count_rows)

    delete_cmd = commands.add_parser("delete", parents=parents,
                                     help="delete the rows matching a filter (Spark)")
    delete_cmd.add_argument("table", help="namespace.table")
    delete_cmd.add_argument("--where", metavar="FILTER", required=True)
    add_spark_options(delete_cmd)
    delete_cmd.set_defaults(handler=delete)

    update_cmd = commands.add_parser(
        "update", parents=parents, help="set columns of the rows matching a filter (Spark)",
        description="UPDATE table SET col = expr, ... WHERE filter, in one snapshot. Each "
                    "--set gives a column and a Spark SQL expression over the row's columns; "
                    "--where is a filter as query takes (every row without it). Copy-on-write "
                    "or merge-on-read as the table property write.update.mode says.")
    update_cmd.add_argument("table", help="namespace.table")
    update_cmd.add_argument("--set", metavar="COL=EXPR", action="append", required=True,
                            dest="assignments", help="e.g. --set \"x = x + 1\" (repeatable)")
    update_cmd.add_argument("--where", metavar="FILTER")
    add_spark_options(update_cmd)
    update_cmd.set_defaults(handler=update)


def _add_read_arguments(parser: argparse.ArgumentParser, *, columns: bool = False) -> None:
    parser.add_argument("table", help="namespace.table")
    parser.add_argument("--where", metavar="FILTER", help="e.g. \"kind = 'click' AND id > 5\"")
    if columns:
        parser.add_argument("--columns", metavar="A,B", help="columns to show (default: all)")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--snapshot", type=int, metavar="ID", help="read this snapshot")
    when.add_argument("--as-of", metavar="TIME",
                      help="read the snapshot current at this time (ISO 8601 or epoch ms)")
    when.add_argument("--ref", metavar="NAME", help="read this branch or tag")
    add_read_options(parser)
    add_spark_options(parser)


def _bar(out: Output, label: str) -> ProgressCallback | None:
    """The progress bar of Spark work on a terminal (None: no progress is shown)."""
    return progress_bar(out.err, label, shown=out.shows_progress)


def _seconds(start: float) -> str:
    return f"{time.monotonic() - start:.1f} s"


# ----------------------------------------------------------------------------- commands

def _same_partitioning(table: Table, text: str) -> None:
    wanted = partition_spec(text, table.schema())
    have = [(f.source_id, f.transform) for f in table.spec().fields]
    if wanted is None or [(f.source_id, f.transform) for f in wanted.fields] != have:
        raise ValidationError(
            f"Table {table.name} exists partitioned by "
            f"{spec_text(table.spec(), table.schema())}; --partition-by "
            f"{text!r} applies only when ingest creates the table")


def ingest(args: argparse.Namespace, out: Output) -> int:
    catalog = open_catalog(args, create=True)
    ident = table_identifier(args.table)
    table: Table | None
    try:
        table = catalog.load_table(ident)
    except NoSuchTable:
        table = None
    if table is not None and args.partition_by is not None:
        _same_partitioning(table, args.partition_by)
    inputs = resolve_inputs(args.inputs, args.format)
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.schema import to_iceberg  # noqa: PLC0415 - imports pyspark
        from icepark.spark.writer.write import write  # noqa: PLC0415

        out.progress(f"reading {inputs.describe()}...")
        with track(spark, _bar(out, "reading")):
            df = read_inputs(spark, inputs,  # CSV and JSON: Spark reads them for their types
                             None if table is None else table.schema())
        created = table is None
        if table is None:
            schema = to_iceberg(df.schema, fresh_ids=True)
            spec = partition_spec(args.partition_by, schema)
            ensure_namespace(catalog, ident[:-1], out)
            table = catalog.create_table(ident, schema, partition_spec=spec)
            out.progress(f"created table {table.name} ({count(len(schema.fields), 'column')}, "
                         f"partitioned by {spec_text(table.spec(), table.schema())})")
        try:
            table = write(df, table, mode=args.mode, merge_schema=args.merge_schema,
                          progress=_bar(out, "writing"))
        except BaseException:
            if created:
                with contextlib.suppress(Exception):
                    catalog.drop_table(ident, purge=True)
            raise
    snapshot = table.current_snapshot()
    summary = dict(snapshot.summary.properties) if snapshot and snapshot.summary else {}
    files, rows = int(summary.get("added-data-files", 0)), int(summary.get("added-records", 0))
    out.progress(f"wrote {count(files, 'file')}, {count(rows, 'row')} in {_seconds(start)}")
    out.document({"table": table.name, "created": created, "mode": args.mode,
                  "snapshot_id": snapshot.snapshot_id if snapshot else None,
                  "added_data_files": files, "added_records": rows,
                  "total_records": int(summary.get("total-records", 0))},
                 f"{table.name}: snapshot {snapshot.snapshot_id if snapshot else 'none'}, "
                 f"{count(int(summary.get('total-records', 0)), 'row')} in total")
    return 0


def _checked_filter(table: Table, where: str, schema: Schema | None = None) -> None:
    """Parse ``where`` and bind it to the table's schema: unknown columns and malformed text
    fail here, before Spark starts."""
    bind(parse(where), schema or table.schema())


def _read_scan(args: argparse.Namespace, table: Table, columns: list[str] | None = None,
               limit: int | None = None) -> DataScan:
    """The scan ``query`` and ``count`` read, checked: unknown columns, snapshots and times
    and malformed filters fail now, before anything is read."""
    as_of = parse_timestamp_ms(args.as_of, "--as-of") if args.as_of else None
    scan = table.scan(selected_fields=tuple(columns) if columns else ("*",),
                      snapshot_id=args.snapshot, as_of_timestamp=as_of, ref=args.ref,
                      limit=limit)
    scan.projection()
    where = args.where if args.where and args.where.strip() else None
    if where is None:
        return scan
    _checked_filter(table, where, scan.schema())
    return scan.filter(where)


def _local_plan(args: argparse.Namespace, out: Output, scan: DataScan,
                plan: Callable[[DataScan, int], LocalPlan]) -> LocalPlan | None:
    """The plan of a read without Spark, or None when Spark reads (saying why)."""
    max_bytes = local_max(args)
    if max_bytes is None:
        return None
    planned = plan(scan, max_bytes)
    if planned.small:
        return planned
    out.progress(f"reading with Spark: the planned files weigh more than "
                 f"{size_text(max_bytes)} (--local-max)")
    return None


def _spark_frame(spark: Any, table: Table, scan: DataScan) -> Any:
    """The rows of ``scan`` as a Spark DataFrame."""
    from icepark.spark.reader.read import read  # noqa: PLC0415 - imports pyspark

    columns = None if "*" in scan.selected_fields else list(scan.selected_fields)
    return read(spark, table, scan.row_filter, columns, snapshot_id=scan.snapshot_id,
                as_of_timestamp=scan.as_of_timestamp, ref=scan.ref)


def query(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    columns = ([c.strip() for c in args.columns.split(",") if c.strip()]
               if args.columns else None)
    if not args.all and args.limit < 0:
        raise ValidationError(f"--limit must be 0 or more, not {args.limit}")
    scan = _read_scan(args, table, columns, None if args.all else args.limit)
    start = time.monotonic()
    local = _local_plan(args, out, scan, plan_rows)
    if local is not None and local.tasks is not None:
        engine = "Arrow"
        rows = scan.reader().to_table(local.tasks)
        names: list[str] = list(rows.column_names)
        records: list[dict[str, Any]] = rows.to_pylist()
    else:
        engine = "Spark"
        with spark_session(args, out) as spark:
            out.progress(f"reading {table.name}...")
            df = _spark_frame(spark, table, scan)
            names = list(df.columns)
            if not args.all:
                df = df.limit(args.limit)
            with track(spark, _bar(out, "reading")):
                records = df.toArrow().to_pylist()
    if out.json_mode:
        out.json_lines(records)
        return 0
    out.rows(names, [[r[n] for n in names] for r in records], empty="(no rows)")
    shown = f"{count(len(records), 'row')} in {_seconds(start)}, read with {engine}"
    if not args.all and len(records) == args.limit:
        shown += f" (the first {args.limit}; --limit N or --all for more)"
    out.progress(shown)
    return 0


def count_rows(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    scan = _read_scan(args, table)
    start = time.monotonic()
    local = _local_plan(args, out, scan, plan_count)
    if local is not None and local.tasks is not None:
        engine = "Arrow" if local.tasks else "metadata"
        rows = read_count(scan, local)
    else:
        engine = "Spark"
        with spark_session(args, out) as spark:
            out.progress(f"counting the rows of {table.name}...")
            with track(spark, _bar(out, "counting")):
                rows = int(_spark_frame(spark, table, scan).count())
    snapshot = scan.snapshot()
    out.progress(f"counted with {engine} in {_seconds(start)}")
    out.document({"table": table.name,
                  "snapshot_id": snapshot.snapshot_id if snapshot else None,
                  "count": rows, "read_with": engine.lower()}, str(rows))
    return 0


def _assignments(table: Table, given: Sequence[str]) -> dict[str, str]:
    """``--set COL=EXPR`` arguments as column -> expression, the columns checked."""
    out: dict[str, str] = {}
    for text in given:
        column, sep, expression = text.partition("=")
        column, expression = column.strip(), expression.strip()
        if not sep or not column or not expression:
            raise ValidationError(f"--set {text!r}: write COL=EXPR, e.g. --set \"x = x + 1\"")
        table.schema().find_field(column)  # an unknown column fails now, before Spark
        if column in out:
            raise ValidationError(f"--set: column {column!r} is set twice")
        out[column] = expression
    return out


def update(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    where = args.where if args.where and args.where.strip() else None
    if where is not None:
        _checked_filter(table, where)
    assignments = _assignments(table, args.assignments)
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.rowlevel.update import update_rows  # noqa: PLC0415 - imports pyspark

        out.progress(f"updating rows of {show(table.identifier)}"
                     + (f" where {where}..." if where else "..."))
        result = update_rows(spark, table, assignments, where, progress=_bar(out, "updating"))
    out.progress(f"done in {_seconds(start)}")
    out.document({"table": table.name, "updated_rows": result.updated_rows,
                  "rewritten_files": result.rewritten_files,
                  "added_data_files": result.added_data_files,
                  "delete_files": result.added_delete_files,
                  "snapshot_id": result.snapshot_id},
                 f"updated {count(result.updated_rows, 'row')} of {table.name}"
                 + (f" (snapshot {result.snapshot_id})" if result.snapshot_id else
                    " (nothing matched; no new snapshot)"))
    return 0


def delete(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    _checked_filter(table, args.where)
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.rowlevel.delete import delete_rows  # noqa: PLC0415 - imports pyspark

        out.progress(f"deleting rows of {show(table.identifier)} where {args.where}...")
        result = delete_rows(spark, table, args.where, progress=_bar(out, "deleting"))
    out.progress(f"done in {_seconds(start)}")
    out.document({"table": table.name, "deleted_rows": result.deleted_rows,
                  "removed_files": result.removed_files,
                  "rewritten_files": result.rewritten_files,
                  "delete_files": result.delete_files, "snapshot_id": result.snapshot_id},
                 f"deleted {count(result.deleted_rows, 'row')} from {table.name}"
                 + (f" (snapshot {result.snapshot_id})" if result.snapshot_id else
                    " (nothing matched; no new snapshot)"))
    return 0
