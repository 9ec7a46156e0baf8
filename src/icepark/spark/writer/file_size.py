"""Target file size on the native write path: records per file from an expected row size.

The table property ``write.target-file-size-bytes`` (default 512 MiB) bounds the size of the
data files a write produces. The Python-worker writer rolls to a new file when the bytes it has
written reach it (:class:`icepark.io.parquet.data_writer.DataFileWriter`). Spark's own Parquet
writer
cannot roll by bytes, only by rows (the ``maxRecordsPerFile`` write option), so the native path
(:mod:`icepark.spark.writer.native`) turns the target into a row count with an expected number
of bytes per row (:func:`expected_row_bytes`), best known first:

1. a hint from the caller (a copy-on-write delete knows the sizes and record counts of the
   files it rewrites);
2. the table's own data files: ``total-files-size / total-records`` of the head snapshot's
   summary when it counts no delete files (``total-delete-files`` is ``0``; their sizes
   would be in ``total-files-size``), else ``sum(file_size_in_bytes) / sum(record_count)``
   of the live data files of its manifests. These are compressed, encoded sizes including
   footers, the best predictor of files written with the same codec for the same columns;
3. for a table without data, the schema (:func:`schema_row_bytes`): every leaf at its
   uncompressed plain-encoded width (boolean 1 byte, int/float/date 4, long/double/time and
   timestamps 8, decimal 4, 8 or 16 by precision, uuid 16, fixed its length) and
   :data:`VARIABLE_WIDTH_BYTES` for a string or binary value. Compression and dictionary
   encoding only shrink fixed-width columns, so files come out at or below the target unless
   strings are much longer than assumed.

Measured sizes include each file's footer, so a table of small files predicts more bytes per
row than larger files take (``tests/spark/test_write_file_size.py``: after files of 6.6 KB,
the next write's files came out at 51 KB for a 64 KB target); the estimate converges as the
files approach the target, and the footer is negligible at the 512 MiB default.

``maxRecordsPerFile`` is ``target // row_bytes`` (at least 1). It bounds each file a Spark task
writes; a task whose rows for one partition are fewer still writes one smaller file.
"""

from __future__ import annotations

from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.reader import NO_STATS
from icepark.io.parquet.data_writer import ParquetWriteOptions
from icepark.spec.manifest import ManifestContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StructType,
    TypeId,
)

VARIABLE_WIDTH_BYTES = 64
"""The assumed size of one string or binary value when the table has no data files yet."""
COLLECTION_ELEMENTS = 4
"""The assumed number of elements of a list or map value, likewise."""
_WIDTHS = {
    TypeId.BOOLEAN: 1, TypeId.INT: 4, TypeId.FLOAT: 4, TypeId.DATE: 4, TypeId.LONG: 8,
    TypeId.DOUBLE: 8, TypeId.TIME: 8, TypeId.TIMESTAMP: 8, TypeId.TIMESTAMPTZ: 8,
    TypeId.UUID: 16,
}


def max_records_per_file(metadata: TableMetadata, file_io: FileIO,
                         snapshot: Snapshot | None, row_bytes: float | None = None) -> int:
    """Spark's ``maxRecordsPerFile`` for a native write to ``metadata`` on top of
    ``snapshot``: ``write.target-file-size-bytes`` over the expected bytes per row (see the
    module docstring; ``row_bytes`` is the caller's hint, used when positive)."""
    target = ParquetWriteOptions.from_properties(metadata.properties).target_file_bytes
    expected = row_bytes if row_bytes is not None and row_bytes > 0 else \
        expected_row_bytes(metadata, file_io, snapshot)
    return max(1, int(target // expected))


def expected_row_bytes(metadata: TableMetadata, file_io: FileIO,
                       snapshot: Snapshot | None) -> float:
    """Bytes per row of the live data files of ``snapshot``, or of the current schema when
    it has none (see the module docstring)."""
    measured = _summary_row_bytes(snapshot)
    if measured is None and snapshot is not None:
        measured = _manifest_row_bytes(metadata, file_io, snapshot)
    return measured if measured is not None else float(schema_row_bytes(metadata.schema()))


def schema_row_bytes(schema: Schema) -> int:
    """The uncompressed plain-encoded width of a row of ``schema``, strings and binary at
    :data:`VARIABLE_WIDTH_BYTES`.

    >>> from icepark.spec.types import LONG, STRING, NestedField
    >>> schema_row_bytes(Schema.of(NestedField.required(1, "id", LONG),
    ...                            NestedField.optional(2, "s", STRING)))
    72
    """
    return max(1, sum(_type_bytes(f.field_type) for f in schema.fields))


def _type_bytes(t: IcebergType) -> int:
    match t:
        case StructType():
            return sum(_type_bytes(f.field_type) for f in t.fields)
        case ListType():
            return COLLECTION_ELEMENTS * _type_bytes(t.element_type)
        case MapType():
            return COLLECTION_ELEMENTS * (_type_bytes(t.key_type) + _type_bytes(t.value_type))
        case PrimitiveType() if t.type_id is TypeId.DECIMAL:
            return 4 if t.precision <= 9 else 8 if t.precision <= 18 else 16
        case PrimitiveType() if t.type_id is TypeId.FIXED:
            return t.length
        case PrimitiveType() if t.type_id in _WIDTHS:
            return _WIDTHS[t.type_id]
    return VARIABLE_WIDTH_BYTES


def _summary_row_bytes(snapshot: Snapshot | None) -> float | None:
    if snapshot is None or snapshot.summary is None:
        return None
    props = snapshot.summary.properties
    if props.get("total-delete-files") != "0":
        return None
    try:
        size, records = int(props["total-files-size"]), int(props["total-records"])
    except (KeyError, ValueError):
        return None
    return size / records if size > 0 and records > 0 else None


def _manifest_row_bytes(metadata: TableMetadata, file_io: FileIO,
                        snapshot: Snapshot) -> float | None:
    specs = {s.spec_id: s for s in metadata.partition_specs}
    size = records = 0
    for manifest in snapshot_manifests(file_io, snapshot):
        if manifest.content is not ManifestContent.DATA:
            continue
        for entry in read_manifest(file_io, manifest, specs_by_id=specs,
                                   discard_deleted=True, stats=NO_STATS):
            size += entry.data_file.file_size_in_bytes
            records += entry.data_file.record_count
    return size / records if size > 0 and records > 0 else None


__all__ = ["COLLECTION_ELEMENTS", "VARIABLE_WIDTH_BYTES", "expected_row_bytes",
           "max_records_per_file", "schema_row_bytes"]
