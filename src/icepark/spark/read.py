"""Read an icepark table's rows as a Spark DataFrame with Spark's own Parquet reader.

The rows equal those of :meth:`icepark.table.read.DataScan.to_arrow` (the reference
semantics) for the same scan:

* Planning is icepark's (``table.scan(...).plan_files()``); the planned data files are read in
  one ``spark.read.schema(...).parquet(*paths)`` whose schema carries the Iceberg field IDs, so
  Spark resolves renamed columns by ID and reads columns missing from a file as null (spec,
  *Column Projection*). Only the projection plus the columns the filter needs are in the read
  schema; Spark prunes further by what the query uses.
* The row filter is translated to a Spark ``Column`` (comparisons, ``in``/``not in``, null and
  NaN tests, ``starts_with`` and their negations, ``and``/``or``/``not``) with the same SQL
  semantics as :mod:`icepark.io.arrow_expressions`: comparisons are false for null, NaN compares
  false except for ``!=`` and ``not in``. A predicate that cannot be translated raises
  :class:`~icepark.errors.UnsupportedFeature` naming it (reading through Python would be far
  slower than the caller expects from this path).
* Position deletes (spec, *Position Delete Files*: "A data row is deleted if there is an entry
  in a position delete file for the row's file and position in the data file, starting at 0")
  are a left anti-join on ``(_metadata.file_path, _metadata.row_index)`` against the delete
  files' ``(file_path, pos)`` rows, read with Spark; each delete file removes rows only of the
  data files the planner attached it to (which encodes the sequence number rule).

Not supported yet (raise :class:`~icepark.errors.UnsupportedFeature`): equality delete files,
deletion vectors and non-Parquet files. Identity partition values of files that lack the
partition column (imported files) are not filled in from the partition tuple: such columns read
as null here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature
from icepark.expressions.bound import (
    BoundExpr,
    BoundPredicate,
    BoundReference,
    BoundVisitor,
    bind,
    rewrite_not,
    visit,
)
from icepark.expressions.expr import AlwaysTrue, Expr, Op
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.schema import Schema, index_parents
from icepark.spec.types import IcebergType, StructType, TypeId
from icepark.table.scan import select_columns
from icepark.table.table import Table

from .schema import read_columns, read_schema, to_spark

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_EPOCH = dt.date(1970, 1, 1)
_FILE = "__icepark_file"
_POS = "__icepark_pos"


def read(  # noqa: PLR0917 - the brief's positional order
        spark: SparkSession, table: Table, row_filter: str | Expr | None = None,
        columns: Sequence[str] | None = None, snapshot_id: int | None = None,
        as_of_timestamp: int | None = None, ref: str | None = None) -> DataFrame:
    """The rows of ``table`` (at a snapshot, ref or time) matching ``row_filter``, with the
    ``columns`` (full dotted names; all by default) in table order, as a DataFrame in the
    table layout (:func:`icepark.spark.schema.to_spark`)."""
    scan = table.scan(AlwaysTrue() if row_filter is None else row_filter,
                      selected_fields=tuple(columns) if columns is not None else ("*",),
                      snapshot_id=snapshot_id, as_of_timestamp=as_of_timestamp, ref=ref)
    full, projection = scan.schema(), scan.projection()
    bound = rewrite_not(bind(scan.row_filter, full, scan.case_sensitive))
    condition = visit(bound, _ToSpark(full))  # fails early on untranslatable predicates
    refs = sorted(".".join(_path(full, i)) for i in _referenced(bound))
    needed = select_columns(full, [*scan.selected_fields, *refs], scan.case_sensitive)

    tasks = list(scan.plan_files())
    if not tasks:
        return spark.createDataFrame([], to_spark(projection))
    for task in tasks:
        _check_file(task.data_file)
        for d in task.delete_files:
            _check_file(d)
            if d.content is FileContent.EQUALITY_DELETES:
                raise UnsupportedFeature(
                    f"Equality delete file {d.file_path} applies to this scan: the Spark read "
                    "path does not apply equality deletes yet; use table.scan().to_arrow()")

    paths = list(dict.fromkeys(t.data_file.file_path for t in tasks))
    df = spark.read.schema(read_schema(needed)).parquet(*paths)
    if not isinstance(condition, bool) or not condition:
        df = df.filter(F.lit(condition) if isinstance(condition, bool) else condition)

    attached: dict[str, set[str]] = {}
    for task in tasks:
        for d in task.delete_files:
            attached.setdefault(d.file_path, set()).add(task.data_file.file_path)
    if attached:
        df = _apply_position_deletes(spark, df, attached)

    df = df.select(*read_columns(needed))
    return df.select(*(_conform(F.col(_quote(f.name)), f.field_type,
                                needed.find_field(f.field_id).field_type).alias(
                                    f.name, metadata=s.metadata)
                       for f, s in zip(projection.fields, to_spark(projection).fields,
                                       strict=True)))


def _check_file(data_file: DataFile) -> None:
    if data_file.file_format is not FileFormat.PARQUET:
        raise UnsupportedFeature(
            f"Cannot read {data_file.file_path} with Spark: only Parquet files are supported, "
            f"not {data_file.file_format}")


def _apply_position_deletes(spark: SparkSession, df: DataFrame,
                            attached: dict[str, set[str]]) -> DataFrame:
    """``df`` without the rows the position delete files delete, each only in the data files
    it was planned for."""
    def spark_path(p: str) -> str:
        return _spark_path(spark, p)

    delete_schema = T.StructType([
        T.StructField("file_path", T.StringType(), False, {"parquet.field.id": 2147483546}),
        T.StructField("pos", T.LongType(), False, {"parquet.field.id": 2147483545})])
    deletes = (spark.read.schema(delete_schema).parquet(*attached)
               .select(_metadata_path().alias("__delete_file"),
                       F.col("file_path").alias("__data_file"), F.col("pos").alias(_POS)))
    # (delete file as Spark names it, data file as Iceberg names it, data file as Spark does)
    scope = spark.createDataFrame(
        [(spark_path(d), f, spark_path(f)) for d, files in attached.items() for f in files],
        "__delete_file string, __data_file string, " + _FILE + " string")
    rows = deletes.join(F.broadcast(scope), ["__delete_file", "__data_file"]).select(_FILE, _POS)
    keyed = df.withColumn(_FILE, _metadata_path()).withColumn(
        _POS, F.col("_metadata.row_index"))
    return keyed.join(rows.distinct(), [_FILE, _POS], "left_anti").drop(_FILE, _POS)


def _spark_path(spark: SparkSession, path: str) -> str:
    """``path`` as Spark's ``_metadata.file_path`` shows it: qualified and URL-encoded (by
    Hadoop's ``Path``, as Spark's file listing does), local files as ``file:/``."""
    jvm = spark._jvm  # Hadoop's own qualification is the only exact one
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    conf = spark._jsc.hadoopConfiguration()
    qualified = hadoop_path.getFileSystem(conf).makeQualified(hadoop_path)
    return re.sub("^file:/+", "file:/", str(qualified.toUri().toString()))


def _metadata_path() -> Column:
    """``_metadata.file_path`` in the form of :func:`_spark_path` (``file:/`` for local files,
    which Spark's listing may show as ``file:///``)."""
    return F.regexp_replace(F.col("_metadata.file_path"), "^file:/+", "file:/")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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


class _Refs(BoundVisitor[set[int]]):
    def always_true(self) -> set[int]:
        return set()

    def always_false(self) -> set[int]:
        return set()

    def and_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def or_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def predicate(self, p: BoundPredicate) -> set[int]:
        return {p.field_id}


def _referenced(expr: BoundExpr) -> set[int]:
    return visit(expr, _Refs())


class _ToSpark(BoundVisitor[Column | bool]):
    """A bound, NOT-free expression as a Spark condition (constants stay Python bools)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def always_true(self) -> Column | bool:
        return True

    def always_false(self) -> Column | bool:
        return False

    def and_(self, left: Column | bool, right: Column | bool) -> Column | bool:
        if isinstance(left, bool):
            return right if left else False
        if isinstance(right, bool):
            return left if right else False
        return left & right

    def or_(self, left: Column | bool, right: Column | bool) -> Column | bool:
        if isinstance(left, bool):
            return True if left else right
        if isinstance(right, bool):
            return True if right else left
        return left | right

    def predicate(self, p: BoundPredicate) -> Column | bool:
        return _predicate(p, self._column(p.term))

    def _column(self, ref: BoundReference) -> Column:
        parts = _path(self.schema, ref.field_id)
        col = F.col(_quote(parts[0]))
        for part in parts[1:]:
            col = col.getField(part)
        return col


def _path(schema: Schema, field_id: int) -> list[str]:
    """The names on the path from the schema root to a (struct-nested) field."""
    parents = index_parents(schema)
    names = []
    current: int | None = field_id
    while current is not None:
        names.append(schema.find_field(current).name)
        current = parents.get(current)
    return names[::-1]


def _literal(t: Any, value: Any) -> Column:
    match t.type_id:
        case TypeId.DATE:
            return F.lit(_EPOCH + dt.timedelta(days=value))
        case TypeId.TIMESTAMPTZ:
            return F.timestamp_micros(F.lit(value))
        case TypeId.TIMESTAMP:
            # The session time zone is UTC (icepark's session config), so this is exact.
            return F.timestamp_micros(F.lit(value)).cast(T.TimestampNTZType())
        case TypeId.UUID:
            return F.lit(bytearray(value.bytes))
        case TypeId.DECIMAL:
            return F.lit(Decimal(value)).cast(T.DecimalType(t.precision, t.scale))
        case TypeId.FIXED | TypeId.BINARY:
            return F.lit(bytearray(value))
        case TypeId.TIME:
            raise UnsupportedFeature(f"Cannot filter on time values in Spark yet ({t})")
        case TypeId.FLOAT:
            return F.lit(value).cast(T.FloatType())
        case TypeId.INT:
            return F.lit(value).cast(T.IntegerType())
        case _:
            return F.lit(value)


def _predicate(p: BoundPredicate, col: Column) -> Column:
    t = p.term.type
    floats = t.type_id in _FLOATS
    match p.op:
        case Op.IS_NULL:
            return col.isNull()
        case Op.NOT_NULL:
            return col.isNotNull()
        case Op.IS_NAN:
            return F.coalesce(F.isnan(col), F.lit(False))
        case Op.NOT_NAN:
            return col.isNull() | ~F.isnan(col)
        case Op.STARTS_WITH | Op.NOT_STARTS_WITH if t.type_id is TypeId.STRING:
            found = col.startswith(p.literal)
            return found if p.op is Op.STARTS_WITH else ~found
        case Op.IN | Op.NOT_IN:
            found = col.isin(*(_literal(t, v) for v in p.literals))
            if p.op is Op.IN:
                return found & ~F.isnan(col) if floats else found
            # NaN is in no set, so NOT IN holds for it (Spark agrees); null never matches
            return col.isNotNull() & ~found
        case Op.LT | Op.LT_EQ | Op.GT | Op.GT_EQ | Op.EQ:
            value = _literal(t, p.literal)
            result = {Op.LT: col < value, Op.LT_EQ: col <= value, Op.GT: col > value,
                      Op.GT_EQ: col >= value, Op.EQ: col == value}[p.op]
            # Spark orders NaN above every number and NaN = NaN; Iceberg's NaN compares false
            return result & ~F.isnan(col) if floats else result
        case Op.NOT_EQ:
            return col != _literal(t, p.literal)
        case _:
            raise UnsupportedFeature(
                f"Cannot translate the predicate {p} to a Spark filter")
