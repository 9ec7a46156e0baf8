"""``geometry`` and ``geography`` in Spark: its spatial types where they fit, WKB binary elsewhere.

Spec, *Primitive Types* (v3): ``geometry(C)`` and ``geography(C, A)`` are "Geospatial features
from OGC -- Simple feature access", "If not specified, C is ``OGC:CRS84``" and "A is
``spherical``"; Appendix A stores them as "``binary``" with the logical types ``GEOMETRY`` and
``GEOGRAPHY``, "WKB format". Measured on PySpark 4.3 (``spark.sql.geospatial.enabled``, on by
default):

* ``GeometryType(srid)`` exists for three spatial reference systems only -- SRID 0
  (``SRID:0``), 3857 (``EPSG:3857``) and 4326 (``OGC:CRS84``) -- and ``GeographyType`` for 4326
  with spherical edges only (``geography(OGC:CRS84, SPHERICAL)``); any other SRID is
  ``ST_INVALID_SRID_VALUE``.
* Spark's Parquet reader reads a ``GEOMETRY``, ``GEOGRAPHY`` or plain ``binary`` column (by
  field ID, vectorized and not) as whichever of those types or ``BinaryType`` the read schema
  says, without looking at the file's CRS; only schema inference rejects a CRS it does not
  know (``srid:3857``, as pyarrow writes it).
* Its Parquet writer writes ``GeometryType(4326)`` as ``binary`` ``GEOMETRY(crs=OGC:CRS84)``
  (``EPSG:3857``, ``SRID:0`` for the others) and ``GeographyType(4326)`` as
  ``GEOGRAPHY(crs=OGC:CRS84, algorithm=spherical)``, with the field ID; for geometry it also
  writes the footer's geospatial statistics (the bounding box), none for geography.
* ``CAST`` from binary is not allowed; ``ST_GeomFromWKB(b, srid)``/``ST_GeogFromWKB(b)``
  convert WKB, failing the job (``WKB_PARSE_ERROR``) on bytes that are not WKB.
* Python workers see both as ``struct<srid: int32, wkb: binary>``.

So a column's Spark type is :func:`spark_type`: ``GeometryType``/``GeographyType`` where its CRS
(and edges) is one Spark has, else ``BinaryType`` holding the WKB. Writes take either form
(WKB is converted, and a spatial type must have the column's SRID, see :func:`check_given`).
Spark's own writer writes the columns whose CRS is the default ``OGC:CRS84``
(:func:`native_writable`: its annotation then names the column's own CRS); the others, and
every ``BinaryType`` one, go through icepark's Parquet writer, which annotates the Iceberg
CRS as it is. Bounds come from the footers either way (spec, *Bounds for Variant, Geometry,
and Geography*: geometry's bounding box from the geospatial statistics, no bounds for
geography).

>>> from icepark.spec.types import GEOGRAPHY, GEOMETRY, parse_primitive
>>> spark_type(GEOMETRY), spark_type(parse_primitive("geometry(srid:3857)"))
(GeometryType(4326), GeometryType(3857))
>>> spark_type(GEOGRAPHY), spark_type(parse_primitive("geography(OGC:CRS84, karney)"))
(GeographyType(4326), None)
>>> spark_type(parse_primitive("geometry(srid:4269)")) is None
True
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import IllegalArgumentException
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import IncompatibleColumn, UnsupportedFeature
from icepark.spec.types import DEFAULT_CRS, PrimitiveType, TypeId

GEO_TYPES = frozenset({TypeId.GEOMETRY, TypeId.GEOGRAPHY})
SPARK_TYPES = (T.GeometryType, T.GeographyType)
_CRS84_SRID = 4326


def _srid(crs: str) -> int | None:
    """The SRID of an Iceberg CRS: 4326 for ``OGC:CRS84``, N for ``srid:N``, else None."""
    if crs == DEFAULT_CRS:
        return _CRS84_SRID
    kind, _, identifier = crs.partition(":")
    if kind.lower() == "srid" and identifier.isdigit():
        return int(identifier)
    return None


def spark_type(t: PrimitiveType) -> T.DataType | None:
    """Spark's type of a geometry or geography column, or None when Spark has none for its
    CRS (and edges): then the column is ``BinaryType`` WKB."""
    srid = _srid(t.crs)
    if srid is None:
        return None
    if t.type_id is TypeId.GEOGRAPHY:
        spherical = t.edge_algorithm == "spherical"
        return T.GeographyType(srid) if spherical and srid == _CRS84_SRID else None
    try:
        return T.GeometryType(srid)
    except IllegalArgumentException:  # an SRID Spark does not have
        return None


def native_writable(t: PrimitiveType) -> bool:
    """Whether Spark's own Parquet writer writes ``t`` as Appendix A wants it, with the
    column's CRS: only for the default ``OGC:CRS84`` (Spark names the others its own way)."""
    return spark_type(t) is not None and t.crs == DEFAULT_CRS


def iceberg_type(data_type: T.DataType, name: str) -> PrimitiveType:
    """The Iceberg type of a Spark ``GeometryType``/``GeographyType`` column ``name`` (a
    DataFrame's, to create a table from)."""
    srid = getattr(data_type, "srid", None)
    if srid is None or srid < 0:
        raise UnsupportedFeature(
            f"Cannot convert column {name!r} of Spark type {data_type.simpleString()}: an "
            "Iceberg geometry or geography has one CRS; set one with ST_SetSRID")
    kind = TypeId.GEOGRAPHY if isinstance(data_type, T.GeographyType) else TypeId.GEOMETRY
    if srid == _CRS84_SRID:
        return PrimitiveType(kind)
    return PrimitiveType(kind, arguments=f"srid:{srid}")


def check_given(given: T.DataType, t: PrimitiveType, path: str) -> None:
    """Raise :class:`~icepark.errors.IncompatibleColumn` if a written Spark type cannot be
    written to ``t``: a spatial type of another kind or SRID (a mixed-SRID ``ANY`` one too),
    whose values would land in a column of another CRS. ``BinaryType`` WKB always can."""
    if not isinstance(given, SPARK_TYPES):
        return
    wanted = spark_type(t)
    if given != wanted:
        target = wanted.simpleString() if wanted is not None else "binary (WKB)"
        raise IncompatibleColumn(
            f"Column {path!r} is {given.simpleString()} in the data, which cannot be written "
            f"to the table's {t} column: write {target}, or WKB as binary",
            path, given.simpleString(), str(t))


def from_wkb(col: Column, target: T.DataType) -> Column:
    """``BinaryType`` WKB as Spark's spatial ``target`` type (bytes that are not WKB fail the
    job: ``WKB_PARSE_ERROR``)."""
    if isinstance(target, T.GeographyType):
        return F.call_function("ST_GeogFromWKB", col)
    assert isinstance(target, T.GeometryType)
    return F.call_function("ST_GeomFromWKB", col, F.lit(target.srid))


def spark_arrow(arr: Any, target: Any) -> Any:
    """A WKB column (``geoarrow.wkb`` or binary) in Spark's Arrow form ``target``: the binary
    itself, or ``struct<srid, wkb>`` with the target's SRID (from its field metadata)."""
    storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
    wkb = storage if storage.type == pa.binary() else storage.cast(pa.binary())
    if not pa.types.is_struct(target):
        return wkb if wkb.type == target else wkb.cast(target)
    srid_field, wkb_field = target.field("srid"), target.field("wkb")
    srid = int((wkb_field.metadata or {}).get(b"srid", _CRS84_SRID))
    mask = wkb.is_null() if wkb.null_count else None
    children = [pa.array([srid] * len(wkb), srid_field.type),
                pc.fill_null(wkb, b"") if mask is not None else wkb]
    ordered = [children[0] if target.field(i).name == "srid" else children[1]
               for i in range(target.num_fields)]
    return pa.StructArray.from_arrays(ordered, fields=list(target), mask=mask)


__all__ = ["GEO_TYPES", "SPARK_TYPES", "check_given", "from_wkb", "iceberg_type",
           "native_writable", "spark_arrow", "spark_type"]
