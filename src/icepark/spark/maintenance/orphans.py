"""``remove_orphan_files`` as a Spark job: the listing and the deletes of a large table location
run in Spark tasks.

What an orphan is, which files are candidates and how locations compare are the table layer's
(:mod:`icepark.table.maintenance.orphans`, quoting the spec): files under the location that
no snapshot, manifest, metadata file or statistics file of the table references, last modified
before ``older_than_ms`` (default: three days ago), not hidden (``_``/``.`` names), compared by
path with ``equal_schemes``/``equal_authorities`` and ``prefix_mismatch_mode`` as the reference
implementation's procedure of the same name does.

Where the work runs:

* **Listing.** The driver lists the location level by level, at most
  :data:`DRIVER_DEPTH` levels deep, and hands a directory's subdirectories to Spark as soon as
  it has more than :data:`DRIVER_SUBDIRS` of them (the reference's limits); each task lists
  its directories recursively and sends back the candidates only. A location with few
  directories is listed in the driver alone, with no Spark job. So is any location when the
  table's FileIO cannot list one level
  (:class:`~icepark.table.maintenance.orphans.ListsDirectories`) or the session has no
  ``SparkContext`` (Spark Connect).
* **References** are read in the driver, manifests on a few threads; the comparison runs in the
  driver over the candidates.
* **Deletes.** Right before deleting, the table is loaded again and files that a commit since
  then references are kept. More than :data:`DRIVER_DELETES` orphans are deleted by Spark tasks,
  fewer by the driver. A failed delete leaves its file and is reported in ``failed``.

``progress`` is called with the progress of the Spark jobs, as for the other entry points.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from icepark.io.fileio import FileInfo, FileIO
from icepark.spark.progress import ProgressCallback, spark_context, track
from icepark.spark.tables import TableLike, resolve
from icepark.table.maintenance.orphans import (
    ListsDirectories,
    OrphanFilesResult,
    OrphanSearch,
    PrefixMismatchMode,
    delete_files,
    is_hidden,
    list_files,
    walk,
)

DRIVER_DEPTH = 3
"""Directory levels the driver lists before handing the rest to Spark tasks."""
DRIVER_SUBDIRS = 10
"""A directory with more subdirectories than this has them listed by Spark tasks."""
DRIVER_DELETES = 1_000
"""More orphans than this are deleted by Spark tasks."""
_TASKS_PER_CORE = 4

_Listed = tuple[str, int, int]  # location, size, modified ms: what a task sends back


def _candidates_below(file_io: FileIO, directories: Iterable[str], root: str,
                      older_than_ms: int, partition_prefixes: Sequence[str]
                      ) -> Iterator[_Listed]:
    """The files below each directory (recursively) that are old enough and not hidden below
    ``root``: runs in a Spark task."""
    for directory in directories:
        for info in file_io.list_prefix(directory):
            modified = info.modified_ms
            if (modified is not None and modified < older_than_ms
                    and info.location.startswith(root + "/")
                    and not is_hidden(info.location[len(root):], partition_prefixes)):
                yield info.location, info.size, modified


def _delete_task(file_io: FileIO, locations: Iterable[str]) -> Iterator[str]:
    """Delete the files of one partition; yields those whose delete failed."""
    yield from delete_files(file_io, locations)


def _partitions(context: Any, count: int) -> int:
    return max(1, min(count, int(context.defaultParallelism) * _TASKS_PER_CORE))


def list_location(spark: SparkSession, file_io: FileIO, search: OrphanSearch) -> list[FileInfo]:
    """The files under ``search.location``: the first levels in the driver, wide directories
    in Spark tasks (see the module docstring). Task results are the candidates only."""
    context = spark_context(spark)
    if context is None or not isinstance(file_io, ListsDirectories):
        return list(list_files(file_io, search.location))
    files, pending = walk(file_io, search.location, search.partition_prefixes,
                          max_depth=DRIVER_DEPTH, max_subdirs=DRIVER_SUBDIRS)
    if not pending:
        return files
    root, cutoff = search.location, search.older_than_ms
    prefixes = tuple(search.partition_prefixes)
    rdd = context.parallelize(sorted(pending), _partitions(context, len(pending)))
    listed = rdd.mapPartitions(
        lambda dirs: _candidates_below(file_io, dirs, root, cutoff, prefixes)).collect()
    return [*files, *(FileInfo(location, size, modified) for location, size, modified in listed)]


def delete_locations(spark: SparkSession, file_io: FileIO, locations: Sequence[str]
                     ) -> list[str]:
    """Delete the files, in Spark tasks when there are many; the locations that failed."""
    context = spark_context(spark)
    if context is None or len(locations) <= DRIVER_DELETES:
        return delete_files(file_io, locations)
    rdd = context.parallelize(list(locations), _partitions(context, len(locations)))
    return list(rdd.mapPartitions(lambda part: _delete_task(file_io, part)).collect())


def remove_orphan_files(spark: SparkSession, table: TableLike, *,
                        older_than_ms: int | None = None, location: str | None = None,
                        dry_run: bool = False,
                        equal_schemes: Mapping[str, str] | None = None,
                        equal_authorities: Mapping[str, str] | None = None,
                        prefix_mismatch_mode: str | PrefixMismatchMode = "error",
                        progress: ProgressCallback | None = None) -> OrphanFilesResult:
    """Delete the files under ``location`` (default: the table location; it must lie inside
    it) that ``table`` does not reference and that were last modified before
    ``older_than_ms`` (default: three days ago); ``dry_run`` only finds them.

    ``equal_schemes`` (added to ``{"s3n": "s3", "s3a": "s3"}``; a key may list several
    schemes, comma-separated) and ``equal_authorities`` say which prefixes are the same file
    system; a file referenced only under another prefix fails the run (``"error"``), is kept
    (``"ignore"``) or deleted (``"delete"``) as ``prefix_mismatch_mode`` says. Bad options and
    a table whose ``gc.enabled`` is false raise :class:`~icepark.errors.ValidationError`
    before anything is listed; a manifest that cannot be read fails the run before any
    delete."""
    target = resolve(spark, table)
    search = OrphanSearch(target, older_than_ms=older_than_ms, location=location,
                          equal_schemes=equal_schemes, equal_authorities=equal_authorities,
                          prefix_mismatch_mode=prefix_mismatch_mode)
    with track(spark, progress):
        orphans = search.orphans(list_location(spark, target.io, search))
        if dry_run:
            return search.result(orphans, dry_run=True)
        orphans = search.recheck(orphans)
        failed = delete_locations(spark, target.io, [i.location for i in orphans])
    return search.result(orphans, dry_run=False, failed=failed)


__all__ = ["OrphanFilesResult", "remove_orphan_files"]
