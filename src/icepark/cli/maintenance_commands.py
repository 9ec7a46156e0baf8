"""Maintenance commands, each a Spark job (:mod:`icepark.spark.maintenance`):
``rewrite-data-files``, ``rewrite-manifests``, ``rewrite-deletes``, ``remove-orphan-files`` and
``compute-stats``.

Everything that can be checked without Spark (the table, the options, the filter) is checked
first; then a local Spark session starts (``--master`` for another), a progress bar of the
Spark work is drawn on stderr when it is a terminal, and the result is printed as a line of
text, or as one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from icepark.catalog.identifier import show
from icepark.cli.arguments import key_values, parse_timestamp_ms
from icepark.cli.progress import progress_bar, size_text
from icepark.cli.render import Output, count
from icepark.cli.spark_session import add_spark_options, spark_session
from icepark.cli.table_commands import load
from icepark.errors import ValidationError
from icepark.spark.progress import ProgressCallback
from icepark.table.maintenance.compaction import RewriteOptions
from icepark.table.snapshot.rewrite_deletes import DeleteRewriteOptions

DAY_MS = 86_400_000


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the ``icepark`` parser."""
    compact = commands.add_parser(
        "rewrite-data-files", parents=parents,
        help="compact small files into target-size files (Spark)",
        description="Rewrite a table's data files into files of the target size, with their "
                    "deletes applied, in a replace snapshot: binpack as they are, sort by a "
                    "sort order, or Z-order by columns. --option takes the reference's "
                    "options, e.g. --option min-input-files=2 --option rewrite-all=true.")
    compact.add_argument("table", help="namespace.table")
    compact.add_argument("--strategy", choices=("binpack", "sort", "zorder"), default="binpack")
    compact.add_argument("--sort-order", metavar="ORDER",
                         help='with --strategy sort, e.g. "k DESC NULLS LAST, id" (default: '
                              "the table's sort order)")
    compact.add_argument("--zorder-by", metavar="A,B", help="with --strategy zorder")
    compact.add_argument("--where", metavar="FILTER", help="only files that may hold such rows")
    compact.add_argument("--branch", default="main")
    _option_argument(compact)
    add_spark_options(compact)
    compact.set_defaults(handler=rewrite_data_files)

    manifests = commands.add_parser(
        "rewrite-manifests", parents=parents, help="cluster manifests by partition (Spark)",
        description="Rewrite the current snapshot's manifests clustered by partition, at "
                    "commit.manifest.target-size-bytes, in a replace snapshot.")
    manifests.add_argument("table", help="namespace.table")
    manifests.add_argument("--spec-id", type=int, help="only the manifests of this spec")
    manifests.add_argument("--sort-by", metavar="A,B", help="partition fields to cluster by")
    add_spark_options(manifests)
    manifests.set_defaults(handler=rewrite_manifests)

    deletes = commands.add_parser(
        "rewrite-deletes", parents=parents,
        help="compact position deletes, or make deletion vectors of them (Spark)",
        description="Compact position delete files (v2) or replace them by deletion vectors "
                    "(v3), dropping deletes whose data files are gone, in a replace snapshot.")
    deletes.add_argument("table", help="namespace.table")
    deletes.add_argument("--where", metavar="FILTER", help="only partitions with such rows")
    _option_argument(deletes)
    add_spark_options(deletes)
    deletes.set_defaults(handler=rewrite_deletes)

    orphans = commands.add_parser(
        "remove-orphan-files", parents=parents,
        help="delete files in the table location that nothing references (Spark)",
        description="Delete the files under the table location that no snapshot, metadata "
                    "file or statistics file references and that are older than --older-than "
                    "(default: three days ago). --dry-run lists them only.")
    orphans.add_argument("table", help="namespace.table")
    orphans.add_argument("--older-than", metavar="TIME",
                         help="ISO 8601 time or epoch ms (default: three days ago; at least a "
                              "day ago unless --force)")
    orphans.add_argument("--force", action="store_true",
                         help="allow a cutoff within the last day (no write may be running)")
    orphans.add_argument("--location", help="a folder inside the table location")
    orphans.add_argument("--dry-run", action="store_true")
    orphans.add_argument("--equal-scheme", action="append", default=[], metavar="FROM=TO",
                         help="schemes that name the same files, e.g. s3a=s3 (repeatable)")
    orphans.add_argument("--equal-authority", action="append", default=[], metavar="FROM=TO",
                         help="authorities that name the same files (repeatable)")
    orphans.add_argument("--prefix-mismatch-mode", choices=("error", "ignore", "delete"),
                         default="error")
    add_spark_options(orphans)
    orphans.set_defaults(handler=remove_orphan_files)

    stats = commands.add_parser(
        "compute-stats", parents=parents, help="column NDV statistics (Spark)",
        description="Compute each column's number of distinct values as theta sketches in a "
                    "Puffin statistics file registered for the snapshot; --partition-stats "
                    "also writes the partition statistics file.")
    stats.add_argument("table", help="namespace.table")
    stats.add_argument("--columns", metavar="A,B", help="default: every primitive column")
    stats.add_argument("--snapshot", type=int, metavar="ID", help="default: the current one")
    stats.add_argument("--partition-stats", action="store_true")
    add_spark_options(stats)
    stats.set_defaults(handler=compute_stats)


def _option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        dest="options", help="an option of the procedure (repeatable)")


def _names(text: str | None, flag: str) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValidationError(f"{flag} needs at least one name")
    return names


def _bar(out: Output, label: str) -> ProgressCallback | None:
    return progress_bar(out.err, label, shown=out.shows_progress)


def _done(out: Output, start: float) -> None:
    out.progress(f"done in {time.monotonic() - start:.1f} s")


def _fields(result: Any) -> dict[str, Any]:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if not f.name.endswith("_file")}


def rewrite_data_files(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    options = key_values(args.options, "--option")
    RewriteOptions.parse(options, table.metadata)  # bad options fail before Spark starts
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.maintenance.compaction import rewrite_data_files as run  # noqa: PLC0415

        out.progress(f"rewriting the data files of {show(table.identifier)}...")
        result = run(spark, table, strategy=args.strategy, sort_order=args.sort_order,
                     zorder_by=_names(args.zorder_by, "--zorder-by"), where=args.where,
                     options=options, branch=args.branch, progress=_bar(out, "rewriting"))
    _done(out, start)
    out.document({"table": table.name, **_fields(result)},
                 f"rewrote {count(result.rewritten_data_files, 'data file')} "
                 f"({size_text(result.rewritten_bytes)}) of {table.name} into "
                 f"{count(result.added_data_files, 'file')} ({size_text(result.added_bytes)})"
                 + (f"; {count(result.failed_data_files, 'file')} left by failed commits"
                    if result.failed_data_files else "")
                 + ("" if result.snapshot_ids else " (nothing to rewrite; no new snapshot)"))
    return 0


def rewrite_manifests(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.maintenance.manifests import rewrite_manifests as run  # noqa: PLC0415

        out.progress(f"rewriting the manifests of {show(table.identifier)}...")
        result = run(spark, table, spec_id=args.spec_id,
                     sort_by=_names(args.sort_by, "--sort-by"),
                     progress=_bar(out, "rewriting"))
    _done(out, start)
    out.document({"table": table.name, **_fields(result)},
                 f"rewrote {count(result.rewritten_manifests_count, 'manifest')} of "
                 f"{table.name} into {result.added_manifests_count}"
                 + ("" if result.snapshot_id else " (nothing to rewrite; no new snapshot)"))
    return 0


def rewrite_deletes(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    options = key_values(args.options, "--option")
    DeleteRewriteOptions.parse(options, table.metadata.properties)  # before Spark starts
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.maintenance.deletes import rewrite_position_delete_files  # noqa: PLC0415

        out.progress(f"rewriting the delete files of {show(table.identifier)}...")
        result = rewrite_position_delete_files(spark, table, options=options,
                                               where=args.where,
                                               progress=_bar(out, "rewriting"))
    _done(out, start)
    out.document({"table": table.name, **_fields(result)},
                 f"rewrote {count(result.rewritten_delete_files_count, 'delete file')} of "
                 f"{table.name} into {result.added_delete_files_count}, dropped "
                 f"{count(result.dangling_files_removed, 'dangling file')}"
                 + ("" if result.snapshot_ids else " (nothing to rewrite; no new snapshot)"))
    return 0


def remove_orphan_files(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    older_than = (None if args.older_than is None
                  else parse_timestamp_ms(args.older_than, "--older-than"))
    if older_than is not None and time.time() * 1000 - older_than < DAY_MS and not args.force:
        raise ValidationError(
            f"--older-than {args.older_than} is within the last day: files of writes still "
            "in flight could be deleted; pass --force if no write is running")
    schemes = key_values(args.equal_scheme, "--equal-scheme")
    authorities = key_values(args.equal_authority, "--equal-authority")
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.maintenance.orphans import remove_orphan_files as run  # noqa: PLC0415

        out.progress(f"listing the files of {show(table.identifier)}...")
        result = run(spark, table, older_than_ms=older_than, location=args.location,
                     dry_run=args.dry_run, equal_schemes=schemes or None,
                     equal_authorities=authorities or None,
                     prefix_mismatch_mode=args.prefix_mismatch_mode,
                     progress=_bar(out, "listing"))
    _done(out, start)
    found = len(result.orphan_file_locations)

    def text() -> str:
        head = (f"found {count(found, 'orphan file')} ({size_text(result.orphan_bytes)}) in "
                f"{table.name}" + ("; dry run, nothing deleted" if result.dry_run else
                                   f"; deleted {result.deleted_files}"))
        failed = [f"could not delete {p}" for p in result.failed]
        return "\n".join([head, *result.orphan_file_locations, *failed])

    out.document({"table": table.name, **_fields(result)}, text)
    return 1 if result.failed else 0


def compute_stats(args: argparse.Namespace, out: Output) -> int:
    table = load(args)
    columns = _names(args.columns, "--columns")
    start = time.monotonic()
    with spark_session(args, out) as spark:
        from icepark.spark.maintenance.stats import (  # noqa: PLC0415 - imports pyspark
            compute_partition_stats,
            compute_table_stats,
        )

        out.progress(f"computing the column statistics of {show(table.identifier)}...")
        result = compute_table_stats(spark, table, columns=columns, snapshot_id=args.snapshot,
                                     progress=_bar(out, "computing"))
        partitions = (compute_partition_stats(spark, table, snapshot_id=args.snapshot)
                      if args.partition_stats else None)
    _done(out, start)
    doc: dict[str, Any] = {"table": table.name, **_fields(result)}
    if partitions is not None:
        doc["partition_statistics"] = _fields(partitions)

    def text() -> str:
        lines = [f"statistics of {table.name} at snapshot {result.snapshot_id}: "
                 f"{result.statistics_path}"]
        lines += [f"  {name}: about {ndv:,} distinct values"
                  for name, ndv in result.ndv.items()]
        if partitions is not None:
            lines.append(f"partition statistics ({count(partitions.partitions, 'partition')}):"
                         f" {partitions.statistics_path}")
        return "\n".join(lines)

    out.document(doc, text if result.snapshot_id is not None
                 else f"{table.name} has no snapshot: no statistics written")
    return 0


__all__ = ["register"]
