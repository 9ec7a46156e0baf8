"""Metadata tables as Spark DataFrames.

The tables are computed on the driver by :mod:`icepark.table.inspect.tables` (metadata and manifests
are small next to the data) and handed to Spark as Arrow: ``spark.createDataFrame(arrow)``.
Spark types follow the Arrow ones: ``timestamptz`` columns become ``TimestampType``, maps
``MapType``, structs ``StructType`` (``partition``, ``readable_metrics``, ``data_file``).

Two adjustments make every table convertible: extension types (``uuid`` bounds in
``readable_metrics``) become their storage type (``fixed[16]``, Spark ``BinaryType``), which
Spark's Arrow conversion does not support otherwise; and the table is handed over as one chunk,
because PySpark's ``createDataFrame`` stops at the first empty record batch.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from icepark.table.inspect import tables as inspect
from icepark.table.table import Table


def metadata_table(spark: SparkSession, table: Table, name: str,
                   snapshot_id: int | None = None) -> DataFrame:
    """The metadata table ``name`` of ``table`` (see
    :func:`icepark.table.inspect.tables.metadata_table`)
    as a DataFrame; ``snapshot_id`` selects the snapshot of the snapshot-level tables."""
    arrow = inspect.metadata_table(table, name, snapshot_id)
    return spark.createDataFrame(spark_compatible(arrow))


def spark_compatible(arrow: Any) -> Any:
    """``arrow`` as one chunk, with extension types replaced by their storage types.

    >>> import pyarrow as pa
    >>> t = pa.table({"u": pa.array([bytes(16)], pa.uuid()), "n": [1]})
    >>> spark_compatible(t).schema.field("u").type
    FixedSizeBinaryType(fixed_size_binary[16])
    """
    schema = pa.schema([_field(f) for f in arrow.schema], metadata=arrow.schema.metadata)
    if not schema.equals(arrow.schema):
        arrow = arrow.cast(schema)
    return arrow.combine_chunks()


def _field(f: Any) -> Any:
    return f.with_type(_storage(f.type))


def _storage(t: Any) -> Any:
    if isinstance(t, pa.BaseExtensionType):
        return _storage(t.storage_type)
    if pa.types.is_struct(t):
        return pa.struct([_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_field(t.key_field), _field(t.item_field))
    if pa.types.is_list(t):
        return pa.list_(_field(t.value_field))
    return t
