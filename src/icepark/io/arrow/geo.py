"""geometry and geography as Arrow: WKB in GeoArrow's ``geoarrow.wkb`` extension type.

Spec, Appendix A, *Parquet*: ``geometry`` and ``geography`` are "``binary``" with the logical
types "``GEOMETRY``" and "``GEOGRAPHY``", "WKB format". pyarrow (21 and later) writes those
logical types for a column whose Arrow type is the ``geoarrow.wkb`` extension, taking the CRS
and the edge interpolation from the extension's JSON metadata: no ``edges`` (or ``planar``)
makes ``GEOMETRY(crs)``, ``"edges": "spherical"`` (or another algorithm) makes
``GEOGRAPHY(crs, algorithm)``, and the CRS ``OGC:CRS84`` is Parquet's default (written as no
CRS). So :class:`WkbType` carries the Iceberg type's ``C`` and ``A`` as GeoArrow metadata; the
Iceberg forms ``srid:<id>`` and ``projjson:<property>`` are Parquet's own conventions, passed
through as they are.

The type is not registered with pyarrow (a user's ``geoarrow-pyarrow`` may own the name), so a
file read back shows its WKB as ``binary`` (or as whichever ``geoarrow.wkb`` class is
registered); the reader wraps the bytes in the table's :class:`WkbType` again.

>>> from icepark.spec.types import parse_primitive
>>> t = arrow_type(parse_primitive("geography(srid:4269, karney)"))
>>> t.extension_name, t.__arrow_ext_serialize__()
('geoarrow.wkb', b'{"crs": "srid:4269", "edges": "karney"}')
>>> str(iceberg_type(t))
'geography(srid:4269, karney)'
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.types import DEFAULT_CRS, EDGE_ALGORITHMS, PrimitiveType, TypeId

EXTENSION_NAME = "geoarrow.wkb"


class WkbType(pa.ExtensionType):  # type: ignore[misc] # pyarrow's classes are untyped
    """GeoArrow's ``geoarrow.wkb``: ISO WKB in ``binary``, with its CRS and edges as JSON."""

    def __init__(self, metadata: bytes = b"{}") -> None:
        self._metadata = metadata
        super().__init__(pa.binary(), EXTENSION_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return self._metadata

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> WkbType:
        return WkbType(serialized)

    def __reduce__(self) -> tuple[type[WkbType], tuple[bytes]]:
        return WkbType, (self._metadata,)


def arrow_type(t: PrimitiveType) -> WkbType:
    """The :class:`WkbType` of ``geometry(C)`` or ``geography(C, A)``."""
    metadata: dict[str, str] = {"crs": t.crs}
    if t.type_id is TypeId.GEOGRAPHY:
        metadata["edges"] = t.edge_algorithm
    return WkbType(json.dumps(metadata).encode())


def is_wkb(arrow_type: Any) -> bool:
    """Whether ``arrow_type`` is a ``geoarrow.wkb`` extension type (of any class)."""
    return isinstance(arrow_type, pa.BaseExtensionType) and \
        arrow_type.extension_name == EXTENSION_NAME


def iceberg_type(arrow_type: Any, where: str = "") -> PrimitiveType:
    """The Iceberg geometry or geography of a ``geoarrow.wkb`` type, from its metadata.

    A PROJJSON object as CRS cannot be an Iceberg type argument (Iceberg keeps PROJJSON in a
    table property and names it ``projjson:<property>``): :class:`UnsupportedFeature`.
    """
    raw = arrow_type.__arrow_ext_serialize__() if hasattr(
        arrow_type, "__arrow_ext_serialize__") else b""
    try:
        metadata = json.loads(raw or b"{}")
    except ValueError:
        raise ValidationError(f"Arrow field {where!r} has invalid geoarrow.wkb metadata "
                              f"{raw!r}") from None
    crs = metadata.get("crs")
    if isinstance(crs, dict):
        raise UnsupportedFeature(f"Arrow field {where!r} has a PROJJSON CRS: Iceberg names "
                                 "one as projjson:<table property>; give the column's type")
    crs_text = DEFAULT_CRS if crs in (None, "", DEFAULT_CRS) else str(crs)
    if metadata.get("crs_type") == "srid" and not crs_text.startswith("srid:"):
        crs_text = f"srid:{crs_text}"
    edges = str(metadata.get("edges") or "planar").lower()
    if edges == "planar":
        return PrimitiveType(TypeId.GEOMETRY,
                             arguments="" if crs_text == DEFAULT_CRS else crs_text)
    if edges not in EDGE_ALGORITHMS:
        raise ValidationError(f"Arrow field {where!r} has unknown geoarrow edges {edges!r}")
    default = crs_text == DEFAULT_CRS and edges == "spherical"
    return PrimitiveType(TypeId.GEOGRAPHY, arguments="" if default else f"{crs_text}, {edges}")


def is_spark_struct(arrow_type: Any) -> bool:
    """Whether ``arrow_type`` is PySpark's Arrow form of its ``GeometryType`` or
    ``GeographyType``: ``struct<srid: int32, wkb: binary>``."""
    return bool(pa.types.is_struct(arrow_type)) and arrow_type.get_field_index("wkb") >= 0 \
        and sorted(arrow_type.names) == ["srid", "wkb"]


def wkb_array(arr: Any, target: WkbType) -> Any:
    """``arr`` (binary of any width or offset size, any ``geoarrow.wkb``, or PySpark's
    ``struct<srid, wkb>``, whose SRID the column's type stands for) as ``target``."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_struct(arr.type):
        arr = arr.flatten()[arr.type.get_field_index("wkb")]
    if arr.type != pa.binary():
        arr = arr.cast(pa.binary())
    return pa.ExtensionArray.from_storage(target, arr)
