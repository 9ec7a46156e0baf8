"""The schemas a table can be created from: an icepark ``Schema``, a ``pyarrow.Schema`` or a
Spark ``StructType``.

Spec, *Schemas*: "A schema is a list of named columns. All data types are either primitives or
nested types"; every field carries "a unique field ID". Arrow and Spark schemas usually carry
none, so a new table's columns get fresh IDs from 1 (struct fields before their children, as
the reference implementation and pyiceberg assign them). A schema whose fields already carry
IDs (``PARQUET:field_id`` on Arrow fields, ``parquet.field.id`` on Spark fields, or an icepark
``Schema``) keeps them only with ``keep_field_ids=True``.

Spark's ``StructType`` is converted by :mod:`icepark.spark.schema`, which registers itself here
(:func:`register`) when imported: this layer never imports pyspark. A pyspark object reaching
:func:`to_schema` before that loads it by name.

>>> import pyarrow as pa
>>> print(to_schema(pa.schema([pa.field("id", pa.int64(), nullable=False)])))
table {
  1: id: required long
}
>>> to_schema({"id": "long"})
Traceback (most recent call last):
...
icepark.errors.ValidationError: A table schema must be an icepark Schema, a pyarrow.Schema or \
a pyspark StructType, not dict
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from icepark.errors import ValidationError
from icepark.io.arrow.schema import FIELD_ID_KEY, from_arrow_schema, infer_schema
from icepark.spec.schema import Schema

SchemaLike = Any
"""An icepark :class:`~icepark.spec.schema.Schema`, a ``pyarrow.Schema`` or a Spark
``StructType``."""

Converter = Callable[[Any, bool], Schema]
_CONVERTERS: dict[type, Converter] = {}
_SPARK_MODULE = "icepark.spark.schema"  # registers the StructType converter on import


def register(schema_type: type, converter: Converter) -> None:
    """Convert schemas of ``schema_type`` with ``converter(schema, keep_field_ids)``."""
    _CONVERTERS[schema_type] = converter


def to_schema(schema: SchemaLike, keep_field_ids: bool = False,
              format_version: int = 2) -> Schema:
    """The Iceberg schema of ``schema``, with fresh field IDs unless ``keep_field_ids``.

    An icepark ``Schema`` is returned as it is (a new table renumbers it unless asked not to);
    an Arrow or Spark schema asked to keep its IDs must carry one on every field. Arrow's
    nanosecond timestamps, null, variant and WKB columns become the v3 types in a table of
    ``format_version`` 3.
    """
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, pa.Schema):
        return _from_arrow(schema, keep_field_ids, format_version)
    converter = _converter(type(schema))
    if converter is None:
        raise ValidationError("A table schema must be an icepark Schema, a pyarrow.Schema or a "
                              f"pyspark StructType, not {type(schema).__name__}")
    return converter(schema, keep_field_ids)


def _from_arrow(schema: pa.Schema, keep_field_ids: bool, format_version: int) -> Schema:
    if not keep_field_ids:
        return infer_schema(schema, format_version=format_version)
    if not any((f.metadata or {}).get(FIELD_ID_KEY) for f in schema):
        raise ValidationError("keep_field_ids=True, but the Arrow schema carries no field IDs "
                              f"({FIELD_ID_KEY.decode()} metadata); leave it False to assign "
                              "fresh IDs")
    return from_arrow_schema(schema, format_version=format_version)


def _converter(schema_type: type) -> Converter | None:
    for known, converter in _CONVERTERS.items():
        if issubclass(schema_type, known):
            return converter
    if schema_type.__module__.startswith("pyspark.") and _SPARK_MODULE not in sys.modules:
        importlib.import_module(_SPARK_MODULE)
        return _converter(schema_type)
    return None

