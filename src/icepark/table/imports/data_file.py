"""An existing Parquet file as a data file of a table: its columns checked, its metrics read
from the footer, its partition told by its directories or its data.

Columns map to the table's fields by the file's Parquet field IDs if it has them, else by the
table's name mapping. Spec, *Column Projection*: "Tables may also define a property
``schema.name-mapping.default`` with a JSON name mapping ... These mappings provide fallback
field ids to be used when a data file does not contain field id information." A table without
one is given the mapping of its current schema (each field by its name), as the reference
implementation does when it imports files.

A file is refused, with a :class:`~icepark.errors.ValidationError` naming it and the column,
when it has a column the table does not (its values would silently disappear), a column whose
type the table's cannot read (spec, *Schema Evolution*: "Valid type promotions are ..."), lacks
a required column, or stores timestamps in nanoseconds (or Spark's legacy INT96): "All time and
timestamp values are stored with microsecond precision."

Metrics come from the footer with the table's metrics modes
(:func:`icepark.io.parquet.metrics.compute_metrics`): "Values should be stored in Parquet ...
column statistics", and a footer has no NaN counts, so they are left out.

The partition tuple comes from the file's ``key=value`` directories
(:mod:`icepark.table.imports.partition_text`), a directory named after the partition field
(``ts_day=2024-03-01``) or, for an identity partition, after its column (``dt=2024-03-01``).
Without one, it comes from the data: the footer's bounds of the source column, when every value
falls in one partition ("Partition values for a data file must be the same for all records
stored in the data file"); a file whose values span partitions, whose footer has no bounds to
tell, or that lacks the column, is refused. When both are there, they must agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.errors import ValidationError
from icepark.io.arrow.name_mapping import (
    NameMapping,
    apply_name_mapping,
    create_mapping,
    has_field_ids,
    name_mapping_from_properties,
)
from icepark.io.arrow.projection import FileColumns, extract, field_id_of, project
from icepark.io.fileio import FileIO
from icepark.io.parquet.metrics import FULL, Metrics, MetricsConfig, compute_metrics
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.types import PrimitiveType, TypeId
from icepark.table.imports.partition_text import HIVE_NULL, parse_partition_text
from icepark.table.imports.sources import SourceFile


@dataclass(frozen=True, slots=True)
class ImportTarget:
    """What each file is checked against: the table's schema, partition spec, name mapping
    and metrics modes."""

    schema: Schema
    spec: PartitionSpec
    mapping: NameMapping
    config: MetricsConfig
    own_mapping: bool
    """Whether ``mapping`` is the table's ``schema.name-mapping.default`` (else the schema's)."""

    @staticmethod
    def of(metadata: TableMetadata) -> ImportTarget:
        schema = metadata.schema()
        metadata.spec().check_writable()  # files cannot be committed to an unknown transform
        own = name_mapping_from_properties(metadata.properties)
        return ImportTarget(schema, metadata.spec(), own or create_mapping(schema),
                            MetricsConfig.from_properties(metadata.properties, schema),
                            own is not None)


@dataclass(frozen=True, slots=True)
class ImportedFile:
    """A file's ``DataFile`` record, and whether its columns were mapped by name (it has no
    field IDs)."""

    data_file: DataFile
    by_name: bool


class Told(Enum):
    """What a file's data says of its partition when it names no single value."""

    UNKNOWN = "its footer has no bounds or null counts to tell"
    MANY = "its values fall in more than one partition"
    ABSENT = "it has no rows or no such column: its directory decides"


def read_footer(file_io: FileIO, location: str) -> Any:
    """The Parquet footer (``pyarrow.parquet.FileMetaData``) of ``location``."""
    with file_io.new_input(location).open() as stream:
        try:
            return pq.read_metadata(stream)
        except (pa.ArrowInvalid, OSError) as e:
            raise ValidationError(f"Cannot add {location}: it is not a readable Parquet file "
                                  f"({e})") from None


def import_file(file_io: FileIO, target: ImportTarget, source: SourceFile) -> ImportedFile:
    """The data file record of ``source`` in the table ``target`` describes (module
    docstring), or a :class:`ValidationError` naming the file and what is wrong."""
    location = source.location
    footer = read_footer(file_io, location)
    file_schema = footer.schema.to_arrow_schema()
    by_name = not has_field_ids(file_schema)
    annotated = apply_name_mapping(file_schema, target.mapping) if by_name else file_schema
    mapped_by = ("the table's name mapping (schema.name-mapping.default): add its name there"
                 if by_name and target.own_mapping
                 else "the table's schema (add the column to the table first)")
    present = _check_columns(annotated, target.schema, location, mapped_by)
    columns = FileColumns(annotated, None, location)
    for f in target.schema.fields:  # each column's type first, before bounds are read as it
        extract(columns, f)
    partition = _Partition(target, source, footer, annotated, present).values()
    constants = {f.source_id: v for f, v in zip(target.spec.fields, partition, strict=True)
                 if f.transform.is_identity and v is not None}
    project(columns, target.schema, constants)  # and required columns, partition values given
    metrics = compute_metrics(footer, target.schema, target.config, file_schema=annotated)
    size = source.size if source.size is not None else file_io.new_input(location).length()
    return ImportedFile(DataFile(
        file_path=location, file_format=FileFormat.PARQUET, partition=partition,
        record_count=metrics.record_count, file_size_in_bytes=size,
        spec_id=target.spec.spec_id, column_sizes=metrics.column_sizes,
        value_counts=metrics.value_counts, null_value_counts=metrics.null_value_counts,
        lower_bounds=metrics.lower_bounds, upper_bounds=metrics.upper_bounds,
        split_offsets=metrics.split_offsets), by_name)


def _fields(arrow_fields: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every Arrow field at every level, with its dotted path (``tags.element``)."""
    for f in arrow_fields:
        path = f"{prefix}{f.name}"
        yield path, f
        t = f.type
        if pa.types.is_struct(t):
            yield from _fields([t.field(i) for i in range(t.num_fields)], f"{path}.")
        elif pa.types.is_map(t):
            yield f"{path}.key", t.key_field
            yield f"{path}.value", t.item_field
            yield from _fields(_children(t.item_type), f"{path}.value.")
            yield from _fields(_children(t.key_type), f"{path}.key.")
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            yield f"{path}.element", t.value_field
            yield from _fields(_children(t.value_type), f"{path}.element.")


def _children(t: Any) -> list[Any]:
    return [t.field(i) for i in range(t.num_fields)] if pa.types.is_struct(t) else []


def _check_columns(annotated: Any, schema: Schema, location: str, mapped_by: str) -> set[int]:
    """The field IDs of the file's columns, each checked to be one of the table's."""
    present: set[int] = set()
    for path, f in _fields(annotated):
        fid = field_id_of(f)
        if fid is None:
            raise ValidationError(f"Cannot add {location}: its column {path!r} is not in "
                                  f"{mapped_by}")
        if schema.field_by_id(fid) is None:
            raise ValidationError(f"Cannot add {location}: its column {path!r} has field ID "
                                  f"{fid}, which is not in the table's schema")
        present.add(fid)
    check_timestamps(annotated, location, schema)
    return present


_NANOS = frozenset({TypeId.TIMESTAMP_NS, TypeId.TIMESTAMPTZ_NS})


def check_timestamps(arrow_schema: Any, location: str, schema: Schema | None = None) -> None:
    """Refuse a file with nanosecond timestamps, but in the columns of ``schema`` (a v3
    table's, the file's columns matched by field ID) that are ``timestamp_ns`` or
    ``timestamptz_ns``: other timestamps are microseconds."""
    for path, f in _fields(arrow_schema):
        if not (pa.types.is_timestamp(f.type) and f.type.unit == "ns"):
            continue
        fid = field_id_of(f)
        column = None if schema is None or fid is None else schema.field_by_id(fid)
        if column is None or not (isinstance(column.field_type, PrimitiveType)
                                  and column.field_type.type_id in _NANOS):
            raise ValidationError(
                f"Cannot add {location}: its column {path!r} holds nanosecond timestamps (or "
                "Spark's legacy INT96 ones) and the table's column is not timestamp_ns; "
                "rewrite the file with microsecond timestamps (in Spark: "
                "spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS)")


class _Partition:
    """The partition tuple of one file (see the module docstring)."""

    def __init__(self, target: ImportTarget, source: SourceFile, footer: Any, annotated: Any,
                 present: set[int]) -> None:
        self.target, self.source, self.present = target, source, present
        self.location = source.location
        self.metrics: Metrics | None = None
        self.empty = footer.num_rows == 0
        if target.spec.fields and footer.num_rows:
            self.metrics = compute_metrics(footer, target.schema, MetricsConfig(FULL),
                                           file_schema=annotated)

    def values(self) -> tuple[Any, ...]:
        used: set[str] = set()
        values = tuple(self._value(f, used) for f in self.target.spec.fields)
        self._check_unused(used)
        return values

    def _value(self, f: PartitionField, used: set[str]) -> Any:
        schema = self.target.schema
        source_type = schema.find_type(f.source_id)
        column = schema.find_column_name(f.source_id) or str(f.source_id)
        keys = [f.name] + ([column] if f.transform.is_identity and column != f.name else [])
        key = next((k for k in keys if self.source.directory(k) is not None), None)
        derived = self._from_data(f, source_type)
        human = f"{f.transform}({column})"
        if key is None:
            if derived is Told.ABSENT and not f.transform.is_void and not self.empty:
                raise ValidationError(
                    f"Cannot add {self.location}: it has no column {column!r} and is in no "
                    f"'{keys[-1]}=<value>' directory, so its partition of {human} cannot be "
                    f"told (a directory {keys[-1]}={HIVE_NULL} says null)")
            if derived is Told.MANY:
                raise ValidationError(
                    f"Cannot add {self.location}: its values of {column!r} fall in more than "
                    f"one partition of {human}, and a data file holds the rows of one partition")
            if derived is Told.UNKNOWN:
                raise ValidationError(
                    f"Cannot add {self.location}: its footer has no statistics for {column!r}, "
                    f"so its partition of {human} cannot be told; put it in a "
                    f"'{f.name}=<value>' directory")
            return derived if not isinstance(derived, Told) else None
        used.add(key)
        text = self.source.directory(key)
        assert text is not None
        try:
            value = parse_partition_text(f.transform, source_type, text)
        except (ValueError, ArithmeticError) as e:
            raise ValidationError(
                f"Cannot add {self.location}: its directory {key}={text} is not a partition "
                f"value of {human}: {e}") from None
        if derived is Told.MANY or (not isinstance(derived, Told) and derived != value):
            found = ("span more than one partition" if derived is Told.MANY else
                     f"belong to partition {f.transform.to_human_string(source_type, derived)}")
            raise ValidationError(
                f"Cannot add {self.location}: it is in directory {key}={text}, but its values "
                f"of {column!r} {found}")
        return value

    def _from_data(self, f: PartitionField, source_type: Any) -> Any:
        """The partition value the file's data gives, or why it gives none."""
        metrics = self.metrics
        if f.source_id not in self.present or metrics is None:
            return Told.ABSENT
        fid = f.source_id
        values, nulls = metrics.value_counts.get(fid), metrics.null_value_counts.get(fid)
        if values is not None and nulls is not None and values == nulls:
            return None  # all null: the null partition
        low, high = metrics.lower_bounds.get(fid), metrics.upper_bounds.get(fid)
        if low is None or high is None or nulls is None or not isinstance(source_type,
                                                                          PrimitiveType):
            return Told.UNKNOWN
        if nulls:
            return Told.MANY  # nulls and values: the null partition and another
        lower, upper = from_bytes(source_type, low), from_bytes(source_type, high)
        first = f.transform.apply(source_type, lower)
        if first != f.transform.apply(source_type, upper):
            return Told.MANY
        if not f.transform.preserves_order and lower != upper:
            return Told.MANY  # bucket: equal ends say nothing of the values between
        return first

    def _check_unused(self, used: set[str]) -> None:
        """A ``key=value`` directory that no partition field read holds values the table
        would lose, unless the file has the column itself."""
        schema = self.target.schema
        for key, text in self.source.directories:
            if key in used:
                continue
            field = next((f for f in schema.fields if f.name == key), None)
            if field is not None and field.field_id in self.present:
                continue
            what = ("is not a partition of the table and the file has no such column"
                    if field is not None else "names no column or partition of the table")
            raise ValidationError(
                f"Cannot add {self.location}: it is in directory {key}={text}, but {key!r} "
                f"{what}, so the value would be lost")
