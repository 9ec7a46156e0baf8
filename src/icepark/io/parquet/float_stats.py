"""Exact float and double statistics of a Parquet file's rows: NaN counts and bounds.

Spec, *Manifests*: ``nan_value_counts`` is the "map from column id to number of NaN values in
the column", and "For ``float`` and ``double``, the value ``-0.0`` must precede ``+0.0``, as in
the IEEE 754 ``totalOrder`` predicate. NaNs are not permitted as lower or upper bounds."
Parquet statistics leave NaN out and widen zero bounds to ``-0.0``/``+0.0``, so these come from
the data: :class:`FloatCollector` while writing, :func:`read_float_stats` for a file written by
another writer (Spark's). :mod:`icepark.io.parquet.metrics` uses them.

One writer's footer tells them without the data (:func:`footer_float_stats`): parquet-mr
(parquet-java) since 1.10 orders a float or double column's statistics by the column order
``TYPE_DEFINED_ORDER`` with Java's ``Float.compare``/``Double.compare`` (``-0.0`` before
``+0.0``, every NaN after ``+Infinity``), so a row group with a NaN has a NaN maximum, and one
whose minimum and maximum are numbers has none and gives exact bounds. (Its other order,
``IEEE_754_TOTAL_ORDER``, which leaves NaN out, is chosen on the column's Parquet type; Spark's
schema converter never chooses it. A test writes NaN, ``-0.0`` and ``+0.0`` with this Spark.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.io.arrow.parquet_file import decoded_batches, open_parquet
from icepark.io.arrow.schema import FIELD_ID_KEY, leaf_field_ids
from icepark.spec.bounds import sort_key
from icepark.spec.schema import Schema
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
    child_fields,
)

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_PHYSICAL = {TypeId.FLOAT: "FLOAT", TypeId.DOUBLE: "DOUBLE"}
_PARQUET_MR = re.compile(r"parquet-mr version (\d+)\.(\d+)\.")
NAN_LAST_SINCE = (1, 10)
"""The first parquet-mr whose float statistics put NaN last (``Double.compare``), PARQUET-1025."""


@dataclass(slots=True)
class _FloatStats:
    nan_count: int = 0
    lower: float | None = None
    upper: float | None = None

    def merge(self, low: float, high: float, t: PrimitiveType) -> None:
        """Widen the bounds to ``low`` and ``high`` (numbers) by the spec's order."""
        key = sort_key(t)
        if self.lower is None or key(low) < key(self.lower):
            self.lower = low
        if self.upper is None or key(high) > key(self.upper):
            self.upper = high


class FloatCollector:
    """NaN counts and exact bounds of the float and double columns, from the rows written.

    Every float/double leaf gets a NaN count; leaves outside lists and maps also get bounds
    that skip nulls and NaN and order ``-0.0`` before ``+0.0``. Feed it the batches of one
    file (already conformed to ``schema``) with :meth:`update`.
    """

    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._stats: dict[int, _FloatStats] = {}
        self._paths = frozenset(_float_paths(schema.as_struct()))

    def update(self, batch: Any) -> None:
        for f in self._schema.fields:
            if f.field_id in self._paths:
                self._visit(batch.column(f.name), f, in_collection=False)

    def _visit(self, arr: Any, f: NestedField, in_collection: bool) -> None:
        t = f.field_type
        match t:
            case StructType():
                children = arr.flatten()  # merges the struct's own nulls into its children
                for i, child in enumerate(t.fields):
                    if child.field_id in self._paths:
                        self._visit(children[i], child, in_collection)
            case ListType():
                self._visit(arr.flatten(), t.element_field, True)
            case MapType():
                entries = arr.view(pa.list_(pa.field("entries", pa.struct(
                    [arr.type.key_field, arr.type.item_field]), nullable=False))).flatten()
                for position, child in enumerate((t.key_field, t.value_field)):
                    if child.field_id in self._paths:
                        self._visit(entries.field(position), child, True)
            case PrimitiveType():
                self._update_leaf(arr, f.field_id, t, in_collection)

    def _update_leaf(self, arr: Any, field_id: int, t: PrimitiveType,
                     in_collection: bool) -> None:
        stats = self._stats.setdefault(field_id, _FloatStats())
        nans = pc.is_nan(arr)
        stats.nan_count += int(pc.sum(nans).as_py() or 0)
        if in_collection:
            return
        values = arr.filter(pc.invert(nans))  # a null mask drops the nulls too
        if len(values) == 0:
            return
        minmax = pc.min_max(values)
        low, high = minmax["min"].as_py(), minmax["max"].as_py()
        bits = values.view(pa.int32() if t.type_id is TypeId.FLOAT else pa.int64())
        sign_bit = -(2 ** (_bit_width(t) - 1))
        if low == 0.0:  # min_max does not tell -0.0 from +0.0
            low = -0.0 if pc.any(pc.equal(bits, sign_bit)).as_py() else 0.0
        if high == 0.0:
            high = 0.0 if pc.any(pc.equal(bits, 0)).as_py() else -0.0
        stats.merge(low, high, t)

    def add_numbers(self, field_id: int, t: PrimitiveType,
                    bounds: tuple[float, float] | None) -> None:
        """Note values of leaf ``field_id`` that hold no NaN, with their least and greatest
        (e.g. a row group's statistics), or none but nulls (``bounds`` None)."""
        stats = self._stats.setdefault(field_id, _FloatStats())
        if bounds is not None:
            stats.merge(*bounds, t)

    @property
    def nan_counts(self) -> dict[int, int]:
        return {fid: s.nan_count for fid, s in self._stats.items()}

    def bounds(self, field_id: int) -> tuple[float | None, float | None]:
        stats = self._stats.get(field_id)
        return (None, None) if stats is None else (stats.lower, stats.upper)


def _bit_width(t: PrimitiveType) -> int:
    return 32 if t.type_id is TypeId.FLOAT else 64


def _float_paths(t: IcebergType) -> Iterator[int]:
    """IDs of float/double leaves and of every field that contains one."""
    for f in child_fields(t):
        below = list(_float_paths(f.field_type))
        if below or (isinstance(f.field_type, PrimitiveType) and f.field_type.type_id in _FLOATS):
            yield f.field_id
            yield from below


def _top_level_floats(schema: Schema) -> dict[int, str]:
    """The top-level fields holding a float or double: ID -> name."""
    paths = frozenset(_float_paths(schema.as_struct()))
    return {f.field_id: f.name for f in schema.fields if f.field_id in paths}


def read_float_stats(source: Any, schema: Schema, metadata: Any | None = None, *,
                     location: str | None = None) -> FloatCollector | None:
    """NaN counts and exact float/double bounds of a written Parquet file (an open file or a
    path), for a writer whose rows icepark never saw (Spark's own Parquet writer): from the
    footer when it tells them (:func:`footer_float_stats`), otherwise the top-level columns
    holding a float or double are read back, matched to ``schema`` by field ID (``metadata``:
    the footer, if already read). None when the schema has no such column.

    Spec, *Manifests*: ``nan_value_counts`` is the "map from column id to number of NaN values
    in the column", and "NaNs are not permitted as lower or upper bounds": Parquet statistics
    cannot give the first and need not exclude NaN (Spark's writer may leave a NaN maximum).
    A file that does not decode is :class:`~icepark.errors.CorruptFile` naming ``location``
    (by default ``source`` when it is a path).
    """
    if not _top_level_floats(schema):
        return None
    where = location or (source if isinstance(source, str) else "<unnamed Parquet file>")
    parquet = open_parquet(source, where, metadata=metadata)
    from_footer = footer_float_stats(parquet.metadata, schema)
    return read_back(parquet, schema, where) if from_footer is None else from_footer


def read_back(parquet: Any, schema: Schema, location: str) -> FloatCollector:
    """NaN counts and exact float/double bounds from the rows of ``parquet`` (an open
    ``pyarrow.parquet.ParquetFile``): its top-level columns holding a float or double, matched
    to ``schema`` by field ID, are read."""
    wanted = _top_level_floats(schema)
    columns: list[str] = []
    names: list[str] = []
    for f in parquet.schema_arrow:
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        name = wanted.get(int(raw)) if raw is not None else None
        if name is not None:
            columns.append(f.name)
            names.append(name)
    found = set(names)
    collector = FloatCollector(Schema.of(*(f for f in schema.fields if f.name in found)))
    if not columns:
        return collector
    for batch in decoded_batches(parquet.iter_batches(columns=columns), location):
        collector.update(pa.RecordBatch.from_arrays(batch.columns, names=names))
    return collector


def footer_float_stats(metadata: Any, schema: Schema) -> FloatCollector | None:
    """The NaN counts (none) and exact bounds of the file's float and double columns from its
    footer (``pyarrow.parquet.FileMetaData``), or None when the footer cannot tell them: a
    writer other than parquet-mr 1.10 or later, a row group with a NaN minimum or maximum
    (it has a NaN), or one without statistics that is not all nulls.

    Each leaf matched by field ID to a float or double of ``schema`` gets a NaN count of 0 and
    the least minimum and greatest maximum of its row groups by the spec's order (``-0.0``
    before ``+0.0``); row groups of nulls only add nothing.
    """
    written_by = _PARQUET_MR.match(metadata.created_by or "")
    if written_by is None or (int(written_by[1]), int(written_by[2])) < NAN_LAST_SINCE:
        return None
    collector = FloatCollector(schema)
    ids = leaf_field_ids(metadata.schema.to_arrow_schema())
    for column, field_id in enumerate(ids):
        f = schema.field_by_id(field_id) if field_id is not None else None
        if f is None or not isinstance(f.field_type, PrimitiveType) \
                or f.field_type.type_id not in _FLOATS:
            continue
        t = f.field_type
        collector.add_numbers(f.field_id, t, None)
        for group in range(metadata.num_row_groups):
            chunk = metadata.row_group(group).column(column)
            if chunk.physical_type != _PHYSICAL[t.type_id] or not chunk.is_stats_set:
                return None
            s = chunk.statistics
            if not s.has_min_max:
                if s.has_null_count and s.null_count == chunk.num_values:
                    continue  # nulls only
                return None
            low, high = float(s.min), float(s.max)
            if math.isnan(low) or math.isnan(high):
                return None
            collector.add_numbers(f.field_id, t, (low, high))
    return collector
