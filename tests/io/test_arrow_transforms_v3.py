"""The Arrow transform kernels on v3 inputs: nanosecond timestamp columns (parity with the spec's
transforms on Python values, Appendix B's vectors) and transforms icepark does not know (never
computed: "Writers are not allowed to commit files with a partition spec that contains a field
with an unknown transform")."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import UnsupportedFeature
from icepark.io.arrow.transforms import (
    partition_batches,
    sort_table,
    to_python_values,
    transform_array,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import Transform
from icepark.spec.types import LONG, TIMESTAMP_NS, TIMESTAMPTZ_NS, NestedField, PrimitiveType

TS_2017_NS = 1_510_871_468_000_000_000  # 2017-11-16T22:31:08
ARROW_TYPES = {TIMESTAMP_NS: pa.timestamp("ns"), TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC")}
NS_TRANSFORMS = [Transform.identity(), Transform.void(), Transform.bucket(16),
                 Transform.bucket(1000), Transform.year(), Transform.month(), Transform.day(),
                 Transform.hour()]
EDGES = [0, -1, 1, 999, -999, -1_000, -1_001, TS_2017_NS, TS_2017_NS + 1_001,
         -86_400 * 10**9, -86_400 * 10**9 - 1, -(2**63), 2**63 - 1, None]


def _column(source: PrimitiveType, values: list[int | None]) -> pa.Array:
    return pa.array(values, pa.int64()).cast(ARROW_TYPES[source])


def _expected(transform: Transform, source: PrimitiveType, values: list[int | None]) -> list[Any]:
    return [transform.apply(source, v) for v in values]


@pytest.mark.parametrize("source", list(ARROW_TYPES), ids=str)
@pytest.mark.parametrize("transform", NS_TRANSFORMS, ids=str)
def test_kernels_match_the_spec_on_edge_values(transform: Transform,
                                               source: PrimitiveType) -> None:
    result = transform_array(transform, source, _column(source, EDGES))
    assert to_python_values(result, transform.result_type(source)) == _expected(
        transform, source, EDGES)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=50),
       st.sampled_from(NS_TRANSFORMS), st.sampled_from(list(ARROW_TYPES)))
def test_kernels_match_the_spec_on_random_values(values: list[int | None],
                                                 transform: Transform,
                                                 source: PrimitiveType) -> None:
    result = transform_array(transform, source, _column(source, values))
    assert to_python_values(result, transform.result_type(source)) == _expected(
        transform, source, values)


@pytest.mark.parametrize(("source", "value", "expected"), [
    (TIMESTAMP_NS, TS_2017_NS, -2047944441 & 0x7FFFFFFF),
    (TIMESTAMP_NS, TS_2017_NS + 1_001, -1207196810 & 0x7FFFFFFF),
    (TIMESTAMPTZ_NS, TS_2017_NS + 1_001, -1207196810 & 0x7FFFFFFF),
])
def test_bucket_kernel_hashes_micros(source: PrimitiveType, value: int, expected: int) -> None:
    """Appendix B: "Nanosecond timestamps must be converted to microsecond precision before
    hashing"; ``bucket[2147483647]`` keeps the whole positive hash."""
    bucket = Transform.bucket(2_147_483_647)
    assert transform_array(bucket, source, _column(source, [value])).to_pylist() == [
        expected % 2_147_483_647]


def test_void_keeps_the_nanosecond_column_type() -> None:
    column = _column(TIMESTAMPTZ_NS, [1, None])
    result = transform_array(Transform.void(), TIMESTAMPTZ_NS, column)
    assert result.type == column.type and result.null_count == 2


def test_partitions_by_hour_of_a_nanosecond_column() -> None:
    schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMP_NS))
    spec = PartitionSpecBuilder(schema).hour("ts").identity("ts", "ts_exact").build()
    hour = 3_600 * 10**9
    table = pa.table({"ts": _column(TIMESTAMP_NS, [-1, 5, hour, -1])})
    assert [(p, t.num_rows) for p, t in partition_batches(table, schema, spec)] == [
        ((-1, -1), 2), ((0, 5), 1), ((1, hour), 1)]


# --- unknown transforms --------------------------------------------------------------------

SCHEMA = Schema.of(NestedField.optional(1, "a", LONG), NestedField.optional(2, "b", LONG))
ZORDER = Transform.unknown("zorder")
DATA = pa.table({"a": pa.array([2, 1], pa.int64()), "b": pa.array([1, 2], pa.int64())})


def test_an_unknown_transform_is_not_computed() -> None:
    with pytest.raises(UnsupportedFeature, match="Cannot compute transform 'zorder'"):
        transform_array(ZORDER, LONG, DATA["a"])


def test_no_partition_of_a_spec_with_an_unknown_transform() -> None:
    spec = PartitionSpec(0, (PartitionField.of_sources((1, 2), 1000, ZORDER, "ab"),))
    with pytest.raises(UnsupportedFeature, match="field 'ab' uses transform 'zorder'"):
        list(partition_batches(DATA, SCHEMA, spec))


def test_no_sort_by_an_unknown_transform() -> None:
    order = SortOrder(1, (SortField(1, ZORDER, SortDirection.ASC, NullOrder.NULLS_FIRST,
                                    (1, 2)),))
    with pytest.raises(UnsupportedFeature, match="zorder\\(1, 2\\) asc nulls-first"):
        sort_table(DATA, SCHEMA, order)
