"""CSV and JSON files as rows to write: ISO-8601 times inferred, then the table's types.

Text formats carry no types, so Spark guesses them. Its CSV reader (``inferSchema``) infers
ISO-8601 timestamps -- ``T`` or a space between date and time, with or without a fraction of
a second and a zone offset or ``Z`` -- as ``timestamp`` and ``yyyy-MM-dd`` as ``date``
(``preferDate``, on by default since Spark 3.4). Its JSON reader infers timestamps only with
``inferTimestamp`` (off by default) and dates never (it infers a date as a timestamp at
midnight), so :func:`read_json` turns ``inferTimestamp`` on and makes a top-level column whose
strings are all dates a ``date`` (one aggregate over those columns' strings).
Zone-less timestamps are read in the session time zone, as Spark reads them (icepark's
sessions use UTC): Spark's ``timestamp`` is Iceberg's ``timestamptz``.

A guess may differ from the table the rows go to: ``12.50`` is a double to Spark, ``1x3`` a
string. :func:`in_table_types` converts the guessed columns a table column types otherwise --
strings to any primitive, numbers to decimals, timestamps with and without zone and dates to
each other -- as Spark's readers do when given the table's schema, except that a value that
does not convert exactly fails the job, naming the column, the value and the file. Other
differences are left to the write's checks (:mod:`icepark.spark.writer.columns`).

Measured on Spark 4.3: both readers infer ``2017-11-16T22:31:08.123456789`` as a timestamp of
``...08.123456``, dropping the digits past the microsecond without a word. So a column a
``timestamp_ns``/``timestamptz_ns`` column takes is refused when Spark inferred timestamps for
it (:class:`~icepark.errors.UnsupportedFeature`: the digits are gone before icepark sees
them) and left as strings otherwise, which the write's checks refuse; dates are converted
(exactly). Nothing is converted to ``unknown``, ``variant``, ``geometry`` or ``geography``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature
from icepark.spark.schema import quote, to_spark_type
from icepark.spark.writer.columns import VALIDATION_PREFIX, checked_cast, match_names
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType, TypeId

DATE_TEXT = r"^\s*[+-]?\d{4,}-\d{2}-\d{2}\s*$"
"""A JSON string that is a date (``yyyy-MM-dd``), not a timestamp."""
_TIMES = (T.DateType, T.TimestampType, T.TimestampNTZType)
_WIDE_DECIMAL = T.DecimalType(38, 18)
_NO_CONVERSION = frozenset({TypeId.STRING, TypeId.UUID, TypeId.BINARY, TypeId.FIXED,
                            TypeId.UNKNOWN, TypeId.VARIANT, TypeId.GEOMETRY, TypeId.GEOGRAPHY})
_NANOS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})


def read_csv(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """CSV files with a header row, column types inferred (ISO-8601 timestamps and dates too)."""
    return spark.read.csv(list(paths), header=True, inferSchema=True)


def read_json(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """JSON lines, column types inferred: ISO-8601 timestamps as ``timestamp``, and top-level
    columns whose strings are all ``yyyy-MM-dd`` dates as ``date``."""
    reader = spark.read.option("inferTimestamp", "true")
    df = reader.json(list(paths))
    stamps = [f.name for f in df.schema.fields if isinstance(f.dataType, T.TimestampType)]
    if not stamps:
        return df
    texts = spark.read.schema(T.StructType([T.StructField(n, T.StringType()) for n in stamps]))
    checks = [F.bool_and(F.col(quote(n)).isNull() | F.col(quote(n)).rlike(DATE_TEXT)).alias(n)
              for n in stamps]
    found = texts.json(list(paths)).agg(*checks).first()
    dates = {n for n in stamps if found is not None and found[n]}
    if not dates:
        return df
    schema = T.StructType([T.StructField(f.name, T.DateType(), f.nullable, f.metadata)
                           if f.name in dates else f for f in df.schema.fields])
    return spark.read.schema(schema).json(list(paths))


def in_table_types(df: DataFrame, schema: Schema, case_sensitive: bool = False) -> DataFrame:
    """``df`` with each top-level column whose guessed type a column of ``schema`` types
    otherwise converted to the table's type (see the module docstring)."""
    named, _ = match_names(df.schema, schema, case_sensitive)
    table_columns = {f.name: f for f in schema.fields}
    columns = []
    changed = False
    for given, field in zip(df.schema.fields, named.fields, strict=True):
        col = F.col(quote(given.name))
        found = table_columns.get(field.name)  # matched: the table's name; else the data's
        target_type = found.field_type if found is not None else None
        nanos = isinstance(target_type, PrimitiveType) and target_type.type_id in _NANOS
        if nanos and isinstance(given.dataType, (T.TimestampType, T.TimestampNTZType)):
            raise UnsupportedFeature(
                f"Column {field.name!r} is {target_type}, but Spark's CSV and JSON readers read "
                "timestamps to the microsecond, dropping any digit past it: write such data "
                "from Parquet or a DataFrame of long nanoseconds since the epoch")
        if isinstance(target_type, PrimitiveType) and target_type.type_id not in _NO_CONVERSION \
                and not (nanos and isinstance(given.dataType, T.StringType)):
            target = to_spark_type(target_type)
            converted = _converted(col, given.dataType, target, field.name)
            if converted is not None:
                col, changed = converted, True
        columns.append(col.alias(given.name))
    return df.select(*columns) if changed else df


def _converted(col: Column, given: T.DataType, target: T.DataType,
               name: str) -> Column | None:
    """``col`` converted from a guessed type to ``target``; None to leave it."""
    if given == target:
        return None
    if isinstance(given, T.StringType):
        return _from_text(col, target, name)
    if isinstance(target, T.DecimalType) and isinstance(given, T.NumericType):
        return checked_cast(col, given, target, name)
    if isinstance(given, _TIMES) and isinstance(target, (T.TimestampType, T.TimestampNTZType)):
        return col.cast(target)
    return None


def _from_text(col: Column, target: T.DataType, name: str) -> Column:
    """Strings as ``target`` values; one that is not such a value, exactly, fails the job."""
    tried = col.try_cast(target)
    lost = tried.isNull()
    if isinstance(target, T.DecimalType):  # Spark rounds "12.505" to decimal(10,2)
        lost = lost | (tried.cast(_WIDE_DECIMAL) != col.try_cast(_WIDE_DECIMAL))
    elif isinstance(target, T.DateType):  # ... and cuts a timestamp to its date
        lost = lost | (tried.cast(T.TimestampType()) != col.try_cast(T.TimestampType()))
    source = F.input_file_name()
    message = F.concat(
        F.lit(f"{VALIDATION_PREFIX}Column {name!r}: the value '"), col,
        F.lit(f"' is not a {target.simpleString()}"),
        F.when(source != F.lit(""), F.concat(F.lit(" (in "), source, F.lit(")")))
        .otherwise(F.lit("")))
    return F.when(col.isNotNull() & lost, F.raise_error(message).cast(target)).otherwise(tried)


__all__ = ["DATE_TEXT", "in_table_types", "read_csv", "read_json"]
