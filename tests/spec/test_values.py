"""Single values: Appendix D binary and JSON serialization, checking, conversion, bound order."""

from __future__ import annotations

import json
import math
import random
import re
import struct
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.bounds import from_bytes, lower_bound, sort_key, to_bytes, upper_bound
from icepark.spec.datetimes import MICROS_PER_DAY, date_to_days
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
from icepark.spec.values import check_value, from_json, from_python, to_json


def _id(value: object) -> str:
    """A parameter's ID: its repr, without the address a memoryview's repr shows."""
    return f"memoryview({bytes(value)!r})" if isinstance(value, memoryview) else repr(value)

dec = PrimitiveType.decimal
fixed = PrimitiveType.fixed
SPEC_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
TS_2017 = 1_510_871_468_123_456  # 2017-11-16T22:31:08.123456
TIME_2231 = 81_068_123_456  # 22:31:08.123456
STRUCT_1_2 = StructType((NestedField.required(1, "id", INT),
                         NestedField.optional(2, "data", STRING)))


def same(a: Any, b: Any) -> bool:
    """Equality that also checks types, decimal exponents and the sign of 0.0; NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a.as_tuple() == b.as_tuple()
    return type(a) is type(b) and bool(a == b)


# ----------------------------------------------------------------- Appendix D examples

JSON_EXAMPLES: list[tuple[IcebergType, Any, Any]] = [
    (BOOLEAN, True, True),
    (INT, 34, 34),
    (LONG, 34, 34),
    (FLOAT, 1.0, 1.0),
    (DOUBLE, 1.0, 1.0),
    (dec(4, 2), Decimal("14.20"), "14.20"),
    (dec(1, -20), Decimal("2E+20"), "2E+20"),
    (DATE, 17486, "2017-11-16"),
    (TIME, TIME_2231, "22:31:08.123456"),
    (TIMESTAMP, TS_2017, "2017-11-16T22:31:08.123456"),
    (TIMESTAMPTZ, TS_2017, "2017-11-16T22:31:08.123456+00:00"),
    (STRING, "iceberg", "iceberg"),
    (UUID, SPEC_UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (fixed(4), b"\x00\x01\x02\xff", "000102ff"),
    (BINARY, b"\x00\x01\x02\xff", "000102ff"),
    (STRUCT_1_2, {1: 1, 2: "bar"}, {"1": 1, "2": "bar"}),
    (ListType(3, INT), [1, 2, 3], [1, 2, 3]),
    (MapType(4, STRING, 5, INT), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
]

JSON_EDGES: list[tuple[IcebergType, Any, Any]] = [
    (BOOLEAN, False, False),
    (INT, -(2**31), -(2**31)),
    (LONG, 2**63 - 1, 2**63 - 1),
    (FLOAT, -0.0, -0.0),
    (DOUBLE, -1.5e300, -1.5e300),
    (dec(4, 2), Decimal("0.00"), "0.00"),
    (dec(4, 2), Decimal("-0.01"), "-0.01"),
    (dec(3, 2), Decimal("-1.00"), "-1.00"),
    (dec(38, 0), Decimal(10**38 - 1), str(10**38 - 1)),
    (dec(38, 38), Decimal("-0." + "9" * 38), "-0." + "9" * 38),
    (dec(9, 8), Decimal("1E-8"), "0.00000001"),  # never scientific for a positive scale
    (dec(3, -20), Decimal("-123E+20"), "-123E+20"),
    (dec(5, 0), Decimal(-7), "-7"),
    (DATE, -1, "1969-12-31"),
    (DATE, date_to_days(date(1, 1, 1)), "0001-01-01"),
    (DATE, date_to_days(date(9999, 12, 31)), "9999-12-31"),
    (TIME, 0, "00:00:00.000000"),
    (TIME, MICROS_PER_DAY - 1, "23:59:59.999999"),
    (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
    (TIMESTAMP, 0, "1970-01-01T00:00:00.000000"),
    (TIMESTAMPTZ, -2_208_988_800_000_000, "1900-01-01T00:00:00.000000+00:00"),
    (STRING, "", ""),
    (STRING, "\U0001f600 \u00e9", "\U0001f600 \u00e9"),
    (BINARY, b"", ""),
    (STRUCT_1_2, {1: 1, 2: None}, {"1": 1, "2": None}),
    (STRUCT_1_2, {}, {}),
    (ListType(3, INT, element_required=False), [None, 1], [None, 1]),
    (MapType(4, UUID, 5, DATE, value_required=False), {SPEC_UUID: None},
     {"keys": [str(SPEC_UUID)], "values": [None]}),
]


@pytest.mark.parametrize(("t", "value", "data"), JSON_EXAMPLES + JSON_EDGES, ids=_id)
def test_json_vectors(t: IcebergType, value: Any, data: Any) -> None:
    assert same(to_json(t, value), data)
    assert same(from_json(t, data), value)
    assert same(from_json(t, json.loads(json.dumps(to_json(t, value)))), value)


BINARY_VECTORS: list[tuple[PrimitiveType, Any, str]] = [
    (BOOLEAN, False, "00"),
    (BOOLEAN, True, "01"),
    (INT, 34, "22000000"),
    (INT, -1, "ffffffff"),
    (INT, -(2**31), "00000080"),
    (LONG, 34, "2200000000000000"),
    (LONG, -2, "feffffffffffffff"),
    (FLOAT, 1.0, "0000803f"),
    (FLOAT, -0.0, "00000080"),
    (DOUBLE, 1.0, "000000000000f03f"),
    (DOUBLE, -math.inf, "000000000000f0ff"),
    (DATE, 17486, "4e440000"),
    (DATE, -1, "ffffffff"),
    (TIME, TIME_2231, struct.pack("<q", TIME_2231).hex()),
    (TIMESTAMP, -1, "ffffffffffffffff"),
    (TIMESTAMPTZ, TS_2017, struct.pack("<q", TS_2017).hex()),
    (STRING, "iceberg", b"iceberg".hex()),
    (STRING, "", ""),
    (STRING, "\U0001f600", "f09f9880"),  # non-BMP: 4 UTF-8 bytes
    (UUID, SPEC_UUID, "f79c3e09677c4bbda4793f349cb785e7"),  # "F7 9C 3E 09 67 7C 4B BD ..."
    (fixed(3), b"abc", "616263"),
    (BINARY, b"", ""),
    (BINARY, b"\x00\xff", "00ff"),
    (dec(4, 2), Decimal("14.20"), "058c"),
    (dec(4, 2), Decimal("0.00"), "00"),
    (dec(3, 2), Decimal("-1.00"), "9c"),  # unscaled -100: one byte
    (dec(3, 2), Decimal("1.27"), "7f"),
    (dec(3, 2), Decimal("1.28"), "0080"),  # 128 needs a sign byte
    (dec(3, 2), Decimal("-1.28"), "80"),
    (dec(3, 2), Decimal("-1.29"), "ff7f"),
    (dec(1, -20), Decimal("2E+20"), "02"),
    (dec(38, 0), Decimal(10**38 - 1), (10**38 - 1).to_bytes(16, "big").hex()),
    (dec(38, 0), Decimal(1 - 10**38), (1 - 10**38).to_bytes(16, "big", signed=True).hex()),
]


@pytest.mark.parametrize(("t", "value", "data"), BINARY_VECTORS, ids=_id)
def test_binary_vectors(t: PrimitiveType, value: Any, data: str) -> None:
    assert to_bytes(t, value) == bytes.fromhex(data)
    assert same(from_bytes(t, bytes.fromhex(data)), value)


@pytest.mark.parametrize(
    ("t", "data", "value"),
    [
        (LONG, to_bytes(INT, -5), -5),  # a bound written before int -> long
        (LONG, to_bytes(INT, 2**31 - 1), 2**31 - 1),
        (DOUBLE, to_bytes(FLOAT, 1.5), 1.5),  # a bound written before float -> double
        (DOUBLE, to_bytes(FLOAT, -math.inf), -math.inf),
        (BOOLEAN, b"\x02", True),  # "non-zero byte for true"
        (BOOLEAN, b"\xff", True),
        (fixed(4), b"ab", b"ab"),  # a truncated bound
        (dec(4, 2), b"\x00\x00\x05\x8c", Decimal("14.20")),  # padded is still accepted
        (BINARY, bytearray(b"\x01"), b"\x01"),
        (INT, memoryview(b"\x01\x00\x00\x00"), 1),
    ],
    ids=_id,
)
def test_from_bytes_lenient_reads(t: PrimitiveType, data: bytes, value: Any) -> None:
    assert same(from_bytes(t, data), value)


@pytest.mark.parametrize(
    ("t", "data"),
    [(INT, b"\x01\x02\x03"), (INT, b""), (LONG, b"\x00" * 5), (FLOAT, b"\x00\x00"),
     (DOUBLE, b"\x00" * 7), (BOOLEAN, b""), (BOOLEAN, b"\x00\x00"), (DATE, b"\x00" * 8),
     (TIME, b"\x00" * 4), (TIMESTAMP, b"\x00" * 5), (TIMESTAMPTZ, b"\x00" * 9),
     (UUID, b"\x00" * 15), (fixed(2), b"abc"), (dec(9, 2), b"")],
    ids=_id,
)
def test_from_bytes_rejects_wrong_lengths(t: PrimitiveType, data: bytes) -> None:
    message = f"Cannot decode {t} from {len(data)} bytes"
    with pytest.raises(ValidationError, match=re.escape(message)):
        from_bytes(t, data)


def test_from_bytes_rejects_invalid_utf8_and_non_bytes() -> None:
    with pytest.raises(ValidationError, match="string: invalid UTF-8"):
        from_bytes(STRING, b"\xff")
    with pytest.raises(ValidationError, match="Cannot decode int from str"):
        from_bytes(INT, "1234")  # type: ignore[arg-type]  # wrong on purpose


@pytest.mark.parametrize(
    "t", [STRUCT_1_2, ListType(1, INT), MapType(1, INT, 2, INT)], ids=str)
def test_binary_nested_types_are_not_supported(t: Any) -> None:
    with pytest.raises(ValidationError, match="not supported"):
        to_bytes(t, {})
    with pytest.raises(ValidationError, match="not supported"):
        from_bytes(t, b"")


# ------------------------------------------------------------------------- JSON reading


@pytest.mark.parametrize(
    ("t", "data", "value"),
    [
        (TIME, "22:31", 81_060_000_000),
        (TIME, "22:31:08", 81_068_000_000),
        (TIME, "22:31:08.1", 81_068_100_000),
        (TIMESTAMPTZ, "2017-11-16T22:31:08.123456Z", TS_2017),
        (TIMESTAMPTZ, "2017-11-16T14:31:08.123456-08:00", TS_2017),
        (TIMESTAMPTZ, "2017-11-17T00:01:08.123456+01:30", TS_2017),
        (TIMESTAMP, "2017-11-16T22:31", TS_2017 - 8_123_456),
        (UUID, "F79C3E09-677C-4BBD-A479-3F349CB785E7", SPEC_UUID),
        (BINARY, "00FF", b"\x00\xff"),
        (FLOAT, 1, 1.0),
        (FLOAT, 0.1, struct.unpack("<f", struct.pack("<f", 0.1))[0]),  # rounded to 32 bits
        (DOUBLE, -3, -3.0),
        (DOUBLE, "NaN", math.nan),
        (DOUBLE, "-Infinity", -math.inf),
        (FLOAT, math.inf, math.inf),
        (FLOAT, 3.4028235e38, 3.4028234663852886e38),  # Java's Float.MAX_VALUE
        (FLOAT, 1e-46, 0.0),  # underflows to zero: not an error
        (dec(3, 1), "1.42E+1", Decimal("14.2")),
        (dec(3, -20), "1.23E+22", Decimal("123E+20")),  # Java's BigDecimal.toString form
    ],
    ids=_id,
)
def test_json_accepted_variants(t: IcebergType, data: Any, value: Any) -> None:
    assert same(from_json(t, data), value)


def test_json_floats_use_the_shortest_form_and_json_non_finite_tokens() -> None:
    assert json.dumps(to_json(FLOAT, from_python(FLOAT, 0.1))) == "0.1"
    assert json.dumps(to_json(FLOAT, from_python(FLOAT, 3.4028234663852886e38))) == "3.4028235e+38"
    assert json.dumps([to_json(DOUBLE, math.nan), to_json(FLOAT, -math.inf)]) == (
        "[NaN, -Infinity]")


@pytest.mark.parametrize(
    ("t", "data", "reason"),
    [
        (INT, "34", "expected a JSON integer"),
        (INT, 1.5, "expected a JSON integer"),
        (INT, True, "expected a JSON integer"),
        (INT, 2**31, "out of range"),
        (LONG, -(2**63) - 1, "out of range"),
        (BOOLEAN, 1, "expected a bool"),
        (BOOLEAN, "true", "expected a bool"),
        (FLOAT, "abc", "expected a JSON number"),
        (DOUBLE, False, "expected a JSON number"),
        (FLOAT, 1e39, "out of range"),
        (FLOAT, 3.4028235677973366e38, "out of range"),  # FLT_MAX + half an ulp: rounds up
        (DOUBLE, 10**400, "out of range"),
        (dec(4, 2), 14.2, "expected a JSON string"),
        (dec(4, 2), "14.2", "scale must be 2"),
        (dec(4, 2), "123.45", "more than 4 digits"),
        (dec(4, 2), "abc", "not a decimal number"),
        (dec(4, 2), "NaN", "finite"),
        (dec(1, -20), "200000000000000000000", "scale must be -20"),
        (DATE, "2017-13-01", "ISO-8601"),
        (DATE, "20171116", "ISO-8601"),
        (DATE, "+10000-01-01", "ISO-8601"),
        (DATE, 17486, "ISO-8601"),
        (TIME, "24:00:00", "ISO-8601"),
        (TIME, "22:31:08.1234567", "ISO-8601"),
        (TIME, "22:31:08+00:00", "ISO-8601"),
        (TIMESTAMP, "2017-11-16T22:31:08.123456+00:00", "must not include a zone offset"),
        (TIMESTAMP, "2017-11-16 22:31:08", "ISO-8601"),
        (TIMESTAMPTZ, "2017-11-16T22:31:08.123456", "must include a zone offset"),
        (TIMESTAMPTZ, "2017-11-16T22:31:08+0000", "ISO-8601"),
        (STRING, 5, "expected a str"),
        (STRING, "\ud800", "UTF-8"),
        (UUID, "not-a-uuid", "expected a UUID"),
        (UUID, "{f79c3e09-677c-4bbd-a479-3f349cb785e7}", "expected a UUID"),
        (UUID, 5, "expected a JSON string"),
        (fixed(4), "0001", "expected 4 bytes, got 2"),
        (fixed(4), "zz", "hexadecimal"),
        (BINARY, "0 01", "hexadecimal"),
        (BINARY, "001", "hexadecimal"),
        (BINARY, 5, "expected a JSON string"),
        (STRUCT_1_2, [1], "expected a JSON object"),
        (STRUCT_1_2, {"1": 1, "9": 2}, "no field with ID ['9']"),
        (STRUCT_1_2, {"id": 1}, "no field with ID ['id']"),
        (ListType(3, INT), {"1": 1}, "expected a JSON array"),
        (ListType(3, INT), ["1"], "expected a JSON integer"),
        (MapType(4, STRING, 5, INT), {"keys": ["a"]}, '"keys": [...], "values"'),
        (MapType(4, STRING, 5, INT), {"keys": ["a"], "values": []}, "of one length"),
        (MapType(4, STRING, 5, INT), {"keys": ["a", "a"], "values": [1, 2]}, "duplicate keys"),
        (MapType(4, ListType(6, INT), 5, INT), {"keys": [[1]], "values": [1]}, "dict keys"),
    ],
    ids=_id,
)
def test_from_json_errors_name_the_type(t: IcebergType, data: Any, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        from_json(t, data)
    assert str(t) in str(info.value) or not isinstance(t, PrimitiveType)  # nested: the child's
    assert reason in str(info.value)


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (STRUCT_1_2, {"1": None}),
        (ListType(3, INT), [1, None]),
        (MapType(4, STRING, 5, INT), {"keys": ["a"], "values": [None]}),
        (MapType(4, STRING, 5, INT), {"keys": [None], "values": [1]}),
    ],
    ids=_id,
)
def test_from_json_rejects_null_for_required(t: IcebergType, data: Any) -> None:
    with pytest.raises(ValidationError, match="Invalid null for required field"):
        from_json(t, data)


def test_to_json_outside_iso_years_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeature, match="date value 2147483647"):
        to_json(DATE, 2**31 - 1)
    with pytest.raises(UnsupportedFeature, match="timestamp value"):
        to_json(TIMESTAMP, -(2**63))


# -------------------------------------------------------------------------------- checking


@pytest.mark.parametrize(
    ("t", "value"),
    [(BOOLEAN, False), (INT, 2**31 - 1), (LONG, -(2**63)), (FLOAT, 0.5), (FLOAT, math.nan),
     (FLOAT, -math.inf), (DOUBLE, 0.1), (dec(2, 2), Decimal("-0.99")), (DATE, -(2**31)),
     (TIME, 0), (TIMESTAMPTZ, 2**63 - 1), (STRING, ""), (UUID, SPEC_UUID), (fixed(1), b"x"),
     (BINARY, b""), (STRUCT_1_2, {1: 5}), (ListType(3, STRING), []),
     (MapType(4, STRING, 5, INT, value_required=False), {"a": None})],
    ids=_id,
)
def test_check_value_accepts(t: IcebergType, value: Any) -> None:
    check_value(t, value)


@pytest.mark.parametrize(
    ("t", "value", "reason"),
    [
        (INT, True, "expected an int"),  # bool is not an int
        (INT, None, "expected an int"),
        (INT, 2**31, "out of range"),
        (LONG, -(2**63) - 1, "out of range"),
        (LONG, 1.0, "expected an int"),
        (BOOLEAN, 0, "expected a bool"),
        (FLOAT, 0.1, "not a 32-bit float"),
        (FLOAT, 1e39, "not a 32-bit float"),
        (FLOAT, 1, "expected a float"),
        (DOUBLE, Decimal(1), "expected a float"),
        (dec(4, 2), Decimal("14.2"), "scale must be 2"),
        (dec(4, 2), Decimal("123.45"), "more than 4 digits"),
        (dec(4, 2), Decimal("NaN"), "finite"),
        (dec(4, 2), 14.2, "expected a finite decimal.Decimal"),
        (DATE, 2**31, "out of range"),
        (DATE, date(2017, 11, 16), "expected an int"),
        (TIME, -1, "out of range"),
        (TIME, MICROS_PER_DAY, "out of range"),
        (TIMESTAMP, 2**63, "out of range"),
        (STRING, b"x", "expected a str"),
        (STRING, "a\udc80", "UTF-8"),
        (UUID, str(SPEC_UUID), "expected a uuid.UUID"),
        (fixed(2), b"abc", "expected 2 bytes, got 3"),
        (BINARY, bytearray(b"x"), "expected bytes"),
        (BINARY, "00", "expected bytes"),
        (STRUCT_1_2, {9: 1}, "no field with ID [9]"),
        (STRUCT_1_2, {"id": 1}, "no field with ID ['id']"),
        (STRUCT_1_2, {1: "x"}, "expected an int"),
        (STRUCT_1_2, [1], "expected a dict"),
        (ListType(3, INT), (1,), "expected a list"),
        (MapType(4, STRING, 5, INT), [("a", 1)], "expected a dict"),
        (MapType(4, STRING, 5, INT), {"a": "b"}, "expected an int"),
    ],
    ids=_id,
)
def test_check_value_rejects(t: IcebergType, value: Any, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        check_value(t, value)
    assert reason in str(info.value)
    assert str(t) in str(info.value) or not isinstance(t, PrimitiveType)  # nested: the child's


@pytest.mark.parametrize(
    ("t", "value"),
    [(STRUCT_1_2, {1: None}), (ListType(3, INT), [None]), (MapType(4, STRING, 5, INT), {"a": None}),
     (MapType(4, STRING, 5, INT, value_required=False), {None: 1})],
    ids=_id,
)
def test_check_value_rejects_null_for_required(t: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError, match="Invalid null for required field"):
        check_value(t, value)


@pytest.mark.parametrize("write", [to_bytes, to_json], ids=["to_bytes", "to_json"])
def test_writers_check_values_first(write: Any) -> None:
    with pytest.raises(ValidationError, match="Invalid int value 2147483648"):
        write(INT, 2**31)


# ------------------------------------------------------------------------ from_python


EAST = timezone(timedelta(hours=5, minutes=30))


@pytest.mark.parametrize(
    ("t", "obj", "value"),
    [
        (DATE, date(1969, 12, 31), -1),
        (DATE, date(2017, 11, 16), 17486),
        (TIME, time(22, 31, 8, 123456), TIME_2231),
        (TIMESTAMP, datetime(2017, 11, 16, 22, 31, 8, 123456), TS_2017),
        (TIMESTAMP, datetime(1900, 1, 1), -2_208_988_800_000_000),
        (TIMESTAMPTZ, datetime(2017, 11, 17, 4, 1, 8, 123456, tzinfo=EAST), TS_2017),
        (TIMESTAMPTZ, datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=UTC), TS_2017),
        (UUID, "F79C3E09-677C-4BBD-A479-3F349CB785E7", SPEC_UUID),
        (UUID, SPEC_UUID, SPEC_UUID),
        (dec(4, 2), 14, Decimal("14.00")),
        (dec(4, 2), "14.2", Decimal("14.20")),
        (dec(4, 2), 14.2, Decimal("14.20")),
        (dec(4, 2), Decimal("14.200"), Decimal("14.20")),
        (dec(4, 2), Decimal("-0.5"), Decimal("-0.50")),
        (dec(1, -20), 2 * 10**20, Decimal("2E+20")),
        (FLOAT, 0.1, struct.unpack("<f", struct.pack("<f", 0.1))[0]),
        (FLOAT, 2, 2.0),
        (DOUBLE, 1, 1.0),
        (BINARY, bytearray(b"ab"), b"ab"),
        (fixed(2), memoryview(b"ab"), b"ab"),
        (INT, 5, 5),
        (STRING, "x", "x"),
        (STRUCT_1_2, {1: 7, 2: None}, {1: 7, 2: None}),
        (ListType(3, DATE), [date(1970, 1, 2)], [1]),
        (MapType(4, UUID, 5, dec(3, 1)), {str(SPEC_UUID): 1}, {SPEC_UUID: Decimal("1.0")}),
        (StructType((NestedField.required(1, "t", TIMESTAMP),)),
         {1: datetime(1970, 1, 1, 0, 0, 1)}, {1: 1_000_000}),
    ],
    ids=_id,
)
def test_from_python(t: IcebergType, obj: Any, value: Any) -> None:
    assert same(from_python(t, obj), value)


@pytest.mark.parametrize(
    ("t", "obj", "reason"),
    [
        (TIMESTAMPTZ, datetime(2017, 11, 16), "needs an aware datetime"),
        (TIMESTAMP, datetime(2017, 11, 16, tzinfo=UTC), "needs a naive datetime"),
        (DATE, datetime(2017, 11, 16), "expected an int"),
        (TIME, time(1, 0, tzinfo=UTC), "no time zone"),
        (UUID, "xyz", "not a UUID"),
        (FLOAT, 1e39, "out of range"),
        (FLOAT, True, "expected a JSON number"),
        (dec(4, 2), 14.205, "more than 2 digits after the point"),
        (dec(4, 2), 123, "more than 4 digits"),
        (dec(4, 2), True, "expected a number"),
        (dec(4, 2), "NaN", "finite"),
        (dec(4, 2), "abc", "not a decimal number"),
        (dec(1, -20), 10**20 + 1, "more than -20 digits after the point"),
        (INT, "5", "expected an int"),
        (STRUCT_1_2, {1: "x"}, "expected an int"),
        (STRUCT_1_2, {3: 1}, "no field with ID [3]"),
        (MapType(4, ListType(6, INT), 5, INT), {(1,): 1}, "cannot be dict keys"),
    ],
    ids=_id,
)
def test_from_python_rejects(t: IcebergType, obj: Any, reason: str) -> None:
    with pytest.raises(ValidationError, match="Invalid ") as info:
        from_python(t, obj)
    assert reason in str(info.value)


# -------------------------------------------------------------------------------- ordering

NAN = math.nan
SPEC_FLOAT_ORDER = [-NAN, -math.inf, -1e300, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 1e300,
                    math.inf, NAN]


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


@pytest.mark.parametrize("t", [FLOAT, DOUBLE], ids=str)
def test_float_sort_key_follows_the_spec_order(t: PrimitiveType) -> None:
    # "-NaN < -Infinity < -value < -0 < 0 < value < Infinity < NaN"
    shuffled = SPEC_FLOAT_ORDER[:]
    random.Random(7).shuffle(shuffled)
    assert [bits(x) for x in sorted(shuffled, key=sort_key(t))] == [
        bits(x) for x in SPEC_FLOAT_ORDER]


@pytest.mark.parametrize(
    ("t", "ordered"),
    [
        (STRING, ["", "A", "a", "\u00e9", "\uffff", "\U0001f600"]),  # code point = UTF-8 order
        (BINARY, [b"", b"\x00", b"\x00\x00", b"\x7f", b"\x80", b"\xff"]),  # unsigned bytes
        (fixed(1), [b"\x00", b"\x7f", b"\x80", b"\xff"]),
        (UUID, [uuid.UUID(int=0), uuid.UUID(int=2**127 - 1), uuid.UUID(int=2**127),
                uuid.UUID(int=2**128 - 1)]),  # unsigned big-endian bytes, not Java's signed longs
        (dec(9, 2), [Decimal("-1.00"), Decimal("0.00"), Decimal("0.01"), Decimal("10.00")]),
        (INT, [-(2**31), -1, 0, 2**31 - 1]),
        (BOOLEAN, [False, True]),
    ],
    ids=str,
)
def test_sort_key_orders(t: PrimitiveType, ordered: list[Any]) -> None:
    assert sorted(reversed(ordered), key=sort_key(t)) == ordered


@pytest.mark.parametrize(
    ("t", "values", "lower", "upper"),
    [
        (DOUBLE, [0.0, -0.0], -0.0, 0.0),
        (DOUBLE, [-0.0, 0.0], -0.0, 0.0),
        (FLOAT, [None, NAN, 2.5, -NAN, -0.0, 0.0, None], -0.0, 2.5),
        (DOUBLE, [math.inf, NAN, -math.inf], -math.inf, math.inf),
        (DOUBLE, [NAN, None, -NAN], None, None),
        (LONG, [], None, None),
        (STRING, ["b", None, "\U0001f600", "a"], "a", "\U0001f600"),
        (BINARY, [b"\x80", b"\x7f", b""], b"", b"\x80"),
        (DATE, [3, -4, None, 0], -4, 3),
    ],
    ids=_id,
)
def test_bounds(t: PrimitiveType, values: list[Any], lower: Any, upper: Any) -> None:
    assert same(lower_bound(t, values), lower)
    assert same(upper_bound(t, iter(values)), upper)


def test_nested_types_have_no_sort_key() -> None:
    with pytest.raises(ValidationError, match="no order"):
        sort_key(ListType(1, INT))  # type: ignore[arg-type]  # wrong on purpose


# ------------------------------------------------------------------ Hypothesis properties

JSON_DAYS = (date_to_days(date(1, 1, 1)), date_to_days(date(9999, 12, 31)))


def decimals(t: PrimitiveType) -> st.SearchStrategy[Decimal]:
    limit = 10**t.precision - 1
    return st.integers(-limit, limit).map(lambda u: Decimal(f"{u}E{-t.scale}"))


def primitive_values(t: PrimitiveType, json_safe: bool) -> st.SearchStrategy[Any]:
    first, last = JSON_DAYS if json_safe else (-(2**31), 2**31 - 1)
    micros = ((first * MICROS_PER_DAY, (last + 1) * MICROS_PER_DAY - 1) if json_safe
              else (-(2**63), 2**63 - 1))
    match t.type_id:
        case TypeId.BOOLEAN:
            return st.booleans()
        case TypeId.INT:
            return st.integers(-(2**31), 2**31 - 1)
        case TypeId.LONG:
            return st.integers(-(2**63), 2**63 - 1)
        case TypeId.FLOAT:
            return st.floats(width=32)
        case TypeId.DOUBLE:
            return st.floats()
        case TypeId.DECIMAL:
            return decimals(t)
        case TypeId.DATE:
            return st.integers(first, last)
        case TypeId.TIME:
            return st.integers(0, MICROS_PER_DAY - 1)
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            return st.integers(*micros)
        case TypeId.STRING:
            return st.text()
        case TypeId.UUID:
            return st.uuids()
        case TypeId.FIXED:
            return st.binary(min_size=t.length, max_size=t.length)
        case _:
            return st.binary()


def values_of(t: IcebergType) -> st.SearchStrategy[Any]:
    """JSON-writable values of any type, nulls included where the type allows them."""
    def nullable(f: NestedField) -> st.SearchStrategy[Any]:
        inner = values_of(f.field_type)
        return inner if f.is_required else st.none() | inner

    match t:
        case StructType():
            return st.fixed_dictionaries({}, optional={f.field_id: nullable(f) for f in t.fields})
        case ListType():
            return st.lists(nullable(t.element_field), max_size=3)
        case MapType():
            return st.dictionaries(values_of(t.key_type), nullable(t.value_field), max_size=3)
        case _:
            return primitive_values(t, json_safe=True)


SIMPLE = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, STRING, UUID,
          BINARY]
random_decimals = st.integers(1, 38).flatmap(
    lambda p: st.integers(-38, 38).map(lambda s: dec(p, s)))
primitive_types = st.sampled_from(SIMPLE) | random_decimals | st.integers(1, 20).map(fixed)
key_types = primitive_types.filter(lambda t: t.type_id not in {TypeId.FLOAT, TypeId.DOUBLE})


def nested(children: st.SearchStrategy[IcebergType]) -> st.SearchStrategy[IcebergType]:
    fields = st.lists(st.tuples(children, st.booleans()), max_size=4).map(
        lambda cs: StructType(tuple(NestedField(i, f"f{i}", c, req)
                                    for i, (c, req) in enumerate(cs, start=1))))
    lists = st.builds(ListType, st.just(1), children, st.booleans())
    maps = st.builds(MapType, st.just(1), key_types, st.just(2), children, st.booleans())
    return fields | lists | maps


any_types = st.recursive(primitive_types, nested, max_leaves=6)


@given(st.data(), primitive_types)
def test_binary_round_trip(data: st.DataObject, t: PrimitiveType) -> None:
    value = data.draw(primitive_values(t, json_safe=False))
    encoded = to_bytes(t, value)
    assert same(from_bytes(t, encoded), value)
    if t.type_id is TypeId.DECIMAL:  # "using the minimum number of bytes"
        assert len(encoded) == 1 or (encoded[0], encoded[1] >= 0x80) not in {(0, False),
                                                                            (0xFF, True)}


@given(st.data(), primitive_types)
def test_primitive_json_round_trip(data: st.DataObject, t: PrimitiveType) -> None:
    value = data.draw(primitive_values(t, json_safe=True))
    text = json.dumps(to_json(t, value))
    assert same(from_json(t, json.loads(text)), value)


@given(st.data(), any_types)
def test_nested_json_round_trip(data: st.DataObject, t: IcebergType) -> None:
    value = data.draw(values_of(t))
    text = json.dumps(to_json(t, value))
    assert same(from_json(t, json.loads(text)), value)
    assert same(from_python(t, value), value)  # internal values pass through unchanged


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_float_sort_key_agrees_with_comparison(a: float, b: float) -> None:
    if a < b or (a == b == 0.0 and math.copysign(1, a) < math.copysign(1, b)):
        assert sort_key(DOUBLE)(a) < sort_key(DOUBLE)(b)


@given(st.lists(st.text()))
def test_string_order_is_utf8_byte_order(values: list[str]) -> None:
    assert sorted(values, key=sort_key(STRING)) == sorted(values, key=lambda s: s.encode())


@given(st.lists(st.floats() | st.none()))
def test_double_bounds_skip_nan_and_none(values: list[float | None]) -> None:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    lower, upper = lower_bound(DOUBLE, values), upper_bound(DOUBLE, values)
    if not finite:
        assert lower is None and upper is None
        return
    assert lower == min(finite) and upper == max(finite)
    zeros = {math.copysign(1, v) for v in finite if v == 0.0}
    if lower == 0.0:
        assert math.copysign(1, lower) == min(zeros)
    if upper == 0.0:
        assert math.copysign(1, upper) == max(zeros)
