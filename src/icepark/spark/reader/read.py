"""Read an icepark table's rows as a Spark DataFrame with Spark's own Parquet reader.

The rows equal those of :meth:`icepark.table.scan.read.DataScan.to_arrow` (the reference
semantics) for the same scan:

* Planning is icepark's (``table.scan(...).plan_files()``, in Spark tasks for scans of many
  manifests: :mod:`icepark.spark.reader.planning`); the planned tasks are read by
  :func:`icepark.spark.reader.scan_rows.scan_rows`: their data files with
  ``spark.read.schema(...).parquet(...)`` whose schema carries the Iceberg field IDs, so Spark
  resolves renamed columns by ID, promotes types and reads columns missing from a file as
  null (spec, *Column Projection*). Only the projection plus the columns the filter and the
  equality deletes need are in the read schema; Spark prunes further by what the query uses.
  Files without field IDs, and files lacking a column that has an identity partition value or
  an ``initial-default``, are read as :mod:`icepark.spark.reader.files` describes.
* The row filter is translated by :mod:`icepark.spark.filters`; a predicate that cannot be
  translated raises :class:`~icepark.errors.UnsupportedFeature` naming it.
* Position and equality deletes are anti-joins (:mod:`icepark.spark.reader.deletes`), each delete
  file applied only to the data files the planner attached it to and, for equality deletes,
  in its partition (spec, *Scan Planning*: "The data file's partition (both spec and partition
  values) is equal to the delete file's partition *or* the delete file's partition spec is
  unpartitioned"), as the Arrow reader does.

:func:`read_incremental` reads the rows appended between two snapshots the same way.

The v3 types: ``timestamp_ns``/``timestamptz_ns`` columns are read as exact ``LongType``
nanoseconds, filtered there, and returned as the read mode says (``timestamp_ns=``, else the
session's ``spark.icepark.read.timestamp-ns``): ``error`` (the default) refuses a read that
returns one, ``micros`` gives Spark timestamps truncated toward negative infinity, ``nanos``
the nanoseconds (:mod:`icepark.spark.nanos`). ``unknown`` reads as ``NullType`` nulls,
``variant`` as ``VariantType`` (shredded files too, by Spark's own reader), ``geometry`` and
``geography`` as Spark's spatial types or WKB binary (:mod:`icepark.spark.geo`).

Deletion vectors are decoded in Spark tasks and applied as position deletes are. Files Spark
cannot open (``s3://`` on stock PySpark, :mod:`icepark.spark.storage`) are read by icepark's
Arrow reader in Python tasks, with the row filter pruning row groups there too. Not
supported (raise :class:`~icepark.errors.UnsupportedFeature`): non-Parquet data and delete
files; an equality delete column dropped from the table while nested in a struct.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.expressions.bound import bind, referenced_ids, rewrite_not
from icepark.expressions.expr import ALWAYS_TRUE, Expr
from icepark.io.arrow.reader import LINEAGE_COLUMN_NAMES
from icepark.spark.filters import spark_filter
from icepark.spark.layout import read_columns
from icepark.spark.nanos import ReadMode, check_readable, read_mode
from icepark.spark.reader.planning import plan_files
from icepark.spark.reader.scan_rows import scan_rows
from icepark.spark.schema import Nanos, to_spark
from icepark.spark.session import case_sensitive
from icepark.spec.schema import Schema
from icepark.spec.types import IcebergType, StructType
from icepark.table.scan.incremental import IncrementalAppendScan
from icepark.table.scan.scan import TableScan
from icepark.table.scan.tasks import FileScanTask
from icepark.table.table import Table


def read(  # noqa: PLR0917 - the brief's positional order
        spark: SparkSession, table: Table, row_filter: str | Expr | None = None,
        columns: Sequence[str] | None = None, snapshot_id: int | None = None,
        as_of_timestamp: int | None = None, ref: str | None = None, *,
        metadata_columns: Sequence[str] = (), timestamp_ns: str | None = None) -> DataFrame:
    """The rows of ``table`` (at a snapshot, ref or time) matching ``row_filter``, with the
    ``columns`` (full dotted names; all by default) in table order, as a DataFrame in the
    table layout (:func:`icepark.spark.schema.to_spark`), then the ``metadata_columns``
    (``_file``, ``_pos``, ``_spec_id``, ``_row_id``, ``_last_updated_sequence_number``).
    Names in ``columns`` and ``row_filter`` resolve as the session resolves them
    (``spark.sql.caseSensitive``). ``timestamp_ns`` (``error``, ``micros``, ``nanos``) is how
    nanosecond timestamp columns are returned (see the module docstring)."""
    mode = read_mode(spark, timestamp_ns)
    scan = table.scan(ALWAYS_TRUE if row_filter is None else row_filter,
                      selected_fields=tuple(columns) if columns is not None else ("*",),
                      case_sensitive=case_sensitive(spark),
                      snapshot_id=snapshot_id, as_of_timestamp=as_of_timestamp, ref=ref)
    return _read_scan(spark, table, scan, mode, metadata_columns)


def read_incremental(  # noqa: PLR0917 - the brief's positional order
        spark: SparkSession, table: Table, from_snapshot_id: int | None,
        to_snapshot_id: int | None = None, row_filter: str | Expr | None = None,
        columns: Sequence[str] | None = None, *, timestamp_ns: str | None = None) -> DataFrame:
    """The rows appended after snapshot ``from_snapshot_id`` (exclusive; None: from the start
    of the history) up to ``to_snapshot_id`` (inclusive; None: the current snapshot), as
    :class:`~icepark.table.scan.incremental.IncrementalAppendScan` plans them (appends only: a
    snapshot in the range that deleted or overwrote rows is a
    :class:`~icepark.errors.ValidationError`), read with the current schema; ``timestamp_ns``
    as for :func:`read`."""
    mode = read_mode(spark, timestamp_ns)
    scan = IncrementalAppendScan(
        table.metadata, table.io, from_snapshot_id, to_snapshot_id,
        ALWAYS_TRUE if row_filter is None else row_filter,
        tuple(columns) if columns is not None else ("*",), case_sensitive(spark))
    return _read_scan(spark, table, scan, mode)


class _Scan(Protocol):
    """What a table scan and an incremental append scan both offer."""

    row_filter: Expr
    selected_fields: tuple[str, ...]
    case_sensitive: bool

    def schema(self) -> Schema: ...
    def projection(self) -> Schema: ...
    def plan_files(self, *, row_lineage: bool = False) -> Iterable[FileScanTask]: ...


def _read_scan(spark: SparkSession, table: Table, scan: _Scan, mode: ReadMode,
               metadata_columns: Sequence[str] = ()) -> DataFrame:
    full, projection = scan.schema(), scan.projection()
    check_readable(projection, mode, table.name)
    nanos: Nanos = "micros" if mode == "micros" else "nanos"
    bound = rewrite_not(bind(scan.row_filter, full, scan.case_sensitive))
    condition = spark_filter(bound, full)  # fails early on untranslatable predicates
    names = [*scan.selected_fields,
             *sorted(n for i in referenced_ids(bound)
                     if (n := full.find_column_name(i)) is not None)]
    metadata = list(dict.fromkeys(metadata_columns))
    lineage = bool(LINEAGE_COLUMN_NAMES & set(metadata))
    tasks = list(plan_files(spark, scan, row_lineage=lineage) if isinstance(scan, TableScan)
                 else scan.plan_files(row_lineage=lineage))
    if not tasks or condition is False:
        empty = scan_rows(spark, table, [], full, names, metadata_columns=metadata).rows
        layout = to_spark(projection, timestamp_ns=nanos)
        return spark.createDataFrame([], T.StructType(
            [*layout.fields, *empty.schema.fields[-len(metadata):]]
            if metadata else layout.fields))
    scanned = scan_rows(spark, table, tasks, full, names,
                        condition=condition if isinstance(condition, Column) else None,
                        case_sensitive=scan.case_sensitive, metadata_columns=metadata,
                        row_filter=scan.row_filter)
    extended, rows = scanned.schema, scanned.rows
    layout = to_spark(projection, timestamp_ns=nanos)
    if _in_layout(scanned.spark_schema, layout, metadata):
        return rows  # each select is analysed on the driver: none when it would change nothing
    converted = dict(zip((f.field_id for f in extended.fields),
                         read_columns(extended, timestamp_ns=nanos), strict=True))
    return rows.select(*(_conform(converted[f.field_id], f.field_type,
                                  extended.find_field(f.field_id).field_type).alias(
                                      f.name, metadata=s.metadata)
                         for f, s in zip(projection.fields, layout.fields, strict=True)),
                       *metadata)


def _in_layout(have: T.StructType, layout: T.StructType, metadata: Sequence[str]) -> bool:
    """Whether a DataFrame of schema ``have`` is already the read's result: the columns of
    ``layout`` (names, types and field metadata; Spark's file readers make every column
    nullable, and an alias keeps that), then the ``metadata`` columns."""
    if [f.name for f in have.fields[len(layout.fields):]] != list(metadata):
        return False
    return len(have.fields) == len(layout.fields) + len(metadata) and all(
        (h.name, h.dataType, h.metadata) == (w.name, w.dataType, w.metadata)
        for h, w in zip(have.fields, layout.fields, strict=False))


def _conform(col: Column, wanted: IcebergType, have: IcebergType) -> Column:
    """``col`` (of type ``have``) pruned to the struct fields of ``wanted`` (when the filter
    needed nested fields the projection does not select)."""
    if wanted == have or not isinstance(wanted, StructType) or not isinstance(have, StructType):
        return col
    have_fields = {f.field_id: f for f in have.fields}
    fields = [_conform(col.getField(f.name), f.field_type,
                       have_fields[f.field_id].field_type).alias(f.name)
              for f in wanted.fields]
    return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*fields))
