"""Transforms of nanosecond timestamps (v3 ``timestamp_ns``, ``timestamptz_ns``): the spec's
hash vectors (Appendix B), the time transforms rounding down, human strings, and projections,
each tied to the microsecond transforms they must agree with."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.expressions.expr import Op
from icepark.expressions.transform_projection import project
from icepark.spec.datetimes import timestamp_to_micros
from icepark.spec.hashing import nanos_to_micros
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, hash_value
from icepark.spec.types import (
    DATE,
    INT,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    NestedField,
    PrimitiveType,
)

NS = 1_000
TS_2017_NS = timestamp_to_micros(datetime(2017, 11, 16, 22, 31, 8)) * NS
DAY_NS = 86_400 * 10**9
HOUR_NS = 3_600 * 10**9
NANO_TYPES = [TIMESTAMP_NS, TIMESTAMPTZ_NS]
MICRO_OF = {TIMESTAMP_NS: TIMESTAMP, TIMESTAMPTZ_NS: TIMESTAMPTZ}
NS_VALUES = st.integers(-(2**63), 2**63 - 1)

# --- Appendix B ----------------------------------------------------------------------------

# "Nanosecond timestamps must be converted to microsecond precision before hashing"; the
# timestamptz_ns vectors are written at -08:00, the same instants in UTC.
HASH_VECTORS: list[tuple[PrimitiveType, int, int]] = [
    (TIMESTAMP_NS, TS_2017_NS, -2047944441),  # 2017-11-16T22:31:08
    (TIMESTAMP_NS, TS_2017_NS + 1_001, -1207196810),  # 2017-11-16T22:31:08.000001001
    (TIMESTAMPTZ_NS, TS_2017_NS, -2047944441),  # 2017-11-16T14:31:08-08:00
    (TIMESTAMPTZ_NS, TS_2017_NS + 1_001, -1207196810),  # 2017-11-16T14:31:08.000001001-08:00
]


@pytest.mark.parametrize(("t", "value", "expected"), HASH_VECTORS)
def test_appendix_b_nanosecond_hash_vectors(t: PrimitiveType, value: int, expected: int) -> None:
    assert hash_value(t, value) == expected


@pytest.mark.parametrize(("nanos", "micros"), [
    (0, 0), (999, 0), (1_000, 1), (1_001, 1), (-1, -1), (-999, -1), (-1_000, -1), (-1_001, -2),
])
def test_nanos_round_down_to_micros(nanos: int, micros: int) -> None:
    assert nanos_to_micros(nanos) == micros


@given(NS_VALUES, st.integers(1, 1024))
@pytest.mark.parametrize("t", NANO_TYPES, ids=str)
def test_bucket_of_nanos_is_bucket_of_their_micros(t: PrimitiveType, value: int, n: int) -> None:
    bucket = Transform.bucket(n)
    assert bucket.apply(t, value) == bucket.apply(MICRO_OF[t], nanos_to_micros(value))


# --- source and result types ---------------------------------------------------------------

@pytest.mark.parametrize("source", NANO_TYPES, ids=str)
@pytest.mark.parametrize(("transform", "result"), [
    (Transform.identity(), None), (Transform.void(), None), (Transform.bucket(16), INT),
    (Transform.year(), INT), (Transform.month(), INT), (Transform.day(), DATE),
    (Transform.hour(), INT),
], ids=str)
def test_spec_table_admits_nanosecond_timestamps(transform: Transform, result: Any,
                                                 source: PrimitiveType) -> None:
    """*Partition Transforms*: bucket, year, month, day and hour list ``timestamp_ns`` and
    ``timestamptz_ns``; identity and void take any of these."""
    assert transform.can_transform(source)
    assert transform.result_type(source) == (source if result is None else result)


@pytest.mark.parametrize("source", NANO_TYPES, ids=str)
def test_truncate_does_not_take_nanosecond_timestamps(source: PrimitiveType) -> None:
    assert not Transform.truncate(10).can_transform(source)


# --- time transforms -----------------------------------------------------------------------

TIME_VECTORS: list[tuple[Transform, int, int]] = [
    (Transform.year(), TS_2017_NS, 47),
    (Transform.month(), TS_2017_NS, 574),
    (Transform.day(), TS_2017_NS, 17486),
    (Transform.hour(), TS_2017_NS, 17486 * 24 + 22),
    # rounding down, before 1970 too: 1969-12-31T23:59:59.999999999
    (Transform.year(), -1, -1), (Transform.month(), -1, -1), (Transform.day(), -1, -1),
    (Transform.hour(), -1, -1),
    (Transform.day(), -DAY_NS, -1), (Transform.day(), -DAY_NS - 1, -2),
    (Transform.hour(), -HOUR_NS, -1), (Transform.hour(), -HOUR_NS - 1, -2),
    (Transform.day(), DAY_NS - 1, 0), (Transform.day(), DAY_NS, 1),
    (Transform.year(), timestamp_to_micros(datetime(1969, 1, 1)) * NS, -1),
    (Transform.year(), timestamp_to_micros(datetime(1969, 1, 1)) * NS - 1, -2),
    (Transform.month(), timestamp_to_micros(datetime(1969, 12, 1)) * NS - 1, -2),
    # the ends of the long range (1677-09-21 and 2262-04-11)
    (Transform.year(), -(2**63), 1677 - 1970), (Transform.year(), 2**63 - 1, 2262 - 1970),
]


@pytest.mark.parametrize("source", NANO_TYPES, ids=str)
@pytest.mark.parametrize(("transform", "value", "expected"), TIME_VECTORS)
def test_time_transform_vectors(transform: Transform, value: int, expected: int,
                                source: PrimitiveType) -> None:
    assert transform.apply(source, value) == expected


@given(NS_VALUES)
@pytest.mark.parametrize("transform", [Transform.year(), Transform.month(), Transform.day(),
                                       Transform.hour()], ids=str)
def test_time_transforms_of_nanos_are_those_of_their_micros(transform: Transform,
                                                            value: int) -> None:
    assert transform.apply(TIMESTAMP_NS, value) == transform.apply(
        TIMESTAMP, nanos_to_micros(value))


@pytest.mark.parametrize("source", NANO_TYPES, ids=str)
@pytest.mark.parametrize("transform", [Transform.identity(), Transform.void(),
                                       Transform.bucket(4), Transform.year(), Transform.month(),
                                       Transform.day(), Transform.hour()], ids=str)
def test_null_in_null_out(transform: Transform, source: PrimitiveType) -> None:
    """"All transforms must return ``null`` for a ``null`` input value.\""""
    assert transform.apply(source, None) is None
    assert transform.to_human_string(source, None) == "null"


# --- human strings and paths ---------------------------------------------------------------

HUMAN_VECTORS: list[tuple[Transform, PrimitiveType, int, str]] = [
    (Transform.identity(), TIMESTAMP_NS, TS_2017_NS + 1_001, "2017-11-16T22:31:08.000001001"),
    (Transform.identity(), TIMESTAMPTZ_NS, TS_2017_NS + 1_001,
     "2017-11-16T22:31:08.000001001+00:00"),
    (Transform.identity(), TIMESTAMP_NS, TS_2017_NS, "2017-11-16T22:31:08"),
    (Transform.identity(), TIMESTAMP_NS, TS_2017_NS + 100_000_000, "2017-11-16T22:31:08.100000000"),
    (Transform.identity(), TIMESTAMP_NS, -1, "1969-12-31T23:59:59.999999999"),
    (Transform.identity(), TIMESTAMPTZ_NS, 0, "1970-01-01T00:00:00+00:00"),
    (Transform.hour(), TIMESTAMP_NS, 17486 * 24 + 22, "2017-11-16-22"),
    (Transform.day(), TIMESTAMPTZ_NS, -1, "1969-12-31"),
    (Transform.bucket(16), TIMESTAMP_NS, 3, "3"),
]


@pytest.mark.parametrize(("transform", "source", "value", "expected"), HUMAN_VECTORS)
def test_human_strings(transform: Transform, source: PrimitiveType, value: int,
                       expected: str) -> None:
    assert transform.to_human_string(source, value) == expected


def test_partition_path_of_nanosecond_columns() -> None:
    schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMPTZ_NS),
                       NestedField.optional(2, "at", TIMESTAMP_NS))
    spec = PartitionSpecBuilder(schema).identity("ts").hour("at").build()
    ts, at = TS_2017_NS + 1_001, -1
    partition = [Transform.identity().apply(TIMESTAMPTZ_NS, ts),
                 Transform.hour().apply(TIMESTAMP_NS, at)]
    assert spec.partition_path(partition, schema) == (
        "ts=2017-11-16T22%3A31%3A08.000001001%2B00%3A00/at_hour=1969-12-31-23")


# --- projections ---------------------------------------------------------------------------

PROJECTIONS: list[tuple[Op, int, Transform, bool, tuple[Op, tuple[Any, ...]] | None]] = [
    # inclusive: x < v is x <= v - 1 ns
    (Op.LT, DAY_NS, Transform.day(), False, (Op.LT_EQ, (0,))),
    (Op.LT_EQ, DAY_NS, Transform.day(), False, (Op.LT_EQ, (1,))),
    (Op.GT, DAY_NS - 1, Transform.day(), False, (Op.GT_EQ, (1,))),
    (Op.EQ, TS_2017_NS, Transform.hour(), False, (Op.EQ, (17486 * 24 + 22,))),
    (Op.EQ, -1, Transform.day(), False, (Op.IN, (-1, 0))),  # legacy writers' partition too
    (Op.NOT_EQ, DAY_NS, Transform.day(), False, None),
    (Op.EQ, TS_2017_NS + 1_001, Transform.bucket(16),
     False, (Op.EQ, (Transform.bucket(16).apply(TIMESTAMP, TS_2017_NS // NS + 1),))),
    (Op.EQ, TS_2017_NS + 1, Transform.identity(), False, (Op.EQ, (TS_2017_NS + 1,))),
    # strict: every row of the partition must match
    (Op.LT_EQ, DAY_NS, Transform.day(), True, (Op.LT, (1,))),
    (Op.LT, DAY_NS, Transform.day(), True, (Op.LT, (1,))),
    (Op.GT_EQ, DAY_NS, Transform.day(), True, (Op.GT, (0,))),
    (Op.EQ, DAY_NS, Transform.day(), True, None),
    (Op.NOT_EQ, TS_2017_NS, Transform.bucket(16), True,
     (Op.NOT_EQ, (Transform.bucket(16).apply(TIMESTAMP, TS_2017_NS // NS),))),
]


@pytest.mark.parametrize("source", NANO_TYPES, ids=str)
@pytest.mark.parametrize(("op", "value", "transform", "strict", "expected"), PROJECTIONS)
def test_projection_vectors(op: Op, value: int, transform: Transform, strict: bool, *,
                            expected: tuple[Op, tuple[Any, ...]] | None,
                            source: PrimitiveType) -> None:
    assert project(op, (value,), transform, source, strict) == expected


@given(st.integers(-(2**53), 2**53), st.booleans(),
       st.sampled_from([Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ]),
       st.sampled_from([Transform.year(), Transform.month(), Transform.day(), Transform.hour(),
                        Transform.bucket(7)]))
def test_projection_of_whole_micros_matches_the_microsecond_projection(
        micros: int, strict: bool, op: Op, transform: Transform) -> None:
    """A nanosecond literal on a microsecond boundary projects as that microsecond does: the
    partitions are unions of whole microseconds."""
    assert project(op, (micros * NS,), transform, TIMESTAMP_NS, strict) == project(
        op, (micros,), transform, TIMESTAMP, strict)


@given(NS_VALUES.filter(lambda v: -(2**63) < v < 2**63 - 1), st.integers(-3 * DAY_NS, 3 * DAY_NS),
       st.sampled_from([Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ]), st.booleans(),
       st.sampled_from([Transform.day(), Transform.hour(), Transform.year()]))
def test_projections_are_sound(literal: int, offset: int, op: Op, strict: bool,
                               transform: Transform) -> None:
    """Inclusive: ``p(v)`` implies the projection holds for ``t(v)``; strict: the projection
    holding for ``t(v)`` implies ``p(v)`` (v near the literal, where it matters)."""
    value = literal + offset
    if not -(2**63) <= value < 2**63:
        return
    projected = project(op, (literal,), transform, TIMESTAMP_NS, strict)
    matches = _compare(op, value, literal)
    if projected is None:
        return
    partition_op, bounds = projected
    holds = _compare_set(partition_op, transform.apply(TIMESTAMP_NS, value), bounds)
    assert (holds <= matches) if strict else (matches <= holds)


def _compare(op: Op, a: int, b: int) -> bool:
    return {Op.LT: a < b, Op.LT_EQ: a <= b, Op.GT: a > b, Op.GT_EQ: a >= b, Op.EQ: a == b,
            Op.NOT_EQ: a != b}[op]


def _compare_set(op: Op, a: int, bounds: tuple[Any, ...]) -> bool:
    if op is Op.IN:
        return a in bounds
    if op is Op.NOT_IN:
        return a not in bounds
    return _compare(op, a, bounds[0])
