"""Inclusive and strict metrics evaluators: tables of files and filters, and properties over
random small files whose metrics are computed from their values (some truncated or dropped):
inclusive false => no row matches; strict true => every row matches."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import CorruptFile
from icepark.expressions import (
    InclusiveMetricsEvaluator,
    RowEvaluator,
    StrictMetricsEvaluator,
    parse,
)
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    UUID,
    NestedField,
    PrimitiveType,
)
from tests.expressions.expr_strategies import TYPES, expressions, nullable_values
from tests.expressions.metrics_fixtures import data_file

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "s", STRING),
    NestedField.optional(3, "f", DOUBLE),
    NestedField.optional(4, "nulls", INT),
    NestedField.optional(5, "added", INT),  # not in the file: no metrics at all
    NestedField.optional(6, "nans", DOUBLE),
    NestedField.optional(7, "u", UUID),
)
NAN = math.nan
FILE = DataFile(
    "f.parquet", FileFormat.PARQUET, (), record_count=50, file_size_in_bytes=1,
    value_counts={1: 50, 2: 50, 3: 50, 4: 50, 6: 50},
    null_value_counts={1: 0, 2: 10, 3: 0, 4: 50, 6: 0},
    nan_value_counts={3: 5, 6: 50},
    lower_bounds={1: to_bytes(INT, 30),  # a 4-byte bound from before int -> long
                  2: to_bytes(STRING, "abc"), 3: to_bytes(DOUBLE, -0.0)},
    upper_bounds={1: to_bytes(LONG, 79), 2: to_bytes(STRING, "abe"), 3: to_bytes(DOUBLE, 2.5)},
)

# (filter, inclusive: rows might match, strict: all rows match)
CASES = [
    ("id < 30", False, False),
    ("id < 31", True, False),
    ("id < 80", True, True),
    ("id <= 29", False, False),
    ("id <= 79", True, True),
    ("id > 79", False, False),
    ("id > 78", True, False),
    ("id > 29", True, True),
    ("id >= 80", False, False),
    ("id >= 30", True, True),
    ("id = 29", False, False),
    ("id = 30", True, False),
    ("id = 80", False, False),
    ("id != 30", True, False),
    ("id != 29", True, True),
    ("id IN (1, 2, 80)", False, False),
    ("id IN (1, 30)", True, False),
    ("id NOT IN (1, 80)", True, True),
    ("id NOT IN (1, 30)", True, False),
    ("id IS NULL", False, False),
    ("id IS NOT NULL", True, True),
    # strings, with nulls
    ("s = 'abd'", True, False),
    ("s = 'abf'", False, False),
    ("s LIKE 'ab%'", True, False),  # nulls do not start with 'ab'
    ("s LIKE 'abd%'", True, False),
    ("s LIKE 'abf%'", False, False),
    ("s LIKE 'aa%'", False, False),
    ("s NOT LIKE 'ab%'", False, False),  # nulls do not match NOT LIKE either
    ("s NOT LIKE 'abd%'", True, False),
    ("s IS NULL", True, False),
    ("s IS NOT NULL", True, False),
    ("s != 'x'", True, False),
    # floats with NaN: NaN only satisfies != and NOT IN
    ("f IS NAN", True, False),
    ("f IS NOT NAN", True, False),
    ("f < 3", True, False),
    ("f = 0", True, False),  # -0.0 = 0.0
    ("f < 0", False, False),
    ("f > 2.5", False, False),
    ("f != 3", True, True),
    ("f NOT IN (3, 4)", True, True),
    ("f != 1", True, False),
    ("nans IS NAN", True, True),
    ("nans IS NOT NAN", False, False),
    ("nans = 1", False, False),
    ("nans != 1", True, True),
    # all nulls
    ("nulls IS NULL", True, True),
    ("nulls IS NOT NULL", False, False),
    ("nulls = 1", False, False),
    ("nulls != 1", False, False),
    ("nulls NOT IN (1, 2)", False, False),
    ("nulls < 5", False, False),
    # no metrics (e.g. a column added later): unknown
    ("added IS NULL", True, False),
    ("added = 1", True, False),
    ("added IS NOT NULL", True, False),
    # logic
    ("id < 30 OR s = 'abd'", True, False),
    ("id >= 30 AND id IS NOT NULL", True, True),
    ("NOT id < 30", True, True),
    ("TRUE", True, True),
    ("FALSE", False, False),
]


@pytest.mark.parametrize(("text", "inclusive", "strict"), CASES)
def test_metrics(text: str, inclusive: bool, strict: bool) -> None:
    assert InclusiveMetricsEvaluator(SCHEMA, parse(text)).eval(FILE) is inclusive
    assert StrictMetricsEvaluator(SCHEMA, parse(text)).eval(FILE) is strict


def _file(**kwargs: Any) -> DataFile:
    return DataFile("g.parquet", FileFormat.PARQUET, (), **{"file_size_in_bytes": 1, **kwargs})


def test_empty_file() -> None:
    empty = _file(record_count=0)
    assert not InclusiveMetricsEvaluator(SCHEMA, parse("TRUE")).eval(empty)
    assert not InclusiveMetricsEvaluator(SCHEMA, parse("id > 1")).eval(empty)
    assert InclusiveMetricsEvaluator(SCHEMA, parse("TRUE"), include_empty_files=True).eval(empty)
    assert StrictMetricsEvaluator(SCHEMA, parse("id > 1")).eval(empty)  # vacuously


def test_truncated_string_bounds() -> None:
    """'abcdefgh'..'abcdefgz' truncated to 4: lower 'abcd', upper 'abce'."""
    f = _file(record_count=2, value_counts={2: 2}, null_value_counts={2: 0},
              lower_bounds={2: b"abcd"}, upper_bounds={2: b"abce"})
    inclusive = [InclusiveMetricsEvaluator(SCHEMA, parse(e)).eval(f) for e in (
        "s = 'abcdefgh'", "s = 'abce'", "s = 'abcea'", "s LIKE 'abcdef%'", "s LIKE 'abce%'",
        "s LIKE 'abcf%'", "s NOT LIKE 'abc%'", "s NOT LIKE 'abcd%'", "s < 'abcd'")]
    assert inclusive == [True, True, False, True, True, False, False, True, False]
    strict = [StrictMetricsEvaluator(SCHEMA, parse(e)).eval(f) for e in (
        "s LIKE 'abc%'", "s LIKE 'abcd%'", "s NOT LIKE 'abd%'", "s < 'abcf'", "s = 'abcd'")]
    assert strict == [True, False, True, True, False]


def test_unusable_bounds_are_ignored() -> None:
    nan_bounds = _file(record_count=1, value_counts={3: 1}, null_value_counts={3: 0},
                       nan_value_counts={3: 0}, lower_bounds={3: to_bytes(DOUBLE, NAN)},
                       upper_bounds={3: to_bytes(DOUBLE, NAN)})
    assert InclusiveMetricsEvaluator(SCHEMA, parse("f = 1")).eval(nan_bounds)
    assert not StrictMetricsEvaluator(SCHEMA, parse("f < 1")).eval(nan_bounds)
    # Older Java compared UUIDs as signed longs: lower 0x80.. > upper 0x00.. unsigned.
    low, high = uuid.UUID(int=2**127), uuid.UUID(int=5)
    signed = _file(record_count=2, value_counts={7: 2}, null_value_counts={7: 0},
                   lower_bounds={7: low.bytes}, upper_bounds={7: high.bytes})
    assert InclusiveMetricsEvaluator(SCHEMA, parse(f"u = '{uuid.UUID(int=1)}'")).eval(signed)


def test_corrupt_bounds() -> None:
    bad = _file(record_count=1, lower_bounds={1: b"\x01\x02\x03"})
    with pytest.raises(CorruptFile, match=r"g\.parquet"):
        InclusiveMetricsEvaluator(SCHEMA, parse("id = 1")).eval(bad)


_DROPPABLE = st.frozensets(st.sampled_from(
    ["values", "nulls", "nans", "lower", "upper", "values:1", "nulls:2", "nans:1", "lower:2",
     "upper:1"]), max_size=2)


@st.composite
def _files(draw: st.DrawFn) -> tuple[list[PrimitiveType], list[tuple[Any, ...]], Any,
                                     int | None, frozenset[str]]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=2, max_size=2))
    rows = draw(st.lists(st.tuples(*(nullable_values(t) for t in types)), max_size=6))
    expr = draw(expressions([("a", types[0]), ("b", types[1])]))
    truncate = draw(st.none() | st.integers(1, 3))
    return types, rows, expr, truncate, draw(st.one_of(st.just(frozenset()), _DROPPABLE))


@settings(max_examples=200)
@given(_files())
def test_metrics_properties(case: tuple[list[PrimitiveType], list[tuple[Any, ...]], Any,
                                        int | None, frozenset[str]]) -> None:
    types, rows, expr, truncate, dropped = case
    schema = Schema.of(NestedField.optional(1, "a", types[0]),
                       NestedField.optional(2, "b", types[1]))
    f = data_file(types, rows, truncate, dropped)
    matches = [RowEvaluator(schema, expr).eval(row) for row in rows]
    if not InclusiveMetricsEvaluator(schema, expr).eval(f):
        assert not any(matches), "inclusive false, but a row matches"
    if StrictMetricsEvaluator(schema, expr).eval(f):
        assert all(matches), "strict true, but a row does not match"
