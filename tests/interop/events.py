"""The table every peer test writes: each primitive type, nested struct/list/map columns, and
rows with nulls, non-ASCII text and values either side of the epoch."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from icepark.spec.schema import Schema
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
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "flag", BOOLEAN),
    NestedField.optional(3, "small", INT),
    NestedField.optional(4, "ratio", FLOAT),
    NestedField.optional(5, "score", DOUBLE),
    NestedField.optional(6, "amount", PrimitiveType.decimal(10, 2)),
    NestedField.optional(7, "day", DATE),
    NestedField.optional(8, "at", TIME),
    NestedField.optional(9, "local_ts", TIMESTAMP),
    NestedField.optional(10, "ts", TIMESTAMPTZ),
    NestedField.optional(11, "name", STRING),
    NestedField.optional(12, "key", UUID),
    NestedField.optional(13, "code", PrimitiveType.fixed(3)),
    NestedField.optional(14, "blob", BINARY),
    NestedField.optional(15, "device", StructType((
        NestedField.optional(16, "os", STRING),
        NestedField.optional(17, "version", INT),
    ))),
    NestedField.optional(18, "tags", ListType(19, STRING, element_required=False)),
    NestedField.optional(20, "metrics", MapType(21, STRING, 22, DOUBLE, value_required=False)),
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def rows(ids: range, with_country: bool = False) -> list[dict[str, Any]]:
    out = []
    for i in ids:
        row: dict[str, Any] = {
            "id": i,
            "flag": None if i % 4 == 0 else i % 2 == 0,
            "small": None if i % 5 == 0 else i * 3 - 50,
            "ratio": float(i) / 4,
            "score": None if i % 6 == 0 else i * 1.5 - 20,
            "amount": Decimal(i * 137 - 2000).scaleb(-2),
            "day": date(1969, 12, 20) + timedelta(days=i * 3),
            "at": time(i % 24, (i * 7) % 60, i % 60, i * 11),
            "local_ts": datetime(2024, 2, 28, 23) + timedelta(minutes=i * 97),
            "ts": None if i % 7 == 0 else EPOCH + timedelta(hours=i * 29 - 300),
            "name": ["alpha", "beta", "gämma", None, "🦆duck"][i % 5],
            "key": uuid.UUID(int=i * 7919 + 1),
            "code": bytes([i % 256, 1, 2]),
            "blob": None if i % 3 == 0 else bytes(range(i % 9)),
            "device": None if i % 8 == 0 else {"os": ["linux", "mac", None][i % 3],
                                               "version": i},
            "tags": None if i % 9 == 0 else [f"t{j}" for j in range(i % 3)] + [None],
            "metrics": None if i % 10 == 0 else {"a": float(i), "b": None},
        }
        if with_country:
            row["country"] = ["NL", "DE", None][i % 3]
        out.append(row)
    return out
