"""Table metadata commands: ``describe``, ``schema``, ``history``, ``snapshots``, ``files``,
``properties get|set|remove`` and ``expire-snapshots``. None of them starts Spark."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Sequence
from typing import Any

from icepark.catalog.identifier import table_identifier
from icepark.cli.arguments import key_values, parse_before, positive_int
from icepark.cli.catalog_options import open_catalog
from icepark.cli.render import Output, count
from icepark.errors import IcebergError, ValidationError
from icepark.spec.metadata import FORMAT_VERSION_PROPERTY, parse_format_version
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.serde import (
    partition_spec_to_json,
    schema_to_json,
    snapshot_to_json,
    sort_order_to_json,
)
from icepark.spec.snapshots import Snapshot
from icepark.spec.sorting import SortOrder
from icepark.spec.transforms import Transform
from icepark.spec.values import to_json
from icepark.table.inspect import tables as inspect
from icepark.table.maintenance.expire import plan_expiry
from icepark.table.table import Table


class NoSuchProperty(IcebergError):  # noqa: N818 - reads as "no such property", like NoSuchTable
    """``properties get TABLE KEY`` for a key the table does not have."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the ``icepark`` parser."""
    def table_command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = commands.add_parser(name, parents=parents, help=help_text,
                                     description=help_text[0].upper() + help_text[1:] + ".")
        parser.add_argument("table", help="namespace.table")
        return parser

    table_command("describe", "show a table's schema with field IDs, partition spec, sort "
                              "order, properties and current snapshot").set_defaults(
        handler=describe)
    table_command("schema", "show a table's current schema with field IDs").set_defaults(
        handler=schema)
    table_command("history", "show when each snapshot became current").set_defaults(
        handler=history)
    table_command("snapshots", "list a table's snapshots").set_defaults(handler=snapshots)
    files_cmd = table_command("files", "list the live data and delete files of a snapshot")
    files_cmd.add_argument("--snapshot", type=int, metavar="ID",
                           help="snapshot ID (default: the current snapshot)")
    files_cmd.set_defaults(handler=files)

    props = commands.add_parser("properties", parents=parents, help="get, set or remove "
                                "table properties")
    actions = props.add_subparsers(dest="action", required=True,
                                   metavar="{list,get,set,remove}")
    listed = actions.add_parser("list", parents=parents, help="all properties")
    listed.add_argument("table")
    get = actions.add_parser("get", parents=parents, help="all properties, or one")
    get.add_argument("table")
    get.add_argument("key", nargs="?")
    put = actions.add_parser("set", parents=parents, help="set KEY=VALUE pairs")
    put.add_argument("table")
    put.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    remove = actions.add_parser("remove", parents=parents, help="remove keys")
    remove.add_argument("table")
    remove.add_argument("keys", nargs="+", metavar="KEY")
    props.set_defaults(handler=properties)

    expire = table_command("expire-snapshots", "expire old snapshots and delete the files "
                                               "only they reached")
    expire.add_argument("--older-than", metavar="TIME",
                        help="expire snapshots older than this time (ISO 8601 or epoch ms) or "
                             "age (7d, 12h, 30m); default: the table's "
                             "history.expire.max-snapshot-age-ms (5 days)")
    expire.add_argument("--retain-last", type=positive_int, metavar="N",
                        help="keep at least N snapshots of each branch")
    expire.add_argument("--snapshot-id", type=int, action="append", default=[], metavar="ID",
                        help="expire this snapshot (repeatable)")
    expire.add_argument("--keep-files", action="store_true",
                        help="only remove snapshots from the metadata; delete no files")
    expire.add_argument("--dry-run", action="store_true",
                        help="show what would expire, change nothing")
    expire.set_defaults(handler=expire_snapshots)


def load(args: argparse.Namespace) -> Table:
    """The table the command names (``NoSuchTable`` when it does not exist)."""
    return open_catalog(args).load_table(table_identifier(args.table))


def iso_ms(timestamp_ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time.

    >>> iso_ms(1709251200123)
    '2024-03-01T00:00:00.123Z'
    """
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _term(transform: Transform, sources: Sequence[int], schema: Schema) -> str:
    """``bucket[16](id)``; ``zorder(a, b) (unknown transform)`` for one icepark does not know
    (shown as written)."""
    columns = ", ".join(schema.find_column_name(i) or str(i) for i in sources)
    return f"{transform}({columns})" + (" (unknown transform)" if transform.is_unknown else "")


def spec_text(spec: PartitionSpec, schema: Schema) -> str:
    if not spec.fields:
        return "unpartitioned"
    return ", ".join(f"{f.field_id}: {f.name} = {_term(f.transform, f.sources, schema)}"
                     for f in spec.fields)


def order_text(order: SortOrder, schema: Schema) -> str:
    if not order.fields:
        return "unsorted"
    parts = []
    for f in order.fields:
        term = (schema.find_column_name(f.source_id) or str(f.source_id)
                if f.transform.is_identity else _term(f.transform, f.sources, schema))
        parts.append(f"{term} {f.direction.value} {f.null_order.value}")
    return ", ".join(parts)


def snapshot_line(snapshot: Snapshot) -> str:
    summary = dict(snapshot.summary.properties) if snapshot.summary else {}
    operation = snapshot.summary.operation.value if snapshot.summary else "unknown"
    records = summary.get("total-records")
    files_total = summary.get("total-data-files")
    totals = (f", {count(int(records), 'record')} in {count(int(files_total), 'data file')}"
              if records is not None and files_total is not None else "")
    return f"{snapshot.snapshot_id} ({operation} at {iso_ms(snapshot.timestamp_ms)}{totals})"


def describe(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    md = table.metadata
    current = table.current_snapshot()

    def text() -> str:
        lines = [f"table {table.name}: format v{md.format_version}, uuid {md.table_uuid}",
                 f"location: {md.location}", f"metadata: {table.metadata_location}",
                 f"schema {md.current_schema_id}:",
                 *(f"  {line}" for line in schema_text(table.schema()).splitlines()),
                 f"partition spec {md.default_spec_id}: {spec_text(table.spec(), table.schema())}",
                 f"sort order {md.default_sort_order_id}: "
                 f"{order_text(table.sort_order(), table.schema())}",
                 "properties:" if table.properties else "properties: (none)",
                 *(f"  {k} = {v}" for k, v in sorted(table.properties.items())),
                 f"current snapshot: {snapshot_line(current) if current else 'none'}",
                 f"snapshots: {len(md.snapshots)}"]
        if md.next_row_id is not None:
            lines.append(f"next row ID: {md.next_row_id}")
        if md.statistics or md.partition_statistics:
            lines.append(f"statistics files: {len(md.statistics)} table, "
                         f"{len(md.partition_statistics)} partition")
        return "\n".join(lines)

    out.document({
        "table": table.name, "format_version": md.format_version,
        "table_uuid": str(md.table_uuid), "location": md.location,
        "metadata_location": table.metadata_location,
        "schema": schema_to_json(table.schema()),
        "partition_spec": partition_spec_to_json(table.spec()),
        "sort_order": sort_order_to_json(table.sort_order()),
        "properties": dict(table.properties),
        "current_snapshot": (snapshot_to_json(current, md.format_version)
                             if current else None),
        "snapshot_count": len(md.snapshots),
        "next_row_id": md.next_row_id,
    }, text)
    return 0


def schema(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    out.document(schema_to_json(table.schema()), schema_text(table.schema()))
    return 0


def schema_text(schema: Schema) -> str:
    """The schema as people read it: a line per column with its ID, type and doc, marked when
    it is an identifier field, then the default values of every column that has them (as
    their Appendix D JSON form).

    >>> from icepark.spec.types import INT, LONG, NestedField
    >>> print(schema_text(Schema((NestedField(1, "id", LONG, True, "the key"),
    ...                           NestedField(2, "n", INT, False, None, 5, 7)), 0, (1,))))
    table {
      1: id: required long (the key) [identifier]
      2: n: optional int
    }
    defaults:
      2: n: initial default 5, write default 7
    """
    marked = set(schema.identifier_field_ids)
    lines = ["table {", *(f"  {f}{' [identifier]' if f.field_id in marked else ''}"
                          for f in schema.fields), "}"]
    defaults = []
    for field_id, f in sorted(index_by_id(schema).items()):
        shown = [f"{kind} default {json.dumps(to_json(f.field_type, value))}"
                 for kind, value in (("initial", f.initial_default), ("write", f.write_default))
                 if value is not None]
        if shown:
            defaults.append(f"  {field_id}: {schema.find_column_name(field_id)}: "
                            + ", ".join(shown))
    return "\n".join([*lines, *(["defaults:", *defaults] if defaults else [])])


def _arrow_rows(arrow_table: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = arrow_table.to_pylist()
    return rows


def history(args: argparse.Namespace, out: Output) -> int:
    rows = _arrow_rows(inspect.history(load(args)))
    columns = ["made_current_at", "snapshot_id", "parent_id", "is_current_ancestor"]
    out.rows(columns, [[r[c] for c in columns] for r in rows], empty="(no snapshots)")
    return 0


def snapshots(args: argparse.Namespace, out: Output) -> int:
    rows = _arrow_rows(inspect.snapshots(load(args)))
    if out.json_mode:
        out.document([{**r, "summary": dict(r["summary"] or [])} for r in rows], "")
        return 0
    columns = ["committed_at", "snapshot_id", "parent_id", "operation", "added_records",
               "total_records", "total_data_files"]
    table_rows = []
    for r in rows:
        summary = dict(r["summary"] or [])
        table_rows.append([r["committed_at"], r["snapshot_id"], r["parent_id"], r["operation"],
                           *(_int(summary.get(k)) for k in ("added-records", "total-records",
                                                             "total-data-files"))])
    out.rows(columns, table_rows, empty="(no snapshots)")
    return 0


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


_FILE_CONTENT = {0: "data", 1: "position deletes", 2: "equality deletes"}


def files(args: argparse.Namespace, out: Output) -> int:
    rows = _arrow_rows(inspect.metadata_table(load(args), "files", args.snapshot))
    if out.json_mode:
        out.document(rows, "")
        return 0
    columns = ["content", "file_path", "partition", "record_count", "file_size_in_bytes"]
    out.rows(columns, [[_FILE_CONTENT.get(r["content"], r["content"]), r["file_path"],
                        r.get("partition"), r["record_count"], r["file_size_in_bytes"]]
                       for r in rows], empty="(no files)")
    return 0


def properties(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    if args.action in ("list", "get"):
        if getattr(args, "key", None) is None:
            current = dict(sorted(table.properties.items()))
            out.rows(["key", "value"], [[k, v] for k, v in current.items()],
                     empty="(no properties)")
            return 0
        if args.key not in table.properties:
            raise NoSuchProperty(f"Table {table.name} has no property {args.key!r}")
        value = table.properties[args.key]
        out.document({args.key: value}, value)
        return 0
    if args.action == "set":
        updates = key_values(args.pairs, "property")
        version = updates.pop(FORMAT_VERSION_PROPERTY, None)
        with table.transaction() as transaction:  # as Spark's SET TBLPROPERTIES: one commit
            if version is not None:
                transaction.upgrade_format_version(_format_version(version))
            if updates:
                transaction.set_properties(updates)
        message = f"set {count(len(updates), 'property', 'properties')} on {table.name}"
        if version is not None:
            message += f"; format version {table.metadata.format_version}"
    else:
        missing = [k for k in args.keys if k not in table.properties]
        table.remove_properties(*args.keys)
        message = f"removed {', '.join(k for k in args.keys if k not in missing) or 'nothing'}"
        if missing:
            message += f" (not set: {', '.join(missing)})"
    out.document({"table": table.name, "properties": dict(table.properties)}, message)
    return 0


def _format_version(text: str) -> int:
    """``format-version=N`` of ``properties set``: upgrades the table, as the property does in
    Spark's ``ALTER TABLE ... SET TBLPROPERTIES`` with the reference implementation."""
    version = parse_format_version(text)
    if version is None:
        raise ValidationError(f"{FORMAT_VERSION_PROPERTY} must be 1, 2 or 3, not {text!r}")
    return version


def expire_snapshots(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    now_ms = int(time.time() * 1000)
    older_than = (parse_before(args.older_than, "--older-than", now_ms)
                  if args.older_than is not None else None)
    if args.dry_run:
        plan = plan_expiry(table.metadata, now_ms, older_than_ms=older_than,
                           retain_last=args.retain_last, snapshot_ids=args.snapshot_id)
        out.document({"dry_run": True, "expired_snapshot_ids": list(plan.expired_snapshot_ids),
                      "removed_refs": list(plan.removed_refs)},
                     f"would expire {count(len(plan.expired_snapshot_ids), 'snapshot')}"
                     + "".join(f"\n  {i}" for i in plan.expired_snapshot_ids))
        return 0
    result = table.expire_snapshots(older_than, args.retain_last, args.snapshot_id,
                                    clean_files=not args.keep_files)
    message = (f"expired {count(len(result.expired_snapshot_ids), 'snapshot')}, deleted "
               f"{count(len(result.deleted_files), 'file')} "
               f"({count(len(result.deleted_data_files), 'data file')})")
    if result.removed_refs:
        message += f"; removed refs {', '.join(result.removed_refs)}"
    if result.error:
        message += f"; files were kept: {result.error}"
    if result.failed:
        message += f"; {count(len(result.failed), 'file')} could not be deleted"
    out.document({"table": table.name, "expired_snapshot_ids": list(result.expired_snapshot_ids),
                  "removed_refs": list(result.removed_refs),
                  "deleted_data_files": list(result.deleted_data_files),
                  "deleted_files": len(result.deleted_files), "failed": list(result.failed),
                  "error": result.error, "snapshots_left": len(table.snapshots())}, message)
    return 0
