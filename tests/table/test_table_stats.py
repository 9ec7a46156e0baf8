"""Theta sketches of column values (Puffin spec, ``apache-datasketches-theta-v1``): values
serialized with Appendix D and hashed as the DataSketches library hashes bytes, sketches the
library reads and unions, estimates within the sketch's error, and the statistics file written,
registered and read back."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import CorruptFile, ValidationError
from icepark.io.arrow.schema import to_arrow_type
from icepark.io.fileio import ArrowFileIO
from icepark.io.puffin.reader import PuffinReader
from icepark.io.puffin.theta import (
    THETA_BLOB_TYPE,
    ThetaAccumulator,
    estimate,
    hash_bytes,
    hash_fixed,
    ndv,
    union,
)
from icepark.spec.bounds import to_bytes
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    GEOMETRY,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    VARIANT,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.maintenance.table_stats import (
    read_theta_sketches,
    sketch_batches,
    stats_columns,
    stats_location,
    value_hashes,
    write_table_stats,
)
from icepark.table.table import Table
from tests.table.committer import FAST_RETRIES, InMemoryCommitter
from tests.table.test_statistics import SCHEMA, append, head

# Appendix D, one row per type: a value, its Arrow form as Spark reads it, and its bytes.
U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
SERIALIZED: list[tuple[PrimitiveType, Any, Any, str]] = [
    (BOOLEAN, True, None, "01"),
    (BOOLEAN, False, None, "00"),
    (INT, 34, None, "22000000"),  # "Stored as 4-byte little-endian"
    (LONG, -2, None, "feffffffffffffff"),
    (FLOAT, 1.0, None, "0000803f"),
    (DOUBLE, -0.0, None, "0000000000000080"),
    (DATE, 1, None, "01000000"),  # "days from the 1970-01-01 in an 4-byte little-endian int"
    (TIME, 1, None, "0100000000000000"),
    (TIMESTAMP, 256, None, "0001000000000000"),
    (TIMESTAMPTZ, 1, None, "0100000000000000"),
    (TIMESTAMP_NS, -1, pa.array([-1], pa.int64()), "ffffffffffffffff"),  # read as a long
    (STRING, "iceberg", None, b"iceberg".hex()),  # "UTF-8 bytes (without length)"
    (BINARY, b"\x00\x01", None, "0001"),
    (PrimitiveType.fixed(3), b"abc", None, "616263"),
    (UUID, U, pa.array([U.bytes], pa.binary()), "f79c3e09677c4bbda4793f349cb785e7"),
    (UUID, U, None, "f79c3e09677c4bbda4793f349cb785e7"),
    # "unscaled value as two's-complement big-endian binary, using the minimum number of bytes"
    (PrimitiveType.decimal(9, 2), Decimal("-1.00"), None, "9c"),
    (PrimitiveType.decimal(9, 2), Decimal("1.28"), None, "0080"),
]


@pytest.fixture(params=[2, 3])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    committer = InMemoryCommitter()
    metadata, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"),
                                            format_version=request.param,
                                            properties=FAST_RETRIES)
    table = Table(("db", "t"), committer.create(("db", "t"), metadata), ArrowFileIO(),
                  committer)
    return append(table, 3)


@pytest.mark.parametrize(("t", "value", "arrow", "expected"), SERIALIZED)
def test_each_type_hashes_its_appendix_d_bytes(t: PrimitiveType, value: Any, arrow: Any,
                                               expected: str) -> None:
    assert to_bytes(t, value).hex() == expected
    array = arrow if arrow is not None else pa.array([value, None, value],
                                                     to_arrow_type(t))
    hashes = value_hashes(t, array)
    assert sorted(set(hashes.tolist())) == [hash_bytes(bytes.fromhex(expected))]


def test_nulls_duplicates_and_empty_values_do_not_count() -> None:
    batch = pa.record_batch([pa.array(["a", "", None, "a", "b"]),
                             pa.array([None, None, None, None, None], pa.int64()),
                             pa.array([0.0, -0.0, math.nan, None, 0.0])], names=["s", "n", "d"])
    s, n, d = (union([sketch]) for sketch in sketch_batches((STRING, LONG, DOUBLE), [batch]))
    # the library rejects empty input, as the reference implementation's update does
    assert (ndv(s), ndv(n), ndv(d)) == (2, 0, 3)  # 0.0 and -0.0 differ in their bytes


@given(st.lists(st.integers(0, 2**64 - 1), max_size=50), st.sampled_from([1, 4, 8]))
def test_vectorized_hash_is_murmur3_of_the_bytes(values: list[int], width: int) -> None:
    masked = [v & ((1 << (8 * width)) - 1) for v in values]
    got = hash_fixed(np.array(masked, np.uint64), width).tolist()
    assert got == [hash_bytes(v.to_bytes(width, "little")) for v in masked]


@pytest.mark.parametrize("n", [0, 1, 2, 4096])
def test_exact_sketches_are_the_librarys_bytes(n: int) -> None:
    library = datasketches.update_theta_sketch()
    ours = ThetaAccumulator()
    words = [f"w{i}" for i in range(n)]
    for w in words:
        library.update(w)  # the library hashes a string's UTF-8 bytes
    ours.update_bytes(w.encode() for w in words)
    assert ours.to_bytes() == library.compact().serialize()
    assert union([ours.to_bytes()]) == library.compact().serialize()


def test_estimation_mode_union_and_error() -> None:
    n = 100_000
    values = np.arange(n, dtype=np.uint64)
    whole, halves = ThetaAccumulator(), [ThetaAccumulator(), ThetaAccumulator()]
    whole.update_hashes(hash_fixed(values, 8))
    halves[0].update_hashes(hash_fixed(values[: n // 2 + 1000], 8))  # overlapping halves
    halves[1].update_hashes(hash_fixed(values[n // 2:], 8))
    assert whole.retained == 4096 and whole.theta < 2**63 - 1
    merged = union(h.to_bytes() for h in halves)
    library = datasketches.compact_theta_sketch.deserialize(merged)
    assert library.is_estimation_mode() and library.is_ordered()
    # the union of two KMV sketches keeps the same smallest hashes as the whole
    assert merged == union([whole.to_bytes()])
    # relative standard error 1/sqrt(4096) ~ 1.6%: 4 sigma
    assert abs(estimate(merged) - n) < 0.0625 * n
    with pytest.raises(CorruptFile, match="not a compact Theta sketch"):
        estimate(b"\x01\x02", "blob 3 of f.stats")


def test_default_and_named_columns() -> None:
    schema = Schema.of(
        NestedField.required(1, "id", LONG), NestedField.optional(2, "Name", STRING),
        NestedField.optional(3, "v", VARIANT), NestedField.optional(4, "g", GEOMETRY),
        NestedField.optional(5, "p", StructType((NestedField.optional(6, "x", INT),))),
        NestedField.optional(7, "tags", ListType(8, STRING)))
    assert [c.name for c in stats_columns(schema)] == ["id", "Name"]
    assert [c.field_id for c in stats_columns(schema, ["p.x", "id", "p.x"])] == [6, 1]
    assert [c.name for c in stats_columns(schema, ["name"], case_sensitive=False)] == ["Name"]
    cases = [(["name"], "no such column"), (["v"], "no single-value serialization"),
             (["g"], "no single-value serialization"), (["p"], "a struct"),
             (["tags"], "a list"), (["tags.element"], "inside a list or map"),
             ([], "no columns")]
    for columns, message in cases:
        with pytest.raises(ValidationError, match=message):
            stats_columns(schema, columns)
    only_nested = Schema.of(NestedField.optional(1, "p", StructType((
        NestedField.optional(2, "x", INT),))))
    with pytest.raises(ValidationError, match="no primitive column"):
        stats_columns(only_nested)


def test_statistics_file_written_registered_and_read_back(table: Table) -> None:
    table = append(table, 5)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    columns = stats_columns(SCHEMA)
    batch = pa.record_batch([pa.array([1, 2, 3, 3], pa.int64()), pa.array(["x", "y", None, ""])],
                            names=["id", "k"])
    sketches = sketch_batches([c.field_type for c in columns], [batch])
    location = stats_location(table.metadata, snapshot.snapshot_id)
    assert Path(location).parent == Path(table.location) / "metadata"
    assert Path(location).name.startswith(f"{snapshot.snapshot_id}-")
    assert uuid.UUID(Path(location).name.removesuffix(".stats").split("-", 1)[1])
    entry = write_table_stats(table.io, location, snapshot, list(zip(columns, sketches,
                                                                     strict=True)))
    with table.update_statistics() as update:
        update.set_statistics(entry)
    registered = table.refresh().metadata.statistics
    assert registered == (entry,) and entry.snapshot_id == head(table)
    assert [(b.type, b.fields, b.snapshot_id, b.sequence_number, dict(b.properties))
            for b in entry.blob_metadata] == [
        (THETA_BLOB_TYPE, (1,), snapshot.snapshot_id, snapshot.sequence_number, {"ndv": "3"}),
        (THETA_BLOB_TYPE, (2,), snapshot.snapshot_id, snapshot.sequence_number, {"ndv": "2"})]
    read = read_theta_sketches(table.io, entry)
    assert read == {1: sketches[0], 2: sketches[1]}
    with PuffinReader(ArrowFileIO(), location) as reader:
        assert [b.compression_codec for b in reader.metadata.blobs] == ["zstd", "zstd"]
    # later commits keep the entry
    table = append(table, 2)
    assert table.metadata.statistics == (entry,)


def test_a_failed_write_leaves_no_file(table: Table) -> None:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    columns = stats_columns(SCHEMA, ["id"])
    location = stats_location(table.metadata, snapshot.snapshot_id)
    with pytest.raises(CorruptFile, match="not a compact Theta sketch"):
        write_table_stats(table.io, location, snapshot, [(columns[0], b"not a sketch")])
    assert not Path(location).exists()
