"""Spark data source filters (``pyspark.sql.datasource.Filter``) as icepark row filters.

A filter the ``icepark`` reader accepts in ``pushFilters`` is not evaluated again by Spark: the
reader applies it: it prunes manifests and files, and the reader applies it and the
residuals to the rows (spec, *Scan Planning*: "These projections are used to calculate the
residual predicates for each file in a scan"). So a translation must be *exact*: the
expression holds for a row exactly when Spark's filter is TRUE for it. A filter that cannot be
translated exactly is not pushed (:func:`translate` returns None) and Spark evaluates it.

Spark's filters have SQL three-valued logic, and ``Not(child)`` is TRUE exactly where ``child``
is FALSE, so every filter is translated for both truth values: where it is TRUE and where it
is FALSE (not null). icepark's predicates are false for null except ``is_null`` (and
``not_nan``), which gives both directly, with these differences from Spark handled:

* ``EqualNullSafe(a, v)`` is FALSE, not null, when ``a`` is null: its FALSE side is
  ``a is null or a != v``;
* ``In(a, (.., null))`` is never FALSE: its FALSE side is always false;
* Spark's NaN semantics (SQL reference, *NaN Semantics*: "NaN = NaN returns true" and NaN
  values are "larger than any other numeric value") order NaN above every float and double,
  while an Iceberg comparison with NaN is false: ``a > v`` is ``a > v or is_nan(a)``; a NaN
  literal is not pushed;
* a ``uuid`` column is a Spark string: only the canonical lower-case form of a uuid equals the
  stored value's string, so only equality (``=``, ``<=>``, ``IN``) with such literals is
  pushed;
* a ``timestamp_ns``/``timestamptz_ns`` column is pushed only with integer literals, read
  with ``timestamp-ns=nanos`` (``LongType`` nanoseconds, compared exactly); read as truncated
  microseconds it is not (``ts > t`` holds for the truncated value, not for the stored one);
* comparisons on ``unknown``, ``variant``, ``geometry`` and ``geography`` are not pushed
  (null tests are).

Column paths are tuples (``("loc", "city")`` for ``loc.city``), pushed only for primitive
fields nested in structs. ``StringEndsWith`` and ``StringContains`` have no Iceberg predicate.

>>> from pyspark.sql.datasource import GreaterThan, In, Not, StringEndsWith
>>> from icepark.spec.types import DOUBLE, LONG, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "x", DOUBLE))
>>> print(translate(Not(In(("id",), (1, 2))), schema))
id NOT IN (1, 2)
>>> print(translate(GreaterThan(("x",), 1.5), schema))
x > 1.5 OR x IS NAN
>>> translate(StringEndsWith(("id",), "1"), schema) is None
True
"""

from __future__ import annotations

import math
import uuid
from typing import Any

from pyspark.sql import datasource as ds

from icepark.errors import IcebergError
from icepark.expressions import (
    ALWAYS_FALSE,
    Expr,
    bind,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal,
    not_in,
    not_null,
    not_starts_with,
    or_,
    starts_with,
)
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType, TypeId

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_NANOS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})
_UNORDERED = frozenset({TypeId.UNKNOWN, TypeId.VARIANT, TypeId.GEOMETRY, TypeId.GEOGRAPHY})


def translate(spark_filter: ds.Filter, schema: Schema) -> Expr | None:
    """The exact icepark expression of ``spark_filter`` on ``schema``, or None if there is
    none (then Spark must evaluate the filter). The expression binds to ``schema``."""
    try:
        expr = _translate(spark_filter, schema, truth=True)
        if expr is not None:
            bind(expr, schema, case_sensitive=True)  # literals that do not fit: not pushed
        return expr
    except IcebergError:
        return None


def _translate(f: ds.Filter, schema: Schema, *, truth: bool) -> Expr | None:
    """Where ``f`` is TRUE (``truth``) or FALSE (not ``truth``)."""
    match f:
        case ds.Not(child):
            return _translate(child, schema, truth=not truth)
        case ds.IsNull(attribute) | ds.IsNotNull(attribute):
            name, _ = _column(attribute, schema) or (None, None)
            if name is None:
                return None
            return is_null(name) if truth == isinstance(f, ds.IsNull) else not_null(name)
        case ds.In(attribute, values):
            return _in(attribute, values, schema, truth)
        case (ds.EqualTo() | ds.EqualNullSafe() | ds.GreaterThan() | ds.GreaterThanOrEqual()
              | ds.LessThan() | ds.LessThanOrEqual() | ds.StringStartsWith()):
            return _compare(f, schema, truth)
    return None


def _column(attribute: tuple[str, ...], schema: Schema) -> tuple[str, PrimitiveType] | None:
    """The dotted name and type of a primitive column (None: not one, or ambiguous)."""
    if not attribute or any("." in part for part in attribute):
        return None
    name = ".".join(attribute)
    field_id = schema.find_field_id(name)
    if field_id is None or schema.find_column_name(field_id) != name:
        return None  # unknown, or only a short name of a field inside a list or map
    t = schema.find_type(field_id)
    return (name, t) if isinstance(t, PrimitiveType) else None


def _pushable(t: PrimitiveType, value: Any) -> bool:
    """Whether Spark and Iceberg agree on how ``value`` compares with ``t``'s values."""
    if value is None:
        return False
    if t.type_id in _FLOATS:
        return isinstance(value, int | float) and not (isinstance(value, float)
                                                       and math.isnan(value))
    if t.type_id is TypeId.UUID:
        return isinstance(value, str) and _canonical_uuid(value)
    if t.type_id in _NANOS:
        return isinstance(value, int) and not isinstance(value, bool)
    return t.type_id not in _UNORDERED


def _canonical_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _compare(f: Any, schema: Schema, truth: bool) -> Expr | None:
    column = _column(f.attribute, schema)
    if column is None:
        return None
    name, t = column
    value = f.value
    if isinstance(f, ds.EqualNullSafe) and value is None:
        return is_null(name) if truth else not_null(name)
    if not _pushable(t, value) or (t.type_id is TypeId.UUID and not isinstance(
            f, ds.EqualTo | ds.EqualNullSafe)):
        return None
    nan_above = t.type_id in _FLOATS  # Spark: NaN > every other value, NaN = NaN

    def with_nan(expr: Expr) -> Expr:
        return or_(expr, is_nan(name)) if nan_above else expr

    match f, truth:
        case ds.EqualTo() | ds.EqualNullSafe(), True:
            return equal(name, value)
        case ds.EqualTo(), False:
            return not_equal(name, value)
        case ds.EqualNullSafe(), False:
            return or_(is_null(name), not_equal(name, value))
        case ds.GreaterThan(), True:
            return with_nan(greater_than(name, value))
        case ds.GreaterThan(), False:
            return less_than_or_equal(name, value)
        case ds.GreaterThanOrEqual(), True:
            return with_nan(greater_than_or_equal(name, value))
        case ds.GreaterThanOrEqual(), False:
            return less_than(name, value)
        case ds.LessThan(), True:
            return less_than(name, value)
        case ds.LessThan(), False:
            return with_nan(greater_than_or_equal(name, value))
        case ds.LessThanOrEqual(), True:
            return less_than_or_equal(name, value)
        case ds.LessThanOrEqual(), False:
            return with_nan(greater_than(name, value))
        case ds.StringStartsWith(), _:
            if t.type_id is not TypeId.STRING or not isinstance(value, str):
                return None
            return starts_with(name, value) if truth else not_starts_with(name, value)
    return None


def _in(attribute: tuple[str, ...], values: tuple[Any, ...], schema: Schema,
        truth: bool) -> Expr | None:
    """``a IN (..)`` is TRUE for a listed non-null value; with a null listed it is never
    FALSE (``a NOT IN (1, null)`` is null or false)."""
    column = _column(attribute, schema)
    if column is None:
        return None
    name, t = column
    present = [v for v in values if v is not None]
    if not present or not all(_pushable(t, v) for v in present):
        return None
    if truth:
        return is_in(name, present)
    return ALWAYS_FALSE if len(present) < len(values) else not_in(name, present)
