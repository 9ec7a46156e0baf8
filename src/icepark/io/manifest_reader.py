"""Reading manifest entries with a compiled decoder: only the fields and metrics a reader needs.

Spec, *Manifests*: each ``data_file`` carries per-column metric maps (``column_sizes``,
``value_counts``, ``null_value_counts``, ``nan_value_counts``, ``distinct_counts``,
``lower_bounds``, ``upper_bounds``), and most of a manifest's bytes are in them. Scan planning
needs them only to evaluate a filter on the columns it names (*Scan Planning*: "Scan predicates
are also used to filter data and delete files using column bounds and counts"), so
:class:`Stats` says which maps and columns to keep, and the others are skipped undecoded
(:mod:`icepark.io.avro_compiled`); a file whose metrics were left out has ``None`` for those
maps, as when a writer does not collect them. A partition *gate* skips the rest of an entry
whose partition cannot match, without decoding its metrics.

Fields are matched by field ID as :class:`~icepark.io.manifest_decoder.EntryDecoder` does, and
entries come out the same, with *Sequence Number Inheritance* applied.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icepark.io.avro_compiled import BlockReader, Path, compile_reader, read_blocks
from icepark.io.manifest_decoder import EntryDecoder
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.partitioning import PartitionSpec

METRIC_FIELDS = {108: "column_sizes", 109: "value_counts", 110: "null_value_counts",
                 137: "nan_value_counts", 111: "distinct_counts", 125: "lower_bounds",
                 128: "upper_bounds"}
"""Field ID -> name of the ``data_file`` metric maps, in :class:`DataFile` order."""
FILTER_METRICS = frozenset({109, 110, 137, 125, 128})
"""The maps a metrics evaluator reads: value, null and NaN counts and the bounds."""
_STATUS = tuple(EntryStatus)
_CONTENT = tuple(FileContent)


@dataclass(frozen=True, slots=True)
class Stats:
    """Which metric maps of each data file to decode: ``maps`` (field IDs of the maps, see
    :data:`METRIC_FIELDS`), restricted to the columns ``columns`` (None: every column).

    >>> ALL_STATS.maps == frozenset(METRIC_FIELDS), NO_STATS.maps
    (True, frozenset())
    >>> sorted(Stats.for_columns({3, 5}).columns or ())
    [3, 5]
    """

    maps: frozenset[int]
    columns: frozenset[int] | None = None

    @staticmethod
    def for_columns(columns: frozenset[int] | set[int]) -> Stats:
        """The maps a metrics evaluator needs, for those columns only (none if empty)."""
        if not columns:
            return NO_STATS
        return Stats(FILTER_METRICS, frozenset(columns))


ALL_STATS = Stats(frozenset(METRIC_FIELDS))
"""Every metric map of every column, as written."""
NO_STATS = Stats(frozenset())
"""No metric maps (each is None)."""


def _status(value: int) -> EntryStatus:
    if not 0 <= value < len(_STATUS):
        raise ValueError(f"invalid entry status {value}")
    return _STATUS[value]


def _content(value: int) -> FileContent:
    if not 0 <= value < len(_CONTENT):
        raise ValueError(f"invalid data file content {value}")
    return _CONTENT[value]


@dataclass(frozen=True, slots=True)
class CompiledEntries:
    """A compiled reader of one manifest layout, and how to turn its rows into entries."""

    reader: BlockReader
    """Rows of: status, snapshot ID, sequence number, file sequence number, then the
    ``data_file`` fields content, file_path, file_format, partition, record_count,
    file_size_in_bytes, the metric maps (:data:`METRIC_FIELDS` order), key_metadata,
    split_offsets, equality_ids and sort_order_id; None where the manifest has no such field
    or the map was left out."""
    has_sequence_numbers: bool


_COMPILED: dict[tuple[str, PartitionSpec | None, int, Stats, bool], CompiledEntries] = {}
_COMPILED_LIMIT = 64
_COMPILED_LOCK = threading.Lock()


def compiled_entries(schema: Any, spec: PartitionSpec | None, spec_id: int, stats: Stats, *,
                     gated: bool, location: str) -> CompiledEntries:
    """The compiled reader of a manifest's writer ``schema`` (``UnsupportedFeature`` when the
    schema cannot be compiled). Cached by layout: the manifests of a table share a few, and
    generating a reader costs about a millisecond. Only code is cached, never data."""
    key = (json.dumps(schema, sort_keys=True), spec, spec_id, stats, gated)
    found = _COMPILED.get(key)
    if found is None:
        found = _compile(schema, spec, spec_id, stats, gated, location)
        with _COMPILED_LOCK:
            if len(_COMPILED) >= _COMPILED_LIMIT:
                _COMPILED.clear()
            _COMPILED[key] = found
    return found


def _compile(schema: Any, spec: PartitionSpec | None, spec_id: int, stats: Stats,  # noqa: PLR0917
             gated: bool, location: str) -> CompiledEntries:
    layout = EntryDecoder(schema, spec, spec_id, location)
    top, df = layout.top_names, layout.data_file_names
    data_file = top[2]

    def at(fid: int) -> Path:
        return (data_file, df.get(fid, f"\0missing {fid}"))

    wanted: dict[Path, Callable[[Any], Any] | None] = {
        (top[0],): _status,
        (top.get(1, "\0missing 1"),): None,
        (top.get(3, "\0missing 3"),): None,
        (top.get(4, "\0missing 4"),): None,
        at(134): _content,
        at(100): None,
        at(101): layout.file_format,
        at(102): layout.partition_converter(),
        at(103): None,
        at(104): None,
    }
    pairs: dict[Path, frozenset[int] | None] = {}
    for fid in METRIC_FIELDS:  # a map left out reads as None
        path = at(fid) if fid in stats.maps else (data_file, f"\0left out {fid}")
        wanted[path] = None
        pairs[path] = stats.columns
    wanted.update({at(131): None, at(132): tuple, at(135): tuple, at(140): None})
    reader = compile_reader(schema, wanted, gate=at(102) if gated else None, pairs=pairs)
    return CompiledEntries(reader, 3 in top)


class FileMetrics(Protocol):
    """The metric maps of a data file a metrics filter reads (a :class:`DataFile` is one)."""

    @property
    def value_counts(self) -> Mapping[int, int] | None: ...

    @property
    def null_value_counts(self) -> Mapping[int, int] | None: ...

    @property
    def nan_value_counts(self) -> Mapping[int, int] | None: ...

    @property
    def lower_bounds(self) -> Mapping[int, bytes] | None: ...

    @property
    def upper_bounds(self) -> Mapping[int, bytes] | None: ...


class _RowMetrics:
    """The metric maps of the row being read (reused: one per reader)."""

    __slots__ = ("lower_bounds", "nan_value_counts", "null_value_counts", "upper_bounds",
                 "value_counts")

    def __init__(self) -> None:
        self.value_counts: Mapping[int, int] | None = None
        self.null_value_counts: Mapping[int, int] | None = None
        self.nan_value_counts: Mapping[int, int] | None = None
        self.lower_bounds: Mapping[int, bytes] | None = None
        self.upper_bounds: Mapping[int, bytes] | None = None


def compiled_entry_rows(entries: CompiledEntries,  # noqa: PLR0917 - one caller
                        blocks: Iterator[tuple[int, bytes]],
                        manifest: ManifestFile, spec_id: int,
                        gate: Callable[[tuple[Any, ...]], bool] | None, location: str,
                        counter: list[int],
                        metrics_filter: Callable[[FileMetrics], bool] | None = None
                        ) -> Iterator[ManifestEntry]:
    """The entries of the manifest's blocks (``counter[0]`` counts every record read, those
    the gate rejected too), but those whose metrics ``metrics_filter`` rejects (before their
    file record is built)."""
    view = _RowMetrics()
    inherited_snapshot = manifest.added_snapshot_id
    manifest_seq = manifest.sequence_number
    always_inherit = manifest_seq == 0
    v2 = entries.has_sequence_numbers
    added = EntryStatus.ADDED
    data = FileContent.DATA

    def counted() -> Iterator[tuple[int, bytes]]:
        for count, data in blocks:
            counter[0] += count
            yield count, data

    for rows in read_blocks(entries.reader, counted(), gate, location):
        for row in rows:
            status, snapshot_id, seq, file_seq = row[0], row[1], row[2], row[3]
            if not v2:  # "sequence_number must default to 0", file too
                seq = file_seq = 0
            if snapshot_id is None:
                snapshot_id = inherited_snapshot
            if status is added or always_inherit:
                if seq is None:
                    seq = manifest_seq
                if file_seq is None:
                    file_seq = manifest_seq
            if metrics_filter is not None:
                view.value_counts, view.null_value_counts, view.nan_value_counts = row[11:14]
                view.lower_bounds, view.upper_bounds = row[15], row[16]
                if metrics_filter(view):
                    continue
            content = row[4]
            data_file = DataFile(row[5], row[6], row[7], row[8], row[9],
                                 data if content is None else content, spec_id, *row[10:])
            yield ManifestEntry(status, data_file, snapshot_id, seq, file_seq)
