"""Writing a Spark DataFrame to an Iceberg table: files written in the tasks, one commit.

The pipeline (:func:`write`):

1. **Check by name, before any file exists.** The DataFrame's columns are matched to the table
   schema by name, nested too (:func:`icepark.table.snapshot.writes.check_columns` and the Arrow
   conformer on an empty batch of the DataFrame's Arrow schema). Spec, *Schema Evolution*, the
   allowed promotions are the only casts (int to long, float to double, decimal precision
   widening); spec, *Default values*: "The write default for a field must be written if a
   field is not supplied to a write. If the write default for a required field is not set, the
   writer must fail." A column the table does not have is an error unless ``merge_schema``,
   which first adds it (``update_schema().union_by_name``). Nulls in a required column fail
   the job in the task that meets them, naming the column, before anything is committed.
2. **Partition values as Spark columns** (:func:`icepark.spark.transforms.partition_columns`,
   bit-exact with the spec's transforms), then the distribution of the table property
   ``write.distribution-mode``: ``hash`` (the default for a partitioned table, as the
   reference implementation) repartitions by the partition values, ``range`` range-partitions
   by partition values and sort keys (the default for an unpartitioned table with a sort
   order), ``none`` keeps the DataFrame's partitioning. Each task's rows are then sorted by
   partition values and the table's default sort order, whose ID is recorded in every file.
3. **Files are written** (:func:`icepark.spark.writer.data_files.write_data_files`, the entry point
   the copy-on-write delete uses too) by one of two writers, then committed once:

   * the **native writer** (:mod:`icepark.spark.writer.native`): Spark's own Parquet writer,
     used when every column gets a field ID and its Appendix A type from it (primitives but
     uuid, fixed and time, and structs of them), unless the table property
     ``write.spark.native-writer.enabled`` is ``false``; the driver builds the records from
     the files' footers; ``write.target-file-size-bytes`` becomes Spark's
     ``maxRecordsPerFile`` from the expected bytes per row (:mod:`icepark.spark.writer.file_size`);
   * the **Python-worker writer**: ``mapInArrow`` tasks (:mod:`icepark.spark.writer.tasks`)
     return pickled ``DataFile`` records (lists, maps, uuid, fixed, time, overwrite filters).

   On any failure every file of the job is deleted (found by the job UUID in the file names,
   or the native job's directory); on :class:`~icepark.errors.CommitStateUnknown` nothing is.
4. **Modes**: ``append`` ("Only data files were added and no files were removed");
   ``overwrite`` with a filter (every written row must match it, checked in the tasks; files
   whose rows all match it are removed in the same ``overwrite`` snapshot) or without one
   (every live file is removed); ``dynamic`` replaces exactly the partitions present in the
   written files: the live data files of the default spec whose partition tuple equals one of
   the new files' tuples are removed.

The v3 types take these Spark forms (:mod:`icepark.spark.schema`): ``timestamp_ns`` and
``timestamptz_ns`` Spark timestamps (microseconds, each exactly that many thousand
nanoseconds) or ``LongType`` nanoseconds since the epoch, both exact, written by the
Python-worker writer as ``TIMESTAMP(NANOS)``; ``unknown`` a ``NullType`` column or one whose
values are all null, never stored ("Must be optional with ``null`` defaults; not stored in
data files"), a non-null value failing the job; ``variant`` ``VariantType``; ``geometry``
and ``geography`` Spark's spatial type of the column's SRID, or WKB as ``BinaryType``
(:mod:`icepark.spark.geo`).

Measured (DESIGN.md, and ``benchmarks/bench_spark_write.py``): moving rows from the JVM to the
Python workers bounds the Python-worker writer at about 0.5-0.6x of Spark's own Parquet writer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import CommitStateUnknown, IncompatibleColumn, ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spark import geo
from icepark.spark.nanos import NANO_TYPES
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.schema import default_column, quote, to_iceberg, to_spark_type
from icepark.spark.session import case_sensitive
from icepark.spark.writer.columns import (
    VALIDATION_PREFIX,
    check_schema,
    checked_cast,
    match_names,
    renamed,
    with_example,
)
from icepark.spark.writer.data_files import (
    collect_files,
    distribute,
    new_task,
    task_error,
    write_data_files,
)
from icepark.spark.writer.distribution import DISTRIBUTION_MODE, distribution_mode
from icepark.spark.writer.native import NATIVE_WRITER_PROPERTY
from icepark.spec.manifest import DataFile, ManifestContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.types import UNKNOWN, NestedField, PrimitiveType
from icepark.table.snapshot.producer import branch_head
from icepark.table.snapshot.validation import as_expr
from icepark.table.table import Table

MODES = ("append", "overwrite", "dynamic")
JOB_ID_PROPERTY = "icepark.write-job-id"
"""Snapshot summary property: the UUID of the write job that committed the snapshot."""


def write(df: DataFrame, table: Table, mode: str = "append", *,
          overwrite_filter: str | Expr | None = None, branch: str = MAIN_BRANCH,
          snapshot_properties: Mapping[str, str] | None = None,
          merge_schema: bool = False, progress: ProgressCallback | None = None) -> Table:
    """Write ``df`` to ``table`` in one snapshot (see the module docstring) and return the
    table, refreshed to the new version. ``progress`` receives the Spark job's progress
    (:func:`icepark.spark.progress.track`), the last report with the rows and bytes written.

    ``mode`` is ``append``, ``overwrite`` (by ``overwrite_filter``, default: everything) or
    ``dynamic`` (replace the partitions present in the written data).
    """
    if mode not in MODES:
        raise ValidationError(f"Unknown write mode {mode!r}: use one of {', '.join(MODES)}")
    if overwrite_filter is not None and mode != "overwrite":
        raise ValidationError(f"An overwrite filter needs mode 'overwrite', not {mode!r}")
    if merge_schema:
        merge_columns(df, table)
    metadata = table.metadata
    schema = metadata.schema()
    row_filter = as_expr(overwrite_filter) if mode == "overwrite" else None
    if row_filter is not None and row_filter != ALWAYS_TRUE:
        from icepark.expressions import bind  # noqa: PLC0415

        bind(row_filter, schema)  # unknown columns fail now, before any file
    prepared = conform(df, schema)
    head = branch_head(metadata, branch)
    with track(df.sparkSession, progress) as tracker:
        written = write_data_files(prepared, metadata, table.io,
                                   row_filter=None if row_filter == ALWAYS_TRUE else row_filter,
                                   snapshot=head)
        tracker.written(sum(f.record_count for f in written.files),
                        sum(f.file_size_in_bytes for f in written.files))
    try:
        commit_files(table, written.files, mode, row_filter, job_id=written.job_id,
                     start_snapshot_id=None if head is None else head.snapshot_id,
                     branch=branch, snapshot_properties=snapshot_properties)
    except CommitStateUnknown:
        raise
    except BaseException as e:
        written.abort(table.io)
        converted = task_error(e)
        if converted is e:
            raise
        raise converted from e
    return table


# ----------------------------------------------------------------------------- schema


def merge_columns(df: DataFrame, table: Table) -> None:
    """Add the DataFrame's columns the table does not have (``union_by_name``; new IDs),
    matching names as the session does (``spark.sql.caseSensitive``)."""
    named, _ = match_names(df.schema, table.schema(), case_sensitive(df.sparkSession))
    incoming = to_iceberg(named, fresh_ids=True)
    table.update_schema().union_by_name(incoming).commit()


def conform(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` matched by name (:mod:`icepark.spark.writer.columns`: as the session resolves
    names), checked (:func:`check_schema`) and selected into the table's top-level column
    order: allowed promotions and checked narrowings cast, missing columns filled with their
    write-default or null. Nested write-defaults and casts are applied to the Arrow batches
    in the tasks."""
    sensitive = case_sensitive(df.sparkSession)
    df = renamed(df, match_names(df.schema, schema, sensitive)[0])
    try:
        check_schema(df.schema, schema)
    except IncompatibleColumn as e:
        raise with_example(df, e, schema) from None
    given = {f.name: f for f in df.schema.fields}
    targets = [to_spark_type(f.field_type) for f in schema.fields]
    if [f.name for f in df.schema.fields] == [f.name for f in schema.fields] and all(
            _cast_type(f, given[f.name], target) is None
            for f, target in zip(schema.fields, targets, strict=True)):
        return df  # a select changing nothing would still be analysed on the driver
    columns = []
    for f, target in zip(schema.fields, targets, strict=True):
        present = given.get(f.name)
        if present is None:
            col = default_column(f, target)
        else:
            col = F.col(quote(f.name))
            cast_type = _cast_type(f, present, target)
            if cast_type is not None:
                col = primitive_column(col, cast_type, present.dataType, target, f.name)
        columns.append(col.alias(f.name))
    return df.select(*columns)


def _cast_type(f: NestedField, present: T.StructField,
               target: T.DataType) -> PrimitiveType | None:
    """The type of field ``f`` when :func:`conform` casts the given column ``present`` to
    ``target`` (a top-level primitive of another type; nested ones are cast in the tasks),
    else None."""
    t = f.field_type
    return t if isinstance(t, PrimitiveType) and present.dataType != target else None


def primitive_column(col: Column, t: PrimitiveType, given: T.DataType, target: T.DataType,
                     name: str, *, name_file: bool = True) -> Column:
    """A top-level column of Spark type ``given`` (checked writable to ``t``) as ``target``
    (``name_file``: see :func:`~icepark.spark.writer.columns.checked_cast`)."""
    if t.type_id in NANO_TYPES:
        return col  # Spark timestamps and long nanoseconds: both exact, the tasks convert
    if t == UNKNOWN:
        message = (f"{VALIDATION_PREFIX}Column {name!r} has type unknown, whose only value is "
                   "null, but has a non-null value")
        return F.when(col.isNull(), F.lit(None)).otherwise(F.raise_error(F.lit(message)))
    if isinstance(target, geo.SPARK_TYPES) and isinstance(given, T.BinaryType):
        return geo.from_wkb(col, target)
    return checked_cast(col, given, target, name, name_file=name_file)


# ----------------------------------------------------------------------------- commit


def commit_files(table: Table, files: list[DataFile], mode: str, row_filter: Expr | None, *,
                 job_id: str, start_snapshot_id: int | None, branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None) -> None:
    """Commit ``files`` to ``table`` in one snapshot of ``mode`` (see the module docstring).

    ``start_snapshot_id`` is the branch head the job started from (an overwrite fails if data
    matching its filter was added since); ``job_id`` goes to the summary as
    :data:`JOB_ID_PROPERTY`, so an abort can tell a committed job from a failed one.
    """
    properties = {**(snapshot_properties or {}), JOB_ID_PROPERTY: job_id}
    if mode == "append":
        table.new_append(branch=branch, snapshot_properties=properties) \
            .append_files(files).commit()
        return
    if mode == "dynamic":
        properties.setdefault("replace-partitions", "true")
    overwrite = table.new_overwrite(branch=branch, snapshot_properties=properties)
    if mode == "dynamic":
        overwrite.delete_files(files_in_partitions(table, table.metadata, files, branch))
    else:
        overwrite.delete_where(row_filter or ALWAYS_TRUE) \
            .validate_no_conflicting_appends(start_snapshot_id)
    overwrite.add_files(files).commit()


def committed_job(metadata: TableMetadata, job_id: str) -> bool:
    """Whether a snapshot of ``metadata`` was committed by the write job ``job_id``."""
    return any(s.summary is not None and s.summary.properties.get(JOB_ID_PROPERTY) == job_id
               for s in metadata.snapshots)


def head_id(metadata: TableMetadata, branch: str) -> int | None:
    """The ID of the snapshot a commit to ``branch`` would build on (None: empty)."""
    head = branch_head(metadata, branch)
    return None if head is None else head.snapshot_id


def files_in_partitions(table: Table, metadata: TableMetadata, files: list[DataFile],
                        branch: str) -> list[DataFile]:
    """The live data files of ``branch`` in the same spec and partition as one of ``files``."""
    wanted = {(f.spec_id, _key(f.partition)) for f in files}
    specs = {s.spec_id: s for s in metadata.partition_specs}
    spec_ids = {spec_id for spec_id, _ in wanted}
    found = []
    for manifest in snapshot_manifests(table.io, branch_head(metadata, branch)):
        if manifest.content is not ManifestContent.DATA or \
                manifest.partition_spec_id not in spec_ids:
            continue
        for entry in read_manifest(table.io, manifest, specs_by_id=specs, discard_deleted=True):
            data_file = entry.data_file
            if (data_file.spec_id, _key(data_file.partition)) in wanted:
                found.append(data_file)
    return found


def _key(partition: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(("nan",) if isinstance(v, float) and math.isnan(v) else v for v in partition)


__all__ = ["DISTRIBUTION_MODE", "JOB_ID_PROPERTY", "MODES", "NATIVE_WRITER_PROPERTY",
           "collect_files", "commit_files", "committed_job", "conform", "distribute",
           "distribution_mode", "head_id", "new_task", "primitive_column", "write"]
