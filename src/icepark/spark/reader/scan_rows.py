"""The live rows of planned scan tasks, read with Spark's own Parquet reader: the one row reader
behind :func:`icepark.spark.reader.read.read`, :func:`~icepark.spark.reader.read.read_incremental`
and
:func:`icepark.spark.rowlevel.delete.delete_rows`.

Spec, *Scan Planning*: "Data files that match the query filter must be read by the scan" and
"Delete files that match the query filter must be applied to data files at read time". The
tasks' data files are read by field ID (spec, *Column Projection*: "Columns in Iceberg data
files are selected by field id"), or through the table's name mapping when they have none, with
the identity-partition and ``initial-default`` fills of :mod:`icepark.spark.reader.files`; the
delete files the planner attached to each task are applied as anti-joins
(:mod:`icepark.spark.reader.deletes`): position deletes always, equality deletes only in their
partition ("The data file's partition (both spec and partition values) is equal to the delete
file's partition *or* the delete file's partition spec is unpartitioned"). An equality delete
column must be read even when the table dropped it: "If a delete column in an equality delete
file is later dropped from the table, it must still be used when applying the equality
deletes".

On request each row keeps its data file's number (:data:`FILE_NUMBER`, an index into
:attr:`ScanRows.files`) and its position in that file (:data:`ROW_POSITION`, Spark's
``_metadata.row_index``: "position in the data file, starting at 0", as position deletes
count), and the metadata columns ``_file``, ``_pos``, ``_spec_id`` and the v3 row lineage
columns ``_row_id`` and ``_last_updated_sequence_number`` (spec, *Row lineage assignment*: a
stored non-null value as it is, else "the ``first_row_id`` from its containing data file plus
the row position" and "the ``sequence_number`` of the data file's manifest entry"; null for a
file without a ``first_row_id``). The lineage columns a file stores are read by their reserved
field IDs; the per-file values come from a small broadcast table. Rows are tied to files by
joining their raw ``_metadata.file_path`` with a small broadcast table of Spark's path strings
per planned file, after the ``condition`` (when given) has dropped the rows it does not keep:
no string work per row.

Where Spark cannot open the files (an object store without its Hadoop connector:
:func:`icepark.spark.storage.data_path`), the same rows, columns and metadata columns come from
icepark's Arrow reader in Python tasks instead (:mod:`icepark.spark.reader.arrow_rows`), which
applies the delete files itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.expressions.expr import ALWAYS_TRUE, Expr
from icepark.io.arrow.name_mapping import name_mapping_from_properties
from icepark.spark.frames import with_lookup
from icepark.spark.paths import spark_file_paths
from icepark.spark.reader.arrow_rows import arrow_rows
from icepark.spark.reader.deletes import FILE_NUMBER, ROW_INDEX, SPARK_PATH, apply_deletes
from icepark.spark.reader.files import group_columns, group_files, reads_as_is
from icepark.spark.reader.listing import read_parquet
from icepark.spark.schema import read_schema
from icepark.spark.storage import data_path, unopenable
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from icepark.spec.schema import Schema
from icepark.spec.types import NestedField
from icepark.table.scan.scan import select_columns
from icepark.table.scan.tasks import FileScanTask
from icepark.table.snapshot.validation import may_apply
from icepark.table.table import Table

ROW_POSITION = ROW_INDEX
"""The column of a row's position in its data file (a long), with ``positions=True``."""
METADATA_COLUMNS = ("_file", "_pos", "_spec_id", ROW_ID.name, LAST_UPDATED_SEQUENCE_NUMBER.name)
"""The metadata columns :func:`scan_rows` adds on request (spec, *Reserved Field IDs*)."""
STORED_LINEAGE = {f.name: f"__icepark_stored{f.name}" for f in LINEAGE_FIELDS}
"""The names under which the lineage columns a data file stores are read."""

__all__ = ["FILE_NUMBER", "METADATA_COLUMNS", "ROW_POSITION", "STORED_LINEAGE", "ScanRows",
           "check_parquet", "scan_rows"]


@dataclass(frozen=True)
class ScanRows:
    """The live rows of some scan tasks and what they hold."""

    rows: DataFrame
    """The columns of :attr:`schema` in the read layout (:func:`~icepark.spark.schema.read_schema`
    names and types), plus :data:`FILE_NUMBER` and :data:`ROW_POSITION` when asked for."""
    schema: Schema
    """The columns read: the ones asked for plus the equality delete columns (those dropped
    from the table as extra top-level ``__icepark_eq_<id>`` columns)."""
    files: tuple[DataFile, ...]
    """The data files read; :data:`FILE_NUMBER` is an index into it."""
    relation: DataFrame | None = None
    """The one file relation :attr:`rows` are, filtered or not (a filter keeps its child's
    schema), else None."""

    @property
    def spark_schema(self) -> T.StructType:
        """The Spark schema of :attr:`rows`: the relation's when there is one, which PySpark
        remembers on a relation the session keeps (:mod:`icepark.spark.reader.listing`), so
        Spark is asked once per relation, not once per read (two calls into the JVM)."""
        return (self.rows if self.relation is None else self.relation).schema


def scan_rows(spark: SparkSession, table: Table, tasks: Sequence[FileScanTask],
              schema: Schema, names: Sequence[str], *, condition: Column | None = None,
              positions: bool = False, case_sensitive: bool = True,
              metadata_columns: Sequence[str] = (), row_filter: Expr | None = None) -> ScanRows:
    """The rows of ``tasks``' data files that none of their delete files deletes, with the
    columns ``names`` (full dotted names of ``schema``, ``*`` for all), kept only where
    ``condition`` (a Spark condition over those columns) is true; with ``positions``, each row
    also has its file's number and its position in the file; ``metadata_columns`` (of
    :data:`METADATA_COLUMNS`) are added last, by name. The lineage columns need the tasks to
    be planned with ``row_lineage`` (their data sequence numbers). ``row_filter``, if given,
    is ``condition`` as an Iceberg expression over ``schema``: the Python data path
    (:mod:`icepark.spark.reader.arrow_rows`) prunes row groups with it.

    Raises :class:`~icepark.errors.UnsupportedFeature` for a non-Parquet data or delete file.
    """
    unknown = [c for c in metadata_columns if c not in METADATA_COLUMNS]
    if unknown:
        raise ValidationError(f"Unknown metadata column(s) {unknown}: the Spark reader "
                              f"provides {list(METADATA_COLUMNS)}")
    metadata = table.metadata
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    deletes: dict[str, list[DataFile]] = {}
    files: dict[str, DataFile] = {}
    for task in tasks:
        check_parquet(task.data_file, task.data_file)
        files.setdefault(task.data_file.file_path, task.data_file)
        applying = deletes.setdefault(task.data_file.file_path, [])
        for d in task.delete_files:
            check_parquet(d, task.data_file)
            if (d.content is FileContent.POSITION_DELETES
                    or may_apply(d, task.data_file, unpartitioned)):
                applying.append(d)
    equality_ids = {i for found in deletes.values() for d in found
                    if d.content is FileContent.EQUALITY_DELETES for i in d.equality_ids or ()}
    extended = _with_equality_columns(metadata, schema, names, equality_ids, case_sensitive)
    read = extended
    lineage = [f for f in LINEAGE_FIELDS if f.name in metadata_columns]
    if lineage:  # the values files store, by their reserved IDs
        stored = tuple(NestedField.optional(f.field_id, STORED_LINEAGE[f.name], f.field_type)
                       for f in lineage)
        read = Schema((*extended.fields, *stored), extended.schema_id)
    if not files:
        extra = [T.StructField(FILE_NUMBER, T.IntegerType(), False),
                 T.StructField(ROW_POSITION, T.LongType(), False)] if positions else []
        extra += [_metadata_field(name) for name in metadata_columns]
        empty = T.StructType([*read_schema(extended).fields, *extra])
        return ScanRows(spark.createDataFrame([], empty), extended, ())

    if data_path(spark, _locations(files.values(), deletes)) == "python":
        seqs = {t.data_file.file_path: t.data_sequence_number for t in tasks}
        rows = arrow_rows(spark, table, extended,
                          [(f, tuple(deletes[p]), seqs.get(p)) for p, f in files.items()],
                          full_schema=schema, positions=positions,
                          metadata_columns=metadata_columns,
                          metadata_fields=[_metadata_field(n) for n in metadata_columns],
                          row_filter=ALWAYS_TRUE if row_filter is None or condition is None
                          else row_filter, case_sensitive=case_sensitive)
        return ScanRows(rows if condition is None else rows.filter(condition), extended,
                        tuple(files.values()))

    tagged = positions or any(deletes.values()) or bool(metadata_columns)
    specs = {s.spec_id: s for s in metadata.partition_specs}
    mapping = name_mapping_from_properties(metadata.properties)
    frames, forms = [], {}
    for group in group_files(table.io, list(files.values()), read, specs, mapping):
        try:
            raw = read_parquet(spark, group.read_type, group.paths)
        except Exception as e:
            typed = unopenable(e, group.paths[0])
            if typed is None:
                raise
            raise typed from None
        as_is = reads_as_is(group, read)
        if as_is and not tagged:
            frames.append(raw)
            continue
        columns = [F.col("*")] if as_is else group_columns(group, read)
        if tagged:
            forms.update(spark_file_paths(raw))
            columns += [F.col("_metadata.file_path").alias(SPARK_PATH),
                        F.col("_metadata.row_index").alias(ROW_INDEX)]
        frames.append(raw.select(*columns))
    df = reduce(DataFrame.union, frames)
    relation = df if len(frames) == 1 and not tagged and df is raw else None
    if condition is not None:
        df = df.filter(condition)
    if tagged:
        df = apply_deletes(spark, df, extended, deletes, forms,
                           keep_file=positions or bool(metadata_columns), file_io=table.io)
    if metadata_columns:
        seqs = {t.data_file.file_path: t.data_sequence_number for t in tasks}
        df = _with_metadata(spark, df, list(files.values()), seqs, metadata_columns)
        if not positions:
            df = df.drop(FILE_NUMBER, ROW_POSITION)
    return ScanRows(df, extended, tuple(files.values()), relation)


def _locations(files: Iterable[DataFile], deletes: Mapping[str, Sequence[DataFile]]
               ) -> Iterator[str]:
    """The locations of the data files and their delete files."""
    for f in files:
        yield f.file_path
        for d in deletes.get(f.file_path, ()):
            yield d.file_path


def _metadata_field(name: str) -> T.StructField:
    """The Spark field of a metadata column."""
    return {"_file": T.StructField("_file", T.StringType(), False),
            "_pos": T.StructField("_pos", T.LongType(), False),
            "_spec_id": T.StructField("_spec_id", T.IntegerType(), False)}.get(
        name, T.StructField(name, T.LongType(), True))


def _with_metadata(spark: SparkSession, df: DataFrame, files: Sequence[DataFile],
                   seqs: dict[str, int | None], names: Sequence[str]) -> DataFrame:
    """``df`` (with :data:`FILE_NUMBER` and :data:`ROW_POSITION`) with the metadata columns
    ``names``, from a table of each file's path, spec, first row ID and data sequence number
    (:func:`~icepark.spark.frames.with_lookup`)."""
    rows = [(i, f.file_path, f.spec_id, f.first_row_id, seqs.get(f.file_path))
            for i, f in enumerate(files)]
    ddl = (f"{FILE_NUMBER} int, __icepark_path string, __icepark_spec int, "
           "__icepark_first long, __icepark_seq long")
    df = with_lookup(spark, df, FILE_NUMBER, rows, ddl)
    first = F.col("__icepark_first")
    position = F.col(ROW_POSITION)
    values = {
        "_file": F.col("__icepark_path"),
        "_pos": position,
        "_spec_id": F.col("__icepark_spec"),
        ROW_ID.name: F.when(first.isNull(), F.lit(None).cast("long")).otherwise(
            F.coalesce(F.col(STORED_LINEAGE[ROW_ID.name]), first + position)),
        LAST_UPDATED_SEQUENCE_NUMBER.name: F.when(first.isNull(), F.lit(None).cast(
            "long")).otherwise(F.coalesce(F.col(STORED_LINEAGE[
                LAST_UPDATED_SEQUENCE_NUMBER.name]), F.col("__icepark_seq"))),
    }
    df = df.select("*", *(values[n].alias(n) for n in names))
    return df.drop("__icepark_path", "__icepark_spec", "__icepark_first", "__icepark_seq",
                   *(STORED_LINEAGE[n] for n in names if n in STORED_LINEAGE))


def check_parquet(f: DataFile, data_file: DataFile) -> None:
    """Raise :class:`~icepark.errors.UnsupportedFeature` unless ``f`` (``data_file`` or one of
    its delete files) is a Parquet file or a deletion vector."""
    if f.is_deletion_vector:
        return
    if f.file_format is not FileFormat.PARQUET:
        raise UnsupportedFeature(
            f"Cannot read {data_file.file_path} with Spark: only Parquet files are supported, "
            f"and {f.file_path} is {f.file_format}")


def _with_equality_columns(metadata: TableMetadata, full: Schema, names: Sequence[str],
                           equality_ids: set[int], case_sensitive: bool) -> Schema:
    """The columns to read: ``names`` (of ``full``) plus the equality delete columns, those
    still in the table by their names, those dropped from it as extra top-level columns typed
    as when they were last there."""
    present = sorted(i for i in equality_ids if full.field_by_id(i) is not None)
    schema = select_columns(full, [*names, *(n for i in present
                                             if (n := full.find_column_name(i)) is not None)],
                            case_sensitive)
    extras = [_dropped_field(metadata, fid) for fid in sorted(equality_ids - set(present))]
    return Schema((*schema.fields, *extras), schema.schema_id) if extras else schema


def _dropped_field(metadata: TableMetadata, field_id: int) -> NestedField:
    """An equality delete column no longer in the table, from the last schema that had it."""
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id, reverse=True):
        f = schema.field_by_id(field_id)
        if f is None:
            continue
        if schema.parent_id(field_id) is not None:
            raise UnsupportedFeature(
                f"Equality delete column {f.name!r} ({field_id}) was dropped from the table "
                "while nested in a struct; the Spark read path cannot read it")
        return NestedField.optional(field_id, f"__icepark_eq_{field_id}", f.field_type)
    raise UnsupportedFeature(f"Equality delete column {field_id} is in no schema of the "
                             "table; cannot type it for the Spark read path")
