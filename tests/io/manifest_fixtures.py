"""Shared values of the manifest tests: a nested schema partitioned by every result type."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
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

NESTED_SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "data", STRING),
    NestedField.optional(3, "flag", BOOLEAN),
    NestedField.optional(4, "count", INT),
    NestedField.optional(5, "ratio", FLOAT),
    NestedField.optional(6, "score", DOUBLE),
    NestedField.optional(7, "price", PrimitiveType.decimal(9, 2)),
    NestedField.optional(8, "day", DATE),
    NestedField.optional(9, "at", TIME),
    NestedField.optional(10, "ts", TIMESTAMP),
    NestedField.optional(11, "tstz", TIMESTAMPTZ),
    NestedField.optional(12, "uid", UUID),
    NestedField.optional(13, "code", PrimitiveType.fixed(4)),
    NestedField.optional(14, "blob", BINARY),
    NestedField.optional(15, "big", PrimitiveType.decimal(38, 10)),
    NestedField.optional(16, "location", StructType((
        NestedField.required(17, "lat", DOUBLE),
        NestedField.required(18, "lon", DOUBLE),
    ))),
    NestedField.optional(19, "tags", ListType(20, STRING, element_required=False)),
    NestedField.optional(21, "props", MapType(22, STRING, 23, STRING, value_required=False)),
    NestedField.optional(24, "points", MapType(25, INT, 26, StructType((
        NestedField.required(27, "x", LONG),)))),
    schema_id=3,
)

# (source ID, transform, name): every partition result type of the spec's transform table.
_FIELDS = [
    (3, Transform.identity(), "p_flag"),
    (1, Transform.identity(), "p_id"),
    (5, Transform.identity(), "p_ratio"),
    (6, Transform.identity(), "p_score"),
    (7, Transform.identity(), "p_price"),
    (8, Transform.identity(), "p_day"),
    (9, Transform.identity(), "p_at"),
    (10, Transform.identity(), "p_ts"),
    (11, Transform.identity(), "p_tstz"),
    (2, Transform.identity(), "p_data"),
    (12, Transform.identity(), "p_uid"),
    (13, Transform.identity(), "p_code"),
    (14, Transform.identity(), "p-blob"),  # not an Avro name: written sanitized
    (15, Transform.identity(), "p_big"),
    (1, Transform.bucket(16), "id_bucket"),
    (2, Transform.truncate(3), "data_trunc"),
    (11, Transform.day(), "tstz_day"),
    (10, Transform.hour(), "ts_hour"),
    (4, Transform.void(), "count_null"),
]
PARTITION_SPEC = PartitionSpec(
    spec_id=2,
    fields=tuple(PartitionField(src, 1000 + i, t, name)
                 for i, (src, t, name) in enumerate(_FIELDS)))


def partition_values(i: int) -> tuple[Any, ...]:
    """A partition tuple of PARTITION_SPEC; ``i`` varies the values."""
    return (
        i % 2 == 0, i * 1_000_003 - 7, float(i) / 4, -i / 3, Decimal(i * 101 - 50).scaleb(-2),
        19_000 + i, (i % 24) * 3_600_000_000, 1_700_000_000_000_000 + i, -5_000_000 + i,
        f"data-{i}-é", uuid.UUID(int=i * 7919 + 1), bytes([i % 256, 1, 2, 3]),
        bytes(range(i % 5)), Decimal(f"-{i}1234567890123456789.0123456789"),
        i % 16, f"da{i % 3}", 19_000 + i % 3, 472_000 + i, None,
    )



def data_file(i: int, partition: tuple[Any, ...] | None = None, *,
              content: FileContent = FileContent.DATA, spec_id: int = 2, **kw: Any) -> DataFile:
    """A file with every optional field set (unless overridden)."""
    args: dict[str, Any] = {
        "file_path": f"file:///warehouse/db/t/data/{i:05d}.parquet",
        "file_format": FileFormat.PARQUET,
        "partition": partition_values(i) if partition is None else partition,
        "record_count": 100 + i,
        "file_size_in_bytes": 4096 + i,
        "content": content,
        "spec_id": spec_id,
        "column_sizes": {1: 40 + i, 2: 2**40},
        "value_counts": {1: 100 + i, 2: 100 + i},
        "null_value_counts": {1: 0, 2: i},
        "nan_value_counts": {6: i % 2},
        "distinct_counts": {1: 100 + i},
        "lower_bounds": {1: (i).to_bytes(8, "little"), 2: b"a"},
        "upper_bounds": {1: (i + 99).to_bytes(8, "little"), 2: b"z" * (i % 3)},
        "key_metadata": bytes([i % 256]) * 3,
        "split_offsets": (4, 1000 + i),
        "equality_ids": (1, 2) if content is FileContent.EQUALITY_DELETES else None,
        "sort_order_id": None if content is FileContent.POSITION_DELETES else 1,
    }
    args.update(kw)
    return DataFile(**args)
