"""The reader kernel: scan tasks in, Arrow record batches of the projected schema out.

For each task the reader opens the data file, resolves its columns by field ID
(:mod:`icepark.io.arrow.projection`), reads only the row groups of the task's split and only the
columns the projection, the filter and the equality deletes need, and streams batches:

1. Spec, *Position Delete Files*: "A data row is deleted if there is an entry in a position
   delete file for the row's file and position in the data file, starting at 0." A row's
   position is its ordinal in the whole file, counted over all row groups before it, also
   those the task does not read.
2. Spec, *Equality Delete Files*: "A data row is deleted if its values are equal to all delete
   columns for any row in an equality delete file that applies to the row's data file", with
   nulls equal to nulls, by the delete file's field IDs, whether or not the columns are
   projected or still in the table (:mod:`icepark.io.arrow.deletes`).
3. The scan's row filter and the task's residual, with the SQL semantics of
   :class:`~icepark.expressions.RowEvaluator` (:mod:`icepark.io.arrow.expressions`). They also
   prune row groups by their Parquet statistics, which only ever skips groups without a match.
4. Metadata columns on request (spec, *Reserved Field IDs*): ``_file``, ``_pos``,
   ``_spec_id``, ``_partition``, and v3 row lineage, ``_row_id`` and
   ``_last_updated_sequence_number`` (spec, *Row lineage assignment*: "When a data file has a
   non-null ``first_row_id``, readers must: Replace any null or missing ``_row_id`` with the
   data file's ``first_row_id`` plus the row's ``_pos``; Replace any null or missing
   ``_last_updated_sequence_number`` to the data file's ``data_sequence_number``; Read any
   non-null ``_row_id`` or ``_last_updated_sequence_number`` without modification", and "When
   a data file has a null ``first_row_id``, readers must produce null for ``_row_id`` and
   ``_last_updated_sequence_number``").

A split (``start``, ``length``) reads the row groups whose first byte is in
``[start, start + length)``, the offsets the planner splits at (a data file's
``split_offsets``), so the tasks of one file never read a row twice. Which delete files apply
to a data file by sequence number is the planner's decision (data files carry none); the
reader applies the ones it is given within their scope: position deletes to the rows of their
``file_path``, equality deletes to data files of their partition, or to all if unpartitioned.

>>> import tempfile, pyarrow as pa
>>> from icepark.expressions import parse
>>> from icepark.io.parquet.data_writer import write_data_files
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.partitioning import UNPARTITIONED
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG))
>>> root = tempfile.mkdtemp()
>>> [data] = write_data_files(ArrowFileIO(), lambda: f"{root}/d.parquet", schema,
...     UNPARTITIONED, (), {}, [pa.record_batch({"id": [1, 2, 3]})])
>>> reader = ArrowReader(ArrowFileIO(), schema, row_filter=parse("id >= 2"),
...                      metadata_columns=["_pos"])
>>> reader.read_task(data, ()).__next__().to_pydict()
{'id': [2, 3], '_pos': [1, 2]}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.expressions.bound import BoundExpr, BoundPredicate, BoundVisitor, bound_and, visit
from icepark.expressions.expr import ALWAYS_TRUE, AlwaysFalse, AlwaysTrue, Expr
from icepark.io.arrow.deletes import (
    DeleteCache,
    EqualityDeletes,
    count_deleted,
    deleted_positions,
    equality_delete_groups,
    position_keep_mask,
)
from icepark.io.arrow.expressions import (
    arrow_literal_type,
    bind_once,
    evaluate,
    to_pruning_expression,
)
from icepark.io.arrow.lineage import RowLineage, stored_lineage
from icepark.io.arrow.name_mapping import NameMapping
from icepark.io.arrow.parquet_file import decoded_batches, open_parquet
from icepark.io.arrow.projection import (
    FileColumns,
    Projection,
    arrow_values,
    extract,
    project,
    repeat,
)
from icepark.io.arrow.schema import to_arrow_field, to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, STRING, NestedField, StructType

FILE = NestedField.required(2147483646, "_file", STRING, "Path of the file in which a row is "
                            "stored")
POS = NestedField.required(2147483645, "_pos", LONG, "Ordinal position of a row in the source "
                           "data file")
SPEC_ID = NestedField.required(2147483643, "_spec_id", INT, "Spec ID used to track the file "
                               "containing a row")
PARTITION_FIELD_ID = 2147483642
METADATA_COLUMN_NAMES = ("_file", "_pos", "_spec_id", "_partition", ROW_ID.name,
                         LAST_UPDATED_SEQUENCE_NUMBER.name)
LINEAGE_COLUMN_NAMES = frozenset(f.name for f in LINEAGE_FIELDS)
"""The metadata columns of v3 row lineage: reading them needs each file's inherited
``first_row_id`` and data sequence number (planned with ``row_lineage``)."""


class ScanTask(Protocol):
    """What the reader needs of a planned file scan task."""

    @property
    def data_file(self) -> DataFile: ...
    @property
    def delete_files(self) -> Sequence[DataFile]: ...
    @property
    def residual(self) -> Any: ...
    @property
    def spec_id(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def length(self) -> int | None: ...
    @property
    def partition(self) -> tuple[Any, ...]: ...
    @property
    def data_sequence_number(self) -> int | None: ...


def partition_struct(specs: Iterable[PartitionSpec], schema: Schema) -> StructType:
    """The type of ``_partition``: every partition field of every spec, by field ID.

    Spec, *Reserved Field IDs*: "``_partition`` ``struct`` Partition to which a row belongs".
    The spec does not say which struct when specs evolved; as the reference implementation
    does, it is the union of all specs' fields, ordered by partition field ID, all optional
    (a row of an older spec has null in the fields it did not have). A field with an unknown
    transform is left out: the type of its values is not known (the reference implementation
    refuses ``_partition`` on such tables).
    """
    fields: dict[int, NestedField] = {}
    for spec in sorted(specs, key=lambda s: s.spec_id):
        unknown = {f.field_id for f in spec.unknown_fields}
        for f in spec.partition_type(schema).fields:
            if f.field_id not in unknown:
                fields.setdefault(f.field_id, f)
    return StructType(tuple(fields[i] for i in sorted(fields)))


class _References(BoundVisitor[dict[int, NestedField]]):
    def always_true(self) -> dict[int, NestedField]:
        return {}

    def always_false(self) -> dict[int, NestedField]:
        return {}

    def and_(self, left: dict[int, NestedField],
             right: dict[int, NestedField]) -> dict[int, NestedField]:
        return left | right

    def or_(self, left: dict[int, NestedField],
            right: dict[int, NestedField]) -> dict[int, NestedField]:
        return left | right

    def predicate(self, p: BoundPredicate) -> dict[int, NestedField]:
        return {p.field_id: p.field}


@dataclass(frozen=True, slots=True)
class _Task:
    data_file: DataFile
    delete_files: Sequence[DataFile]
    residual: Any
    spec_id: int
    spec: PartitionSpec | None
    partition: tuple[Any, ...]
    start: int
    length: int | None
    data_sequence_number: int | None = None


class ArrowReader:
    """Reads scan tasks into Arrow batches of ``to_arrow_schema(table_schema)`` plus the
    requested metadata columns.

    ``table_schema`` is the projection: the columns to return, in order. ``full_schema`` is the
    table schema it was selected from (default: the projection); filters and residuals that
    name unprojected columns are bound against it, and ``_partition`` is typed by it and by
    ``partition_specs`` (spec ID to spec, needed by :meth:`read_tasks` to find a task's spec).
    ``name_mapping`` gives field IDs to files without them. ``limit`` caps the rows returned.
    """

    def __init__(self, file_io: FileIO, table_schema: Schema, *,
                 row_filter: Expr | BoundExpr = ALWAYS_TRUE, case_sensitive: bool = True,
                 name_mapping: NameMapping | None = None,
                 metadata_columns: Sequence[str] = (), batch_size: int = 131072,
                 limit: int | None = None,
                 partition_specs: Mapping[int, PartitionSpec] | None = None,
                 full_schema: Schema | None = None) -> None:
        if batch_size <= 0:
            raise ValidationError(f"batch_size must be positive, not {batch_size}")
        if limit is not None and limit < 0:
            raise ValidationError(f"limit cannot be negative, not {limit}")
        self._io = file_io
        self.schema = table_schema
        self._full = full_schema or table_schema
        self._case_sensitive = case_sensitive
        self._row_filter = bind_once(row_filter, self._full, case_sensitive)
        self._mapping = name_mapping
        self._batch_size = batch_size
        self._limit = limit
        self._specs = dict(partition_specs or {})
        self.metadata_columns = tuple(metadata_columns)
        unknown = [c for c in self.metadata_columns if c not in METADATA_COLUMN_NAMES]
        if unknown:
            raise UnsupportedFeature(f"Unknown metadata column(s) {unknown}: the reader "
                                     f"provides {list(METADATA_COLUMN_NAMES)}")
        self._partition_type: StructType | None = None
        fields = list(to_arrow_schema(table_schema))
        for name in self.metadata_columns:
            if name == "_partition":
                self._partition_type = partition_struct(self._specs.values(), self._full)
                fields.append(to_arrow_field(NestedField.optional(
                    PARTITION_FIELD_ID, "_partition", self._partition_type,
                    "Partition to which a row belongs")))
            else:
                fields.append(to_arrow_field({"_file": FILE, "_pos": POS, "_spec_id": SPEC_ID,
                                              ROW_ID.name: ROW_ID,
                                              LAST_UPDATED_SEQUENCE_NUMBER.name:
                                              LAST_UPDATED_SEQUENCE_NUMBER}[name]))
        self.arrow_schema = pa.schema(fields)

    # --- public API -----------------------------------------------------------------------

    def read_task(self, data_file: DataFile, delete_files: Sequence[DataFile] = (),
                  residual: Expr | BoundExpr = ALWAYS_TRUE,
                  partition_spec: PartitionSpec | None = None,
                  partition: tuple[Any, ...] | None = None, *, start: int = 0,
                  length: int | None = None,
                  data_sequence_number: int | None = None) -> Iterator[Any]:
        """Stream the batches of one data file (or of its split ``[start, start+length)``).

        ``partition`` defaults to the data file's; ``partition_spec`` to
        ``partition_specs[data_file.spec_id]``; ``data_sequence_number`` is the file's, for
        ``_last_updated_sequence_number``.
        """
        spec = partition_spec if partition_spec is not None else self._specs.get(
            data_file.spec_id)
        task = _Task(data_file, tuple(delete_files), residual,
                     data_file.spec_id if spec is None else spec.spec_id, spec,
                     data_file.partition if partition is None else tuple(partition), start,
                     length, data_sequence_number)
        return self._read([task])

    def read_tasks(self, tasks: Iterable[ScanTask]) -> Iterator[Any]:
        """Stream the batches of every task, in order, sharing delete files between them."""
        return self._read(_Task(t.data_file, tuple(t.delete_files), t.residual, t.spec_id,
                                self._spec_of(t), tuple(t.partition), t.start, t.length,
                                t.data_sequence_number)
                          for t in tasks)

    def to_table(self, tasks: Iterable[ScanTask]) -> Any:
        """All the tasks' rows as one ``pa.Table`` of :attr:`arrow_schema`."""
        return pa.Table.from_batches(list(self.read_tasks(tasks)), schema=self.arrow_schema)

    # --- the kernel -----------------------------------------------------------------------

    def _spec_of(self, task: ScanTask) -> PartitionSpec | None:
        spec = self._specs.get(task.spec_id)
        if spec is None and task.partition:
            raise ValidationError(f"No partition spec {task.spec_id} for "
                                  f"{task.data_file.file_path}: pass partition_specs")
        return spec

    def _read(self, tasks: Iterable[_Task]) -> Iterator[Any]:
        cache = DeleteCache(self._io, self._full, self._mapping)
        remaining = self._limit
        if remaining == 0:
            return
        for task in tasks:
            for batch in self._read_file(task, cache):
                if remaining is not None:
                    if batch.num_rows >= remaining:
                        yield batch.slice(0, remaining)
                        return
                    remaining -= batch.num_rows
                yield batch

    def _filter_of(self, residual: Expr | BoundExpr | None) -> BoundExpr:
        """The scan's row filter and the task's residual, both applied (the residual alone
        would do when the planner derived it from this filter, but the reader does not
        assume that)."""
        if residual is None or residual is self._row_filter or isinstance(residual, AlwaysTrue):
            return self._row_filter
        bound = bind_once(residual, self._full, self._case_sensitive)
        return bound if bound == self._row_filter else bound_and(self._row_filter, bound)

    def _read_file(self, task: _Task, cache: DeleteCache) -> Iterator[Any]:
        data_file = task.data_file
        if data_file.file_format is not FileFormat.PARQUET:
            raise UnsupportedFeature(f"Cannot read {data_file.file_path}: "
                                     f"{data_file.file_format} data files are not supported, "
                                     "only PARQUET")
        row_filter = self._filter_of(task.residual)
        if isinstance(row_filter, AlwaysFalse):
            return
        positional = [d for d in task.delete_files if d.content is FileContent.POSITION_DELETES]
        equality = [d for d in task.delete_files
                    if d.content is FileContent.EQUALITY_DELETES and self._in_scope(d, task)]
        deleted = deleted_positions(cache, positional, data_file.file_path)
        eq_groups = equality_delete_groups(cache, equality)
        constants = identity_constants(task.spec, task.partition)
        location = data_file.file_path
        with self._io.new_input(location).open() as f:
            parquet = open_parquet(f, location)
            columns = FileColumns(parquet.schema_arrow, self._mapping, data_file.file_path)
            plan = _FilePlan(self, task, project(columns, self.schema, constants),
                             _extras(columns, constants, row_filter, eq_groups),
                             _Deletes(row_filter, eq_groups, deleted),
                             partition_value=self._partition_value(task),
                             lineage=_lineage_of(columns, self.metadata_columns, task))
            for index, base, rows in self._row_groups(parquet, f, columns, task, row_filter):
                if count_deleted(deleted, base, rows) == rows:
                    continue
                offset = base
                for batch in decoded_batches(parquet.reader.iter_batches(
                        self._batch_size, row_groups=[index],
                        column_indices=columns.leaf_indices(plan.tops), use_threads=True),
                        location):
                    out = plan.apply(batch, offset)
                    offset += batch.num_rows
                    if out.num_rows:
                        yield out

    def _in_scope(self, delete_file: DataFile, task: _Task) -> bool:
        """Spec, *Scan Planning*: an equality delete file applies when "The data file's
        partition (both spec and partition values) is equal to the delete file's partition
        *or* the delete file's partition spec is unpartitioned". (The sequence number rule
        needs the manifest entries, so it is the planner's.)"""
        spec = self._specs.get(delete_file.spec_id)
        if not delete_file.partition or (spec is not None and spec.is_unpartitioned):
            return True
        return (delete_file.spec_id, tuple(delete_file.partition)) == (task.spec_id,
                                                                       task.partition)

    def _row_groups(self, parquet: Any, source: Any, columns: FileColumns, task: _Task,
                    row_filter: BoundExpr) -> list[tuple[int, int, int]]:
        """(index, first row position, rows) of the row groups to read."""
        metadata = parquet.metadata
        chosen = []
        base = 0
        end = None if task.length is None else task.start + task.length
        for i in range(metadata.num_row_groups):
            rg = metadata.row_group(i)
            offset = _row_group_offset(rg)
            if offset >= task.start and (end is None or offset < end):
                chosen.append((i, base, rg.num_rows))
            base += rg.num_rows
        if chosen and not isinstance(row_filter, AlwaysTrue):
            kept = _prune(source, columns, row_filter, [i for i, _, _ in chosen])
            chosen = [c for c in chosen if c[0] in kept]
        return chosen

    def _partition_value(self, task: _Task) -> Any:
        """The task's ``_partition`` as a one-row Arrow array (None if not requested)."""
        if self._partition_type is None:
            return None
        value: dict[int, Any] = {}
        if task.spec is not None:
            known = {f.field_id for f in self._partition_type.fields}
            for pf, v in zip(task.spec.fields, task.partition, strict=True):
                if pf.transform.is_unknown:  # left out of _partition (partition_struct)
                    continue
                if pf.field_id not in known:
                    raise ValidationError(
                        f"Partition field {pf.name!r} ({pf.field_id}) of spec "
                        f"{task.spec.spec_id} is not in _partition: pass every spec in "
                        "partition_specs")
                value[pf.field_id] = v
        return arrow_values(self._partition_type, [value])


@dataclass(frozen=True, slots=True)
class _Deletes:
    """What removes rows of a file after position deletes: equality deletes, then the filter."""

    row_filter: BoundExpr
    eq_groups: list[EqualityDeletes]
    positions: Any  # sorted deleted positions


def _lineage_of(columns: FileColumns, names: Sequence[str], task: _Task) -> RowLineage | None:
    """The row lineage of the task's file, if a lineage column is read."""
    readers = stored_lineage(columns, names)
    if readers is None:
        return None
    return RowLineage(readers, first_row_id=task.data_file.first_row_id,
                      data_sequence_number=task.data_sequence_number)


def _extras(columns: FileColumns, constants: Mapping[int, Any], row_filter: BoundExpr,
            eq_groups: list[EqualityDeletes]) -> dict[int, tuple[int | None, Any]]:
    """Flat readers of the fields the filter and the equality deletes compare, by ID."""
    needed: dict[int, NestedField] = visit(row_filter, _References())
    for group in eq_groups:
        needed.update({f.field_id: f for f in group.fields})
    return {fid: extract(columns, f, constants) for fid, f in needed.items()}


class _FilePlan:
    """What to do with each batch of one data file."""

    def __init__(self, reader: ArrowReader, task: _Task, projection: Projection,
                 extras: dict[int, tuple[int | None, Any]], deletes: _Deletes, *,
                 partition_value: Any,
                 lineage: RowLineage | None = None) -> None:
        self.task = task
        self.metadata = reader.metadata_columns
        self.arrow_schema = reader.arrow_schema
        self.projection = projection
        self.extras = extras
        self.deletes = deletes
        self.lineage = lineage
        self.tops = sorted(set(projection.file_columns)
                           | {t for t, _ in extras.values() if t is not None}
                           | (set() if lineage is None else lineage.tops))
        self.positions = {top: i for i, top in enumerate(self.tops)}
        self.partition_value = partition_value

    def apply(self, batch: Any, offset: int) -> Any:
        """The output batch of a file batch whose first row is at position ``offset``."""
        n = batch.num_rows
        keep = position_keep_mask(self.deletes.positions, offset, n)
        positions = np.arange(offset, offset + n, dtype=np.int64)
        if keep is not None:
            batch = batch.filter(pa.array(keep))
            positions = positions[keep]
            n = batch.num_rows
        lineage = ({} if self.lineage is None
                   else self.lineage.arrays(batch, positions, self.positions))
        out = self.projection.apply(batch, self.positions)
        if self.extras and n:
            values = {fid: fn(batch.column(self.positions[top])) if top is not None else fn(n)
                      for fid, (top, fn) in self.extras.items()}
            mask = np.ones(n, dtype=bool)
            for group in self.deletes.eq_groups:
                mask &= ~group.deleted(values, n)
            if not isinstance(self.deletes.row_filter, AlwaysTrue):
                matched = evaluate(self.deletes.row_filter, values, n)
                mask &= np.asarray(matched.to_numpy(zero_copy_only=False), dtype=bool)
            if not mask.all():
                keep_rows = pa.array(mask)
                out = out.filter(keep_rows)
                positions = positions[mask]
                lineage = {k: v.filter(keep_rows) for k, v in lineage.items()}
        if not self.metadata:
            return out
        return pa.RecordBatch.from_arrays([*out.columns, *self._metadata(positions, lineage)],
                                          schema=self.arrow_schema)

    def _metadata(self, positions: Any, lineage: Mapping[str, Any]) -> list[Any]:
        n = len(positions)
        arrays = []
        for name in self.metadata:
            match name:
                case "_file":
                    arrays.append(repeat(pa.array([self.task.data_file.file_path]), n))
                case "_pos":
                    arrays.append(pa.array(positions, pa.int64()))
                case "_spec_id":
                    arrays.append(repeat(pa.array([self.task.spec_id], pa.int32()), n))
                case "_partition":
                    arrays.append(repeat(self.partition_value, n))
                case _:
                    arrays.append(lineage[name])
        return arrays


def identity_constants(spec: PartitionSpec | None,
                       partition: tuple[Any, ...]) -> dict[int, Any]:
    """Values of identity-partitioned columns, for files that omit those columns."""
    if spec is None:
        return {}
    if len(partition) != len(spec.fields):
        raise ValidationError(f"Partition tuple {partition!r} does not match spec "
                              f"{spec.spec_id} ({len(spec.fields)} fields)")
    return {f.source_id: v for f, v in zip(spec.fields, partition, strict=True)
            if f.transform.is_identity}


def _row_group_offset(rg: Any) -> int:
    """A row group's first byte: its first column chunk's dictionary page, else its first data
    page (the same rule as the writer's ``split_offsets``)."""
    if rg.num_columns == 0:
        return 0
    first = rg.column(0)
    start = int(first.data_page_offset)
    if first.has_dictionary_page and first.dictionary_page_offset:
        start = min(start, int(first.dictionary_page_offset))
    return start


def _prune(source: Any, columns: FileColumns, row_filter: BoundExpr,
           row_groups: list[int]) -> set[int]:
    """The row groups whose statistics may match ``row_filter`` (all on any doubt)."""
    def column(ref: Any) -> Any:
        path = columns.path(ref.field_id)
        if path is None:
            return None
        if path.arrow_field.type != arrow_literal_type(ref.type):
            return None
        return ds.field(*path.names)

    expr = to_pruning_expression(row_filter, column)
    if expr.equals(ds.scalar(True)):
        return set(row_groups)
    try:
        fragment = ds.ParquetFileFormat().make_fragment(source, row_groups=row_groups)
        return {rg.id for rg in fragment.subset(expr).row_groups}
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OSError):
        return set(row_groups)  # pruning only skips: a corrupt file fails when it is read
