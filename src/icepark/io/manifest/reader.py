"""Reading manifest entries with a compiled decoder: only the fields and metrics a reader needs.

Spec, *Manifests*: each ``data_file`` carries per-column metric maps (``column_sizes``,
``value_counts``, ``null_value_counts``, ``nan_value_counts``, ``distinct_counts``,
``lower_bounds``, ``upper_bounds``), and most of a manifest's bytes are in them. Scan planning
needs them only to evaluate a filter on the columns it names (*Scan Planning*: "Scan predicates
are also used to filter data and delete files using column bounds and counts"), so
:class:`Stats` says which maps and columns to keep, and the others are skipped undecoded
(:mod:`icepark.io.avro.compiled`); a file whose metrics were left out has ``None`` for those
maps, as when a writer does not collect them. A partition *gate* skips the rest of an entry
whose partition cannot match, without decoding its metrics, and a metrics filter the rest of an
entry whose metrics cannot match, without decoding the fields after them.

Fields are matched by field ID as :class:`~icepark.io.manifest.decoder.EntryDecoder` does, and
entries come out the same, with *Sequence Number Inheritance* applied. The generated reader
builds them itself (a :class:`~icepark.io.avro.compiled.Finish`), its records checked as
:class:`DataFile` checks them and then built without repeating the checks
(:mod:`icepark.spec.trusted`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icepark.errors import UnsupportedFeature
from icepark.io.avro.compiled import (
    BlockReader,
    Converter,
    Finish,
    Path,
    compile_reader,
    read_blocks,
)
from icepark.io.manifest.codec import METRIC_MAPS
from icepark.io.manifest.decoder import EntryDecoder
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestFile,
    RowIdAssigner,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.trusted import trusted_constructor

METRIC_FIELDS = {fid: name for fid, name, *_ in METRIC_MAPS}
"""Field ID -> name of the ``data_file`` metric maps, in :class:`DataFile` order."""
FILTER_METRICS = frozenset({109, 110, 137, 125, 128})
"""The maps a metrics evaluator reads: value, null and NaN counts and the bounds."""
PartitionFilter = Callable[[tuple[Any, ...]], int]
"""A partition filter: false for a partition tuple whose entries it leaves out, else true, or
:data:`~icepark.io.avro.native.SETTLED` when every row of such a file matches the scan's filter
(a compiled reader may then skip its metrics filter: the file would pass it)."""
_STATUS = tuple(EntryStatus)
_CONTENT = tuple(FileContent)
_DATA_FILE = trusted_constructor(DataFile)
"""Builds the :class:`DataFile` of a decoded entry, whose fields the reader has checked as
``DataFile`` would (see :mod:`icepark.spec.trusted`)."""
_ENTRY = trusted_constructor(ManifestEntry)


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
    filter_only: bool = False
    """Whether the maps are decoded for the metrics filter alone: a compiled reader applying
    one passes them on (in the files it returns) only for the files the filter leaves
    undecided (the caller's evaluator decides those); every other file has None for them."""

    @staticmethod
    def for_columns(columns: frozenset[int] | set[int], *, filter_only: bool = False) -> Stats:
        """The maps a metrics evaluator needs, for those columns only (none if empty), for
        the metrics filter alone if ``filter_only``."""
        if not columns:
            return NO_STATS
        return Stats(FILTER_METRICS, frozenset(columns), filter_only)


ALL_STATS = Stats(frozenset(METRIC_FIELDS))
"""Every metric map of every column, as written."""
NO_STATS = Stats(frozenset())
"""No metric maps (each is None)."""


_COMPILED: dict[tuple[bytes | str, PartitionSpec | None, int, Stats, bool, bool, bool],
                BlockReader | str] = {}
"""Compiled readers by layout, or why the layout cannot be compiled."""
_COMPILED_LIMIT = 64
_COMPILED_LOCK = threading.Lock()


def compiled_entries(schema: Any, spec: PartitionSpec | None, spec_id: int, stats: Stats, *,
                     gated: bool, location: str, checked: bool = False,
                     files_only: bool = False, schema_text: bytes = b"") -> BlockReader:
    """The compiled reader of a manifest's writer ``schema`` (``UnsupportedFeature`` when the
    schema cannot be compiled), applying a partition gate if ``gated`` and a metrics filter if
    ``checked``; with ``files_only``, its blocks are lists of the live entries' data files
    (for planners that need nothing else of an entry), else of entries. Cached by layout (a
    layout that cannot be compiled too): the manifests of a table share a few, and generating
    a reader costs a few milliseconds. Only code is cached, never data. ``schema_text``, the
    schema's JSON as the manifest holds it, keys the cache when given (else the schema is
    dumped again).

    A reader's rows are first: status, snapshot ID, sequence number, file sequence number,
    then the ``data_file`` fields content, file_path, file_format, partition, record_count,
    file_size_in_bytes, the metric maps (:data:`METRIC_FIELDS` order), key_metadata,
    split_offsets, equality_ids, sort_order_id, referenced_data_file, first_row_id,
    content_offset and content_size_in_bytes; None where the manifest has no such field or the
    map was left out; its finish (:func:`_finish`) turns them into entries."""
    key = (schema_text or json.dumps(schema, sort_keys=True), spec, spec_id, stats, gated,
           checked, files_only)
    found = _COMPILED.get(key)
    if found is None:
        try:
            found = _compile(schema, spec, spec_id, stats, (gated, checked, files_only),
                             location)
        except UnsupportedFeature as e:
            found = str(e)  # remembered: the next manifest of this layout fails at once
        with _COMPILED_LOCK:
            if len(_COMPILED) >= _COMPILED_LIMIT:
                _COMPILED.clear()
            _COMPILED[key] = found
    if isinstance(found, str):
        raise UnsupportedFeature(found)
    return found


def _compile(schema: Any, spec: PartitionSpec | None, spec_id: int, stats: Stats,  # noqa: PLR0917
             filters: tuple[bool, bool, bool], location: str) -> BlockReader:
    gated, checked, files_only = filters
    layout = EntryDecoder(schema, spec, spec_id, location)
    top, df = layout.top_names, layout.data_file_names
    data_file = top[2]

    def at(fid: int) -> Path:
        return (data_file, df.get(fid, f"\0missing {fid}"))

    def entry_field(fid: int) -> Path:  # files need no entry metadata: skipped
        return (f"\0unused {fid}" if files_only else top.get(fid, f"\0missing {fid}"),)

    wanted: dict[Path, Converter | None] = {
        (top[0],): _STATUS,
        entry_field(1): None,
        entry_field(3): None,
        entry_field(4): None,
        at(134): _CONTENT,
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
    wanted.update({at(131): None, at(132): tuple, at(135): tuple, at(140): None, at(143): None,
                   at(142): None, at(144): None, at(145): None})
    return compile_reader(schema, wanted, gate=at(102) if gated else None, pairs=pairs,
                          finish=_finish(3 in top, spec_id, checked, files_only,
                                         stats.filter_only))


def _finish(v2: bool, spec_id: int, checked: bool, files_only: bool,
            filter_only: bool) -> Finish:
    """Each row (see :func:`compiled_entries`) to a :class:`ManifestEntry` (or, with
    ``files_only``, its :class:`DataFile`), inlined into the reader: *Sequence Number
    Inheritance*, *First Row ID Inheritance* (as
    :class:`~icepark.spec.manifest.RowIdAssigner`, whose counter is in ``ctx``), DELETED
    entries and the metrics filter (the reader's ``ctx``: see :func:`compiled_entry_blocks`),
    then the checks :class:`DataFile` makes: for the kernel's reader, those of a block of data
    files at once (:func:`_valid_data_files`; the lean body then builds them without checking
    them row by row: the checks were a tenth of a full scan's planning), else row by row. With
    ``filter_only``, a file keeps its metric maps only if the filter left it undecided."""
    inherit = () if files_only else (
        *(() if v2 else ("{2} = {3} = 0",)),  # "sequence_number must default to 0", file too
        "if {1} is None:",
        "    {1} = inherited",
        "if {0} is _ADDED or always:",
        "    if {2} is None:",
        "        {2} = manifest_seq",
        "    if {3} is None:",
        "        {3} = manifest_seq")
    data_file = (f"_DATA_FILE({{5}}, {{6}}, {{7}}, {{8}}, {{9}}, {{4}}, {spec_id}, {{10}}, "
                 "{11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, "
                 "{23}, {24})")
    head = (
        "if {4} is None:",
        "    {4} = _DATA",
        # first row ID inheritance counts every live data file with a null first_row_id, so
        # it runs before DELETED entries are left out (they do not count)
        "if rows is not None and {22} is None and {4} is _DATA and {0} is not _DELETED:",
        "    {22} = rows.next_row_id",
        "    rows.next_row_id += {8}",
        "if {0} is _DELETED and discard:" if not files_only else "if {0} is _DELETED:",
        "    continue",
        *inherit)
    append = (f"append({data_file})" if files_only else f"append(_ENTRY({{0}}, {data_file}, {{1}}, "
                                                        "{2}, {3}))")
    body = [
        *head,
        # 132 split_offsets (a tuple): "Must be sorted ascending"
        "if {18} is not None and len({18}) > 1 and sorted({18}) != list({18}):",
        "    raise _bad(f'{{{5}}}: split_offsets must be sorted ascending')",
        "if {8} < 0 or {9} < 0:",
        "    raise _bad(f'{{{5}}}: record_count and file_size_in_bytes cannot be negative')",
        "if {4} is _EQUALITY and not {19}:",
        "    raise _bad(f'{{{5}}}: equality_ids are required when content=2 "
        "(equality deletes)')",
        "if ({23} is None) is not ({24} is None):",
        "    raise _bad(f'{{{5}}}: content_offset and content_size_in_bytes go together')",
        "if {6} is _PUFFIN and {4} is _POSITION and ({21} is None or {23} is None):",
        "    raise _bad(f'{{{5}}}: a deletion vector needs referenced_data_file and "
        "content_offset')",
        append,
    ]
    check = (  # the metrics filter, before the fields after the metric maps are decoded
        "rejected = False",
        "if metrics is not None:",
        "    view.value_counts, view.null_value_counts = {11}, {12}",
        "    view.nan_value_counts, view.lower_bounds, view.upper_bounds = {13}, {15}, {16}",
        "    rejected = metrics(view)",
    )
    consts = {"_ENTRY": _ENTRY, "_DATA_FILE": _DATA_FILE, "_ADDED": EntryStatus.ADDED,
              "_DELETED": EntryStatus.DELETED, "_DATA": FileContent.DATA,
              "_EQUALITY": FileContent.EQUALITY_DELETES, "_PUFFIN": FileFormat.PUFFIN,
              "_POSITION": FileContent.POSITION_DELETES}
    return Finish(("inherited, manifest_seq, always, metrics, view, discard, rows = ctx",),
                  tuple(body), consts, check if checked else (), (11, 12, 13, 15, 16),
                  _rejected_at_once if checked else None,
                  tuple(range(10, 10 + len(METRIC_FIELDS))) if filter_only else (),
                  (*head, append), _valid_data_files)


def _valid_data_files(block: Any) -> bool:
    """Whether every row of a block (as the kernel left it: see
    :class:`~icepark.io.avro.native.Items`) passes the checks of :func:`_finish`'s body: when
    each is a data file (content 0, or no content field: v1) with no ``content_offset`` or
    ``content_size_in_bytes``, whose ``record_count`` and ``file_size_in_bytes`` are not
    negative and whose ``split_offsets`` are sorted ascending. The equality and deletion
    vector checks concern delete files only. False when the block cannot be read that way
    (its rows are then checked one by one)."""
    import numpy as np  # noqa: PLC0415 - with the kernel only

    if not block.count:
        return True
    content = block.values(4)
    if content is None:
        if block.present(4):
            return False
    elif content.any():  # a null content (0 in the array) reads as data
        return False
    for i in (8, 9):  # record_count, file_size_in_bytes: required longs
        counts = block.values(i)
        if counts is None or counts.min() < 0:
            return False
    for i in (23, 24):  # content_offset, content_size_in_bytes: absent or null
        if block.present(i):
            nulls = block.nulls(i)
            if nulls is None or not nulls.all():
                return False
    if not block.present(18):
        return True
    starts, ends = block.values(18), block.ends(18)
    if starts is None:
        return False
    several = ends - starts > 1
    if not several.any():
        return True
    starts, ends = starts[several], ends[several]
    if (starts[1:] < starts[:-1]).any():
        return False  # not in record order: not as the kernel collects them
    items = block.items()
    falls = np.flatnonzero(items[1:] < items[:-1])  # item falls + 1 is below item falls
    row = np.searchsorted(starts, falls, side="right") - 1
    inside = (row >= 0) & (falls + 1 < ends[np.maximum(row, 0)])
    return not inside.any()


def _rejected_at_once(ctx: Any, block: Any) -> Any:
    """The entries of a block the metrics filter in ``ctx`` rejects, and those it leaves
    undecided, found for the whole block at once (see
    :class:`~icepark.io.avro.compiled.Finish`), when the filter is a
    conjunction test with ``columns`` (:func:`icepark.table.scan.prefilter.metrics_prefilter`:
    field ID, bound width, unpack, the greatest lower bound and least upper bound a matching
    file can have), else None. The same rules as the test applied to each entry: a column
    with no value or only nulls, or whose bounds (in order) lie outside the limits, proves no
    row matches, unless a bound of some filtered column has the wrong width (the evaluator
    then decides: not rejected)."""
    import numpy as np  # noqa: PLC0415 - with the kernel only

    metrics = ctx[3]
    if metrics is None:
        return np.zeros(block.count, dtype=bool), np.zeros(block.count, dtype=bool)
    columns = getattr(metrics, "columns", None)
    maps = [block.pairs(i) for i in (11, 12, 15, 16)]  # value and null counts, bounds
    if columns is None or any(m is None for m in maps):
        return None
    n, data = block.count, block.data

    def lookup(found: tuple[Any, Any, Any, Any], fid: int) -> tuple[Any, Any, Any]:
        rows, keys, values, ends = found
        pick = keys == fid
        has = np.zeros(n, dtype=bool)
        value = np.zeros(n, dtype=np.int64)
        end = np.zeros(n, dtype=np.int64)
        has[rows[pick]] = True
        value[rows[pick]] = values[pick]
        end[rows[pick]] = ends[pick]
        return has, value, end

    def bound(has: Any, start: Any, width: int) -> Any:
        at = np.where(has, start, 0)[:, None] + np.arange(width)
        raw = data[np.minimum(at, len(data) - 1)]
        return np.ascontiguousarray(raw).view("<i4" if width == 4 else "<i8")[:, 0].astype(
            np.int64)

    proven = np.zeros(n, dtype=bool)
    undecided = np.zeros(n, dtype=bool)
    for fid, width, _, below, above in columns:
        value_has, value_count, _ = lookup(maps[0], fid)
        null_has, null_count, _ = lookup(maps[1], fid)
        low_has, low_start, low_end = lookup(maps[2], fid)
        high_has, high_start, high_end = lookup(maps[3], fid)
        undecided |= (low_has & (low_end - low_start != width)) | (
            high_has & (high_end - high_start != width))
        empty = value_has & ((value_count == 0) | (null_has & (null_count == value_count)))
        lower, upper = bound(low_has, low_start, width), bound(high_has, high_start, width)
        ordered = ~(low_has & high_has & (lower > upper))
        outside = np.zeros(n, dtype=bool)
        if below is not None:
            outside |= low_has & (lower > below)
        if above is not None:
            outside |= high_has & (upper < above)
        proven |= empty | (ordered & outside)
    return proven & ~undecided, undecided


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


def compiled_entry_blocks(reader: BlockReader,  # noqa: PLR0917 - one caller
                          blocks: Iterator[tuple[int, bytes]],
                          manifest: ManifestFile,
                          gate: PartitionFilter | None, location: str,
                          counter: list[int],
                          metrics_filter: Callable[[FileMetrics], bool | None] | None = None, *,
                          discard_deleted: bool = False,
                          row_ids: bool = True) -> Iterator[list[ManifestEntry]]:
    """The entries of each of the manifest's blocks (``counter[0]`` counts every record read,
    those the gate rejected too), but those whose metrics ``metrics_filter`` rejects (before
    their file record is built) and, with ``discard_deleted``, DELETED ones. With ``row_ids``
    (only valid without a gate or a metrics filter, which leave entries out before they are
    counted), data files inherit their first row ID from the manifest's."""
    rows = (RowIdAssigner(manifest.first_row_id)
            if row_ids and manifest.first_row_id is not None else None)
    ctx = (manifest.added_snapshot_id, manifest.sequence_number, manifest.sequence_number == 0,
           metrics_filter, _RowMetrics(), discard_deleted, rows)

    def counted() -> Iterator[tuple[int, bytes]]:
        for count, data in blocks:
            counter[0] += count
            yield count, data

    yield from read_blocks(reader, counted(), gate, location, ctx)
