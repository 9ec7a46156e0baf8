"""Writing rows: Arrow data in, Parquet data files out, one snapshot committed.

Spec, *Default values*: "The write default for a field must be written if a field is not
supplied to a write. If the write default for a required field is not set, the writer must
fail." and "Omitting a known field when writing a data file is never allowed." Input is matched
to the table schema by name (:func:`prepare`): a missing field gets its ``write-default`` (or
null if it is optional), a missing required field without one and any column the schema does
not have raise :class:`ValidationError` naming the column before a file is written.

Spec, *Partitioning*: "Partition values for a data file must be the same for all records
stored in the data file." Rows are split by the default spec's partition tuples
(:func:`icepark.io.arrow.transforms.partition_batches`), sorted within each file by the default
sort order when the table has one (its order ID is recorded in each file), and written by
:class:`~icepark.io.parquet.data_writer.DataFileWriter` at the locations of
:class:`~icepark.table.snapshot.locations.LocationProvider`, honoring the ``write.*`` properties
and the
target file size. The files are then committed by an action -- an append ("Only data files were
added and no files were removed"), an overwrite ("Data and delete files were added and removed
in a logical overwrite operation") or a delete -- that deletes them if the commit fails for a
known reason and keeps them when the outcome is unknown.

A ``pa.Table`` is validated and conformed whole before the first file is opened. A
``pa.RecordBatchReader`` is streamed into one open writer per partition (each buffering at most
one row group), unless the table has a sort order, which needs all rows first; a batch that
fails validation mid-stream deletes every file written so far.

Choices where the spec is silent: an append or overwrite of no rows still commits a snapshot
(as the reference implementation's actions do); an overwrite validates, like a
serializable Spark overwrite, that no data matching its filter was added concurrently
(``write.overwrite.isolation-level``); NaN partition values form one partition.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeAlias, TypeVar, cast

import numpy as np
import pyarrow as pa

from icepark.errors import ValidationError
from icepark.expressions import (
    AlwaysTrue,
    BoundPredicate,
    BoundVisitor,
    Expr,
    RowEvaluator,
    visit,
)
from icepark.io.arrow.schema import conform_batch, to_arrow_schema
from icepark.io.arrow.transforms import (
    from_python_values,
    partition_batches,
    sort_table,
    source_column,
    to_python_values,
)
from icepark.io.fileio import FileIO
from icepark.io.parquet.data_writer import DataFileWriter
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.types import ListType, MapType, NestedField, StructType
from icepark.table.change.commit import Change
from icepark.table.snapshot.append import FastAppend, MergeAppend, merge_enabled
from icepark.table.snapshot.locations import LocationProvider
from icepark.table.snapshot.overwrite import DeleteFiles, Overwrite, RewriteFiles
from icepark.table.snapshot.producer import SnapshotProducer
from icepark.table.snapshot.row_delta import RowDelta
from icepark.table.snapshot.validation import as_expr

WriteData: TypeAlias = "pa.Table | pa.RecordBatchReader | pa.RecordBatch"
"""What the write API accepts: a table, a record batch, or a stream of batches."""
Submit = Callable[[Sequence[Change]], None]

# ----------------------------------------------------------------------------- input


def check_columns(arrow_fields: Iterable[Any], fields: Sequence[NestedField],
                  path: str = "") -> None:
    """Match input fields to the schema's by name: extra fields, and missing required fields
    without a write-default, raise :class:`ValidationError` naming them.

    >>> from icepark.spec.types import LONG
    >>> check_columns([pa.field("x", pa.int64())], [NestedField.required(1, "id", LONG)])
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Column(s) 'x' are not in the table schema
    """
    given = {f.name: f.type for f in arrow_fields}
    extra = sorted(set(given) - {f.name for f in fields})
    if extra:
        shown = ", ".join(repr(path + n) for n in extra)
        raise ValidationError(f"Column(s) {shown} are not in the table schema")
    for f in fields:
        arrow_type = given.get(f.name)
        if arrow_type is None:
            if f.is_required and f.write_default is None:
                raise ValidationError(f"Column {path + f.name!r} is required but missing from "
                                      "the data, and it has no write-default")
            continue
        nested = _nested(f.field_type, arrow_type)
        for child_fields, child_arrow, suffix in nested:
            check_columns(child_arrow, child_fields, f"{path}{f.name}{suffix}.")


def _nested(t: Any, arrow_type: Any) -> list[tuple[Sequence[NestedField], Any, str]]:
    """The struct levels below a field, through lists and maps: (schema fields, Arrow fields,
    path suffix)."""
    types = pa.types
    match t:
        case StructType() if types.is_struct(arrow_type):
            return [(t.fields, list(arrow_type), "")]
        case ListType() if types.is_list(arrow_type) or types.is_large_list(arrow_type):
            inner, suffix = _nested(t.element_type, arrow_type.value_type), ".element"
        case MapType() if types.is_map(arrow_type):
            inner, suffix = _nested(t.value_type, arrow_type.item_type), ".value"
        case _:
            return []
    return [(fields, arrow, suffix + rest) for fields, arrow, rest in inner]


def _constant(f: NestedField, length: int) -> pa.Array:
    one = from_python_values([f.write_default], f.field_type)
    return one.take(pa.array(np.zeros(length, dtype=np.int32)))


def _filled(columns: list[Any], names: list[str], struct: StructType,
            length: int) -> tuple[list[Any], list[str], bool]:
    """Struct ``columns`` with the write-defaults of missing fields appended, recursively into
    struct columns; whether anything changed."""
    changed = False
    out = []
    for column, name in zip(columns, names, strict=True):
        f = struct.field_by_name(name)
        if f is not None and isinstance(f.field_type, StructType) \
                and pa.types.is_struct(column.type):
            children = [column.field(i) for i in range(column.type.num_fields)]
            child_names = [column.type.field(i).name for i in range(column.type.num_fields)]
            children, child_names, inner = _filled(children, child_names, f.field_type,
                                                   len(column))
            if inner:
                mask = column.is_null() if column.null_count else None
                out.append(pa.StructArray.from_arrays(children, child_names, mask=mask))
                changed = True
                continue
        out.append(column)
    missing = [f for f in struct.fields if f.name not in names and f.write_default is not None]
    return ([*out, *(_constant(f, length) for f in missing)],
            [*names, *(f.name for f in missing)], changed or bool(missing))


def fill_write_defaults(batch: pa.RecordBatch, schema: Schema) -> pa.RecordBatch:
    """``batch`` with every missing field that has a ``write-default`` filled with it, at the
    top level and inside structs ("The write default for a field must be written if a field is
    not supplied to a write"). Inside lists and maps a missing field is null (or an error
    from :func:`check_columns` when it is required).

    >>> from icepark.spec.types import LONG
    >>> s = Schema.of(NestedField.required(1, "id", LONG),
    ...               NestedField.required(2, "n", LONG, write_default=7))
    >>> fill_write_defaults(pa.record_batch({"id": [1, 2]}), s).column("n").to_pylist()
    [7, 7]
    """
    columns, names, changed = _filled(list(batch.columns), list(batch.schema.names),
                                      schema.as_struct(), batch.num_rows)
    return pa.RecordBatch.from_arrays(columns, names=names) if changed else batch


def prepare(batch: pa.RecordBatch, schema: Schema, arrow_schema: Any) -> pa.RecordBatch:
    """One input batch with write-defaults filled, matched and cast to the table schema."""
    return conform_batch(fill_write_defaults(batch, schema), schema, arrow_schema)


# ----------------------------------------------------------------------------- rows


class _References(BoundVisitor[set[int]]):
    def always_true(self) -> set[int]:
        return set()

    def always_false(self) -> set[int]:
        return set()

    def and_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def or_(self, left: set[int], right: set[int]) -> set[int]:
        return left | right

    def predicate(self, p: BoundPredicate) -> set[int]:
        return {p.field_id}


def check_rows_match(table: pa.Table, evaluator: RowEvaluator, row_filter: Expr) -> None:
    """Raise :class:`ValidationError` unless every row of ``table`` (conformed to the
    evaluator's schema) matches the filter; each distinct combination of the filtered columns'
    values is evaluated once."""
    if isinstance(evaluator.bound, AlwaysTrue) or table.num_rows == 0:
        return
    schema = evaluator.schema
    referenced: set[int] = visit(evaluator.bound, _References())
    ids = sorted(referenced)
    columns = {str(i): source_column(table, schema, i) for i in ids}
    columns = {k: c.cast(c.type.storage_type) if isinstance(c.type, pa.BaseExtensionType)
               else c for k, c in columns.items()}
    distinct = pa.table(columns) if columns else pa.table({"_": [0]})
    with contextlib.suppress(pa.ArrowNotImplementedError, pa.ArrowInvalid,
                             pa.ArrowTypeError):
        distinct = distinct.group_by(distinct.column_names).aggregate([])
    values = [to_python_values(distinct.column(str(i)), schema.find_type(i)) for i in ids]
    paths = [_positions(schema, i) for i in ids]
    for k in range(distinct.num_rows):
        row = _sparse_row(schema, paths, [v[k] for v in values])
        if not evaluator.eval(row):
            shown = ", ".join(f"{schema.find_column_name(i)}={v[k]!r}"
                              for i, v in zip(ids, values, strict=True))
            raise ValidationError(f"Cannot overwrite with a row outside the overwrite filter "
                                  f"{row_filter}: a row has {shown or 'no match'}; every "
                                  "written row must match the filter")


def _positions(schema: Schema, field_id: int) -> list[int]:
    accessor: Any = schema.accessor(field_id)
    out = []
    while accessor is not None:
        out.append(accessor.position)
        accessor = accessor.inner
    return out


def _sparse_row(schema: Schema, paths: list[list[int]], values: list[Any]) -> list[Any]:
    """A row in schema order (structs as lists) holding only ``values`` at their positions; a
    leaf that is null because its struct is null reads the same through an accessor."""
    row: list[Any] = [None] * len(schema.fields)
    for path, value in zip(paths, values, strict=True):
        container, fields = row, schema.fields
        for position in path[:-1]:
            struct = fields[position].field_type
            assert isinstance(struct, StructType)
            if container[position] is None:
                container[position] = [None] * len(struct.fields)
            container, fields = container[position], struct.fields
        container[path[-1]] = value
    return row


# ----------------------------------------------------------------------------- files


def _partition_key(partition: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(("nan",) if isinstance(v, float) and math.isnan(v) else v for v in partition)


class _Writers:
    """The open data file writers of one write, by partition; every file is deleted on abort."""

    def __init__(self, file_io: FileIO, metadata: TableMetadata) -> None:
        self._io = file_io
        self.schema = metadata.schema()
        self.spec = metadata.spec()
        self.order = metadata.sort_order()
        self.spec.check_writable()  # no unknown transforms: before any file is written
        self.order.check_writable()
        self._properties = metadata.properties
        self._locations = LocationProvider.of(metadata)
        self._open: dict[tuple[Any, ...], DataFileWriter] = {}
        self._files: list[DataFile] = []

    def write(self, partition: tuple[Any, ...], rows: pa.Table, keep_open: bool) -> None:
        key = _partition_key(partition)
        writer = self._open.get(key)
        if writer is None:
            writer = DataFileWriter(
                self._io, self._locations.data_file_namer(self.spec, self.schema, partition),
                self.schema, self.spec, partition, self._properties,
                None if self.order.is_unsorted else self.order.order_id)
            self._open[key] = writer
        writer.write(rows)
        if not keep_open:
            self._files += self._open.pop(key).close()

    def close(self) -> list[DataFile]:
        while self._open:
            self._files += self._open.popitem()[1].close()
        return self._files

    def abort(self) -> None:
        for writer in self._open.values():
            writer.abort()
        self._open.clear()
        for data_file in self._files:
            with contextlib.suppress(Exception):
                self._io.delete(data_file.file_path)
        self._files = []


def write_files(file_io: FileIO, metadata: TableMetadata, data: WriteData,
                row_check: Callable[[pa.Table], None] | None = None) -> list[DataFile]:
    """Write ``data`` as data files of ``metadata``'s current schema, default spec and sort
    order (see the module docstring); ``row_check`` sees every conformed batch before it is
    written. On any error every file written is deleted."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table | pa.RecordBatchReader):
        raise ValidationError(f"Cannot write {type(data).__name__}: expected a pyarrow Table, "
                              "RecordBatch or RecordBatchReader")
    writers = _Writers(file_io, metadata)
    schema, arrow_schema = writers.schema, to_arrow_schema(writers.schema)
    check_columns(data.schema, schema.fields)
    conform_batch(prepare_empty(data.schema), schema, arrow_schema)  # types, before any file

    def conformed(batches: Iterable[pa.RecordBatch]) -> pa.Table:
        table = pa.Table.from_batches([prepare(b, schema, arrow_schema) for b in batches],
                                      schema=arrow_schema)
        if row_check is not None:
            row_check(table)
        return table

    try:
        if isinstance(data, pa.RecordBatchReader) and writers.order.is_unsorted:
            for batch in data:
                for partition, rows in partition_batches(conformed([batch]), schema,
                                                         writers.spec):
                    writers.write(partition, rows, keep_open=True)
        else:
            table = conformed(data.read_all().to_batches()
                              if isinstance(data, pa.RecordBatchReader) else data.to_batches())
            for partition, rows in partition_batches(table, schema, writers.spec):
                writers.write(partition, sort_table(rows, schema, writers.order), keep_open=False)
        return writers.close()
    except BaseException:
        writers.abort()
        raise


def prepare_empty(arrow_schema: Any) -> pa.RecordBatch:
    """An empty batch of the input's schema, to check its types before anything is written."""
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in arrow_schema],
                                      schema=arrow_schema)


# ----------------------------------------------------------------------------- actions

P = TypeVar("P", bound=SnapshotProducer)


def register(producer: P, files: Sequence[DataFile], add: Callable[[DataFile], Any]) -> P:
    """Add ``files`` (written for ``producer``) and have a known commit failure delete them."""
    producer.delete_on_failure(*(f.file_path for f in files))
    try:
        for data_file in files:
            add(data_file)
    except BaseException:
        producer.clean_up(committed=False)
        raise
    return producer


def append_change(file_io: FileIO, metadata: TableMetadata, data: WriteData, *,
                  branch: str = MAIN_BRANCH,
                  snapshot_properties: Mapping[str, str] | None = None) -> SnapshotProducer:
    """Write ``data`` and return the table's default append (a merge append unless
    ``commit.manifest-merge.enabled`` is false) registering the files."""
    kind = MergeAppend if merge_enabled(metadata.properties) else FastAppend
    producer = kind(file_io, metadata, branch=branch, snapshot_properties=snapshot_properties)
    files = write_files(file_io, metadata, data)
    return register(producer, files, producer.append_file)


def overwrite_change(file_io: FileIO, metadata: TableMetadata, data: WriteData,
                     overwrite_filter: str | Expr, *, branch: str = MAIN_BRANCH,
                     snapshot_properties: Mapping[str, str] | None = None,
                     case_sensitive: bool = True) -> Overwrite:
    """Check that every row of ``data`` matches ``overwrite_filter``, write it, and return an
    overwrite removing the files whose rows all match the filter (a file only partly matching
    fails the commit: that needs row-level deletes) and adding the new ones."""
    expr = as_expr(overwrite_filter)
    producer = Overwrite(file_io, metadata, branch=branch,
                         snapshot_properties=snapshot_properties, case_sensitive=case_sensitive)
    producer.delete_where(expr).validate_no_conflicting_appends(producer.starting_snapshot_id)
    evaluator = RowEvaluator(metadata.schema(), expr, case_sensitive)
    files = write_files(file_io, metadata, data,
                        lambda rows: check_rows_match(rows, evaluator, expr))
    return register(producer, files, producer.add_file)


# ----------------------------------------------------------------------------- bound producers


class _Bound:
    """A producer opened on a table or transaction: :meth:`commit` (or leaving its ``with``
    block without an error) commits it there; an error in the block abandons it."""

    _submit_to: Submit | None = None

    def commit(self) -> None:
        """Commit this change (or stage it, in a transaction)."""
        if self._submit_to is None:
            raise ValidationError(f"This {type(self).__name__} was already committed")
        submit, self._submit_to = self._submit_to, None
        submit([cast(Change, self)])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            if self._submit_to is not None:
                self.commit()
        else:
            self._submit_to = None
            cast(Change, self).clean_up(committed=False)


class BoundFastAppend(_Bound, FastAppend):
    """A :class:`~icepark.table.snapshot.append.FastAppend` that commits to its table."""


class BoundMergeAppend(_Bound, MergeAppend):
    """A :class:`~icepark.table.snapshot.append.MergeAppend` that commits to its table."""


class BoundOverwrite(_Bound, Overwrite):
    """An :class:`~icepark.table.snapshot.overwrite.Overwrite` that commits to its table."""


class BoundDeleteFiles(_Bound, DeleteFiles):
    """A :class:`~icepark.table.snapshot.overwrite.DeleteFiles` that commits to its table."""


class BoundRewriteFiles(_Bound, RewriteFiles):
    """A :class:`~icepark.table.snapshot.overwrite.RewriteFiles` that commits to its table."""


class BoundRowDelta(_Bound, RowDelta):
    """A :class:`~icepark.table.snapshot.row_delta.RowDelta` that commits to its table."""


B = TypeVar("B", bound=_Bound)


def bind(producer: B, submit: Submit) -> B:
    """``producer``, committing through ``submit`` (a table's commit or a transaction's add)."""
    producer._submit_to = submit
    return producer
