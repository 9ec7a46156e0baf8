"""Compaction (``rewrite_data_files``) is safe beside other writers and when it dies.

Concurrent writers: while a compaction runs, other writers append rows (icepark's Arrow
``append``), delete rows (Spark ``ips.delete``, merge-on-read or copy-on-write) and delete whole
files (icepark's Arrow ``delete``), at fixed points of the compaction (after planning, between
two groups' writes, before the commit, between two partial-progress commits) and from real
threads. Whatever commits win or fail, the table holds exactly the initial rows plus those
appended minus those deleted by the commits that succeeded, each once: spec, *Snapshots*, a
``replace`` is "without changing table data", and "Replace operations must verify that the
files that will be deleted are still in the table".

Killed compactions: a compaction that dies (``KeyboardInterrupt``, ``SystemExit``, ``OSError``)
after writing some groups' files, at a commit, or inside the catalog swap, with every clean-up
disabled as if the process were gone, leaves the table reading the same rows (also at the
snapshot before it); the files it wrote are referenced by no snapshot, and
``remove_orphan_files`` deletes exactly the new files no snapshot references, and nothing the
table references: every snapshot still reads its rows after it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.catalog import load_catalog
from icepark.catalog.base import Catalog
from icepark.catalog.sql import SqlCatalog
from icepark.errors import CommitFailed, ValidationError
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import read_manifest_list
from icepark.spark.maintenance.compaction import _Job, rewrite_data_files
from icepark.spark.maintenance.orphans import remove_orphan_files
from icepark.spark.writer.data_files import WrittenFiles
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.snapshot.producer import SnapshotProducer
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "cat", STRING),
                   NestedField.optional(3, "v", LONG))
MOR = {"write.delete.mode": "merge-on-read"}
COW = {"write.delete.mode": "copy-on-write"}
SEPARATE_JOBS = {"target-file-size-bytes": "2048"}
"""A target smaller than a partition's files: each group becomes several files, so each is
a Spark job of its own (small groups would share one job)."""
INITIAL = range(240)
"""Four appends of 60 rows, each a file in each of the partitions x, y and z."""


def _rows(ids: Iterable[int], cat: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "cat": [cat or "xyz"[i % 3] for i in ids],
                     "v": pa.array([i * 7 % 11 for i in ids], pa.int64())},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                      ("cat", pa.string()), ("v", pa.int64())]))


def _catalog(tmp_path: Path) -> Catalog:
    return load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db",
                        warehouse=str(tmp_path / "wh"))


def _table(tmp_path: Path, properties: dict[str, str], *, version: int = 2) -> Table:
    catalog = _catalog(tmp_path)
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("cat").build()
    table = catalog.create_table("db.t", SCHEMA, partition_spec=spec,
                                 format_version=version,  # type: ignore[arg-type]
                                 properties=properties)
    for n in range(4):
        table.append(_rows(range(n * 60, (n + 1) * 60)))
    return table


def _ids(table: Table, snapshot_id: int | None = None) -> list[int]:
    """Every row's id, duplicates kept, as icepark's Arrow reader reads them."""
    scan = table.refresh().scan(snapshot_id=snapshot_id, selected_fields=("id",))
    return sorted(scan.to_arrow().column("id").to_pylist())


def _spark_ids(spark: SparkSession, table: Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(r["id"] for r in ips.read(spark, table.refresh(), columns=["id"],
                                            snapshot_id=snapshot_id).collect())


def _in(ids: Iterable[int]) -> str:
    return f"id IN ({', '.join(map(str, sorted(ids)))})"


def _on_call(monkeypatch: pytest.MonkeyPatch, method: str, call: int,
             action: Callable[[], None]) -> None:
    """Run ``action`` before the ``call``-th call (1-based) of ``_Job.<method>`` in each
    compaction."""
    original = getattr(_Job, method)
    calls: dict[int, int] = {}

    def hooked(self: _Job, *args: Any) -> Any:
        calls[id(self)] = calls.get(id(self), 0) + 1
        if calls[id(self)] == call:
            action()
        return original(self, *args)

    monkeypatch.setattr(_Job, method, hooked)


# ------------------------------------------------------------------ concurrent writers


@dataclass
class _Ledger:
    """The ids the table must hold: changed only by the writers' commits that succeeded."""

    present: set[int] = field(default_factory=lambda: set(INITIAL))
    appended: dict[str, set[int]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def append(self, table: Table, cat: str, ids: range) -> None:
        try:
            table.refresh().append(_rows(ids, cat))
        except (ValidationError, CommitFailed) as e:
            self.failed.append(f"append {cat}: {e}")
            return
        with self.lock:
            self.present |= set(ids)
            self.appended[cat] = set(ids)

    def delete_rows(self, spark: SparkSession, table: Table, ids: set[int]) -> None:
        """A row-level delete by Spark (merge-on-read or copy-on-write, as the table says) of
        ids known to be committed."""
        try:
            ips.delete(spark, table.refresh(), _in(ids))
        except (ValidationError, CommitFailed) as e:
            self.failed.append(f"delete {sorted(ids)[:3]}...: {e}")
            return
        with self.lock:
            self.present -= ids

    def delete_partition(self, table: Table, cat: str, ids: set[int]) -> None:
        """An Arrow-level delete of whole files (all of a partition's)."""
        try:
            table.refresh().delete(f"cat = '{cat}'")
        except (ValidationError, CommitFailed) as e:
            self.failed.append(f"delete partition {cat}: {e}")
            return
        with self.lock:
            self.present -= ids

    def expected(self) -> list[int]:
        with self.lock:
            return sorted(self.present)


def _x_ids(round_: int) -> set[int]:
    """Initial ids of partition x, a different fifth for each round."""
    return {i for i in INITIAL if i % 3 == 0 and (i // 3) % 5 == round_}


SLOW = pytest.mark.slow  # (suite time: the other points cover the same code paths)


@pytest.mark.parametrize(("method", "call", "partial", "packed"), [
    pytest.param("_write_job", 1, False, False, id="after-planning"),
    pytest.param("_write_job", 2, True, False, id="between-group-writes", marks=SLOW),
    pytest.param("_commit", 1, False, False, id="before-commit"),
    pytest.param("_commit", 2, True, False, id="between-partial-commits", marks=SLOW),
    pytest.param("_commit", 2, True, True, id="between-partial-commits-of-one-job")])
def test_writers_at_each_point_of_a_compaction_lose_nothing(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, method: str,
        call: int, partial: bool, packed: bool) -> None:
    """Three compactions, each meeting one round of other writers at the same point: an
    append to a new partition each round, a merge-on-read delete of rows in rounds 0 and 1,
    and in round 1 the Arrow-level delete of round 0's new partition (a file the compaction
    planned to rewrite). After each, the table holds exactly the rows the ledger says, and
    the last compaction, which met only an append, commits."""
    table = _table(tmp_path, MOR)
    writer = _catalog(tmp_path).load_table("db.t")
    ledger = _Ledger()
    options = {"rewrite-all": "true", "max-concurrent-file-group-rewrites": "1",
               "partial-progress.enabled": str(partial).lower(),
               **({} if packed else SEPARATE_JOBS)}
    outcomes: list[tuple[int, int] | str] = []
    for round_ in range(3):
        def writers(r: int = round_) -> None:
            ledger.append(writer, f"n{r}", range(1000 + 100 * r, 1030 + 100 * r))
            if r < 2:
                ledger.delete_rows(spark, writer, _x_ids(r))
            if r == 1:
                ledger.delete_partition(writer, "n0", ledger.appended["n0"])

        _on_call(monkeypatch, method, call, writers)
        try:
            result = rewrite_data_files(spark, table.refresh(), options=options)
            outcomes.append((result.groups, result.failed_data_files))
        except ValidationError as e:
            outcomes.append(str(e))
        assert _ids(table) == ledger.expected(), (round_, outcomes)
        monkeypatch.undo()
    # the writers went first each time: they always commit
    assert ledger.failed == []
    assert ledger.expected() == sorted(
        (set(INITIAL) - _x_ids(0) - _x_ids(1)) | set(range(1100, 1130)) | set(range(1200, 1230)))
    # the last round only appended: that compaction commits all its groups
    assert isinstance(outcomes[-1], tuple) and outcomes[-1][0] > 0, outcomes
    assert outcomes[-1][1] == 0, outcomes
    assert _spark_ids(spark, table) == ledger.expected()
    head = table.refresh().current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE


def test_writer_threads_beside_compactions_lose_nothing(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compactions (all files, with and without partial progress) run in one thread while an
    appender thread and a deleter thread (copy-on-write deletes by Spark, a whole-partition
    Arrow delete) commit as fast as they can; the writers start once the first compaction has
    planned. Any of them may lose a race; none may lose, duplicate or resurrect a row."""
    table = _table(tmp_path, COW)
    table.append(_rows(range(500, 530), "w"))
    ledger = _Ledger(present=set(INITIAL) | set(range(500, 530)))
    planned = threading.Event()
    original = _Job._write_job

    def write(self: _Job, *args: Any) -> Any:
        planned.set()
        return original(self, *args)

    monkeypatch.setattr(_Job, "_write_job", write)
    outcomes: list[tuple[int, int] | str] = []
    errors: list[BaseException] = []

    def compactor() -> None:
        own = _catalog(tmp_path).load_table("db.t")
        for n in range(3):
            options = {"rewrite-all": "true",
                       "partial-progress.enabled": str(n % 2 == 1).lower()}
            try:
                result = rewrite_data_files(spark, own.refresh(), options=options)
                outcomes.append((result.groups, result.failed_data_files))
            except ValidationError as e:
                outcomes.append(str(e))

    def appender() -> None:
        own = _catalog(tmp_path).load_table("db.t")
        assert planned.wait(300)
        for r in range(4):
            ledger.append(own, f"a{r}", range(2000 + 100 * r, 2020 + 100 * r))

    def deleter() -> None:
        own = _catalog(tmp_path).load_table("db.t")
        assert planned.wait(300)
        for r in range(3):
            ledger.delete_rows(spark, own, _x_ids(r) | {i + 1 for i in _x_ids(r)})
        ledger.delete_partition(own, "w", set(range(500, 530)))

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as e:
                errors.append(e)
                planned.set()  # never leave the others waiting
        return run

    threads = [threading.Thread(target=guarded(t), name=t.__name__)
               for t in (compactor, appender, deleter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    assert len(outcomes) == 3
    expected = ledger.expected()
    assert _ids(table) == expected, (outcomes, ledger.failed)
    assert _spark_ids(spark, table) == expected
    # and the table is healthy: a compaction on its own commits and changes no row
    monkeypatch.undo()
    alone = rewrite_data_files(spark, table.refresh(), options={"rewrite-all": "true"})
    assert alone.groups > 0
    assert _ids(table) == expected


# -------------------------------------------------------------------- killed compactions


def _files(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def _referenced(table: Table) -> set[str]:
    """Every file some snapshot or metadata version of ``table`` references (the oracle for
    the orphan removal, found here independently of it)."""
    metadata = table.refresh().metadata
    found = {table.metadata_location, *(e.metadata_file for e in metadata.metadata_log)}
    found |= {s.statistics_path for s in metadata.statistics}
    found |= {s.statistics_path for s in metadata.partition_statistics}
    for snapshot in metadata.snapshots:
        assert snapshot.manifest_list is not None
        found.add(snapshot.manifest_list)
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            found.add(manifest.manifest_path)
            found |= {e.data_file.file_path for e in read_manifest(table.io, manifest)}
    return {p.removeprefix("file://").removeprefix("file:") for p in found}


def _kill_in_write(monkeypatch: pytest.MonkeyPatch, written: list[WrittenFiles]) -> None:
    """The process dies as the second group's files are written."""
    def write(self: _Job, *args: Any) -> dict[int, WrittenFiles]:
        files: dict[int, WrittenFiles] = original(self, *args)
        written.extend(files.values())
        if len(written) == 2:
            raise KeyboardInterrupt
        return files

    original = _Job._write_job
    monkeypatch.setattr(_Job, "_write_job", write)


def _kill_in_commit(monkeypatch: pytest.MonkeyPatch, call: int, error: BaseException) -> None:
    original = _Job._commit
    calls: list[int] = []

    def commit(self: _Job, *args: Any) -> int:
        calls.append(1)
        if len(calls) == call:
            raise error
        result: int = original(self, *args)
        return result

    monkeypatch.setattr(_Job, "_commit", commit)


def _kill_in_swap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process dies in the catalog swap: manifests, manifest list and metadata file are
    written, and nothing deletes them."""
    def swap(self: SqlCatalog, *args: Any) -> bool:
        raise SystemExit(1)

    monkeypatch.setattr(SqlCatalog, "_swap_pointer", swap)
    monkeypatch.setattr(SnapshotProducer, "clean_up", lambda self, committed: None)


KILLS = {
    # point: (format version, partial progress, replace snapshots committed before the kill)
    "in-second-group-write": (2, True, 0),
    "at-first-commit": (3, True, 0),
    "at-second-commit": (2, True, 1),
    "commit-oserror": (3, False, 0),
    "in-catalog-swap": (2, False, 0),
}


@pytest.mark.parametrize("point", [
    pytest.param(p, marks=SLOW)
    if p in {"in-second-group-write", "at-second-commit", "commit-oserror"} else p
    for p in KILLS])
def test_a_killed_compaction_leaves_only_orphans_that_orphan_removal_takes(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        point: str) -> None:
    version, partial, committed = KILLS[point]
    table = _table(tmp_path, MOR, version=version)
    ips.delete(spark, table.refresh(), _in(i for i in INITIAL if i % 10 == 3))  # deletes to apply
    lineage = ["_row_id", "_last_updated_sequence_number"] if version == 3 else []
    expected = [i for i in INITIAL if i % 10 != 3]
    assert _ids(table) == expected
    start = table.refresh().current_snapshot()
    assert start is not None
    with_lineage = sorted(tuple(r) for r in ips.read(spark, table, metadata_columns=lineage)
                          .collect())
    location = Path(table.location)
    before = _files(location)

    written: list[WrittenFiles] = []
    original_write = _Job._write_job

    def record(self: _Job, *args: Any) -> dict[int, WrittenFiles]:
        files: dict[int, WrittenFiles] = original_write(self, *args)
        written.extend(files.values())
        return files

    monkeypatch.setattr(WrittenFiles, "abort", lambda self, file_io: None)  # nobody cleans up
    if point == "in-second-group-write":
        _kill_in_write(monkeypatch, written)
    else:
        monkeypatch.setattr(_Job, "_write_job", record)
    if point == "at-first-commit":
        _kill_in_commit(monkeypatch, 1, SystemExit(1))
    elif point == "at-second-commit":
        _kill_in_commit(monkeypatch, 2, KeyboardInterrupt())
    elif point == "commit-oserror":
        _kill_in_commit(monkeypatch, 1, OSError(28, "No space left on device"))
    elif point == "in-catalog-swap":
        _kill_in_swap(monkeypatch)
    options = {"rewrite-all": "true", "max-concurrent-file-group-rewrites": "1",
               "partial-progress.enabled": str(partial).lower(), **SEPARATE_JOBS}
    with pytest.raises((KeyboardInterrupt, SystemExit, OSError)):
        rewrite_data_files(spark, table, options=options)
    monkeypatch.undo()
    assert len(written) >= 2  # the job got as far as writing at least two groups' files

    # the table reads the same rows, now and at the snapshot before the compaction
    table = _catalog(tmp_path).load_table("db.t")
    snapshots = [s for s in table.metadata.snapshots if s.sequence_number > start.sequence_number]
    assert [s.operation for s in snapshots] == [Operation.REPLACE] * committed
    assert _ids(table) == expected
    assert _ids(table, start.snapshot_id) == expected

    referenced = _referenced(table)
    new = _files(location) - before
    orphans = new - referenced
    ours = {f.file_path.removeprefix("file:") for w in written for f in w.files}
    live = {f.file_path.removeprefix("file:") for f in (t.data_file for t in
                                                        table.scan().plan_files())}
    uncommitted = ours - live
    assert uncommitted and uncommitted <= orphans  # the dead job's files: referenced by nothing
    assert (ours & live) == (ours & referenced)
    assert bool(ours & live) == (committed > 0)
    if point == "in-catalog-swap":  # what the commit wrote before it died is orphaned too
        assert any(os.path.basename(p).startswith("snap-") for p in orphans)
        assert any(p.endswith(".metadata.json") for p in orphans)
    assert before <= _files(location)  # nothing of the table was deleted by the dying job

    cutoff = int(time.time() * 1000) + 1000
    dry = remove_orphan_files(spark, table, older_than_ms=cutoff, dry_run=True)
    result = remove_orphan_files(spark, table, older_than_ms=cutoff)
    found = {p.removeprefix("file://").removeprefix("file:")
             for p in result.orphan_file_locations}
    assert found == orphans == {p.removeprefix("file://").removeprefix("file:")
                                for p in dry.orphan_file_locations}
    assert result.deleted_files == len(orphans) and result.failed == ()
    assert _files(location) == before | (new & referenced)

    # every snapshot still reads: the current one, the one before the compaction, and (v3)
    # with the lineage the rows had
    table = table.refresh()
    assert _spark_ids(spark, table) == expected
    assert _spark_ids(spark, table, start.snapshot_id) == expected
    assert sorted(tuple(r) for r in ips.read(spark, table, metadata_columns=lineage)
                  .collect()) == with_lineage
    for snapshot in table.metadata.snapshots:  # the appends' snapshots too
        if snapshot.sequence_number < start.sequence_number:
            assert _ids(table, snapshot.snapshot_id) == list(range(60 * snapshot.sequence_number))
    # and the table compacts on: a compaction that is not killed commits the same rows
    again = rewrite_data_files(spark, table, options={"rewrite-all": "true"})
    assert again.groups > 0 and _ids(table) == expected
