"""Column projection by field ID: renames, promotions, nesting, defaults, constants, mappings."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import ValidationError
from icepark.io.arrow.name_mapping import create_mapping, from_json
from icepark.io.arrow.projection import (
    FileColumns,
    arrow_values,
    extract,
    primitive_converter,
    project,
)
from icepark.io.arrow.schema import FIELD_ID_KEY, field_metadata, to_arrow_schema, uuid_arrow_type
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
from tests.io.reader_fixtures import strip_field_ids

DEC9 = PrimitiveType.decimal(9, 2)
DEC12 = PrimitiveType.decimal(12, 2)


def batch_of(schema: Schema, data: dict[str, list[Any]]) -> Any:
    return pa.RecordBatch.from_pydict(data, schema=to_arrow_schema(schema))


def read(schema_written: Schema, data: dict[str, list[Any]], schema_read: Schema,
         constants: dict[int, Any] | None = None) -> Any:
    batch = batch_of(schema_written, data)
    result = project(FileColumns(batch.schema), schema_read, constants).apply(batch)
    assert result.schema.equals(to_arrow_schema(schema_read), check_metadata=True)
    return result


def test_spec_example() -> None:
    """"This must select file columns ``c`` (renamed to ``measurement``), ``b`` (now called
    ``name``), and a column of ``null`` values called ``a``; in that order."."""
    written = Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(2, "b", STRING),
                        NestedField.optional(3, "c", DOUBLE))
    projected = Schema.of(NestedField.optional(3, "measurement", DOUBLE),
                          NestedField.optional(2, "name", STRING),
                          NestedField.optional(4, "a", INT))
    result = read(written, {"a": [1, 2], "b": ["x", None], "c": [1.5, 2.5]}, projected)
    assert result.to_pydict() == {"measurement": [1.5, 2.5], "name": ["x", None],
                                  "a": [None, None]}


def test_reads_only_needed_columns() -> None:
    written = Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(2, "b", STRING),
                        NestedField.optional(3, "c", DOUBLE))
    batch = batch_of(written, {"a": [1], "b": ["x"], "c": [1.0]})
    p = project(FileColumns(batch.schema), Schema.of(NestedField.optional(3, "c", DOUBLE),
                                                     NestedField.optional(1, "a", INT)))
    assert p.file_columns == [0, 2]
    # A batch holding only those columns, mapped by position.
    narrow = batch.select([0, 2])
    assert p.apply(narrow, {0: 0, 2: 1}).to_pydict() == {"c": [1.0], "a": [1]}


@pytest.mark.parametrize(("old", "new", "values", "expected"), [
    (INT, LONG, [1, None, -(2**31)], [1, None, -(2**31)]),
    (FLOAT, DOUBLE, [1.5, None, float("inf")], [1.5, None, float("inf")]),
    (DEC9, DEC12, [Decimal("1234567.89"), None], [Decimal("1234567.89"), None]),
])
def test_promotions(old: PrimitiveType, new: PrimitiveType, values: list[Any],
                    expected: list[Any]) -> None:
    """"Valid type promotions are: int to long; float to double; decimal(P, S) to
    decimal(P', S) if P' > P" -- at the top level, in a list, a map value and a struct."""
    def schema(t: PrimitiveType) -> Schema:
        return Schema.of(
            NestedField.optional(1, "v", t),
            NestedField.optional(2, "l", ListType(3, t, element_required=False)),
            NestedField.optional(4, "m", MapType(5, STRING, 6, t, value_required=False)),
            NestedField.optional(7, "s", StructType((NestedField.optional(8, "x", t),))))

    data = {"v": values, "l": [values, None, []][:len(values)],
            "m": [[("k", v)] for v in values],
            "s": [{"x": v} for v in values]}
    result = read(schema(old), data, schema(new)).to_pydict()
    assert result["v"] == expected
    assert result["l"][0] == expected
    assert [m[0][1] for m in result["m"]] == expected
    assert [s["x"] for s in result["s"]] == expected


@pytest.mark.parametrize(("old", "new"), [
    (LONG, INT), (DOUBLE, FLOAT), (INT, STRING), (DEC12, DEC9),
    (PrimitiveType.decimal(9, 2), PrimitiveType.decimal(12, 3)), (STRING, BINARY),
    (TIMESTAMP, TIMESTAMPTZ), (DATE, TIMESTAMPTZ),  # (v3 promotes date to timestamp)
])
def test_invalid_type_changes_name_the_column(old: PrimitiveType, new: PrimitiveType) -> None:
    written = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "col", old),))))
    projected = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "col", new),))))
    batch = batch_of(written, {"s": [None]})
    with pytest.raises(ValidationError, match=r"s\.col"):
        project(FileColumns(batch.schema, location="f.parquet"), projected)


def test_nested_type_mismatch() -> None:
    written = Schema.of(NestedField.optional(1, "s", INT))
    projected = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "x", INT),))))
    batch = batch_of(written, {"s": [1]})
    with pytest.raises(ValidationError, match="cannot be read as struct"):
        project(FileColumns(batch.schema), projected)


NESTED_OLD = Schema.of(
    NestedField.required(1, "id", INT),
    NestedField.optional(2, "loc", StructType((
        NestedField.required(3, "lat", FLOAT),
        NestedField.optional(4, "name", STRING)))),
    NestedField.optional(5, "points", ListType(6, StructType((
        NestedField.required(7, "x", INT),
        NestedField.optional(8, "y", INT))), element_required=False)),
    NestedField.optional(9, "props", MapType(10, STRING, 11, StructType((
        NestedField.optional(12, "v", INT),)), value_required=False)),
)

# Renamed, reordered, promoted, with fields dropped and added at every level.
NESTED_NEW = Schema.of(
    NestedField.optional(9, "attributes", MapType(10, STRING, 11, StructType((
        NestedField.optional(13, "added", STRING, initial_default="d"),
        NestedField.optional(12, "value", LONG))), value_required=False)),
    NestedField.optional(2, "location", StructType((
        NestedField.optional(4, "label", STRING),
        NestedField.required(3, "latitude", DOUBLE),
        NestedField.optional(14, "height", INT)))),
    NestedField.required(1, "id", LONG),
    NestedField.optional(5, "points", ListType(6, StructType((
        NestedField.optional(8, "y", LONG),)), element_required=False)),
)

NESTED_DATA: dict[str, list[Any]] = {
    "id": [1, 2, 3],
    "loc": [{"lat": 1.5, "name": "a"}, None, {"lat": -2.0, "name": None}],
    "points": [[{"x": 1, "y": 2}, None], None, []],
    "props": [[("k", {"v": 1}), ("n", None)], None, []],
}


def test_nested_renames_reorders_promotions_and_additions() -> None:
    result = read(NESTED_OLD, NESTED_DATA, NESTED_NEW)
    assert result.to_pylist() == [
        {"attributes": [("k", {"added": "d", "value": 1}), ("n", None)],
         "location": {"label": "a", "latitude": 1.5, "height": None},
         "id": 1, "points": [{"y": 2}, None]},
        {"attributes": None, "location": None, "id": 2, "points": None},
        {"attributes": [], "location": {"label": None, "latitude": -2.0, "height": None},
         "id": 3, "points": []},
    ]


def test_sliced_input_arrays() -> None:
    """Batches may be slices (offsets into their buffers) at every level."""
    batch = batch_of(NESTED_OLD, NESTED_DATA)
    p = project(FileColumns(batch.schema), NESTED_NEW)
    full = p.apply(batch).to_pylist()
    for start in range(3):
        for length in range(3 - start + 1):
            assert p.apply(batch.slice(start, length)).to_pylist() == full[start:start + length]


def test_missing_required_field_without_default_is_an_error() -> None:
    written = Schema.of(NestedField.optional(1, "a", INT))
    projected = Schema.of(NestedField.optional(1, "a", INT),
                          NestedField.required(2, "b", STRING))
    batch = batch_of(written, {"a": [1]})
    with pytest.raises(ValidationError, match=r"'b' \(id 2\) is required but missing from "
                                              r"data file f\.parquet"):
        project(FileColumns(batch.schema, location="f.parquet"), projected)


def test_missing_required_nested_field_is_an_error() -> None:
    written = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "a", INT),))))
    projected = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "a", INT), NestedField.required(3, "b", INT)))))
    with pytest.raises(ValidationError, match=r"'s\.b'"):
        project(FileColumns(batch_of(written, {"s": [None]}).schema), projected)


U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
DEFAULTS: list[tuple[Any, Any, Any]] = [
    (BOOLEAN, True, True),
    (INT, 34, 34),
    (LONG, 2**40, 2**40),
    (FLOAT, 1.5, 1.5),
    (DOUBLE, -0.25, -0.25),
    (DEC9, Decimal("14.20"), Decimal("14.20")),
    (DATE, 17486, __import__("datetime").date(2017, 11, 16)),
    (TIME, 3_600_000_000, __import__("datetime").time(1, 0)),
    (TIMESTAMP, 0, __import__("datetime").datetime(1970, 1, 1)),
    (STRING, "iceberg", "iceberg"),
    (UUID, U, U),
    (PrimitiveType.fixed(2), b"ab", b"ab"),
    (BINARY, b"\x00", b"\x00"),
    (StructType((NestedField.optional(20, "x", INT, initial_default=5),
                 NestedField.optional(21, "y", STRING))), {21: "q"}, {"x": 5, "y": "q"}),
    (ListType(22, INT), [1, 2], [1, 2]),
    (MapType(23, STRING, 24, INT), {"a": 1}, [("a", 1)]),
]


@pytest.mark.parametrize(("t", "default", "expected"), DEFAULTS, ids=[str(d[0]) for d in DEFAULTS])
def test_initial_default_fills_a_missing_field(t: Any, default: Any, expected: Any) -> None:
    """"``initial-default`` is used to populate the field's value for all records that were
    written before the field was added to the schema"."""
    written = Schema.of(NestedField.required(1, "id", INT))
    projected = Schema.of(NestedField.required(1, "id", INT),
                          NestedField.required(2, "added", t, initial_default=default,
                                               write_default=default),
                          NestedField.optional(3, "no_default", STRING))
    result = read(written, {"id": [1, 2]}, projected).to_pydict()
    assert result["added"] == [expected, expected]
    assert result["no_default"] == [None, None]
    assert result["id"] == [1, 2]


def test_timestamptz_default_is_utc() -> None:
    written = Schema.of(NestedField.required(1, "id", INT))
    projected = Schema.of(NestedField.optional(2, "ts", TIMESTAMPTZ, initial_default=1))
    result = read(written, {"id": [1]}, projected)
    assert result.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert result.column(0).cast(pa.int64()).to_pylist() == [1]


def test_default_inside_a_present_struct_is_not_applied_to_null_structs() -> None:
    written = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "a", INT),))))
    projected = Schema.of(NestedField.optional(1, "s", StructType((
        NestedField.optional(2, "a", INT),
        NestedField.optional(3, "b", STRING, initial_default="x")))))
    result = read(written, {"s": [{"a": 1}, None]}, projected)
    assert result.to_pydict() == {"s": [{"a": 1, "b": "x"}, None]}


def test_constants_fill_missing_columns_before_defaults() -> None:
    """Identity partition values fill columns the file omits; a present column wins."""
    written = Schema.of(NestedField.required(1, "id", INT), NestedField.optional(2, "p", STRING))
    projected = Schema.of(NestedField.required(1, "id", INT),
                          NestedField.optional(2, "p", STRING),
                          NestedField.optional(3, "q", DATE, initial_default=1),
                          NestedField.required(4, "r", LONG))
    result = read(written, {"id": [1], "p": ["file"]}, projected,
                  constants={2: "partition", 3: 17486, 4: 7})
    assert result.to_pylist() == [{"id": 1, "p": "file",
                                   "q": __import__("datetime").date(2017, 11, 16), "r": 7}]
    # A null constant is a null column (even where a default exists).
    assert read(written, {"id": [1], "p": ["f"]}, projected,
                constants={3: None, 4: 1}).column(2).to_pylist() == [None]


def test_dropped_and_readded_name_reads_null() -> None:
    """The name is the same, the ID is new: old files have no column with the new ID."""
    written = Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(2, "b", INT))
    projected = Schema.of(NestedField.optional(1, "a", INT), NestedField.optional(3, "b", INT))
    result = read(written, {"a": [1], "b": [2]}, projected)
    assert result.to_pydict() == {"a": [1], "b": [None]}


def test_arrow_encodings_are_normalised() -> None:
    """Dictionaries, large strings/binaries and other timestamp units read as the table's
    Arrow types; ``fixed(16)`` reads as uuid."""
    def fid(i: int) -> Any:
        return field_metadata(i)

    batch = pa.RecordBatch.from_arrays([
        pa.array(["a", "b", "a"]).dictionary_encode(),
        pa.array(["x", None, "z"], pa.large_string()),
        pa.array([b"x", None, b""], pa.large_binary()),
        pa.array([1, 2, None], pa.timestamp("ms")),
        pa.array([1000, 2000, None], pa.timestamp("ns", tz="+01:00")),
        pa.array([U.bytes, None, U.bytes], pa.binary(16)),
        pa.array([1, 2, 3], pa.int16()),
    ], schema=pa.schema([pa.field(n, t, metadata=fid(i)) for i, (n, t) in enumerate([
        ("d", pa.dictionary(pa.int32(), pa.string())), ("ls", pa.large_string()),
        ("lb", pa.large_binary()), ("ms", pa.timestamp("ms")),
        ("ns", pa.timestamp("ns", tz="+01:00")), ("u", pa.binary(16)), ("small", pa.int16()),
    ], start=1)]))
    projected = Schema.of(
        NestedField.optional(1, "d", STRING), NestedField.optional(2, "ls", STRING),
        NestedField.optional(3, "lb", BINARY), NestedField.optional(4, "ms", TIMESTAMP),
        NestedField.optional(5, "ns", TIMESTAMPTZ), NestedField.optional(6, "u", UUID),
        NestedField.optional(7, "small", LONG))
    result = project(FileColumns(batch.schema), projected).apply(batch)
    assert result.schema.equals(to_arrow_schema(projected), check_metadata=True)
    assert result.column(0).to_pylist() == ["a", "b", "a"]
    assert result.column(3).cast(pa.int64()).to_pylist() == [1000, 2000, None]
    assert result.column(5).type == uuid_arrow_type()
    assert result.column(5).to_pylist()[0] in (U, U.bytes)


def test_timestamp_with_lost_digits_is_an_error() -> None:
    convert = primitive_converter(TIMESTAMP, pa.timestamp("ns"), "t")
    with pytest.raises(pa.ArrowInvalid):
        convert(pa.array([1], pa.timestamp("ns")))


def test_file_without_ids_needs_a_mapping() -> None:
    schema = pa.schema([pa.field("a", pa.int32())])
    with pytest.raises(ValidationError, match="no field IDs"):
        FileColumns(schema, location="x.parquet")
    columns = FileColumns(schema, from_json([{"field-id": 7, "names": ["a"]}]))
    assert columns.top_level(7) is not None


def test_file_ids_win_over_the_mapping() -> None:
    """A mapping is a fallback: it is used only when the file has no IDs at all."""
    schema = pa.schema([pa.field("a", pa.int32(), metadata=field_metadata(1)),
                        pa.field("b", pa.int32())])
    columns = FileColumns(schema, from_json([{"field-id": 2, "names": ["b"]}]))
    assert columns.top_level(1) is not None and columns.top_level(2) is None


def test_name_mapped_nested_file(tmp_path: Path) -> None:
    """A hand-written file without IDs, read through the table's mapping."""
    table = pa.table({
        "record_id": pa.array([1, 2], pa.int32()),
        "loc": pa.array([{"lat": 1.0, "extra": 9}, None]),
        "tags": pa.array([["a"], None]),
    })
    path = str(tmp_path / "no_ids.parquet")
    pq.write_table(table, path)
    file_schema = pq.ParquetFile(path).schema_arrow
    assert FIELD_ID_KEY not in (file_schema.field("record_id").metadata or {})
    mapping = from_json([
        {"field-id": 1, "names": ["id", "record_id"]},
        {"field-id": 2, "names": ["loc", "location"], "fields": [
            {"field-id": 3, "names": ["lat"]}]},
        {"field-id": 4, "names": ["tags"], "fields": [{"field-id": 5, "names": ["element"]}]},
    ])
    projected = Schema.of(NestedField.required(1, "id", LONG),
                          NestedField.optional(4, "labels", ListType(5, STRING, False)),
                          NestedField.optional(2, "location", StructType((
                              NestedField.optional(3, "latitude", DOUBLE),))))
    columns = FileColumns(file_schema, mapping, path)
    p = project(columns, projected)
    result = p.apply(pq.read_table(path).to_batches()[0])
    assert result.to_pylist() == [
        {"id": 1, "labels": ["a"], "location": {"latitude": 1.0}},
        {"id": 2, "labels": None, "location": None}]


def test_list_element_id_mismatch_is_an_error() -> None:
    written = Schema.of(NestedField.optional(1, "l", ListType(2, INT)))
    projected = Schema.of(NestedField.optional(1, "l", ListType(3, INT)))
    with pytest.raises(ValidationError, match="keep their IDs"):
        project(FileColumns(batch_of(written, {"l": [[1]]}).schema), projected)


def test_extract_flattens_struct_nesting() -> None:
    """Filters and delete keys read a field flat, null where a struct holding it is null."""
    batch = batch_of(NESTED_OLD, NESTED_DATA)
    columns = FileColumns(batch.schema)
    top, fn = extract(columns, NestedField.optional(3, "lat", DOUBLE))
    assert top == 1
    assert fn(batch.column(top)).to_pylist() == [1.5, None, -2.0]
    top, fn = extract(columns, NestedField.optional(99, "gone", INT, initial_default=4))
    assert top is None and fn(3).to_pylist() == [4, 4, 4]
    # Not struct-nested (in a list): not extractable, reads as missing.
    top, fn = extract(columns, NestedField.optional(7, "x", INT))
    assert top is None and fn(2).to_pylist() == [None, None]
    # Missing required fields are not errors here.
    top, fn = extract(columns, NestedField.required(98, "r", INT))
    assert fn(1).to_pylist() == [None]


def test_leaf_indices_use_positions_not_dotted_names() -> None:
    schema = pa.schema([pa.field("a", pa.struct([pa.field("b", pa.int32()),
                                                  pa.field("c", pa.int32())]),
                                 metadata=field_metadata(1)),
                        pa.field("a.b", pa.int32(), metadata=field_metadata(4)),
                        pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32())),
                                 metadata=field_metadata(5)),
                        pa.field("z", pa.int32(), metadata=field_metadata(6))])
    columns = FileColumns(schema)
    assert columns.leaf_indices([1]) == [2]
    assert columns.leaf_indices([0]) == [0, 1]
    assert columns.leaf_indices([3, 2]) == [3, 4, 5]
    assert columns.leaf_indices([]) == []


def test_arrow_values() -> None:
    s = StructType((NestedField.optional(1, "a", INT), NestedField.optional(2, "b", DATE)))
    assert arrow_values(s, [{1: 3, 2: 0}, None, {}]).to_pylist() == [
        {"a": 3, "b": __import__("datetime").date(1970, 1, 1)}, None, {"a": None, "b": None}]
    assert arrow_values(ListType(3, LONG, False), [[1, None], None, []]).to_pylist() == [
        [1, None], None, []]
    assert arrow_values(MapType(4, STRING, 5, INT), [{"k": 1}, None]).to_pylist() == [
        [("k", 1)], None]
    assert arrow_values(UUID, [U, None]).type == uuid_arrow_type()


def test_created_mapping_reads_like_ids(tmp_path: Path) -> None:
    """Stripping the IDs and reading through ``create_mapping(schema)`` reads the same."""
    batch = batch_of(NESTED_OLD, NESTED_DATA)
    path = str(tmp_path / "x.parquet")
    table = pa.Table.from_batches([batch])
    pq.write_table(table.cast(strip_field_ids(table.schema)), path)
    file_batch = pq.read_table(path).to_batches()[0]
    columns = FileColumns(file_batch.schema, create_mapping(NESTED_OLD))
    assert project(columns, NESTED_NEW).apply(file_batch).to_pylist() == \
        project(FileColumns(batch.schema), NESTED_NEW).apply(batch).to_pylist()
