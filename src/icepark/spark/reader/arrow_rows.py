"""The live rows of planned data files, read by icepark's Arrow reader inside Spark tasks: the
Python data path of :func:`icepark.spark.reader.scan_rows.scan_rows`, for files Spark's own
Parquet reader cannot open (an object store without its Hadoop connector,
:mod:`icepark.spark.storage`).

Each data file is read whole by one ``mapInArrow`` task with
:class:`~icepark.io.arrow.reader.ArrowReader`, the reference semantics of every read: columns
by field ID or the table's name mapping, identity partition values and ``initial-default`` s
for columns a file lacks, and the delete files the planner attached to it applied (spec,
*Scan Planning*: "Delete files that match the query filter must be applied to data files at
read time"): position deletes and deletion vectors by position, equality deletes in their
partition. The rows come out in the same form as Spark's reader gives them (the read layout
of :func:`~icepark.spark.schema.read_schema`: uuid as 16 bytes, nanosecond timestamps as
``long``), with the same extra columns: the file's number and the row's position in it
("position in the data file, starting at 0", the reader's ``_pos``), and the metadata columns
(``_file``, ``_pos``, ``_spec_id``, and row lineage with the spec's inheritance: "Replace any
null or missing ``_row_id`` with the data file's ``first_row_id`` plus the row's ``_pos``").

The callers' Spark condition is applied to these rows as to Spark's. A read may also give the
same condition as an Iceberg expression, which the Arrow reader applies too, skipping the row
groups whose statistics rule it out; without one (a copy-on-write rewrite reads the rows a
filter does *not* match) every row is read.
What crosses to the tasks is :class:`ArrowReadJob`, plain values; its FileIO properties may
hold credentials and are kept out of its ``repr``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T  # noqa: N812

from icepark.expressions.expr import ALWAYS_TRUE, Expr
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY, parse_name_mapping
from icepark.io.arrow.reader import ArrowReader
from icepark.io.fileio import ArrowFileIO, file_io_properties
from icepark.spark.arrow_layout import arrow_schema, spark_array
from icepark.spark.reader.deletes import FILE_NUMBER, ROW_INDEX
from icepark.spark.schema import read_schema
from icepark.spark.session import default_parallelism
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.table.table import Table

_TASKS_PER_CORE = 4
FileEntry = tuple[DataFile, tuple[DataFile, ...], int | None]
"""A data file, the delete files that apply to it and its data sequence number."""


@dataclass(frozen=True, slots=True)
class ArrowReadJob:
    """What every task of one read needs: plain, picklable values."""

    io_properties: Mapping[str, str] = field(repr=False)
    schema: Schema
    """The columns to read (in the read layout's names)."""
    full_schema: Schema
    """The schema the columns and the row filter name."""
    specs: tuple[PartitionSpec, ...]
    name_mapping: str | None
    files: tuple[FileEntry, ...]
    positions: bool
    metadata_columns: tuple[str, ...]
    output: T.StructType
    row_filter: Expr = ALWAYS_TRUE
    """Rows that may be left out (the caller filters the rows again): it prunes row groups."""
    case_sensitive: bool = True

    def reader(self) -> ArrowReader:
        mapping = None if self.name_mapping is None else parse_name_mapping(self.name_mapping)
        wanted = [*self.metadata_columns, *(("_pos",) if self.positions else ())]
        return ArrowReader(ArrowFileIO(self.io_properties), self.schema,
                           name_mapping=mapping, metadata_columns=list(dict.fromkeys(wanted)),
                           partition_specs={s.spec_id: s for s in self.specs},
                           full_schema=self.full_schema, row_filter=self.row_filter,
                           case_sensitive=self.case_sensitive)


def arrow_rows(spark: SparkSession, table: Table, schema: Schema, files: Sequence[FileEntry], *,
               full_schema: Schema | None = None, positions: bool = False,
               metadata_columns: Sequence[str] = (),
               metadata_fields: Sequence[T.StructField] = (),
               row_filter: Expr = ALWAYS_TRUE, case_sensitive: bool = True) -> DataFrame:
    """The live rows of the data ``files`` (each with its delete files) with the columns of
    ``schema`` (of ``full_schema``, default the table's) in the read layout, then, with
    ``positions``, :data:`FILE_NUMBER` (the file's index in ``files``) and :data:`ROW_INDEX`,
    then the ``metadata_columns`` (typed as ``metadata_fields``). Rows that do not match
    ``row_filter`` may be left out, not all are: the caller filters again."""
    metadata = table.metadata
    extra = [T.StructField(FILE_NUMBER, T.IntegerType(), False),
             T.StructField(ROW_INDEX, T.LongType(), False)] if positions else []
    output = T.StructType([*read_schema(schema).fields, *extra, *metadata_fields])
    job = ArrowReadJob(
        file_io_properties(table.io), schema, full_schema or metadata.schema(),
        tuple(metadata.partition_specs), metadata.properties.get(NAME_MAPPING_PROPERTY),
        tuple(files), positions, tuple(metadata_columns), output, row_filter, case_sensitive)
    count = len(files)
    parts = max(1, min(count, default_parallelism(spark) * _TASKS_PER_CORE))
    return spark.range(0, count, 1, parts).mapInArrow(map_function(job), output)


def map_function(job: ArrowReadJob) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: file numbers in, their rows out."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        reader = job.reader()
        target = arrow_schema(job.output)
        for numbers in batches:
            for number in numbers.column(0).to_pylist():
                yield from read_file(job, reader, int(number), target)

    return run


def read_file(job: ArrowReadJob, reader: ArrowReader, number: int, target: Any) -> Iterator[Any]:
    """The batches of file ``number`` of the job in the Arrow form of ``job.output``."""
    data_file, deletes, sequence_number = job.files[number]
    fields = job.schema.fields
    for batch in reader.read_task(data_file, deletes, data_sequence_number=sequence_number):
        columns = [spark_array(batch.column(i), f.field_type, target.field(i).type)
                   for i, f in enumerate(fields)]
        if job.positions:
            columns += [pa.repeat(pa.scalar(number, pa.int32()), batch.num_rows),
                        batch.column(batch.schema.get_field_index("_pos"))]
        for name in job.metadata_columns:
            columns.append(batch.column(batch.schema.get_field_index(name)).cast(
                target.field(len(columns)).type))
        yield pa.RecordBatch.from_arrays(columns, schema=target)


__all__ = ["ArrowReadJob", "FileEntry", "arrow_rows", "map_function", "read_file"]
