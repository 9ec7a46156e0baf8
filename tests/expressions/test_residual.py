"""Residuals: tables per transform, and the property that on the rows of a partition the
residual is equivalent to the filter (also for partitions old writers computed)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.expressions import (
    ALWAYS_TRUE,
    Expr,
    ResidualEvaluator,
    RowEvaluator,
    parse,
    unbind,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    IcebergType,
    NestedField,
    PrimitiveType,
)
from tests.expressions.expr_strategies import (
    TYPES,
    expressions,
    legacy_time_partition,
    nullable_values,
    transforms,
)

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING),
                   NestedField.optional(3, "ts", TIMESTAMP), NestedField.optional(4, "f", DOUBLE),
                   NestedField.optional(5, "n", INT))
SPEC = PartitionSpec(0, (
    PartitionField(2, 1000, Transform.identity(), "s"),
    PartitionField(3, 1001, Transform.day(), "ts_day"),
    PartitionField(1, 1002, Transform.bucket(16), "id_bucket"),
    PartitionField(5, 1003, Transform.truncate(10), "n_trunc"),
    PartitionField(4, 1004, Transform.identity(), "f"),
))
NAN = float("nan")


@pytest.mark.parametrize(("text", "partition", "expected"), [
    ("s = 'a'", ("a", 0, 0, 0, 1.0), "TRUE"),
    ("s = 'a'", ("b", 0, 0, 0, 1.0), "FALSE"),
    ("s = 'a'", (None, 0, 0, 0, 1.0), "FALSE"),
    ("s != 'a'", (None, 0, 0, 0, 1.0), "FALSE"),
    ("s IS NULL", (None, 0, 0, 0, 1.0), "TRUE"),
    ("s LIKE 'ab%' AND id > 5", ("abc", 0, 0, 0, 1.0), "id > 5"),
    ("s LIKE 'ab%' OR id > 5", ("b", 0, 0, 0, 1.0), "id > 5"),
    ("f IS NAN", ("a", 0, 0, 0, NAN), "TRUE"),
    ("f != 1", ("a", 0, 0, 0, NAN), "TRUE"),
    ("f < 2", ("a", 0, 0, 0, NAN), "FALSE"),
    # day(ts): bounds inside the day stay, bounds around it go
    ("ts >= '2024-01-02T12:00'", ("a", 19724, 0, 0, 1.0), "ts >= 1704196800000000"),
    ("ts >= '2024-01-02T12:00'", ("a", 19725, 0, 0, 1.0), "TRUE"),
    ("ts >= '2024-01-02T12:00'", ("a", 19723, 0, 0, 1.0), "FALSE"),
    ("ts < '2024-01-02'", ("a", 19723, 0, 0, 1.0), "TRUE"),
    ("ts < '2024-01-02'", ("a", 19724, 0, 0, 1.0), "FALSE"),
    ("ts IS NULL", ("a", None, 0, 0, 1.0), "TRUE"),
    ("ts IS NULL", ("a", 19724, 0, 0, 1.0), "FALSE"),
    # day(ts) before 1970: partition 0 may hold 1969-12-31 values from old writers
    ("ts < '1970-01-01'", ("a", -1, 0, 0, 1.0), "TRUE"),
    ("ts < '1970-01-01'", ("a", 0, 0, 0, 1.0), "ts < 0"),
    ("ts < '1970-01-01'", ("a", 1, 0, 0, 1.0), "FALSE"),
    # bucket: equality decides only "false"
    ("id = 34", ("a", 0, 3, 0, 1.0), "id = 34"),
    ("id = 34", ("a", 0, 4, 0, 1.0), "FALSE"),
    ("id != 34", ("a", 0, 4, 0, 1.0), "TRUE"),
    ("id < 34", ("a", 0, 4, 0, 1.0), "id < 34"),
    # truncate
    ("n < 100", ("a", 0, 0, 90, 1.0), "TRUE"),
    ("n < 95", ("a", 0, 0, 90, 1.0), "n < 95"),
    ("n < 95", ("a", 0, 0, 100, 1.0), "FALSE"),
    ("n IN (1, 95)", ("a", 0, 0, 90, 1.0), "n IN (1, 95)"),
    ("n IN (1, 95)", ("a", 0, 0, 20, 1.0), "FALSE"),
    # no partition field on the column
    ("id > 5 AND TRUE", ("a", 0, 0, 0, 1.0), "id > 5"),
])
def test_residuals(text: str, partition: tuple[Any, ...], expected: str) -> None:
    assert str(ResidualEvaluator(SCHEMA, SPEC, parse(text)).residual_for(partition)) == expected


def test_unpartitioned_and_wrong_tuples() -> None:
    unpartitioned = ResidualEvaluator(SCHEMA, PartitionSpec(0, ()), parse("NOT id = 1"))
    assert str(unpartitioned.residual_for(())) == "id != 1"
    assert ResidualEvaluator(SCHEMA, SPEC, parse("TRUE")).residual_for(
        ("a", 0, 0, 0, 1.0)) == ALWAYS_TRUE
    with pytest.raises(ValidationError, match="has 1 values but spec 0 has 5"):
        ResidualEvaluator(SCHEMA, SPEC, parse("id = 1")).residual_for((1,))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Schema, PartitionSpec, Expr, list[tuple[Any, ...]]]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=2, max_size=2))
    schema = Schema.of(NestedField.optional(1, "a", types[0]),
                       NestedField.optional(2, "b", types[1]))
    fields = []
    for i in range(draw(st.integers(0, 3))):
        source = draw(st.integers(1, 2))
        fields.append(PartitionField(source, 1000 + i, draw(transforms(types[source - 1])),
                                     f"p{i}"))
    rows = draw(st.lists(st.tuples(*(nullable_values(t) for t in types)), min_size=1,
                         max_size=4))
    return schema, PartitionSpec(0, tuple(fields)), draw(expressions([("a", types[0]),
                                                                      ("b", types[1])])), rows


@settings(max_examples=200)
@given(_cases())
def test_residual_is_equivalent_on_the_partition(
        case: tuple[Schema, PartitionSpec, Expr, list[tuple[Any, ...]]]) -> None:
    schema, spec, expr, rows = case
    residuals = ResidualEvaluator(schema, spec, expr)
    full = RowEvaluator(schema, expr)
    for row in rows:
        for legacy in (False, True):
            partition = tuple(_partition_value(f.transform, schema.find_type(f.source_id),
                                               row[f.source_id - 1], legacy)
                              for f in spec.fields)
            residual = RowEvaluator(schema, unbind(residuals.residual_for(partition)))
            assert residual.eval(row) == full.eval(row)


def _partition_value(transform: Transform, source: IcebergType, value: Any,
                     legacy: bool) -> Any:
    assert isinstance(source, PrimitiveType)
    if legacy and transform.is_time:
        return legacy_time_partition(transform, source, value)
    return transform.apply(source, value)
