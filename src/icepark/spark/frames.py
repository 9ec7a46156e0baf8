"""Small tables the driver computes (file numbers, paths, delete scopes) as Spark DataFrames that
cost no Spark job.

``spark.createDataFrame(rows)`` of a Python list makes an RDD (``Scan ExistingRDD``): joining
it, even as a broadcast, first runs a Spark job that collects it back, about 0.1 s each on
two cores (benchmarks/RESULTS.md, "icepark against the Java reference"). An Arrow table
becomes a local relation (``LocalTableScan``) that Spark broadcasts from the driver's memory,
on a classic session and over Spark Connect alike. Broadcasting it still runs a small job
(about 20 ms, two of them per merge-on-read delete); a lookup in a table of a few rows
(:func:`lookup`) is written into the query as ``CASE`` expressions instead, which run none.

>>> from icepark.spark.frames import arrow_table
>>> arrow_table([(1, "a"), (2, None)], "n int, name string").to_pydict()
{'n': [1, 2], 'name': ['a', None]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

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


LOOKUP_ROWS = 8
"""The most rows :func:`lookup` writes into a query. Each row a value is looked up in costs one
comparison of the key (a file path: tens of bytes) per row of the query, where a broadcast
hash join costs one hash of it; past a few rows the join is cheaper than its job."""


def lookup(key: str, rows: Sequence[Sequence[Any]], ddl: str) -> dict[str, Column] | None:
    """The columns of ``ddl`` after the first, for the row of ``rows`` whose first value equals
    the column named ``key``, as ``CASE`` expressions (null where no row matches): what a
    broadcast join with ``local_frame(spark, rows, ddl)`` on its first column gives, without
    the Spark job that broadcasting runs. None for more than :data:`LOOKUP_ROWS` rows: join
    the local frame instead. Each column is one SQL expression (one call to the JVM; the
    values as literals whatever their characters)."""
    if len(rows) > LOOKUP_ROWS:
        return None
    columns = [tuple(part.split()) for part in ddl.split(",")]
    quoted = "`" + key.replace("`", "``") + "`"
    out: dict[str, Column] = {}
    for i, (name, kind) in enumerate(columns[1:], start=1):
        branches = " ".join(f"WHEN {sql_literal(row[0], columns[0][1])} "
                            f"THEN {sql_literal(row[i], kind)}" for row in rows)
        out[name] = (F.expr(f"CASE {quoted} {branches} ELSE CAST(NULL AS {kind}) END")
                     if rows else F.lit(None).cast(kind))
    return out


def with_lookup(spark: SparkSession, df: DataFrame, key: str, rows: Sequence[Sequence[Any]],
                ddl: str, *, keep: Sequence[str] = ("*",),
                otherwise: Mapping[str, Column] | None = None) -> DataFrame:
    """``df``'s columns ``keep`` (all by default; they include ``key``) and the columns of
    ``ddl`` after the first, from the row of ``rows`` whose first value equals ``key``: as
    :func:`lookup` expressions in one projection for a few rows, else by a left join with the
    broadcast :func:`local_frame`. Where no row matches, a column is null, or its
    ``otherwise`` value (a ``raise_error`` for a key that must match)."""
    fallback = dict(otherwise or {})
    found = lookup(key, rows, ddl)
    if found is None:
        kept = df if tuple(keep) == ("*",) else df.select(*keep)
        joined = kept.join(F.broadcast(local_frame(spark, rows, ddl)), key, "left")
        return joined.withColumns({n: F.coalesce(F.col(n), c) for n, c in fallback.items()}
                                  ) if fallback else joined
    return df.select(*keep, *(
        (F.coalesce(c, fallback[n]) if n in fallback else c).alias(n) for n, c in found.items()))


def sql_literal(value: Any, kind: str) -> str:
    """``value`` as a Spark SQL literal of type ``kind`` (strings and bytes in hex, so that
    no character needs escaping)."""
    if value is None:
        return f"CAST(NULL AS {kind})"
    if kind == "string":
        return f"CAST(X'{str(value).encode().hex()}' AS STRING)"
    if kind == "binary":
        return f"X'{bytes(value).hex()}'"
    if kind == "boolean":
        return "TRUE" if value else "FALSE"
    if kind == "double":  # 'nan' and 'inf' too
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    return f"CAST({value!r} AS {kind})"


__all__ = ["LOOKUP_ROWS", "arrow_table", "local_frame", "lookup", "sql_literal", "with_lookup"]
