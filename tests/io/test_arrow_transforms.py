"""The Arrow transform kernels against the spec's transforms on Python values (parity), the
spec's hash vectors (Appendix B), and partition grouping against per-row grouping."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from decimal import Decimal
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.io.arrow.transforms import (
    civil_year_month,
    from_python_values,
    murmur3_longs,
    partition_batches,
    source_column,
    to_python_values,
    transform_array,
)
from icepark.spec.datetimes import days_to_year_month
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.spec.values import check_value

INT64 = (-(2**63), 2**63 - 1)


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E{-scale}"))


VALUES: dict[PrimitiveType, st.SearchStrategy[Any]] = {
    BOOLEAN: st.booleans(),
    INT: st.integers(-(2**31), 2**31 - 1),
    LONG: st.integers(*INT64),
    FLOAT: st.floats(width=32),
    DOUBLE: st.floats(),
    PrimitiveType.decimal(9, 2): _decimal(9, 2),
    PrimitiveType.decimal(18, 0): _decimal(18, 0),
    PrimitiveType.decimal(38, 10): _decimal(38, 10),
    PrimitiveType.decimal(3, 3): _decimal(3, 3),
    DATE: st.integers(-(2**31), 2**31 - 1),
    TIME: st.integers(0, 86_400_000_000 - 1),
    TIMESTAMP: st.integers(*INT64),
    TIMESTAMPTZ: st.integers(-(2**40), 2**40) | st.integers(*INT64),
    STRING: st.text(max_size=12),
    UUID: st.uuids(),
    PrimitiveType.fixed(4): st.binary(min_size=4, max_size=4),
    BINARY: st.binary(max_size=12),
}
TRANSFORMS = [Transform.identity(), Transform.void(), Transform.year(), Transform.month(),
              Transform.day(), Transform.hour(), *(Transform.bucket(n) for n in
              (1, 2, 16, 1000, 2**31 - 1)), *(Transform.truncate(w) for w in (1, 2, 3, 10, 50))]
CASES = [(t, tr) for t in VALUES for tr in TRANSFORMS if tr.can_transform(t)]


def _key(value: Any) -> Any:
    """A comparable form: NaN equals NaN, a decimal keeps its exponent, -0.0 is not 0.0."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("float", value, math.copysign(1, value))
    if isinstance(value, Decimal):
        return ("decimal", str(value))
    return value


def _fits(t: Any, values: list[Any]) -> bool:
    try:
        for v in values:
            if v is not None:
                check_value(t, v)
    except ValidationError:
        return False
    return True


@st.composite
def _case(draw: st.DrawFn) -> tuple[PrimitiveType, Transform, list[Any], bool]:
    source, transform = draw(st.sampled_from(CASES))
    values = draw(st.lists(st.none() | VALUES[source], max_size=25))
    return source, transform, values, draw(st.booleans())


@settings(max_examples=600, deadline=None)
@given(_case())
def test_kernel_equals_the_spec_transform_element_wise(
        case: tuple[PrimitiveType, Transform, list[Any], bool]) -> None:
    """PARITY: for random values of every source type, nulls included, the Arrow kernel gives
    exactly ``Transform.function(source)`` of each value (or refuses what cannot be stored)."""
    source, transform, values, sliced = case
    array = from_python_values([None, *values, None] if sliced else values, source)
    if sliced:  # a non-zero offset into the buffers
        array = array.slice(1, len(values))
    expected = [transform.function(source)(v) for v in values]
    result_type = transform.result_type(source)
    if not _fits(result_type, expected):
        with pytest.raises(ValidationError):
            transform_array(transform, source, array)
        return
    result = transform_array(transform, source, array)
    assert len(result) == len(values)
    assert result.type == from_python_values([], result_type).type
    assert [_key(v) for v in to_python_values(result, result_type)] == \
        [_key(v) for v in expected]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(CASES), st.lists(st.lists(st.none() | st.just(0), max_size=5),
                                        max_size=4))
def test_chunked_arrays_give_the_same_values(case: tuple[PrimitiveType, Transform],
                                             shape: list[list[int | None]]) -> None:
    source, transform = case
    example = {INT: 7, LONG: -7, DATE: -3, TIME: 5, TIMESTAMP: -1, TIMESTAMPTZ: 1,
               STRING: "é😀x", BINARY: b"\x00\x01", UUID: uuid.UUID(int=5),
               PrimitiveType.fixed(4): b"abcd", BOOLEAN: True, FLOAT: 1.5, DOUBLE: -0.5}
    value = example.get(source, Decimal(1).scaleb(-source.scale) if source.scale else Decimal(7))
    chunks = [from_python_values([None if v is None else value for v in c], source)
              for c in shape]
    chunked = pa.chunked_array(chunks, type=from_python_values([], source).type)
    flat = from_python_values([None if v is None else value for c in shape for v in c], source)
    assert transform_array(transform, source, chunked).to_pylist() == \
        transform_array(transform, source, flat).to_pylist()


# Appendix B: "Test value" column (hash), checked through bucket[Integer.MAX_VALUE].
HASH_VECTORS: list[tuple[PrimitiveType, Any, int]] = [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (PrimitiveType.decimal(4, 2), Decimal("14.20"), -500754589),
    (DATE, 17486, -653330422),
    (TIME, 81068000000, -662762989),
    (TIMESTAMP, 1510871468000000, -2047944441),
    (TIMESTAMPTZ, 1510871468000000, -2047944441),
    (STRING, "iceberg", 1210000089),
    (UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
    (PrimitiveType.fixed(4), b"\x00\x01\x02\x03", -188683207),
    (BINARY, b"\x00\x01\x02\x03", -188683207),
]


@pytest.mark.parametrize(("source", "value", "hashed"), HASH_VECTORS)
def test_appendix_b_hash_vectors(source: PrimitiveType, value: Any, hashed: int) -> None:
    n = 2**31 - 1
    result = transform_array(Transform.bucket(n), source, from_python_values([value], source))
    assert result.to_pylist() == [(hashed & 0x7FFFFFFF) % n]


def test_murmur3_of_longs_matches_mmh3() -> None:
    values = np.array([0, 1, -1, 34, 2**63 - 1, -(2**63), 1510871468000000], dtype=np.int64)
    assert murmur3_longs(values).tolist() == [
        mmh3.hash(int(v).to_bytes(8, "little", signed=True), 0, signed=True) for v in values]


def test_spec_truncate_examples() -> None:
    assert transform_array(Transform.truncate(10), INT,
                           pa.array([1, -1], pa.int32())).to_pylist() == [0, -10]
    d = PrimitiveType.decimal(9, 2)
    assert transform_array(Transform.truncate(50), d, from_python_values(
        [Decimal("10.65")], d)).to_pylist() == [Decimal("10.50")]
    assert transform_array(Transform.truncate(3), STRING,
                           pa.array(["iceberg", "😀😀😀😀"])).to_pylist() == ["ice", "😀😀😀"]


def test_out_of_range_partition_values_are_refused() -> None:
    with pytest.raises(ValidationError, match="out of range for long"):
        transform_array(Transform.truncate(10), LONG, pa.array([-(2**63)], pa.int64()))
    with pytest.raises(ValidationError, match="out of range for int"):
        transform_array(Transform.truncate(10), INT, pa.array([-(2**31)], pa.int32()))
    with pytest.raises(ValidationError, match="hour"):
        transform_array(Transform.hour(), TIMESTAMP,
                        pa.array([2**63 - 1], pa.int64()).cast(pa.timestamp("us")))
    with pytest.raises(ValidationError, match="more than 3 digits"):
        d = PrimitiveType.decimal(3, 0)
        transform_array(Transform.truncate(10), d, from_python_values([Decimal(-999)], d))
    # nulls hide whatever their slots hold
    d = PrimitiveType.decimal(3, 0)
    assert transform_array(Transform.truncate(10), d, from_python_values(
        [None, Decimal(15)], d)).to_pylist() == [None, Decimal(10)]


def test_transforms_refuse_sources_the_spec_does_not_allow() -> None:
    with pytest.raises(ValidationError, match="Cannot apply bucket"):
        transform_array(Transform.bucket(4), DOUBLE, pa.array([1.0]))
    with pytest.raises(ValidationError):
        transform_array(Transform.hour(), DATE, pa.array([0], pa.int32()).cast(pa.date32()))


@given(st.integers(-(2**40), 2**40))
def test_civil_year_month_matches_the_spec_helper(days: int) -> None:
    year, month = civil_year_month(np.array([days]))
    assert (int(year[0]), int(month[0])) == days_to_year_month(days)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.none() | VALUES[LONG], max_size=10), st.lists(st.none() | VALUES[TIME],
                                                                 max_size=3))
def test_values_round_trip(longs: list[int | None], times: list[int | None]) -> None:
    assert to_python_values(from_python_values(longs, LONG), LONG) == longs
    assert to_python_values(from_python_values(times, TIME), TIME) == times


# ----------------------------------------------------------------------------- grouping

NESTED = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "s", STRING),
    NestedField.optional(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "loc", StructType((NestedField.optional(5, "city", STRING),
                                               NestedField.optional(6, "d", DATE)))),
    NestedField.optional(7, "u", UUID),
)
SPEC = (PartitionSpecBuilder(NESTED).bucket("id", 3).truncate("s", 1).day("ts")
        .identity("loc.city").month("loc.d").identity("u").void("id", "id_void").build())

ROWS = st.fixed_dictionaries({
    "id": st.integers(-50, 50),
    "s": st.none() | st.sampled_from(["a", "ab", "b", "😀x"]),
    "ts": st.none() | st.integers(-2 * 86_400_000_000, 2 * 86_400_000_000),
    "loc": st.none() | st.fixed_dictionaries({
        "city": st.none() | st.sampled_from(["x", "y"]),
        "d": st.none() | st.integers(-40, 40)}),
    "u": st.none() | st.sampled_from([uuid.UUID(int=1), uuid.UUID(int=2)]),
})


def _arrow(rows: list[dict[str, Any]]) -> pa.Table:
    loc_type = NESTED.find_type("loc")
    assert isinstance(loc_type, StructType)
    columns = {name: from_python_values([r[name] for r in rows], NESTED.find_type(name))
               for name in ("id", "s", "ts", "u")}
    columns["loc"] = from_python_values(
        [None if r["loc"] is None else {5: r["loc"]["city"], 6: r["loc"]["d"]} for r in rows],
        loc_type)
    return pa.table(columns)


def _python_partition(row: dict[str, Any]) -> tuple[Any, ...]:
    loc = row["loc"] or {}
    sources = {1: row["id"], 2: row["s"], 3: row["ts"], 5: loc.get("city"), 6: loc.get("d"),
               7: row["u"]}
    return tuple(f.transform.apply(NESTED.find_type(f.source_id), sources[f.source_id])
                 for f in SPEC.fields)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROWS, max_size=40))
def test_partition_batches_groups_like_per_row_transforms(rows: list[dict[str, Any]]) -> None:
    table = _arrow(rows).append_column("row", pa.array(range(len(rows)), pa.int64()))
    expected: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        expected[_python_partition(row)].append(i)
    got: dict[tuple[Any, ...], list[int]] = {}
    for partition, part in partition_batches(table, NESTED, SPEC):
        assert partition not in got, "each partition once"
        got[partition] = part.column("row").to_pylist()
        assert part.num_rows > 0
    assert got == dict(expected)  # rows keep their order within a partition


def test_partition_batches_of_an_unpartitioned_spec_and_of_no_rows() -> None:
    table = _arrow([{"id": 1, "s": None, "ts": None, "loc": None, "u": None}])
    assert [p for p, _ in partition_batches(table, NESTED, SPEC.__class__())] == [()]
    assert list(partition_batches(table.slice(0, 0), NESTED, SPEC)) == []


def test_one_partition_is_yielded_without_copying() -> None:
    table = _arrow([{"id": 1, "s": "a", "ts": 0, "loc": None, "u": None}] * 3)
    [(partition, part)] = list(partition_batches(table, NESTED, SPEC))
    assert part is table
    assert partition == (Transform.bucket(3).apply(LONG, 1), "a", 0, None, None, None, None)


def test_source_column_names_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="'loc' is missing"):
        source_column(pa.table({"id": [1]}), NESTED, 5)
    with pytest.raises(ValidationError, match=r"'loc\.city' is missing"):
        source_column(pa.table({"loc": pa.array([{"d": 1}])}), NESTED, 5)
