"""``icepark quickstart``: the whole life of an Iceberg table on Spark, on this machine.

On the embedded default (a local warehouse folder, a SQLite catalog file in it, Spark
``local[*]``) it creates ``quickstart.events`` (format v2, partitioned by ``day(ts)``) and
runs, reporting rows, files and seconds for each step:

1. *ingest*: 80% of the generated events (:mod:`icepark.cli.quickstart.data`) through Spark;
2. *append*: the other 20%, a second snapshot;
3. *schema*: renames ``device.version`` to ``device.os_version`` and adds ``country``, null in
   the rows written before it existed (the table is format v2, which the Java reference
   runtime also writes; v3's ``initial-default`` waits for icepark's v3 row lineage);
4. *partition*: ``day(ts)`` becomes ``month(ts), identity(kind)`` and 5% more events are
   appended under the new spec (spec, *Partition Evolution*: "When partitioning is changed,
   data files written with an older spec remain valid");
5. *delete*: the rows with ``kind = 'spam'`` (row-level, :func:`icepark.spark.rowlevel.delete.
   delete_rows`);
6. *history*: the snapshots, and a time-travel read of the first one;
7. *read*: the same aggregates through icepark (Spark), pyiceberg and DuckDB
   (:mod:`icepark.cli.quickstart.check`), which must agree.

The partition source columns (``ts``, ``kind``) are required, so no data or delete file has a
null partition value (DuckDB 1.5 fails on delete files with one), and the deletes are position
deletes (DuckDB 1.5 also drops null rows wrongly when applying equality deletes).

Each run replaces the ``quickstart.events`` of an earlier one (dropped with its files); the
rest of the warehouse is left alone. Exit status 0, or 1 when a reader disagrees.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import icepark
from icepark.cli.progress import progress_bar
from icepark.cli.quickstart.check import compare_peers, spark_aggregates
from icepark.cli.quickstart.data import SCHEMA, count_kind, events
from icepark.cli.quickstart.report import Report, timed
from icepark.cli.render import count
from icepark.cli.spark_session import started_session
from icepark.spark.progress import ProgressCallback, track
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.types import STRING

if TYPE_CHECKING:
    from icepark.catalog import BaseCatalog
    from icepark.table.table import Table

CATALOG = "default"
"""The catalog name: the one ``icepark`` commands use when none is configured, so that
``icepark describe quickstart.events`` finds the table without flags."""
TABLE = "quickstart.events"
DELETE_FILTER = "kind = 'spam'"
NEW_COLUMN = "country"
GROUP_BY = ("kind", NEW_COLUMN)
SUMS = ("event_id",)
MIN_ROWS = 100


def _row_count(text: str) -> int:
    try:
        n = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < MIN_ROWS:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_ROWS}, not {n}")
    return n


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The quickstart's options."""
    parser.add_argument("--rows", type=_row_count, default=2_000_000, metavar="N",
                        help="events to generate (default: 2,000,000); 80%% are ingested, "
                             "20%% appended, then 5%% more after the partition spec changes")
    parser.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    parser.add_argument("--warehouse", metavar="DIR", default=None,
                        help="warehouse folder (default: ./warehouse), with the SQLite "
                             "catalog in DIR/catalog.db")
    parser.add_argument("--json", action="store_true", default=False,
                        help="print one JSON summary document instead of the report")
    parser.add_argument("-q", "--quiet", action="store_true", default=False,
                        help="no progress bars on stderr (drawn only on a terminal)")


def run(args: argparse.Namespace) -> int:
    """Run the quickstart; 0 on success, 1 when a reader disagrees."""
    report = Report(as_json=bool(getattr(args, "json", False)))
    warehouse = Path(getattr(args, "warehouse", None) or "warehouse").resolve()
    total = int(args.rows)
    sizes = (total * 4 // 5, total - total * 4 // 5, max(total // 20, 1))
    report.text(f"icepark quickstart: {count(sum(sizes), 'row')} of events into {TABLE}")
    verbose = bool(getattr(args, "verbose", False))
    with timed() as elapsed:
        warehouse.mkdir(parents=True, exist_ok=True)
        catalog = icepark.load_catalog(CATALOG, type="sql",
                                       uri=f"sqlite:///{warehouse / 'catalog.db'}",
                                       warehouse=str(warehouse))
        # the JVM's start-up chatter is not part of the report
        with started_session(args.master, "icepark-quickstart", verbose) as spark:
            spark.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
            report.step("setup", f"Spark {spark.version} on {args.master}, SQLite catalog, "
                        f"{warehouse}", elapsed())
            shown = not (report.as_json or getattr(args, "quiet", False))
            return _Run(report, spark, warehouse, sizes, shown=shown).pipeline(catalog)


@dataclass
class _Run:
    report: Report
    spark: Any
    warehouse: Path
    sizes: tuple[int, int, int]
    """Events ingested, appended, and appended after the spec change."""
    summary: dict[str, Any] = field(default_factory=dict)
    shown: bool = True
    """Whether progress bars are drawn (on stderr, when it is a terminal)."""

    def bar(self, label: str) -> ProgressCallback | None:
        return progress_bar(sys.stderr, label, shown=self.shown)

    def pipeline(self, catalog: BaseCatalog) -> int:
        from icepark.spark.writer.write import write  # noqa: PLC0415 - imports pyspark

        first, later, extra = self.sizes
        arrow = self.report.arrow
        table, replaced = _create(catalog)
        with timed() as elapsed:
            write(events(self.spark, 0, first), table, mode="append",
                  progress=self.bar("ingest"))
        self.report.step("ingest", f"{count(first, 'row')} {arrow} {_added_files(table)} files "
                         f"({_spec_text(table.spec(), table)})", elapsed())
        if replaced:
            self.report.detail(f"(replaced the {TABLE} of an earlier run)")

        with timed() as elapsed:
            write(events(self.spark, first, later), table, mode="append",
                  progress=self.bar("append"))
        self.report.step("append", f"{count(later, 'row')} {arrow} {_added_files(table)} files, "
                         f"snapshot {len(table.snapshots())}", elapsed())

        with timed() as elapsed, table.update_schema() as update:
            update.rename_column("device.version", "os_version")
            update.add_column(NEW_COLUMN, STRING)
        table = table.refresh()
        self.report.step("schema", f"device.version {arrow} device.os_version, + {NEW_COLUMN}"
                         " (null in earlier rows); no file rewritten", elapsed())

        with timed() as elapsed:
            with table.update_spec() as spec:
                spec.remove_field("ts_day").add_field("ts", "month").add_identity("kind")
            table = table.refresh()
            write(events(self.spark, first + later, extra, version_field="os_version",
                         with_country=True), table, mode="append",
                  progress=self.bar("partition"))
        self.report.step("partition", f"{_spec_text(table.specs()[0], table)} {arrow} "
                         f"{_spec_text(table.spec(), table)}; {count(extra, 'row')} {arrow} "
                         f"{_added_files(table)} files", elapsed())
        self.report.detail("older files keep their spec and are still planned with it")
        table = self.delete_and_history(table)
        return self.check(table)

    def delete_and_history(self, table: Table) -> Table:
        from icepark.spark.reader.read import read  # noqa: PLC0415
        from icepark.spark.rowlevel.delete import delete_rows  # noqa: PLC0415 - imports pyspark

        arrow = self.report.arrow
        with timed() as elapsed:
            deleted = delete_rows(self.spark, table, DELETE_FILTER,
                                  progress=self.bar("delete"))
            table = table.refresh()
        done = [f"{n} {what}{'' if n == 1 else 's'}{how}" for n, what, how in (
            (deleted.delete_files, "position delete file", ""),
            (deleted.removed_files, "data file", " removed"),
            (deleted.rewritten_files, "data file", " rewritten")) if n]
        self.report.step("delete", f"{DELETE_FILTER}: {count(deleted.deleted_rows, 'row')} "
                         f"{arrow} {', '.join(done) or 'nothing to do'}", elapsed())

        snapshots = sorted(table.snapshots(), key=lambda s: s.sequence_number)
        with timed() as elapsed, track(self.spark, self.bar("history")):
            then = read(self.spark, table, snapshot_id=snapshots[0].snapshot_id).count()
        self.report.step("history", f"{len(snapshots)} snapshots; a time-travel read of "
                         f"snapshot 1 finds {count(then, 'row')}", elapsed())
        for number, snapshot in enumerate(snapshots, 1):
            self.report.detail(_snapshot_line(number, snapshot))
        self.summary["rows"] = {"deleted": deleted.deleted_rows, "at_first_snapshot": then}
        self.summary["snapshots"] = [
            {"snapshot_id": s.snapshot_id,
             "operation": str(s.summary.operation) if s.summary else None,
             "summary": dict(s.summary.properties) if s.summary else {}} for s in snapshots]
        return table

    def check(self, table: Table) -> int:
        from icepark.spark.reader.read import read  # noqa: PLC0415 - imports pyspark

        generated = sum(self.sizes)
        expected = generated - count_kind("spam", generated)
        with timed() as elapsed, track(self.spark, self.bar("read")):
            ours = spark_aggregates(read(self.spark, table, columns=[*GROUP_BY, *SUMS]),
                                    GROUP_BY, SUMS)
        right = ours["rows"] == expected
        kinds = ", ".join(f"{v} {c:,}" for v, c in ours["groups"]["kind"])
        self.report.step("read", f"icepark (Spark): {count(ours['rows'], 'row')} now"
                         f"{'' if right else f', NOT the {expected:,} expected'}; {kinds}",
                         elapsed(), "ok" if right else "fail")
        agree, peers = compare_peers(self.report, table.metadata_location, ours,
                                     group_by=GROUP_BY, sums=SUMS)
        self._closing_hints()
        first, later, extra = self.sizes
        self.report.finish({
            **self.summary, "warehouse": str(self.warehouse), "catalog": CATALOG,
            "table": TABLE, "metadata_location": table.metadata_location,
            "delete_filter": DELETE_FILTER, "agree": agree,
            "rows": {**self.summary["rows"], "final": ours["rows"], "ingested": first,
                     "appended": later,
                     "appended_after_spec_change": extra, "expected_final": expected},
            "readers": {"icepark": ours, **peers},
        })
        return 0 if right and agree is not False else 1

    def _closing_hints(self) -> None:
        self.report.text()
        self.report.text(f"The warehouse stays in {self.warehouse} (SQLite catalog: "
                         "catalog.db). Explore it:")
        default = self.warehouse == Path("warehouse").resolve()
        flags = "" if default else f" --warehouse {self.warehouse}"
        for command in (f"describe {TABLE}", f"history {TABLE}",
                        f"query {TABLE} --where \"kind = 'purchase'\" --limit 5"):
            self.report.text(f"  icepark{flags} {command}")


def _create(catalog: BaseCatalog) -> tuple[Table, bool]:
    """A new, empty ``quickstart.events``, and whether an earlier one was dropped for it."""
    namespace = TABLE.split(".", maxsplit=1)[0]
    if not catalog.namespace_exists(namespace):
        catalog.create_namespace(namespace)
    replaced = catalog.table_exists(TABLE)
    if replaced:
        catalog.drop_table(TABLE, purge=True)
    spec = PartitionSpecBuilder(SCHEMA).day("ts").build()
    table = catalog.create_table(TABLE, SCHEMA, partition_spec=spec, format_version=2,
                                 properties={"write.delete.mode": "merge-on-read"})
    return table, replaced


def _added_files(table: Table) -> str:
    snapshot = table.current_snapshot()
    summary = snapshot.summary if snapshot else None
    return summary.properties.get("added-data-files", "0") if summary else "0"


def _spec_text(spec: PartitionSpec, table: Table) -> str:
    schema = table.schema()
    return ", ".join(f"{f.transform}({schema.find_column_name(f.source_id)})"
                     for f in spec.fields)


def _snapshot_line(number: int, snapshot: Any) -> str:
    summary = snapshot.summary
    props = summary.properties if summary else {}

    def total(key: str) -> int:
        return int(props.get(key, "0"))

    changes = [f"{sign}{total(key):,} {what}" for key, sign, what in (
        ("added-records", "+", "rows"), ("deleted-records", "-", "rows"),
        ("added-position-deletes", "+", "position deletes")) if total(key)]
    operation = str(summary.operation) if summary else "?"
    return (f"{number}. {snapshot.snapshot_id:<20} {operation:<9} "
            f"{', '.join(changes) or 'no row changes':<26} total "
            f"{count(total('total-records'), 'row')} in {total('total-data-files'):,} files")


__all__ = ["add_arguments", "run"]
