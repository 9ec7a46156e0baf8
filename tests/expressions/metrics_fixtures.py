"""Data files and manifest summaries with metrics computed from lists of values, as a writer
would: counts, NaN counts, bounds (optionally truncated strings and binary), some dropped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from icepark.spec.bounds import lower_bound, to_bytes, upper_bound
from icepark.spec.manifest import DataFile, FieldSummary, FileFormat
from icepark.spec.types import PrimitiveType, TypeId

_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def truncate_upper(value: Any, length: int) -> Any | None:
    """A valid upper bound of at most ``length`` characters (or bytes): the prefix with its
    last incrementable unit incremented, or None when there is none."""
    if len(value) <= length:
        return value
    if isinstance(value, str):
        chars = list(value[:length])
        while chars:
            code = ord(chars[-1]) + 1
            if code == 0xD800:
                code = 0xE000  # skip surrogates
            if code <= 0x10FFFF:
                chars[-1] = chr(code)
                return "".join(chars)
            chars.pop()
        return None
    data = bytearray(value[:length])
    while data:
        if data[-1] < 0xFF:
            data[-1] += 1
            return bytes(data)
        data.pop()
    return None


def column_metrics(t: PrimitiveType, values: Sequence[Any],
                   truncate: int | None = None) -> dict[str, Any]:
    """value/null/NaN counts and encoded bounds of one column's values."""
    low, high = lower_bound(t, values), upper_bound(t, values)
    if truncate is not None and t.type_id in (TypeId.STRING, TypeId.BINARY):
        low = None if low is None else low[:truncate]
        high = None if high is None else truncate_upper(high, truncate)
    return {
        "values": len(values),
        "nulls": sum(v is None for v in values),
        "nans": sum(map(is_nan, values)) if t.type_id in _FLOATS else None,
        "lower": None if low is None else to_bytes(t, low),
        "upper": None if high is None else to_bytes(t, high),
    }


def data_file(types: Sequence[PrimitiveType], rows: Sequence[tuple[Any, ...]],
              truncate: int | None = None, dropped: frozenset[str] = frozenset()) -> DataFile:
    """A data file holding ``rows`` (columns have IDs 1, 2, ...); metric kinds named in
    ``dropped`` ('values', 'nulls', 'nans', 'lower', 'upper', or '<kind>:<id>') are left out."""
    maps: dict[str, dict[int, Any]] = {k: {} for k in ("values", "nulls", "nans", "lower",
                                                        "upper")}
    for i, t in enumerate(types):
        metrics = column_metrics(t, [row[i] for row in rows], truncate)
        for kind, value in metrics.items():
            if value is not None and f"{kind}:{i + 1}" not in dropped:
                maps[kind][i + 1] = value

    def kept(kind: str) -> dict[int, Any] | None:
        return None if kind in dropped else maps[kind]

    return DataFile("file.parquet", FileFormat.PARQUET, (), len(rows), 1,
                    value_counts=kept("values"), null_value_counts=kept("nulls"),
                    nan_value_counts=kept("nans"), lower_bounds=kept("lower"),
                    upper_bounds=kept("upper"))


def field_summary(t: PrimitiveType, values: Sequence[Any],
                  nan_known: bool = True) -> FieldSummary:
    """The manifest list's summary of one partition field over partition values."""
    metrics = column_metrics(t, values)
    contains_nan = any(map(is_nan, values)) if nan_known else None
    return FieldSummary(metrics["nulls"] > 0, contains_nan, metrics["lower"], metrics["upper"])
