"""The crash matrix: a writer process killed with SIGKILL at every point of the commit path.

Each cell is (operation x point x catalog): appends, overwrites by filter, row deltas
(merge-on-read position deletes plus a data file) and snapshot expiry, killed after the data
files, the manifests, the manifest list or the new metadata file are written, between the SQL
catalog's ``UPDATE`` and its ``COMMIT``, right after the swap, and while deleting the files of
lost attempts (or of expired snapshots) -- see ``crash_worker.py`` for how each point is hit.
After the kill:

1. the table loads through a fresh catalog and its metadata is consistent;
2. every acknowledged row is there exactly once, and the killed commit is there entirely or
   not at all -- entirely exactly when the kill came after the swap;
3. the same operation, retried through a fresh catalog, commits;
4. nothing any snapshot, the metadata log or the current metadata references is missing, and
   every other file under the table location is an orphan the crash (or the retry) left: new
   since the child started, or no longer referenced since then; the new ones are what was
   written until the point (so the kill came where the cell says).

The children are forked from a ``forkserver`` that has imported icepark: starting an
interpreter costs more than the rest of a cell.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
from collections import Counter
from dataclasses import dataclass
from multiprocessing.context import ForkServerContext
from pathlib import Path

import pytest

from icepark.catalog.base import BaseCatalog
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.snapshots import ancestors_of
from icepark.table.table import Table
from tests.catalog import crash_worker
from tests.catalog.catalog_helpers import KINDS, SCHEMA, close, make_catalog
from tests.catalog.crash_worker import (
    APPLIED_AT,
    EXPIRY_POINTS,
    OPERATIONS,
    POINTS,
    Rows,
    apply,
    arrow_rows,
    run,
    table_rows,
)

RETRY = {"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "1",
         "commit.retry.max-wait-ms": "5"}

CELLS = [pytest.param(operation, point, kind, id=f"{operation}-{point}-{kind}")
         for kind in KINDS for operation in OPERATIONS
         for point in (EXPIRY_POINTS if operation == "expire" else POINTS)
         if point != "sql-commit" or kind == "sql"]


def _setup(catalog: BaseCatalog) -> Table:
    """Three snapshots, partitioned by name: two appends, then an overwrite of 'b' that leaves
    removed data files for an expiry to delete."""
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("name").build()
    table = catalog.create_table("db.t", SCHEMA, partition_spec=spec, properties=RETRY)
    table.append(arrow_rows([(0, "a"), (1, "b"), (2, "a"), (3, "b")]))
    table.append(arrow_rows([(4, "a"), (5, "b"), (6, "a"), (7, "b")]))
    return table.overwrite(arrow_rows([(10, "b"), (11, "b")]), "name = 'b'")


@dataclass(frozen=True, slots=True)
class Files:
    """The files under a table's location, and those its current metadata references."""

    on_disk: frozenset[str]
    referenced: frozenset[str]

    @property
    def orphans(self) -> frozenset[str]:
        return self.on_disk - self.referenced


def _local(location: str) -> str:
    return location.removeprefix("file://")


def check_files(table: Table) -> Files:
    """Every referenced file exists: the current metadata file, the metadata log, and each
    snapshot's manifest list, manifests and live data and delete files."""
    root = Path(_local(table.location))
    on_disk = frozenset(str(p) for p in root.rglob("*") if p.is_file())
    md = table.metadata
    referenced = {table.metadata_location, *(e.metadata_file for e in md.metadata_log)}
    for snapshot in md.snapshots:
        assert snapshot.manifest_list is not None
        referenced.add(snapshot.manifest_list)
        if _local(snapshot.manifest_list) not in on_disk:
            continue  # reported below
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            referenced.add(manifest.manifest_path)
            if _local(manifest.manifest_path) in on_disk:
                referenced.update(e.data_file.file_path for e in
                                  read_manifest(table.io, manifest, discard_deleted=True))
    local = frozenset(map(_local, referenced))
    missing = sorted(local - on_disk)
    assert not missing, f"referenced files were deleted: {missing}"
    return Files(on_disk, local)


def check_metadata(table: Table) -> None:
    """The current snapshot's history is one chain of increasing sequence numbers."""
    md = table.metadata
    current = md.current_snapshot()
    assert current is not None
    chain = list(ancestors_of(current.snapshot_id, md.snapshots_by_id))
    numbers = [s.sequence_number for s in reversed(chain)]
    assert numbers == sorted(set(numbers)) and numbers[-1] == md.last_sequence_number
    assert {s.snapshot_id for s in chain} == {s.snapshot_id for s in md.snapshots}


def check_leftovers(before: Files, after: Files) -> None:
    """Every orphan is the crash's (or the retry's): a file new since ``before``, one that was
    referenced then and is not now (expired), or an orphan already."""
    unexplained = (after.orphans - before.orphans - (after.on_disk - before.on_disk)
                   - (before.referenced - after.referenced))
    assert not unexplained, f"files orphaned that no crash explains: {sorted(unexplained)}"


def _kind_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if ".metadata.json" in name:  # also a filesystem catalog's temporary file
        return "metadata"
    if name.endswith(".avro"):
        return "list" if name.startswith("snap-") else "manifest"
    return "data" if name.endswith(".parquet") else name


WRITTEN = ("data", "manifest", "list", "metadata")
LEFT_BY = {"data": WRITTEN[:1], "manifest": WRITTEN[:2], "list": WRITTEN[:3],
           "metadata": WRITTEN, "sql-commit": WRITTEN, "swap": (), "cleanup": ("list",)}
"""What the files a kill leaves behind are: everything written until the point's hook (only a
metadata file for an expiry, which writes nothing before it), nothing after a swap, a lost
attempt's manifest list during the clean-up after a retry."""


def check_left_behind(operation: str, point: str, before: Files, after: Files) -> None:
    """The kill came where its point says: the new orphans are what was written until then."""
    kinds = {_kind_of(p) for p in after.orphans & (after.on_disk - before.on_disk)}
    if point == "abort":
        assert kinds and kinds <= set(WRITTEN[:3]), kinds
        return
    expected = set(LEFT_BY[point])
    if operation == "expire":
        expected = {"metadata"} if "metadata" in expected else set()
    assert kinds == expected, f"{point}: left {sorted(kinds)}, not {sorted(expected)}"


def _acknowledged(acks: Path) -> tuple[list[str], Rows]:
    records = [json.loads(line) for line in acks.read_text().splitlines()]
    return ([r["step"] for r in records],
            Counter((i, n) for r in records for i, n in r["rows"]))


@pytest.fixture(scope="module")
def processes() -> ForkServerContext:
    """Child processes forked from a server that has imported icepark."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.catalog.crash_worker"])
    return context


def _kill(processes: ForkServerContext, argv: list[str], log: Path) -> None:
    child = processes.Process(target=crash_worker.forked, args=(argv, str(log)))
    child.start()
    child.join(timeout=120)
    if child.exitcode is None:
        child.kill()
    errors = log.read_text() if log.exists() else ""
    assert child.exitcode == -signal.SIGKILL, (child.exitcode, errors)


def _expected(operation: str, rows: Rows, table: Table, applied: bool) -> None:
    """The table holds ``rows`` with the operation applied entirely, or not at all."""
    after = table_rows(table)
    with_op, without = apply(operation, rows), rows
    if operation == "expire":
        assert after == rows, "an expiry changed the rows"
        expired = len(table.metadata.snapshots) == 1
        assert expired is applied, f"the killed expiry is {'not ' if applied else ''}committed"
        return
    assert after in (with_op, without), "the killed commit is partly applied"
    assert after == (with_op if applied else without), \
        f"the killed commit is {'not ' if applied else ''}applied"


@pytest.mark.parametrize(("operation", "point", "catalog_kind"), CELLS)
def test_writer_killed(operation: str, point: str, catalog_kind: str, tmp_path: Path,
                       processes: ForkServerContext) -> None:
    warehouse, acks = tmp_path / "warehouse", tmp_path / "acks.jsonl"
    catalog = make_catalog(catalog_kind, warehouse)
    try:
        table = _setup(catalog)
        rows, before = table_rows(table), check_files(table)
    finally:
        close(catalog)

    _kill(processes, ["crash_worker", catalog_kind, str(warehouse), operation, point, str(acks)],
          tmp_path / "child.log")
    steps, acknowledged = _acknowledged(acks)
    assert steps[0] == "pre" and "armed" in steps and "survived" not in steps, steps
    rows += acknowledged

    catalog = make_catalog(catalog_kind, warehouse)  # (1) a fresh catalog loads it
    try:
        table = catalog.load_table("db.t")
        check_metadata(table)
        _expected(operation, rows, table, point in APPLIED_AT)  # (2)
        after_kill = check_files(table)  # (4)
        check_leftovers(before, after_kill)
        check_left_behind(operation, point, before, after_kill)

        rows = table_rows(table)
        run(operation, table)  # (3) the retry commits
        table = catalog.load_table("db.t")
        check_metadata(table)
        _expected(operation, rows, table, applied=True)
        check_leftovers(before, check_files(table))
    finally:
        close(catalog)
