"""Which delete files apply to a data file: an index of a snapshot's live delete files.

Spec, *Scan Planning*:

    A *position* delete file must be applied to a data file when all of the following are true:
    The data file's data sequence number is *less than or equal to* the delete file's data
    sequence number; The data file's partition (both spec and partition values) is equal to the
    delete file's partition.

    An *equality* delete file must be applied to a data file when all of the following are
    true: The data file's data sequence number is *strictly less than* the delete's data
    sequence number; The data file's partition (both spec and partition values) is equal to the
    delete file's partition *or* the delete file's partition spec is unpartitioned.

"Equality delete files stored with an unpartitioned spec are applied as global deletes.
Otherwise, delete files do not apply to files in other partitions." Within each scope (global
equality deletes; equality and position deletes of one partition) delete files are sorted by
data sequence number, so the ones newer than a data file are found by bisection.

Deletion vectors (v3) are indexed by the one data file each references:

    A deletion vector must be applied to a data file when all of the following are true: The
    data file's ``file_path`` is equal to the deletion vector's ``referenced_data_file``; The
    data file's data sequence number is *less than or equal to* the deletion vector's data
    sequence number; The data file's partition (both spec and partition values) is equal to
    the deletion vector's partition

and a position delete file applies only when "There is no deletion vector that must be applied
to the data file (when added, such a vector must contain all deletes from existing position
delete files)". "At most one deletion vector is allowed per data file in a snapshot": a second
one, or one in another partition than its data file, is a :class:`CorruptFile`.

Two refinements only ever skip deletes that cannot delete a row of the file:

* a position delete file whose ``file_path`` bounds are equal references that one data file
  ("Full URI of a data file ... This must match the ``file_path`` of the target data file"),
  so it is indexed under that path and never offered to other files;
* an equality delete file whose values on an equality column cannot equal any value of the data
  file there (disjoint bounds, and no null on both sides: "A ``null`` value in a delete column
  matches a row if the row's value is ``null``") is skipped, as the spec allows: "Column
  metrics can be used to determine whether a delete file's rows overlap the contents of a data
  file".

>>> from icepark.spec.manifest import DataFile, FileContent, FileFormat
>>> def f(path, content=FileContent.DATA, part=("a",), eq=None):
...     return DataFile(path, FileFormat.PARQUET, part, 1, 10, content, 0, equality_ids=eq)
>>> index = DeleteIndex.build([
...     (3, f("pos3", FileContent.POSITION_DELETES)),
...     (3, f("eq3", FileContent.EQUALITY_DELETES, eq=(1,))),
...     (5, f("eq5-other", FileContent.EQUALITY_DELETES, part=("b",), eq=(1,)))])
>>> [d.file_path for d in index.for_data_file(3, f("data"))]
['pos3']
>>> [d.file_path for d in index.for_data_file(2, f("data"))]
['pos3', 'eq3']
>>> index.for_data_file(4, f("data"))
()
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from icepark.errors import CorruptFile, IcebergError, ValidationError
from icepark.expressions.literals import decode_bounds
from icepark.spec.manifest import DataFile, FileContent
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import FILE_PATH
from icepark.spec.schema import Schema, index_by_id
from icepark.spec.types import PrimitiveType

V = TypeVar("V")
"""``file_path`` of a position delete file (a reserved field ID)."""

PartitionKey = tuple[int, tuple[Any, ...]]
"""A partition: the spec ID and the partition values."""


@dataclass(slots=True)
class _Group:
    """Delete files of one scope, sorted by data sequence number."""

    seqs: list[int] = field(default_factory=list)
    files: list[DataFile] = field(default_factory=list)

    def add_all(self, items: list[tuple[int, DataFile]]) -> None:
        items.sort(key=lambda item: item[0])
        self.seqs = [seq for seq, _ in items]
        self.files = [f for _, f in items]

    def newer_than(self, seq: int) -> list[DataFile]:
        """Deletes with a data sequence number strictly greater than ``seq``."""
        return self.files[bisect_right(self.seqs, seq):]

    def not_older_than(self, seq: int) -> list[DataFile]:
        """Deletes with a data sequence number greater than or equal to ``seq``."""
        return self.files[bisect_left(self.seqs, seq):]


def _groups(items: Mapping[Any, list[tuple[int, DataFile]]]) -> dict[Any, _Group]:
    out = {}
    for key, entries in items.items():
        group = _Group()
        group.add_all(entries)
        out[key] = group
    return out


def column_types(metadata: TableMetadata, schema: Schema) -> dict[int, PrimitiveType]:
    """Primitive column types by ID over every schema (dropped columns may still be equality
    delete columns), the scan schema's last."""
    types: dict[int, PrimitiveType] = {}
    for s in (*metadata.schemas, schema):
        for fid, f in index_by_id(s).items():
            if isinstance(f.field_type, PrimitiveType):
                types[fid] = f.field_type
    return types


def equality_metrics_only(delete_file: DataFile) -> DataFile:
    """An equality delete file with the metrics of its equality columns only (others: a
    position delete file as it is), for filtering delete files by a scan's filter.

    A position delete file's metrics are those of the rows it deletes, but an equality delete
    file deletes every older row equal on its equality columns, whatever other values it
    stores: "A data row is deleted if its values are equal to all delete columns for any row in
    an equality delete file". So only those columns' metrics bound the rows it deletes.
    """
    ids = delete_file.equality_ids
    if delete_file.content is not FileContent.EQUALITY_DELETES or ids is None:
        return delete_file

    def keep(values: Mapping[int, V] | None) -> dict[int, V] | None:
        return None if values is None else {i: values[i] for i in ids if i in values}

    return replace(delete_file, column_sizes=None, distinct_counts=None,
                   value_counts=keep(delete_file.value_counts),
                   null_value_counts=keep(delete_file.null_value_counts),
                   nan_value_counts=keep(delete_file.nan_value_counts),
                   lower_bounds=keep(delete_file.lower_bounds),
                   upper_bounds=keep(delete_file.upper_bounds))


def referenced_data_file(delete_file: DataFile) -> str | None:
    """The one data file a position delete file references, if its ``file_path`` bounds say
    so (lower bound equal to upper bound, as the reference implementation reads them: a
    truncated upper bound is rounded up, so it never equals its lower bound), or its v3
    ``referenced_data_file`` says so; else None."""
    if delete_file.referenced_data_file is not None:
        return delete_file.referenced_data_file
    lower = (delete_file.lower_bounds or {}).get(FILE_PATH.field_id)
    if lower is None or lower != (delete_file.upper_bounds or {}).get(FILE_PATH.field_id):
        return None
    try:
        return lower.decode("utf-8")
    except UnicodeDecodeError:
        return None


class DeleteIndex:
    """The live delete files of a snapshot, by scope; see the module docstring. Built with
    :meth:`build`."""

    def __init__(self, global_eq: _Group, eq_by_partition: dict[PartitionKey, _Group],
                 pos_by_partition: dict[PartitionKey, _Group],
                 pos_by_path: dict[str, _Group],
                 field_types: Mapping[int, PrimitiveType], *,
                 dvs: dict[str, tuple[int, DataFile]] | None = None) -> None:
        self._global_eq = global_eq
        self._eq = eq_by_partition
        self._pos = pos_by_partition
        self._pos_by_path = pos_by_path
        self._types = field_types
        self._dvs = dvs or {}
        self._empty = not (global_eq.files or eq_by_partition or pos_by_partition or pos_by_path
                           or self._dvs)

    @staticmethod
    def build(deletes: Iterable[tuple[int, DataFile]],
              unpartitioned_specs: Iterable[int] | None = None,
              field_types: Mapping[int, PrimitiveType] | None = None) -> DeleteIndex:
        """Index ``(data sequence number, delete file)`` pairs of live delete files.

        ``unpartitioned_specs`` are the spec IDs whose equality deletes are global (default: a
        delete file with an empty partition tuple is taken as unpartitioned); ``field_types``
        gives the type of a column ID, for comparing equality columns' bounds (a column missing
        there is never used to skip a delete).
        """
        unpartitioned = None if unpartitioned_specs is None else frozenset(unpartitioned_specs)
        global_eq: list[tuple[int, DataFile]] = []
        eq: dict[PartitionKey, list[tuple[int, DataFile]]] = {}
        pos: dict[PartitionKey, list[tuple[int, DataFile]]] = {}
        by_path: dict[str, list[tuple[int, DataFile]]] = {}
        dvs: dict[str, tuple[int, DataFile]] = {}
        for seq, f in deletes:
            key = (f.spec_id, f.partition)
            if f.is_deletion_vector:
                target = f.referenced_data_file
                assert target is not None  # DataFile checks it
                other = dvs.get(target)
                if other is not None:
                    raise CorruptFile(
                        f"Two deletion vectors for data file {target}: in {other[1].file_path} "
                        f"at offset {other[1].content_offset} and in {f.file_path} at offset "
                        f"{f.content_offset} (\"At most one deletion vector is allowed per "
                        "data file in a snapshot\")")
                dvs[target] = (seq, f)
            elif f.content is FileContent.EQUALITY_DELETES:
                is_global = (not f.partition if unpartitioned is None
                             else f.spec_id in unpartitioned)
                if is_global:
                    global_eq.append((seq, f))
                else:
                    eq.setdefault(key, []).append((seq, f))
            elif f.content is FileContent.POSITION_DELETES:
                path = referenced_data_file(f)
                if path is None:
                    pos.setdefault(key, []).append((seq, f))
                else:
                    by_path.setdefault(path, []).append((seq, f))
            else:
                raise ValidationError(f"{f.file_path} is a data file, not a delete file")
        global_group = _Group()
        global_group.add_all(global_eq)
        return DeleteIndex(global_group, _groups(eq), _groups(pos), _groups(by_path),
                           field_types or {}, dvs=dvs)

    @property
    def is_empty(self) -> bool:
        return self._empty

    @property
    def deletion_vectors(self) -> Mapping[str, DataFile]:
        """The indexed deletion vectors by the data file each references."""
        return {path: dv for path, (_, dv) in self._dvs.items()}

    @property
    def equality_ids(self) -> frozenset[int]:
        """The equality columns of the indexed equality delete files: data files are matched
        to them by those columns' metrics."""
        groups = [self._global_eq, *self._eq.values()]
        return frozenset(i for g in groups for f in g.files for i in f.equality_ids or ())

    def for_data_file(self, seq: int, data_file: DataFile) -> tuple[DataFile, ...]:
        """The delete files to apply to ``data_file`` with data sequence number ``seq``:
        position deletes first, then equality deletes, each in sequence number order."""
        if self._empty:
            return ()
        key = (data_file.spec_id, data_file.partition)
        found: list[DataFile] = []
        dv = self._deletion_vector(seq, data_file, key)
        if dv is not None:  # it holds every position delete of the file
            found.append(dv)
        else:
            group = self._pos.get(key)
            if group is not None:
                found += group.not_older_than(seq)
            group = self._pos_by_path.get(data_file.file_path)
            if group is not None:
                found += [d for d in group.not_older_than(seq)
                          if (d.spec_id, d.partition) == key]
        equality = self._global_eq.newer_than(seq)
        group = self._eq.get(key)
        if group is not None:
            equality = equality + group.newer_than(seq)
        found += [d for d in equality if self._may_overlap(d, data_file)]
        return tuple(found)

    def _deletion_vector(self, seq: int, data_file: DataFile,
                         key: PartitionKey) -> DataFile | None:
        """The deletion vector that applies to ``data_file`` (data sequence number ``seq``)."""
        found = self._dvs.get(data_file.file_path)
        if found is None or found[0] < seq:
            return None
        dv = found[1]
        if (dv.spec_id, tuple(dv.partition)) != (key[0], tuple(key[1])):
            raise CorruptFile(
                f"Deletion vector in {dv.file_path} at offset {dv.content_offset} references "
                f"data file {data_file.file_path} of partition {key[1]!r} (spec {key[0]}) but "
                f"is in partition {dv.partition!r} (spec {dv.spec_id}): it must be \"equal to "
                "the deletion vector's partition\"")
        return dv

    def _may_overlap(self, delete_file: DataFile, data_file: DataFile) -> bool:
        """Whether rows of ``data_file`` may equal a row of the equality delete file on every
        equality column, by the two files' metrics."""
        for field_id in delete_file.equality_ids or ():
            t = self._types.get(field_id)
            if t is not None and not _column_may_overlap(field_id, t, delete_file, data_file):
                return False
        return True


def _count(counts: Mapping[int, int] | None, field_id: int) -> int | None:
    return None if counts is None else counts.get(field_id)


def _column_may_overlap(field_id: int, t: PrimitiveType, delete_file: DataFile,
                        data_file: DataFile) -> bool:
    """Whether a value of the column in ``delete_file`` may equal one in ``data_file``."""
    delete_nulls = _count(delete_file.null_value_counts, field_id)
    data_nulls = _count(data_file.null_value_counts, field_id)
    if delete_nulls != 0 and data_nulls != 0:  # both may hold a null: null matches null
        return True
    if _all_null(delete_file, field_id) or _all_null(data_file, field_id):
        return False  # one side has only nulls, the other none
    try:
        d_low, d_high = _bounds(delete_file, field_id, t)
        f_low, f_high = _bounds(data_file, field_id, t)
    except (IcebergError, ValueError, TypeError):
        return True  # unreadable bounds prove nothing
    if d_low is not None and f_high is not None and f_high < d_low:
        return False
    return not (f_low is not None and d_high is not None and d_high < f_low)


def _all_null(f: DataFile, field_id: int) -> bool:
    values, nulls = _count(f.value_counts, field_id), _count(f.null_value_counts, field_id)
    return values is not None and nulls is not None and values == nulls


def _bounds(f: DataFile, field_id: int, t: PrimitiveType) -> tuple[Any, Any]:
    lower = None if f.lower_bounds is None else f.lower_bounds.get(field_id)
    upper = None if f.upper_bounds is None else f.upper_bounds.get(field_id)
    return decode_bounds(t, lower, upper)
