"""The Spark Column transforms on the format version 3 types.

PARITY of every transform of a nanosecond timestamp (``timestamp_ns``, ``timestamptz_ns``, held
in Spark as ``LongType`` nanoseconds) with ``Transform.function``: random nanoseconds over the
whole long range, their sub-microsecond neighbours, negative ones (1969-12-31T23:59:59.999999999
is day -1 and hour -1), and Appendix B's vectors ("Nanosecond timestamps must be converted to
microsecond precision before hashing"); the same from Spark timestamps, which a write may give
instead. Refused before building any Column (no Spark session needed): a transform icepark does
not know ("Writers are not allowed to commit data using a partition spec that contains a field
with an unknown transform")."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spark.schema import to_spark_type
from icepark.spark.transforms import (
    hash_column,
    partition_columns,
    source_column,
    transform_column,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, hash_value
from icepark.spec.types import (
    LONG,
    TIMESTAMP_NS,
    TIMESTAMPTZ_NS,
    NestedField,
    PrimitiveType,
    StructType,
)

NO_COLUMN = cast(Column, None)  # never reached: the checks come first
INT64 = (-(2**63), 2**63 - 1)
NS_PER_DAY, NS_PER_HOUR = 86_400 * 10**9, 3_600 * 10**9
NS = 1_510_871_468_000_001_001  # 2017-11-16T22:31:08.000001001
EDGES = [0, -1, 1, -999, -1000, -1001, 999, 1000, 1001, NS, NS - 1001, NS + 998,
         -NS_PER_HOUR, -NS_PER_HOUR - 1, -NS_PER_DAY, -NS_PER_DAY - 1, NS_PER_DAY - 1, *INT64,
         INT64[0] + 1, INT64[1] - 1]
TRANSFORMS = [Transform.identity(), Transform.void(), Transform.year(), Transform.month(),
              Transform.day(), Transform.hour(),
              *(Transform.bucket(n) for n in (1, 2, 4, 16, 1000, 2**31 - 1))]
SETTINGS = settings(max_examples=2, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example,
                                           HealthCheck.function_scoped_fixture])


def _neighbours(nanos: int) -> list[int]:
    """``nanos`` and the nanoseconds around it: the same microsecond and the next one down."""
    return [n for n in (nanos - 1, nanos, nanos + 1, nanos // 1000 * 1000 - 1)
            if INT64[0] <= n <= INT64[1]]


NANOS = st.integers(*INT64) | st.integers(-10**18, 10**18) | st.integers(-10**12, 10**12)


def _comparable(col: Column) -> Column:
    """Results as the spec's stored values: a day as its int."""
    return F.unix_date(col)


def _check_parity(source: PrimitiveType, values: list[int | None], frame: DataFrame,
                  columns: list[Column]) -> None:
    """``columns`` (over ``frame``, one per transform of :data:`TRANSFORMS`) equal
    ``Transform.function(source)`` of each of ``values`` and have its result type."""
    result = frame.select(*(c.alias(f"c{i}") for i, c in enumerate(columns)))
    assert [f.dataType for f in result.schema.fields] == [
        to_spark_type(t.result_type(source), timestamp_ns="nanos") for t in TRANSFORMS]
    rows = result.select(*(_comparable(F.col(f.name)) if f.dataType == T.DateType()
                           else F.col(f.name) for f in result.schema.fields)).collect()
    assert len(rows) == len(values)
    for i, transform in enumerate(TRANSFORMS):
        function = transform.function(source)
        mismatches = [(v, e, row[i]) for v, row in zip(values, rows, strict=True)
                      if (e := function(v)) != row[i]]
        assert not mismatches, f"{transform} of {source}: (value, expected, got) {mismatches[:5]}"


@pytest.mark.spark
@pytest.mark.parametrize("source", [TIMESTAMP_NS, TIMESTAMPTZ_NS], ids=str)
@SETTINGS
@given(data=st.data())
def test_nanosecond_columns_equal_the_spec_transforms(spark: SparkSession, source: PrimitiveType,
                                                      data: st.DataObject) -> None:
    """PARITY: identity, void, year, month, day, hour and bucket[N] of ``LongType`` nanoseconds
    equal ``Transform.function`` value for value (one Spark job per source type): a few hundred
    random longs, each with its sub-microsecond neighbours, the edges and nulls."""
    drawn = data.draw(st.lists(NANOS, min_size=60, max_size=90))
    values: list[int | None] = [n for v in drawn for n in _neighbours(v)]
    values += [*EDGES, None]
    df = spark.createDataFrame([(v,) for v in values], "v long")
    _check_parity(source, values, df,
                  [transform_column(t, source, F.col("v")) for t in TRANSFORMS])


@pytest.mark.spark
@pytest.mark.parametrize(("source", "spark_type"), [(TIMESTAMP_NS, T.TimestampNTZType()),
                                                    (TIMESTAMPTZ_NS, T.TimestampType())], ids=str)
@SETTINGS
@given(data=st.data())
def test_spark_timestamps_are_transformed_as_their_nanoseconds(
        spark: SparkSession, source: PrimitiveType, spark_type: T.DataType,
        data: st.DataObject) -> None:
    """A write may give a nanosecond column as Spark timestamps (whole microseconds, written as
    ``micros * 1000``): :func:`source_column` takes them as those nanoseconds, so every
    transform, by :func:`partition_columns`, equals the spec's on ``micros * 1000``, also for a
    column nested in a struct."""
    low, high = -(2**63 // 1000), (2**63 - 1) // 1000  # the micros whose nanos fit a long
    micros = data.draw(st.lists(st.integers(low, high) | st.integers(-10**11, 10**11),
                                min_size=50, max_size=80))
    micros += [0, -1, 1, -86_400_000_000, -86_400_000_001, low, high, NS // 1000]
    schema = Schema.of(NestedField.optional(1, "ts", source),
                       NestedField.optional(2, "s", StructType((
                           NestedField.optional(3, "n", source),))))
    values: list[int | None] = [m * 1000 for m in micros] + [None]
    df = spark.createDataFrame([(m,) for m in [*micros, None]], "m long")
    stamp = F.timestamp_micros("m").cast(spark_type)  # a UTC session: ntz is the UTC wall clock
    df = df.select(stamp.alias("ts"), F.struct(stamp.alias("n")).alias("s"))
    for source_id in (1, 3):  # ts, s.n
        spec = PartitionSpec(0, tuple(PartitionField(source_id, 1000 + i, t, f"p{i}")
                                      for i, t in enumerate(TRANSFORMS)))
        _check_parity(source, values, df, partition_columns(spec, schema, df))


APPENDIX_B = [
    (TIMESTAMP_NS, dt.datetime(2017, 11, 16, 22, 31, 8, tzinfo=dt.UTC), 0, -2047944441),
    (TIMESTAMP_NS, dt.datetime(2017, 11, 16, 22, 31, 8, tzinfo=dt.UTC), 1001, -1207196810),
    (TIMESTAMPTZ_NS, dt.datetime(2017, 11, 16, 14, 31, 8,
                                 tzinfo=dt.timezone(dt.timedelta(hours=-8))), 0, -2047944441),
    (TIMESTAMPTZ_NS, dt.datetime(2017, 11, 16, 14, 31, 8,
                                 tzinfo=dt.timezone(dt.timedelta(hours=-8))), 1001, -1207196810),
]


@pytest.mark.spark
def test_appendix_b_nanosecond_hash_vectors(spark: SparkSession) -> None:
    """Appendix B: ``2017-11-16T22:31:08`` -> ``-2047944441`` and
    ``2017-11-16T22:31:08.000001001`` -> ``-1207196810`` (and the ``-08:00`` forms of
    ``timestamptz_ns``), hashed as "``hashLong(microsecsFromUnixEpoch(v))``"."""
    nanos = [int(stamp.timestamp()) * 10**9 + extra for _, stamp, extra, _ in APPENDIX_B]
    assert [hash_value(t, n) for (t, *_), n in zip(APPENDIX_B, nanos, strict=True)] == [
        h for *_, h in APPENDIX_B]
    df = spark.createDataFrame([tuple(nanos)], ", ".join(f"c{i} long" for i in range(len(nanos))))
    row = df.select(*(hash_column(t, F.col(f"c{i}"))
                      for i, (t, *_) in enumerate(APPENDIX_B))).first()
    assert row is not None
    assert list(row) == [h for *_, h in APPENDIX_B]


@pytest.mark.spark
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_timestamps_beyond_nanoseconds_fail_the_job(spark: SparkSession, ansi: str) -> None:
    """A Spark timestamp whose nanoseconds do not fit a long (after 2262-04-11) cannot be a
    nanosecond partition source: the job fails naming it, ANSI mode or not (never wraps)."""
    schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMP_NS))
    spec = PartitionSpecBuilder(schema).day("ts").build()
    df = spark.sql("SELECT TIMESTAMP_NTZ '2300-01-01 00:00:00' AS ts")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        with pytest.raises(Exception, match="Cannot write 2300-01-01 00:00:00 to the nanosecond "
                                            "timestamp column 'ts'"):
            df.select(*partition_columns(spec, schema, df)).collect()
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


@pytest.mark.spark
def test_a_nanosecond_source_of_another_type_is_refused(spark: SparkSession) -> None:
    schema = Schema.of(NestedField.optional(1, "ts", TIMESTAMP_NS))
    df = spark.createDataFrame([("x",)], "ts string")
    with pytest.raises(ValidationError, match="Column 'ts' is string in the data"):
        source_column(df, schema, 1)


@pytest.mark.parametrize("transform", [Transform.unknown("zorder"),
                                       Transform.unknown("bucket_v2[8]")], ids=str)
def test_unknown_transforms_are_not_computed(transform: Transform) -> None:
    message = re.escape(f"Cannot compute transform '{transform}'")
    with pytest.raises(UnsupportedFeature, match=message):
        transform_column(transform, LONG, NO_COLUMN)


def test_partition_columns_of_a_spec_with_an_unknown_transform() -> None:
    schema = Schema.of(NestedField.optional(1, "a", LONG), NestedField.optional(2, "b", LONG))
    spec = PartitionSpec(0, (PartitionField.of_sources((1, 2), 1000, Transform.unknown("zorder"),
                                                       "ab"),))
    with pytest.raises(UnsupportedFeature, match="field 'ab' uses transform 'zorder'"):
        partition_columns(spec, schema, cast(Any, None))
