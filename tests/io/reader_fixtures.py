"""Helpers of the reader tests: write data and delete files with known contents, read them back."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.expressions import ALWAYS_TRUE, Expr
from icepark.io.arrow.reader import ArrowReader
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.data_writer import write_data_files
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.io.parquet.metrics import split_offsets
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import UNPARTITIONED, PartitionSpec
from icepark.spec.schema import Schema

IO = ArrowFileIO()


class Files:
    """Names files in a test directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._counter = itertools.count()

    def __call__(self) -> str:
        return str(self.root / f"{next(self._counter):05d}.parquet")


def write(files: Files, schema: Schema, data: Any, *, spec: PartitionSpec = UNPARTITIONED,
          partition: tuple[Any, ...] = (), properties: Mapping[str, str] | None = None
          ) -> DataFile:
    """One data file of ``data`` (a pydict, batch or table) written by icepark's writer."""
    batch = pa.Table.from_pydict(data, schema=to_arrow_schema(schema)) if isinstance(
        data, dict) else data
    [data_file] = write_data_files(IO, files, schema, spec, partition, properties or {},
                                   [batch])
    return data_file


def write_row_groups(files: Files, schema: Schema, data: dict[str, list[Any]],
                     rows_per_group: int, *, partition: tuple[Any, ...] = (),
                     spec_id: int = 0) -> DataFile:
    """A data file with IDs and row groups of ``rows_per_group`` rows (pyarrow's writer)."""
    table = pa.Table.from_pydict(data, schema=to_arrow_schema(schema))
    return write_arrow(files, table, rows_per_group, partition=partition, spec_id=spec_id)


def write_arrow(files: Files, table: Any, rows_per_group: int | None = None, *,
                partition: tuple[Any, ...] = (), spec_id: int = 0) -> DataFile:
    """A data file of exactly ``table`` (with or without field IDs), and its record."""
    location = files()
    pq.write_table(table, location, row_group_size=rows_per_group, store_schema=False)
    metadata = pq.ParquetFile(location).metadata
    return DataFile(location, FileFormat.PARQUET, partition, table.num_rows,
                    Path(location).stat().st_size, spec_id=spec_id,
                    split_offsets=split_offsets(metadata))


def position_deletes(files: Files, schema: Schema, deletes: dict[str, list[int]], *,
                     spec: PartitionSpec = UNPARTITIONED,
                     partition: tuple[Any, ...] = ()) -> DataFile:
    writer = PositionDeleteWriter(IO, files, schema, spec, partition, {})
    with writer:
        writer.write(position_deletes_batch(deletes))
    [delete_file] = writer.close()
    return delete_file


def equality_deletes(files: Files, schema: Schema, equality_ids: Sequence[int],
                     data: dict[str, list[Any]], *, spec: PartitionSpec = UNPARTITIONED,
                     partition: tuple[Any, ...] = ()) -> DataFile:
    writer = EqualityDeleteWriter(IO, files, schema, spec, partition, {}, equality_ids)
    with writer:
        writer.write(pa.Table.from_pydict(data))
    [delete_file] = writer.close()
    return delete_file


@dataclass(frozen=True)
class Task:
    """A scan task with the shape of ``icepark.table.scan.tasks.FileScanTask``."""

    data_file: DataFile
    delete_files: tuple[DataFile, ...] = ()
    residual: Expr = ALWAYS_TRUE
    spec_id: int = 0
    start: int = 0
    length: int | None = None
    partition: tuple[Any, ...] = field(default=())
    data_sequence_number: int | None = None


def task(data_file: DataFile, *delete_files: DataFile, residual: Expr = ALWAYS_TRUE,
         start: int = 0, length: int | None = None) -> Task:
    return Task(data_file, delete_files, residual, data_file.spec_id, start, length,
                data_file.partition)


def read(schema: Schema, tasks: Iterable[Task], **options: Any) -> Any:
    """Every row of ``tasks`` read with ``schema`` as the projection."""
    return ArrowReader(IO, schema, **options).to_table(tasks)


def rows(table: Any) -> list[dict[str, Any]]:
    return list(table.to_pylist())


def strip_field_ids(schema: Any) -> Any:
    """``schema`` without any field metadata at any level (a file written without IDs)."""
    def strip_field(f: Any) -> Any:
        return pa.field(f.name, strip_type(f.type), nullable=f.nullable)

    def strip_type(t: Any) -> Any:
        if pa.types.is_struct(t):
            return pa.struct([strip_field(t.field(i)) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            return pa.map_(strip_field(t.key_field), strip_field(t.item_field))
        if pa.types.is_list(t):
            return pa.list_(strip_field(t.value_field))
        return t

    return pa.schema([strip_field(f) for f in schema])
