"""PARITY of the Spark Column transforms with ``Transform.function``: random values of every
source type (nulls, negatives, pre-1970 and far-future times, non-BMP strings, decimal edges),
one DataFrame per source type computing every transform at once; Appendix B hash vectors;
results that do not fit their type fail the job; partition columns by spec."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import mmh3
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import ValidationError
from icepark.spark.schema import FIELD_ID, to_spark, to_spark_type
from icepark.spark.transforms import (
    ZERO_SEED_KEY,
    decimal_hashes,
    hash_column,
    partition_columns,
    transform_column,
)
from icepark.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, hash_value
from icepark.spec.types import (
    BINARY,
    DATE,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    IcebergType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)
from icepark.spec.values import check_value

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
HOUR = 3_600_000_000
# Timestamps whose hour fits an int: +-245,000 years, far beyond Python's datetime.
MICROS = st.integers(INT32[0] * HOUR, (INT32[1] + 1) * HOUR - 1)


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    unscaled = st.integers(-bound, bound) | st.sampled_from([0, 1, -1, bound, -bound])
    return unscaled.map(lambda u: Decimal(f"{u}E{-scale}"))


def _identity(col: Column) -> Column:
    return col


# source type -> (values, the Spark type the values are given in, turn that into the source)
SOURCES: dict[PrimitiveType, tuple[st.SearchStrategy[Any], T.DataType,
                                   Callable[[Column], Column]]] = {
    INT: (st.integers(*INT32), T.IntegerType(), _identity),
    LONG: (st.integers(*INT64), T.LongType(), _identity),
    PrimitiveType.decimal(9, 2): (_decimals(9, 2), T.DecimalType(9, 2), _identity),
    PrimitiveType.decimal(3, 3): (_decimals(3, 3), T.DecimalType(3, 3), _identity),
    PrimitiveType.decimal(18, 0): (_decimals(18, 0), T.DecimalType(18, 0), _identity),
    PrimitiveType.decimal(20, 5): (_decimals(20, 5), T.DecimalType(20, 5), _identity),
    PrimitiveType.decimal(38, 6): (_decimals(38, 6), T.DecimalType(38, 6), _identity),
    PrimitiveType.decimal(38, 10): (_decimals(38, 10), T.DecimalType(38, 10), _identity),
    DATE: (st.integers(*INT32), T.IntegerType(), F.date_from_unix_date),
    TIME: (st.integers(0, 86_400_000_000 - 1), T.LongType(), F.time_from_micros),
    TIMESTAMP: (MICROS, T.LongType(),
                lambda c: F.timestamp_micros(c).cast(T.TimestampNTZType())),  # UTC session
    TIMESTAMPTZ: (MICROS, T.LongType(), F.timestamp_micros),
    STRING: (st.text(max_size=12), T.StringType(), _identity),
    UUID: (st.uuids(), T.StringType(), _identity),
    PrimitiveType.fixed(1): (st.binary(min_size=1, max_size=1), T.BinaryType(), _identity),
    PrimitiveType.fixed(7): (st.binary(min_size=7, max_size=7), T.BinaryType(), _identity),
    PrimitiveType.fixed(16): (st.binary(min_size=16, max_size=16), T.BinaryType(), _identity),
    BINARY: (st.binary(max_size=13), T.BinaryType(), _identity),
}
EDGES: dict[TypeId, list[Any]] = {
    TypeId.INT: [0, -1, 1, 34, *INT32], TypeId.LONG: [0, -1, 34, *INT64],
    TypeId.DATE: [0, -1, 17486, -719_162, 2_932_896, *INT32],
    TypeId.TIME: [0, 1, 81_068_000_000, 86_400_000_000 - 1],
    TypeId.TIMESTAMP: [0, -1, 1, -HOUR, 1_510_871_468_000_000, 253_402_300_800_000_000],
    TypeId.TIMESTAMPTZ: [0, -1, -HOUR - 1, 1_510_871_468_000_000, -62_135_596_800_000_001],
    TypeId.STRING: ["", "iceberg", "\U0001f9caice", "\u00e9\u00e9\u00e9\u00e9", "a\U00010348b"],
    TypeId.BINARY: [b"", b"\x00\x01\x02\x03", b"\xff" * 5],
    TypeId.UUID: [uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), uuid.UUID(int=0)],
}
TRANSFORMS = [Transform.identity(), Transform.void(), Transform.year(), Transform.month(),
              Transform.day(), Transform.hour(),
              *(Transform.bucket(n) for n in (1, 2, 16, 1000, 2**31 - 1)),
              *(Transform.truncate(w) for w in (1, 2, 3, 10, 50, 2**31 - 1))]


@pytest.fixture(scope="module")
def time_type(spark: SparkSession) -> Iterator[SparkSession]:
    """Spark's TIME type is off by default (``spark.sql.timeType.enabled``)."""
    previous = spark.conf.get("spark.sql.timeType.enabled", "false")
    spark.conf.set("spark.sql.timeType.enabled", "true")
    yield spark
    spark.conf.set("spark.sql.timeType.enabled", previous or "false")


def _fits(t: IcebergType, value: Any) -> bool:
    try:
        if value is not None:
            check_value(t, value)
    except ValidationError:
        return False
    return True


def _spark_input(source: PrimitiveType, value: Any) -> Any:
    return str(value) if source == UUID and value is not None else value


def _comparable(data_type: T.DataType, col: Column) -> Column:
    """Results as the spec's stored values, so any date or time collects as an int."""
    match data_type:
        case T.DateType():
            return F.unix_date(col)
        case T.TimestampType() | T.TimestampNTZType():
            return F.unix_micros(col)
        case T.TimeType():
            return F.time_to_micros(col)
    return col


def _expected(result: Any) -> Any:
    return str(result) if isinstance(result, uuid.UUID) else result


def _values(draw: Callable[[st.SearchStrategy[Any]], Any], source: PrimitiveType) -> list[Any]:
    """Random values of ``source`` with its edge values and nulls, less those whose partition
    value does not fit its type (those fail the job: tested below)."""
    values = draw(st.lists(st.none() | SOURCES[source][0], min_size=150, max_size=250))
    values += [*EDGES.get(source.type_id, []), None]
    functions = [(t.result_type(source), t.function(source)) for t in TRANSFORMS
                 if t.can_transform(source)]
    return [v for v in values if all(_fits(t, f(v)) for t, f in functions)]


@pytest.mark.spark
@pytest.mark.parametrize("source", list(SOURCES), ids=str)
@settings(max_examples=2, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_columns_equal_the_spec_transforms(time_type: SparkSession, source: PrimitiveType,
                                           data: st.DataObject) -> None:
    """PARITY: for a few hundred random values of ``source`` (and its edge values, and nulls),
    every applicable transform computed as a Spark Column gives exactly
    ``Transform.function(source)`` of each value, typed as ``Transform.result_type``.

    One DataFrame computes every transform of a source type at once: one Spark job."""
    values = _values(data.draw, source)
    input_type, to_source = SOURCES[source][1:]
    df = time_type.createDataFrame([(_spark_input(source, v),) for v in values],
                                   T.StructType([T.StructField("v", input_type)]))
    transforms = [t for t in TRANSFORMS if t.can_transform(source)]
    col = to_source(F.col("v"))
    result = df.select(*(transform_column(t, source, col).alias(f"c{i}")
                         for i, t in enumerate(transforms)))
    assert [f.dataType for f in result.schema.fields] == [
        to_spark_type(t.result_type(source)) for t in transforms]
    rows = result.select(*(_comparable(f.dataType, F.col(f.name))
                           for f in result.schema.fields)).collect()
    assert len(rows) == len(values)
    for i, transform in enumerate(transforms):
        function = transform.function(source)
        mismatches = [(v, e, row[i]) for v, row in zip(values, rows, strict=True)
                      if (e := _expected(function(v))) != row[i]]
        assert not mismatches, f"{transform} of {source}: (value, expected, got) {mismatches[:5]}"


APPENDIX_B: list[tuple[PrimitiveType, Any, int]] = [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (PrimitiveType.decimal(4, 2), Decimal("14.20"), -500754589),
    (DATE, datetime.date(2017, 11, 16), -653330422),
    (TIME, datetime.time(22, 31, 8), -662762989),
    (TIMESTAMP, datetime.datetime(2017, 11, 16, 22, 31, 8), -2047944441),
    (TIMESTAMPTZ, datetime.datetime(2017, 11, 16, 14, 31, 8,
                                    tzinfo=datetime.timezone(datetime.timedelta(hours=-8))),
     -2047944441),
    (STRING, "iceberg", 1210000089),
    (UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", 1488055340),
    (PrimitiveType.fixed(4), b"\x00\x01\x02\x03", -188683207),
    (BINARY, b"\x00\x01\x02\x03", -188683207),
    (PrimitiveType.decimal(38, 2), Decimal("14.20"), -500754589),
]


@pytest.mark.spark
def test_appendix_b_hash_vectors(time_type: SparkSession) -> None:
    """Appendix B's "Test value" column, all in one row."""
    schema = Schema.of(*(NestedField.optional(i + 1, f"c{i}", t)
                         for i, (t, _, _) in enumerate(APPENDIX_B)))
    df = time_type.createDataFrame([tuple(v for _, v, _ in APPENDIX_B)], to_spark(schema))
    row = df.select(*(hash_column(t, F.col(f"c{i}"))
                      for i, (t, _, _) in enumerate(APPENDIX_B))).first()
    assert row is not None
    assert list(row) == [h for _, _, h in APPENDIX_B]


def test_zero_seed_key() -> None:
    """Spark's ``hash(k, x)`` hashes ``x`` seeded with ``hash(k)``; this key's hash is 0."""
    assert mmh3.hash(ZERO_SEED_KEY.to_bytes(4, "little", signed=True), 42) == 0


@given(st.lists(st.integers(-(10**38) + 1, 10**38 - 1) | st.integers(-300, 300), max_size=50))
def test_decimal_hashes_hash_the_minimal_big_endian_bytes(unscaled: list[int]) -> None:
    """The decimal UDF's kernel on Arrow's decimal128 storage equals Appendix B's
    ``hashBytes(minBigEndian(unscaled(v)))`` ("Hash results are not dependent on decimal
    scale")."""
    rows = np.array([list(u.to_bytes(16, "little", signed=True)) for u in unscaled], np.uint8)
    result = decimal_hashes(rows.reshape(-1, 16))
    decimal = PrimitiveType.decimal(38, 3)
    assert result.tolist() == [hash_value(decimal, Decimal(f"{u}E-3")) for u in unscaled]


@pytest.mark.spark
@pytest.mark.parametrize(("source", "transform", "value", "spark_type"), [
    (INT, Transform.truncate(10), INT32[0], T.IntegerType()),
    (LONG, Transform.truncate(3), INT64[0], T.LongType()),
    (PrimitiveType.decimal(3, 3), Transform.truncate(50), Decimal("-0.999"),
     T.DecimalType(3, 3)),
    (PrimitiveType.decimal(38, 10), Transform.truncate(7), Decimal(f"{1 - 10**38}E-10"),
     T.DecimalType(38, 10)),
    (TIMESTAMP, Transform.hour(), INT64[0], T.LongType()),
], ids=str)
def test_results_that_do_not_fit_their_type_fail_the_job(
        spark: SparkSession, source: PrimitiveType, transform: Transform, value: Any,
        spark_type: T.DataType) -> None:
    """The spec's function gives a value outside the result type (``truncate[10]`` of the
    smallest int is below it); writing it is impossible, so the job fails, whether or not
    ANSI mode is on, and an ANSI-off session does not wrap around silently."""
    with pytest.raises(ValidationError):
        check_value(transform.result_type(source), transform.apply(source, value))
    df = spark.createDataFrame([(value,)], T.StructType([T.StructField("v", spark_type)]))
    col = F.timestamp_micros(F.col("v")) if source == TIMESTAMP else F.col("v")
    column = transform_column(transform, source, col)
    for ansi in ("true", "false"):
        spark.conf.set("spark.sql.ansi.enabled", ansi)
        try:
            with pytest.raises(Exception, match=f"Cannot compute {transform.kind.value}"):
                df.select(column).collect()
        finally:
            spark.conf.unset("spark.sql.ansi.enabled")


@pytest.mark.spark
def test_partition_columns(spark: SparkSession) -> None:
    """Each partition field's column, named by it, with its field ID; sources nested in structs
    and with dots in names resolve; a void field whose source was dropped is a null int."""
    schema = Schema.of(
        NestedField.required(1, "id", LONG),
        NestedField.optional(2, "s.x", StructType((NestedField.optional(3, "ts", TIMESTAMPTZ),
                                                   NestedField.optional(4, "name", STRING)))))
    spec = (PartitionSpecBuilder(schema).bucket("id", 8).day("s.x.ts", "day")
            .truncate("s.x.name", 2, "p.q").identity("id").build())
    dropped = PartitionSpec(1, (*spec.fields, PartitionField(99, 1999, Transform.void(), "gone")))
    ts = datetime.datetime(1969, 12, 31, 23, 30, tzinfo=datetime.UTC)
    df = spark.createDataFrame([(34, (ts, "\U0001f9cc\U0001f9ccx")), (-1, None)],
                               to_spark(schema))
    result = df.select(*partition_columns(dropped, schema, df))
    assert [(f.name, f.metadata[FIELD_ID]) for f in result.schema.fields] == [
        ("id_bucket", 1000), ("day", 1001), ("p.q", 1002), ("id", 1003), ("gone", 1999)]
    assert result.schema["gone"].dataType == T.IntegerType()
    rows = [tuple(r) for r in result.collect()]
    assert rows == [(Transform.bucket(8).apply(LONG, 34), datetime.date(1969, 12, 31),
                     "\U0001f9cc\U0001f9cc", 34, None),
                    (Transform.bucket(8).apply(LONG, -1), None, None, -1, None)]
    with pytest.raises(ValidationError, match="Cannot find source column 5"):
        partition_columns(PartitionSpec(2, (PartitionField(5, 1000, Transform.day(), "d"),)),
                          schema, df)
