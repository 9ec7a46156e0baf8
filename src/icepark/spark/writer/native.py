"""The native write path: Spark's own Parquet writer, where its files are spec-compliant.

Moving rows from the JVM to Python workers bounds any writer running in Python at about
0.6x of Spark's own Parquet writer (DESIGN.md, *The data path on Spark*). Spark's writer gives
every column a field ID (``spark.sql.parquet.fieldId.write.enabled`` and the StructField
metadata ``parquet.field.id``) when the schema has no list or map, whose elements, keys and
values it leaves without one. Spec, Appendix A, *Parquet*: "Column IDs are required." So a
table is written natively when :func:`ineligibility` finds nothing against it:

* every leaf type is one Spark writes as Appendix A maps it -- boolean, int, long, float,
  double, decimal (``P <= 9``: int32, ``P <= 18``: int64, ``fixed`` otherwise: Spark's
  non-legacy format, ``spark.sql.parquet.writeLegacyFormat=false``), date, timestamp and
  timestamptz (``TIMESTAMP_MICROS`` "with ``adjustToUtc=false``" from ``TimestampNTZType`` and
  "``adjustToUtc=true``" from ``TimestampType``; never Spark's default INT96), string,
  binary -- or a struct of them; not list, map, uuid, fixed or time; of the v3 types,
  ``variant`` (measured on 4.3: with ``spark.sql.variant.writeShredding.enabled=false`` Spark
  writes the unshredded ``group`` "with ``metadata`` and ``value`` fields", annotated
  ``VARIANT``, the field ID on the group and none inside, as Appendix A requires; with
  shredding on, its default, it would shred by an inferred schema), ``geometry`` and
  ``geography`` of the default CRS held as Spark's spatial types (``binary`` with
  ``GEOMETRY``/``GEOGRAPHY`` of ``OGC:CRS84``: :func:`icepark.spark.geo.native_writable`),
  and a top-level ``unknown`` column, which is left out of the files ("Omit from data
  files"); not ``timestamp_ns``/``timestamptz_ns`` (Spark writes only ``TIMESTAMP(MICROS)``);
* the codec is one Spark has (``write.parquet.compression-codec``: zstd, gzip, snappy, lz4
  as LZ4_RAW, uncompressed; ``write.parquet.compression-level`` only for zstd);
* no overwrite filter (its rows are checked against it in the Python workers);
* the table property :data:`NATIVE_WRITER_PROPERTY` is not ``false``.

The job (:class:`NativeWriteJob`): the DataFrame's columns get their field IDs (nested struct
fields too) and required columns fail the job on a null ("Nulls in a required column fail the
job"; :mod:`icepark.spark.writer.file_columns`), partition values are computed as Spark
columns (:mod:`icepark.spark.transforms`, bit-exact with the spec's transforms) and encoded
losslessly as ``partitionBy`` directory names (:mod:`icepark.spark.writer.partition_dirs`), the
rows are distributed and sorted as for the Python writer
(:mod:`icepark.spark.writer.distribution`), and Spark writes
``<data path>/<job id>/<partition dirs>/<job id>-<task>-<uuid>.c000.<codec>.parquet`` (Hadoop's
``mapreduce.output.basename`` is the job ID, so every file carries it, as the Python writer's
do). The driver then lists the job directory, builds the ``DataFile`` records from the
footers (each must carry the field IDs the frame gave, or the files are not the table's)
and moves each file to its partition's directory, named as every icepark writer names
it (``<data path>/ts_day=2024-03-05/country=us/``; :mod:`icepark.spark.writer.native_files`).
:meth:`NativeWriteJob.abort` deletes the moved files and the job directory.

``write.target-file-size-bytes``: Spark rolls files by rows only, so the caller passes the
target as ``maxRecordsPerFile`` from an expected row size (:mod:`icepark.spark.writer.file_size`);
without it Spark writes one file per task and partition.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from icepark.errors import ValidationError
from icepark.expressions import Expr
from icepark.io.fileio import FileIO
from icepark.io.parquet.data_writer import ParquetWriteOptions
from icepark.spark import geo
from icepark.spark.session import scoped_conf
from icepark.spark.storage import unopenable
from icepark.spark.transforms import partition_columns
from icepark.spark.writer.distribution import distributed
from icepark.spark.writer.file_columns import (
    aliased_frame,
    file_frame,
    forget_cached_framing,
)
from icepark.spark.writer.native_files import (
    MissingFieldIds,
    collect_data_files,
    delete_tree,
    place_files,
    remove_empty_dirs,
)
from icepark.spark.writer.partition_dirs import encode_column
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import (
    UNKNOWN,
    IcebergType,
    PrimitiveType,
    StructType,
    TypeId,
)

NATIVE_WRITER_PROPERTY = "write.spark.native-writer.enabled"
"""Table property: ``false`` sends every write through the Python-worker writer (default
``true``: the native writer wherever :func:`ineligibility` allows)."""
NATIVE_LEAF_TYPES = frozenset({
    TypeId.BOOLEAN, TypeId.INT, TypeId.LONG, TypeId.FLOAT, TypeId.DOUBLE, TypeId.DECIMAL,
    TypeId.DATE, TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ, TypeId.STRING, TypeId.BINARY,
    TypeId.VARIANT})
"""The primitive types Spark's Parquet writer stores as Appendix A requires (and geometry and
geography of the default CRS, :func:`~icepark.spark.geo.native_writable`)."""
SPARK_PARQUET_SETTINGS: Mapping[str, str] = {
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.writeLegacyFormat": "false",
    "spark.sql.variant.writeShredding.enabled": "false",
    "spark.sql.parquet.variant.annotateLogicalType.enabled": "true",
}
"""Session settings a native write needs (set for the write if the session differs)."""
_SPARK_CODECS = {"zstd": "zstd", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4_raw",
                 "none": "uncompressed"}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_REQUIRED_NULL = re.compile(r"Column (.+?) is required but has a null value")


def ineligibility(metadata: TableMetadata, row_filter: Expr | None = None) -> str | None:
    """Why a write to ``metadata``'s current schema and spec cannot go through Spark's own
    Parquet writer, or None if it can (see the module docstring).

    >>> from icepark.spec.types import LONG, UUID, NestedField
    >>> from icepark.table.change.metadata_builder import MetadataBuilder
    >>> m, _ = MetadataBuilder.new_table(Schema.of(NestedField.optional(1, "u", UUID)), "/t")
    >>> ineligibility(m)
    "column 'u' is uuid"
    >>> m, _ = MetadataBuilder.new_table(Schema.of(NestedField.optional(1, "n", LONG)), "/t")
    >>> ineligibility(m) is None
    True
    """
    flag = metadata.properties.get(NATIVE_WRITER_PROPERTY, "true").strip().lower()
    if flag not in ("true", "false"):
        raise ValidationError(f"Invalid table property {NATIVE_WRITER_PROPERTY}={flag!r}: use "
                              "true or false")
    if flag == "false":
        return f"{NATIVE_WRITER_PROPERTY}=false"
    if row_filter is not None:
        return "an overwrite filter is checked in the Python workers"
    options = ParquetWriteOptions.from_properties(metadata.properties)
    if options.compression not in _SPARK_CODECS:
        return f"Spark has no {options.compression} Parquet codec"
    if options.compression_level is not None and options.compression != "zstd":
        return f"a compression level applies only to zstd, not {options.compression}"
    for f in metadata.schema().fields:
        if f.field_type == UNKNOWN:
            continue  # left out of the files
        reason = _leaf_problem(f.field_type, f.name)
        if reason is not None:
            return reason
    return None


def _leaf_problem(t: IcebergType, path: str) -> str | None:
    match t:
        case StructType():
            for f in t.fields:
                reason = _leaf_problem(f.field_type, f"{path}.{f.name}")
                if reason is not None:
                    return reason
            return None
        case PrimitiveType() if t.type_id in NATIVE_LEAF_TYPES:
            return None
        case PrimitiveType() if t.type_id in geo.GEO_TYPES and geo.native_writable(t):
            return None
    return f"column {path!r} is {t}"


def writer_options(properties: Mapping[str, str], job_id: str) -> dict[str, str]:
    """``DataFrameWriter`` options (Parquet and Hadoop settings) from the table properties."""
    parquet = ParquetWriteOptions.from_properties(properties)
    options = {
        "compression": _SPARK_CODECS[parquet.compression],
        "mapreduce.output.basename": job_id,
        "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        "parquet.block.size": str(parquet.row_group_bytes),
    }
    if parquet.page_bytes is not None:
        options["parquet.page.size"] = str(parquet.page_bytes)
    if parquet.dict_bytes is not None:
        options["parquet.dictionary.page.size"] = str(parquet.dict_bytes)
    if parquet.compression_level is not None:
        options["parquet.compression.codec.zstd.level"] = str(parquet.compression_level)
    return options


@dataclass(frozen=True, slots=True)
class NativeWriteJob:
    """One native write: its job ID and the directory below the data path it writes."""

    job_id: str
    data_path: str

    @property
    def job_dir(self) -> str:
        return f"{self.data_path}/{self.job_id}"

    def write(self, df: DataFrame, metadata: TableMetadata, file_io: FileIO, *,
              max_records_per_file: int | None = None,
              schema: Schema | None = None) -> list[DataFile]:
        """Write ``df`` (in the table layout, conformed to the current schema, or to
        ``schema``: the current one plus row lineage) and return the records of the files
        written; each file holds at most ``max_records_per_file`` rows (Spark's
        ``maxRecordsPerFile``; None: no limit)."""
        schema = schema or metadata.schema()
        options = writer_options(metadata.properties, self.job_id)
        if max_records_per_file is not None:
            if max_records_per_file < 1:
                raise ValidationError(
                    f"max_records_per_file must be positive, not {max_records_per_file}")
            options["maxRecordsPerFile"] = str(max_records_per_file)
        frame, cached = file_frame(df, schema)
        try:
            return self._write(frame, metadata, file_io, schema, options)
        except MissingFieldIds:
            if not cached:
                raise
        # Spark dropped the IDs DataFrame.to gave (see file_columns): write them as aliases
        forget_cached_framing(df)
        delete_tree(file_io, self.job_dir, settle_seconds=0)
        return self._write(aliased_frame(df, schema), metadata, file_io, schema, options)

    def _write(self, frame: DataFrame, metadata: TableMetadata, file_io: FileIO,
               schema: Schema, options: dict[str, str]) -> list[DataFile]:
        spec, order = metadata.spec(), metadata.sort_order()
        names = partition_dir_names(spec, frame.columns)
        types = [f.field_type for f in spec.partition_type(schema).fields]
        keys = [(name, encode_column(t, c)) for name, t, c in
                zip(names, types, partition_columns(spec, schema, frame), strict=True)]
        writer = distributed(frame, metadata, keys).write.options(**options)
        if names:
            writer = writer.partitionBy(*names)
        try:
            with parquet_settings(frame.sparkSession):
                writer.parquet(self.job_dir)
        except Exception as e:
            match = _REQUIRED_NULL.search(str(e))
            if match is not None:
                raise ValidationError(match.group(0)) from None
            typed = unopenable(e, self.job_dir)
            if typed is None:
                raise
            raise typed from None
        files = collect_data_files(file_io, self.job_dir, self.job_id, schema, spec,
                                   metadata.properties,
                                   None if order.is_unsorted else order.order_id)
        placed = place_files(file_io, files, self.data_path, schema, spec)
        remove_empty_dirs(self.job_dir)
        return placed

    def abort(self, file_io: FileIO, placed: Sequence[str] = ()) -> None:
        """Delete every file of the job: those ``placed`` in the table's partition
        directories and its whole directory; best effort."""
        for location in placed:
            with contextlib.suppress(Exception):
                file_io.delete(location)
        delete_tree(file_io, self.job_dir)


def parquet_settings(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """:data:`SPARK_PARQUET_SETTINGS` in force for the block; the session's own afterwards
    (:func:`icepark.spark.session.scoped_conf`)."""
    return scoped_conf(spark, SPARK_PARQUET_SETTINGS)


def partition_dir_names(spec: PartitionSpec, columns: list[str]) -> list[str]:
    """The ``partitionBy`` column of each partition field: its name where that is a plain
    identifier no data column has (case-insensitively), else the name and its field ID, else
    ``__icepark_partition_<i>``."""
    taken = {c.lower() for c in columns}
    names = []
    for i, f in enumerate(spec.fields):
        for candidate in (f.name, f"{f.name}_{f.field_id}", f"__icepark_partition_{i}"):
            if _NAME.fullmatch(candidate.lstrip("_")) and candidate.lower() not in taken:
                break
        taken.add(candidate.lower())
        names.append(candidate)
    return names


__all__ = ["NATIVE_LEAF_TYPES", "NATIVE_WRITER_PROPERTY", "SPARK_PARQUET_SETTINGS",
           "NativeWriteJob", "ineligibility", "parquet_settings",
           "partition_dir_names", "writer_options"]
