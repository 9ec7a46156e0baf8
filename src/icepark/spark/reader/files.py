"""How each data file of a Spark read is read: by field ID or by mapped names, and which values
fill the columns it lacks.

Spec, *Column Projection*: "Columns in Iceberg data files are selected by field id ... If a
field id is missing from a data file, its value for each row should be ``null``", except that
values for a field id missing from a data file are resolved in order: "Return the value from
partition metadata if an Identity Transform exists for the field and the partition value is
present in the ``partition`` struct on ``data_file`` object in the manifest", then "Use
``schema.name-mapping.default`` metadata to map field id to columns without field id", then
"Return the default value if it has a defined ``initial-default``", then null.

Spark's Parquet reader reads a missing column as null, so a file needs a *fill* only for a
field that has an identity partition value or an ``initial-default`` and that the file lacks.
Whether it lacks it is decided from the file's metrics first (a field, or a leaf below it, with
a value count or column size is in the file), so the normal case reads no footer; only the
undecided candidates (and, for a table with a name mapping, every file, to learn whether it
has field IDs) have their footer read on the driver, in parallel. Fills are supported for
fields nested in structs only (not inside lists or maps).

Files without field IDs are read by the names the table's name mapping resolves in their
footer: the read schema uses the file's names (a field the file lacks gets a name no file
uses, so it reads as null) in the table's field order, and each top-level column is then cast
to the table's struct type, which Spark does by position.

Spec, Appendix A: an ``unknown`` column is "Omit from data files", and "When reading an
``unknown`` column, any corresponding column must be ignored and replaced with ``null``
values". Measured on Spark 4.3: a ``NullType`` field in the read schema reads a file that
lacks it as null, but fails on a file column with its ID (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``
vectorized, ``PARQUET_CONVERSION_FAILURE`` not). So unknown fields (top-level or in structs)
are left out of the read schema and filled with null like a missing field.

Files with the same read schema and fills are read together, in one ``spark.read``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature
from icepark.io.arrow.name_mapping import NameMapping, has_field_ids
from icepark.io.arrow.parquet_file import read_arrow_schema
from icepark.io.arrow.projection import FileColumns, field_id_of
from icepark.io.arrow.reader import identity_constants
from icepark.io.fileio import FileIO
from icepark.spark.filters import spark_literal
from icepark.spark.schema import FIELD_ID, quote, read_schema, to_spark_type
from icepark.spark.writer.native_files import FOOTER_THREADS
from icepark.spec.manifest import DataFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.types import (
    UNKNOWN,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from icepark.table.scan.tasks import parallel_map


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Data files read together: the read schema (by ID, or by the files' own names when
    ``by_name``) and the values of the fields they lack (field ID to Iceberg value)."""

    read_type: T.StructType
    by_name: bool
    fills: tuple[tuple[int, Any], ...]
    paths: tuple[str, ...]


def group_files(io: FileIO, files: Sequence[DataFile], schema: Schema,
                specs: Mapping[int, PartitionSpec], mapping: NameMapping | None) -> list[FileGroup]:
    """The data ``files`` grouped by how they are read onto ``schema`` (the columns to read,
    in the table's names and types)."""
    defaults = {f.field_id: f.initial_default for f in _struct_fields(schema.fields)
                if f.initial_default is not None}
    reachable = {f.field_id for f in _struct_fields(schema.fields)}
    plans: list[tuple[DataFile, dict[int, Any], list[int]]] = []
    footers_needed: set[str] = set()
    for data_file in files:
        constants = {fid: v for fid, v in identity_constants(specs.get(data_file.spec_id),
                                                              data_file.partition).items()
                     if fid in reachable}
        candidates = {**defaults, **constants}
        undecided = [fid for fid in candidates if not _in_metrics(data_file, schema, fid)]
        if undecided or mapping is not None:
            footers_needed.add(data_file.file_path)
        plans.append((data_file, candidates, undecided))

    footers = _read_footers(io, sorted(footers_needed))
    # the read schema by field ID is the same for every such file: built and keyed once
    id_type = _stored(read_schema(schema), schema.as_struct())
    id_key = id_type.json()
    groups: dict[tuple[str, bool, str], tuple[T.StructType, bool, dict[int, Any], list[str]]] = {}
    for data_file, candidates, undecided in plans:
        footer = footers.get(data_file.file_path)
        by_name = footer is not None and not has_field_ids(footer)
        columns = (FileColumns(footer, mapping, data_file.file_path)
                   if footer is not None and (undecided or by_name) else None)
        fills = {fid: candidates[fid] for fid in undecided
                 if columns is not None and columns.path(fid) is None}
        if by_name and columns is not None:
            read_type = _without_ids(_by_name_struct(schema.as_struct(), columns.schema))
            type_key = read_type.json()
        else:
            read_type, type_key = id_type, id_key
        key = (type_key, by_name, repr(sorted(fills.items(), key=lambda kv: kv[0])))
        groups.setdefault(key, (read_type, by_name, fills, []))[3].append(data_file.file_path)
    return [FileGroup(t, by_name, tuple(sorted(fills.items(), key=lambda kv: kv[0])),
                      tuple(paths))
            for t, by_name, fills, paths in groups.values()]


def group_columns(group: FileGroup, schema: Schema) -> list[Column]:
    """The columns of ``schema`` (read layout, table names) from a group's read DataFrame;
    ``unknown`` fields are null."""
    fills = {**dict(group.fills), **dict.fromkeys(_unknown_ids(schema.fields))}
    out = []
    for i, (f, s) in enumerate(zip(schema.fields, read_schema(schema).fields, strict=True)):
        if group.by_name:
            name = group.read_type.fields[i].name
            col = F.col(quote(name)).cast(s.dataType)
        else:
            col = F.col(quote(f.name))
        out.append(_fill(col, f, fills).alias(f.name, metadata=s.metadata))
    return out


def reads_as_is(group: FileGroup, schema: Schema) -> bool:
    """Whether the group's read DataFrame is already :func:`group_columns`' result: its files
    are read by field ID with nothing to fill and ``schema`` has no ``unknown`` field, so the
    read schema is ``read_schema(schema)`` and every column would be selected unchanged (Spark's
    file reader keeps the read schema's field metadata). Each ``select`` is analysed in the
    JVM on the driver; a read skips this one when it would change nothing."""
    return not group.by_name and not group.fills and not _unknown_ids(schema.fields)


def _fill(col: Column, f: NestedField, fills: Mapping[int, Any]) -> Column:
    """``col`` (field ``f``) with the fills of ``f`` or of struct fields below it."""
    if f.field_id in fills:
        return value_column(f.field_type, fills[f.field_id])
    t = f.field_type
    if not isinstance(t, StructType) or not _has_fill(t, fills):
        return col
    children = [(value_column(c.field_type, fills[c.field_id]) if c.field_id in fills
                 else _fill(col.getField(c.name), c, fills)).alias(c.name) for c in t.fields]
    return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*children))


def _has_fill(t: StructType, fills: Mapping[int, Any]) -> bool:
    return any(c.field_id in fills or (isinstance(c.field_type, StructType)
                                       and _has_fill(c.field_type, fills)) for c in t.fields)


def value_column(t: IcebergType, value: Any) -> Column:
    """An Iceberg value (:mod:`icepark.spec.values` form) as a Spark literal of type ``t`` in
    the read layout."""
    spark_type = to_spark_type(t, "read")
    if value is None:
        return F.lit(None).cast(spark_type)
    match t:
        case StructType():
            return F.struct(*(value_column(c.field_type, value.get(c.field_id, c.initial_default))
                              .alias(c.name) for c in t.fields))
        case ListType() | MapType():
            raise UnsupportedFeature(f"Cannot fill a missing {t} column with a non-null value "
                                     "in the Spark read path")
        case _:
            return spark_literal(t, value).cast(spark_type)


def _unknown_ids(fields: Sequence[NestedField]) -> list[int]:
    """The IDs of the ``unknown`` fields among ``fields`` and in structs below them."""
    return [f.field_id for f in _struct_fields(fields) if f.field_type == UNKNOWN]


def _stored(read_type: T.StructType, t: StructType) -> T.StructType:
    """``read_type`` (of ``t``) without its ``unknown`` fields, which no file stores."""
    if not _unknown_ids(t.fields):
        return read_type
    fields = []
    for f, s in zip(t.fields, read_type.fields, strict=True):
        if f.field_type == UNKNOWN:
            continue
        if isinstance(f.field_type, StructType) and isinstance(s.dataType, T.StructType):
            fields.append(T.StructField(s.name, _stored(s.dataType, f.field_type), s.nullable,
                                        s.metadata))
        else:
            fields.append(s)
    return T.StructType(fields)


def _struct_fields(fields: Sequence[NestedField]) -> list[NestedField]:
    """``fields`` and the fields nested in them through structs only."""
    out = []
    for f in fields:
        out.append(f)
        if isinstance(f.field_type, StructType):
            out.extend(_struct_fields(f.field_type.fields))
    return out


def _in_metrics(data_file: DataFile, schema: Schema, field_id: int) -> bool:
    """Whether the file's metrics show it has the field (False: unknown)."""
    f = schema.field_by_id(field_id)
    if f is None:
        return False
    ids = {field_id, *index_by_id(f.field_type)}
    for counts in (data_file.value_counts, data_file.column_sizes,
                   data_file.null_value_counts):
        if counts and any(i in counts for i in ids):
            return True
    return False


def _read_footers(io: FileIO, paths: Sequence[str]) -> dict[str, Any]:
    """The Arrow schemas of the files' footers, read in parallel on the driver."""
    def read(path: str) -> Any:
        with io.new_input(path).open() as f:
            return read_arrow_schema(f, path)

    if not paths:
        return {}
    return dict(zip(paths, parallel_map(read, paths, min(FOOTER_THREADS, len(paths))),
                    strict=True))


def _by_name_struct(t: StructType, arrow_fields: Any) -> T.StructType:
    """The read schema of ``t`` by the names of a file's (ID-annotated) Arrow fields."""
    by_id = {field_id_of(a): a for a in arrow_fields}
    fields = []
    for f in t.fields:
        found = by_id.get(f.field_id)
        if found is None:
            fields.append(T.StructField(f"__icepark_missing_{f.field_id}",
                                        to_spark_type(f.field_type, "read")))
        else:
            fields.append(T.StructField(found.name, _by_name_type(f.field_type, found.type)))
    return T.StructType(fields)


def _by_name_type(t: IcebergType, arrow_type: Any) -> T.DataType:
    match t:
        case StructType() if pa.types.is_struct(arrow_type):
            return _by_name_struct(t, [arrow_type.field(i) for i in range(arrow_type.num_fields)])
        case ListType() if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
            return T.ArrayType(_by_name_type(t.element_type, arrow_type.value_type),
                               not t.element_required)
        case MapType() if pa.types.is_map(arrow_type):
            return T.MapType(_by_name_type(t.key_type, arrow_type.key_type),
                             _by_name_type(t.value_type, arrow_type.item_type),
                             not t.value_required)
        case _:
            return to_spark_type(t, "read")


def _without_ids(t: Any) -> Any:
    """``t`` without ``parquet.field.id`` metadata at any level (Spark then matches by name)."""
    match t:
        case T.StructType():
            return T.StructType([T.StructField(
                f.name, _without_ids(f.dataType), f.nullable,
                {k: v for k, v in f.metadata.items() if k != FIELD_ID}) for f in t.fields])
        case T.ArrayType():
            return T.ArrayType(_without_ids(t.elementType), t.containsNull)
        case T.MapType():
            return T.MapType(_without_ids(t.keyType), _without_ids(t.valueType),
                             t.valueContainsNull)
        case _:
            return t
