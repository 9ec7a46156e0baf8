"""The columns a native write's files store, each carrying its field ID.

Spec, Appendix A, *Parquet*: "Column IDs are required." Spark's Parquet writer takes a
column's ID from its ``StructField`` metadata (``parquet.field.id``,
:mod:`icepark.spark.schema`), so the frame Spark writes must carry the table's metadata. There
are two ways to give it, and :func:`file_frame` picks one:

* **aliases** (:func:`aliased_frame`), for any frame: each column is selected again under its
  name with its metadata, cast where the table's type is wider, nested struct fields matched
  by name (promoted, or their write-default or null when missing), required fields failing the
  job on a null ("Nulls in a required column fail the job"). Over a computed frame or a file
  scan the projection joins the stage that makes the rows anyway;
* **``DataFrame.to``** (:func:`cached_schema`), for a frame Spark holds cached
  (``DataFrame.storageLevel``) whose columns already have the table's types, none of them a
  struct, and none nullable where the table's is required: Spark's in-memory scan returns its
  rows as the table's columns, metadata included, with no projection. Over a cached frame an
  alias projection would copy every row into a new one (about a tenth of the CPU time of
  writing 2,000,000 rows of 20 columns on Spark 4.3, measured in ``benchmarks/RESULTS.md``).

Measured on 4.3: ``DataFrame.to`` keeps the metadata where Spark's optimizer merges no
projection of its own into it (over a cached frame or a file scan), and drops it where it
does (over a computed column, whose name the merged projection keeps but not the metadata).
So every file's footer is checked for the IDs
(:class:`~icepark.spark.writer.native_files.MissingFieldIds`), and a write framed with
``DataFrame.to`` that lost them is written again with aliases; the Spark version that dropped
them gets aliases from then on (:func:`forget_cached_framing`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.spark import geo
from icepark.spark.schema import default_column, quote, to_spark
from icepark.spark.writer.columns import VALIDATION_PREFIX
from icepark.spec.schema import Schema
from icepark.spec.types import UNKNOWN, NestedField, PrimitiveType, StructType

_DROPPED_BY: set[str] = set()
"""The Spark versions seen dropping the metadata ``DataFrame.to`` gave a cached frame."""


def file_frame(df: DataFrame, schema: Schema) -> tuple[DataFrame, bool]:
    """``df`` as the files store it, each column with its field ID (see the module docstring),
    and whether it was framed with ``DataFrame.to`` (if its files then lack the IDs, write
    :func:`aliased_frame` instead)."""
    target = cached_schema(df, schema)
    if target is not None:
        return df.to(target), True
    return aliased_frame(df, schema), False


def cached_schema(df: DataFrame, schema: Schema) -> T.StructType | None:
    """The ``DataFrame.to`` schema giving cached ``df`` the table's columns and field IDs
    without a projection, or None where :func:`aliased_frame` is needed: ``df`` is not
    cached as it is, a column is missing or has another type, a required column may hold a
    null (a nullable one), the table has a struct column (``DataFrame.to`` rebuilds structs
    in a projection) or an ``unknown`` one, or this Spark version dropped the metadata
    before."""
    if any(f.field_type == UNKNOWN or not isinstance(f.field_type, PrimitiveType)
           for f in schema.fields):
        return None  # DataFrame.to rebuilds every struct column in a projection
    given = {f.name: f for f in df.schema.fields}
    fields = []
    for f, target in zip(schema.fields, to_spark(schema).fields, strict=True):
        have = given.get(f.name)
        if have is None or have.dataType != target.dataType or (f.is_required and have.nullable):
            return None
        fields.append(T.StructField(f.name, have.dataType, have.nullable, target.metadata))
    level = df.storageLevel
    if not (level.useMemory or level.useDisk or level.useOffHeap):
        return None
    if df.sparkSession.version in _DROPPED_BY:
        return None
    return T.StructType(fields)


def forget_cached_framing(df: DataFrame) -> None:
    """Frame every later write in ``df``'s Spark version with aliases: its files lost the
    field IDs ``DataFrame.to`` gave."""
    _DROPPED_BY.add(df.sparkSession.version)


def aliased_frame(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` as the files store it, each column selected again with its field ID
    (:func:`file_value_columns`), failing the job on a value in an ``unknown`` column."""
    return _only_nulls_in_unknown(df, schema).select(*file_value_columns(df, schema))


def file_value_columns(df: DataFrame, schema: Schema) -> list[Column]:
    """``df``'s columns (the table's, in order) with their field IDs in every StructField's
    metadata, nested struct fields matched by name (promoted, or their write-default or null
    when missing) and required fields failing the job on a null; ``unknown`` columns, which
    no file stores, are left out."""
    target = to_spark(schema)
    given = {f.name: f.dataType for f in df.schema.fields}
    return [_value(F.col(quote(f.name)), f, s, given.get(f.name), f.name)
            .alias(f.name, metadata=s.metadata)
            for f, s in zip(schema.fields, target.fields, strict=True)
            if f.field_type != UNKNOWN]


def _only_nulls_in_unknown(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` failing the job on a non-null value in a top-level ``unknown`` column, which the
    files leave out: "Must be optional with ``null`` defaults"."""
    for f in schema.fields:
        if f.field_type == UNKNOWN and f.name in df.columns:
            message = (f"{VALIDATION_PREFIX}Column {f.name!r} has type unknown, whose only "
                       "value is null, but has a non-null value")
            col = F.col(quote(f.name))
            df = df.where(col.isNull() | F.raise_error(F.lit(message)).cast(T.BooleanType()))
    return df


def _value(col: Column, f: NestedField, target: T.StructField, given: Any,
           path: str) -> Column:
    t = f.field_type
    if given is None:
        value = default_column(f, target.dataType)
    elif isinstance(t, StructType):
        have = {g.name: g.dataType for g in given.fields}
        spark_struct = target.dataType
        assert isinstance(spark_struct, T.StructType)
        inner = F.struct(*(
            _value(col.getField(child.name), child, spark_child, have.get(child.name),
                   f"{path}.{child.name}").alias(child.name, metadata=spark_child.metadata)
            for child, spark_child in zip(t.fields, spark_struct.fields, strict=True)))
        value = F.when(col.isNull(), F.lit(None)).otherwise(inner)
    elif isinstance(target.dataType, geo.SPARK_TYPES) and isinstance(given, T.BinaryType):
        value = geo.from_wkb(col, target.dataType)
    elif given != target.dataType:
        value = col.cast(target.dataType)
    else:
        value = col
    if f.is_required:
        message = f"Column {path!r} is required but has a null value"
        value = F.coalesce(value, F.raise_error(F.lit(message)).cast(target.dataType))
    return value


__all__ = ["aliased_frame", "cached_schema", "file_frame", "file_value_columns",
           "forget_cached_framing"]
