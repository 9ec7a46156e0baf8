"""Shared helpers of the writer tests: schemas, sample rows, a FileIO that can be made to fail."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.io.arrow.schema import FIELD_ID_KEY
from icepark.io.fileio import ArrowFileIO
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

PRIMITIVES: dict[str, PrimitiveType] = {
    "boolean": BOOLEAN, "int": INT, "long": LONG, "float": FLOAT, "double": DOUBLE,
    "dec9": PrimitiveType.decimal(9, 2), "dec18": PrimitiveType.decimal(18, 4),
    "dec38": PrimitiveType.decimal(38, 10), "date": DATE, "time": TIME,
    "timestamp": TIMESTAMP, "timestamptz": TIMESTAMPTZ, "string": STRING, "uuid": UUID,
    "fixed": PrimitiveType.fixed(3), "binary": BINARY,
}

# One optional column per primitive, IDs 1..16.
PRIMITIVE_SCHEMA = Schema(tuple(
    NestedField.optional(i, name, t) for i, (name, t) in enumerate(PRIMITIVES.items(), start=1)))

# Iceberg storage values of each primitive column: (values incl. None, true min, true max).
U1 = uuid.UUID("00000000-0000-4000-8000-000000000001")
U2 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
PRIMITIVE_VALUES: dict[str, list[Any]] = {
    "boolean": [True, None, False],
    "int": [5, None, -7],
    "long": [2**40, None, -(2**50)],
    "float": [1.5, None, -2.25],
    "double": [1e300, None, -1e-300],
    "dec9": [Decimal("1234567.89"), None, Decimal("-0.01")],
    "dec18": [Decimal("12345678901234.5678"), None, Decimal("-1.0000")],
    "dec38": [Decimal("1234567890123456789012345678.0123456789"), None,
              Decimal("-0.0000000001")],
    "date": [-1, None, 17486],
    "time": [0, None, 86_399_999_999],
    "timestamp": [-1, None, 1_510_871_468_123_456],
    "timestamptz": [1_510_871_468_123_456, None, -10**15],
    "string": ["b", None, "a\u00e9"],
    "uuid": [U2, None, U1],
    "fixed": [b"\x00\x01\x02", None, b"\xff\x00\x00"],
    "binary": [b"\x00", None, b""],
}


def arrow_column(name: str, values: list[Any]) -> Any:
    """An Arrow array of Iceberg storage values of primitive column ``name``."""
    t = PRIMITIVES[name]
    match name:
        case "date":
            return pa.array(values, pa.int32()).cast(pa.date32())
        case "time":
            return pa.array(values, pa.int64()).cast(pa.time64("us"))
        case "timestamp":
            return pa.array(values, pa.int64()).cast(pa.timestamp("us"))
        case "timestamptz":
            return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        case "uuid":
            return pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
        case "fixed":
            return pa.array(values, pa.binary(3))
        case "float":
            return pa.array(values, pa.float32())
        case _ if name.startswith("dec"):
            return pa.array(values, pa.decimal128(t.precision, t.scale))
        case _:
            return pa.array(values)


def primitive_batch(values: dict[str, list[Any]] | None = None) -> Any:
    data = values or PRIMITIVE_VALUES
    return pa.record_batch({name: arrow_column(name, data[name]) for name in PRIMITIVES})


# A nested schema: struct, list of structs, map with struct values, list of lists.
NESTED_SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "location", StructType((
        NestedField.required(3, "lat", DOUBLE),
        NestedField.optional(4, "name", STRING)))),
    NestedField.optional(5, "points", ListType(6, StructType((
        NestedField.required(7, "x", INT),
        NestedField.optional(8, "y", FLOAT))), element_required=False)),
    NestedField.optional(9, "props", MapType(10, STRING, 11, StructType((
        NestedField.optional(12, "v", LONG),)), value_required=False)),
    NestedField.optional(13, "matrix", ListType(14, ListType(15, DOUBLE, True), True)),
)

NESTED_ROWS: dict[str, list[Any]] = {
    "id": [1, 2, 3],
    "location": [{"lat": 1.5, "name": "a"}, None, {"lat": -2.0, "name": None}],
    "points": [[{"x": 1, "y": 2.0}, None], None, []],
    "props": [[("k", {"v": 1})], [("n", None)], None],
    "matrix": [[[1.0], []], None, [[float("nan")]]],
}


def nested_batch() -> Any:
    props_type = pa.map_(pa.string(), pa.struct([pa.field("v", pa.int64())]))
    return pa.record_batch({
        "id": pa.array(NESTED_ROWS["id"], pa.int64()),
        "location": pa.array(NESTED_ROWS["location"]),
        "points": pa.array(NESTED_ROWS["points"]),
        "props": pa.array(NESTED_ROWS["props"], props_type),
        "matrix": pa.array(NESTED_ROWS["matrix"]),
    })


class Locations:
    """A location provider numbering files in a directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._counter = itertools.count()

    def __call__(self) -> str:
        return str(self.root / f"{next(self._counter):05d}.parquet")

    def files(self) -> list[str]:
        return sorted(str(p) for p in self.root.glob("*.parquet"))


class FailingIO(ArrowFileIO):
    """An ArrowFileIO whose output streams raise after ``fail_after`` bytes in total."""

    def __init__(self, fail_after: int) -> None:
        super().__init__()
        self.remaining = fail_after

    def new_output(self, location: str) -> Any:
        inner = super().new_output(location)
        io = self

        class _Output:
            def __init__(self) -> None:
                self.location = location

            def create(self, overwrite: bool = False) -> Any:
                return _FailingStream(inner.create(overwrite), io)

        return _Output()


class _FailingStream:
    """A Python file object over a pyarrow stream; pyarrow wraps it as a PythonFile."""

    def __init__(self, inner: Any, io: FailingIO) -> None:
        self._inner = inner
        self._io = io
        self.closed = False

    def write(self, data: Any) -> int:
        size = len(memoryview(data))
        self._io.remaining -= size
        if self._io.remaining < 0:
            raise OSError("injected write failure")
        self._inner.write(data)
        return size

    def tell(self) -> int:
        return int(self._inner.tell())

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self.closed = True
        self._inner.close()


def field_ids_of(arrow_type: Any) -> Iterator[tuple[str, int | None]]:
    """(path, field ID) of every nested field below an Arrow type."""
    def walk(f: Any, path: str) -> Iterator[tuple[str, int | None]]:
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        yield path, None if raw is None else int(raw)
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                yield from walk(t.field(i), f"{path}.{t.field(i).name}")
        elif pa.types.is_map(t):
            yield from walk(t.key_field, f"{path}.key")
            yield from walk(t.item_field, f"{path}.value")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            yield from walk(t.value_field, f"{path}.element")
    for f in arrow_type:
        yield from walk(f, f.name)


def parquet_field_ids(path: str) -> dict[str, int]:
    """Column path -> Parquet field_id of every node of the file's schema, from the footer."""
    schema = pq.read_metadata(path).schema
    return {name: fid for name, fid in field_ids_of(schema.to_arrow_schema())
            if fid is not None}


def file_size(path: str) -> int:
    return os.path.getsize(path)



def parquet_schema_lines(path: str) -> list[str]:
    """The footer's Parquet schema, one node a line (``field_id=N`` on each)."""
    return [line.strip() for line in str(pq.read_metadata(path).schema).splitlines()
            if "field_id=" in line]
