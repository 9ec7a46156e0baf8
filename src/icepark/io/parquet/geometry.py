"""Bounds of geometry columns from the geospatial statistics of a Parquet footer.

Spec, *Bounds for Variant, Geometry, and Geography*: "For ``geometry`` and ``geography`` types,
``lower_bounds`` and ``upper_bounds`` are both points of the following coordinates X, Y, Z, and
M ... which are the lower / upper bound of all objects in the file." "null or NaN values in a
coordinate dimension are skipped ... If a dimension has only null or NaN values, that dimension
is omitted from the bounding box. If either the X or Y dimension is missing then the bounding
box itself is not produced."

Parquet's ``GEOMETRY`` column chunks carry the same box (``GeospatialStatistics``: a bounding
box with the same NaN rule, and the WKB geometry type codes seen), which pyarrow computes while
writing and exposes as ``ColumnChunkMetaData.geo_statistics``; it parses ISO WKB of every
geometry type (points to collections, XY, XYZ, XYM, XYZM, either byte order). The file's box
is the union of its row groups' boxes. Bounds are left out (always allowed: bounds are
optional) whenever a row group's box cannot be trusted to cover its values: no statistics for a
row group with values (pyarrow gives none for WKB it cannot parse, e.g. EWKB with an SRID),
geometries whose X or Y was not bounded, or a box with xmin > xmax.

``geography`` gets no bounds: pyarrow computes no statistics for it, and a correct box on the
sphere (edges bulging poleward, boxes that cross the antimeridian, where "xmin ... may be
greater than xmax") is not something to approximate.

>>> bounds([])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from icepark.spec.bounds import GeoPoint


def _box(stats: Any) -> tuple[tuple[float, float] | None, ...] | None:
    """One row group's (x, y, z, m) ranges; None if it has no usable box, () if it holds no
    geometry (only nulls)."""
    if stats is None:
        return None
    summary = stats.to_dict()
    if not summary.get("geospatial_types"):
        return ()
    ranges = []
    for axis in "xyzm":
        low, high = summary.get(f"{axis}min"), summary.get(f"{axis}max")
        valid = low is not None and high is not None and not (math.isnan(low)
                                                              or math.isnan(high))
        ranges.append((float(low), float(high)) if valid else None)
    if ranges[0] is None or ranges[1] is None or ranges[0][0] > ranges[0][1]:
        return None
    return tuple(ranges)


def bounds(chunks: Sequence[Any]) -> tuple[GeoPoint, GeoPoint] | None:
    """The lower and upper bound points of a geometry column from its column chunks
    (``pyarrow.parquet.ColumnChunkMetaData``, one per row group), or None."""
    merged: list[tuple[float, float] | None] = [None] * 4
    seen = False
    for chunk in chunks:
        if chunk.num_values == 0:
            continue
        box = _box(chunk.geo_statistics if chunk.is_geo_stats_set else None)
        if box is None:
            return None
        for axis, found in enumerate(box):
            if found is not None:
                current = merged[axis]
                merged[axis] = found if current is None else (min(current[0], found[0]),
                                                              max(current[1], found[1]))
        seen = seen or bool(box)
    x, y, z, m = merged
    if not seen or x is None or y is None:
        return None
    return (GeoPoint(x[0], y[0], None if z is None else z[0], None if m is None else m[0]),
            GeoPoint(x[1], y[1], None if z is None else z[1], None if m is None else m[1]))
