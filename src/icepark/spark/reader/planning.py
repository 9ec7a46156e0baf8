"""Scan planning in Spark tasks, for scans of many manifests.

Spec, *Scan Planning*: "Scans are planned by reading the manifest files for the current
snapshot." Each data manifest is planned on its own: its live entries are tested against the
scan's partition predicate and column metrics, and each kept data file is matched to the
delete files that apply to it. Manifests are therefore the unit of work. For a scan whose
data manifests (those the manifest list's partition summaries do not rule out) number at
least ``read.data-planning.distributed-min-manifests``, :func:`plan_files` decodes them in
Spark tasks instead of the driver, so that planning time falls with executor cores and the
driver never holds a manifest's bytes or decoded entries:

* the driver reads the manifest list, skips manifests by their summaries and indexes the
  delete manifests (there are few: rewriting position deletes keeps them so), as a local
  plan does;
* the data manifests are spread over Spark tasks (``spark.range(...).mapInArrow``, as on a
  Spark Connect session), balanced by manifest length; each task opens its manifests through
  the table's FileIO properties and runs the same
  :class:`~icepark.table.scan.planner.ManifestPlanner` on them, returning per manifest its
  file tasks as compact records (tuples of primitives, pickled: the encoding forked planning
  workers use, :func:`~icepark.table.scan.tasks.pack`);
* results are collected in waves of tasks whose manifests total at most
  :data:`WAVE_BYTES`, so no one Spark job returns more than ``spark.driver.maxResultSize``
  allows and the driver holds little at once, while each wave still runs on every core;
* the driver rebuilds the tasks and checks deletion vectors as a local full scan does.

The table property ``read.data-planning-mode`` chooses: ``auto`` (the default: distributed
from the threshold on), ``local`` (always on the driver) or ``distributed`` (always in tasks,
whatever the count). The planned tasks are the same either way; only their order differs
(task by task, the manifests of each Spark task in manifest-list order).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import ValidationError
from icepark.expressions.expr import Expr
from icepark.io.fileio import ArrowFileIO, file_io_properties
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.spark.arrow_layout import arrow_schema
from icepark.spark.session import default_parallelism
from icepark.spec.manifest import ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import int_property
from icepark.spec.schema import Schema
from icepark.table.scan.delete_index import DeleteIndex
from icepark.table.scan.planner import ManifestPlanner
from icepark.table.scan.scan import TableScan
from icepark.table.scan.tasks import (
    FileScanTask,
    cyclic_gc_paused,
    pack,
    unpack,
)

PLANNING_MODE = "read.data-planning-mode"
"""Where data manifests are planned: ``auto`` (default), ``local`` or ``distributed``."""
PLANNING_MODES = ("auto", "local", "distributed")
MIN_MANIFESTS = "read.data-planning.distributed-min-manifests"
"""In ``auto`` mode, the number of data manifests from which a scan is planned in tasks."""
MIN_MANIFESTS_DEFAULT = 500
WAVE_BYTES = 32 * 1024 * 1024
"""Manifest bytes planned by one Spark job at most: the pickled tasks it returns are of the
same order (about twice, for a full scan), far below ``spark.driver.maxResultSize``'s default
1 GiB, and what the driver holds at once stays small."""
_TASKS_PER_CORE = 2
_OUTPUT = T.StructType([T.StructField("tasks", T.BinaryType(), False)])


def planning_mode(properties: Mapping[str, str]) -> str:
    """The table's ``read.data-planning-mode`` (a :class:`ValidationError` names a bad one)."""
    mode = properties.get(PLANNING_MODE, "auto").strip().lower()
    if mode not in PLANNING_MODES:
        raise ValidationError(f"Table property {PLANNING_MODE} must be one of "
                              f"{', '.join(PLANNING_MODES)}, not {mode!r}")
    return mode


def plans_in_tasks(properties: Mapping[str, str], data_manifests: int) -> bool:
    """Whether a scan of ``data_manifests`` data manifests is planned in Spark tasks."""
    mode = planning_mode(properties)
    minimum = int_property(properties, MIN_MANIFESTS, MIN_MANIFESTS_DEFAULT, minimum=1)
    if mode == "auto":
        return data_manifests >= minimum
    return mode == "distributed" and data_manifests > 0


@dataclass(frozen=True, slots=True)
class PlanningJob:
    """What every planning task needs: plain, picklable values (the FileIO properties may
    hold credentials and are kept out of ``repr``)."""

    io_properties: Mapping[str, str] = field(repr=False)
    metadata: TableMetadata
    schema: Schema
    row_filter: Expr
    case_sensitive: bool
    include_column_stats: bool
    stats_columns: frozenset[int]
    row_lineage: bool
    index: DeleteIndex
    manifests: tuple[ManifestFile, ...]
    slots: tuple[tuple[int, ...], ...]
    """The manifests (numbers into ``manifests``) each Spark task plans."""

    def planner(self) -> ManifestPlanner:
        planner = ManifestPlanner(
            self.metadata, ArrowFileIO(self.io_properties), self.schema, self.row_filter,
            case_sensitive=self.case_sensitive, workers=1,
            include_column_stats=self.include_column_stats, stats_columns=self.stats_columns,
            row_lineage=self.row_lineage)
        planner.cache = None  # an executor's Python workers come and go: nothing to reuse
        return planner


def plan_files(spark: SparkSession, scan: TableScan, *, include_column_stats: bool = False,
               stats_columns: Iterable[int] = (), row_lineage: bool = False
               ) -> Iterator[FileScanTask]:
    """The tasks of :meth:`TableScan.plan_files <icepark.table.scan.scan.TableScan.plan_files>`
    (same arguments), planned in Spark tasks when the table's properties say so for the
    scan's number of data manifests (see the module docstring), else on the driver."""
    stats = frozenset(stats_columns)
    planner = scan.planner(include_column_stats=include_column_stats, stats_columns=stats,
                           row_lineage=row_lineage)
    snapshot = scan.snapshot()
    if snapshot is None:
        return iter(())
    manifests = snapshot_manifests(scan.io, snapshot)
    data, deletes = planner.select(manifests)
    if not plans_in_tasks({**scan.metadata.properties, **scan.options}, len(data)):
        return planner.plan_selected(data, deletes)
    index = planner.delete_index(deletes)
    job = PlanningJob(file_io_properties(scan.io), scan.metadata, scan.schema(),
                      scan.row_filter, scan.case_sensitive, include_column_stats, stats,
                      row_lineage, index, tuple(data), ())
    return planner.checked(_planned(spark, job), index)


def balanced(lengths: Sequence[int], slots: int) -> list[list[int]]:
    """Items (by index) spread over ``slots`` lists of about equal total length: the longest
    first, each to the least loaded list; each list in index order.

    >>> balanced([10, 1, 1, 8, 3], 2)
    [[0, 1, 2], [3, 4]]
    """
    loads = [0] * slots
    out: list[list[int]] = [[] for _ in range(slots)]
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        slot = min(range(slots), key=loads.__getitem__)
        loads[slot] += lengths[i]
        out[slot].append(i)
    return [sorted(s) for s in out if s]


def waves(lengths: Sequence[int], limit: int = WAVE_BYTES) -> list[list[int]]:
    """Consecutive items (by index) grouped so that each group's lengths total at most
    ``limit`` (an item longer than that is a group of its own).

    >>> waves([5, 5, 5, 20, 1], 10)
    [[0, 1], [2], [3], [4]]
    """
    out: list[list[int]] = []
    total = 0
    for i, length in enumerate(lengths):
        if not out or total + length > limit:
            out.append([])
            total = 0
        out[-1].append(i)
        total += length
    return out


def _planned(spark: SparkSession, job: PlanningJob) -> Iterator[list[FileScanTask]]:
    """Each data manifest's tasks, planned by Spark tasks wave by wave. The waves run from
    this thread, so that they carry its job group and tags (cancelling a job group cancels
    them; progress tracking sees them)."""
    cores = default_parallelism(spark)
    lengths = [m.manifest_length for m in job.manifests]

    def collect(wave: list[int]) -> pa.Table:
        manifests = tuple(job.manifests[i] for i in wave)
        slots = balanced([m.manifest_length for m in manifests],
                         max(1, min(len(manifests), cores * _TASKS_PER_CORE)))
        part = replace(job, manifests=manifests, slots=tuple(tuple(s) for s in slots))
        count = len(slots)
        return spark.range(0, count, 1, count).mapInArrow(map_function(part), _OUTPUT).toArrow()

    for wave in waves(lengths):
        column = collect(wave).column("tasks")
        for chunk in column.chunks:
            for i in range(len(chunk)):  # one manifest's bytes copied out at a time
                with cyclic_gc_paused():
                    yield unpack(pickle.loads(chunk[i].as_py()))  # from our own tasks


def map_function(job: PlanningJob) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: slot numbers in, one record per manifest out (its tasks,
    packed and pickled)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        planner = job.planner()
        schema = arrow_schema(_OUTPUT)
        for numbers in batches:
            for slot in numbers.column(0).to_pylist():
                for number in job.slots[int(slot)]:
                    tasks = planner.tasks(job.manifests[number], job.index)
                    payload = pickle.dumps(pack(tasks), protocol=pickle.HIGHEST_PROTOCOL)
                    yield pa.RecordBatch.from_arrays([pa.array([payload], pa.binary())],
                                                     schema=schema)

    return run


__all__ = ["MIN_MANIFESTS", "MIN_MANIFESTS_DEFAULT", "PLANNING_MODE", "PLANNING_MODES",
           "WAVE_BYTES", "PlanningJob", "balanced", "map_function", "plan_files",
           "planning_mode", "plans_in_tasks", "waves"]
