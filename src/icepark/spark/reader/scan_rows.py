"""The live rows of planned scan tasks, read with Spark's own Parquet reader: the one row reader
behind :func:`icepark.spark.reader.read.read`, :func:`~icepark.spark.reader.read.read_incremental`
and
:func:`icepark.spark.rowlevel.delete.delete_rows`.

Spec, *Scan Planning*: "Data files that match the query filter must be read by the scan" and
"Delete files that match the query filter must be applied to data files at read time". The
tasks' data files are read by field ID (spec, *Column Projection*: "Columns in Iceberg data
files are selected by field id"), or through the table's name mapping when they have none, with
the identity-partition and ``initial-default`` fills of :mod:`icepark.spark.reader.files`; the
delete files the planner attached to each task are applied as anti-joins
(:mod:`icepark.spark.reader.deletes`): position deletes always, equality deletes only in their
partition ("The data file's partition (both spec and partition values) is equal to the delete
file's partition *or* the delete file's partition spec is unpartitioned"). An equality delete
column must be read even when the table dropped it: "If a delete column in an equality delete
file is later dropped from the table, it must still be used when applying the equality
deletes".

On request each row keeps its data file's number (:data:`FILE_NUMBER`, an index into
:attr:`ScanRows.files`) and its position in that file (:data:`ROW_POSITION`, Spark's
``_metadata.row_index``: "position in the data file, starting at 0", as position deletes
count). Rows are tied to files by joining their raw ``_metadata.file_path`` with a small
broadcast table of Spark's path strings per planned file, after the ``condition`` (when given)
has dropped the rows it does not keep: no string work per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature
from icepark.io.arrow.name_mapping import name_mapping_from_properties
from icepark.spark.paths import spark_file_paths, spark_location
from icepark.spark.reader.deletes import FILE_NUMBER, ROW_INDEX, SPARK_PATH, apply_deletes
from icepark.spark.reader.files import group_columns, group_files
from icepark.spark.schema import read_schema
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.types import NestedField
from icepark.table.scan.scan import select_columns
from icepark.table.scan.tasks import FileScanTask
from icepark.table.snapshot.validation import may_apply
from icepark.table.table import Table

ROW_POSITION = ROW_INDEX
"""The column of a row's position in its data file (a long), with ``positions=True``."""

__all__ = ["FILE_NUMBER", "ROW_POSITION", "ScanRows", "check_parquet", "scan_rows"]


@dataclass(frozen=True)
class ScanRows:
    """The live rows of some scan tasks and what they hold."""

    rows: DataFrame
    """The columns of :attr:`schema` in the read layout (:func:`~icepark.spark.schema.read_schema`
    names and types), plus :data:`FILE_NUMBER` and :data:`ROW_POSITION` when asked for."""
    schema: Schema
    """The columns read: the ones asked for plus the equality delete columns (those dropped
    from the table as extra top-level ``__icepark_eq_<id>`` columns)."""
    files: tuple[DataFile, ...]
    """The data files read; :data:`FILE_NUMBER` is an index into it."""


def scan_rows(spark: SparkSession, table: Table, tasks: Sequence[FileScanTask],
              schema: Schema, names: Sequence[str], *, condition: Column | None = None,
              positions: bool = False, case_sensitive: bool = True) -> ScanRows:
    """The rows of ``tasks``' data files that none of their delete files deletes, with the
    columns ``names`` (full dotted names of ``schema``, ``*`` for all), kept only where
    ``condition`` (a Spark condition over those columns) is true; with ``positions``, each row
    also has its file's number and its position in the file.

    Raises :class:`~icepark.errors.UnsupportedFeature` for a non-Parquet data or delete file.
    """
    metadata = table.metadata
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    deletes: dict[str, list[DataFile]] = {}
    files: dict[str, DataFile] = {}
    for task in tasks:
        check_parquet(task.data_file, task.data_file)
        files.setdefault(task.data_file.file_path, task.data_file)
        applying = deletes.setdefault(task.data_file.file_path, [])
        for d in task.delete_files:
            check_parquet(d, task.data_file)
            if (d.content is FileContent.POSITION_DELETES
                    or may_apply(d, task.data_file, unpartitioned)):
                applying.append(d)
    equality_ids = {i for found in deletes.values() for d in found
                    if d.content is FileContent.EQUALITY_DELETES for i in d.equality_ids or ()}
    extended = _with_equality_columns(metadata, schema, names, equality_ids, case_sensitive)
    if not files:
        extra = [T.StructField(FILE_NUMBER, T.IntegerType(), False),
                 T.StructField(ROW_POSITION, T.LongType(), False)] if positions else []
        empty = T.StructType([*read_schema(extended).fields, *extra])
        return ScanRows(spark.createDataFrame([], empty), extended, ())

    tagged = positions or any(deletes.values())
    specs = {s.spec_id: s for s in metadata.partition_specs}
    mapping = name_mapping_from_properties(metadata.properties)
    frames, forms = [], {}
    for group in group_files(table.io, list(files.values()), extended, specs, mapping):
        raw = spark.read.schema(group.read_type).parquet(
            *(spark_location(p) for p in group.paths))
        columns = group_columns(group, extended)
        if tagged:
            forms.update(spark_file_paths(raw))
            columns += [F.col("_metadata.file_path").alias(SPARK_PATH),
                        F.col("_metadata.row_index").alias(ROW_INDEX)]
        frames.append(raw.select(*columns))
    df = reduce(DataFrame.union, frames)
    if condition is not None:
        df = df.filter(condition)
    if tagged:
        df = apply_deletes(spark, df, extended, deletes, forms, keep_file=positions)
    return ScanRows(df, extended, tuple(files.values()))


def check_parquet(f: DataFile, data_file: DataFile) -> None:
    """Raise :class:`~icepark.errors.UnsupportedFeature` unless ``f`` (``data_file`` or one of
    its delete files) is a Parquet file."""
    if f.is_deletion_vector:
        raise UnsupportedFeature(
            f"Cannot read {data_file.file_path}: it has a deletion vector ({f.file_path}), a "
            "format version 3 feature icepark does not read yet")
    if f.file_format is not FileFormat.PARQUET:
        raise UnsupportedFeature(
            f"Cannot read {data_file.file_path} with Spark: only Parquet files are supported, "
            f"and {f.file_path} is {f.file_format}")


def _with_equality_columns(metadata: TableMetadata, full: Schema, names: Sequence[str],
                           equality_ids: set[int], case_sensitive: bool) -> Schema:
    """The columns to read: ``names`` (of ``full``) plus the equality delete columns, those
    still in the table by their names, those dropped from it as extra top-level columns typed
    as when they were last there."""
    present = sorted(i for i in equality_ids if full.field_by_id(i) is not None)
    schema = select_columns(full, [*names, *(n for i in present
                                             if (n := full.find_column_name(i)) is not None)],
                            case_sensitive)
    extras = [_dropped_field(metadata, fid) for fid in sorted(equality_ids - set(present))]
    return Schema((*schema.fields, *extras), schema.schema_id) if extras else schema


def _dropped_field(metadata: TableMetadata, field_id: int) -> NestedField:
    """An equality delete column no longer in the table, from the last schema that had it."""
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id, reverse=True):
        f = schema.field_by_id(field_id)
        if f is None:
            continue
        if schema.parent_id(field_id) is not None:
            raise UnsupportedFeature(
                f"Equality delete column {f.name!r} ({field_id}) was dropped from the table "
                "while nested in a struct; the Spark read path cannot read it")
        return NestedField.optional(field_id, f"__icepark_eq_{field_id}", f.field_type)
    raise UnsupportedFeature(f"Equality delete column {field_id} is in no schema of the "
                             "table; cannot type it for the Spark read path")
