"""Reading position and equality delete files, and applying them to a data file's rows.

Spec, *Position Delete Files*: "A data row is deleted if there is an entry in a position delete
file for the row's file and position in the data file, starting at 0." Rows are matched by
``2147483546 file_path`` ("This must match the ``file_path`` of the target data file in a
manifest entry": compared as exact strings) and ``2147483545 pos``.

Spec, *Equality Delete Files*: "A data row is deleted if its values are equal to all delete
columns for any row in an equality delete file that applies to the row's data file ... A
``null`` value in a delete column matches a row if the row's value is ``null``, equivalent to
``col IS NULL``." and "If a delete column in an equality delete file is later dropped from the
table, it must still be used when applying the equality deletes." So each delete column is
read by field ID from both files, typed by the table schema when the column is still there and
by the delete file otherwise; values are compared with null equal to null.

Spec, *Deletion Vectors*: "A set bit at position P indicates that the row at position P is
deleted"; a vector is read from its Puffin file by ``content_offset`` and
``content_size_in_bytes`` (:func:`icepark.io.puffin.deletion_vector.read_deletion_vector`) and
deletes positions of its ``referenced_data_file`` only.

Which delete files apply to which data file (sequence numbers, partitions) is the planner's
decision (*Scan Planning*); this module applies what it is given. A :class:`DeleteCache` keeps
each delete file's rows for the length of a read, since one delete file usually applies to many
data files.

>>> import numpy as np
>>> position_keep_mask(np.array([1, 5, 9]), 4, 4).tolist()
[True, False, True, True]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow.expressions import arrow_literal_type, comparable
from icepark.io.arrow.name_mapping import MappedField, NameMapping
from icepark.io.arrow.parquet_file import (
    EQUALITY_DELETE_FILE,
    POSITION_DELETE_FILE,
    decoded_batches,
    open_parquet,
)
from icepark.io.arrow.projection import FileColumns, extract
from icepark.io.arrow.schema import from_arrow_schema
from icepark.io.fileio import FileIO
from icepark.io.puffin.deletion_vector import read_deletion_vector
from icepark.spec.manifest import DataFile, EntryKey, FileContent, FileFormat
from icepark.spec.reserved import FILE_PATH, POS
from icepark.spec.schema import Schema
from icepark.spec.types import NestedField, PrimitiveType

_POSITION_MAPPING = NameMapping((MappedField(("file_path",), FILE_PATH.field_id),
                                 MappedField(("pos",), POS.field_id)))
_MAX_KEY_SPACE = 2**62  # equality keys are packed into one int64 below this many combinations


@dataclass(frozen=True, slots=True)
class EqualityDeleteRows:
    """The delete columns of one equality delete file: the fields (typed as the reader
    compares them) and a table with one column per field, named by its field ID."""

    fields: tuple[NestedField, ...]
    table: Any

    @property
    def key(self) -> tuple[tuple[int, str], ...]:
        """Delete files with the same key can be applied together."""
        return tuple((f.field_id, str(f.field_type)) for f in self.fields)


class DeleteCache:
    """Delete file contents for one read, by file path, and the prepared matches of sets of
    equality delete files (least recently used beyond ``max_files`` of each).

    ``schema`` types the equality delete columns still in the table; ``name_mapping`` gives
    field IDs to delete files written without them.
    """

    def __init__(self, file_io: FileIO, schema: Schema, name_mapping: NameMapping | None = None,
                 max_files: int = 256) -> None:
        self._io = file_io
        self._schema = schema
        self._mapping = name_mapping
        self._max = max_files
        self._positions: OrderedDict[EntryKey, dict[str, Any]] = OrderedDict()
        self._equality: OrderedDict[str, EqualityDeleteRows] = OrderedDict()
        self._groups: OrderedDict[Any, EqualityDeletes] = OrderedDict()

    def positions(self, delete_file: DataFile) -> dict[str, Any]:
        """The deleted positions of a position delete file or deletion vector: sorted int64
        arrays by data file path."""
        _check_delete(delete_file, FileContent.POSITION_DELETES)
        key = delete_file.entry_key  # vectors share their Puffin file
        found: dict[str, Any] | None = _lookup(self._positions, key)
        if found is None:
            if delete_file.is_deletion_vector:
                assert delete_file.referenced_data_file is not None  # DataFile checks it
                found = {delete_file.referenced_data_file: read_deletion_vector(self._io,
                                                                                delete_file)}
            else:
                found = self._read_positions(delete_file)
            _store(self._positions, key, found, self._max)
        return found

    def equality(self, delete_file: DataFile) -> EqualityDeleteRows:
        """The delete columns of an equality delete file, read by its ``equality_ids``."""
        _check_delete(delete_file, FileContent.EQUALITY_DELETES)
        found: EqualityDeleteRows | None = _lookup(self._equality, delete_file.file_path)
        if found is None:
            found = self._read_equality(delete_file)
            _store(self._equality, delete_file.file_path, found, self._max)
        return found

    def group(self, rows: Sequence[EqualityDeleteRows],
              paths: tuple[str, ...]) -> EqualityDeletes:
        """The prepared match of equality delete files (``paths``) with the same columns."""
        key = (rows[0].key, paths)
        found: EqualityDeletes | None = _lookup(self._groups, key)
        if found is None:
            found = EqualityDeletes(rows)
            _store(self._groups, key, found, self._max)
        return found

    def _read_positions(self, delete_file: DataFile) -> dict[str, Any]:
        location = delete_file.file_path
        with self._io.new_input(location).open() as f:
            parquet = open_parquet(f, location, POSITION_DELETE_FILE)
            # Without IDs, the columns are found by the names the spec gives them.
            columns = FileColumns(parquet.schema_arrow, _POSITION_MAPPING,
                                  delete_file.file_path)
            if columns.path(FILE_PATH.field_id) is None or columns.path(POS.field_id) is None:
                raise ValidationError(
                    f"Position delete file {delete_file.file_path} has no file_path "
                    f"({FILE_PATH.field_id}) or pos ({POS.field_id}) column")
            table = _read_flat(parquet, columns, [FILE_PATH, POS], POSITION_DELETE_FILE)
        table = table.filter(pc.and_(pc.is_valid(table.column(0)), pc.is_valid(table.column(1))))
        grouped = table.group_by(str(FILE_PATH.field_id)).aggregate(
            [(str(POS.field_id), "list")])
        paths = grouped.column(0).to_pylist()
        lists = grouped.column(1)
        return {path: sorted_unique(np.asarray(lists[i].values, dtype=np.int64))
                for i, path in enumerate(paths)}

    def _read_equality(self, delete_file: DataFile) -> EqualityDeleteRows:
        ids = delete_file.equality_ids or ()
        with self._io.new_input(delete_file.file_path).open() as f:
            parquet = open_parquet(f, delete_file.file_path, EQUALITY_DELETE_FILE)
            columns = FileColumns(parquet.schema_arrow, self._mapping, delete_file.file_path)
            missing = [fid for fid in ids if columns.path(fid) is None]
            if missing:
                raise ValidationError(
                    f"Equality delete file {delete_file.file_path} has no column with field "
                    f"ID {missing[0]} (one of its equality_ids {list(ids)}); its delete "
                    "columns must be in the file")
            fields = tuple(self._equality_field(fid, columns) for fid in ids)
            table = _read_flat(parquet, columns, fields, EQUALITY_DELETE_FILE)
        return EqualityDeleteRows(fields, table)

    def _equality_field(self, field_id: int, columns: FileColumns) -> NestedField:
        current = self._schema.field_by_id(field_id)
        if current is not None:
            return current
        path = columns.path(field_id)  # dropped from the table: typed by the delete file
        assert path is not None
        found = from_arrow_schema(pa.schema([path.arrow_field])).fields[0]
        return NestedField.optional(found.field_id, found.name, found.field_type)


def _check_delete(delete_file: DataFile, content: FileContent) -> None:
    if delete_file.content is not content:
        raise ValidationError(f"{delete_file.file_path} is not a {content.name} file but "
                              f"{delete_file.content.name}")
    if delete_file.is_deletion_vector:
        return
    if delete_file.file_format is not FileFormat.PARQUET:
        raise UnsupportedFeature(f"Cannot read delete file {delete_file.file_path}: "
                                 f"{delete_file.file_format} delete files are not supported, "
                                 "only PARQUET")


def _lookup(cache: OrderedDict[Any, Any], key: Hashable) -> Any:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _store(cache: OrderedDict[Any, Any], key: Hashable, value: Any, limit: int) -> None:
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)


def _read_flat(parquet: Any, columns: FileColumns, fields: Sequence[NestedField],
               what: str) -> Any:
    """A table of ``fields`` read flat by ID, one column per field named by its ID
    (``what`` kind of file: a page that does not decode is a CorruptFile)."""
    readers = [extract(columns, f) for f in fields]
    tops = sorted({top for top, _ in readers if top is not None})
    positions = {top: i for i, top in enumerate(tops)}
    names = [str(f.field_id) for f in fields]
    batches = []
    for batch in decoded_batches(parquet.reader.iter_batches(
            65536, row_groups=range(parquet.metadata.num_row_groups),
            column_indices=columns.leaf_indices(tops), use_threads=False),
            columns.location, what):
        arrays = [comparable(fn(batch.column(positions[top])) if top is not None
                             else fn(batch.num_rows)) for top, fn in readers]
        batches.append(pa.Table.from_arrays(arrays, names=names))
    if not batches:
        return pa.table({n: pa.array([], _storage_type(f)) for n, f in zip(names, fields,
                                                                        strict=True)})
    return pa.concat_tables(batches)


def _storage_type(f: NestedField) -> Any:
    if not isinstance(f.field_type, PrimitiveType):
        raise ValidationError(f"Delete column {f.name!r} must be a primitive, not "
                              f"{f.field_type}")
    return arrow_literal_type(f.field_type)


# --- applying deletes -----------------------------------------------------------------------


def deleted_positions(cache: DeleteCache, delete_files: Iterable[DataFile],
                      data_path: str) -> Any:
    """The sorted, distinct positions of ``data_path`` deleted by position delete files."""
    found = [cache.positions(d).get(data_path) for d in delete_files]
    arrays = [a for a in found if a is not None and len(a)]
    if not arrays:
        return np.empty(0, dtype=np.int64)
    return arrays[0] if len(arrays) == 1 else sorted_unique(np.concatenate(arrays))


def sorted_unique(positions: Any) -> Any:
    """The distinct values of an int64 array, ascending. Position delete files are "sorted by
    ``file_path`` then ``pos``", so the positions of one data file usually arrive sorted and
    distinct: checked in one pass and returned as they are (``np.unique`` sorts or hashes
    whatever it gets, a hundred times slower on 200,000 positions).

    >>> sorted_unique(np.array([1, 3, 7])).tolist(), sorted_unique(np.array([3, 1, 3])).tolist()
    ([1, 3, 7], [1, 3])
    """
    if len(positions) < 2 or bool(np.all(positions[1:] > positions[:-1])):
        return positions
    ordered = np.sort(positions)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def count_deleted(deleted: Any, start: int, length: int) -> int:
    """How many of the positions ``[start, start + length)`` are in ``deleted``."""
    lo, hi = np.searchsorted(deleted, [start, start + length])
    return int(hi - lo)


def position_keep_mask(deleted: Any, start: int, length: int) -> Any | None:
    """Which of the rows at positions ``[start, start + length)`` survive (None: all do)."""
    lo, hi = np.searchsorted(deleted, [start, start + length])
    if lo == hi:
        return None
    keep = np.ones(length, dtype=bool)
    keep[deleted[lo:hi] - start] = False
    return keep


class EqualityDeletes:
    """The rows of equality delete files with the same delete columns, ready to match.

    Each delete column's distinct values (null included) are numbered; a data row's number in
    each column is its value's (``index_in`` with nulls matching nulls), so a row is deleted
    when its tuple of numbers is a delete row's.
    """

    def __init__(self, rows: Sequence[EqualityDeleteRows]) -> None:
        if not rows:
            raise ValidationError("EqualityDeletes needs at least one delete file")
        self.fields = rows[0].fields
        table = pa.concat_tables([r.table for r in rows])
        names = table.column_names
        self._uniques = [pc.unique(table.column(n).combine_chunks()) for n in names]
        space = 1
        for u in self._uniques:
            space *= max(len(u), 1)
        self._packed = space < _MAX_KEY_SPACE
        codes = self._codes([table.column(n).combine_chunks() for n in names])
        if self._packed:
            self._keys = pc.unique(self._pack(codes))
        else:
            self._key_table = pa.table({f"k{i}": c for i, c in enumerate(codes)})

    @property
    def empty(self) -> bool:
        return all(len(u) == 0 for u in self._uniques)

    def _codes(self, columns: Sequence[Any]) -> list[Any]:
        return [pc.index_in(comparable(c), value_set=u, skip_nulls=False)
                for c, u in zip(columns, self._uniques, strict=True)]

    def _pack(self, codes: Sequence[Any]) -> Any:
        key = pc.cast(codes[0], pa.int64())
        for code, unique in zip(codes[1:], self._uniques[1:], strict=True):
            key = pc.add(pc.multiply(key, len(unique)), pc.cast(code, pa.int64()))
        return key

    def deleted(self, columns: Mapping[int, Any], length: int) -> Any:
        """A numpy mask of the data rows (delete columns given by field ID) that are deleted."""
        codes = self._codes([columns[f.field_id] for f in self.fields])
        if self._packed:
            hit = pc.fill_null(pc.is_in(self._pack(codes), value_set=self._keys), False)
            return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)
        rows = pa.table({**{f"k{i}": c for i, c in enumerate(codes)},
                         "row": pa.array(np.arange(length, dtype=np.int64))})
        valid = pc.is_valid(codes[0])
        for c in codes[1:]:
            valid = pc.and_(valid, pc.is_valid(c))
        rows = rows.filter(valid)
        hits = rows.join(self._key_table.group_by(self._key_table.column_names).aggregate([]),
                         keys=[f"k{i}" for i in range(len(codes))], join_type="left semi")
        mask = np.zeros(length, dtype=bool)
        mask[hits.column("row").to_numpy()] = True
        return mask


def equality_delete_groups(cache: DeleteCache,
                           delete_files: Iterable[DataFile]) -> list[EqualityDeletes]:
    """The equality delete files' rows, grouped by their delete columns."""
    groups: dict[tuple[tuple[int, str], ...], list[tuple[str, EqualityDeleteRows]]] = {}
    for d in sorted(delete_files, key=lambda d: d.file_path):
        rows = cache.equality(d)
        groups.setdefault(rows.key, []).append((d.file_path, rows))
    prepared = [cache.group([r for _, r in g], tuple(p for p, _ in g)) for g in groups.values()]
    return [p for p in prepared if not p.empty]
