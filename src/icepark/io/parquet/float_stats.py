"""Exact float and double statistics of a Parquet file's rows: NaN counts and bounds.

Spec, *Manifests*: ``nan_value_counts`` is the "map from column id to number of NaN values in
the column", and "For ``float`` and ``double``, the value ``-0.0`` must precede ``+0.0``, as in
the IEEE 754 ``totalOrder`` predicate. NaNs are not permitted as lower or upper bounds."
Parquet statistics leave NaN out and widen zero bounds to ``-0.0``/``+0.0``, so these come from
the data: :class:`FloatCollector` while writing, :func:`read_float_stats` for a file written by
another writer (Spark's). :mod:`icepark.io.parquet.metrics` uses them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.io.arrow.parquet_file import decoded_batches, open_parquet
from icepark.io.arrow.schema import FIELD_ID_KEY
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


@dataclass(slots=True)
class _FloatStats:
    nan_count: int = 0
    lower: float | None = None
    upper: float | None = None


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
        key = sort_key(t)
        if stats.lower is None or key(low) < key(stats.lower):
            stats.lower = low
        if stats.upper is None or key(high) > key(stats.upper):
            stats.upper = high

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


def read_float_stats(source: Any, schema: Schema, metadata: Any | None = None, *,
                     location: str | None = None) -> FloatCollector | None:
    """NaN counts and exact float/double bounds of a written Parquet file (an open file or a
    path), for a writer whose rows icepark never saw (Spark's own Parquet writer): the
    top-level columns holding a float or double are read back, matched to ``schema`` by field
    ID (``metadata``: the footer, if already read). None when the schema has no such column.

    Spec, *Manifests*: ``nan_value_counts`` is the "map from column id to number of NaN values
    in the column", and "NaNs are not permitted as lower or upper bounds": Parquet statistics
    cannot give the first and need not exclude NaN (Spark's writer may leave a NaN maximum).
    A file that does not decode is :class:`~icepark.errors.CorruptFile` naming ``location``
    (by default ``source`` when it is a path).
    """
    paths = frozenset(_float_paths(schema.as_struct()))
    wanted = {f.field_id: f.name for f in schema.fields if f.field_id in paths}
    if not wanted:
        return None
    where = location or (source if isinstance(source, str) else "<unnamed Parquet file>")
    parquet = open_parquet(source, where, metadata=metadata)
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
    for batch in decoded_batches(parquet.iter_batches(columns=columns), where):
        collector.update(pa.RecordBatch.from_arrays(batch.columns, names=names))
    return collector
