"""The streaming Parquet data file writer: field IDs, types, rolling, cleanup, properties."""

from __future__ import annotations

import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import ValidationError
from icepark.io.arrow.schema import conform_batch, from_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.data_writer import DataFileWriter, ParquetWriteOptions, write_data_files
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.types import (
    LONG,
    STRING,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from tests.io.writer_fixtures import (
    NESTED_SCHEMA,
    PRIMITIVE_SCHEMA,
    PRIMITIVE_VALUES,
    PRIMITIVES,
    FailingIO,
    Locations,
    nested_batch,
    parquet_field_ids,
    parquet_schema_lines,
    primitive_batch,
)

UNPARTITIONED = PartitionSpec()
ID_SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))


def id_batches(count: int, rows: int) -> Iterator[Any]:
    for i in range(count):
        ids = list(range(i * rows, (i + 1) * rows))
        yield pa.record_batch({"id": ids, "s": [f"row-{n:08d}-{n * 7919 % 1000}" for n in ids]})


def write(root: Path, schema: Schema, batches: Any,
          properties: dict[str, str] | None = None) -> list[DataFile]:
    return write_data_files(ArrowFileIO(), Locations(root), schema, UNPARTITIONED, (),
                            properties or {}, batches)


# field IDs and types


def test_field_ids_at_every_level_of_the_parquet_file(tmp_path: Path) -> None:
    [f] = write(tmp_path, NESTED_SCHEMA, [nested_batch()])
    ids = parquet_field_ids(f.file_path)
    assert ids["points.element.x"] == 7 and ids["props.key"] == 10
    assert ids["props.value.v"] == 12 and ids["matrix.element.element"] == 15
    assert set(ids.values()) == set(index_by_id(NESTED_SCHEMA))
    # Only the root and the repeated 3-level groups of lists and maps go without an ID.
    no_id = [line for line in parquet_schema_lines(f.file_path) if "field_id=-1" in line]
    assert len(no_id) == 1 + 4  # schema root; points, props, matrix and matrix.element
    assert all(line.startswith(("required group field_id=-1 schema",
                                "repeated group field_id=-1 list",
                                "repeated group field_id=-1 key_value")) for line in no_id)
    assert from_arrow_schema(pq.read_schema(f.file_path)) == NESTED_SCHEMA


def test_pyarrow_reads_our_file_and_ids_match_the_schema(tmp_path: Path) -> None:
    [f] = write(tmp_path, NESTED_SCHEMA, [nested_batch()])
    table = pq.read_table(f.file_path)
    expected = conform_batch(nested_batch(), NESTED_SCHEMA).to_pylist()
    assert repr(table.to_pylist()) == repr(expected)  # repr: nan != nan
    assert from_arrow_schema(table.schema) == NESTED_SCHEMA


def test_pyiceberg_maps_our_file_schema_to_the_same_ids(tmp_path: Path) -> None:
    pyiceberg_arrow = pytest.importorskip("pyiceberg.io.pyarrow")
    [f] = write(tmp_path, NESTED_SCHEMA, [nested_batch()])
    theirs = pyiceberg_arrow.pyarrow_to_schema(pq.read_schema(f.file_path))
    ours = {fid: (field.name, field.is_required)
            for fid, field in index_by_id(NESTED_SCHEMA).items()}
    assert {fid: (theirs.find_field(fid).name, theirs.find_field(fid).required)
            for fid in ours} == ours
    assert theirs.highest_field_id == NESTED_SCHEMA.highest_field_id


def test_duckdb_reads_our_file(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    [f] = write(tmp_path, PRIMITIVE_SCHEMA, [primitive_batch()])
    con = duckdb.connect()
    rows = con.execute(f"SELECT long, string, dec38, uuid FROM read_parquet('{f.file_path}') "
                       "ORDER BY long NULLS LAST").fetchall()
    assert [r[0] for r in rows] == [-(2**50), 2**40, None]
    assert rows[0][1] == "a\u00e9" and str(rows[1][3]) == str(PRIMITIVE_VALUES["uuid"][0])
    assert rows[0][2] == PRIMITIVE_VALUES["dec38"][2]


def test_every_primitive_round_trips_with_appendix_a_types(tmp_path: Path) -> None:
    [f] = write(tmp_path, PRIMITIVE_SCHEMA, [primitive_batch()])
    read = pq.read_table(f.file_path)
    expected = conform_batch(primitive_batch(), PRIMITIVE_SCHEMA)
    for name in PRIMITIVES:
        assert read.column(name).combine_chunks().equals(expected.column(name)), name
    parquet = {c.split(" field_id=")[1].split(" ", 1)[1]: c.split(" field_id=")[0]
               for c in parquet_schema_lines(f.file_path)[1:]}
    assert parquet["dec9 (Decimal(precision=9, scale=2));"] == "optional int32"
    assert parquet["dec18 (Decimal(precision=18, scale=4));"] == "optional int64"
    # "Fixed must use the minimum number of bytes that can store P": 16 bytes for P=38.
    assert parquet["dec38 (Decimal(precision=38, scale=10));"] == \
        "optional fixed_len_byte_array(16)"
    assert parquet["uuid (UUID);"] == "optional fixed_len_byte_array(16)"
    assert parquet["fixed;"] == "optional fixed_len_byte_array(3)"
    assert parquet["string (String);"] == "optional binary"
    assert parquet["binary;"] == "optional binary"
    assert parquet["time (Time(isAdjustedToUTC=false, timeUnit=microseconds));"] == \
        "optional int64"
    text = "\n".join(parquet)
    assert "timestamp (Timestamp(isAdjustedToUTC=false, timeUnit=microseconds" in text
    assert "timestamptz (Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in text
    assert "date (Date)" in text


# the data_file record


def test_data_file_record(tmp_path: Path) -> None:
    spec = PartitionSpecBuilder(ID_SCHEMA).identity("s").bucket("id", 4).build()
    spec = PartitionSpec(3, spec.fields)
    writer = DataFileWriter(ArrowFileIO(), Locations(tmp_path), ID_SCHEMA, spec, ("a", 2), {},
                            sort_order_id=1)
    writer.write(pa.table({"id": [1, 2], "s": ["a", "a"]}))
    [f] = writer.close()
    assert f.file_format is FileFormat.PARQUET and f.content is FileContent.DATA
    assert (f.partition, f.spec_id, f.sort_order_id, f.equality_ids) == (("a", 2), 3, 1, None)
    assert f.record_count == 2
    assert f.file_size_in_bytes == os.path.getsize(f.file_path)
    assert f.split_offsets == (4,)
    assert writer.close() == [f]  # closing again returns the same files
    with pytest.raises(ValidationError, match="was closed"):
        writer.write(pa.table({"id": [3], "s": ["a"]}))


@pytest.mark.parametrize(("partition", "message"), [
    ((), "has 0 values but spec 0 has 1 fields"),
    (("x",), "Partition field 'id_bucket'"),
])
def test_partition_tuple_is_checked(tmp_path: Path, partition: tuple[Any, ...],
                                    message: str) -> None:
    spec = PartitionSpecBuilder(ID_SCHEMA).bucket("id", 4).build()
    with pytest.raises(ValidationError, match=message):
        DataFileWriter(ArrowFileIO(), Locations(tmp_path), ID_SCHEMA, spec, partition, {})


def test_empty_input_writes_no_file(tmp_path: Path) -> None:
    assert write(tmp_path, ID_SCHEMA, []) == []
    assert write(tmp_path, ID_SCHEMA, [pa.record_batch({"id": pa.array([], pa.int64())})]) == []
    assert list(tmp_path.iterdir()) == []


# rolling, row groups and split offsets


def test_rolls_to_new_files_at_the_target_size(tmp_path: Path) -> None:
    target = 40_000
    files = write(tmp_path, ID_SCHEMA, id_batches(40, 1000), {
        "write.target-file-size-bytes": str(target),
        "write.parquet.row-group-size-bytes": "20000",
        "write.parquet.compression-codec": "uncompressed"})
    assert len(files) > 3
    assert sum(f.record_count for f in files) == 40_000
    assert [f.file_path for f in files] == Locations(tmp_path).files()
    first = 0
    for f in files:
        metadata = pq.read_metadata(f.file_path)
        assert f.record_count == metadata.num_rows
        assert f.file_size_in_bytes == os.path.getsize(f.file_path)
        assert f.file_size_in_bytes < 2 * target
        assert f.lower_bounds is not None and f.upper_bounds is not None
        assert from_bytes(LONG, f.lower_bounds[1]) == first  # each file holds the next rows
        assert from_bytes(LONG, f.upper_bounds[1]) == first + f.record_count - 1
        first += f.record_count
        assert f.split_offsets is not None
        assert len(f.split_offsets) == metadata.num_row_groups
        assert list(f.split_offsets) == sorted(set(f.split_offsets))
        assert f.split_offsets[0] == 4  # right after the "PAR1" magic
    assert all(f.file_size_in_bytes >= target * 0.5 for f in files[:-1])


def test_one_large_batch_is_split_into_row_groups_and_files(tmp_path: Path) -> None:
    [batch] = id_batches(1, 50_000)
    files = write(tmp_path, ID_SCHEMA, [pa.Table.from_batches([batch])], {
        "write.target-file-size-bytes": str(100_000),
        "write.parquet.row-group-size-bytes": str(200_000)})
    assert len(files) > 1 and sum(f.record_count for f in files) == 50_000
    assert any(f.split_offsets is not None and len(f.split_offsets) > 1 for f in files)


def test_small_batches_are_buffered_into_one_row_group(tmp_path: Path) -> None:
    [f] = write(tmp_path, ID_SCHEMA, id_batches(50, 10))
    assert pq.read_metadata(f.file_path).num_row_groups == 1
    assert f.record_count == 500


# failures


def test_a_batch_that_does_not_fit_fails_before_writing(tmp_path: Path) -> None:
    writer = DataFileWriter(ArrowFileIO(), Locations(tmp_path), ID_SCHEMA, UNPARTITIONED, (),
                            {})
    with pytest.raises(ValidationError, match="Column 'id' has Arrow type string"):
        writer.write(pa.record_batch({"id": ["1"]}))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValidationError, match="was aborted"):
        writer.close()


def test_a_bad_batch_mid_stream_removes_every_file_written(tmp_path: Path) -> None:
    def batches() -> Iterator[Any]:
        yield from id_batches(20, 1000)
        yield pa.record_batch({"id": [1, None]})

    with pytest.raises(ValidationError, match="'id' is required but has 1 null"):
        write(tmp_path, ID_SCHEMA, batches(), {"write.target-file-size-bytes": "20000",
                                               "write.parquet.row-group-size-bytes": "10000"})
    assert list(tmp_path.iterdir()) == []


def test_an_io_failure_mid_stream_removes_partial_files(tmp_path: Path) -> None:
    io = FailingIO(fail_after=150_000)
    locations = Locations(tmp_path)
    writer = DataFileWriter(io, locations, ID_SCHEMA, UNPARTITIONED, (), {
        "write.target-file-size-bytes": "50000", "write.parquet.row-group-size-bytes": "20000"})
    with pytest.raises(OSError, match="injected write failure"):
        for batch in id_batches(100, 1000):
            writer.write(batch)
    assert len(writer._created) > 1  # files were complete before the failure
    assert list(tmp_path.iterdir()) == []


def test_an_error_in_the_input_removes_files(tmp_path: Path) -> None:
    def batches() -> Iterator[Any]:
        yield from id_batches(3, 1000)
        raise RuntimeError("upstream task failed")

    with pytest.raises(RuntimeError, match="upstream"):
        write(tmp_path, ID_SCHEMA, batches(), {"write.parquet.row-group-size-bytes": "1000"})
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_never_overwritten_nor_deleted(tmp_path: Path) -> None:
    existing = tmp_path / "taken.parquet"
    existing.write_bytes(b"not ours")
    writer = DataFileWriter(ArrowFileIO(), lambda: str(existing), ID_SCHEMA, UNPARTITIONED, (),
                            {})
    writer.write(pa.record_batch({"id": [1]}))
    with pytest.raises(Exception, match="already exists"):
        writer.close()
    assert existing.read_bytes() == b"not ours"


# properties


@pytest.mark.parametrize(("codec", "parquet"), [
    (None, "ZSTD"), ("gzip", "GZIP"), ("snappy", "SNAPPY"), ("uncompressed", "UNCOMPRESSED"),
    ("ZSTD", "ZSTD"), ("brotli", "BROTLI"),
])
def test_compression_codec(tmp_path: Path, codec: str | None, parquet: str) -> None:
    properties = {} if codec is None else {"write.parquet.compression-codec": codec}
    properties["write.parquet.compression-level"] = "3" if codec != "snappy" else "1"
    if codec in ("snappy", "uncompressed"):
        del properties["write.parquet.compression-level"]
    [f] = write(tmp_path, ID_SCHEMA, id_batches(1, 100), properties)
    assert pq.read_metadata(f.file_path).row_group(0).column(0).compression == parquet


def test_page_and_dictionary_sizes_are_passed_to_pyarrow(tmp_path: Path) -> None:
    options = ParquetWriteOptions.from_properties({"write.parquet.page-size-bytes": "4096",
                                                   "write.parquet.dict-size-bytes": "8192"})
    assert options.writer_arguments()["data_page_size"] == 4096
    assert options.writer_arguments()["dictionary_pagesize_limit"] == 8192
    [f] = write(tmp_path, ID_SCHEMA, id_batches(1, 20_000), {
        "write.parquet.page-size-bytes": "4096", "write.parquet.dict-size-bytes": "8192"})
    column = pq.read_metadata(f.file_path).row_group(0).column(1)
    assert column.total_uncompressed_size > 4096  # several pages were written


@pytest.mark.parametrize(("key", "value"), [
    ("write.parquet.compression-codec", "lzo4"),
    ("write.parquet.compression-level", "high"),
    ("write.parquet.row-group-size-bytes", "0"),
    ("write.target-file-size-bytes", "-5"),
    ("write.parquet.page-size-bytes", "big"),
])
def test_invalid_properties(key: str, value: str) -> None:
    with pytest.raises(ValidationError, match=key):
        ParquetWriteOptions.from_properties({key: value})


def test_required_fields_under_a_null_struct(tmp_path: Path) -> None:
    """Arrow's Parquet writer rejects nulls in non-nullable fields even under a null parent."""
    inner = StructType((NestedField.required(3, "s", STRING), NestedField.required(4, "u", UUID),
                        NestedField.required(5, "l", ListType(6, LONG)),
                        NestedField.required(7, "m", MapType(8, STRING, 9, LONG)),
                        NestedField.required(10, "deep", StructType((
                            NestedField.required(11, "d", PrimitiveType.decimal(20, 2)),)))))
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "o", inner))
    value = {"s": "x", "u": b"\x01" * 16, "l": [1], "m": [("k", 1)], "deep": {"d": Decimal(1)}}
    arrow_inner = pa.struct([("s", pa.string()), ("u", pa.binary(16)), ("l", pa.list_(pa.int64())),
                             ("m", pa.map_(pa.string(), pa.int64())),
                             ("deep", pa.struct([("d", pa.decimal128(20, 2))]))])
    batch = pa.record_batch({"id": [1, 2, 3],
                             "o": pa.array([value, None, value], arrow_inner)})
    [f] = write(tmp_path, schema, [batch.slice(1)])
    rows = pq.read_table(f.file_path).to_pylist()
    assert [r["o"] is None for r in rows] == [True, False]
    assert rows[1]["o"]["deep"] == {"d": Decimal("1.00")} and rows[1]["o"]["m"] == [("k", 1)]
    assert f.null_value_counts is not None and f.null_value_counts[3] == 1
