"""Small reads without Spark: ``query`` and ``count`` read with the Arrow reader when the work
they plan is small, and start Spark only for large reads (or with ``--spark``).

A local Spark session takes seconds to start (20 s and more on a busy machine) where the Arrow
reader (:meth:`icepark.table.scan.read.DataScan.reader`) reads a few files in a fraction of a
second, so the command plans the scan first and weighs the files it would read: the bytes of
their data and delete files, each file counting at least :data:`FILE_WEIGHT` (opening a file
costs time of its own). Up to :data:`LOCAL_READ_MAX` (256 MiB: about 7 s of reading on one
core here, measured on the quickstart's nested rows at about 35 MB/s, where Spark starts in
about as long and then reads with every core) the Arrow reader reads; above it, Spark does.
``--local-max SIZE`` or ``$ICEPARK_LOCAL_READ_MAX`` changes the limit (``0``: Spark unless
there is nothing to read); ``--spark`` always uses Spark. The rows are the same either way
(the Arrow reader is icepark's reference semantics; the Spark reader must agree with it).

Planning stops as soon as the answer is known: with a ``--limit``, once the files whose rows
all match (no delete file, no residual filter) hold enough rows, since the reader stops there
too; over the limit, at the first file past it. ``count`` takes what metadata can tell: a file
without delete files whose rows all match the filter (by partition or by its column metrics)
counts its ``record_count`` without being read; only the others are read, one column each.

>>> parse_size("256M", "--local-max"), parse_size("1.5G", "--local-max"), parse_size("0", "x")
(268435456, 1610612736, 0)
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass

from icepark.expressions import AlwaysTrue, Expr, StrictMetricsEvaluator
from icepark.spec.manifest import DataFile
from icepark.spec.properties import parse_size
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType
from icepark.table.scan.read import DataScan
from icepark.table.scan.tasks import FileScanTask

LOCAL_READ_MAX = 256 * 2**20
"""Planned bytes up to which ``query`` and ``count`` read without Spark (see above)."""
FILE_WEIGHT = 256 * 2**10
"""The least a planned file weighs: a read of small files goes to Spark past 1,024 of them."""
LOCAL_READ_ENV = "ICEPARK_LOCAL_READ_MAX"

def add_read_options(parser: argparse.ArgumentParser) -> None:
    """``--spark`` and ``--local-max``."""
    group = parser.add_argument_group("engine")
    group.add_argument("--spark", action="store_true",
                       help="read with Spark even when the read is small")
    group.add_argument("--local-max", metavar="SIZE",
                       help="read without Spark (with the Arrow reader) when the planned files "
                            f"total at most SIZE, each counting at least {FILE_WEIGHT // 1024}K "
                            f"(default: ${LOCAL_READ_ENV}, else {LOCAL_READ_MAX // 2**20}M)")


def local_max(args: argparse.Namespace) -> int | None:
    """The most bytes read without Spark; None with ``--spark``."""
    if getattr(args, "spark", False):
        return None
    if args.local_max is not None:
        return parse_size(args.local_max, "--local-max")
    env = os.environ.get(LOCAL_READ_ENV)
    return parse_size(env, f"${LOCAL_READ_ENV}") if env else LOCAL_READ_MAX


def weight(data_file: DataFile, deletes: Iterable[DataFile] = ()) -> int:
    """What reading a data file with its delete files weighs."""
    return max(data_file.file_size_in_bytes, FILE_WEIGHT) + sum(
        max(d.file_size_in_bytes, FILE_WEIGHT) for d in deletes)


@dataclass
class LocalPlan:
    """The files a small read needs (None in :attr:`tasks`: too many, read with Spark)."""

    tasks: list[FileScanTask] | None
    weight: int
    """The bytes weighed so far (all of them for a small read)."""
    counted: int = 0
    """For ``count``: the rows known from metadata, of files not in :attr:`tasks`."""

    @property
    def small(self) -> bool:
        return self.tasks is not None


class _AllMatch:
    """Whether every row of a planned file matches the scan (so metadata counts it)."""

    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._strict: dict[Expr, StrictMetricsEvaluator] = {}

    def __call__(self, task: FileScanTask) -> bool:
        if task.delete_files:
            return False
        residual = task.residual
        if isinstance(residual, AlwaysTrue):
            return True
        evaluator = self._strict.get(residual)
        if evaluator is None:
            evaluator = self._strict[residual] = StrictMetricsEvaluator(self._schema, residual)
        return evaluator.eval(task.data_file)


def plan_rows(scan: DataScan, max_bytes: int) -> LocalPlan:
    """The tasks that give ``scan``'s rows (up to its limit) if they weigh at most
    ``max_bytes``."""
    all_match = _AllMatch(scan.schema())
    tasks: list[FileScanTask] = []
    total = sure_rows = 0
    for task in scan.plan_files(stats_columns=scan.filter_columns()):
        if scan.limit is not None and sure_rows >= scan.limit:
            break
        total += weight(task.data_file, task.delete_files)
        if total > max_bytes:
            return LocalPlan(None, total)
        tasks.append(task)
        if scan.limit is not None and all_match(task):
            sure_rows += task.data_file.record_count
    return LocalPlan(tasks, total)


def plan_count(scan: DataScan, max_bytes: int) -> LocalPlan:
    """The rows of ``scan`` that metadata counts, and the tasks to read for the rest, if they
    weigh at most ``max_bytes``."""
    all_match = _AllMatch(scan.schema())
    tasks: list[FileScanTask] = []
    total = counted = 0
    for task in scan.plan_files(stats_columns=scan.filter_columns()):
        if all_match(task):
            counted += task.data_file.record_count
            continue
        total += weight(task.data_file, task.delete_files)
        if total > max_bytes:
            return LocalPlan(None, total)
        tasks.append(task)
    return LocalPlan(tasks, total, counted)


def read_count(scan: DataScan, plan: LocalPlan) -> int:
    """The rows of a small count: metadata's plus those read with the Arrow reader, one
    column each (a primitive one where the scan has one)."""
    assert plan.tasks is not None
    if not plan.tasks:
        return plan.counted
    fields = scan.schema().fields
    narrow = next((f for f in fields if isinstance(f.field_type, PrimitiveType)), fields[0])
    reader = scan.update(selected_fields=(narrow.name,), limit=None).reader()
    return plan.counted + sum(int(batch.num_rows) for batch in reader.read_tasks(plan.tasks))


__all__ = ["FILE_WEIGHT", "LOCAL_READ_ENV", "LOCAL_READ_MAX", "LocalPlan", "add_read_options",
           "local_max", "parse_size", "plan_count", "plan_rows", "read_count", "weight"]
