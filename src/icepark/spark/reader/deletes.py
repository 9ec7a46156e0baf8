"""Applying position and equality delete files to a Spark read, as anti-joins.

Spec, *Position Delete Files*: "A data row is deleted if there is an entry in a position delete
file for the row's file and position in the data file, starting at 0." Rows are matched by
``file_path`` ("This must match the ``file_path`` of the target data file in a manifest entry",
compared as exact strings, as the Arrow reader does) and ``pos`` (``_metadata.row_index``).

Spec, *Equality Delete Files*: "A data row is deleted if its values are equal to all delete
columns for any row in an equality delete file that applies to the row's data file", where "A
``null`` value in a delete column matches a row if the row's value is ``null``" (Spark's
null-safe ``<=>``), and "If a delete column in an equality delete file is later dropped from
the table, it must still be used when applying the equality deletes" (the caller reads such
columns by field ID).

Spec, *Deletion Vectors*: "A set bit at position P indicates that the row at position P is
deleted" in the vector's ``referenced_data_file``. The vectors are decoded in Spark tasks
(``mapInArrow``: each task reads its vectors' blobs from their Puffin files by offset and
length) into ``(file number, position)`` rows, applied by the same anti-join as position
delete files.

Which delete files apply to which data file is the planner's decision (*Scan Planning*); each
delete file removes rows only of the data files it was attached to. Rows are tied to their
data file without string work per row: the data rows' raw ``_metadata.file_path`` is joined
with a small broadcast table of the exact strings Spark shows for each planned file
(:func:`icepark.spark.paths.spark_file_paths`), which gives each row its file's number and, per
group of equality delete files with the same columns, a *scope*: data files to which the same
set of that group's delete files applies share one. Equality delete rows are repeated once per
scope their file is in, so the anti-join key is ``(scope, delete columns)`` and never a
product of delete rows and data files. A row whose file is missing from the table fails the
query (``raise_error``) instead of silently escaping its deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import ValidationError
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.io.puffin.deletion_vector import read_deletion_vector
from icepark.spark.filters import field_column
from icepark.spark.frames import local_frame, with_lookup
from icepark.spark.paths import file_key, spark_file_paths
from icepark.spark.reader.listing import read_parquet
from icepark.spark.schema import FIELD_ID, read_schema
from icepark.spark.session import default_parallelism
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.reserved import FILE_PATH, POS
from icepark.spec.schema import Schema
from icepark.table.scan.scan import select_columns

SPARK_PATH = "__icepark_spath"
"""The data rows' raw ``_metadata.file_path``."""
ROW_INDEX = "__icepark_pos"
"""The data rows' ``_metadata.row_index``."""
FILE_NUMBER = "__icepark_fid"
"""The number of a row's data file: its index among the keys of ``deletes``."""
_DELETE_ID = "__icepark_did"
BROADCAST_POSITIONS = 2_000_000
"""Deleted positions (their files' record counts) up to which the position anti-join
broadcasts them (about 16 bytes each) instead of shuffling and sorting every data row: Spark
cannot estimate the size of rows its Python tasks or a join produce, so it would not
broadcast them by itself."""


def apply_deletes(spark: SparkSession, df: DataFrame, schema: Schema,
                  deletes: Mapping[str, Sequence[DataFile]],
                  data_forms: Mapping[str, tuple[str, ...]], *,
                  keep_file: bool = False, file_io: FileIO | None = None) -> DataFrame:
    """``df`` (with :data:`SPARK_PATH`, :data:`ROW_INDEX` and the columns of ``schema``)
    without the rows the delete files delete and without :data:`SPARK_PATH`; ``deletes`` maps
    each data file path of ``df`` to the delete files that apply to it (none: the file's rows
    are only numbered), ``data_forms`` the data files' keys to Spark's path strings. With
    ``keep_file``, the rows keep :data:`FILE_NUMBER` (the index of their file in ``deletes``).
    ``file_io`` reads deletion vectors in the Spark tasks (default: local files)."""
    paths = list(deletes)
    positional = _unique(d for p in paths for d in deletes[p]
                         if d.content is FileContent.POSITION_DELETES
                         and not d.is_deletion_vector)
    vectors = [(fid, d) for fid, p in enumerate(paths) for d in deletes[p]
               if d.is_deletion_vector]
    groups: dict[tuple[int, ...], list[DataFile]] = {}
    for d in _unique(d for p in paths for d in deletes[p]
                     if d.content is FileContent.EQUALITY_DELETES):
        groups.setdefault(tuple(d.equality_ids or ()), []).append(d)
    delete_ids = {d.file_path: i for i, d in enumerate([*positional, *(
        d for g in groups.values() for d in g)])}

    # data file -> (file number, one scope per equality group)
    scopes: list[dict[frozenset[str], int]] = [{} for _ in groups]
    rows: list[tuple[str | int | None, ...]] = []
    for fid, path in enumerate(paths):
        forms = data_forms.get(file_key(path))
        if forms is None:
            raise ValidationError(f"Spark did not list data file {path} among the files it "
                                  "read; cannot apply its delete files")
        applying = {d.file_path for d in deletes[path]}
        ids: list[int | None] = []
        for i, files in enumerate(groups.values()):
            chosen = frozenset(d.file_path for d in files if d.file_path in applying)
            ids.append(scopes[i].setdefault(chosen, len(scopes[i])) if chosen else None)
        rows.extend((form, fid, *ids) for form in forms)
    ddl = ", ".join([f"{SPARK_PATH} string", f"{FILE_NUMBER} int",
                     *(f"__icepark_scope{i} int" for i in range(len(groups)))])
    unplanned = F.raise_error(F.concat(
        F.lit("icepark: no planned data file matches Spark's path "), F.col(SPARK_PATH)))
    keyed = with_lookup(spark, df, SPARK_PATH, rows, ddl,
                        otherwise={FILE_NUMBER: unplanned.cast("int")})

    if positional:
        keyed = _apply_positions(spark, keyed, files=positional, paths=paths, deletes=deletes,
                                 delete_ids=delete_ids)
    if vectors:
        deleted = deletion_vector_rows(spark, vectors, file_io)
        small = sum(d.record_count for _, d in vectors) <= BROADCAST_POSITIONS
        keyed = keyed.join(F.broadcast(deleted) if small else deleted,
                           [FILE_NUMBER, ROW_INDEX], "left_anti")
    for i, (equality_ids, group) in enumerate(groups.items()):
        keyed = _apply_equality(spark, keyed, schema, equality_ids=equality_ids, files=group,
                                scopes=scopes[i], delete_ids=delete_ids,
                                scope_column=f"__icepark_scope{i}")
    dropped = [SPARK_PATH, *(f"__icepark_scope{i}" for i in range(len(groups)))]
    return keyed.drop(*dropped) if keep_file else keyed.drop(FILE_NUMBER, *dropped)


def deletion_vector_rows(spark: SparkSession, vectors: Sequence[tuple[int, DataFile]],
                         file_io: FileIO | None = None) -> DataFrame:
    """``(FILE_NUMBER, ROW_INDEX)`` of every position the deletion vectors delete, decoded in
    Spark tasks; ``vectors`` pairs each vector with the number of the data file it
    references."""
    records = [dv for _, dv in vectors]
    io = file_io or ArrowFileIO()
    numbers = local_frame(spark, [(i, fid) for i, (fid, _) in enumerate(vectors)],
                          f"__icepark_dv int, {FILE_NUMBER} int")
    partitions = max(1, min(len(records), default_parallelism(spark)))

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index, fid in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                  strict=True):
                positions = read_deletion_vector(io, records[index])
                yield pa.record_batch([pa.array(np.full(len(positions), fid, np.int32)),
                                       pa.array(positions, pa.int64())],
                                      names=[FILE_NUMBER, ROW_INDEX])

    return numbers.repartition(partitions).mapInArrow(
        decode, f"{FILE_NUMBER} int, {ROW_INDEX} long")


def _unique(files: Iterable[DataFile]) -> list[DataFile]:
    seen: dict[str, DataFile] = {}
    for d in files:
        seen.setdefault(d.file_path, d)
    return list(seen.values())


def _delete_rows(spark: SparkSession, read_type: T.StructType, files: Sequence[DataFile],
                 delete_ids: Mapping[str, int]) -> DataFrame:
    """The delete files' rows with their file's number (:data:`_DELETE_ID`)."""
    raw = read_parquet(spark, read_type, [d.file_path for d in files])
    forms = spark_file_paths(raw)
    mapping: list[tuple[str, int]] = []
    for d in files:
        found = forms.get(file_key(d.file_path))
        if found is None:
            raise ValidationError(f"Spark did not list delete file {d.file_path}")
        mapping.extend((form, delete_ids[d.file_path]) for form in found)
    ids = local_frame(spark, mapping, f"__icepark_dpath string, {_DELETE_ID} int")
    return raw.withColumn("__icepark_dpath", F.col("_metadata.file_path")).join(
        F.broadcast(ids), "__icepark_dpath").drop("__icepark_dpath")


def _apply_positions(spark: SparkSession, df: DataFrame, *, files: Sequence[DataFile],
                     paths: Sequence[str], deletes: Mapping[str, Sequence[DataFile]],
                     delete_ids: Mapping[str, int]) -> DataFrame:
    read_type = T.StructType([
        T.StructField("file_path", T.StringType(), False, {FIELD_ID: FILE_PATH.field_id}),
        T.StructField("pos", T.LongType(), False, {FIELD_ID: POS.field_id})])
    scope = local_frame(
        spark,
        [(delete_ids[d.file_path], path, fid) for fid, path in enumerate(paths)
         for d in deletes[path]
         if d.content is FileContent.POSITION_DELETES and not d.is_deletion_vector],
        f"{_DELETE_ID} int, file_path string, {FILE_NUMBER} int")
    rows = (_delete_rows(spark, read_type, files, delete_ids)
            .join(F.broadcast(scope), [_DELETE_ID, "file_path"])
            .select(FILE_NUMBER, F.col("pos").alias(ROW_INDEX)))
    small = sum(d.record_count for d in files) <= BROADCAST_POSITIONS
    return df.join(F.broadcast(rows) if small else rows, [FILE_NUMBER, ROW_INDEX], "left_anti")


def _apply_equality(spark: SparkSession, df: DataFrame, schema: Schema, *,
                    equality_ids: tuple[int, ...], files: Sequence[DataFile],
                    scopes: Mapping[frozenset[str], int], delete_ids: Mapping[str, int],
                    scope_column: str) -> DataFrame:
    fields = [schema.field_by_id(i) for i in equality_ids]
    missing = [i for i, f in zip(equality_ids, fields, strict=True) if f is None]
    if missing:
        raise ValidationError(f"Equality delete column {missing[0]} is not in the read schema")
    # the delete file's columns, read by ID with the data's types (nested ones in their
    # structs), then flat and uniquely named
    pruned = select_columns(schema, [n for i in equality_ids
                                     if (n := schema.find_column_name(i)) is not None])
    names = [f"__icepark_eq{fid}" for fid in equality_ids]
    pairs = [(delete_ids[d], scope) for chosen, scope in scopes.items() for d in chosen]
    scope_df = local_frame(spark, pairs, f"{_DELETE_ID} int, __icepark_dscope int")
    rows = (_delete_rows(spark, read_schema(pruned), files, delete_ids)
            .join(F.broadcast(scope_df), _DELETE_ID)
            .select("__icepark_dscope", *(field_column(pruned, i).alias(n)
                                          for i, n in zip(equality_ids, names, strict=True))))
    condition: Column = F.col(scope_column) == F.col("__icepark_dscope")
    condition = reduce(lambda acc, pair: acc & field_column(schema, pair[0]).eqNullSafe(
        F.col(pair[1])), zip(equality_ids, names, strict=True), condition)
    return df.join(rows, condition, "left_anti")
