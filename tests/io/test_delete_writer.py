"""Position and equality delete files: schemas, contents, ordering and metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import ValidationError
from icepark.io.arrow.schema import from_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    equality_delete_schema,
    position_delete_schema,
    position_deletes_batch,
    sort_position_deletes,
)
from icepark.spec.bounds import from_bytes, to_bytes
from icepark.spec.manifest import FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.reserved import FILE_PATH, POS, ROW_FIELD_ID
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from tests.io.writer_fixtures import Locations, parquet_field_ids

TABLE = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "category", STRING),
    NestedField.optional(3, "name", STRING),
    NestedField.optional(4, "score", DOUBLE),
    NestedField.optional(5, "info", StructType((
        NestedField.required(6, "code", INT),
        NestedField.optional(7, "weight", FLOAT)))),
    NestedField.optional(8, "tags", ListType(9, STRING)),
    NestedField.optional(10, "attrs", MapType(11, STRING, 12, LONG)),
)
DATA_A = "s3://bucket/warehouse/db/table/data/00000-0-a-very-long-data-file-name.parquet"
DATA_B = "s3://bucket/warehouse/db/table/data/00001-0-another-long-data-file-name.parquet"


def position_writer(root: Path, row_schema: Schema | None = None,
                    properties: dict[str, str] | None = None) -> PositionDeleteWriter:
    return PositionDeleteWriter(ArrowFileIO(), Locations(root), TABLE, PartitionSpec(), (),
                                properties or {}, row_schema)


# position deletes


def test_position_delete_schema_uses_the_reserved_ids() -> None:
    schema = position_delete_schema()
    assert [(f.field_id, f.name, f.is_required) for f in schema.fields] == [
        (2147483546, "file_path", True), (2147483545, "pos", True)]
    with_row = position_delete_schema(Schema.of(TABLE.fields[0], TABLE.fields[2]))
    row = with_row.find_field(ROW_FIELD_ID)
    assert row.name == "row" and row.is_required  # "row is required"
    assert isinstance(row.field_type, StructType)
    assert [f.field_id for f in row.field_type.fields] == [1, 3]


def test_position_delete_file_contents_and_metrics(tmp_path: Path) -> None:
    writer = position_writer(tmp_path)
    writer.write(position_deletes_batch({DATA_B: [7], DATA_A: [5, 0, 3]}))
    writer.write(pa.table({"pos": pa.array([8, 9], pa.int32()), "file_path": [DATA_B, DATA_B]}))
    [f] = writer.close()
    assert f.content is FileContent.POSITION_DELETES and f.file_format is FileFormat.PARQUET
    assert f.sort_order_id is None and f.equality_ids is None
    assert f.record_count == 6
    assert pq.read_table(f.file_path).to_pydict() == {
        "file_path": [DATA_A] * 3 + [DATA_B] * 3, "pos": [0, 3, 5, 7, 8, 9]}
    assert parquet_field_ids(f.file_path) == {"file_path": FILE_PATH.field_id,
                                              "pos": POS.field_id}
    # file_path bounds are full, not truncated to 16 characters: planning matches them.
    assert f.lower_bounds == {FILE_PATH.field_id: DATA_A.encode(),
                              POS.field_id: to_bytes(LONG, 0)}
    assert f.upper_bounds == {FILE_PATH.field_id: DATA_B.encode(),
                              POS.field_id: to_bytes(LONG, 9)}
    assert f.value_counts == {FILE_PATH.field_id: 6, POS.field_id: 6}
    assert f.null_value_counts == {FILE_PATH.field_id: 0, POS.field_id: 0}


def test_position_deletes_of_one_data_file_have_equal_path_bounds(tmp_path: Path) -> None:
    writer = position_writer(tmp_path, properties={"write.metadata.metrics.default": "none"})
    writer.write(position_deletes_batch({DATA_A: range(1000)}))
    [f] = writer.close()
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert f.lower_bounds[FILE_PATH.field_id] == f.upper_bounds[FILE_PATH.field_id]
    assert from_bytes(LONG, f.upper_bounds[POS.field_id]) == 999


def test_position_deletes_with_rows(tmp_path: Path) -> None:
    rows = Schema.of(TABLE.fields[0], TABLE.fields[2], TABLE.fields[4])
    writer = position_writer(tmp_path, rows, {"write.metadata.metrics.column.name": "counts"})
    writer.write(pa.record_batch({
        "file_path": [DATA_A, DATA_A],
        "pos": [0, 9],
        "row": [{"id": 10, "name": "Koala", "info": {"code": 1, "weight": 2.5}},
                {"id": 12, "name": None, "info": None}],
    }))
    [f] = writer.close()
    ids = parquet_field_ids(f.file_path)
    assert ids["row"] == ROW_FIELD_ID and ids["row.id"] == 1 and ids["row.info.code"] == 6
    read = from_arrow_schema(pq.read_schema(f.file_path))  # Arrow carries no docs
    assert [(c.field_id, c.name, c.is_required, str(c.field_type)) for c in read.fields] == [
        (c.field_id, c.name, c.is_required, str(c.field_type))
        for c in position_delete_schema(rows).fields]
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert from_bytes(LONG, f.lower_bounds[1]) == 10 and from_bytes(LONG, f.upper_bounds[1]) == 12
    assert 3 not in f.lower_bounds  # the table's "counts" mode for name applies to row.name
    assert f.null_value_counts is not None and f.null_value_counts[3] == 1
    assert f.nan_value_counts == {7: 0}


@pytest.mark.parametrize("batches", [
    [{"file_path": [DATA_A, DATA_A], "pos": [3, 2]}],
    [{"file_path": [DATA_B, DATA_A], "pos": [0, 1]}],
    [{"file_path": [DATA_A], "pos": [5]}, {"file_path": [DATA_A], "pos": [4]}],
    [{"file_path": [DATA_B], "pos": [0]}, {"file_path": [DATA_A], "pos": [9]}],
], ids=["pos-within-batch", "path-within-batch", "pos-across-batches", "path-across-batches"])
def test_unsorted_position_deletes_are_rejected(tmp_path: Path,
                                                batches: list[dict[str, Any]]) -> None:
    writer = position_writer(tmp_path)
    with pytest.raises(ValidationError, match="must be sorted by file_path then pos"):
        for batch in batches:
            writer.write(pa.record_batch(batch))
    assert list(tmp_path.iterdir()) == []


def test_bad_position_deletes(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="pos >= 0"):
        position_writer(tmp_path).write(pa.record_batch({"file_path": [DATA_A], "pos": [-1]}))
    with pytest.raises(ValidationError, match="'file_path' is required"):
        position_writer(tmp_path).write(pa.record_batch({"file_path": [None], "pos": [1]}))
    with pytest.raises(ValidationError, match="'row' are not in the table schema"):
        position_writer(tmp_path).write(pa.record_batch(
            {"file_path": [DATA_A], "pos": [1], "row": [{"id": 1}]}))


def test_sort_position_deletes() -> None:
    table = pa.table({"file_path": [DATA_B, DATA_A, DATA_A], "pos": [0, 9, 2]})
    assert sort_position_deletes(table).to_pydict() == {
        "file_path": [DATA_A, DATA_A, DATA_B], "pos": [2, 9, 0]}


def test_position_delete_partition(tmp_path: Path) -> None:
    spec = PartitionSpecBuilder(TABLE).identity("category").build()
    writer = PositionDeleteWriter(ArrowFileIO(), Locations(tmp_path), TABLE, spec, ("toy",), {})
    writer.write(position_deletes_batch({DATA_A: [1]}))
    [f] = writer.close()
    assert f.partition == ("toy",) and f.spec_id == spec.spec_id


# equality deletes


def test_equality_delete_schema_projects_nested_fields() -> None:
    schema = equality_delete_schema(TABLE, [6, 1])
    assert schema == Schema.of(TABLE.fields[0], NestedField.optional(5, "info", StructType((
        NestedField.required(6, "code", INT),))))


@pytest.mark.parametrize(("ids", "message"), [
    ([4], "'score' is double"),
    ([7], "'info.weight' is float"),
    ([9], "'tags.element' is inside a list or map"),
    ([11], "'attrs.key' is inside a list or map"),
    ([5], "'info' must be a primitive"),
    ([8], "'tags' must be a primitive"),
    ([99], "Cannot find field with id 99"),
    ([], "at least one equality field"),
    ([1, 1], "Duplicate equality field IDs"),
])
def test_equality_ids_are_checked(ids: list[int], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        equality_delete_schema(TABLE, ids)


def test_equality_delete_file(tmp_path: Path) -> None:
    """The spec's example: delete ``id = 4 AND category IS NULL``."""
    writer = EqualityDeleteWriter(ArrowFileIO(), Locations(tmp_path), TABLE, PartitionSpec(),
                                  (), {}, equality_ids=[1, 2], sort_order_id=2)
    writer.write(pa.record_batch({"id": [4, 3], "category": [None, "toy"]}))
    [f] = writer.close()
    assert f.content is FileContent.EQUALITY_DELETES
    assert f.equality_ids == (1, 2) and f.sort_order_id == 2
    assert pq.read_table(f.file_path).to_pydict() == {"id": [4, 3], "category": [None, "toy"]}
    assert parquet_field_ids(f.file_path) == {"id": 1, "category": 2}
    assert f.lower_bounds == {1: to_bytes(LONG, 3), 2: b"toy"}
    assert f.upper_bounds == {1: to_bytes(LONG, 4), 2: b"toy"}
    assert f.null_value_counts == {1: 0, 2: 1} and f.value_counts == {1: 2, 2: 2}


def test_equality_delete_with_nested_column(tmp_path: Path) -> None:
    writer = EqualityDeleteWriter(ArrowFileIO(), Locations(tmp_path), TABLE, PartitionSpec(),
                                  (), {}, equality_ids=[6])
    writer.write(pa.record_batch({"info": [{"code": 7}, None]}))
    [f] = writer.close()
    assert parquet_field_ids(f.file_path) == {"info": 5, "info.code": 6}
    assert f.lower_bounds == {6: to_bytes(INT, 7)}
    with pytest.raises(ValidationError, match="'name' are not in the table schema"):
        EqualityDeleteWriter(ArrowFileIO(), Locations(tmp_path), TABLE, PartitionSpec(), (), {},
                             equality_ids=[1]).write(pa.record_batch({"id": [1], "name": ["x"]}))
