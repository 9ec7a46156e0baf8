"""Manifest lists: the Avro file of a snapshot's ``manifest_file`` records.

Spec, *Manifest Lists*: "A new manifest list is written for each attempt to commit a snapshot
because the list of manifests always changes to produce a new snapshot. When a manifest list is
written, the (optimistic) sequence number of the snapshot is written for all new manifest files
tracked by the list." v1 lists carry no ``content``, ``sequence_number`` or
``min_sequence_number``; reading one, they "must default to 0" (Appendix E).

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.manifest import ManifestFile
>>> io, path = ArrowFileIO(), tempfile.mkdtemp() + "/snap-1.avro"
>>> new = ManifestFile("/t/metadata/m0.avro", 5120, 0, added_snapshot_id=1, sequence_number=-1,
...                    min_sequence_number=-1, added_files_count=1, existing_files_count=0,
...                    deleted_files_count=0, added_rows_count=10, existing_rows_count=0,
...                    deleted_rows_count=0)
>>> write_manifest_list(io, path, 2, snapshot_id=1, parent_snapshot_id=None, sequence_number=4,
...                     manifests=[new])
>>> [(m.sequence_number, m.min_sequence_number) for m in read_manifest_list(io, path)]
[(4, 4)]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from io import BytesIO
from operator import attrgetter
from typing import Any

from icepark.errors import CorruptFile, UnsupportedFeature, ValidationError
from icepark.io.avro.compiled import BlockReader, compile_reader, read_blocks
from icepark.io.avro.encoder import ListColumn, StructColumn
from icepark.io.avro.reader import open_blocks, open_reader, writer_schema
from icepark.io.avro.schema import to_avro
from icepark.io.avro.writer import CODEC_PROPERTY, LEVEL_PROPERTY, AvroWriter, avro_codec
from icepark.io.fileio import FileIO
from icepark.io.manifest.decoder import DECODING_ERRORS, field_names
from icepark.io.manifest.manifest import UNASSIGNED_SEQUENCE_NUMBER, read_manifest_metadata
from icepark.spec.manifest import FieldSummary, ManifestContent, ManifestFile
from icepark.spec.metadata import FormatVersion
from icepark.spec.snapshots import Snapshot
from icepark.spec.trusted import trusted_constructor
from icepark.spec.types import BINARY, BOOLEAN, INT, LONG, STRING, ListType, NestedField, StructType

FIELD_SUMMARY = StructType((
    NestedField.required(509, "contains_null", BOOLEAN),
    NestedField.optional(518, "contains_nan", BOOLEAN),
    NestedField.optional(510, "lower_bound", BINARY),
    NestedField.optional(511, "upper_bound", BINARY),
))
_COUNTS = ((504, "added_files_count", INT), (505, "existing_files_count", INT),
           (506, "deleted_files_count", INT), (512, "added_rows_count", LONG),
           (513, "existing_rows_count", LONG), (514, "deleted_rows_count", LONG))


def manifest_file_type(format_version: int) -> StructType:
    """The ``manifest_file`` struct of a format version (field order of the spec's table)."""
    v2 = format_version >= 2
    fields = [
        NestedField.required(500, "manifest_path", STRING),
        NestedField.required(501, "manifest_length", LONG),
        NestedField.required(502, "partition_spec_id", INT),
    ]
    if v2:
        fields += [NestedField.required(517, "content", INT),
                   NestedField.required(515, "sequence_number", LONG),
                   NestedField.required(516, "min_sequence_number", LONG)]
    fields.append(NestedField.required(503, "added_snapshot_id", LONG))
    fields += [NestedField(fid, name, t, v2) for fid, name, t in _COUNTS]
    fields += [NestedField.optional(507, "partitions", ListType(508, FIELD_SUMMARY)),
               NestedField.optional(519, "key_metadata", BINARY)]
    if format_version >= 3:
        fields.append(NestedField.optional(520, "first_row_id", LONG))
    return StructType(tuple(fields))


def assign_first_row_ids(manifests: Sequence[ManifestFile], first_row_id: int
                         ) -> tuple[list[ManifestFile], int]:
    """*First Row ID Assignment*: the manifests with a ``first_row_id`` for each data manifest
    without one, and the number of row IDs assigned (the snapshot's ``added-rows``).

    "The ``first_row_id`` for existing manifests must be preserved when writing a new manifest
    list. The value of ``first_row_id`` for delete manifests is always ``null``." The first
    manifest without one gets the snapshot's ``first-row-id`` and "A simple and valid
    approach is to estimate the number of rows in data files that will be assigned a
    ``first_row_id`` using the manifest's ``added_rows_count`` and ``existing_rows_count``",
    which also covers existing files without one (manifests from before an upgrade to v3).

    >>> m = ManifestFile("m.avro", 1, 0, 1, added_rows_count=100, existing_rows_count=25)
    >>> done, added = assign_first_row_ids([replace(m, first_row_id=925), m, m], 1000)
    >>> [x.first_row_id for x in done], added
    ([925, 1000, 1125], 250)
    """
    next_row_id = first_row_id
    out = []
    for m in manifests:
        if m.content is ManifestContent.DATA and m.first_row_id is None:
            if m.added_rows_count is None or m.existing_rows_count is None:
                raise ValidationError(f"Manifest {m.manifest_path} has no row counts: cannot "
                                      "assign its first row ID")
            out.append(replace(m, first_row_id=next_row_id))
            next_row_id += m.added_rows_count + m.existing_rows_count
        elif m.content is ManifestContent.DELETES and m.first_row_id is not None:
            out.append(replace(m, first_row_id=None))
        else:
            out.append(m)
    return out, next_row_id - first_row_id


def assign_sequence_numbers(manifests: Sequence[ManifestFile], snapshot_id: int,
                            sequence_number: int) -> list[ManifestFile]:
    """Give new manifests (unassigned sequence numbers or snapshot ID) the snapshot's.

    A manifest without a sequence number must have been added by this snapshot; and "if the
    min sequence number is not determined, then there was no assigned sequence number for any
    file", so it is the snapshot's too.
    """
    out = []
    for m in manifests:
        added_by = snapshot_id if m.added_snapshot_id == UNASSIGNED_SEQUENCE_NUMBER \
            else m.added_snapshot_id
        seq, min_seq = m.sequence_number, m.min_sequence_number
        if seq == UNASSIGNED_SEQUENCE_NUMBER:
            if added_by != snapshot_id:
                raise ValidationError(
                    f"Manifest {m.manifest_path} has no sequence number but was added by "
                    f"snapshot {m.added_snapshot_id}, not by snapshot {snapshot_id}")
            seq = sequence_number
        if min_seq == UNASSIGNED_SEQUENCE_NUMBER:
            min_seq = sequence_number
        unchanged = (added_by, seq, min_seq) == (m.added_snapshot_id, m.sequence_number,
                                                 m.min_sequence_number)
        out.append(m if unchanged else replace(m, added_snapshot_id=added_by,
                                               sequence_number=seq, min_sequence_number=min_seq))
    return out


def write_manifest_list(  # noqa: PLR0917 - the agreed positional API
        file_io: FileIO, location: str, format_version: FormatVersion,
                        snapshot_id: int, parent_snapshot_id: int | None, sequence_number: int,
                        manifests: Sequence[ManifestFile], *,
                        properties: Mapping[str, str] | None = None,
                        first_row_id: int | None = None) -> None:
    """Write a snapshot's manifest list (see :func:`assign_sequence_numbers`).

    Key-value metadata: ``snapshot-id``, ``parent-snapshot-id`` (``null`` when there is none),
    ``sequence-number`` (v2 and later), ``first-row-id`` (v3: the snapshot's) and
    ``format-version``. A v3 list needs every data manifest's ``first_row_id`` assigned
    (:func:`assign_first_row_ids`).
    """
    manifests = assign_sequence_numbers(manifests, snapshot_id, sequence_number)
    v2 = format_version >= 2
    if not v2 and any(m.content is not ManifestContent.DATA for m in manifests):
        raise ValidationError("Cannot store delete manifests in a v1 manifest list: "
                              "'content' must be 0 (data)")
    if v2:
        for m in manifests:
            missing = [name for _, name, _ in _COUNTS if getattr(m, name) is None]
            if missing:
                raise ValidationError(f"Manifest {m.manifest_path} has no {missing[0]}: the "
                                      "file and row counts are required in v2")
    meta = {"snapshot-id": str(snapshot_id),
            "parent-snapshot-id": "null" if parent_snapshot_id is None
            else str(parent_snapshot_id),
            "format-version": str(format_version)}
    if v2:
        meta["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        if first_row_id is None:
            raise ValidationError("A v3 manifest list needs the snapshot's first-row-id")
        unassigned = [m.manifest_path for m in manifests
                      if m.content is ManifestContent.DATA and m.first_row_id is None]
        if unassigned:
            raise ValidationError(f"Data manifest {unassigned[0]} has no first_row_id: \"Writers "
                                  "must assign a first_row_id to new data manifests when "
                                  "writing a manifest list\"")
        meta["first-row-id"] = str(first_row_id)
    props = properties or {}
    level = props.get(LEVEL_PROPERTY)
    schema = to_avro(manifest_file_type(format_version), "manifest_file")
    with file_io.new_output(location).create() as stream:
        writer = AvroWriter(stream, schema, meta, codec=avro_codec(props.get(CODEC_PROPERTY)),
                            level=int(level) if level else None)
        writer.write_rows(_columns(manifests))
        writer.close()


def _columns(manifests: Sequence[ManifestFile]) -> StructColumn:
    columns: dict[str, Any] = {
        name: list(map(attrgetter(name), manifests))
        for name in ("manifest_path", "manifest_length", "partition_spec_id", "content",
                     "sequence_number", "min_sequence_number", "added_snapshot_id",
                     "key_metadata", "first_row_id", *(name for _, name, _ in _COUNTS))}
    summaries = [m.partitions for m in manifests]
    flat = [s for p in summaries if p is not None for s in p]
    items = StructColumn({name: list(map(attrgetter(name), flat)) for name in (
        "contains_null", "contains_nan", "lower_bound", "upper_bound")}, len(flat))
    columns["partitions"] = ListColumn([None if p is None else len(p) for p in summaries], items)
    return StructColumn(columns, len(manifests))


def read_manifest_list(file_io: FileIO, location: str) -> list[ManifestFile]:
    """Every ``manifest_file`` of a manifest list, matched by field ID, with v1 defaults.
    Decoded by a reader compiled for the list's schema (:mod:`icepark.io.avro.compiled`,
    cached by the schema's text: a table's lists share one), or by fastavro for a schema it
    cannot compile."""
    with file_io.new_input(location).open() as stream:
        content = stream.read()
    opened = open_blocks(BytesIO(content), location)
    ids = field_names(opened.schema, location)
    missing = {500, 501, 502} - set(ids)
    if missing:
        raise CorruptFile(f"{location}: not a manifest list (no field {sorted(missing)})")
    try:
        summary = _summary_fields(opened.schema, ids, location)
    except DECODING_ERRORS as e:
        raise CorruptFile(f"Manifest list {location} has an invalid partitions field: "
                          f"{type(e).__name__}: {e}") from None
    try:
        reader = _compiled(opened.schema_text, tuple(sorted(ids.items())))
    except UnsupportedFeature:
        reader = None
    if reader is None:
        rows: Iterable[tuple[Any, ...]] = _rows_of_records(content, location, ids)
    else:
        rows = (row for block in read_blocks(reader, opened.blocks, None, location)
                for row in block)
    fallback_snapshot = opened.metadata.get("snapshot-id")
    positions = (summary.get(509, -1), summary.get(518, -1), summary.get(510, -1),
                 summary.get(511, -1))
    summaries: dict[tuple[Any, ...], tuple[FieldSummary, ...]] = {}
    out = []
    for row in rows:
        try:
            out.append(_manifest_file(row, positions, fallback_snapshot, summaries))
        except DECODING_ERRORS as e:
            raise CorruptFile(f"Manifest list {location} has an invalid entry: "
                              f"{type(e).__name__}: {e}") from None
    return out


_ROW = (500, 501, 502, 503, 517, 515, 516, 504, 505, 506, 512, 513, 514, 507, 519, 520)
"""The field IDs of a manifest list's row, in the order :func:`_manifest_file` reads them."""


@functools.lru_cache(maxsize=16)
def _compiled(schema_text: bytes, ids: tuple[tuple[int, str], ...]) -> BlockReader:
    """The reader of a manifest list's rows (:data:`_ROW`; a field the schema lacks reads as
    None; the partition summaries as lists of tuples, in the summary record's field order)."""
    names = dict(ids)
    wanted: dict[tuple[str, ...], Any] = {
        (names.get(fid, f"\0missing {fid}"),): None for fid in _ROW}
    return compile_reader(writer_schema(schema_text), wanted)


def _rows_of_records(content: bytes, location: str, ids: dict[int, str]
                     ) -> Iterator[tuple[Any, ...]]:
    """The rows :func:`_compiled` reads, decoded by fastavro from the list's ``content``."""
    reader = open_reader(BytesIO(content), location)
    fields = _summary_record_names(reader.schema, ids)

    def value(record: dict[str, Any], fid: int) -> Any:
        found = record.get(ids[fid]) if fid in ids else None
        if fid != 507 or found is None:
            return found
        return [tuple(s.get(n) for n in fields) for s in found]  # as the compiled reader

    for record in reader.records:
        yield tuple(value(record, fid) for fid in _ROW)


def _summary_record(schema: Any, ids: dict[int, str]) -> Any:
    if 507 not in ids:
        return None
    t = next(f["type"] for f in schema["fields"] if f["name"] == ids[507])
    array = next(b for b in t if b != "null") if isinstance(t, list) else t
    return array.get("items") if isinstance(array, dict) else None


def _summary_record_names(schema: Any, ids: dict[int, str]) -> list[str]:
    record = _summary_record(schema, ids)
    return [] if record is None else [f["name"] for f in record["fields"]]


def _summary_fields(schema: Any, ids: dict[int, str], location: str) -> dict[int, int]:
    """Field ID -> position of the ``field_summary`` record's fields."""
    if 507 not in ids:
        return {}
    names = field_names(_summary_record(schema, ids), location)  # not a record: CorruptFile
    order = _summary_record_names(schema, ids)
    return {fid: order.index(name) for fid, name in names.items()}


def _manifest_file(row: tuple[Any, ...], positions: tuple[int, int, int, int],
                   fallback_snapshot: str | None,
                   summaries: dict[tuple[Any, ...], tuple[FieldSummary, ...]]) -> ManifestFile:
    """A row's manifest. ``positions``: those of the summary record's fields 509, 518, 510
    and 511 (-1: absent); ``summaries``: the partition summaries made so far, by their values
    (the manifests of a list often share them: made once, shared, as they are immutable)."""
    (path, length, spec_id, snapshot_id, content, sequence_number, min_sequence_number,
     added_files, existing_files, deleted_files, added_rows, existing_rows, deleted_rows,
     partitions, key_metadata, first_row_id) = row
    if snapshot_id is None:  # v1 lists may leave it null; the list's own snapshot added it
        if fallback_snapshot is None or fallback_snapshot == "null":
            raise ValueError("added_snapshot_id is null")
        snapshot_id = int(fallback_snapshot)
    if partitions is not None:
        partitions = _shared_summaries(partitions, positions, summaries)
    if content is None:  # v1: "must default to 0"
        content = 0
    if not 0 <= content < len(_CONTENTS):
        raise ValueError(f"{content} is not a valid manifest content")
    return _MANIFEST_FILE(
        path, length, spec_id, snapshot_id, _CONTENTS[content],
        0 if sequence_number is None else sequence_number,
        0 if min_sequence_number is None else min_sequence_number,
        added_files, existing_files, deleted_files, added_rows, existing_rows, deleted_rows,
        partitions, key_metadata, first_row_id)


_CONTENTS = tuple(ManifestContent)
_MANIFEST_FILE = trusted_constructor(ManifestFile)
"""Builds a list's :class:`ManifestFile` from every field in order: it checks none of them,
so a decoded row needs no more than :func:`_manifest_file` does (see
:mod:`icepark.spec.trusted`); a frozen dataclass sets each field through
``object.__setattr__``: reading a list of 1,000 manifests took 9.8 ms with it, 7.8 without."""


def _shared_summaries(partitions: list[Any], positions: tuple[int, int, int, int],
                      made: dict[tuple[Any, ...], tuple[FieldSummary, ...]]
                      ) -> tuple[FieldSummary, ...]:
    key = tuple(partitions)
    try:
        found = made.get(key)
    except TypeError:  # values of the wrong types: made (and checked) on their own
        return _summaries(partitions, positions)
    if found is None:
        found = made[key] = _summaries(partitions, positions)
    return found


def _summaries(partitions: list[Any], positions: tuple[int, int, int, int]
               ) -> tuple[FieldSummary, ...]:
    null, nan, lower, upper = positions
    if null < 0:
        raise KeyError("partition summaries have no contains_null (field 509)")
    return tuple(FieldSummary(s[null], None if nan < 0 else s[nan],
                              None if lower < 0 else s[lower], None if upper < 0 else s[upper])
                 for s in partitions)


def snapshot_manifests(file_io: FileIO, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The manifests of a snapshot, read from storage: its manifest list, or, for a v1
    snapshot without one, its inline ``manifests`` ("A list of manifest file locations"), whose
    counts are unknown. No snapshot has no manifests; a missing file raises ``FileNotFound``
    naming it. Scans and commits, which read the same lists again, use
    :func:`icepark.io.manifest.list_cache.snapshot_manifests`, which keeps them decoded."""
    if snapshot is None:
        return []
    if snapshot.manifest_list is not None:
        return read_manifest_list(file_io, snapshot.manifest_list)
    out = []
    for location in snapshot.manifests:
        spec = read_manifest_metadata(file_io, location).spec
        out.append(ManifestFile(location, file_io.new_input(location).length(),
                                0 if spec is None else spec.spec_id, snapshot.snapshot_id))
    return out
