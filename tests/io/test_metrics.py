"""Metrics of written Parquet files: modes, counts, Appendix D bounds, truncation, ordering."""

from __future__ import annotations

import math
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.data_writer import write_data_files
from icepark.io.parquet.float_stats import footer_float_stats, read_float_stats
from icepark.io.parquet.metrics import (
    COUNTS,
    DEFAULT_MODE,
    FULL,
    NONE,
    MetricsConfig,
    MetricsMode,
    ModeKind,
    compute_metrics,
    truncate_lower_binary,
    truncate_lower_string,
    truncate_upper_binary,
    truncate_upper_string,
)
from icepark.spec.bounds import from_bytes, lower_bound, sort_key, to_bytes, upper_bound
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMP,
    NestedField,
    PrimitiveType,
)
from tests.io.writer_fixtures import (
    NESTED_SCHEMA,
    PRIMITIVE_SCHEMA,
    PRIMITIVE_VALUES,
    PRIMITIVES,
    Locations,
    nested_batch,
    primitive_batch,
)


def write_one(root: Path, schema: Schema, batch: Any,
              properties: dict[str, str] | None = None) -> DataFile:
    files = write_data_files(ArrowFileIO(), Locations(root), schema, PartitionSpec(), (),
                             properties or {}, [batch])
    assert len(files) == 1
    return files[0]


# modes and configuration


@pytest.mark.parametrize(("text", "mode"), [
    ("none", NONE), ("Counts", COUNTS), ("FULL", FULL), ("truncate(16)", DEFAULT_MODE),
    (" truncate(1) ", MetricsMode(ModeKind.TRUNCATE, 1)),
])
def test_parse_mode(text: str, mode: MetricsMode) -> None:
    assert MetricsMode.parse(text) == mode


@pytest.mark.parametrize("text", ["truncate(0)", "truncate", "truncate(-1)", "all", ""])
def test_parse_invalid_mode(text: str) -> None:
    with pytest.raises(ValidationError, match="Invalid metrics mode"):
        MetricsMode.parse(text)


def test_config_from_properties() -> None:
    schema = NESTED_SCHEMA
    config = MetricsConfig.from_properties({
        "write.metadata.metrics.column.location.lat": "full",
        "write.metadata.metrics.column.id": "none",
        "write.metadata.metrics.column.dropped_column": "counts",
        "unrelated": "x",
    }, schema)
    assert config.mode(3) == FULL and config.mode(1) == NONE
    assert config.mode(4) == DEFAULT_MODE  # "truncate(16)" by default
    assert MetricsConfig.from_properties(
        {"write.metadata.metrics.default": "counts"}, schema).mode(4) == COUNTS
    with pytest.raises(ValidationError):
        MetricsConfig.from_properties({"write.metadata.metrics.column.id": "bogus"}, schema)


# truncation


@pytest.mark.parametrize(("value", "n", "lower", "upper"), [
    ("abc", 16, "abc", "abc"),
    ("abcdef", 3, "abc", "abd"),
    ("ab\U0010ffff", 3, "ab\U0010ffff", "ab\U0010ffff"),  # not longer than N: exact
    ("ab\U0010ffffz", 3, "ab\U0010ffff", "ac"),  # U+10FFFF carries to the previous one
    ("a\U0010ffff\U0010ffffz", 3, "a\U0010ffff\U0010ffff", "b"),
    ("\U0010ffff\U0010ffffz", 2, "\U0010ffff\U0010ffff", None),  # no valid upper bound
    ("a\ud7ffz", 2, "a\ud7ff", "a\ue000"),  # skips the surrogates U+D800..U+DFFF
    ("\U0001f600\U0001f600\U0001f600", 2, "\U0001f600\U0001f600", "\U0001f600\U0001f601"),
    ("\u00e9\u00e9\u00e9", 1, "\u00e9", "\u00ea"),
])
def test_truncate_strings(value: str, n: int, lower: str, upper: str | None) -> None:
    assert truncate_lower_string(value, n) == lower
    assert truncate_upper_string(value, n) == upper
    assert lower <= value
    assert upper is None or value <= upper
    if upper is not None:
        upper.encode()  # never a surrogate


@pytest.mark.parametrize(("value", "n", "lower", "upper"), [
    (b"\x01\x02", 4, b"\x01\x02", b"\x01\x02"),
    (b"\x01\x02\x03", 2, b"\x01\x02", b"\x01\x03"),
    (b"\x01\xff\x03", 2, b"\x01\xff", b"\x02"),
    (b"\xff\xff\x00", 2, b"\xff\xff", None),
])
def test_truncate_binary(value: bytes, n: int, lower: bytes, upper: bytes | None) -> None:
    assert truncate_lower_binary(value, n) == lower
    assert truncate_upper_binary(value, n) == upper


# metrics of written files


def test_counts_and_bounds_of_every_primitive(tmp_path: Path) -> None:
    f = write_one(tmp_path, PRIMITIVE_SCHEMA, primitive_batch())
    assert f.record_count == 3
    for fid, (name, t) in enumerate(PRIMITIVES.items(), start=1):
        values = PRIMITIVE_VALUES[name]
        assert f.value_counts == {i: 3 for i in range(1, 17)}
        assert f.null_value_counts is not None and f.null_value_counts[fid] == 1, name
        assert f.column_sizes is not None and f.column_sizes[fid] > 0
        assert f.lower_bounds is not None and f.upper_bounds is not None
        assert f.lower_bounds[fid] == to_bytes(t, lower_bound(t, values)), name
        assert f.upper_bounds[fid] == to_bytes(t, upper_bound(t, values)), name
    assert f.nan_value_counts == {4: 0, 5: 0}


def test_nan_counts_and_float_bounds(tmp_path: Path) -> None:
    schema = Schema.of(*(NestedField.optional(i, n, t) for i, (n, t) in enumerate([
        ("f", FLOAT), ("d", DOUBLE), ("all_nan", DOUBLE), ("zeros", DOUBLE), ("negzero", FLOAT),
        ("poszero", DOUBLE), ("inf", DOUBLE)], start=1)))
    nan = math.nan
    batch = pa.record_batch({
        "f": pa.array([nan, 1.0, None, -3.5, nan], pa.float32()),
        "d": [0.5, nan, None, None, 2.0],
        "all_nan": [nan, nan, None, nan, nan],
        "zeros": [0.0, -0.0, 0.0, nan, None],
        "negzero": pa.array([-0.0, -0.0, 1.0, None, nan], pa.float32()),
        "poszero": [0.0, -1.0, 0.0, None, None],
        "inf": [math.inf, -math.inf, nan, 1.0, None],
    })
    f = write_one(tmp_path, schema, batch)
    assert f.value_counts == {i: 5 for i in range(1, 8)}
    assert f.null_value_counts == {1: 1, 2: 2, 3: 1, 4: 1, 5: 1, 6: 2, 7: 1}
    assert f.nan_value_counts == {1: 2, 2: 1, 3: 4, 4: 1, 5: 1, 6: 0, 7: 1}
    assert f.lower_bounds is not None and f.upper_bounds is not None

    def bounds(fid: int, t: PrimitiveType) -> tuple[float, float]:
        assert f.lower_bounds is not None and f.upper_bounds is not None
        return from_bytes(t, f.lower_bounds[fid]), from_bytes(t, f.upper_bounds[fid])

    assert bounds(1, FLOAT) == (-3.5, 1.0)
    assert bounds(2, DOUBLE) == (0.5, 2.0)
    assert 3 not in f.lower_bounds and 3 not in f.upper_bounds  # NaN is never a bound
    low, high = bounds(4, DOUBLE)
    assert math.copysign(1, low) == -1 and math.copysign(1, high) == 1  # -0.0 precedes +0.0
    low, high = bounds(5, FLOAT)
    assert (math.copysign(1, low), high) == (-1, 1.0)
    low, high = bounds(6, DOUBLE)
    assert (low, math.copysign(1, high)) == (-1.0, 1)
    assert bounds(7, DOUBLE) == (-math.inf, math.inf)


def test_footers_of_other_writers_do_not_give_float_stats(tmp_path: Path) -> None:
    """pyarrow's statistics leave NaN out, so its footers cannot say there is none."""
    schema = Schema.of(NestedField.optional(1, "d", DOUBLE))
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"d": [1.0, math.nan]}).cast(to_arrow_schema(schema)), path)
    footer = pq.read_metadata(path)
    assert footer.row_group(0).column(0).statistics.max == 1.0  # the NaN is not in it
    assert footer_float_stats(footer, schema) is None
    floats = read_float_stats(str(path), schema)
    assert floats is not None and floats.nan_counts == {1: 1}


def test_long_strings_are_truncated_by_default(tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "s", STRING), NestedField.optional(2, "b", BINARY),
                       NestedField.optional(3, "max", STRING),
                       NestedField.optional(4, "ff", BINARY))
    long_a = "\U0001f600" * 10 + "a" * 10  # 20 code points, non-BMP first
    batch = pa.record_batch({
        "s": [long_a, "\U0001f600" * 3, None],
        "b": [b"\x01" * 20, b"\x01" * 15 + b"\xff" * 10, None],
        "max": ["\U0010ffff" * 17, "\U0010ffff" * 20, None],
        "ff": [b"\x00" * 17, b"\x01" + b"\xff" * 19, None],
    })
    f = write_one(tmp_path, schema, batch)
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert f.lower_bounds[1] == ("\U0001f600" * 3).encode()
    assert f.upper_bounds[1] == ("\U0001f600" * 10 + "a" * 5 + "b").encode()
    assert f.lower_bounds[2] == b"\x01" * 16
    assert f.upper_bounds[2] == b"\x01" * 14 + b"\x02"
    assert f.lower_bounds[3] == ("\U0010ffff" * 16).encode()
    assert 3 not in f.upper_bounds  # all code points are U+10FFFF: no upper bound exists
    assert f.lower_bounds[4] == b"\x00" * 16
    assert f.upper_bounds[4] == b"\x02"


def test_modes_per_column(tmp_path: Path) -> None:
    schema = Schema.of(*(NestedField.optional(i, n, STRING)
                         for i, n in enumerate(["none", "counts", "full", "trunc", "dflt"], 1)))
    value = "x" * 30 + "y"
    batch = pa.record_batch({n: [value, None] for n in ["none", "counts", "full", "trunc",
                                                          "dflt"]})
    f = write_one(tmp_path, schema, batch, {
        "write.metadata.metrics.default": "truncate(4)",
        "write.metadata.metrics.column.none": "none",
        "write.metadata.metrics.column.counts": "counts",
        "write.metadata.metrics.column.full": "full",
        "write.metadata.metrics.column.trunc": "truncate(2)",
    })
    assert f.column_sizes is not None and set(f.column_sizes) == {2, 3, 4, 5}
    assert f.value_counts == {2: 2, 3: 2, 4: 2, 5: 2}
    assert f.null_value_counts == {2: 1, 3: 1, 4: 1, 5: 1}
    assert f.lower_bounds == {3: value.encode(), 4: b"xx", 5: b"xxxx"}
    assert f.upper_bounds == {3: value.encode(), 4: b"xy", 5: b"xxxy"}


def test_nested_columns_counts_everywhere_bounds_outside_collections(tmp_path: Path) -> None:
    f = write_one(tmp_path, NESTED_SCHEMA, nested_batch())
    leaves = {1, 3, 4, 7, 8, 10, 12, 15}
    assert f.value_counts is not None and set(f.value_counts) == leaves
    assert f.value_counts[1] == 3
    assert f.value_counts[7] == 4  # two points, a null point and an empty list: num_values
    assert f.null_value_counts is not None and f.null_value_counts[3] == 1
    assert f.nan_value_counts == {3: 0, 8: 0, 15: 1}
    assert f.lower_bounds is not None and set(f.lower_bounds) == {1, 3, 4}
    assert from_bytes(DOUBLE, f.lower_bounds[3]) == -2.0
    assert f.upper_bounds is not None and from_bytes(STRING, f.upper_bounds[4]) == "a"


def test_footer_only_metrics(tmp_path: Path) -> None:
    """Without data statistics (a file written by another engine): no NaN counts, float
    bounds from Parquet statistics, which exclude NaN."""
    schema = Schema.of(NestedField.optional(1, "d", DOUBLE), NestedField.optional(2, "t",
                                                                                  TIMESTAMP))
    path = str(tmp_path / "spark-like.parquet")
    table = pa.table({"d": [1.0, math.nan, -2.0], "t": pa.array([3, 1, None],
                                                                 pa.timestamp("ms"))})
    arrow = pa.schema([pa.field("d", pa.float64(), metadata={b"PARQUET:field_id": b"1"}),
                       pa.field("t", pa.timestamp("ms"), metadata={b"PARQUET:field_id": b"2"})])
    pq.write_table(table.cast(arrow), path)
    m = compute_metrics(pq.read_metadata(path), schema, MetricsConfig())
    assert m.nan_value_counts == {}
    assert m.value_counts == {1: 3, 2: 3} and m.null_value_counts == {1: 0, 2: 1}
    assert from_bytes(DOUBLE, m.lower_bounds[1]) == -2.0
    assert from_bytes(DOUBLE, m.upper_bounds[1]) == 1.0
    assert from_bytes(TIMESTAMP, m.lower_bounds[2]) == 1000  # milliseconds -> micros
    assert from_bytes(TIMESTAMP, m.upper_bounds[2]) == 3000


def test_missing_statistics_omit_the_bound(tmp_path: Path) -> None:
    schema = Schema.of(NestedField.optional(1, "s", STRING))
    huge = "z" * 100_000  # beyond pyarrow's statistics size limit
    f = write_one(tmp_path, schema, pa.record_batch({"s": ["a", huge]}),
                  {"write.metadata.metrics.default": "full"})
    assert f.value_counts == {1: 2}
    assert f.lower_bounds == {} and f.upper_bounds == {}


def test_metrics_cover_every_row_group(tmp_path: Path) -> None:
    schema = Schema.of(NestedField.required(1, "n", LONG), NestedField.optional(2, "d", DATE))
    batches = [pa.record_batch({"n": list(range(i * 100, i * 100 + 100)),
                                "d": pa.array([i] * 100, pa.int32()).cast(pa.date32())})
               for i in range(5)]
    files = write_data_files(ArrowFileIO(), Locations(tmp_path), schema, PartitionSpec(), (),
                             {"write.parquet.row-group-size-bytes": "1000"}, batches)
    assert len(files) == 1
    f = files[0]
    assert f.split_offsets is not None and len(f.split_offsets) > 1
    assert f.lower_bounds == {1: to_bytes(LONG, 0), 2: to_bytes(DATE, 0)}
    assert f.upper_bounds == {1: to_bytes(LONG, 499), 2: to_bytes(DATE, 4)}
    assert f.value_counts == {1: 500, 2: 500}


# Hypothesis: every non-null, non-NaN value lies within [lower, upper] in the spec's order.

DEC = PrimitiveType.decimal(12, 3)
HYPO_TYPES: dict[str, tuple[PrimitiveType, Any, st.SearchStrategy[Any]]] = {
    "l": (LONG, pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "f": (FLOAT, pa.float32(), st.floats(width=32)),
    "d": (DOUBLE, pa.float64(), st.floats()),
    "s": (STRING, pa.string(), st.text(st.characters(codec="utf-8"), max_size=24)),
    "b": (BINARY, pa.binary(), st.binary(max_size=24)),
    "dec": (DEC, pa.decimal128(12, 3),
            st.decimals(min_value=-10**9 + 1, max_value=10**9 - 1, places=3,
                        allow_nan=False, allow_infinity=False)),
    "ts": (TIMESTAMP, pa.timestamp("us"), st.integers(-(2**62), 2**62)),
}
HYPO_SCHEMA = Schema.of(*(NestedField.optional(i, name, t)
                          for i, (name, (t, _, _)) in enumerate(HYPO_TYPES.items(), start=1)))


@st.composite
def columns(draw: st.DrawFn) -> dict[str, list[Any]]:
    rows = draw(st.integers(1, 30))
    return {name: draw(st.lists(st.none() | strategy, min_size=rows, max_size=rows))
            for name, (_, _, strategy) in HYPO_TYPES.items()}


def _arrow(name: str, values: list[Any]) -> Any:
    t, arrow_type, _ = HYPO_TYPES[name]
    if t == TIMESTAMP:
        return pa.array(values, pa.int64()).cast(arrow_type)
    if t == DEC:
        values = [None if v is None else v.quantize(Decimal("0.001")) for v in values]
    return pa.array(values, arrow_type)


@settings(max_examples=60, deadline=None)
@given(data=columns(), truncate=st.integers(1, 8))
def test_bounds_contain_every_value(data: dict[str, list[Any]], truncate: int) -> None:
    for mode in ("full", f"truncate({truncate})"):
        with tempfile.TemporaryDirectory() as root:
            batch = pa.record_batch({name: _arrow(name, values) for name, values in data.items()})
            f = write_one(Path(root), HYPO_SCHEMA, batch,
                          {"write.metadata.metrics.default": mode})
        assert f.lower_bounds is not None and f.upper_bounds is not None
        for fid, (name, (t, _, _)) in enumerate(HYPO_TYPES.items(), start=1):
            stored = data[name] if t == TIMESTAMP else batch.column(name).to_pylist()
            present = [v for v in stored if v is not None
                       and not (isinstance(v, float) and math.isnan(v))]
            assert f.value_counts is not None and f.value_counts[fid] == len(stored)
            assert f.null_value_counts is not None
            assert f.null_value_counts[fid] == stored.count(None)
            key = sort_key(t)
            if not present:
                assert fid not in f.lower_bounds and fid not in f.upper_bounds
                continue
            low = from_bytes(t, f.lower_bounds[fid])
            assert all(key(low) <= key(v) for v in present), (name, low)
            if fid in f.upper_bounds:
                high = from_bytes(t, f.upper_bounds[fid])
                assert all(key(v) <= key(high) for v in present), (name, high)
            else:
                assert mode != "full" and t in (STRING, BINARY)
            if mode == "full" or t not in (STRING, BINARY):
                assert f.lower_bounds[fid] == to_bytes(t, lower_bound(t, present))
                assert f.upper_bounds[fid] == to_bytes(t, upper_bound(t, present))
