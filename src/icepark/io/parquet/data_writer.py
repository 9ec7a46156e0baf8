"""Streaming Parquet data file writer: Arrow batches in, ``DataFile`` records with metrics out.

Spec, Appendix A, *Parquet*: "Column IDs are required." Files are written by pyarrow with the
Arrow schema of :mod:`icepark.io.arrow.schema`, so every column -- struct fields, list elements,
map keys and values -- carries its field ID. Input batches are matched to the table schema by
field name and cast to its types (:func:`conform_batch`); a batch that does not fit raises
:class:`ValidationError` naming the column before anything is written. ``unknown`` columns
(format version 3) are checked to be null and left out of the file: "Omit from data files"
(:func:`stored_schema`). Timestamps keep their unit: ``timestamp``/``timestamptz`` are written
as ``TIMESTAMP(MICROS)`` and ``timestamp_ns``/``timestamptz_ns`` as ``TIMESTAMP(NANOS)``, in
the same file (pyarrow's format version 2.6 writes each unit as it is, and icepark sets no
``coerce_timestamps`` nor the INT96 form).

Batches are buffered up to one row group (``write.parquet.row-group-size-bytes``, estimated
from the batches' Arrow size) and a new file is started when the current one reaches
``write.target-file-size-bytes`` (checked after each row group, and projected from the
compression ratio seen so far so that a file does not overshoot by a whole row group). At most
one row group is held in memory. If anything fails, every file this writer created is deleted
and the error re-raised.

>>> import tempfile, pyarrow as pa
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.partitioning import PartitionSpec
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> root, names = tempfile.mkdtemp(), iter(range(100))
>>> files = write_data_files(ArrowFileIO(), lambda: f"{root}/{next(names)}.parquet",
...     Schema.of(NestedField.required(1, "id", LONG)), PartitionSpec(), (), {},
...     [pa.record_batch({"id": [3, 1, 2]})])
>>> [(f.record_count, f.value_counts, f.lower_bounds) for f in files]
[(3, {1: 3}, {1: b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00'})]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow.schema import conform_batch, to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.io.parquet.float_stats import FloatCollector
from icepark.io.parquet.metrics import MetricsConfig, compute_metrics
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)
from icepark.spec.values import check_value

MIB = 1024 * 1024
_CODECS = {"zstd": "zstd", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4",
           "brotli": "brotli", "uncompressed": "none", "none": "none"}


def _positive_int(properties: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValidationError(f"Invalid table property {key}={raw!r}: expected a positive "
                              "integer")
    return value


@dataclass(frozen=True, slots=True)
class ParquetWriteOptions:
    """The ``write.parquet.*`` and ``write.target-file-size-bytes`` table properties.

    >>> o = ParquetWriteOptions.from_properties({"write.parquet.compression-codec": "GZIP",
    ...     "write.parquet.compression-level": "5"})
    >>> o.compression, o.compression_level, o.row_group_bytes == 128 * MIB
    ('gzip', 5, True)
    """

    compression: str = "zstd"
    compression_level: int | None = None
    row_group_bytes: int = 128 * MIB
    page_bytes: int | None = None
    dict_bytes: int | None = None
    target_file_bytes: int = 512 * MIB

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> ParquetWriteOptions:
        codec = properties.get("write.parquet.compression-codec", "zstd")
        if codec.lower() not in _CODECS:
            raise ValidationError(f"Invalid write.parquet.compression-codec {codec!r}: use one "
                                  f"of {', '.join(sorted(_CODECS))}")
        level = properties.get("write.parquet.compression-level")
        try:
            parsed_level = None if level is None else int(level)
        except ValueError:
            raise ValidationError(f"Invalid write.parquet.compression-level {level!r}: "
                                  "expected an integer") from None
        return ParquetWriteOptions(
            compression=_CODECS[codec.lower()],
            compression_level=parsed_level,
            row_group_bytes=_positive_int(
                properties, "write.parquet.row-group-size-bytes", 128 * MIB) or 128 * MIB,
            page_bytes=_positive_int(properties, "write.parquet.page-size-bytes", None),
            dict_bytes=_positive_int(properties, "write.parquet.dict-size-bytes", None),
            target_file_bytes=_positive_int(
                properties, "write.target-file-size-bytes", 512 * MIB) or 512 * MIB)

    def writer_arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``pyarrow.parquet.ParquetWriter``.

        Decimals are stored as int32/int64 by precision (``store_decimal_as_integer``) and
        ``time`` with ``adjustToUtc=false``, as Appendix A requires. Format version 2.6 keeps
        nanosecond timestamps as ``TIMESTAMP(NANOS)``; no ``coerce_timestamps`` (which would
        convert every column to one unit) and never INT96.
        """
        args: dict[str, Any] = {
            "version": "2.6",
            "use_deprecated_int96_timestamps": False,
            "compression": self.compression,
            "store_decimal_as_integer": True,
            "write_time_adjusted_to_utc": False,
            "use_compliant_nested_type": True,
            "write_statistics": True,
        }
        if self.compression_level is not None and self.compression != "none":
            args["compression_level"] = self.compression_level
        if self.page_bytes is not None:
            args["data_page_size"] = self.page_bytes
        if self.dict_bytes is not None:
            args["dictionary_pagesize_limit"] = self.dict_bytes
        return args


@dataclass(slots=True)
class _OpenFile:
    location: str
    sink: Any
    writer: Any
    floats: FloatCollector


class DataFileWriter:
    """Write Arrow data of one partition to Parquet data files of ``target`` size.

    ``location_provider`` names each new file. Use as a context manager, or call
    :meth:`close` (which returns the files) and, on failure elsewhere, :meth:`abort`.
    """

    content: ClassVar[FileContent] = FileContent.DATA

    def __init__(  # noqa: PLR0917 - the writer API takes the spec's data_file fields in order
            self, file_io: FileIO, location_provider: Callable[[], str], schema: Schema,
            spec: PartitionSpec, partition: tuple[Any, ...], properties: Mapping[str, str],
            sort_order_id: int | None = None) -> None:
        self._setup(file_io, location_provider, schema, schema, spec, partition, properties,
                    sort_order_id)

    def _setup(  # noqa: PLR0917 - one place for what every writer sets up
            self, file_io: FileIO, location_provider: Callable[[], str], file_schema: Schema,
            table_schema: Schema, spec: PartitionSpec, partition: tuple[Any, ...],
            properties: Mapping[str, str], sort_order_id: int | None,
            metrics: MetricsConfig | None = None,
            equality_ids: tuple[int, ...] | None = None) -> None:
        """Set up a writer of ``file_schema`` files; the partition is checked against the
        table schema, and metrics modes default to the table properties'."""
        self._io = file_io
        self._next_location = location_provider
        self._schema = file_schema
        self._spec_id = spec.spec_id
        self._partition = _checked_partition(spec, table_schema, tuple(partition))
        self._sort_order_id = sort_order_id
        self._equality_ids = equality_ids
        self._options = ParquetWriteOptions.from_properties(properties)
        self._writer_args = self._options.writer_arguments()
        self._metrics = metrics or MetricsConfig.from_properties(properties, table_schema)
        self._arrow_schema = to_arrow_schema(file_schema)
        self._stored = stored_schema(file_schema)
        self._reshaped = _changes(file_schema.as_struct())
        self._stored_arrow = self._store(pa.RecordBatch.from_arrays(
            [pa.nulls(0, f.type) for f in self._arrow_schema],
            schema=self._arrow_schema)).schema
        self._buffer: list[Any] = []
        self._buffered_bytes = 0.0
        self._current: _OpenFile | None = None
        self._created: list[str] = []
        self._files: list[DataFile] = []
        self._file_bytes_total = 0  # file bytes and Arrow bytes of every row group written,
        self._arrow_bytes_total = 0.0  # for the compression ratio
        self._state = "open"

    @property
    def schema(self) -> Schema:
        return self._schema

    def write(self, data: Any) -> None:
        """Append a ``RecordBatch`` or ``Table``; it is conformed to the schema by name."""
        self._check_open()
        try:
            batches = data.to_batches() if isinstance(data, pa.Table) else [data]
            for batch in batches:
                if not isinstance(batch, pa.RecordBatch):
                    raise ValidationError(f"Cannot write {type(batch).__name__}: expected a "
                                          "pyarrow RecordBatch or Table")
                self._append(self._prepare(batch))
        except BaseException:
            self.abort()
            raise

    def close(self) -> list[DataFile]:
        """Finish the last file and return every file written, in order."""
        if self._state == "closed":
            return list(self._files)
        self._check_open()
        try:
            if self._buffer:
                self._flush_row_group()
            if self._current is not None:
                self._finish_file()
        except BaseException:
            self.abort()
            raise
        self._state = "closed"
        return list(self._files)

    def abort(self) -> None:
        """Close and delete every file this writer created (best effort), then refuse use."""
        self._state = "aborted"
        self._buffer = []
        current, self._current = self._current, None
        if current is not None:
            with contextlib.suppress(Exception):
                current.writer.close()
            with contextlib.suppress(Exception):
                current.sink.close()
        for location in self._created:
            with contextlib.suppress(Exception):
                self._io.delete(location)
        self._files = []

    def __enter__(self) -> DataFileWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _check_open(self) -> None:
        if self._state != "open":
            raise ValidationError(f"Cannot use a {type(self).__name__} that was {self._state}")

    def _prepare(self, batch: Any) -> Any:
        """Conform one input batch to the file schema (subclasses add checks)."""
        return self._store(conform_batch(batch, self._schema, self._arrow_schema))

    def _store(self, batch: Any) -> Any:
        """A conformed batch as the file stores it: without its ``unknown`` columns, and with
        the geographies pyarrow cannot annotate as plain WKB binary (:func:`_stored_array`)."""
        if not self._reshaped:
            return batch
        columns = [_stored_array(batch.column(f.name), f.field_type)
                   for f in self._schema.fields if not _is_unknown(f.field_type)]
        names = [f.name for f in self._schema.fields if not _is_unknown(f.field_type)]
        fields = [batch.schema.field(n).with_type(c.type) for n, c in zip(names, columns,
                                                                          strict=True)]
        return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))

    def _append(self, batch: Any) -> None:
        rows = batch.num_rows
        if rows == 0:
            return
        row_bytes = max(batch.nbytes / rows, 1.0)
        offset = 0
        while offset < rows:
            room = min(self._options.row_group_bytes - self._buffered_bytes,
                       self._room_in_file() - self._buffered_bytes)
            take = min(rows - offset, max(1, int(-(-room // row_bytes))))
            self._buffer.append(batch.slice(offset, take))
            self._buffered_bytes += take * row_bytes
            offset += take
            # A file is finished when it reaches the target, or when this row group was sized
            # to reach it by the compression ratio seen so far (not the first guess of 1.0).
            full = self._room_in_file() <= self._buffered_bytes
            if full or self._buffered_bytes >= self._options.row_group_bytes:
                ratio_known = self._arrow_bytes_total > 0
                self._flush_row_group()
                assert self._current is not None
                if (full and ratio_known) or \
                        self._current.sink.tell() >= self._options.target_file_bytes:
                    self._finish_file()

    def _room_in_file(self) -> float:
        """Arrow bytes that would fill the current file to the target, at the ratio so far."""
        written = self._current.sink.tell() if self._current is not None else 0
        ratio = (self._file_bytes_total / self._arrow_bytes_total
                 if self._arrow_bytes_total else 1.0)
        return (self._options.target_file_bytes - written) / max(ratio, 1e-6)

    def _flush_row_group(self) -> None:
        if self._current is None:
            self._current = self._open_file()
        current = self._current
        table = pa.Table.from_batches(self._buffer, schema=self._stored_arrow)
        for batch in self._buffer:
            current.floats.update(batch)
        before = current.sink.tell()
        current.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._file_bytes_total += current.sink.tell() - before
        self._arrow_bytes_total += self._buffered_bytes
        self._buffer = []
        self._buffered_bytes = 0.0

    def _open_file(self) -> _OpenFile:
        location = self._next_location()
        sink = self._io.new_output(location).create(overwrite=False)
        self._created.append(location)  # only now is the file ours to delete
        try:
            writer = pq.ParquetWriter(sink, self._stored_arrow, **self._writer_args)
        except BaseException:
            sink.close()
            raise
        return _OpenFile(location, sink, writer, FloatCollector(self._stored))

    def _finish_file(self) -> None:
        current = self._current
        assert current is not None
        current.writer.close()
        current.sink.close()
        self._current = None
        metadata = current.writer.writer.metadata
        metrics = compute_metrics(metadata, self._schema, self._metrics, current.floats)
        self._files.append(DataFile(
            file_path=current.location,
            file_format=FileFormat.PARQUET,
            partition=self._partition,
            record_count=metrics.record_count,
            file_size_in_bytes=self._io.new_input(current.location).length(),
            content=self.content,
            spec_id=self._spec_id,
            column_sizes=metrics.column_sizes,
            value_counts=metrics.value_counts,
            null_value_counts=metrics.null_value_counts,
            nan_value_counts=metrics.nan_value_counts,
            lower_bounds=metrics.lower_bounds,
            upper_bounds=metrics.upper_bounds,
            split_offsets=metrics.split_offsets,
            equality_ids=self._equality_ids,
            sort_order_id=self._sort_order_id,
        ))


def _is_unknown(t: IcebergType) -> bool:
    return isinstance(t, PrimitiveType) and t.type_id is TypeId.UNKNOWN


def _stored_type(t: IcebergType, where: str) -> IcebergType:
    match t:
        case StructType():
            return StructType(tuple(_stored_field(f, f"{where}.{f.name}") for f in t.fields
                                    if not _is_unknown(f.field_type)))
        case ListType():
            if _is_unknown(t.element_type):
                raise UnsupportedFeature(f"Cannot write column {where!r}: a list of unknown "
                                         "has no Parquet form (unknown is omitted from files)")
            return ListType(t.element_id, _stored_type(t.element_type, f"{where}.element"),
                            t.element_required)
        case MapType():
            if _is_unknown(t.key_type) or _is_unknown(t.value_type):
                raise UnsupportedFeature(f"Cannot write column {where!r}: a map of unknown "
                                         "has no Parquet form (unknown is omitted from files)")
            return MapType(t.key_id, _stored_type(t.key_type, f"{where}.key"), t.value_id,
                           _stored_type(t.value_type, f"{where}.value"), t.value_required)
    return t


def _stored_field(f: NestedField, where: str) -> NestedField:
    stored = _stored_type(f.field_type, where)
    return f if stored is f.field_type else NestedField(
        f.field_id, f.name, stored, f.is_required, f.doc, f.initial_default, f.write_default)


def _plain_geography(t: IcebergType) -> bool:
    """A geography whose edges pyarrow cannot write as Parquet's ``GEOGRAPHY`` (pyarrow 26
    annotates ``spherical`` only): stored as plain WKB ``binary``."""
    return isinstance(t, PrimitiveType) and t.type_id is TypeId.GEOGRAPHY \
        and t.edge_algorithm != "spherical"


def _changes(t: IcebergType) -> bool:
    """Whether the file stores ``t`` otherwise than its Arrow type: it has an ``unknown``
    field or a :func:`_plain_geography`, at any depth."""
    match t:
        case StructType():
            return any(_changes(f.field_type) for f in t.fields)
        case ListType():
            return _changes(t.element_type)
        case MapType():
            return _changes(t.key_type) or _changes(t.value_type)
    return _is_unknown(t) or _plain_geography(t)


def stored_schema(schema: Schema) -> Schema:
    """The columns a data file of ``schema`` stores: every ``unknown`` field left out
    (Appendix A: ``unknown``, Parquet type "None", "Omit from data files"); ``schema`` itself
    when it has none. A list element or map key/value of type unknown cannot be left out:
    :class:`UnsupportedFeature`.

    >>> from icepark.spec.types import LONG, UNKNOWN
    >>> print(stored_schema(Schema.of(NestedField.required(1, "id", LONG),
    ...                               NestedField.optional(2, "u", UNKNOWN))))
    table {
      1: id: required long
    }
    """
    if not any(_is_unknown(f.field_type) for f in index_by_id(schema).values()):
        return schema
    return Schema(tuple(_stored_field(f, f.name) for f in schema.fields
                        if not _is_unknown(f.field_type)), schema.schema_id)


def _stored_array(arr: Any, t: IcebergType) -> Any:
    """A conformed column as the file stores it: ``unknown`` struct fields (at any depth) left
    out, :func:`_plain_geography` values as their WKB ``binary``."""
    if not _changes(t):
        return arr
    mask = arr.is_null() if arr.null_count else None
    match t:
        case StructType():
            kept = [(i, f) for i, f in enumerate(t.fields) if not _is_unknown(f.field_type)]
            children = [_stored_array(arr.field(i), f.field_type) for i, f in kept]
            fields = [arr.type.field(i).with_type(c.type) for (i, _), c in zip(kept, children,
                                                                               strict=True)]
            return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        case ListType():
            values = _stored_array(arr.values, t.element_type)
            element = arr.type.value_field.with_type(values.type)
            return pa.ListArray.from_arrays(arr.offsets, values, type=pa.list_(element),
                                            mask=mask)
        case MapType():
            keys = _stored_array(arr.keys, t.key_type)
            items = _stored_array(arr.items, t.value_type)
            map_type = pa.map_(arr.type.key_field.with_type(keys.type),
                               arr.type.item_field.with_type(items.type))
            return pa.MapArray.from_arrays(arr.offsets, keys, items, type=map_type, mask=mask)
    return arr.storage  # a plain geography


def _checked_partition(spec: PartitionSpec, schema: Schema,
                       partition: tuple[Any, ...]) -> tuple[Any, ...]:
    """The partition tuple, checked against the spec's partition type."""
    fields = spec.partition_type(schema).fields
    if len(partition) != len(fields):
        raise ValidationError(f"Partition tuple {partition!r} has {len(partition)} values but "
                              f"spec {spec.spec_id} has {len(fields)} fields")
    for f, value in zip(fields, partition, strict=True):
        if value is not None:
            try:
                check_value(f.field_type, value)
            except ValidationError as e:
                raise ValidationError(f"Partition field {f.name!r}: {e}") from None
    return partition


def write_data_files(  # noqa: PLR0917 - DataFileWriter's arguments plus the batches
        file_io: FileIO, location_provider: Callable[[], str], schema: Schema,
        spec: PartitionSpec, partition: tuple[Any, ...], properties: Mapping[str, str],
        batches: Iterable[Any], sort_order_id: int | None = None) -> list[DataFile]:
    """Write ``batches`` (RecordBatches or Tables) with one :class:`DataFileWriter`."""
    with DataFileWriter(file_io, location_provider, schema, spec, partition, properties,
                        sort_order_id) as writer:
        for batch in batches:
            writer.write(batch)
    return writer.close()
