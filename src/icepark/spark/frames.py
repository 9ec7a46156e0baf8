"""Small tables the driver computes (file numbers, paths, delete scopes) as Spark DataFrames that
cost no Spark job.

``spark.createDataFrame(rows)`` of a Python list makes an RDD (``Scan ExistingRDD``): joining
it, even as a broadcast, first runs a Spark job that collects it back, about 0.1 s each on
two cores (benchmarks/RESULTS.md, "icepark against the Java reference"). An Arrow table
becomes a local relation (``LocalTableScan``) that Spark broadcasts from the driver's memory,
on a classic session and over Spark Connect alike.

>>> from icepark.spark.frames import arrow_table
>>> arrow_table([(1, "a"), (2, None)], "n int, name string").to_pydict()
{'n': [1, 2], 'name': ['a', None]}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from icepark.errors import UnsupportedFeature

_TYPES = {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "boolean": pa.bool_(),
          "binary": pa.binary(), "double": pa.float64()}


def arrow_table(rows: Iterable[Sequence[Any]], ddl: str) -> pa.Table:
    """``rows`` (tuples in column order) as an Arrow table of the columns ``ddl`` names
    (``"name type, ..."``, types among int, long, string, boolean, binary and double)."""
    columns = [tuple(part.split()) for part in ddl.split(",")]
    if any(len(c) != 2 or c[1] not in _TYPES for c in columns):
        raise UnsupportedFeature(f"Cannot make a local table of {ddl!r}: give 'name type' "
                                 f"pairs with types among {', '.join(_TYPES)}")
    values = list(zip(*rows, strict=True)) or [() for _ in columns]
    return pa.table([pa.array(v, _TYPES[t]) for v, (_, t) in zip(values, columns, strict=True)],
                    names=[name for name, _ in columns])


def local_frame(spark: SparkSession, rows: Iterable[Sequence[Any]], ddl: str) -> DataFrame:
    """A DataFrame of ``rows`` with the columns of ``ddl`` (see :func:`arrow_table`), held by
    the driver as a local relation: joining it runs no Spark job of its own."""
    return spark.createDataFrame(arrow_table(rows, ddl))


__all__ = ["arrow_table", "local_frame"]
