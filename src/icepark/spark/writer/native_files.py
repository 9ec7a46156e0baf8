"""The data files of a native write job, from its directory: ``DataFile`` records from footers.

Spark's own Parquet writer (:mod:`icepark.spark.writer.native`) returns nothing but the files
it leaves in the job directory, so the driver lists it afterwards and reads each file's footer,
as the reference implementation does when it imports existing files. Spec, *Manifests*:
``value_counts`` is the "number of values in the column (including null and NaN values)";
counts, sizes, bounds and "all row group offsets in a Parquet file" (``split_offsets``) come
from the footer through :func:`icepark.io.parquet.metrics.compute_metrics`. A footer has no NaN
counts, but Spark's writer (parquet-mr) orders its float statistics with NaN last, so a file
whose float and double minimums and maximums are all numbers has no NaN and exact bounds; a
file with a NaN maximum has its float and double columns read back for them
(:func:`~icepark.io.parquet.metrics.read_float_stats`), as the Python writers compute them
while writing.

Every footer must give each column the field ID of the table's column of its name (Appendix A,
*Parquet*: "Column IDs are required"); a file without them is :class:`MissingFieldIds`, and
nothing of the job is committed.

A file's partition tuple is parsed from its directories
(:mod:`icepark.spark.writer.partition_dirs`).
Files are recognised by the job's name prefix (``<job id>-...parquet``); anything else the
writer left there (Hadoop's ``.crc`` checksums) is deleted.

Then each file moves, under its own name, to the directory every icepark writer gives its
partition (:func:`place_files`): ``<data path>/<partition path>/``, the partition path being
the spec's ``<partition field name>=<human-readable value>/...`` (spec, *Partition
Transforms*: day ``2024-03-05``, hour ``2024-03-05-10``, month ``2024-03``, year ``2024``,
an identity value as its readable text, URL-encoded;
:meth:`~icepark.spec.partitioning.PartitionSpec.partition_path`), so that Spark's writer and
the Python writers lay out a table alike: ``data/ts_day=2024-03-05/country=us/``. Spark's own
directories cannot be those: its ``partitionBy`` drops the partition columns from the files,
and an identity partition is named as its data column. The files are not part of the table
before the commit, so moving them is allowed (spec, *File System Operations*: "Files are not
moved or altered once they are written" applies to a table's files); Spark's committer moves
every file it writes anyway.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from icepark.errors import CorruptFile
from icepark.io.arrow.parquet_file import read_footer
from icepark.io.arrow.projection import field_id_of
from icepark.io.fileio import ArrowFileIO, FileInfo, FileIO
from icepark.io.parquet.metrics import MetricsConfig, compute_metrics, read_float_stats
from icepark.spark.writer.partition_dirs import parse_partition
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType
from icepark.table.scan.tasks import parallel_map

FOOTER_THREADS = 8
"""How many footers the driver reads at once."""


class MissingFieldIds(CorruptFile):
    """Spark wrote a file whose columns lack the field IDs of the table's columns."""


def collect_data_files(  # noqa: PLR0917 - the job's directory, its files and their table
        file_io: FileIO, job_dir: str, job_id: str, schema: Schema, spec: PartitionSpec,
        properties: Mapping[str, str], sort_order_id: int | None) -> list[DataFile]:
    """One ``DataFile`` per Parquet file of the job in ``job_dir`` (empty files are deleted,
    not returned); other files there are deleted."""
    listed = list(file_io.list_prefix(job_dir))
    data = [i for i in listed if _is_data_file(i.location, job_id)]
    for info in listed:
        if not _is_data_file(info.location, job_id):
            with contextlib.suppress(Exception):
                file_io.delete(info.location)
    types = [f.field_type for f in spec.partition_type(schema).fields]
    config = MetricsConfig.from_properties(properties, schema)
    reader = _FooterReader(file_io, job_dir.rstrip("/"), schema, spec, types, config,
                           sort_order_id)
    if not data:
        return []
    found = list(parallel_map(reader.read, data, min(FOOTER_THREADS, len(data))))
    return [f for f in found if f is not None]


def _is_data_file(location: str, job_id: str) -> bool:
    name = location.rsplit("/", 1)[-1]
    return name.startswith(f"{job_id}-") and name.endswith(".parquet")


class _FooterReader:
    def __init__(  # noqa: PLR0917 - everything a record needs
            self, file_io: FileIO, job_dir: str, schema: Schema, spec: PartitionSpec,
            types: Sequence[IcebergType], config: MetricsConfig,
            sort_order_id: int | None) -> None:
        self.io, self.job_dir, self.schema, self.spec = file_io, job_dir, schema, spec
        self.types, self.config, self.sort_order_id = types, config, sort_order_id
        self.ids = {f.name: f.field_id for f in schema.fields}

    def read(self, info: FileInfo) -> DataFile | None:
        if not info.location.startswith(self.job_dir + "/"):
            raise CorruptFile(f"{info.location} is not inside the job directory {self.job_dir}")
        *directories, _ = info.location[len(self.job_dir) + 1:].split("/")
        partition = parse_partition(directories, self.types)
        with self.io.new_input(info.location).open() as f:
            footer = read_footer(f, info.location)
            _check_field_ids(footer, self.ids, info.location)
            floats = (read_float_stats(f, self.schema, footer, location=info.location)
                      if footer.num_rows else None)
        if footer.num_rows == 0:
            self.io.delete(info.location)
            return None
        metrics = compute_metrics(footer, self.schema, self.config, floats)
        return DataFile(
            file_path=info.location,
            file_format=FileFormat.PARQUET,
            partition=partition,
            record_count=metrics.record_count,
            file_size_in_bytes=info.size,
            spec_id=self.spec.spec_id,
            column_sizes=metrics.column_sizes,
            value_counts=metrics.value_counts,
            null_value_counts=metrics.null_value_counts,
            nan_value_counts=metrics.nan_value_counts or None,
            lower_bounds=metrics.lower_bounds,
            upper_bounds=metrics.upper_bounds,
            split_offsets=metrics.split_offsets,
            sort_order_id=self.sort_order_id,
        )


def _check_field_ids(footer: Any, ids: Mapping[str, int], location: str) -> None:
    """:class:`MissingFieldIds` unless each column of ``footer`` has the field ID ``ids``
    gives its name."""
    wrong = []
    for f in footer.schema.to_arrow_schema():
        field_id = field_id_of(f)
        if field_id is None or field_id != ids.get(f.name):
            wrong.append(f.name)
    if wrong:
        raise MissingFieldIds(f"Spark wrote {location} without the table's field IDs of "
                              f"column(s) {', '.join(map(repr, wrong))}")


def delete_tree(file_io: FileIO, directory: str, *, settle_seconds: float = 1.0,
                max_rounds: int = 10) -> int:
    """Delete every file below ``directory``; best effort. Returns how many were deleted.

    When a Spark job fails, tasks cancelled with it may still be closing files, so the listing
    is repeated, ``settle_seconds`` apart, until a round finds nothing (at most
    ``max_rounds``). Empty directories of a local file system are removed too.
    """
    deleted = 0
    for round_number in range(max_rounds):
        found: list[FileInfo] = []
        with contextlib.suppress(Exception):
            found = list(file_io.list_prefix(directory))
        for info in found:
            with contextlib.suppress(Exception):
                file_io.delete(info.location)
        deleted += len(found)
        if not found and round_number > 0:
            break
        time.sleep(settle_seconds)
    remove_empty_dirs(directory)
    return deleted


def remove_empty_dirs(directory: str) -> None:
    """Remove the empty directories of the tree at ``directory`` (on a local file system)."""
    parts = urlsplit(directory)
    if len(parts.scheme) > 1 and parts.scheme != "file":
        return
    path = parts.path if parts.scheme == "file" else directory
    for root, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(root)


def place_files(file_io: FileIO, files: list[DataFile], data_path: str, schema: Schema,
                spec: PartitionSpec) -> list[DataFile]:
    """``files`` moved to their partition's directory below ``data_path`` (see the module
    docstring), with their new locations; if a move fails, the files moved so far are
    deleted (the caller deletes the job directory)."""
    moved: list[str] = []

    def place(data_file: DataFile) -> DataFile:
        name = data_file.file_path.rsplit("/", 1)[-1]
        path = spec.partition_path(data_file.partition, schema) if spec.fields else ""
        target = f"{data_path.rstrip('/')}/{path}/{name}" if path else \
            f"{data_path.rstrip('/')}/{name}"
        move_file(file_io, data_file.file_path, target)
        moved.append(target)
        return replace(data_file, file_path=target)

    try:
        placed = list(parallel_map(place, files, min(FOOTER_THREADS, max(len(files), 1))))
    except BaseException:
        for location in moved:
            with contextlib.suppress(Exception):
                file_io.delete(location)
        raise
    return placed


def move_file(file_io: FileIO, source: str, target: str) -> None:
    """Move a fresh file: :meth:`ArrowFileIO.rename`, or a copy and a delete with another
    FileIO."""
    if isinstance(file_io, ArrowFileIO):
        file_io.rename(source, target)
        return
    with file_io.new_input(source).open() as src, file_io.new_output(target).create() as dst:
        while chunk := src.read(_COPY_CHUNK):
            dst.write(chunk)
    file_io.delete(source)


_COPY_CHUNK = 8 << 20

__all__ = ["FOOTER_THREADS", "MissingFieldIds", "collect_data_files", "delete_tree",
           "move_file", "place_files", "remove_empty_dirs"]
