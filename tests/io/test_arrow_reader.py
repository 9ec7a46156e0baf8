"""Scenario tests of the reader kernel: files with known contents, read after schema evolution,
with deletes, filters, splits, metadata columns and limits."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.expressions import ALWAYS_FALSE, and_, bind, parse
from icepark.io.arrow import reader as arrow_reader
from icepark.io.arrow.name_mapping import create_mapping, from_json
from icepark.io.arrow.projection import FileColumns
from icepark.io.arrow.reader import ArrowReader, partition_struct
from icepark.io.arrow.schema import FIELD_ID_KEY, field_metadata, to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from tests.io.reader_fixtures import (
    IO,
    Files,
    Task,
    equality_deletes,
    position_deletes,
    read,
    rows,
    strip_field_ids,
    task,
    write,
    write_arrow,
    write_row_groups,
)

SCHEMA = Schema.of(NestedField.required(1, "id", LONG),
                   NestedField.optional(2, "category", STRING),
                   NestedField.optional(3, "name", STRING))
DATA = {"id": [1, 2, 3, 4], "category": ["marsupial", "toy", None, None],
        "name": ["Koala", "Teddy", "Grizzly", "Polar"]}


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


def ids_of(table: Any) -> list[int]:
    return list(table.column("id").to_pylist())


# --- projection through files -----------------------------------------------------------------


def test_reads_with_the_projection_schema(files: Files) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.optional(2, "ts", TIMESTAMPTZ),
                       NestedField.optional(3, "u", UUID))
    u = uuid.UUID(int=7)
    data_file = write(files, schema, pa.table({
        "id": [1], "ts": pa.array([5], pa.timestamp("us", tz="UTC")),
        "u": pa.array([u.bytes], pa.binary(16))}))
    table = read(schema, [task(data_file)])
    assert table.schema.equals(to_arrow_schema(schema), check_metadata=True)
    assert table.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert table.column("u").to_pylist()[0] in (u, u.bytes)


def test_renamed_reordered_and_promoted(files: Files) -> None:
    """Write with one schema, evolve it (rename, reorder, promote, drop), read old files."""
    old = Schema.of(NestedField.required(1, "id", INT),
                    NestedField.optional(2, "price", PrimitiveType.decimal(9, 2)),
                    NestedField.optional(3, "ratio", FLOAT),
                    NestedField.optional(4, "scores", ListType(5, INT, element_required=False)),
                    NestedField.optional(6, "dropped", STRING))
    data_file = write(files, old, {
        "id": [1, 2], "price": [Decimal("1234567.89"), None], "ratio": [0.5, None],
        "scores": [[1, None], None], "dropped": ["a", "b"]})
    new = Schema.of(NestedField.optional(4, "points", ListType(5, LONG, element_required=False)),
                    NestedField.optional(3, "fraction", DOUBLE),
                    NestedField.required(1, "key", LONG),
                    NestedField.optional(2, "price", PrimitiveType.decimal(12, 2)))
    assert rows(read(new, [task(data_file)])) == [
        {"points": [1, None], "fraction": 0.5, "key": 1, "price": Decimal("1234567.89")},
        {"points": None, "fraction": None, "key": 2, "price": None}]


NESTED = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "loc", StructType((NestedField.required(3, "lat", DOUBLE),
                                               NestedField.optional(4, "city", STRING)))),
    NestedField.optional(5, "pts", ListType(6, StructType((
        NestedField.required(7, "x", INT),)), element_required=False)),
    NestedField.optional(8, "props", MapType(9, STRING, 10, INT, value_required=False)),
)


def test_nested_fields_renamed_and_added(files: Files) -> None:
    data_file = write(files, NESTED, {
        "id": [1, 2],
        "loc": [{"lat": 1.5, "city": "Oslo"}, None],
        "pts": [[{"x": 1}, None], []],
        "props": [[("a", 1)], None]})
    evolved = Schema.of(
        NestedField.optional(8, "attributes", MapType(9, STRING, 10, LONG, value_required=False)),
        NestedField.optional(2, "location", StructType((
            NestedField.optional(4, "town", STRING),
            NestedField.optional(11, "zip", STRING, initial_default="0000"),
            NestedField.required(3, "latitude", DOUBLE)))),
        NestedField.optional(5, "points", ListType(6, StructType((
            NestedField.required(7, "x", LONG),
            NestedField.optional(12, "y", INT))), element_required=False)),
        NestedField.required(1, "id", LONG))
    assert rows(read(evolved, [task(data_file)])) == [
        {"attributes": [("a", 1)],
         "location": {"town": "Oslo", "zip": "0000", "latitude": 1.5},
         "points": [{"x": 1, "y": None}, None], "id": 1},
        {"attributes": None, "location": None, "points": [], "id": 2}]


def test_added_columns_with_and_without_initial_default(files: Files) -> None:
    """Old files read the new field's ``initial-default``, or null without one; a required
    field without a default cannot be read from them."""
    data_file = write(files, SCHEMA, DATA)
    added = Schema.of(*SCHEMA.fields,
                      NestedField.required(4, "level", INT, initial_default=3, write_default=3),
                      NestedField.optional(5, "note", STRING))
    table = read(added, [task(data_file)])
    assert table.column("level").to_pylist() == [3, 3, 3, 3]
    assert table.column("note").to_pylist() == [None] * 4
    broken = Schema.of(*SCHEMA.fields, NestedField.required(6, "must", INT))
    with pytest.raises(ValidationError, match=r"'must' .* is required but missing"):
        read(broken, [task(data_file)])


def test_dropped_and_readded_name_reads_null(files: Files) -> None:
    data_file = write(files, SCHEMA, DATA)
    readded = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(7, "name",
                                                                                  STRING))
    assert read(readded, [task(data_file)]).column("name").to_pylist() == [None] * 4


# --- partitions -----------------------------------------------------------------------------

PARTITIONED = Schema.of(NestedField.required(1, "id", LONG),
                        NestedField.optional(2, "region", STRING))
BY_REGION = PartitionSpecBuilder(PARTITIONED).identity("region").build()


def test_identity_partition_column_absent_from_file(files: Files) -> None:
    """Files may omit identity-partitioned columns; the value comes from the partition."""
    only_id = pa.Table.from_pydict({"id": [1, 2]}, schema=to_arrow_schema(
        Schema.of(NestedField.required(1, "id", LONG))))
    data_file = write_arrow(files, only_id, partition=("eu",))
    specs = {0: BY_REGION}
    table = read(PARTITIONED, [task(data_file)], partition_specs=specs)
    assert table.column("region").to_pylist() == ["eu", "eu"]
    reader = ArrowReader(IO, PARTITIONED)
    batches = reader.read_task(data_file, (), partition_spec=BY_REGION, partition=("us",))
    assert pa.Table.from_batches(list(batches)).column("region").to_pylist() == ["us", "us"]
    # A file that has the column keeps its own values.
    full = write(files, PARTITIONED, {"id": [3], "region": ["eu"]}, spec=BY_REGION,
                 partition=("eu",))
    assert read(PARTITIONED, [replace(task(full), partition=("xx",))],
                partition_specs=specs).column("region").to_pylist() == ["eu"]
    # A filter on the partition column sees the constant.
    assert ids_of(read(PARTITIONED, [task(data_file, residual=parse("region = 'eu'"))],
                       partition_specs=specs)) == [1, 2]


def test_partitioned_task_needs_its_spec(files: Files) -> None:
    data_file = write(files, PARTITIONED, {"id": [3], "region": ["eu"]}, spec=BY_REGION,
                      partition=("eu",))
    with pytest.raises(ValidationError, match="pass partition_specs"):
        read(PARTITIONED, [task(data_file)])


# --- name mapping ---------------------------------------------------------------------------


def test_name_mapped_file(files: Files) -> None:
    """A file written without field IDs (as imported files are) reads through the table's
    name mapping, deletes included."""
    raw = pa.table({"record_id": pa.array([1, 2, 3], pa.int64()),
                    "cat": ["a", None, "b"],
                    "unknown": [1.0, 2.0, 3.0]})
    data_file = write_arrow(files, raw)
    mapping = from_json([{"field-id": 1, "names": ["id", "record_id"]},
                         {"field-id": 2, "names": ["category", "cat"]},
                         {"field-id": 3, "names": ["name"]}])
    with pytest.raises(ValidationError, match="no field IDs"):
        read(SCHEMA, [task(data_file)])
    eq = equality_deletes(files, SCHEMA, [2], {"category": [None]})
    table = read(SCHEMA, [task(data_file, eq, residual=parse("id > 0"))], name_mapping=mapping)
    assert rows(table) == [{"id": 1, "category": "a", "name": None},
                           {"id": 3, "category": "b", "name": None}]


def test_created_mapping_reads_stripped_files(files: Files) -> None:
    table = pa.Table.from_pydict({"id": [1], "loc": [{"lat": 1.0, "city": None}],
                                  "pts": [[{"x": 2}]], "props": [[("k", 3)]]},
                                 schema=to_arrow_schema(NESTED))
    stripped = write_arrow(files, table.cast(strip_field_ids(table.schema)))
    with_ids = write_arrow(files, table)
    assert read(NESTED, [task(stripped)], name_mapping=create_mapping(NESTED)).equals(
        read(NESTED, [task(with_ids)]))


# --- position deletes and splits -------------------------------------------------------------


def six_rows(files: Files) -> DataFile:
    """Six rows in three row groups of two."""
    return write_row_groups(files, SCHEMA, {
        "id": [0, 1, 2, 3, 4, 5], "category": ["a", "b", "a", None, "b", "a"],
        "name": ["n0", "n1", "n2", "n3", "n4", "n5"]}, rows_per_group=2)


def test_position_deletes(files: Files) -> None:
    data_file = six_rows(files)
    pos = position_deletes(files, SCHEMA, {data_file.file_path: [1, 2, 5],
                                           "elsewhere.parquet": [0, 3]})
    table = read(SCHEMA, [task(data_file, pos)], metadata_columns=["_pos"])
    assert ids_of(table) == [0, 3, 4]
    assert table.column("_pos").to_pylist() == [0, 3, 4]


def test_split_tasks_count_positions_over_the_whole_file(files: Files) -> None:
    """Each split reads only the row groups starting in it, and a row's position is its
    ordinal in the file, so position deletes hit the right rows in every split."""
    data_file = six_rows(files)
    assert data_file.split_offsets is not None and len(data_file.split_offsets) == 3
    pos = position_deletes(files, SCHEMA, {data_file.file_path: [1, 2, 5]})
    offsets = [*data_file.split_offsets, data_file.file_size_in_bytes]
    splits = [task(data_file, pos, start=offsets[i], length=offsets[i + 1] - offsets[i])
              for i in range(3)]
    per_split = [ids_of(read(SCHEMA, [s])) for s in splits]
    assert per_split == [[0], [3], [4]]
    whole = read(SCHEMA, splits, metadata_columns=["_pos"])
    assert whole.column("_pos").to_pylist() == [0, 3, 4]
    # Only the middle split, with an equality delete and a filter as well.
    eq = equality_deletes(files, SCHEMA, [2], {"category": ["x"]})
    middle = replace(splits[1], delete_files=(pos, eq), residual=parse("id >= 0"))
    assert read(SCHEMA, [middle], metadata_columns=["_pos"]).to_pydict() == {
        "id": [3], "category": [None], "name": ["n3"], "_pos": [3]}


def test_fully_deleted_row_groups_are_not_read(files: Files,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    data_file = six_rows(files)
    pos = position_deletes(files, SCHEMA, {data_file.file_path: [0, 1, 4]})
    read_groups: list[int] = []
    original = arrow_reader._FilePlan.apply

    def spy(self: Any, batch: Any, offset: int) -> Any:
        read_groups.append(offset)
        return original(self, batch, offset)

    monkeypatch.setattr(arrow_reader._FilePlan, "apply", spy)
    assert ids_of(read(SCHEMA, [task(data_file, pos)])) == [2, 3, 5]
    assert read_groups == [2, 4]


def test_small_batches_stream(files: Files) -> None:
    data_file = six_rows(files)
    pos = position_deletes(files, SCHEMA, {data_file.file_path: [3]})
    reader = ArrowReader(IO, SCHEMA, batch_size=1, metadata_columns=["_pos"])
    batches = list(reader.read_task(data_file, (pos,)))
    assert [b.num_rows for b in batches] == [1, 1, 1, 1, 1]
    assert [b.column(3).to_pylist() for b in batches] == [[0], [1], [2], [4], [5]]


# --- equality deletes -----------------------------------------------------------------------


def test_equality_deletes_spec_example(files: Files) -> None:
    """``id = 3`` and ``id = 4 AND category IS NULL`` from *Equality Delete Files*."""
    data_file = write(files, SCHEMA, DATA)
    by_id = equality_deletes(files, SCHEMA, [1], {"id": [3]})
    pair = equality_deletes(files, SCHEMA, [1, 2], {"id": [4, 1], "category": [None, None]})
    assert ids_of(read(SCHEMA, [task(data_file, by_id, pair)])) == [1, 2]


def test_equality_delete_on_unprojected_column(files: Files) -> None:
    data_file = write(files, SCHEMA, DATA)
    eq = equality_deletes(files, SCHEMA, [2], {"category": ["toy", None]})
    only_name = Schema.of(NestedField.optional(3, "name", STRING))
    assert read(only_name, [task(data_file, eq)]).to_pydict() == {"name": ["Koala"]}


def test_equality_delete_on_dropped_column(files: Files) -> None:
    """"If a delete column in an equality delete file is later dropped from the table, it
    must still be used when applying the equality deletes"."""
    before = Schema.of(*SCHEMA.fields, NestedField.optional(4, "legacy", INT))
    old = write(files, before, {**DATA, "legacy": [7, 8, None, 7]})
    eq = equality_deletes(files, before, [4], {"legacy": [7]})
    nulls = equality_deletes(files, before, [4], {"legacy": [None]})
    new = write(files, SCHEMA, {"id": [9], "category": ["c"], "name": ["n"]})
    table = read(SCHEMA, [task(old, eq), task(new, eq)])
    assert ids_of(table) == [2, 3, 9]
    # Newer files lack the column: it reads as null there, and a null delete matches it.
    assert ids_of(read(SCHEMA, [task(old, nulls), task(new, nulls)])) == [1, 2, 4]


def test_equality_delete_on_column_added_later(files: Files) -> None:
    """"If a column was added to a table and later used as a delete column ... the column
    value is read for older data files using normal projection rules (defaults to null)"."""
    old = write(files, SCHEMA, DATA)
    added = Schema.of(*SCHEMA.fields, NestedField.optional(5, "flag", STRING),
                      NestedField.optional(6, "tier", INT, initial_default=1))
    null_flag = equality_deletes(files, added, [5, 1], {"flag": [None], "id": [2]})
    tier = equality_deletes(files, added, [6], {"tier": [1]})
    assert ids_of(read(added, [task(old, null_flag)])) == [1, 3, 4]
    assert ids_of(read(added, [task(old, tier)])) == []


def test_equality_deletes_are_scoped_by_partition(files: Files) -> None:
    """An equality delete applies to data files of its partition, or to every file when its
    spec is unpartitioned (a global delete)."""
    eu = write(files, PARTITIONED, {"id": [1, 2], "region": ["eu", "eu"]}, spec=BY_REGION,
               partition=("eu",))
    us = write(files, PARTITIONED, {"id": [1, 2], "region": ["us", "us"]}, spec=BY_REGION,
               partition=("us",))
    scoped = equality_deletes(files, PARTITIONED, [1], {"id": [1]}, spec=BY_REGION,
                              partition=("eu",))
    unpartitioned = PartitionSpec(1, ())
    global_delete = replace(equality_deletes(files, PARTITIONED, [1], {"id": [2]}), spec_id=1)
    specs = {0: BY_REGION, 1: unpartitioned}
    table = read(PARTITIONED, [task(eu, scoped, global_delete), task(us, scoped, global_delete)],
                 partition_specs=specs)
    assert rows(table) == [{"id": 1, "region": "us"}]


def test_positions_and_equality_in_one_read(files: Files) -> None:
    data_file = six_rows(files)
    pos = position_deletes(files, SCHEMA, {data_file.file_path: [0]})
    eq = equality_deletes(files, SCHEMA, [2, 3], {"category": ["a", None],
                                                  "name": ["n2", "n3"]})
    table = read(SCHEMA, [task(data_file, pos, eq, residual=parse("name != 'n4'"))],
                 metadata_columns=["_pos"])
    assert table.column("_pos").to_pylist() == [1, 5]


# --- filters --------------------------------------------------------------------------------

FLOATS = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "x", DOUBLE),
                   NestedField.optional(3, "s", STRING))


def test_residuals_with_nulls_and_nan(files: Files) -> None:
    data_file = write(files, FLOATS, {"id": [1, 2, 3, 4], "x": [1.0, None, math.nan, -0.0],
                                      "s": ["a", None, "b", "ab"]})
    cases = {
        "x != 1.0": [3, 4],
        "x < 1.0": [4],
        "NOT x < 1.0": [1],
        "x IS NAN": [3],
        "x IS NOT NAN": [1, 2, 4],
        "x = 0": [4],
        "x IN (0, 1)": [1, 4],
        "x NOT IN (1)": [3, 4],
        "s NOT LIKE 'a%'": [3],
        "NOT (s = 'a' OR x IS NULL)": [3, 4],
        "s IS NULL OR x > 0": [1, 2],
    }
    for text, expected in cases.items():
        assert ids_of(read(FLOATS, [task(data_file, residual=parse(text))])) == expected, text


def test_filter_on_unprojected_column_and_row_filter(files: Files) -> None:
    data_file = write(files, FLOATS, {"id": [1, 2, 3], "x": [1.0, 2.0, 3.0],
                                      "s": ["a", "b", "c"]})
    only_id = Schema.of(NestedField.required(1, "id", LONG))
    table = read(only_id, [task(data_file, residual=parse("x > 1"))], full_schema=FLOATS,
                 row_filter=parse("S != 'c'"), case_sensitive=False)
    assert table.to_pydict() == {"id": [2]}
    bound = bind(parse("x < 3"), FLOATS)
    assert read(only_id, [task(data_file)], row_filter=bound).to_pydict() == {"id": [1, 2]}
    assert read(SCHEMA, [replace(task(data_file), residual=ALWAYS_FALSE)]).num_rows == 0


def test_row_group_pruning(files: Files) -> None:
    """Statistics skip row groups without a match, and never one with a NaN that ``!=``
    matches (Parquet min/max leave NaN out)."""
    data_file = write_row_groups(files, FLOATS, {
        "id": list(range(10)), "x": [0.0, 1.0, 5.0, math.nan, 5.0, 5.0, 2.0, 3.0, 4.0, 4.5],
        "s": list("abcdefghij")}, rows_per_group=2)
    columns = FileColumns(to_arrow_schema(FLOATS))

    def kept(text: str) -> set[int]:
        with IO.new_input(data_file.file_path).open() as f:
            return arrow_reader._prune(f, columns, bind(parse(text), FLOATS), list(range(5)))

    assert kept("id = 7") == {3}
    assert kept("id >= 8 OR s = 'a'") == {0, 4}
    assert kept("x != 5.0") == {0, 1, 2, 3, 4}
    assert kept("x IS NAN") == {0, 1, 2, 3, 4}
    assert ids_of(read(FLOATS, [task(data_file, residual=parse("x != 5.0"))])) == \
        [0, 1, 3, 6, 7, 8, 9]
    assert ids_of(read(FLOATS, [task(data_file, residual=parse("id = 7 OR s = 'j'"))])) == [7, 9]


# --- metadata columns, limits, tasks -----------------------------------------------------------


def test_metadata_columns(files: Files) -> None:
    schema = PARTITIONED
    by_region = BY_REGION
    by_both = PartitionSpec(1, (*by_region.fields,
                                replace(by_region.fields[0], field_id=1001, name="id_bucket",
                                        source_id=1, transform=Transform.bucket(4))))
    first = write(files, schema, {"id": [1], "region": ["eu"]}, spec=by_region,
                  partition=("eu",))
    second = write(files, schema, {"id": [2, 3], "region": ["us", "us"]}, spec=by_both,
                   partition=("us", 2))
    specs = {0: by_region, 1: by_both}
    names = ["_file", "_pos", "_spec_id", "_partition"]
    reader = ArrowReader(IO, schema, metadata_columns=names, partition_specs=specs)
    table = reader.to_table([task(first), task(second)])
    assert table.schema.names == ["id", "region", *names]
    assert table.schema.field("_pos").metadata == field_metadata(2147483645)
    assert table.schema.field("_partition").type.field(1).metadata == {FIELD_ID_KEY: b"1001"}
    assert table.to_pydict() == {
        "id": [1, 2, 3], "region": ["eu", "us", "us"],
        "_file": [first.file_path, second.file_path, second.file_path],
        "_pos": [0, 0, 1], "_spec_id": [0, 1, 1],
        "_partition": [{"region": "eu", "id_bucket": None},
                       {"region": "us", "id_bucket": 2}, {"region": "us", "id_bucket": 2}]}
    assert partition_struct(specs.values(), schema) == StructType((
        NestedField.optional(1000, "region", STRING),
        NestedField.optional(1001, "id_bucket", INT)))


def test_metadata_column_errors(files: Files) -> None:
    with pytest.raises(UnsupportedFeature, match="_deleted"):
        ArrowReader(IO, SCHEMA, metadata_columns=["_deleted"])
    data_file = write(files, PARTITIONED, {"id": [1], "region": ["eu"]}, spec=BY_REGION,
                      partition=("eu",))
    reader = ArrowReader(IO, PARTITIONED, metadata_columns=["_partition"])  # no specs given
    with pytest.raises(ValidationError, match="not in _partition"):
        list(reader.read_task(data_file, (), partition_spec=BY_REGION))


def test_limit(files: Files) -> None:
    a = six_rows(files)
    b = write(files, SCHEMA, DATA)
    assert ids_of(read(SCHEMA, [task(a), task(b)], limit=8, batch_size=4)) == \
        [0, 1, 2, 3, 4, 5, 1, 2]
    assert read(SCHEMA, [task(a)], limit=0).num_rows == 0
    assert ids_of(read(SCHEMA, [task(a)], limit=1)) == [0]
    with pytest.raises(ValidationError, match="negative"):
        ArrowReader(IO, SCHEMA, limit=-1)
    with pytest.raises(ValidationError, match="batch_size"):
        ArrowReader(IO, SCHEMA, batch_size=0)


def test_limit_stops_reading(files: Files) -> None:
    a = six_rows(files)
    missing = replace(a, file_path=a.file_path + ".missing")
    assert ids_of(read(SCHEMA, [task(a), task(missing)], limit=3)) == [0, 1, 2]


class NoIO:
    def new_input(self, location: str) -> Any:
        raise AssertionError("read too early")


def test_reading_is_lazy_and_empty_reads_have_the_schema(files: Files) -> None:
    data_file = six_rows(files)
    lazy_io: FileIO = NoIO()  # type: ignore[assignment]
    reader = ArrowReader(lazy_io, SCHEMA)
    reader.read_task(data_file)  # nothing is opened until iterated
    reader.read_tasks([task(data_file)])
    empty = ArrowReader(IO, SCHEMA, metadata_columns=["_file"]).to_table([])
    assert empty.num_rows == 0 and empty.schema.names == ["id", "category", "name", "_file"]


def test_only_parquet_data_files(files: Files) -> None:
    avro = DataFile("x.avro", FileFormat.AVRO, (), 1, 1)
    with pytest.raises(UnsupportedFeature, match="AVRO data files"):
        read(SCHEMA, [task(avro)])


def test_tasks_of_the_planner_shape(files: Files) -> None:
    data_file = write(files, SCHEMA, DATA)
    eq = equality_deletes(files, SCHEMA, [1], {"id": [1]})
    planned = Task(data_file, (eq,), and_(parse("id < 4"), parse("name IS NOT NULL")), 0, 0,
                   None, ())
    assert ids_of(read(SCHEMA, [planned])) == [2, 3]


def test_full_file_read_matches_pyarrow(files: Files) -> None:
    """A plain read equals pyarrow's own read of the file (values and types)."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    data_file = write(files, NESTED, {
        "id": [1, 2], "loc": [{"lat": 1.5, "city": "Oslo"}, None],
        "pts": [[{"x": 1}], None], "props": [[("a", 1)], []]})
    ours = read(NESTED, [task(data_file)])
    theirs = pq.read_table(data_file.file_path)
    assert ours.to_pylist() == theirs.to_pylist()
    assert ours.schema.equals(to_arrow_schema(NESTED), check_metadata=True)
