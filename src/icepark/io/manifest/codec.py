"""The ``manifest_entry`` layout of each format version and its Avro encoding and decoding.

Spec, *Manifests*: the ``manifest_entry`` and ``data_file`` field tables (field IDs, names, which
are required or optional in v1 and v2) and Appendix E: v1 writes ``block_size_in_bytes``
("Always write a default in v1. Do not write in v2."); v2 adds ``sequence_number``,
``file_sequence_number``, ``content`` and ``equality_ids`` and makes ``snapshot_id`` optional
"to support inheritance". v3 adds ``142 first_row_id`` (row lineage) and, for deletion
vectors, ``143 referenced_data_file``, ``144 content_offset`` and ``145
content_size_in_bytes``.

:func:`entry_columns` turns entries into the columns :mod:`icepark.io.avro.encoder` writes;
:class:`ManifestStats` gathers the counts and partition summaries of the manifest list entry;
:mod:`icepark.io.manifest.decoder` reads them back.

>>> from icepark.spec.types import StructType
>>> [f.name for f in manifest_entry_type(StructType(()), 2).fields]
['status', 'snapshot_id', 'sequence_number', 'file_sequence_number', 'data_file']
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, cast

import numpy as np

from icepark.errors import ValidationError
from icepark.io.avro.encoder import ListColumn, StructColumn
from icepark.io.avro.schema import avro_name, decimal_size
from icepark.spec.bounds import lower_bound, to_bytes, upper_bound
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FieldSummary,
    FileContent,
    ManifestContent,
)
from icepark.spec.types import (
    BINARY,
    INT,
    LONG,
    STRING,
    UUID,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TypeId,
)
from icepark.spec.values import check_value

DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024
"""``105 block_size_in_bytes``: "Deprecated. Always write a default in v1." (64 MiB, as the
reference implementation writes)."""

# (field ID, name, key ID, value ID, value type) of the metric maps, in table order.
METRIC_MAPS = (
    (108, "column_sizes", 117, 118, LONG),
    (109, "value_counts", 119, 120, LONG),
    (110, "null_value_counts", 121, 122, LONG),
    (137, "nan_value_counts", 138, 139, LONG),
    (111, "distinct_counts", 123, 124, LONG),
    (125, "lower_bounds", 126, 127, BINARY),
    (128, "upper_bounds", 129, 130, BINARY),
)
_FLOATS = frozenset({TypeId.FLOAT, TypeId.DOUBLE})
_DATA_CONTENT = frozenset({FileContent.DATA})
_DELETE_CONTENT = frozenset({FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES})


@functools.lru_cache(maxsize=64)
def data_file_type(partition_type: StructType, format_version: int,
                   distinct_counts: bool = False) -> StructType:
    """The ``data_file`` struct (``r2``) of a format version.

    ``111 distinct_counts`` is left out unless asked for: the reference implementations do not
    write it, and pyiceberg (0.12) cannot read a manifest that has it.
    """
    fields = [NestedField.required(134, "content", INT)] if format_version >= 2 else []
    fields += [
        NestedField.required(100, "file_path", STRING),
        NestedField.required(101, "file_format", STRING),
        NestedField.required(102, "partition", partition_type),
        NestedField.required(103, "record_count", LONG),
        NestedField.required(104, "file_size_in_bytes", LONG),
    ]
    if format_version == 1:
        fields.append(NestedField.required(105, "block_size_in_bytes", LONG))
    fields += [NestedField.optional(fid, name, MapType(kid, INT, vid, vtype))
               for fid, name, kid, vid, vtype in METRIC_MAPS if fid != 111 or distinct_counts]
    fields += [
        NestedField.optional(131, "key_metadata", BINARY),
        NestedField.optional(132, "split_offsets", ListType(133, LONG)),
    ]
    if format_version >= 2:
        fields.append(NestedField.optional(135, "equality_ids", ListType(136, INT)))
    fields.append(NestedField.optional(140, "sort_order_id", INT))
    if format_version >= 3:
        fields += [NestedField.optional(142, "first_row_id", LONG),
                   NestedField.optional(143, "referenced_data_file", STRING),
                   NestedField.optional(144, "content_offset", LONG),
                   NestedField.optional(145, "content_size_in_bytes", LONG)]
    return StructType(tuple(fields))


@functools.lru_cache(maxsize=64)
def manifest_entry_type(partition_type: StructType, format_version: int,
                        distinct_counts: bool = False) -> StructType:
    """The ``manifest_entry`` struct of a format version."""
    data_file = NestedField.required(2, "data_file", data_file_type(
        partition_type, format_version, distinct_counts))
    if format_version == 1:
        return StructType((NestedField.required(0, "status", INT),
                           NestedField.required(1, "snapshot_id", LONG), data_file))
    return StructType((
        NestedField.required(0, "status", INT),
        NestedField.optional(1, "snapshot_id", LONG),
        NestedField.optional(3, "sequence_number", LONG),
        NestedField.optional(4, "file_sequence_number", LONG),
        data_file,
    ))


# ------------------------------------------------------------------------------- writing


@dataclass(frozen=True, slots=True)
class EntryRows:
    """One block of entries as columns, plus what the statistics need."""

    entries: StructColumn
    status: list[int]
    record_count: list[int]
    sequence_number: list[int | None]
    partitions: list[tuple[Any, ...]]
    distinct_partitions: set[tuple[Any, ...]]


def _map_column(maps: Sequence[Mapping[int, Any] | None]) -> ListColumn:
    present: Sequence[Mapping[int, Any]]
    if None in maps:
        present = [m for m in maps if m is not None]
        lengths: list[int | None] = [None if m is None else len(m) for m in maps]
    else:
        present = cast("Sequence[Mapping[int, Any]]", maps)  # no None in it
        lengths = list(map(len, present))
    keys: Any = list(chain.from_iterable(present))
    if present and keys == list(present[0]) * len(present):  # the same columns in every file
        keys = np.tile(np.fromiter(present[0], np.int64, len(present[0])), len(present))
    try:
        # dict.values over real dicts is the fast path; other Mappings raise TypeError.
        dicts = cast("Sequence[dict[int, Any]]", present)
        values = list(chain.from_iterable(map(dict.values, dicts)))
    except TypeError:  # a Mapping that is not a dict
        values = [v for m in present for v in m.values()]
    return ListColumn(lengths, StructColumn({"key": keys, "value": values}, len(values)))


def _list_column(lists: Sequence[Sequence[int] | None]) -> ListColumn:
    lengths = [None if v is None else len(v) for v in lists]
    return ListColumn(lengths, list(chain.from_iterable(v for v in lists if v is not None)))


def _avro_value(t: PrimitiveType) -> Callable[[Any], Any] | None:
    """Python value -> the Avro value written for it (None: the same)."""
    if t.type_id is TypeId.DECIMAL:
        size = decimal_size(t.precision)
        return lambda v: int.from_bytes(to_bytes(t, v), "big", signed=True).to_bytes(
            size, "big", signed=True)
    if t.type_id is TypeId.UUID:
        return lambda v: to_bytes(UUID, v)
    return None


def _partition_column(partition_type: StructType, partitions: list[tuple[Any, ...]],
                      distinct: set[tuple[Any, ...]]) -> StructColumn:
    width = len(partition_type.fields)
    if any(len(p) != width for p in distinct):
        bad = next(p for p in distinct if len(p) != width)
        raise ValidationError(f"Partition tuple {bad!r} does not match the partition spec: "
                              f"expected {width} values for {partition_type}")
    columns: dict[str, Any] = {}
    for i, f in enumerate(partition_type.fields):
        t = f.field_type
        assert isinstance(t, PrimitiveType)
        values = {p[i] for p in distinct} - {None}
        for v in values:
            check_value(t, v)
        column = [p[i] for p in partitions]
        convert = _avro_value(t)
        if convert is not None:
            converted = {v: convert(v) for v in values}
            column = [None if v is None else converted[v] for v in column]
        columns[avro_name(f.name)] = column
    return StructColumn(columns, len(partitions))


class EntryBuffer:
    """Buffered entries as columns: status, file, snapshot ID, sequence number and file
    sequence number (appending allocates nothing per entry, sparing the garbage collector)."""

    __slots__ = ("file_seqs", "files", "seqs", "snapshot_ids", "status")

    def __init__(self) -> None:
        self.status: list[EntryStatus] = []
        self.files: list[DataFile] = []
        self.snapshot_ids: list[int | None] = []
        self.seqs: list[int | None] = []
        self.file_seqs: list[int | None] = []

    def __len__(self) -> int:
        return len(self.files)

    def append(self, status: EntryStatus, data_file: DataFile, snapshot_id: int | None,
               seq: int | None, file_seq: int | None) -> None:
        self.status.append(status)
        self.files.append(data_file)
        self.snapshot_ids.append(snapshot_id)
        self.seqs.append(seq)
        self.file_seqs.append(file_seq)

    def has_distinct_counts(self) -> bool:
        return any(f.distinct_counts is not None for f in self.files)


def entry_columns(chunk: EntryBuffer, partition_type: StructType, format_version: int,
                  content: ManifestContent, snapshot_id: int | None, *,
                  distinct_counts: bool = True) -> EntryRows:
    """Validate a block of entries and lay them out as Avro columns (``distinct_counts``:
    whether the file has that column)."""
    n = len(chunk)
    files, seqs, file_seqs, snapshot_ids = chunk.files, chunk.seqs, chunk.file_seqs, \
        chunk.snapshot_ids
    status = list(map(int, chunk.status))
    if snapshot_id is not None and None in snapshot_ids:
        snapshot_ids = [snapshot_id if s is None else s for s in snapshot_ids]
    contents = list(map(attrgetter("content"), files))
    allowed = _DATA_CONTENT if content is ManifestContent.DATA else _DELETE_CONTENT
    if not allowed.issuperset(contents):
        bad = next(f for f in files if f.content not in allowed)
        raise ValidationError(f"Cannot store {bad.content.name} file {bad.file_path} in a "
                              f"{content.name} manifest: a manifest stores data files or "
                              "delete files, not both")
    if format_version == 1 and None in snapshot_ids:
        raise ValidationError("v1 manifest entries need a snapshot ID: pass snapshot_id to "
                              "the manifest writer")
    if format_version >= 2 and (None in seqs or None in file_seqs):
        for st, f, seq, file_seq in zip(chunk.status, files, seqs, file_seqs, strict=True):
            if st is not EntryStatus.ADDED and (seq is None or file_seq is None):
                raise ValidationError(
                    f"{st.name} entry for {f.file_path} needs both sequence numbers: only "
                    "ADDED entries inherit them")
    partitions = list(map(attrgetter("partition"), files))
    try:
        distinct = set(partitions)
    except TypeError as e:
        raise ValidationError(f"Partition values must be hashable values: {e}") from None
    df: dict[str, Any] = {
        "content": contents,
        "file_path": list(map(attrgetter("file_path"), files)),
        "file_format": list(map(attrgetter("file_format"), files)),
        "partition": _partition_column(partition_type, partitions, distinct),
        "record_count": list(map(attrgetter("record_count"), files)),
        "file_size_in_bytes": list(map(attrgetter("file_size_in_bytes"), files)),
        "block_size_in_bytes": [DEFAULT_BLOCK_SIZE] * n,
        "key_metadata": list(map(attrgetter("key_metadata"), files)),
        "split_offsets": _list_column(list(map(attrgetter("split_offsets"), files))),
        "equality_ids": _list_column(list(map(attrgetter("equality_ids"), files))),
        "sort_order_id": list(map(attrgetter("sort_order_id"), files)),
    }
    if format_version >= 3:
        for name in ("first_row_id", "referenced_data_file", "content_offset",
                     "content_size_in_bytes"):
            df[name] = list(map(attrgetter(name), files))
    if not distinct_counts and chunk.has_distinct_counts():
        raise ValidationError(
            "Cannot write distinct_counts in this manifest: its first block had none, so the "
            "file has no distinct_counts column; write such files to their own manifest")
    for fid, name, *_ in METRIC_MAPS:
        if fid != 111 or distinct_counts:
            df[name] = _map_column(list(map(attrgetter(name), files)))
    entries = StructColumn({"status": status, "snapshot_id": snapshot_ids,
                            "sequence_number": seqs, "file_sequence_number": file_seqs,
                            "data_file": StructColumn(df, n)}, n)
    return EntryRows(entries, status, df["record_count"], seqs, partitions, distinct)


class ManifestStats:
    """File and row counts per status, the minimum live data sequence number, and partition
    field summaries, accumulated block by block."""

    def __init__(self, partition_type: StructType) -> None:
        self._types = [f.field_type for f in partition_type.fields]
        self.files = dict.fromkeys(EntryStatus, 0)
        self.rows = dict.fromkeys(EntryStatus, 0)
        self.min_sequence_number: int | None = None
        self._distinct: set[tuple[Any, ...]] = set()
        # -0.0 == 0.0, so distinct tuples lose the sign of zero: remember it per float field
        self._zero_signs: dict[int, set[float]] = {
            i: set() for i, t in enumerate(self._types)
            if isinstance(t, PrimitiveType) and t.type_id in _FLOATS}

    def update(self, rows: EntryRows) -> None:
        status = np.asarray(rows.status, np.int64)
        counts = np.asarray(rows.record_count, np.int64)
        for s in EntryStatus:
            mask = status == s
            self.files[s] += int(mask.sum())
            self.rows[s] += int(counts[mask].sum())
        if rows.sequence_number.count(None) != len(rows.sequence_number):
            live = [seq for seq, st in zip(rows.sequence_number, rows.status, strict=True)
                    if seq is not None and st != EntryStatus.DELETED]
            if live:
                low = min(live)
                if self.min_sequence_number is None or low < self.min_sequence_number:
                    self.min_sequence_number = low
        self._distinct |= rows.distinct_partitions
        for i, signs in self._zero_signs.items():
            signs.update(math.copysign(1.0, p[i]) for p in rows.partitions if p[i] == 0.0)

    def summaries(self) -> tuple[FieldSummary, ...]:
        """One ``field_summary`` per partition field: "Lower bound for the non-null, non-NaN
        values in the partition field", and "If -0.0 is a value of the partition field, the
        ``lower_bound`` must not be +0.0"."""
        out = []
        for i, t in enumerate(self._types):
            assert isinstance(t, PrimitiveType)
            values = [p[i] for p in self._distinct]
            if i in self._zero_signs:
                values = [v for v in values if v != 0.0]
                values += [math.copysign(0.0, s) for s in self._zero_signs[i]]
            low, high = lower_bound(t, values), upper_bound(t, values)
            out.append(FieldSummary(
                contains_null=any(v is None for v in values),
                contains_nan=any(isinstance(v, float) and math.isnan(v) for v in values),
                lower_bound=None if low is None else to_bytes(t, low),
                upper_bound=None if high is None else to_bytes(t, high)))
        return tuple(out)
