"""Spark data source filters translate to icepark expressions exactly, or not at all."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import datasource as ds

from icepark.spark.datasource.filters import translate
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
)

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING),
    NestedField.optional(3, "x", DOUBLE), NestedField.optional(4, "f", FLOAT),
    NestedField.optional(5, "u", UUID), NestedField.optional(6, "d", DATE),
    NestedField.optional(7, "ts", TIMESTAMPTZ), NestedField.optional(8, "ntz", TIMESTAMP),
    NestedField.optional(9, "st", StructType((NestedField.optional(10, "a", LONG),
                                               NestedField.optional(11, "b.c", STRING)))),
    NestedField.optional(12, "l", ListType(13, LONG)),
    NestedField.optional(14, "dec", PrimitiveType.decimal(9, 2)))
U = "f79c3e09-677c-4bbd-a479-3f349cb785e7"


@pytest.mark.parametrize(("spark_filter", "expected"), [
    (ds.EqualTo(("id",), 5), "id = 5"),
    (ds.Not(ds.EqualTo(("id",), 5)), "id != 5"),
    (ds.EqualNullSafe(("s",), "a"), "s = 'a'"),
    # a <=> 'a' is FALSE (not null) for a null a, so NOT keeps the nulls
    (ds.Not(ds.EqualNullSafe(("s",), "a")), "s IS NULL OR s != 'a'"),
    (ds.EqualNullSafe(("s",), None), "s IS NULL"),
    (ds.Not(ds.EqualNullSafe(("s",), None)), "s IS NOT NULL"),
    (ds.GreaterThan(("id",), 1), "id > 1"),
    (ds.Not(ds.GreaterThan(("id",), 1)), "id <= 1"),
    (ds.GreaterThanOrEqual(("id",), 1), "id >= 1"),
    (ds.LessThan(("id",), 1), "id < 1"),
    (ds.Not(ds.LessThanOrEqual(("id",), 1)), "id > 1"),
    # Spark orders NaN above every other value
    (ds.GreaterThan(("x",), 1.5), "x > 1.5 OR x IS NAN"),
    (ds.GreaterThanOrEqual(("f",), 1.5), "f >= 1.5 OR f IS NAN"),
    (ds.LessThan(("x",), 1.5), "x < 1.5"),
    (ds.Not(ds.LessThan(("x",), 1.5)), "x >= 1.5 OR x IS NAN"),
    (ds.Not(ds.GreaterThan(("x",), 1.5)), "x <= 1.5"),
    (ds.Not(ds.EqualTo(("x",), 1.5)), "x != 1.5"),
    (ds.EqualTo(("x",), float("nan")), None),
    (ds.In(("id",), (1, 2)), "id IN (1, 2)"),
    (ds.Not(ds.In(("id",), (1, 2))), "id NOT IN (1, 2)"),
    (ds.In(("s",), ("a", None)), "s IN ('a')"),
    (ds.Not(ds.In(("s",), ("a", None))), "FALSE"),  # never TRUE in SQL
    (ds.In(("s",), (None,)), None),
    (ds.IsNull(("s",)), "s IS NULL"),
    (ds.Not(ds.IsNull(("s",))), "s IS NOT NULL"),
    (ds.IsNotNull(("s",)), "s IS NOT NULL"),
    (ds.Not(ds.Not(ds.IsNotNull(("s",)))), "s IS NOT NULL"),
    (ds.StringStartsWith(("s",), "ab"), "s LIKE 'ab%'"),
    (ds.Not(ds.StringStartsWith(("s",), "ab")), "s NOT LIKE 'ab%'"),
    (ds.StringEndsWith(("s",), "ab"), None),
    (ds.StringContains(("s",), "ab"), None),
    (ds.StringStartsWith(("id",), "1"), None),
    (ds.EqualTo(("st", "a"), 3), "st.a = 3"),
    (ds.EqualTo(("st", "b.c"), "x"), None),  # a dot in a name: ambiguous as a dotted path
    (ds.EqualTo(("l",), [1]), None),  # not a primitive column
    (ds.EqualTo(("nope",), 1), None),
    (ds.EqualTo(("u",), U), f"u = '{U}'"),
    (ds.In(("u",), (U,)), f"u IN ('{U}')"),
    (ds.EqualTo(("u",), U.upper()), None),  # Spark compares strings: never equal
    (ds.GreaterThan(("u",), U), None),
    (ds.EqualTo(("d",), dt.date(2024, 1, 2)), "d = '2024-01-02'"),
    (ds.EqualTo(("dec",), Decimal("1.25")), "dec = 1.25"),
    (ds.EqualTo(("s",), 5), None),  # a literal of another type does not bind
])
def test_translate(spark_filter: ds.Filter, expected: str | None) -> None:
    result = translate(spark_filter, SCHEMA)
    assert (None if result is None else str(result)) == expected


def test_timestamps_bind_to_microseconds() -> None:
    aware = translate(ds.EqualTo(("ts",), dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC)), SCHEMA)
    naive = translate(ds.GreaterThan(("ntz",), dt.datetime(2024, 1, 1, 5)), SCHEMA)
    assert aware is not None and naive is not None
    # a zoned value cannot be compared with a timestamp without zone
    assert translate(ds.EqualTo(("ntz",), dt.datetime(2024, 1, 1, tzinfo=dt.UTC)), SCHEMA) is None
