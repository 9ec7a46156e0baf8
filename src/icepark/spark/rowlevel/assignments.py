"""The values an UPDATE or a MERGE clause assigns, checked against the table and converted.

An assignment maps a target column to a Spark SQL expression (or a ``Column``) over the rows
the operation reads. Keys are the table's column names, matched as Spark resolves names
(exactly, else ignoring case unless ``spark.sql.caseSensitive``), optionally after the target
alias (``t.d``); a dotted key (``addr.city``) sets a field of a struct column in an update. A
column an update does not set keeps its value; one an insert does not give takes its
``write-default`` (null without one; a required column without one is an error).

The values are checked as a write checks a DataFrame's columns
(:func:`icepark.spark.writer.columns.check_schema`: a type the column cannot take, in Spark's
type names, before any job runs) and converted to the table's Spark types as writes convert
them (:func:`icepark.spark.writer.write.primitive_column`: allowed promotions, narrowings checked
per value; nanosecond timestamps as exact ``LongType`` nanoseconds). A null in a required
column fails the write job naming the column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import ValidationError
from icepark.spark.nanos import NANO_TYPES, nanos_column
from icepark.spark.schema import default_column, quote, to_spark_type
from icepark.spark.writer.columns import check_schema, match_names
from icepark.spark.writer.write import primitive_column
from icepark.spec.schema import Schema
from icepark.spec.types import NestedField, PrimitiveType

Value = str | Column
"""An expression: Spark SQL text, or a Column."""


def clause_values(
        frame: DataFrame, schema: Schema, action: Literal["update", "insert"],
        assignments: Mapping[str, Value] | None, *, target_alias: str | None,
        source_alias: str | None = None, source_names: Sequence[str] = (),
        case_sensitive: bool = False, where: str) -> dict[str, Column]:
    """Every table column's value (a Column over ``frame``) after ``action``, checked and in
    the table's Spark types. ``assignments`` None: each column from the source column of its
    name (an update needs them all; an insert fills the missing ones as it does for columns it
    is not given). ``where`` names the clause in errors."""
    assigned = _assigned(schema, action, assignments, target_alias, source_alias,
                         source_names, case_sensitive, where)
    try:
        probe = frame.select(*(c.alias(n) for n, c in assigned.items()))
    except AnalysisException as e:
        raise ValidationError(f"{where}: {first_line(e)}") from None
    given = {f.name: f for f in probe.schema.fields}
    if action == "update":  # the columns it does not set keep their values
        full = [given.get(f.name) or T.StructField(f.name, spark_type(f))
                for f in schema.fields]
    else:
        full = [given[f.name] for f in schema.fields if f.name in given]
    named, _ = match_names(T.StructType(full), schema, case_sensitive)
    try:
        check_schema(named, schema)
    except ValidationError as e:
        raise ValidationError(f"{where}: {e}") from None
    named_types = {f.name: f.dataType for f in named.fields}
    out: dict[str, Column] = {}
    for f in schema.fields:
        if f.name in assigned:
            out[f.name] = _converted(assigned[f.name], f, given[f.name].dataType,
                                     named_types[f.name], where)
        elif action == "insert":
            out[f.name] = default_column(f, spark_type(f))
        else:
            out[f.name] = F.col(qualified(target_alias, f.name))
    return out


def _assigned(  # noqa: PLR0917 - see clause_values
        schema: Schema, action: str, assignments: Mapping[str, Value] | None,
        target_alias: str | None, source_alias: str | None, source_names: Sequence[str],
        sensitive: bool, where: str) -> dict[str, Column]:
    """The columns assigned, by table name, as Columns."""
    names = [f.name for f in schema.fields]
    if assignments is None:
        found: dict[str, Column] = {}
        missing = []
        for name in names:
            source = find_name(name, source_names, sensitive)
            if source is not None:
                found[name] = F.col(qualified(source_alias, source))
            elif action == "update":
                missing.append(name)
        if missing:
            raise ValidationError(
                f"{where}: the source has no column(s) {missing} to update the target's from; "
                "name the columns to set with when_matched_update(set=...)")
        return found
    out: dict[str, Column] = {}
    nested: dict[str, list[tuple[str, Column]]] = {}
    for key, value in assignments.items():
        path = key if target_alias is None else _strip_alias(key, target_alias)
        top = find_name(path, names, sensitive)
        if top is not None:
            if top in out:
                raise ValidationError(f"{where}: column {top!r} is assigned twice")
            out[top] = as_column(value)
            continue
        head, _, rest = path.partition(".")
        top = find_name(head, names, sensitive)
        if top is None or not rest:
            raise ValidationError(f"{where}: the table has no column {key!r} (its columns: "
                                  f"{', '.join(names)})")
        if action == "insert":
            raise ValidationError(f"{where}: an insert gives whole columns; give {top!r} as a "
                                  f"struct instead of {key!r}")
        nested.setdefault(top, []).append((rest, as_column(value)))
    for top, fields in nested.items():
        if top in out:
            raise ValidationError(f"{where}: column {top!r} is assigned both whole and by "
                                  "its fields")
        base = F.col(qualified(target_alias, top))
        for rest, value in fields:
            base = base.withField(rest, value)
        out[top] = base
    return out


def _converted(col: Column, f: NestedField, given: T.DataType, named: T.DataType,
               where: str) -> Column:
    """A value of Spark type ``given`` for column ``f`` (checked writable) in the table's
    Spark type, so that the values of every clause have one type."""
    target = spark_type(f)
    if isinstance(f.field_type, PrimitiveType):
        if f.field_type.type_id in NANO_TYPES:
            return nanos_column(col, given, f.name)
        # computed over joined rows (a merge's, or the table's with its deletes): Spark
        # cannot name a file there
        return col if given == target else primitive_column(col, f.field_type, given, target,
                                                            f.name, name_file=False)
    if named != given:
        col = col.cast(named)  # nested names as the table's (matched by name)
    if named == target or _names(named) == _names(target):
        return col if named == target else col.cast(target)
    raise ValidationError(
        f"{where}: column {f.name!r} is {given.simpleString()}, whose fields are not the "
        f"table's {target.simpleString()} in order; build the value with the table's fields")


def spark_type(f: NestedField) -> T.DataType:
    """The Spark type of a table column in the table layout (nanosecond timestamps as exact
    ``LongType`` nanoseconds, as :func:`icepark.spark.layout.read_columns` reads them)."""
    return to_spark_type(f.field_type, timestamp_ns="nanos")


def _names(t: T.DataType) -> object:
    """The field names of a Spark type, recursively (its shape without leaf types)."""
    match t:
        case T.StructType():
            return tuple((f.name, _names(f.dataType)) for f in t.fields)
        case T.ArrayType():
            return ("array", _names(t.elementType))
        case T.MapType():
            return ("map", _names(t.keyType), _names(t.valueType))
        case _:
            return None


def checked_assignments(given: object, what: str) -> dict[str, Value]:
    """``given`` as assignments, or a :class:`ValidationError` saying what is wrong."""
    if not isinstance(given, Mapping) or not given:
        raise ValidationError(f"{what} must be a non-empty mapping of target columns to "
                              "values")
    for key, value in given.items():
        if not isinstance(key, str) or not isinstance(value, (str, Column)):
            raise ValidationError(f"{what}: {key!r} must map a column name to a SQL "
                                  "expression or a Column")
    return dict(given)


def as_column(value: Value) -> Column:
    """A SQL expression's text as a Column (a Column as it is)."""
    return F.expr(value) if isinstance(value, str) else value


def qualified(alias: str | None, name: str) -> str:
    """``alias.name`` quoted for ``F.col`` (just the name without an alias)."""
    return quote(name) if alias is None else f"{quote(alias)}.{quote(name)}"


def _strip_alias(key: str, alias: str) -> str:
    prefix = alias + "."
    return key[len(prefix):] if key.lower().startswith(prefix.lower()) else key


def find_name(name: str, names: Sequence[str], sensitive: bool) -> str | None:
    """``name`` among ``names`` as Spark resolves it (exactly; else ignoring case, unless
    ``sensitive``)."""
    if name in names:
        return name
    if sensitive:
        return None
    folded = [n for n in names if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def first_line(error: Exception) -> str:
    """The first line of an error's message (Spark's analysis errors run on for pages)."""
    return str(error).strip().splitlines()[0]


__all__ = ["Value", "as_column", "checked_assignments", "clause_values", "find_name",
           "first_line", "qualified", "spark_type"]
