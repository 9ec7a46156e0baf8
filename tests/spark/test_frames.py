"""Small driver tables in queries (:mod:`icepark.spark.frames`): a lookup written as ``CASE``
expressions gives what the broadcast join it replaces gives, whatever the values hold."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from icepark.spark.frames import LOOKUP_ROWS, local_frame, lookup, with_lookup

pytestmark = pytest.mark.spark

DDL = "k string, n int, big long, flag boolean, x double, label string"
ROWS: list[tuple[Any, ...]] = [
    ("file:///w/a.parquet", 0, 2**40, True, 1.5, "it's"),
    ("s3://b/k e y/ü\\'`.parquet", 1, None, False, math.inf, None),
    ("", 2, -1, None, -0.25, 'say "hi"'),
]


def _joined(spark: SparkSession, keys: list[str | None]) -> list[tuple[Any, ...]]:
    probe = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "i int, k string")
    out = probe.join(F.broadcast(local_frame(spark, ROWS, DDL)), "k", "left")
    return sorted(tuple(r)[1:] for r in out.select("k", "i", "n", "big", "flag", "x",
                                                     "label").collect())


def _looked_up(spark: SparkSession, keys: list[str | None]) -> list[tuple[Any, ...]]:
    probe = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "i int, k string")
    found = lookup("k", ROWS, DDL)
    assert found is not None
    out = probe.select("k", "i", *(c.alias(n) for n, c in found.items()))
    return sorted(tuple(r)[1:] for r in out.select("k", "i", "n", "big", "flag", "x",
                                                     "label").collect())


def test_a_lookup_gives_what_the_broadcast_join_gives(spark: SparkSession) -> None:
    keys = [r[0] for r in ROWS] + ["file:///w/other.parquet", None]
    assert _looked_up(spark, keys) == _joined(spark, keys)
    assert _looked_up(spark, keys)[0] == (0, 0, 2**40, True, 1.5, "it's")


def test_a_lookup_of_nan_and_of_no_rows(spark: SparkSession) -> None:
    found = lookup("k", [(1, math.nan)], "k int, x double")
    assert found is not None
    value = spark.range(1).select(F.lit(1).alias("k")).select(found["x"]).first()
    assert value is not None and math.isnan(value[0])
    none = lookup("k", [], "k int, x double")
    assert none is not None
    assert spark.range(1).select(none["x"]).first() == (None,)


def test_more_rows_than_the_limit_are_left_to_a_join(spark: SparkSession) -> None:
    rows = [(i, i) for i in range(LOOKUP_ROWS + 1)]
    assert lookup("k", rows, "k int, v int") is None
    assert lookup("k", rows[:LOOKUP_ROWS], "k int, v int") is not None


@pytest.mark.parametrize("count", [3, LOOKUP_ROWS + 2])  # CASE expressions, a broadcast join
def test_with_lookup_keeps_columns_and_fills_what_no_row_matches(spark: SparkSession,
                                                                 count: int) -> None:
    rows = [(i, f"p{i}", i * 10) for i in range(count)]
    probe = spark.createDataFrame([(i, i % 2 == 0) for i in (0, 2, 50)], "n int, even boolean")
    out = with_lookup(spark, probe, "n", rows, "n int, path string, size long",
                      keep=("n",), otherwise={"size": F.lit(-1).cast("long")})
    assert sorted(out.columns) == ["n", "path", "size"]
    assert sorted(tuple(r) for r in out.select("n", "path", "size").collect()) == [
        (0, "p0", 0), (2, "p2", 20), (50, None, -1)]
