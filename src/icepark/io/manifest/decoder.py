"""Manifest entries from the records of a manifest's writer schema, matched by field ID.

Spec, *Manifests*: the ``manifest_entry`` and ``data_file`` fields are identified by their
field IDs ("0 status", "2 data_file", "100 file_path", ...); writers may name them differently,
and v1 files lack the v2 fields (Appendix E: "Manifest entry field ``sequence_number`` must
default to 0", "Data file field ``content`` must default to 0"). :class:`EntryDecoder` resolves
a writer schema's layout (names by field ID, the partition record in spec order, the logical
values fastavro keeps raw) and turns generic records into entries;
:mod:`icepark.io.manifest.reader` uses the same layout for its compiled decoders.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from icepark.errors import CorruptFile, ValidationError
from icepark.io.manifest.codec import METRIC_MAPS
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestEntry,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.types import UUID, PrimitiveType

DECODING_ERRORS = (KeyError, ValueError, TypeError, AttributeError, IndexError, StopIteration,
                   OverflowError)
"""What a file that is not a valid manifest or manifest list can make the decoders raise past
their checks: a schema of the wrong shape, a value of the wrong type. The readers raise them as
:class:`CorruptFile` naming the file."""


def field_names(record: Any, location: str) -> dict[int, str]:
    """Field ID -> Avro field name of a record schema (fields without an ID are skipped)."""
    if not isinstance(record, dict) or record.get("type") != "record" or not isinstance(
            record.get("fields"), list):
        raise CorruptFile(f"{location}: expected an Avro record, got {record!r:.80}")
    out = {}
    for f in record["fields"]:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise CorruptFile(f"{location}: invalid field {f!r:.80}")
        fid = f.get("field-id")
        if fid is not None:
            if not isinstance(fid, int) or isinstance(fid, bool):
                raise CorruptFile(f"{location}: field {f['name']!r:.40} has an invalid "
                                  f"field-id {fid!r:.40}")
            out[fid] = f["name"]
    return out


def _named_types(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, list):
        for s in schema:
            _named_types(s, out)
    elif isinstance(schema, dict):
        if "name" in schema and schema.get("type") in ("record", "fixed", "enum"):
            out[schema["name"]] = schema
        for f in schema.get("fields", ()):
            _named_types(f["type"], out)
        for key in ("items", "values", "type"):
            if isinstance(schema.get(key), dict | list):
                _named_types(schema[key], out)
    return out


class _Formats(dict[str, FileFormat]):
    """File format strings parsed once each. An unknown one is a ``ValueError`` (not a
    ``ValidationError``), which the readers raise as ``CorruptFile`` naming the file being
    read: a compiled reader, and this converter in it, is shared by the files of a layout."""

    def __missing__(self, text: str) -> FileFormat:
        try:
            found = self[text] = FileFormat.parse(text)
        except ValidationError as e:
            raise ValueError(str(e)) from None
        return found


class EntryDecoder:
    """Decodes fastavro records of a manifest's writer schema into entries, by field ID."""

    def __init__(self, schema: Any, spec: PartitionSpec | None, spec_id: int,
                 location: str) -> None:
        self._named = _named_types(schema, {})
        self._location, self._spec_id = location, spec_id
        top = field_names(schema, location)
        if 0 not in top or 2 not in top:
            raise CorruptFile(f"{location}: not a manifest (no status or data_file field)")
        self._status, self._data_file = top[0], top[2]
        self._snapshot_id, self._seq, self._file_seq = top.get(1), top.get(3), top.get(4)
        df_schema = self._type_of(schema, top[2])
        df = field_names(df_schema, location)
        missing = {100, 101, 102, 103, 104} - set(df)
        if missing:
            raise CorruptFile(f"{location}: data_file has no field with ID {sorted(missing)}")
        self._names = df
        self._maps = []
        for fid, name, *_ in METRIC_MAPS:
            if fid in df:
                items = self._resolve(self._type_of(df_schema, df[fid]))
                entry = self._resolve(items.get("items")) if isinstance(items, dict) else None
                if not isinstance(entry, dict) or len(entry.get("fields", ())) != 2:
                    raise CorruptFile(f"{location}: {name} is not an Iceberg map")
                kv = entry["fields"]
                self._maps.append((name, df[fid], kv[0]["name"], kv[1]["name"]))
        partition_record = self._type_of(df_schema, df[102])
        if not isinstance(partition_record, dict) or partition_record.get("type") != "record":
            raise CorruptFile(f"{location}: partition is not an Avro record")
        self._partition_record_names = [f["name"] for f in partition_record["fields"]]
        self._partition = self._partition_fields(partition_record, spec)
        self._top = top
        self._formats: dict[str, FileFormat] = _Formats()

    def _resolve(self, t: Any) -> Any:
        if isinstance(t, list):
            t = next(b for b in t if b != "null")
        if isinstance(t, str):
            t = self._named.get(t, t)
        if isinstance(t, dict) and isinstance(t.get("type"), dict | list):
            return self._resolve(t["type"])
        return t

    def _type_of(self, record: Any, name: str) -> Any:
        return self._resolve(next(f["type"] for f in record["fields"] if f["name"] == name))

    def _partition_fields(self, record: Any, spec: PartitionSpec | None
                          ) -> list[tuple[str | None, Callable[[Any], Any] | None]]:
        by_id = {f.get("field-id"): f for f in record["fields"]}
        if spec is None:
            chosen = list(record["fields"])
        else:
            chosen = [by_id.get(pf.field_id) for pf in spec.fields]
        return [(None, None) if f is None else (f["name"], self._value_decoder(f["type"]))
                for f in chosen]

    def _value_decoder(self, avro_type: Any) -> Callable[[Any], Any] | None:
        """Avro value -> Python value, for the logical types whose values fastavro keeps raw."""
        t = self._resolve(avro_type)
        logical = t.get("logicalType") if isinstance(t, dict) else None
        if logical == "decimal":
            decimal = PrimitiveType.decimal(t["precision"], t.get("scale", 0))
            return lambda v: from_bytes(decimal, v)
        if logical == "uuid":
            return _uuid
        return None

    @property
    def top_names(self) -> dict[int, str]:
        """Field ID -> name of the ``manifest_entry`` fields."""
        return dict(self._top)

    @property
    def data_file_names(self) -> dict[int, str]:
        """Field ID -> name of the ``data_file`` fields."""
        return dict(self._names)

    def partition_converter(self) -> Callable[[tuple[Any, ...]], tuple[Any, ...]] | None:
        """Partition record (a tuple of its Avro fields, in order) -> partition tuple in spec
        order, with logical values decoded (None: the tuple as it is)."""
        order = self._partition_record_names
        index = {name: i for i, name in enumerate(order)}
        picks = [(None if name is None else index.get(name), convert)
                 for name, convert in self._partition]
        if [i for i, _ in picks] == list(range(len(order))) and all(
                c is None for _, c in picks):
            return None

        def convert(values: tuple[Any, ...]) -> tuple[Any, ...]:
            out = []
            try:
                for i, conv in picks:
                    v = None if i is None else values[i]
                    out.append(v if v is None or conv is None else conv(v))
            except ValidationError as e:  # a value its type cannot have
                raise CorruptFile(f"{self._location} has a partition value its type cannot "
                                  f"have: {e}") from None
            return tuple(out)

        return convert

    @property
    def file_format(self) -> Callable[[str], FileFormat]:
        """The file format of a ``file_format`` string (parsed once per distinct string)."""
        return self._formats.__getitem__

    def decode(self, record: dict[str, Any]) -> ManifestEntry:
        d = record[self._data_file]
        n = self._names
        values = d[n[102]]
        partition = []
        for name, convert in self._partition:
            v = None if name is None else values.get(name)
            partition.append(v if v is None or convert is None else convert(v))
        maps: dict[str, Any] = {
            name: None if (kv := d.get(field)) is None else {e[k]: e[v] for e in kv}
            for name, field, k, v in self._maps}
        split_offsets = d.get(n[132]) if 132 in n else None
        equality_ids = d.get(n[135]) if 135 in n else None
        data_file = DataFile(
            file_path=d[n[100]], file_format=self._formats[d[n[101]]], partition=tuple(partition),
            record_count=d[n[103]], file_size_in_bytes=d[n[104]],
            content=FileContent(d[n[134]]) if 134 in n else FileContent.DATA,
            spec_id=self._spec_id,
            key_metadata=d.get(n[131]) if 131 in n else None,
            split_offsets=None if split_offsets is None else tuple(split_offsets),
            equality_ids=None if equality_ids is None else tuple(equality_ids),
            sort_order_id=d.get(n[140]) if 140 in n else None,
            referenced_data_file=d.get(n[143]) if 143 in n else None,
            first_row_id=d.get(n[142]) if 142 in n else None,
            content_offset=d.get(n[144]) if 144 in n else None,
            content_size_in_bytes=d.get(n[145]) if 145 in n else None,
            **maps)
        seq: int | None
        file_seq: int | None
        if self._seq is None:  # v1: "sequence_number must default to 0", file too
            seq, file_seq = 0, 0
        else:
            seq = record.get(self._seq)
            file_seq = record.get(self._file_seq) if self._file_seq else None
        snapshot_id = record.get(self._snapshot_id) if self._snapshot_id else None
        return ManifestEntry(EntryStatus(record[self._status]), data_file, snapshot_id, seq,
                             file_seq)


def _uuid(value: Any) -> Any:
    return uuid.UUID(value) if isinstance(value, str) else from_bytes(UUID, value)
