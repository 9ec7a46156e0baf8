"""Partition transforms against the spec's vectors (Appendix B, *Truncate Transform Details*,
*Partition Transforms*), Hypothesis properties, and pyiceberg as an oracle."""

from __future__ import annotations

import math
import re
import struct
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg import transforms as pt
from pyiceberg import types as ptypes

from icepark.errors import ValidationError
from icepark.spec.datetimes import (
    date_to_days,
    time_to_micros,
    timestamp_to_micros,
)
from icepark.spec.transforms import Transform, TransformKind, hash_value, human_string
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
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)

DECIMAL_9_2 = PrimitiveType.decimal(9, 2)
DECIMAL_38_10 = PrimitiveType.decimal(38, 10)
FIXED_4 = PrimitiveType.fixed(4)
ALL_PRIMITIVES = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DECIMAL_9_2, DATE, TIME, TIMESTAMP,
                  TIMESTAMPTZ, STRING, UUID, FIXED_4, BINARY]
NESTED: list[IcebergType] = [
    StructType((NestedField.optional(10, "a", INT),)),
    ListType(11, STRING),
    MapType(12, STRING, 13, LONG),
]
ALL_TRANSFORMS = [Transform.identity(), Transform.bucket(16), Transform.truncate(10),
                  Transform.year(), Transform.month(), Transform.day(), Transform.hour(),
                  Transform.void()]

TS_2017 = timestamp_to_micros(datetime(2017, 11, 16, 22, 31, 8))
DAY_2017 = date_to_days(date(2017, 11, 16))
MAX_TS = timestamp_to_micros(datetime(9999, 12, 31, 23, 59, 59, 999999))
MAX_DAY = date_to_days(date(9999, 12, 31))
MIN_TS = timestamp_to_micros(datetime(1, 1, 1))
MIN_DAY = date_to_days(date(1, 1, 1))
TEST_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

# --- Appendix B: 32-bit hash requirements --------------------------------------------------

HASH_VECTORS: list[tuple[PrimitiveType, Any, int]] = [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (DECIMAL_9_2, Decimal("14.20"), -500754589),
    (DATE, DAY_2017, -653330422),
    (TIME, time_to_micros(time(22, 31, 8)), -662762989),
    (TIMESTAMP, TS_2017, -2047944441),
    (TIMESTAMPTZ,
     timestamp_to_micros(datetime(2017, 11, 16, 14, 31, 8, tzinfo=timezone(timedelta(hours=-8)))),
     -2047944441),
    (STRING, "iceberg", 1210000089),
    (UUID, TEST_UUID, 1488055340),
    (FIXED_4, bytes([0, 1, 2, 3]), -188683207),
    (BINARY, bytes([0, 1, 2, 3]), -188683207),
    # "not currently valid for bucketing ... the following table shall apply"
    (BOOLEAN, True, 1392991556),
    (FLOAT, 1.0, -142385009),
    (FLOAT, 0.0, 1669671676),
    (FLOAT, -0.0, 1669671676),
    (DOUBLE, 1.0, -142385009),
    (DOUBLE, 0.0, 1669671676),
    (DOUBLE, -0.0, 1669671676),
]


@pytest.mark.parametrize(("t", "value", "expected"), HASH_VECTORS,
                         ids=[f"{t}-{v!r}" for t, v, _ in HASH_VECTORS])
def test_appendix_b_hash_vectors(t: PrimitiveType, value: Any, expected: int) -> None:
    assert hash_value(t, value) == expected


def test_uuid_is_hashed_as_its_big_endian_bytes() -> None:
    assert TEST_UUID.bytes == bytes.fromhex("F79C3E09677C4BBDA4793F349CB785E7")


def test_boolean_false_hashes_as_int_zero() -> None:
    assert hash_value(BOOLEAN, False) == hash_value(INT, 0)


@pytest.mark.parametrize("t", [FLOAT, DOUBLE], ids=str)
@pytest.mark.parametrize("bits", [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000000,
                                  0x7FFFFFFFFFFFFFFF])
def test_every_nan_hashes_as_the_canonical_nan(t: PrimitiveType, bits: int) -> None:
    """"All NaN bit patterns must be canonicalized to 0x7ff8000000000000L"."""
    nan = struct.unpack("<d", struct.pack("<Q", bits))[0]
    assert math.isnan(nan)
    canonical = mmh3.hash(struct.pack("<Q", 0x7FF8000000000000), 0, signed=True)
    assert hash_value(t, nan) == canonical


@pytest.mark.parametrize(("value", "expected_bytes"), [
    (Decimal("0"), b"\x00"), (Decimal("1.27"), b"\x7f"), (Decimal("1.28"), b"\x00\x80"),
    (Decimal("-1.28"), b"\x80"), (Decimal("-1.29"), b"\xff\x7f"),
])
def test_decimal_hash_uses_minimum_big_endian_bytes(value: Decimal, expected_bytes: bytes) -> None:
    """Note 2: "the minimum number of bytes required to hold the unscaled value"."""
    assert hash_value(DECIMAL_9_2, value) == mmh3.hash(expected_bytes, 0, signed=True)


@pytest.mark.parametrize(("t", "value", "expected"), HASH_VECTORS[:11],
                         ids=[f"{t}-{v!r}" for t, v, _ in HASH_VECTORS[:11]])
@pytest.mark.parametrize("n", [1, 2, 16, 100, 2_147_483_647])
def test_bucket_is_positive_hash_mod_n(t: PrimitiveType, value: Any, expected: int,
                                       n: int) -> None:
    """``bucket_N(x) = (murmur3_x86_32_hash(x) & Integer.MAX_VALUE) % N``."""
    assert Transform.bucket(n).apply(t, value) == (expected & 0x7FFFFFFF) % n


@pytest.mark.parametrize(("t", "value", "expected"), [
    (INT, 34, 79), (LONG, 34, 79), (STRING, "iceberg", 89), (DATE, DAY_2017, 26),
])
def test_bucket_100_known_values(t: PrimitiveType, value: Any, expected: int) -> None:
    assert Transform.bucket(100).apply(t, value) == expected


# --- Truncate transform details ------------------------------------------------------------

TRUNCATE_VECTORS: list[tuple[PrimitiveType, int, Any, Any]] = [
    (INT, 10, 1, 0), (INT, 10, -1, -10), (INT, 10, 0, 0), (INT, 10, 9, 0), (INT, 10, 10, 10),
    (INT, 10, -10, -10), (INT, 10, -11, -20), (INT, 1, -7, -7), (INT, 3, 2_147_483_647,
                                                                    2_147_483_646),
    (LONG, 10, 1, 0), (LONG, 10, -1, -10), (LONG, 100, 2**62 + 55, 2**62 - 4),
    (LONG, 10, -(2**62) - 1, -(2**62) - 6),
    (DECIMAL_9_2, 50, Decimal("10.65"), Decimal("10.50")),
    (DECIMAL_9_2, 50, Decimal("-10.65"), Decimal("-11.00")),
    (DECIMAL_9_2, 10, Decimal("12.34"), Decimal("12.30")),
    (DECIMAL_9_2, 10, Decimal("-0.05"), Decimal("-0.10")),
    (DECIMAL_9_2, 10, Decimal("0.00"), Decimal("0.00")),
    (DECIMAL_9_2, 10, Decimal("10.6"), Decimal("10.60")),  # fewer digits than the scale
    (DECIMAL_38_10, 10, Decimal("1234567890123456789012345678.1234567891"),
     Decimal("1234567890123456789012345678.1234567890")),  # 38 digits stay exact
    (STRING, 3, "iceberg", "ice"), (STRING, 3, "ic", "ic"), (STRING, 3, "", ""),
    (STRING, 2, "\U0001f600\U0001f601\U0001f602", "\U0001f600\U0001f601"),
    (STRING, 2, "a\U0001f600b", "a\U0001f600"),
    (STRING, 1, "\u00e9t\u00e9", "\u00e9"),
    (BINARY, 2, bytes([0, 1, 2, 3]), bytes([0, 1])), (BINARY, 8, b"ab", b"ab"),
]


@pytest.mark.parametrize(("t", "width", "value", "expected"), TRUNCATE_VECTORS,
                         ids=[f"{t}-{w}-{v!r}" for t, w, v, _ in TRUNCATE_VECTORS])
def test_truncate_vectors(t: PrimitiveType, width: int, value: Any, expected: Any) -> None:
    result = Transform.truncate(width).apply(t, value)
    assert result == expected
    if isinstance(expected, Decimal):  # same scale, not only the same number
        assert result.as_tuple().exponent == -t.scale


@given(st.text(max_size=20), st.integers(1, 10))
def test_truncated_string_is_valid_utf8_of_at_most_l_code_points(s: str, width: int) -> None:
    """Note 3: "Strings are truncated to a valid UTF-8 string with no more than L code points"."""
    result = Transform.truncate(width).apply(STRING, s)
    assert len(result) <= width
    assert s.startswith(result)
    result.encode("utf-8")  # no lone surrogate halves


def test_decimal_with_more_digits_than_its_scale_is_rejected() -> None:
    with pytest.raises(ValidationError, match="scale 2"):
        Transform.truncate(10).apply(DECIMAL_9_2, Decimal("1.234"))


# --- year / month / day / hour -------------------------------------------------------------

def _ts(dt: datetime) -> int:
    return timestamp_to_micros(dt)


def _d(y: int, m: int, d: int) -> int:
    return date_to_days(date(y, m, d))


TIME_VECTORS: list[tuple[Transform, PrimitiveType, int, int]] = [
    (Transform.year(), TIMESTAMP, TS_2017, 47),
    (Transform.month(), TIMESTAMP, TS_2017, 574),
    (Transform.day(), TIMESTAMP, TS_2017, 17486),
    (Transform.hour(), TIMESTAMP, TS_2017, 17486 * 24 + 22),
    (Transform.year(), DATE, DAY_2017, 47),
    (Transform.month(), DATE, DAY_2017, 574),
    (Transform.day(), DATE, DAY_2017, 17486),
    (Transform.hour(), TIMESTAMPTZ, 1512151975038194, 420042),
    (Transform.year(), TIMESTAMPTZ, 1512151975038194, 47),
    (Transform.month(), DATE, 17501, 575),
    # pre-1970: whole units round down
    (Transform.year(), TIMESTAMP, -1, -1),
    (Transform.month(), TIMESTAMP, -1, -1),
    (Transform.day(), TIMESTAMP, -1, -1),
    (Transform.hour(), TIMESTAMP, -1, -1),
    (Transform.year(), DATE, -1, -1),
    (Transform.month(), DATE, -1, -1),
    (Transform.day(), DATE, -1, -1),
    (Transform.year(), TIMESTAMP, _ts(datetime(1969, 1, 1)), -1),
    (Transform.month(), TIMESTAMP, _ts(datetime(1969, 1, 1)), -12),
    (Transform.year(), TIMESTAMP, _ts(datetime(1968, 12, 31, 23, 59, 59, 999999)), -2),
    (Transform.month(), TIMESTAMP, _ts(datetime(1968, 12, 31, 23, 59, 59, 999999)), -13),
    (Transform.day(), TIMESTAMP, _ts(datetime(1969, 12, 30, 0, 0, 0, 1)), -2),
    (Transform.hour(), TIMESTAMPTZ, _ts(datetime(1969, 12, 31, 22, 59, 59)), -2),
    (Transform.year(), DATE, _d(1900, 1, 1), -70),
    (Transform.month(), DATE, _d(1900, 1, 1), -840),
    (Transform.year(), DATE, MIN_DAY, 1 - 1970),
    # epoch boundaries
    (Transform.year(), TIMESTAMP, 0, 0), (Transform.month(), DATE, 0, 0),
    (Transform.hour(), TIMESTAMP, 3_600_000_000 - 1, 0),
    # far future, to the end of datetime's range and beyond it
    (Transform.year(), TIMESTAMP, MAX_TS, 8029),
    (Transform.month(), TIMESTAMP, MAX_TS, 8029 * 12 + 11),
    (Transform.day(), TIMESTAMP, MAX_TS, MAX_DAY),
    (Transform.hour(), TIMESTAMP, MAX_TS, MAX_DAY * 24 + 23),
    (Transform.year(), DATE, 146_097 * 100, 40_000),  # 100 Gregorian cycles of 400 years
    (Transform.month(), DATE, 146_097 * 100, 480_000),
    (Transform.year(), DATE, -146_097 * 10, -4000),
    (Transform.year(), TIMESTAMP, 2**63 - 1, 294_247 - 1970),  # the last long: 294247-01-10
]


@pytest.mark.parametrize(("transform", "t", "value", "expected"), TIME_VECTORS,
                         ids=[f"{tr}-{t}-{v}" for tr, t, v, _ in TIME_VECTORS])
def test_time_transform_vectors(transform: Transform, t: PrimitiveType, value: int,
                                expected: int) -> None:
    assert transform.apply(t, value) == expected


@given(st.integers(-(10**9), 10**9), st.integers(-3, 3))
def test_year_and_month_repeat_every_400_years(days: int, cycles: int) -> None:
    shifted = days + cycles * 146_097
    assert (Transform.year().apply(DATE, shifted)
            == Transform.year().apply(DATE, days) + 400 * cycles)
    assert (Transform.month().apply(DATE, shifted)
            == Transform.month().apply(DATE, days) + 4800 * cycles)


# --- parse / format ------------------------------------------------------------------------

TRANSFORM_STRINGS = ["identity", "bucket[1]", "bucket[16]", "bucket[2147483647]", "truncate[1]",
                     "truncate[10]", "truncate[20]", "year", "month", "day", "hour", "void"]


@pytest.mark.parametrize("text", TRANSFORM_STRINGS)
def test_parse_format_round_trip(text: str) -> None:
    t = Transform.parse(text)
    assert str(t) == text
    assert repr(t) == text
    assert Transform.parse(str(t)) == t


@pytest.mark.parametrize("t", ALL_TRANSFORMS, ids=str)
def test_named_constructors_round_trip(t: Transform) -> None:
    assert Transform.parse(str(t)) == t


@pytest.mark.parametrize(("text", "expected"), [
    ("Bucket[16]", Transform.bucket(16)), (" day ", Transform.day()),
    ("IDENTITY", Transform.identity()),
])
def test_parse_is_lenient_about_case_and_spaces(text: str, expected: Transform) -> None:
    assert Transform.parse(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("bucket[0]", "must be positive"), ("truncate[0]", "must be positive"),
    ("bucket[-1]", "Unknown transform"), ("truncate[-5]", "Unknown transform"),
    ("bucket[2147483648]", "at most 2147483647"),
    ("bucket", "needs a parameter"), ("truncate", "needs a parameter"),
    ("zorder", "Unknown transform"), ("", "Unknown transform"), ("bucket[16", "Unknown"),
    ("bucket[x]", "Unknown"), ("identity[3]", "Unknown"), ("day[1]", "Unknown"),
])
def test_parse_rejections(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Transform.parse(text)


@pytest.mark.parametrize("make", [
    lambda: Transform.bucket(0), lambda: Transform.truncate(-1),
    lambda: Transform(TransformKind.YEAR, 3), lambda: Transform(TransformKind.VOID, 1),
])
def test_constructor_rejections(make: Callable[[], Transform]) -> None:
    with pytest.raises(ValidationError):
        make()


# --- source and result types ---------------------------------------------------------------

_TIME_SOURCES = {TypeId.DATE, TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ}
ACCEPTED: dict[TransformKind, set[TypeId] | None] = {  # None: any primitive
    TransformKind.IDENTITY: None,
    TransformKind.VOID: None,
    TransformKind.BUCKET: {TypeId.INT, TypeId.LONG, TypeId.DECIMAL, TypeId.DATE, TypeId.TIME,
                           TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ, TypeId.STRING, TypeId.UUID,
                           TypeId.FIXED, TypeId.BINARY},
    # int, long, decimal, string per the spec; binary as every reference implementation does
    TransformKind.TRUNCATE: {TypeId.INT, TypeId.LONG, TypeId.DECIMAL, TypeId.STRING,
                             TypeId.BINARY},
    TransformKind.YEAR: _TIME_SOURCES,
    TransformKind.MONTH: _TIME_SOURCES,
    TransformKind.DAY: _TIME_SOURCES,
    TransformKind.HOUR: {TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ},
}


def _expected_result(t: Transform, source: PrimitiveType) -> IcebergType:
    match t.kind:
        case TransformKind.IDENTITY | TransformKind.TRUNCATE | TransformKind.VOID:
            return source
        case TransformKind.DAY:
            return DATE  # by design: the same stored int, typed as the reference implementations
        case _:
            return INT


@pytest.mark.parametrize("source", ALL_PRIMITIVES, ids=str)
@pytest.mark.parametrize("t", ALL_TRANSFORMS, ids=str)
def test_can_transform_and_result_type_per_spec_table(t: Transform,
                                                      source: PrimitiveType) -> None:
    accepted = ACCEPTED[t.kind]
    expected = accepted is None or source.type_id in accepted
    assert t.can_transform(source) is expected
    if expected:
        assert t.result_type(source) == _expected_result(t, source)
        assert t.check_source(source) == source
    else:
        with pytest.raises(ValidationError, match=re.escape(f"Cannot apply {t} to {source}")):
            t.result_type(source)
        with pytest.raises(ValidationError):
            t.function(source)


@pytest.mark.parametrize("source", NESTED, ids=str)
@pytest.mark.parametrize("t", ALL_TRANSFORMS, ids=str)
def test_nested_types_are_only_accepted_by_void(t: Transform, source: IcebergType) -> None:
    assert t.can_transform(source) is t.is_void
    if t.is_void:
        assert t.result_type(source) == source
        assert t.apply(source, {"a": 1}) is None
    else:
        with pytest.raises(ValidationError):
            t.result_type(source)


@pytest.mark.parametrize("t", ALL_TRANSFORMS, ids=str)
def test_predicates(t: Transform) -> None:
    assert t.is_identity is (t.kind is TransformKind.IDENTITY)
    assert t.is_void is (t.kind is TransformKind.VOID)
    assert t.is_time is (t.kind in {TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY,
                                    TransformKind.HOUR})
    assert t.preserves_order is (t.kind not in {TransformKind.BUCKET, TransformKind.VOID})


# --- nulls ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ALL_PRIMITIVES, ids=str)
@pytest.mark.parametrize("t", ALL_TRANSFORMS, ids=str)
def test_null_in_null_out(t: Transform, source: PrimitiveType) -> None:
    """"All transforms must return ``null`` for a ``null`` input value.\""""
    if t.can_transform(source):
        assert t.apply(source, None) is None
        assert t.to_human_string(source, None) == "null"


SAMPLE: dict[TypeId, Any] = {
    TypeId.BOOLEAN: True, TypeId.INT: 34, TypeId.LONG: 34, TypeId.FLOAT: 1.0,
    TypeId.DOUBLE: 1.0, TypeId.DECIMAL: Decimal("14.20"), TypeId.DATE: DAY_2017,
    TypeId.TIME: 81_068_000_000, TypeId.TIMESTAMP: TS_2017, TypeId.TIMESTAMPTZ: TS_2017,
    TypeId.STRING: "iceberg", TypeId.UUID: TEST_UUID, TypeId.FIXED: b"\x00\x01\x02\x03",
    TypeId.BINARY: b"\x00\x01\x02\x03",
}


@pytest.mark.parametrize("source", ALL_PRIMITIVES, ids=str)
def test_identity_and_void_on_every_primitive(source: PrimitiveType) -> None:
    value = SAMPLE[source.type_id]
    assert Transform.identity().apply(source, value) == value
    assert Transform.void().apply(source, value) is None


# --- human strings -------------------------------------------------------------------------

HUMAN_VECTORS: list[tuple[Transform, PrimitiveType, Any, str]] = [
    (Transform.year(), TIMESTAMP, 47, "2017"),
    (Transform.month(), TIMESTAMP, 574, "2017-11"),
    (Transform.day(), TIMESTAMP, 17486, "2017-11-16"),
    (Transform.hour(), TIMESTAMP, 17486 * 24 + 22, "2017-11-16-22"),
    (Transform.year(), DATE, -1, "1969"),
    (Transform.month(), DATE, -1, "1969-12"),
    (Transform.day(), DATE, -1, "1969-12-31"),
    (Transform.hour(), TIMESTAMPTZ, -1, "1969-12-31-23"),
    (Transform.bucket(16), STRING, 3, "3"),
    (Transform.truncate(3), STRING, "ice", "ice"),
    (Transform.truncate(50), DECIMAL_9_2, Decimal("10.50"), "10.50"),
    (Transform.identity(), DATE, DAY_2017, "2017-11-16"),
    (Transform.identity(), TIME, 81_068_000_000, "22:31:08"),
    (Transform.identity(), TIME, 81_068_000_001, "22:31:08.000001"),
    (Transform.identity(), TIMESTAMP, TS_2017, "2017-11-16T22:31:08"),
    (Transform.identity(), TIMESTAMPTZ, 1512151975038194, "2017-12-01T18:12:55.038194+00:00"),
    (Transform.identity(), STRING, "a/b c", "a/b c"),
    (Transform.identity(), BINARY, b"\x00\x01", "AAE="),
    (Transform.identity(), FIXED_4, b"\x00\x01\x02\x03", "AAECAw=="),
    (Transform.identity(), DECIMAL_9_2, Decimal("14.20"), "14.20"),
    (Transform.identity(), BOOLEAN, False, "false"),
    (Transform.identity(), LONG, -34, "-34"),
    (Transform.identity(), UUID, TEST_UUID, str(TEST_UUID)),
    (Transform.void(), INT, None, "null"),
]


@pytest.mark.parametrize(("t", "source", "value", "expected"), HUMAN_VECTORS,
                         ids=[f"{t}-{s}-{v!r}" for t, s, v, _ in HUMAN_VECTORS])
def test_human_strings(t: Transform, source: PrimitiveType, value: Any, expected: str) -> None:
    assert t.to_human_string(source, value) == expected


def test_human_string_of_null_and_nested() -> None:
    assert human_string(STRING, None) == "null"
    assert human_string(ListType(1, INT), [1]) == "[1]"


# --- order ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("this", "other", "source", "expected"), [
    (Transform.day(), Transform.month(), None, True),
    (Transform.hour(), Transform.year(), None, True),
    (Transform.month(), Transform.day(), None, False),
    (Transform.identity(), Transform.day(), None, True),
    (Transform.identity(), Transform.truncate(4), None, True),
    (Transform.identity(), Transform.bucket(4), None, False),
    (Transform.identity(), Transform.void(), None, False),
    (Transform.bucket(4), Transform.bucket(4), None, True),
    (Transform.bucket(4), Transform.bucket(8), None, False),
    (Transform.day(), Transform.identity(), None, False),
    (Transform.truncate(10), Transform.truncate(10), None, True),
    # numbers: truncated to W is ordered by any multiple of W
    (Transform.truncate(10), Transform.truncate(100), INT, True),
    (Transform.truncate(10), Transform.truncate(25), LONG, False),
    (Transform.truncate(100), Transform.truncate(10), DECIMAL_9_2, False),
    # strings and binary: truncated to L is ordered by any length up to L
    (Transform.truncate(10), Transform.truncate(5), STRING, True),
    (Transform.truncate(5), Transform.truncate(10), STRING, False),
    (Transform.truncate(5), Transform.truncate(10), BINARY, False),
    # without the source type only equal truncates are claimed
    (Transform.truncate(10), Transform.truncate(100), None, False),
    (Transform.truncate(10), Transform.truncate(5), None, False),
])
def test_satisfies_order_of(this: Transform, other: Transform, source: PrimitiveType | None,
                            expected: bool) -> None:
    assert this.satisfies_order_of(other, source) is expected


@given(st.lists(st.text(max_size=12), min_size=2, max_size=20), st.integers(1, 8),
       st.integers(1, 8))
def test_truncate_satisfies_order_of_holds_on_strings(rows: list[str], a: int, b: int) -> None:
    """If the claim is made, sorting by truncate[a] leaves truncate[b] sorted (ties kept in an
    adversarial order: reversed)."""
    ta, tb = Transform.truncate(a), Transform.truncate(b)
    if not ta.satisfies_order_of(tb, STRING):
        return
    by_a = sorted(sorted(rows, reverse=True), key=lambda r: ta.apply(STRING, r))
    keys = [tb.apply(STRING, r) for r in by_a]
    assert keys == sorted(keys)


@given(st.lists(st.integers(-1000, 1000), min_size=2, max_size=20), st.integers(1, 30),
       st.integers(1, 30))
def test_truncate_satisfies_order_of_holds_on_ints(rows: list[int], a: int, b: int) -> None:
    ta, tb = Transform.truncate(a), Transform.truncate(b)
    if not ta.satisfies_order_of(tb, INT):
        return
    by_a = sorted(sorted(rows, reverse=True), key=lambda r: ta.apply(INT, r))
    keys = [tb.apply(INT, r) for r in by_a]
    assert keys == sorted(keys)


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
DAYS = st.integers(MIN_DAY, MAX_DAY)
MICROS = st.integers(MIN_TS, MAX_TS)


def _decimals(scale: int, digits: int) -> st.SearchStrategy[Decimal]:
    bound = 10**digits - 1
    return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E{-scale}"))


ORDERED: list[tuple[PrimitiveType, st.SearchStrategy[Any], list[Transform]]] = [
    (INT, INT32, [Transform.identity(), Transform.truncate(1), Transform.truncate(7),
                  Transform.truncate(100)]),
    (LONG, INT64, [Transform.identity(), Transform.truncate(3), Transform.truncate(10**9)]),
    (DECIMAL_9_2, _decimals(2, 9), [Transform.truncate(50), Transform.truncate(1)]),
    (DECIMAL_38_10, _decimals(10, 38), [Transform.truncate(10**9)]),
    (STRING, st.text(max_size=10), [Transform.identity(), Transform.truncate(1),
                                    Transform.truncate(4)]),
    (BINARY, st.binary(max_size=10), [Transform.truncate(3)]),
    (DATE, st.integers(-(10**8), 10**8), [Transform.year(), Transform.month(),
                                          Transform.day()]),
    (TIMESTAMP, INT64, [Transform.year(), Transform.month(), Transform.day(), Transform.hour()]),
    (TIMESTAMPTZ, MICROS, [Transform.year(), Transform.hour()]),
]


@pytest.mark.parametrize(("source", "values", "transforms"), ORDERED,
                         ids=[str(s) for s, _, _ in ORDERED])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_order_preserving_transforms_preserve_order(
        source: PrimitiveType, values: st.SearchStrategy[Any], transforms: list[Transform],
        data: st.DataObject) -> None:
    a, b = sorted([data.draw(values), data.draw(values)])
    for t in transforms:
        assert t.preserves_order
        assert t.apply(source, a) <= t.apply(source, b), t


@given(INT32)
def test_int_and_long_buckets_agree(v: int) -> None:
    """Note 1: "Integer and long hash results must be identical for all integer values"."""
    assert hash_value(INT, v) == hash_value(LONG, v)
    assert Transform.bucket(17).apply(INT, v) == Transform.bucket(17).apply(LONG, v)


@given(st.floats(width=32, allow_nan=True))
def test_float_hashes_as_the_double_it_widens_to(v: float) -> None:
    """Note 4: "Float hash values are the result of hashing the float cast to double"."""
    assert hash_value(FLOAT, v) == hash_value(DOUBLE, v)


# --- pyiceberg as an oracle ----------------------------------------------------------------

ORACLE_TYPES: list[tuple[PrimitiveType, Any, st.SearchStrategy[Any]]] = [
    (INT, ptypes.IntegerType(), INT32),
    (LONG, ptypes.LongType(), INT64),
    (DECIMAL_9_2, ptypes.DecimalType(9, 2), _decimals(2, 9)),
    (DECIMAL_38_10, ptypes.DecimalType(38, 10), _decimals(10, 38)),
    (PrimitiveType.decimal(5, 0), ptypes.DecimalType(5, 0), _decimals(0, 5)),
    (DATE, ptypes.DateType(), DAYS),
    (TIME, ptypes.TimeType(), st.integers(0, 86_400_000_000 - 1)),
    (TIMESTAMP, ptypes.TimestampType(), MICROS),
    (TIMESTAMPTZ, ptypes.TimestamptzType(), MICROS),
    (STRING, ptypes.StringType(), st.text(max_size=12)),
    (UUID, ptypes.UUIDType(), st.uuids()),
    (FIXED_4, ptypes.FixedType(4), st.binary(min_size=4, max_size=4)),
    (BINARY, ptypes.BinaryType(), st.binary(max_size=12)),
]
ORACLE_TRANSFORMS: list[tuple[Transform, Any]] = [
    (Transform.identity(), pt.IdentityTransform()),
    (Transform.bucket(1), pt.BucketTransform(1)),
    (Transform.bucket(16), pt.BucketTransform(16)),
    (Transform.bucket(1000), pt.BucketTransform(1000)),
    (Transform.truncate(1), pt.TruncateTransform(1)),
    (Transform.truncate(3), pt.TruncateTransform(3)),
    (Transform.truncate(50), pt.TruncateTransform(50)),
    (Transform.year(), pt.YearTransform()),
    (Transform.month(), pt.MonthTransform()),
    (Transform.day(), pt.DayTransform()),
    (Transform.hour(), pt.HourTransform()),
    (Transform.void(), pt.VoidTransform()),
]


@pytest.mark.parametrize(("source", "py_source", "values"), ORACLE_TYPES,
                         ids=[str(s) for s, _, _ in ORACLE_TYPES])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_matches_pyiceberg(source: PrimitiveType, py_source: Any,
                           values: st.SearchStrategy[Any], data: st.DataObject) -> None:
    value = data.draw(values)
    for ours, theirs in ORACLE_TRANSFORMS:
        assert ours.can_transform(source) == theirs.can_transform(py_source), ours
        if not ours.can_transform(source):
            continue
        expected = theirs.transform(py_source)(value)
        result = ours.apply(source, value)
        assert result == expected, (ours, value)
        if source.type_id is not TypeId.DECIMAL:  # tiny decimals: "0.0000000000" vs "0E-10"
            human = theirs.to_human_string(py_source, result)
            assert ours.to_human_string(source, result) == human
