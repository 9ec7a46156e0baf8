"""How a write's rows are spread over Spark tasks and ordered within each task.

Spec, *Partitioning*: "Partition values for a data file must be the same for all records
stored in the data file." Spec, *Sorting*: "Data files can be sorted by a sort order ...
Writers should record the sort order ID in the data file"; the sort is applied within each
task, after the distribution of the table property ``write.distribution-mode``:

* ``hash`` (the default for a partitioned table, as the reference implementation) repartitions
  by the partition values;
* ``range`` range-partitions by partition values and sort keys (the default for an
  unpartitioned table with a sort order);
* ``none`` keeps the DataFrame's partitioning.

Each task's rows are then sorted by the partition values (nulls first) and the table's default
sort order, whose fields each have "A **transform** that is used to produce values to be
sorted on from the source column(s)" (:func:`icepark.spark.transforms.source_column`: a
``timestamp_ns``/``timestamptz_ns`` column sorts by its exact nanoseconds, whether the rows
give longs or Spark timestamps). Both writers use this: the Python-worker writer with the
partition values themselves as keys, the native writer (:mod:`icepark.spark.writer.native`)
with their encoded directory names, so that Spark's own writer finds its rows already grouped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.errors import ValidationError
from icepark.spark.schema import quote
from icepark.spark.transforms import source_column, transform_column
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.sorting import NullOrder, SortDirection, SortOrder

DISTRIBUTION_MODE = "write.distribution-mode"
"""Table property: ``none``, ``hash`` or ``range`` (see the module docstring)."""
_SORT_PREFIX = "__icepark_sort_"


def distribution_mode(metadata: TableMetadata) -> str:
    """``write.distribution-mode``, defaulting as the reference implementation does."""
    spec, order = metadata.spec(), metadata.sort_order()
    default = "hash" if spec.fields else "none" if order.is_unsorted else "range"
    mode = metadata.properties.get(DISTRIBUTION_MODE, default).strip().lower()
    if mode not in ("none", "hash", "range"):
        raise ValidationError(f"Invalid table property {DISTRIBUTION_MODE}={mode!r}: use none, "
                              "hash or range")
    return mode


def distributed(df: DataFrame, metadata: TableMetadata,
                partition_keys: Sequence[tuple[str, Column]]) -> DataFrame:
    """``df`` (in the table layout) with the ``(name, column)`` partition keys appended,
    distributed by ``write.distribution-mode`` and sorted within each task by the keys (nulls
    first) and the default sort order. The result has ``df``'s columns and the keys."""
    schema, order = metadata.schema(), metadata.sort_order()
    sorts = _sort_columns(order, schema, df)
    mode = distribution_mode(metadata)  # an invalid setting fails every write
    if not partition_keys and not sorts:
        return df  # nothing to add, move or sort: each select would be analysed for nothing
    frame = df.select("*", *(c.alias(name) for name, c in partition_keys),
                      *(c.alias(f"{_SORT_PREFIX}{i}") for i, (c, _) in enumerate(sorts)))
    keys = [F.col(quote(name)) for name, _ in partition_keys]
    sort_keys = [_ordered(F.col(f"{_SORT_PREFIX}{i}"), field)
                 for i, (_, field) in enumerate(sorts)]
    if mode == "hash" and keys:
        frame = frame.repartition(*keys)
    elif mode == "range" and (keys or sort_keys):
        frame = frame.repartitionByRange(*[c.asc_nulls_first() for c in keys], *sort_keys)
    if keys or sort_keys:
        frame = frame.sortWithinPartitions(*[c.asc_nulls_first() for c in keys], *sort_keys)
    return frame.select(*(F.col(quote(name)) for name in df.columns), *keys)


def sort_keys(order: SortOrder, schema: Schema, df: DataFrame) -> list[Column]:
    """``order``'s sort keys over ``df`` (in the table layout of ``schema``): each field's
    transform of its source column, with its direction and null order."""
    return [_ordered(c, f) for c, f in _sort_columns(order, schema, df)]


def _sort_columns(order: SortOrder, schema: Schema, df: DataFrame) -> list[tuple[Column, Any]]:
    """The sort key of each field of ``order``: its transform of its source column in ``df``."""
    columns = []
    for f in order.fields:
        source = schema.find_field(f.source_id)
        col = source_column(df, schema, f.source_id)
        columns.append((transform_column(f.transform, source.field_type, col), f))
    return columns


def _ordered(col: Column, f: Any) -> Column:
    nulls_first = f.null_order is NullOrder.NULLS_FIRST
    if f.direction is SortDirection.ASC:
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()
    return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()


__all__ = ["DISTRIBUTION_MODE", "distributed", "distribution_mode", "sort_keys"]
