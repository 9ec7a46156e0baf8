"""Position and equality delete files: Parquet files of deleted rows, with metrics.

Spec, *Delete Formats*: "Row-level delete files are valid Iceberg data files: files must use
valid Iceberg formats, schemas, and column projection." Both writers are
:class:`~icepark.io.parquet.data_writer.DataFileWriter` s with another file schema and content;
their
metrics follow *Delete File Stats*: "Manifests hold the same statistics for delete files and data
files. For delete files, the metrics describe the values that were deleted."

Position deletes store ``2147483546 file_path``, ``2147483545 pos`` and optionally
``2147483544 row``. "The rows in the delete file must be sorted by ``file_path`` then ``pos``":
the writer checks the order (it streams, so it cannot sort) and :func:`sort_position_deletes`
sorts an in-memory table. ``file_path`` and ``pos`` always get ``full`` metrics, so a file whose
lower and upper ``file_path`` bounds are equal is known to touch one data file only.

>>> from icepark.spec.types import DOUBLE, LONG, NestedField
>>> from icepark.spec.schema import Schema
>>> table = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "x", DOUBLE))
>>> print(equality_delete_schema(table, [1]))
table {
  1: id: required long
}
>>> equality_delete_schema(table, [2])
Traceback (most recent call last):
...
icepark.errors.ValidationError: Equality field 'x' is double: "Float and double columns cannot \
be used as delete columns in equality delete files"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.parquet.data_writer import DataFileWriter
from icepark.io.parquet.metrics import FULL, MetricsConfig
from icepark.spec.manifest import FileContent
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.reserved import FILE_PATH, POS, ROW_FIELD_ID
from icepark.spec.schema import Schema
from icepark.spec.types import (
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)


def position_delete_schema(row_schema: Schema | None = None) -> Schema:
    """The ``file_position_delete`` schema, with a ``row`` column if ``row_schema`` is given.

    "When present in the delete file, ``row`` is required because all delete entries must
    include the row values"; its schema "may be any subset of the table schema and must use
    field ids matching the table."
    """
    fields = [FILE_PATH, POS]
    if row_schema is not None:
        fields.append(NestedField.required(ROW_FIELD_ID, "row", row_schema.as_struct(),
                                           "Deleted row values"))
    return Schema(tuple(fields))


def sort_position_deletes(table: Any) -> Any:
    """A table of position deletes sorted by ``file_path`` then ``pos`` (for small inputs)."""
    return table.sort_by([("file_path", "ascending"), ("pos", "ascending")])


class PositionDeleteWriter(DataFileWriter):
    """Write position delete files; rows must arrive sorted by ``file_path`` then ``pos``.

    ``table_schema`` is the table's (for the partition type and the metrics modes of ``row``);
    ``row_schema``, a subset of it, adds the deleted rows' values. Files have no sort order ID:
    "Position deletes are required to be sorted by file and position, not a table order, and
    should set sort order id to null."
    """

    content: ClassVar[FileContent] = FileContent.POSITION_DELETES

    def __init__(  # noqa: PLR0917 - same order as DataFileWriter
            self, file_io: FileIO, location_provider: Callable[[], str], table_schema: Schema,
            spec: PartitionSpec, partition: tuple[Any, ...], properties: Mapping[str, str],
            row_schema: Schema | None = None) -> None:
        table_metrics = MetricsConfig.from_properties(properties, table_schema)
        metrics = MetricsConfig(table_metrics.default, {
            **table_metrics.columns, FILE_PATH.field_id: FULL, POS.field_id: FULL})
        self._setup(file_io, location_provider, position_delete_schema(row_schema),
                    table_schema, spec, partition, properties, None, metrics)
        self._last: tuple[str, int] | None = None

    def _prepare(self, batch: Any) -> Any:
        batch = super()._prepare(batch)
        rows = batch.num_rows
        if rows == 0:
            return batch
        paths, positions = batch.column(0), batch.column(1)
        if pc.any(pc.less(positions, 0)).as_py():
            raise ValidationError("Position deletes must have pos >= 0: \"Ordinal position of "
                                  "a deleted row ... starting at 0\"")
        if rows > 1:
            p0, p1 = paths.slice(0, rows - 1), paths.slice(1)
            q0, q1 = positions.slice(0, rows - 1), positions.slice(1)
            ordered = pc.or_(pc.less(p0, p1), pc.and_(pc.equal(p0, p1), pc.less_equal(q0, q1)))
            if not pc.all(ordered).as_py():
                i = pc.index(ordered, False).as_py()
                self._unsorted((p0[i].as_py(), q0[i].as_py()), (p1[i].as_py(), q1[i].as_py()))
        first = (paths[0].as_py(), positions[0].as_py())
        if self._last is not None and first < self._last:
            self._unsorted(self._last, first)
        self._last = (paths[rows - 1].as_py(), positions[rows - 1].as_py())
        return batch

    @staticmethod
    def _unsorted(before: tuple[str, int], after: tuple[str, int]) -> None:
        raise ValidationError(
            f"Position deletes must be sorted by file_path then pos, but {after} follows "
            f"{before}; sort them first (e.g. sort_position_deletes, or sortWithinPartitions "
            "in Spark)")


def equality_delete_schema(schema: Schema, equality_ids: Iterable[int]) -> Schema:
    """The table schema projected to the equality fields (keeping their enclosing structs).

    Spec, *Equality Delete Files*: "Float and double columns cannot be used as delete columns
    in equality delete files." Delete columns must also be primitive and, as for identifier
    fields, may be nested in structs but not in lists or maps (no single value to compare).
    """
    ids = tuple(equality_ids)
    if not ids:
        raise ValidationError("Equality delete files need at least one equality field ID")
    if len(set(ids)) != len(ids):
        raise ValidationError(f"Duplicate equality field IDs in {list(ids)}")
    for fid in ids:
        f = schema.find_field(fid)
        name = schema.find_column_name(fid)
        if not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(f"Equality field {name!r} must be a primitive, not "
                                  f"{f.field_type}")
        if f.field_type.type_id in (TypeId.FLOAT, TypeId.DOUBLE):
            raise ValidationError(
                f"Equality field {name!r} is {f.field_type}: \"Float and double columns cannot "
                "be used as delete columns in equality delete files\"")
        parent = schema.parent_id(fid)
        while parent is not None:
            if isinstance(schema.find_field(parent).field_type, ListType | MapType):
                raise ValidationError(f"Equality field {name!r} is inside a list or map; "
                                      "delete columns must be top-level or in structs")
            parent = schema.parent_id(parent)
    wanted = set(ids)
    return Schema(_project(schema.fields, wanted), schema.schema_id)


def _project(fields: tuple[NestedField, ...], wanted: set[int]) -> tuple[NestedField, ...]:
    kept = []
    for f in fields:
        if f.field_id in wanted:
            kept.append(f)
        elif isinstance(f.field_type, StructType):
            children = _project(f.field_type.fields, wanted)
            if children:
                kept.append(NestedField(f.field_id, f.name, StructType(children), f.is_required,
                                        f.doc))
    return tuple(kept)


class EqualityDeleteWriter(DataFileWriter):
    """Write equality delete files of the table's ``equality_ids`` columns.

    Batches hold the delete columns by name (nested ones in their structs); a null matches
    "any row where the delete columns are equal ... equivalent to ``col IS NULL``".
    """

    content: ClassVar[FileContent] = FileContent.EQUALITY_DELETES

    def __init__(  # noqa: PLR0917 - same order as DataFileWriter
            self, file_io: FileIO, location_provider: Callable[[], str], table_schema: Schema,
            spec: PartitionSpec, partition: tuple[Any, ...], properties: Mapping[str, str],
            equality_ids: Iterable[int], sort_order_id: int | None = None) -> None:
        ids = tuple(equality_ids)
        self._setup(file_io, location_provider, equality_delete_schema(table_schema, ids),
                    table_schema, spec, partition, properties, sort_order_id,
                    equality_ids=ids)


def position_deletes_batch(deletes: Mapping[str, Iterable[int]]) -> Any:
    """A sorted position delete batch from ``{data file path: positions}``.

    >>> position_deletes_batch({"b.parquet": [3], "a.parquet": [2, 0]}).to_pydict()
    {'file_path': ['a.parquet', 'a.parquet', 'b.parquet'], 'pos': [0, 2, 3]}
    """
    pairs = sorted((path, pos) for path, positions in deletes.items() for pos in positions)
    return pa.record_batch({"file_path": pa.array([p for p, _ in pairs], pa.string()),
                            "pos": pa.array([q for _, q in pairs], pa.int64())})
