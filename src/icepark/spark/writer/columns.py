"""A DataFrame's columns matched to a table's, as Spark matches them, and said in Spark's words.

Spec, *Schema Evolution*: "Columns in Iceberg data files are selected by field id", but a
DataFrame has no field IDs, so its columns are matched to the table schema by name, nested
struct fields too (through lists and maps). Names are matched as Spark resolves them:
case-insensitively unless ``spark.sql.caseSensitive`` is true (Spark's default is false). An
exact match wins; otherwise the one table column equal ignoring case. Two columns of the data
that differ only by case are ambiguous then, as Spark's own writers say ("Found duplicate
column(s) in the data to save"); so is a column equal ignoring case to two table columns.
:func:`match_names` names every matched field as the table does, so the rest of the write
pipeline matches exactly.

The checks (:func:`check_schema`) then report, before any file is written, a column the table
does not have, a required one missing, or a type the table's column cannot take, in Spark's
type names ("string", "decimal(10,2)", "bigint"). Spec, *Schema Evolution*, the allowed
promotions are "int to long", "float to double" and "decimal(P, S) to decimal(P', S) if
P' > P"; as Spark's ANSI store assignment, integers and decimals may also be written to
narrower columns, and a value that does not fit fails the job, naming the column, the value
and, when the rows come from files, the file (:func:`checked_cast`). When strings cannot be
written to a typed column, one of the strings that does not convert is shown
(:func:`with_example`), on the error path only.

The v3 types are checked the same way, on the Arrow form Spark gives Python workers, with two
Spark-side additions: a ``LongType`` column is nanoseconds where the table has a
``timestamp_ns``/``timestamptz_ns`` (:mod:`icepark.spark.nanos`), and a Spark spatial type
must have the geometry or geography column's SRID (:func:`icepark.spark.geo.check_given`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import IncompatibleColumn, Remedy, ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.spark import geo
from icepark.spark.nanos import NANO_TYPES, nanosecond_input_schema
from icepark.spark.schema import quote, to_spark_type
from icepark.spec.schema import Schema
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)
from icepark.table.snapshot.writes import check_columns, prepare, prepare_empty

MERGE_SCHEMA = Remedy("add them with {} or drop them", "merge_schema=True")
"""What to do about columns the table does not have (writes that can merge schemas)."""
EVOLVE_SCHEMA = Remedy("add them first with {} or drop them", "update_schema().union_by_name()")
"""What to do about columns the table does not have (the data source, which cannot merge)."""
VALIDATION_PREFIX = "icepark.errors.ValidationError: "
"""How a value check in a Spark job starts its message, so the driver raises it as a
:class:`~icepark.errors.ValidationError` (:func:`icepark.spark.writer.data_files.task_error`)."""
CARDINALITY_PREFIX = "icepark.errors.CardinalityViolation: "
"""How a row-level job's check that no target row changes twice starts its message, so the
driver raises it as a :class:`~icepark.errors.CardinalityViolation`."""
_STAND_INS = frozenset({TypeId.UUID, TypeId.FIXED, TypeId.UNKNOWN, *NANO_TYPES, *geo.GEO_TYPES})
"""Types Spark holds in a type of another name (string, binary, bigint, timestamp, void)."""


def match_names(df_schema: T.StructType, schema: Schema,
                case_sensitive: bool = True) -> tuple[T.StructType, list[str]]:
    """``df_schema`` with every field that matches a column of ``schema`` named as the table
    names it, and the paths of the fields that match none (see the module docstring).

    >>> from icepark.spec.types import LONG
    >>> s = Schema.of(NestedField.required(1, "id", LONG))
    >>> named, extra = match_names(T.StructType([T.StructField("ID", T.LongType()),
    ...                                           T.StructField("x", T.LongType())]), s, False)
    >>> named.names, extra
    (['id', 'x'], ['x'])
    """
    extra: list[str] = []
    named = _named_struct(df_schema, schema.fields, case_sensitive, "", extra)
    return named, extra


def _named_struct(struct: T.StructType, fields: Sequence[NestedField], case_sensitive: bool,
                  path: str, extra: list[str]) -> T.StructType:
    exact = {f.name: f for f in fields}
    folded: dict[str, list[NestedField]] = {}
    for f in fields:
        folded.setdefault(f.name.lower(), []).append(f)
    seen: dict[str, str] = {}
    out = []
    for given in struct.fields:
        match = exact.get(given.name)
        if not case_sensitive:
            key = given.name.lower()
            if key in seen:
                raise ValidationError(
                    f"Columns {path + seen[key]!r} and {path + given.name!r} of the data differ "
                    "only by case, and spark.sql.caseSensitive is false: rename or drop one")
            seen[key] = given.name
            candidates = folded.get(key, [])
            if match is None and len(candidates) > 1:
                shown = " and ".join(repr(path + f.name) for f in candidates)
                raise ValidationError(
                    f"Column {path + given.name!r} of the data matches the table's columns "
                    f"{shown} ignoring case (spark.sql.caseSensitive is false): rename it")
            if match is None and candidates:
                match = candidates[0]
        if match is None:
            extra.append(path + given.name)
            out.append(given)
            continue
        data_type = _named_type(given.dataType, match.field_type, case_sensitive,
                                path + match.name, extra)
        out.append(T.StructField(match.name, data_type, given.nullable, given.metadata))
    return T.StructType(out)


def _named_type(t: T.DataType, table_type: IcebergType, case_sensitive: bool, path: str,
                extra: list[str]) -> T.DataType:
    match t, table_type:
        case T.StructType(), StructType():
            return _named_struct(t, table_type.fields, case_sensitive, f"{path}.", extra)
        case T.ArrayType(), ListType():
            return T.ArrayType(_named_type(t.elementType, table_type.element_type,
                                           case_sensitive, f"{path}.element", extra),
                               t.containsNull)
        case T.MapType(), MapType():
            return T.MapType(
                _named_type(t.keyType, table_type.key_type, case_sensitive, f"{path}.key",
                            extra),
                _named_type(t.valueType, table_type.value_type, case_sensitive,
                            f"{path}.value", extra),
                t.valueContainsNull)
    return t


def renamed(df: DataFrame, named: T.StructType) -> DataFrame:
    """``df`` with the names of ``named`` (:func:`match_names`); nested fields are renamed by
    a cast, which Spark applies to structs by position."""
    if named == df.schema:
        return df
    columns = []
    for old, new in zip(df.schema.fields, named.fields, strict=True):
        col = F.col(quote(old.name))
        if old.dataType != new.dataType:
            col = col.cast(new.dataType)
        columns.append(col.alias(new.name))
    return df.select(*columns)


def arrow_schema_of(df_schema: Any) -> Any:
    """The Arrow schema Spark hands Python workers for ``df_schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow  # noqa: PLC0415

    return spark_to_arrow(df_schema, timezone="UTC")


def check_schema(df_schema: T.StructType, schema: Schema, case_sensitive: bool = True, *,
                 extra: Remedy = MERGE_SCHEMA) -> None:
    """Raise :class:`ValidationError` naming the first column of ``df_schema`` that cannot be
    written to ``schema``: a column the table does not have (with the remedy ``extra``), a
    missing required one without a write-default, or a type that is not the same, an allowed
    promotion or a narrowing the values are checked for
    (:class:`~icepark.errors.IncompatibleColumn`, in Spark's words)."""
    named, unknown = match_names(df_schema, schema, case_sensitive)
    if unknown:
        shown = ", ".join(repr(name) for name in unknown)
        raise ValidationError(f"Column(s) {shown} are not in the table schema", remedy=extra)
    arrow_in = arrow_schema_of(named)
    check_columns(arrow_in, schema.fields)
    _check_spatial(named, schema.as_struct(), "")
    try:
        prepare(prepare_empty(nanosecond_input_schema(arrow_in, schema)), schema,
                to_arrow_schema(schema))
    except IncompatibleColumn as e:
        raise in_spark_words(e, named, schema) from None


def _check_spatial(given: T.DataType, t: IcebergType, path: str) -> None:
    """Raise :class:`IncompatibleColumn` for a Spark spatial type of the wrong kind or SRID
    anywhere in ``given`` (matched to ``t`` by name)."""
    match given, t:
        case T.StructType(), StructType():
            by_name = {f.name: f for f in t.fields}
            for g in given.fields:
                f = by_name.get(g.name)
                if f is not None:
                    _check_spatial(g.dataType, f.field_type,
                                   f"{path}.{g.name}" if path else g.name)
        case T.ArrayType(), ListType():
            _check_spatial(given.elementType, t.element_type, f"{path}.element")
        case T.MapType(), MapType():
            _check_spatial(given.keyType, t.key_type, f"{path}.key")
            _check_spatial(given.valueType, t.value_type, f"{path}.value")
        case _, PrimitiveType() if t.type_id in geo.GEO_TYPES:
            geo.check_given(given, t, path)


def in_spark_words(error: IncompatibleColumn, df_schema: T.StructType,
                   schema: Schema) -> IncompatibleColumn:
    """``error`` said again with Spark's type names: the data's type and the table's."""
    given = _spark_type_at(df_schema, error.column)
    try:
        table_type: IcebergType | None = schema.find_field(error.column).field_type
    except ValidationError:
        table_type = None
    if given is None or table_type is None:
        return error
    data, table = given.simpleString(), spark_words(table_type)
    return IncompatibleColumn(f"Column {error.column!r} is {data} in the data, which cannot be "
                              f"written to the table's {table} column", error.column, data, table)


def spark_words(t: IcebergType) -> str:
    """The name of Iceberg type ``t`` in Spark SQL (``bigint``, ``timestamp_ntz``); Iceberg's
    own for the types Spark holds in another (uuid, fixed).

    >>> from icepark.spec.types import LONG, UUID, PrimitiveType
    >>> spark_words(LONG), spark_words(UUID), spark_words(PrimitiveType.decimal(10, 2))
    ('bigint', 'uuid', 'decimal(10,2)')
    """
    if getattr(t, "type_id", None) in _STAND_INS:
        return str(t)
    return str(to_spark_type(t).simpleString())


def _spark_type_at(struct: T.StructType, path: str) -> T.DataType | None:
    """The type at the dotted ``path`` (``a.element.b``, ``m.value``) of ``struct``."""
    t: T.DataType = struct
    rest = path
    while rest:
        head, _, tail = rest.partition(".")
        match t:
            case T.StructType():
                names = sorted((f.name for f in t.fields), key=len, reverse=True)
                name = next((n for n in names if rest == n or rest.startswith(n + ".")), None)
                if name is None:
                    return None
                t, rest = t[name].dataType, rest[len(name) + 1:]
            case T.ArrayType() if head == "element":
                t, rest = t.elementType, tail
            case T.MapType() if head in ("key", "value"):
                t, rest = (t.keyType if head == "key" else t.valueType), tail
            case _:
                return None
    return t


def with_example(df: DataFrame, error: IncompatibleColumn, schema: Schema) -> ValidationError:
    """``error`` about a top-level string column, with one of its values that does not convert
    to the table's type and the file it comes from (one small Spark job, on the error path)."""
    present = next((f for f in df.schema.fields if f.name == error.column), None)
    target = schema.find_field(error.column) if present is not None else None
    if present is None or target is None or not isinstance(present.dataType, T.StringType):
        return error
    col = F.col(quote(error.column))
    try:
        found = (df.where(col.isNotNull() & col.try_cast(to_spark_type(target.field_type))
                          .isNull())
                 .select(col, F.input_file_name()).first())
    except Exception:  # the example is a courtesy: the error stands without it
        return error
    if found is None:
        return error
    value, source = found[0], found[1]
    where = f" in {source}" if source else ""
    return IncompatibleColumn(f"{error.problem} (e.g. the value {value!r}{where})",
                              error.column, error.given, error.expected)


def checked_cast(col: Column, given: T.DataType, target: T.DataType, name: str, *,
                 name_file: bool = True) -> Column:
    """``col`` (of type ``given``) cast to ``target``; an integer or decimal that does not fit
    fails the job naming the column, the value and (``name_file``) the file the row was read
    from (if any), where Spark would round a decimal or name only the types.

    ``name_file`` uses ``input_file_name()``, which Spark refuses above a join or a union of
    sources (``MULTI_SOURCES_UNSUPPORTED_FOR_EXPRESSION``): values computed over joined rows
    (a merge, a table read with its delete files) pass ``False``."""
    cast = col.cast(target)
    if not isinstance(target, (T.IntegralType, T.DecimalType)) or _widens(given, target):
        return cast
    tried = col.try_cast(target)
    lost = tried.isNull() | (tried.cast(given) != col)
    parts = [F.lit(f"{VALIDATION_PREFIX}Column {name!r}: the value "), col.cast(T.StringType()),
             F.lit(f" does not fit the table's {target.simpleString()} column")]
    if name_file:
        source = F.input_file_name()
        parts.append(F.when(source != F.lit(""), F.concat(F.lit(" (in "), source, F.lit(")")))
                     .otherwise(F.lit("")))
    message = F.concat(*parts)
    return F.when(col.isNotNull() & lost, F.raise_error(message).cast(target)).otherwise(cast)


_INTEGER_BYTES: dict[type[T.DataType], int] = {T.ByteType: 1, T.ShortType: 2,
                                                T.IntegerType: 4, T.LongType: 8}


def _widens(given: T.DataType, target: T.DataType) -> bool:
    """Whether every value of ``given`` fits ``target`` exactly."""
    if isinstance(given, T.DecimalType) and isinstance(target, T.DecimalType):
        return (target.scale >= given.scale
                and target.precision - target.scale >= given.precision - given.scale)
    wide, narrow = _INTEGER_BYTES.get(type(target)), _INTEGER_BYTES.get(type(given))
    return wide is not None and narrow is not None and wide >= narrow


__all__ = ["EVOLVE_SCHEMA", "MERGE_SCHEMA", "VALIDATION_PREFIX", "arrow_schema_of", "check_schema",
           "checked_cast", "in_spark_words", "match_names", "renamed", "spark_words",
           "with_example"]
