"""Column metrics of a written Parquet file: sizes, counts and Appendix D bounds per field ID.

Spec, *Manifests*: ``value_counts`` is the "number of values in the column (including null and
NaN values)"; a lower bound "must be less than or equal to all non-null, non-NaN values in the
column for the file" and an upper bound greater than or equal; "For ``float`` and ``double``,
the value ``-0.0`` must precede ``+0.0``, as in the IEEE 754 ``totalOrder`` predicate. NaNs are
not permitted as lower or upper bounds."

Counts, sizes and most bounds come from the Parquet footer (``column_sizes`` is the sum of the
column chunks' ``total_compressed_size``, ``value_counts`` their ``num_values``, which counts
nulls and, inside lists and maps, empty or null collections). What the footer cannot say is
computed from the data while writing by :class:`FloatCollector`: NaN counts, and exact float and
double bounds (Parquet statistics leave NaN out and widen zero bounds to ``-0.0``/``+0.0``).

Bounds are kept only for primitive columns that are not inside a list or map: a bound of a list
element or map key/value would describe the elements of many rows at once, and no reader can
use it to prune a file by a row predicate on one value. A bound is omitted
when a row group with values has no Parquet statistics (pyarrow drops them for values longer
than its statistics size limit).

The v3 types: ``timestamp_ns``/``timestamptz_ns`` bounds are nanoseconds; a ``geometry``
column's bounds are the corner points of its bounding box, from the footer's geospatial
statistics (:mod:`icepark.io.parquet.geometry`), never a byte-wise minimum of its WKB;
``geography`` and ``variant`` get no bounds (they are optional), and a variant's size and
counts come from the leaves of its group (which have no field IDs: its ``metadata`` counts
its values and nulls). ``unknown`` columns are not in files, so they have no metrics.

Metrics modes, from the table properties ``write.metadata.metrics.default`` (default
``truncate(16)``) and ``write.metadata.metrics.column.<column name>``: ``none`` keeps nothing
for a column, ``counts`` keeps its size and counts, ``truncate(N)`` adds bounds with strings cut
to N code points and binary and fixed to N bytes, ``full`` adds exact bounds.

>>> truncate_upper_string("abc\U0010ffff\U0010ffffz", 5)
'abd'
>>> truncate_upper_binary(b"\\xff\\xff\\xff", 2) is None
True
>>> MetricsMode.parse("Truncate(8)")
MetricsMode(kind=<ModeKind.TRUNCATE: 'truncate'>, length=8)
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

import pyarrow as pa

from icepark.errors import ValidationError
from icepark.io.arrow.schema import FIELD_ID_KEY, leaf_field_ids
from icepark.io.arrow.variant import METADATA, is_variant_struct
from icepark.io.parquet import geometry
from icepark.io.parquet.float_stats import FloatCollector, read_float_stats
from icepark.spec.bounds import UNORDERED, sort_key, to_bytes
from icepark.spec.schema import Schema
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    TypeId,
    child_fields,
)
from icepark.spec.values import check_value

__all__ = [
    "COUNTS", "DEFAULT_MODE", "FULL", "NONE", "FloatCollector", "Metrics", "MetricsConfig",
    "MetricsMode", "ModeKind", "compute_metrics", "leaf_field_ids", "read_float_stats",
    "split_offsets", "truncate_lower_binary", "truncate_lower_string", "truncate_upper_binary",
    "truncate_upper_string",
]

DEFAULT_MODE_PROPERTY = "write.metadata.metrics.default"
COLUMN_MODE_PREFIX = "write.metadata.metrics.column."
_TRUNCATE_RE = re.compile(r"truncate\((\d+)\)", re.IGNORECASE)
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_TRUNCATABLE = frozenset({TypeId.STRING, TypeId.BINARY, TypeId.FIXED})


class ModeKind(StrEnum):
    NONE = "none"
    COUNTS = "counts"
    TRUNCATE = "truncate"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """A column's metrics mode; ``length`` is N of ``truncate(N)`` (0 otherwise)."""

    kind: ModeKind
    length: int = 0

    @staticmethod
    def parse(text: str) -> MetricsMode:
        """Parse ``none``, ``counts``, ``full`` or ``truncate(N)`` (N > 0), ignoring case."""
        cleaned = text.strip()
        if m := _TRUNCATE_RE.fullmatch(cleaned):
            length = int(m.group(1))
            if length > 0:
                return MetricsMode(ModeKind.TRUNCATE, length)
        elif cleaned.lower() in {"none", "counts", "full"}:
            return MetricsMode(ModeKind(cleaned.lower()))
        raise ValidationError(f"Invalid metrics mode {text!r}: use none, counts, full or "
                              "truncate(N) with N > 0")

    @property
    def keeps_counts(self) -> bool:
        return self.kind is not ModeKind.NONE

    @property
    def keeps_bounds(self) -> bool:
        return self.kind in (ModeKind.TRUNCATE, ModeKind.FULL)


NONE = MetricsMode(ModeKind.NONE)
COUNTS = MetricsMode(ModeKind.COUNTS)
FULL = MetricsMode(ModeKind.FULL)
DEFAULT_MODE = MetricsMode(ModeKind.TRUNCATE, 16)


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """The metrics mode of every column: a default plus per-field-ID overrides."""

    default: MetricsMode = DEFAULT_MODE
    columns: Mapping[int, MetricsMode] = field(default_factory=dict)

    @staticmethod
    def from_properties(properties: Mapping[str, str], schema: Schema) -> MetricsConfig:
        """Read ``write.metadata.metrics.*`` table properties.

        Column names are full dotted names in ``schema`` (e.g. ``location.lat``), matched case
        sensitively; a name no longer in the schema (a dropped or renamed column) is ignored.

        >>> from icepark.spec.types import LONG, STRING, NestedField
        >>> s = Schema.of(NestedField.required(1, "id", LONG),
        ...               NestedField.optional(2, "name", STRING))
        >>> c = MetricsConfig.from_properties({"write.metadata.metrics.default": "counts",
        ...     "write.metadata.metrics.column.name": "truncate(4)"}, s)
        >>> c.mode(1).kind, c.mode(2).length
        (<ModeKind.COUNTS: 'counts'>, 4)
        """
        default = MetricsMode.parse(properties.get(DEFAULT_MODE_PROPERTY, "truncate(16)"))
        columns: dict[int, MetricsMode] = {}
        for key, value in properties.items():
            if key.startswith(COLUMN_MODE_PREFIX):
                mode = MetricsMode.parse(value)
                field_id = schema.find_field_id(key.removeprefix(COLUMN_MODE_PREFIX))
                if field_id is not None:
                    columns[field_id] = mode
        return MetricsConfig(default, columns)

    def mode(self, field_id: int) -> MetricsMode:
        return self.columns.get(field_id, self.default)


def truncate_lower_string(value: str, length: int) -> str:
    """The first ``length`` code points: a prefix sorts before the value."""
    return value[:length]


def truncate_upper_string(value: str, length: int) -> str | None:
    """The ``length``-code-point prefix with its last code point incremented, or None.

    A last code point of U+10FFFF is dropped and the one before it incremented instead;
    surrogates (U+D800..U+DFFF) are skipped, as UTF-8 cannot encode them.

    >>> truncate_upper_string("ab\\ud7ffc", 3)
    'ab\\ue000'
    >>> truncate_upper_string("\U0010ffff" * 3, 2) is None
    True
    """
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[i])
        if code < _MAX_CODE_POINT:
            code += 1
            if code in _SURROGATES:
                code = _SURROGATES.stop
            return prefix[:i] + chr(code)
    return None


def truncate_lower_binary(value: bytes, length: int) -> bytes:
    """The first ``length`` bytes."""
    return value[:length]


def truncate_upper_binary(value: bytes, length: int) -> bytes | None:
    """The ``length``-byte prefix with its last byte incremented (0xFF carries), or None.

    >>> truncate_upper_binary(b"\\x01\\xff\\xff", 2)
    b'\\x02'
    """
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] < 0xFF:
            return prefix[:i] + bytes([prefix[i] + 1])
    return None


def _truncate(t: PrimitiveType, value: Any, mode: MetricsMode, upper: bool) -> Any | None:
    if mode.kind is not ModeKind.TRUNCATE or t.type_id not in _TRUNCATABLE:
        return value
    if t.type_id is TypeId.STRING:
        if upper:
            return truncate_upper_string(value, mode.length)
        return truncate_lower_string(value, mode.length)
    if upper:
        return truncate_upper_binary(value, mode.length)
    return truncate_lower_binary(value, mode.length)


def _encode(t: PrimitiveType, value: Any) -> bytes:
    """Appendix D binary; fixed and binary are "Binary value", also when truncated."""
    if t.type_id in (TypeId.FIXED, TypeId.BINARY):
        return bytes(value)
    return to_bytes(t, value)


@dataclass(frozen=True, slots=True)
class Metrics:
    """What a ``data_file`` records about its columns, keyed by field ID."""

    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: tuple[int, ...]


def split_offsets(metadata: Any) -> tuple[int, ...]:
    """Row group start offsets, sorted: "all row group offsets in a Parquet file".

    A row group starts at its first column chunk: the dictionary page if there is one, else
    the first data page.
    """
    offsets = []
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        if rg.num_columns == 0:
            continue
        first = rg.column(0)
        start = first.data_page_offset
        if first.has_dictionary_page and first.dictionary_page_offset:
            start = min(start, first.dictionary_page_offset)
        offsets.append(start)
    return tuple(sorted(offsets))


def _variant_leaves(arrow_schema: Any) -> dict[int, tuple[int, bool]]:
    """The leaf columns inside variant groups: column index -> (the group's field ID, whether
    the leaf is the group's own ``metadata``), in :func:`leaf_field_ids`' order."""
    owners: dict[int, tuple[int, bool]] = {}
    count = 0

    def walk(f: Any, owner: int | None, top: bool) -> None:
        nonlocal count
        t = f.type
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        if owner is None and raw is not None and is_variant_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), int(raw), t.field(i).name == METADATA)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), owner, False)
        elif pa.types.is_map(t):
            walk(t.key_field, owner, False)
            walk(t.item_field, owner, False)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field, owner, False)
        else:
            if owner is not None:
                owners[count] = (owner, top)
            count += 1

    for f in arrow_schema:
        walk(f, None, False)
    return owners


def compute_metrics(metadata: Any, schema: Schema, config: MetricsConfig,
                    floats: FloatCollector | None = None, *,
                    file_schema: Any | None = None) -> Metrics:
    """The metrics of a Parquet file from its footer (``pyarrow.parquet.FileMetaData``).

    Columns are matched to ``schema`` by field ID; ``floats`` supplies NaN counts and float
    bounds (without it, NaN counts are omitted and float bounds come from the footer).
    ``file_schema`` is the file's Arrow schema with the IDs to use, for a file written without
    them (the footer's schema with the table's name mapping applied); by default the footer's.
    """
    arrow_schema = metadata.schema.to_arrow_schema() if file_schema is None else file_schema
    ids = leaf_field_ids(arrow_schema)
    variant_leaves = _variant_leaves(arrow_schema)
    if len(ids) != metadata.num_columns:
        raise ValidationError(f"Parquet schema has {metadata.num_columns} columns but "
                              f"{len(ids)} leaf fields")
    in_collection = _ids_in_collections(schema)
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lowers: dict[int, bytes] = {}
    uppers: dict[int, bytes] = {}
    nan_counts = floats.nan_counts if floats is not None else {}
    nans: dict[int, int] = {}
    for column, field_id in enumerate(ids):
        if field_id is None and column in variant_leaves:
            owner, is_metadata = variant_leaves[column]
            if schema.field_by_id(owner) is not None and config.mode(owner).keeps_counts:
                _variant_counts(metadata, column, owner, is_metadata, sizes=sizes,
                                values=values, nulls=nulls)
            continue
        f = schema.field_by_id(field_id) if field_id is not None else None
        mode = config.mode(field_id) if field_id is not None else NONE
        if f is None or field_id is None or not mode.keeps_counts:
            continue
        chunks = [metadata.row_group(i).column(column) for i in range(metadata.num_row_groups)]
        sizes[field_id] = sum(c.total_compressed_size for c in chunks)
        values[field_id] = sum(c.num_values for c in chunks)
        stats: list[Any] = [c.statistics if c.is_stats_set else None for c in chunks]
        if all(s is not None and s.has_null_count for s in stats):
            nulls[field_id] = sum(int(s.null_count) for s in stats)
        if field_id in nan_counts:
            nans[field_id] = nan_counts[field_id]
        t = f.field_type
        if not mode.keeps_bounds or not isinstance(t, PrimitiveType) or field_id in in_collection:
            continue
        if t.type_id is TypeId.GEOMETRY:
            box = geometry.bounds(chunks)
            if box is not None:
                lowers[field_id], uppers[field_id] = box[0].to_bytes(), box[1].to_bytes()
            continue
        if t.type_id in UNORDERED:  # geography, variant: no bounds
            continue
        if floats is not None and t.type_id in _FLOATS:
            low, high = floats.bounds(field_id)
        else:
            low, high = _footer_bounds(t, metadata.schema.column(column), chunks, stats)
        low = None if low is None else _truncate(t, low, mode, upper=False)
        high = None if high is None else _truncate(t, high, mode, upper=True)
        if low is not None:
            lowers[field_id] = _encode(t, low)
        if high is not None:
            uppers[field_id] = _encode(t, high)
    return Metrics(metadata.num_rows, sizes, values, nulls, nans, lowers, uppers,
                   split_offsets(metadata))


def _variant_counts(metadata: Any, column: int, owner: int, is_metadata: bool, *,
                    sizes: dict[int, int], values: dict[int, int],
                    nulls: dict[int, int]) -> None:
    """Add one leaf of variant ``owner`` to its size; its ``metadata`` leaf ("required binary
    metadata" in the group) gives the variant's value and null counts."""
    chunks = [metadata.row_group(i).column(column) for i in range(metadata.num_row_groups)]
    sizes[owner] = sizes.get(owner, 0) + sum(c.total_compressed_size for c in chunks)
    if not is_metadata:
        return
    values[owner] = sum(c.num_values for c in chunks)
    stats: list[Any] = [c.statistics if c.is_stats_set else None for c in chunks]
    if all(s is not None and s.has_null_count for s in stats):
        nulls[owner] = sum(int(s.null_count) for s in stats)


def _ids_in_collections(schema: Schema) -> frozenset[int]:
    """IDs of the fields inside a list or map, at any depth."""
    found: set[int] = set()

    def walk(t: IcebergType, inside: bool) -> None:
        for f in child_fields(t):
            if inside or isinstance(t, ListType | MapType):
                found.add(f.field_id)
            walk(f.field_type, inside or isinstance(t, ListType | MapType))

    walk(schema.as_struct(), False)
    return frozenset(found)


def _footer_bounds(t: PrimitiveType, column: Any, chunks: list[Any],
                   stats: list[Any]) -> tuple[Any | None, Any | None]:
    """The least row-group minimum and greatest maximum, or None where one is unknown."""
    key = sort_key(t)
    low: Any = None
    high: Any = None
    low_known = high_known = True
    for chunk, s in zip(chunks, stats, strict=True):
        if s is None:
            return None, None
        if not s.has_min_max:
            if chunk.num_values - (s.null_count if s.has_null_count else 0) > 0:
                return None, None  # values without statistics
            continue
        chunk_low = _stat_value(t, column, s.min_raw, upper=False)
        chunk_high = _stat_value(t, column, s.max_raw, upper=True)
        low_known = low_known and chunk_low is not None
        high_known = high_known and chunk_high is not None
        if chunk_low is not None and (low is None or key(chunk_low) < key(low)):
            low = chunk_low
        if chunk_high is not None and (high is None or key(chunk_high) > key(high)):
            high = chunk_high
    return (low if low_known else None), (high if high_known else None)


_UNIT_MICROS = {"milliseconds": 1000, "microseconds": 1}


def _stat_value(t: PrimitiveType, column: Any, raw: Any, upper: bool) -> Any | None:
    """A Parquet statistic as a valid Python value of ``t``, or None if it is not one."""
    try:
        value = _convert_stat(t, column, raw, upper)
        if value is not None:
            check_value(t, value)
    except (KeyError, TypeError, ValueError):  # ValidationError is a ValueError
        return None
    return value


def _convert_stat(t: PrimitiveType, column: Any, raw: Any, upper: bool) -> Any | None:
    """A Parquet statistic (physical value) as a Python value of ``t``."""
    physical = column.physical_type
    match t.type_id:
        case TypeId.BOOLEAN:
            return bool(raw)
        case TypeId.INT | TypeId.LONG | TypeId.DATE if physical in ("INT32", "INT64"):
            return int(raw)
        case TypeId.FLOAT | TypeId.DOUBLE:
            value = float(raw)
            return None if math.isnan(value) else value
        case TypeId.DECIMAL if column.scale == t.scale:
            unscaled = (int(raw) if physical in ("INT32", "INT64")
                        else int.from_bytes(bytes(raw), "big", signed=True))
            return Decimal(f"{unscaled}E{-t.scale}")
        case TypeId.TIME | TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ if physical != "INT96":
            unit = json.loads(column.logical_type.to_json()).get("timeUnit", "")
            if unit == "nanoseconds":
                micros, rest = divmod(int(raw), 1000)
                return micros + 1 if upper and rest else micros
            return int(raw) * _UNIT_MICROS[unit]
        case TypeId.TIMESTAMP_NS | TypeId.TIMESTAMPTZ_NS if physical == "INT64":
            unit = json.loads(column.logical_type.to_json()).get("timeUnit", "")
            return int(raw) * (1 if unit == "nanoseconds" else 1000 * _UNIT_MICROS[unit])
        case TypeId.STRING:
            return raw if isinstance(raw, str) else bytes(raw).decode()
        case TypeId.UUID:
            return uuid.UUID(bytes=bytes(raw))
        case TypeId.FIXED | TypeId.BINARY:
            return bytes(raw)
        case _:
            return None
