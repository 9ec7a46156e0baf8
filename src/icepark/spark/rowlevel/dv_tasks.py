"""The executor side of a merge-on-read delete on a v3 table: positions in, deletion vectors out.

Spec (v3), *Delete Formats*: "Position delete files must not be added to v3 tables" and
"Writers must ensure that there is at most one deletion vector per data file and must merge
new deletes with existing vectors or position delete files"; *Deletion Vectors*: "If a DV is
written for a data file, it must replace all previously written position delete files so that
when a DV is present, readers can safely ignore matching position delete files." And "Multiple
deletion vectors can be stored in the same file. There are no restrictions on the data files
that can be referenced by deletion vectors in the same Puffin file."

Rows arrive with ``file_path``, ``pos`` and :data:`~icepark.spark.rowlevel.delete_tasks.
WHOLE_COLUMN`, sorted by file then position, every row of one data file in one task. A task
collects each data file's new positions, adds the positions the file's existing deletion
vector or position delete files already delete (:class:`DeletionVectorTask.existing`), and
writes one Puffin file holding a vector per data file
(:func:`icepark.io.puffin.deletion_vector.write_deletion_vectors`), named
``<data path>/<job id>-<task id>-00001-deletes.puffin`` so that the driver finds every file of
a failed job by its UUID. The positions of a data file removed whole are not written: the task
reports the file as a :class:`~icepark.spark.rowlevel.delete_tasks.RemovedFile` instead.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.io.arrow.deletes import DeleteCache, sorted_unique
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spark.rowlevel.delete_tasks import WHOLE_COLUMN, NewDeletes, RemovedFile
from icepark.spark.writer.tasks import check_not_aborted, equal_runs, records_batch, task_id
from icepark.spec.manifest import DataFile
from icepark.spec.schema import Schema
from icepark.table.snapshot.locations import LocationProvider


@dataclass(frozen=True, slots=True)
class DeletionVectorTask:
    """What every task of a deletion vector job needs: plain, picklable values."""

    job_id: str
    table_location: str
    properties: Mapping[str, str]
    schema: Schema
    files: Mapping[str, DataFile]
    """The data files whose rows may be deleted, by location (their spec and partition are
    their vectors')."""
    existing: Mapping[str, tuple[DataFile, ...]]
    """Each data file's live deletion vector or position delete files, whose positions the
    new vector must hold too."""
    file_io: FileIO = field(default_factory=ArrowFileIO)

    @property
    def data_path(self) -> str:
        return LocationProvider(self.table_location, self.properties).data_path


def merged_positions(task: DeletionVectorTask, path: str, new: Iterable[Any],
                     cache: DeleteCache) -> Any:
    """The sorted distinct positions of data file ``path`` to delete: ``new`` ones and those
    its existing vector or position delete files delete."""
    parts = [np.asarray(p, dtype=np.int64) for p in new]
    for delete_file in task.existing.get(path, ()):
        found = cache.positions(delete_file).get(path)
        if found is not None:
            parts.append(found)
    if not parts:
        return np.empty(0, dtype=np.int64)
    return sorted_unique(np.concatenate(parts))


def write_vectors(task: DeletionVectorTask, batches: Iterable[pa.RecordBatch],
                  task_name: str | None = None
                  ) -> tuple[list[DataFile], list[RemovedFile], list[NewDeletes]]:
    """Write the sorted positions of one task as one Puffin file of deletion vectors; on any
    error the file is deleted. Returns the vectors' records, the data files removed whole and
    the rows each vector newly deletes."""
    name = task_name or task_id()
    location = f"{task.data_path}/{task.job_id}-{name}-00001-deletes.puffin"
    new: dict[str, list[Any]] = {}
    removed: Counter[str] = Counter()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        whole = pc.fill_null(batch.column(WHOLE_COLUMN), False)
        kept = batch
        if pc.any(whole).as_py():
            paths = batch.column("file_path").filter(whole)
            removed.update({v["values"].as_py(): v["counts"].as_py()
                            for v in pc.value_counts(paths)})
            kept = batch.filter(pc.invert(whole))
        paths, positions = kept.column("file_path"), kept.column("pos")
        for start, end in equal_runs([paths], len(paths)):
            new.setdefault(paths[start].as_py(), []).append(
                positions.slice(start, end - start).to_numpy())
    gone = [RemovedFile(path, n) for path, n in removed.items()]
    if not new:
        return [], gone, []
    cache = DeleteCache(task.file_io, task.schema)
    vectors = {path: merged_positions(task, path, parts, cache) for path, parts in new.items()}
    try:
        written = write_deletion_vectors(task.file_io, location, vectors)
        files = written.data_files(task.files)
        check_not_aborted(task.file_io, task.data_path, task.job_id)
    except BaseException:
        with contextlib.suppress(Exception):
            task.file_io.delete(location)
        raise
    counts = [NewDeletes(path, sum(len(p) for p in parts)) for path, parts in new.items()]
    return files, gone, counts


def map_function(task: DeletionVectorTask) -> Callable[[Iterator[pa.RecordBatch]],
                                                       Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: sorted positions in, pickled records out (one
    :class:`~icepark.spec.manifest.DataFile` per vector, one
    :class:`~icepark.spark.rowlevel.delete_tasks.RemovedFile` per data file removed whole, one
    :class:`~icepark.spark.rowlevel.delete_tasks.NewDeletes` per vector)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files, removed, counts = write_vectors(task, batches)
        yield records_batch([*files, *removed, *counts])

    return run


__all__ = ["DeletionVectorTask", "map_function", "merged_positions", "write_vectors"]
