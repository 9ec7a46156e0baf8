"""The child process of the crash matrix (``test_crash_matrix.py``), killed with SIGKILL at one
point of the commit path; also the operations and their model, which the parent shares.

``python crash_worker.py <kind> <warehouse> <operation> <point> <acks>`` loads ``db.t``,
appends :data:`PRE_ROWS` and acknowledges them, then arms the injection of ``<point>`` and runs
``<operation>``, whose commit the injection kills at the point's ``N``-th hit. Every
acknowledgement is a JSON line appended to ``<acks>`` and fsynced before the next step. A
process that survives its operation exits with status 3.

The injection patches the functions every commit goes through, not the catalogs' internals:

* ``data``: before the first manifest is opened (every data and delete file is written);
* ``manifest``: before the manifest list is written (every manifest is written);
* ``list``: after the manifest list is written;
* ``metadata``: the new ``*.metadata.json`` is written and not yet the table's: for the SQL
  catalog once it is published, before the ``UPDATE``; for the filesystem catalog, whose
  publish (``os.link``) is the swap, once its fsynced temporary file is written;
* ``sql-commit``: the ``UPDATE`` of ``iceberg_tables`` ran, its transaction is not committed;
* ``swap``: right after the pointer moved (the SQL commit, or ``v<N>.metadata.json`` linked and
  the version hint not yet moved), before the catalog and the action clean up;
* ``cleanup``: two attempts lost to a concurrent append (a writer that takes no commit lock,
  acknowledged), the third won, and the action is deleting the lost attempts' files: killed
  after the first deletion; for an expiry, after the second deletion of expired files;
* ``abort``: every attempt lost to a concurrent append, and the action is deleting all it
  wrote: killed after the second deletion.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.engine.default import DefaultDialect

from icepark.catalog import FilesystemCatalog, SqlCatalog
from icepark.catalog.base import BaseCatalog
from icepark.io.fileio import ArrowFileIO, ArrowOutputFile
from icepark.io.manifest.manifest import ManifestWriter
from icepark.io.parquet.delete_writer import PositionDeleteWriter, position_deletes_batch
from icepark.table.change.metadata_builder import now_ms
from icepark.table.snapshot import producer
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.writes import write_files
from icepark.table.table import Table
from tests.catalog.catalog_helpers import make_catalog

Row = tuple[int, str]
Rows = Counter[Row]

PRE_ROWS: list[Row] = [(100, "a"), (101, "b")]
APPEND_ROWS: list[Row] = [(200, "a"), (201, "b"), (202, "a"), (203, "b")]
OVERWRITE_ROWS: list[Row] = [(300, "a"), (301, "a")]
DELTA_ROWS: list[Row] = [(700, "a")]
DELTA_VICTIMS = frozenset({0, 100})  # one row of a setup file and one of PRE_ROWS' file

OPERATIONS = ("append", "overwrite", "row-delta", "expire")
POINTS = ("data", "manifest", "list", "metadata", "sql-commit", "swap", "cleanup", "abort")
EXPIRY_POINTS = ("metadata", "sql-commit", "swap", "cleanup")
APPLIED_AT = frozenset({"swap", "cleanup"})
"""The points past which the killed commit is part of the table."""
NO_LOCK = {"lock.enabled": "false", "lock.acquire-timeout-ms": "1"}


def arrow_rows(rows: Iterable[Row]) -> pa.Table:
    pairs = list(rows)
    return pa.table({"id": pa.array([i for i, _ in pairs], pa.int64()),
                     "name": pa.array([n for _, n in pairs], pa.string())})


def table_rows(table: Table) -> Rows:
    """The table's rows (deletes applied) as a multiset of ``(id, name)``."""
    data = table.scan(selected_fields=("id", "name")).to_arrow()
    return Counter(zip(data.column("id").to_pylist(), data.column("name").to_pylist(),
                       strict=True))


def run(operation: str, table: Table) -> None:
    """One operation on ``table``, committed through the table's catalog."""
    match operation:
        case "append":
            table.append(arrow_rows(APPEND_ROWS))
        case "overwrite":
            table.overwrite(arrow_rows(OVERWRITE_ROWS), "name = 'a'")
        case "row-delta":
            _row_delta(table)
        case "expire":
            table.expire_snapshots(older_than_ms=now_ms() + 1, retain_last=1)
        case _:
            raise ValueError(f"Unknown operation {operation!r}")


def apply(operation: str, rows: Rows) -> Rows:
    """The model: the rows after ``operation`` commits on a table holding ``rows``."""
    match operation:
        case "append":
            return rows + Counter(APPEND_ROWS)
        case "overwrite":
            return Counter({r: c for r, c in rows.items() if r[1] != "a"}) \
                + Counter(OVERWRITE_ROWS)
        case "row-delta":
            return Counter({r: c for r, c in rows.items() if r[0] not in DELTA_VICTIMS}) \
                + Counter(DELTA_ROWS)
    return rows


def _row_delta(table: Table) -> None:
    """Merge-on-read: position deletes of :data:`DELTA_VICTIMS` (one delete file per data file
    holding some) and a data file of :data:`DELTA_ROWS`, in one snapshot."""
    md = table.metadata
    added = write_files(table.io, md, arrow_rows(DELTA_ROWS))
    with table.new_row_delta() as delta:
        delta.delete_on_failure(*(f.file_path for f in added))
        for data_file in added:
            delta.add_rows(data_file)
        for task in table.scan().plan_files():
            path = task.data_file.file_path
            with table.io.new_input(path).open() as f:
                ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()
            positions = [p for p, i in enumerate(ids) if i in DELTA_VICTIMS]
            if not positions:
                continue
            writer = PositionDeleteWriter(
                table.io, LocationProvider.of(md).data_file_namer(md.spec(), md.schema(),
                                                                  task.data_file.partition),
                md.schema(), md.spec(), task.data_file.partition, md.properties)
            writer.write(position_deletes_batch({path: positions}))
            for delete_file in writer.close():
                delta.delete_on_failure(delete_file.file_path)
                delta.add_deletes(delete_file)
            delta.validate_data_files_exist([path])


# ----------------------------------------------------------------------------- the child


def acknowledge(acks: Path, step: str, rows: Iterable[Row] = ()) -> None:
    """Record a finished step durably before the next one starts."""
    with open(acks, "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": step, "rows": list(rows)}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _die() -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(1)  # not reached


class Trigger:
    """Kills the process at the ``n``-th hit of ``point``'s hook once armed (the cleanup
    points share one hook: a file deleted)."""

    def __init__(self, point: str, n: int) -> None:
        self.point = "delete" if point in ("cleanup", "abort") else point
        self.remaining, self.armed = n, False

    def hit(self, point: str) -> None:
        if self.armed and point == self.point:
            self.remaining -= 1
            if self.remaining == 0:
                _die()


def _wrap(owner: Any, name: str, before: Callable[..., None] | None = None,
          after: Callable[..., None] | None = None) -> None:
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args)
        result = original(*args, **kwargs)
        if after is not None:
            after(*args)
        return result

    setattr(owner, name, wrapped)


def install(trigger: Trigger, kind: str) -> None:
    """Patch every point's hook (see the module docstring)."""
    _wrap(ManifestWriter, "__init__", before=lambda *a: trigger.hit("data"))
    _wrap(producer, "write_manifest_list", before=lambda *a: trigger.hit("manifest"),
          after=lambda *a: trigger.hit("list"))

    def is_metadata(location: str) -> bool:
        return str(location).endswith(".metadata.json")

    def linked(src: Any, dst: Any, *rest: Any) -> None:
        if kind == "filesystem" and is_metadata(dst):
            trigger.hit("metadata")

    def published(out: ArrowOutputFile, *rest: Any) -> None:
        if is_metadata(out.location):
            trigger.hit("metadata" if kind == "sql" else "swap")

    _wrap(os, "link", before=linked)
    _wrap(ArrowOutputFile, "write_exclusive", after=published)

    pending = {"update": False}

    def executed(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        text = statement.lstrip().upper()
        if text.startswith("UPDATE") and "ICEBERG_TABLES" in text:
            pending["update"] = True

    def committing(*args: Any) -> None:
        if pending["update"]:
            trigger.hit("sql-commit")

    def committed(*args: Any) -> None:
        if pending["update"]:
            pending["update"] = False
            trigger.hit("swap")

    sa.event.listen(sa.Engine, "after_cursor_execute", executed)
    sa.event.listen(sa.Engine, "rollback", lambda conn: pending.update(update=False))
    _wrap(DefaultDialect, "do_commit", before=committing, after=committed)
    _wrap(ArrowFileIO, "delete", after=lambda *a: trigger.hit("delete"))


def lose_attempts(catalog: BaseCatalog, kind: str, warehouse: Path, acks: Path,
                  losses: int) -> None:
    """Before each of the first ``losses`` commit attempts of ``catalog``, another writer (one
    that takes no commit lock, like another engine) appends rows, which are acknowledged."""
    other = (SqlCatalog if kind == "sql" else FilesystemCatalog)(
        "test", {"warehouse": str(warehouse), **NO_LOCK})
    done = 0
    original = type(catalog).commit_table

    def commit_table(self: BaseCatalog, *args: Any, **kwargs: Any) -> Any:
        nonlocal done
        if self is catalog and done < losses:
            rows = [(500 + 2 * done, "c"), (501 + 2 * done, "c")]
            other.load_table("db.t").append(arrow_rows(rows))
            acknowledge(acks, "concurrent", rows)
            done += 1
        return original(self, *args, **kwargs)

    setattr(type(catalog), "commit_table", commit_table)  # noqa: B010 - patching the class


def main(argv: list[str]) -> int:
    kind, root, operation, point, ack_file = argv[1:6]
    warehouse, acks = Path(root), Path(ack_file)
    n = {"cleanup": 2 if operation == "expire" else 1, "abort": 2}.get(point, 1)
    trigger = Trigger(point, n)
    install(trigger, kind)
    catalog = make_catalog(kind, warehouse)
    table = catalog.load_table("db.t")
    table.append(arrow_rows(PRE_ROWS))
    acknowledge(acks, "pre", PRE_ROWS)
    if point in ("cleanup", "abort") and operation != "expire":
        retries = int(table.properties["commit.retry.num-retries"])
        lose_attempts(catalog, kind, warehouse, acks, retries if point == "cleanup" else
                      retries + 1)
    acknowledge(acks, "armed")
    trigger.armed = True
    run(operation, table)
    acknowledge(acks, "survived")
    return 3


def forked(argv: list[str], log: str) -> None:
    """:func:`main` in a process forked from a server that imported this module already (an
    interpreter start costs more than the rest of a cell); errors go to ``log``."""
    sys.stderr = open(log, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - until death
    sys.exit(main(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
