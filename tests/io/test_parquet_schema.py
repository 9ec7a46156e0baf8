"""A new table's schema from a Parquet file: every type mapped, fresh IDs, bad columns named."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import ValidationError
from icepark.io.arrow.schema import field_metadata
from icepark.io.parquet.schema import parquet_schema
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)


def _write(path: Path, schema: pa.Schema) -> str:
    pq.write_table(schema.empty_table(), path)
    return str(path)


def test_nested_file_without_ids_gets_ids_as_a_new_table(tmp_path: Path) -> None:
    arrow = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("device", pa.struct([pa.field("os", pa.string())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("metrics", pa.map_(pa.string(), pa.float64())),
    ])
    expected = Schema.of(
        NestedField.required(1, "id", LONG),
        NestedField.optional(2, "ts", TIMESTAMPTZ),
        NestedField.optional(3, "device", StructType((NestedField.optional(6, "os", STRING),))),
        NestedField.optional(4, "tags", ListType(7, STRING, element_required=False)),
        NestedField.optional(5, "metrics", MapType(8, STRING, 9, DOUBLE,
                                                   value_required=False)),
    )
    assert parquet_schema(_write(tmp_path / "a.parquet", arrow)) == expected


def test_ids_of_another_table_are_replaced(tmp_path: Path) -> None:
    arrow = pa.schema([pa.field("b", pa.string(), metadata=field_metadata(70)),
                       pa.field("a", pa.int64(), metadata=field_metadata(42))])
    schema = parquet_schema(_write(tmp_path / "b.parquet", arrow))
    assert [(f.field_id, f.name) for f in schema.fields] == [(1, "b"), (2, "a")]


def test_a_column_without_iceberg_type_is_named(tmp_path: Path) -> None:
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("took", pa.duration("s"))])
    with pytest.raises(ValidationError, match="'took'"):
        parquet_schema(_write(tmp_path / "c.parquet", arrow))
