"""Manifests: writing and reading the Avro files that list data or delete files.

Spec, *Manifests*: "A manifest is an immutable Avro file that lists data files or delete files,
along with each file's partition data tuple, metrics, and tracking information." Its records are
``manifest_entry`` structs holding a ``data_file`` struct, whose ``partition`` struct is "based
on the partition spec output using partition field ids for the struct field ids"; and "A
manifest file must store the partition spec and other metadata as properties in the Avro file's
key-value metadata" (``schema``, ``schema-id``, ``partition-spec``, ``partition-spec-id``,
``format-version`` and, from v2, ``content``).

:class:`ManifestWriter` buffers entries and encodes them a block at a time, column by column
(:mod:`icepark.io.avro.encoder`); :func:`read_manifest` streams entries back with fastavro,
matching fields by field ID, so manifests of any writer (and any field names) are read.

>>> import tempfile
>>> from icepark.io.fileio import ArrowFileIO
>>> from icepark.spec.manifest import DataFile, FileFormat
>>> from icepark.spec.partitioning import UNPARTITIONED
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> io, path = ArrowFileIO(), tempfile.mkdtemp() + "/m0.avro"
>>> schema = Schema.of(NestedField.required(1, "id", LONG))
>>> with ManifestWriter(io, path, UNPARTITIONED, schema, 2, snapshot_id=7) as writer:
...     writer.add_file(DataFile("/t/data/a.parquet", FileFormat.PARQUET, (), 10, 1024))
>>> manifest = writer.to_manifest_file()
>>> manifest.added_files_count, manifest.added_rows_count, manifest.sequence_number
(1, 10, -1)
>>> from dataclasses import replace
>>> [(e.status.name, e.sequence_number, e.data_file.record_count)
...  for e in read_manifest(io, replace(manifest, sequence_number=3))]
[('ADDED', 3, 10)]
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from io import BytesIO
from types import TracebackType
from typing import Any

from icepark.errors import CorruptFile, IcebergError, UnsupportedFeature, ValidationError
from icepark.io.avro.compiled import BlockReader
from icepark.io.avro.reader import coalesced, open_blocks, open_reader
from icepark.io.avro.schema import to_avro
from icepark.io.avro.writer import CODEC_PROPERTY, LEVEL_PROPERTY, AvroWriter, avro_codec
from icepark.io.fileio import FileIO
from icepark.io.manifest import codec
from icepark.io.manifest.cache import ManifestCache, estimate_bytes
from icepark.io.manifest.decoder import DECODING_ERRORS, EntryDecoder
from icepark.io.manifest.reader import (
    ALL_STATS,
    METRIC_FIELDS,
    FileMetrics,
    PartitionFilter,
    Stats,
    compiled_entries,
    compiled_entry_blocks,
)
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    RowIdAssigner,
    inherit,
)
from icepark.spec.metadata import FormatVersion
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.serde.specs_json import partition_fields_from_json, partition_fields_to_json
from icepark.spec.serde.types_json import schema_from_json, schema_to_json

UNASSIGNED_SEQUENCE_NUMBER = -1
"""A sequence number (or snapshot ID) not known when the manifest was written: "the snapshot's
sequence number is not assigned until the snapshot is successfully committed". The manifest
list writer replaces it with the snapshot's."""

BLOCK_ROWS = 4096  # entries encoded together; a manifest is written in blocks of about 1 MiB
_CONTENT_NAMES = {ManifestContent.DATA: "data", ManifestContent.DELETES: "deletes"}


class ManifestWriter:
    """Writes one manifest; use as a context manager, then call :meth:`to_manifest_file`.

    ``snapshot_id`` is the snapshot the manifest is written for: new and deleted entries without
    a snapshot ID get it (v1 requires one on every entry). Without it, the manifest's
    ``added_snapshot_id`` is left unassigned for the manifest list writer to fill in.
    ``properties`` are table properties: ``write.avro.compression-codec`` (``gzip``, the
    default, ``zstd`` or ``uncompressed``) and ``write.avro.compression-level``.
    """

    def __init__(  # noqa: PLR0917 - the agreed positional API
            self, file_io: FileIO, location: str, spec: PartitionSpec, schema: Schema,
            format_version: FormatVersion, content: ManifestContent = ManifestContent.DATA,
            snapshot_id: int | None = None, *,
            properties: Mapping[str, str] | None = None) -> None:
        if format_version == 1 and content is not ManifestContent.DATA:
            raise ValidationError("Delete manifests need format version 2 or later: v1 "
                                  "manifests hold data files only")
        props = properties or {}
        self._io, self.location, self.spec, self.schema = file_io, location, spec, schema
        self.format_version, self.content, self.snapshot_id = format_version, content, snapshot_id
        self._partition_type = spec.partition_type(schema)
        self._distinct_counts = False  # decided by the first block
        self._codec = avro_codec(props.get(CODEC_PROPERTY))
        level = props.get(LEVEL_PROPERTY)
        self._level = int(level) if level else None
        self._buffer = codec.EntryBuffer()
        self._stats = codec.ManifestStats(self._partition_type)
        self._stream: Any = None
        self._writer: AvroWriter | None = None
        self._length: int | None = None

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close()
        else:
            self.abort()

    def _check_open(self) -> None:
        if self._length is not None:
            raise ValidationError(f"Manifest {self.location} is already closed")

    def add(self, entry: ManifestEntry) -> None:
        """Write an entry as it is (a null snapshot ID becomes the writer's)."""
        self._check_open()
        self._buffer.append(entry.status, entry.data_file, entry.snapshot_id,
                            entry.sequence_number, entry.file_sequence_number)
        if len(self._buffer) >= BLOCK_ROWS:
            self._flush()

    def add_file(self, data_file: DataFile, sequence_number: int | None = None) -> None:
        """A new file (status ADDED). Its sequence numbers are inherited at commit unless the
        data "logically belongs to an older sequence number" (``sequence_number``)."""
        if self._length is not None:
            self._check_open()
        buffer = self._buffer  # EntryBuffer.append, inlined: this runs once per data file
        buffer.status.append(EntryStatus.ADDED)
        buffer.files.append(data_file)
        buffer.snapshot_ids.append(self.snapshot_id)
        buffer.seqs.append(sequence_number)
        buffer.file_seqs.append(None)
        if len(buffer.files) >= BLOCK_ROWS:
            self._flush()

    def add_files(self, data_files: Iterable[DataFile]) -> None:
        """Many new files (see :meth:`add_file`)."""
        for data_file in data_files:
            self.add_file(data_file)

    def existing(self, entry: ManifestEntry) -> None:
        """A live file carried over from another manifest, with its original snapshot ID and
        sequence numbers ("must be non-null and set to the original values")."""
        self.add(ManifestEntry(EntryStatus.EXISTING, entry.data_file, entry.snapshot_id,
                               entry.sequence_number, entry.file_sequence_number))

    def delete(self, entry: ManifestEntry) -> None:
        """Mark a file deleted in this writer's snapshot, keeping its sequence numbers."""
        self.add(ManifestEntry(EntryStatus.DELETED, entry.data_file, self.snapshot_id,
                               entry.sequence_number, entry.file_sequence_number))

    def _key_value_metadata(self) -> dict[str, str]:
        meta = {
            "schema": json.dumps(schema_to_json(self.schema), separators=(",", ":")),
            "schema-id": str(self.schema.schema_id),
            "partition-spec": json.dumps(partition_fields_to_json(self.spec.fields),
                                         separators=(",", ":")),
            "partition-spec-id": str(self.spec.spec_id),
            "format-version": str(self.format_version),
        }
        if self.format_version >= 2:
            meta["content"] = _CONTENT_NAMES[self.content]
        return meta

    def _flush(self) -> None:
        chunk, self._buffer = self._buffer, codec.EntryBuffer()
        if not len(chunk) and self._writer is not None:
            return
        if self._writer is None:
            self._distinct_counts = chunk.has_distinct_counts()
        rows = codec.entry_columns(chunk, self._partition_type, self.format_version,
                                   self.content, self.snapshot_id,
                                   distinct_counts=self._distinct_counts)
        self._stats.update(rows)
        if self._writer is None:
            avro_schema = to_avro(codec.manifest_entry_type(
                self._partition_type, self.format_version, self._distinct_counts),
                "manifest_entry")
            self._stream = self._io.new_output(self.location).create()
            self._writer = AvroWriter(self._stream, avro_schema,
                                      self._key_value_metadata(), codec=self._codec,
                                      level=self._level)
        self._writer.write_rows(rows.entries)

    def close(self) -> None:
        """Write the remaining entries and close the file (an empty manifest is allowed)."""
        if self._length is not None:
            return
        try:
            self._flush()
            assert self._writer is not None
            self._writer.close()
            self._stream.close()
        except BaseException:
            self.abort()
            raise
        self._length = self._writer.bytes_written

    def abort(self) -> None:
        """Stop writing and delete what was written (best effort)."""
        if self._length is not None:
            return
        self._length = -1
        with contextlib.suppress(Exception):  # cleaning up after a failure
            if self._writer is not None:
                self._writer.close()
        if self._stream is not None:
            try:
                self._stream.close()
            finally:
                self._io.delete(self.location)

    def to_manifest_file(self) -> ManifestFile:
        """The manifest list entry of the closed manifest.

        ``sequence_number`` is unassigned, and so is ``min_sequence_number`` ("the minimum
        data sequence number of all live data or delete files in the manifest") when every live
        file inherits its sequence number; v1 manifests use 0 for both.
        """
        if self._length is None or self._length < 0:
            raise ValidationError(f"Manifest {self.location} is not closed (or was aborted)")
        s = self._stats
        v1 = self.format_version == 1
        min_seq = s.min_sequence_number
        return ManifestFile(
            manifest_path=self.location,
            manifest_length=self._length,
            partition_spec_id=self.spec.spec_id,
            added_snapshot_id=(UNASSIGNED_SEQUENCE_NUMBER if self.snapshot_id is None
                               else self.snapshot_id),
            content=self.content,
            sequence_number=0 if v1 else UNASSIGNED_SEQUENCE_NUMBER,
            min_sequence_number=0 if v1 else (
                UNASSIGNED_SEQUENCE_NUMBER if min_seq is None else min_seq),
            added_files_count=s.files[EntryStatus.ADDED],
            existing_files_count=s.files[EntryStatus.EXISTING],
            deleted_files_count=s.files[EntryStatus.DELETED],
            added_rows_count=s.rows[EntryStatus.ADDED],
            existing_rows_count=s.rows[EntryStatus.EXISTING],
            deleted_rows_count=s.rows[EntryStatus.DELETED],
            partitions=s.summaries(),
        )


@dataclass(frozen=True, slots=True)
class ManifestMetadata:
    """A manifest's key-value metadata. ``schema`` and ``spec`` are None when absent."""

    format_version: int
    content: ManifestContent
    schema: Schema | None
    spec: PartitionSpec | None


def _parse_metadata(meta: Mapping[str, str], location: str) -> ManifestMetadata:
    try:
        return _parse_fields(meta.get("format-version", "1"), meta.get("content", "data"),
                             meta.get("schema"), meta.get("partition-spec"),
                             meta.get("partition-spec-id", "0"))
    except (KeyError, ValueError, IcebergError) as e:
        raise CorruptFile(f"Invalid key-value metadata in manifest {location}: {e}") from None


@functools.lru_cache(maxsize=64)
def _parse_fields(version_text: str, content_name: str, schema_json: str | None,
                  spec_json: str | None, spec_id_text: str) -> ManifestMetadata:
    """Parsed once per distinct metadata: the manifests of a table repeat theirs, and parsing
    a schema costs about as much as decoding a few hundred entries."""
    version = int(version_text)
    content = {v: k for k, v in _CONTENT_NAMES.items()}[content_name]
    schema = schema_from_json(json.loads(schema_json)) if schema_json is not None else None
    spec = None
    if spec_json is not None:
        spec = PartitionSpec(int(spec_id_text), partition_fields_from_json(
            json.loads(spec_json), "Its partition spec"))
    return ManifestMetadata(version, content, schema, spec)


def read_manifest_metadata(file_io: FileIO, location: str) -> ManifestMetadata:
    """The format version, content, schema and partition spec a manifest was written with."""
    with file_io.new_input(location).open() as stream:
        return _parse_metadata(open_reader(stream, location).metadata, location)


_Filters = tuple[PartitionFilter | None,
                 Callable[[FileMetrics], bool | None] | None]


def read_manifest(file_io: FileIO, manifest: ManifestFile, *,
                  specs_by_id: Mapping[int, PartitionSpec] | None = None,
                  discard_deleted: bool = False, stats: Stats = ALL_STATS,
                  partition_filter: PartitionFilter | None = None,
                  metrics_filter: Callable[[FileMetrics], bool | None] | None = None,
                  row_ids: bool = True) -> Iterator[ManifestEntry]:
    """Stream the entries of a manifest, with inherited snapshot IDs and sequence numbers.

    Partition tuples follow the manifest's own partition spec (its key-value metadata), else
    ``specs_by_id[manifest.partition_spec_id]``, else the order of the Avro partition record.
    v1 manifests read per Appendix E: "Manifest entry field ``sequence_number`` must default to
    0", ``file_sequence_number`` too, and "Data file field ``content`` must default to 0".
    ``stats`` chooses the metric maps decoded (all by default; the others are None),
    ``partition_filter`` leaves out, undecoded, the entries whose partition tuple it rejects,
    and ``metrics_filter`` those whose file's (decoded) metrics it rejects. Data files of a v3
    manifest inherit their ``first_row_id`` (*First Row ID Inheritance*) unless ``row_ids`` is
    False, when they keep what they store: inheritance counts the rows of every file before
    one, so with ``row_ids`` the filters decode every entry before leaving some out.
    A missing file raises ``FileNotFound`` now; a corrupt or truncated one ``CorruptFile``
    while iterating, as does a manifest with fewer entries than its list entry counts.
    """
    return itertools.chain.from_iterable(read_manifest_blocks(
        file_io, manifest, specs_by_id=specs_by_id, discard_deleted=discard_deleted,
        stats=stats, partition_filter=partition_filter, metrics_filter=metrics_filter,
        row_ids=row_ids))


def read_manifest_blocks(file_io: FileIO, manifest: ManifestFile, *,
                         specs_by_id: Mapping[int, PartitionSpec] | None = None,
                         discard_deleted: bool = False, stats: Stats = ALL_STATS,
                         partition_filter: PartitionFilter | None = None,
                         metrics_filter: Callable[[FileMetrics], bool | None] | None = None,
                         row_ids: bool = True, cache: ManifestCache | None = None
                         ) -> Iterator[list[ManifestEntry]]:
    """:func:`read_manifest`'s entries a list at a time (those of one Avro block, or up to
    1,000): for planners, which go through every entry of every manifest. With ``cache``, the
    manifest's decoded entries are taken from it, or decoded and kept there
    (:mod:`icepark.io.manifest.cache`); the lists must not be changed."""
    return _cached_blocks(cache, file_io, manifest, specs_by_id, discard_deleted, stats,
                          (partition_filter, metrics_filter), files_only=False,
                          row_ids=row_ids)


def read_manifest_files(file_io: FileIO, manifest: ManifestFile, *,
                        specs_by_id: Mapping[int, PartitionSpec] | None = None,
                        stats: Stats = ALL_STATS,
                        partition_filter: PartitionFilter | None = None,
                        metrics_filter: Callable[[FileMetrics], bool | None] | None = None,
                        row_ids: bool = True, cache: ManifestCache | None = None
                        ) -> Iterator[list[DataFile]]:
    """The data files of the live entries of :func:`read_manifest_blocks`, without the
    entries: for planners that need no snapshot IDs or sequence numbers (no delete files
    apply), which then are not decoded. ``cache`` as for :func:`read_manifest_blocks`."""
    return _cached_blocks(cache, file_io, manifest, specs_by_id, True, stats,
                          (partition_filter, metrics_filter), files_only=True, row_ids=row_ids)


def _cached_blocks(cache: ManifestCache | None,  # noqa: PLR0917 - two callers
                   file_io: FileIO, manifest: ManifestFile,
                   specs_by_id: Mapping[int, PartitionSpec] | None, discard_deleted: bool,
                   stats: Stats, filters: _Filters, *, files_only: bool,
                   row_ids: bool) -> Iterator[list[Any]]:
    """:func:`_blocks` through ``cache``: what it holds for the manifest decoded this way, or
    the manifest decoded without filters and kept; the filters are applied to the result."""
    if cache is None:
        return _blocks(file_io, manifest, specs_by_id, discard_deleted, stats, filters,
                       files_only=files_only, row_ids=row_ids)
    row_ids = row_ids and manifest.first_row_id is not None
    key = (manifest.manifest_path, manifest.manifest_length, manifest.partition_spec_id,
           (specs_by_id or {}).get(manifest.partition_spec_id), manifest.added_snapshot_id,
           manifest.sequence_number, manifest.first_row_id if row_ids else None, stats,
           discard_deleted, files_only, row_ids)
    blocks = cache.get(key)
    if blocks is None:
        blocks = list(_blocks(file_io, manifest, specs_by_id, discard_deleted, stats,
                              (None, None), files_only=files_only, row_ids=row_ids))
        cache.put(key, blocks, estimate_bytes(blocks))
    if filters == (None, None):
        return iter(blocks)
    return _filtered(iter(blocks), filters, files_only)


def _blocks(file_io: FileIO, manifest: ManifestFile,  # noqa: PLR0917 - two callers
            specs_by_id: Mapping[int, PartitionSpec] | None, discard_deleted: bool,
            stats: Stats, filters: _Filters, *, files_only: bool,
            row_ids: bool) -> Iterator[list[Any]]:
    row_ids = row_ids and manifest.first_row_id is not None
    if row_ids and filters != (None, None):  # every entry counts: filter once decoded
        return _filtered(_blocks(file_io, manifest, specs_by_id, discard_deleted, stats,
                                 (None, None), files_only=files_only, row_ids=True),
                         filters, files_only)
    location = manifest.manifest_path
    # read whole (as its blocks are anyway): parsed from memory, the header's many small
    # reads do not each release and take back the GIL, waiting on threads reading ahead
    stream = BytesIO(file_io.new_input(location).read())
    try:
        opened = open_blocks(stream, location)
        meta = _parse_metadata(opened.metadata, location)
        spec = meta.spec or (specs_by_id or {}).get(manifest.partition_spec_id)
        try:
            compiled = compiled_entries(opened.schema, spec, manifest.partition_spec_id, stats,
                                        gated=filters[0] is not None, location=location,
                                        checked=filters[1] is not None, files_only=files_only,
                                        schema_text=opened.schema_text)
        except UnsupportedFeature:
            compiled = None
        except DECODING_ERRORS as e:
            raise _invalid_schema(location, e) from e
    except BaseException:
        stream.close()
        raise
    if compiled is None:  # a schema the compiled reader does not handle: fastavro decodes it
        stream.close()
        generic = _generic_entries(file_io, manifest, spec, discard_deleted, stats, filters,
                                   row_ids)
        if files_only:
            return iter(lambda: [e.data_file for e in itertools.islice(
                generic, _GENERIC_BATCH)], [])
        return iter(lambda: list(itertools.islice(generic, _GENERIC_BATCH)), [])
    return _entries(stream, compiled, coalesced(opened.blocks), manifest, discard_deleted,
                    filters, row_ids)


def _filtered(blocks: Iterator[list[Any]], filters: _Filters,
              files_only: bool) -> Iterator[list[Any]]:
    """The entries (or files) of ``blocks`` that the partition and metrics filters keep."""
    partition_filter, metrics_filter = filters
    for block in blocks:
        files = block if files_only else [e.data_file for e in block]
        yield [item for item, f in zip(block, files, strict=True)
               if (partition_filter is None or partition_filter(f.partition))
               and (metrics_filter is None or not metrics_filter(f))]


_GENERIC_BATCH = 1000


def _invalid_schema(location: str, e: Exception) -> CorruptFile:
    return CorruptFile(f"Manifest {location} has an invalid schema: {type(e).__name__}: {e}")


def _entries(stream: Any, compiled: BlockReader,  # noqa: PLR0917 - one caller
             blocks: Iterator[tuple[int, bytes]], manifest: ManifestFile,
             discard_deleted: bool, filters: _Filters, row_ids: bool) -> Iterator[list[Any]]:
    counter = [0]
    try:
        rows = compiled_entry_blocks(compiled, blocks, manifest, filters[0],
                                     manifest.manifest_path, counter, filters[1],
                                     discard_deleted=discard_deleted, row_ids=row_ids)
        try:
            yield from rows
        except IcebergError:  # from a filter, or already naming the file
            raise
        except DECODING_ERRORS as e:
            raise CorruptFile(f"Manifest {manifest.manifest_path} has an invalid entry: "
                              f"{type(e).__name__}: {e}") from None
    finally:
        stream.close()
    _check_count(manifest, counter[0])


def _generic_entries(file_io: FileIO,  # noqa: PLR0917 - one caller
                     manifest: ManifestFile, spec: PartitionSpec | None,
                     discard_deleted: bool, stats: Stats, filters: _Filters, row_ids: bool
                     ) -> Iterator[ManifestEntry]:
    partition_filter, metrics_filter = filters
    location = manifest.manifest_path
    stream = file_io.new_input(location).open()
    try:
        reader = open_reader(stream, location)
        try:
            decoder = EntryDecoder(reader.schema, spec, manifest.partition_spec_id, location)
        except DECODING_ERRORS as e:
            raise _invalid_schema(location, e) from e
    except BaseException:
        stream.close()
        raise
    dropped = {name: None for fid, name in METRIC_FIELDS.items() if fid not in stats.maps}
    read = 0
    assigner = RowIdAssigner(manifest.first_row_id if row_ids else None)
    try:
        for record in reader.records:
            try:
                entry = assigner.assign(inherit(decoder.decode(record), manifest))
            except DECODING_ERRORS as e:
                raise CorruptFile(f"Manifest {manifest.manifest_path} has an invalid entry: "
                                  f"{type(e).__name__}: {e}") from None
            read += 1
            if discard_deleted and entry.status is EntryStatus.DELETED:
                continue
            f = entry.data_file
            if partition_filter is not None and not partition_filter(f.partition):
                continue
            if dropped or stats.columns is not None:
                f = _restrict(f, dropped, stats.columns)
            if metrics_filter is not None and metrics_filter(f):
                continue
            yield entry if f is entry.data_file else replace(entry, data_file=f)
    finally:
        stream.close()
    _check_count(manifest, read)


def _restrict(f: DataFile, dropped: Mapping[str, None], columns: frozenset[int] | None
              ) -> DataFile:
    kept: dict[str, Any] = dict(dropped)
    if columns is not None:
        for name in METRIC_FIELDS.values():
            values = getattr(f, name)
            if name not in dropped and values is not None:
                kept[name] = {k: v for k, v in values.items() if k in columns}
    return replace(f, **kept)


def _check_count(manifest: ManifestFile, read: int) -> None:
    counts = (manifest.added_files_count, manifest.existing_files_count,
              manifest.deleted_files_count)
    if None not in counts and read != sum(c or 0 for c in counts):
        raise CorruptFile(f"Manifest {manifest.manifest_path} has {read} entries but its "
                          f"manifest list entry counts {sum(c or 0 for c in counts)}: the file "
                          "is truncated or the manifest list is wrong")

