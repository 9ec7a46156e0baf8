"""The Spark Column transforms refuse what Spark cannot compute, before building any Column (no
Spark session needed): a transform icepark does not know ("Writers are not allowed to commit
files with a partition spec that contains a field with an unknown transform") and any transform
of a nanosecond timestamp (Spark has no type to hold such a column)."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest
from pyspark.sql import Column

from icepark.errors import UnsupportedFeature
from icepark.spark.transforms import hash_column, partition_columns, transform_column
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import LONG, TIMESTAMP_NS, TIMESTAMPTZ_NS, NestedField, PrimitiveType

NO_COLUMN = cast(Column, None)  # never reached: the checks come first


@pytest.mark.parametrize("transform", [Transform.unknown("zorder"),
                                       Transform.unknown("bucket_v2[8]")], ids=str)
def test_unknown_transforms_are_not_computed(transform: Transform) -> None:
    message = re.escape(f"Cannot compute transform '{transform}'")
    with pytest.raises(UnsupportedFeature, match=message):
        transform_column(transform, LONG, NO_COLUMN)


@pytest.mark.parametrize("source", [TIMESTAMP_NS, TIMESTAMPTZ_NS], ids=str)
@pytest.mark.parametrize("transform", [Transform.identity(), Transform.void(),
                                       Transform.bucket(16), Transform.year(), Transform.month(),
                                       Transform.day(), Transform.hour()], ids=str)
def test_nanosecond_sources_are_unsupported(transform: Transform, source: PrimitiveType) -> None:
    with pytest.raises(UnsupportedFeature, match="Spark has no nanosecond timestamp type"):
        transform_column(transform, source, NO_COLUMN)
    with pytest.raises(UnsupportedFeature, match="Spark has no nanosecond timestamp type"):
        hash_column(source, NO_COLUMN)


def test_partition_columns_of_a_spec_with_an_unknown_transform() -> None:
    schema = Schema.of(NestedField.optional(1, "a", LONG), NestedField.optional(2, "b", LONG))
    spec = PartitionSpec(0, (PartitionField.of_sources((1, 2), 1000, Transform.unknown("zorder"),
                                                       "ab"),))
    with pytest.raises(UnsupportedFeature, match="field 'ab' uses transform 'zorder'"):
        partition_columns(spec, schema, cast(Any, None))
