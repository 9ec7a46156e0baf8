"""Table metadata JSON: every key and every v1/v2/v3 difference of the metadata file.

Reading follows the *Table Metadata Fields* table, Appendix C and Appendix E. Readers "should
be more permissive" for v1 files, but "may be more strict for metadata JSON files because the
JSON files are not reused and will always match the table version. Required v2 fields that were
not present in v1 or optional in v1 may be handled as required fields": a v2 or v3 file missing
one of them is rejected, naming the key.

Reading v1 (where the spec is silent, as the reference implementations do):

* ``schemas`` + ``current-schema-id`` are preferred over ``schema``; ``schemas`` without
  ``current-schema-id`` takes the one with the same columns as ``schema`` (neither: "no valid
  schema"). ``partition-specs`` is preferred over ``partition-spec`` (a bare field list read as
  spec 0, field IDs assigned from 1000 when missing); without ``default-spec-id`` the largest
  spec ID is the default; without ``last-partition-id``, the highest partition field ID (999
  when none). Without ``sort-orders`` the table is unsorted (order 0).
* "``last-sequence-number`` must default to 0" and "Snapshot field ``sequence-number`` must
  default to 0": v1 has no sequence numbers, so values a v1 writer wrote anyway are ignored.
* ``refs`` missing: only the ``main`` branch at ``current-snapshot-id`` ("There is always a
  ``main`` branch reference pointing to the ``current-snapshot-id`` even if the ``refs`` map is
  null"); the same ``main`` is added when ``refs`` is given without it.

Writing follows the *Writer requirements*: a *required* field "must be written", a blank one
"should be omitted", an *optional* one "can be written".

* v1 writes the deprecated ``schema`` and ``partition-spec`` (required in v1) and also the
  optional ``schemas``/``current-schema-id``, ``partition-specs``/``default-spec-id``,
  ``last-partition-id`` and ``sort-orders``/``default-sort-order-id``, so an evolved v1 table
  loses nothing. It writes no ``last-sequence-number`` and no snapshot ``sequence-number``
  ("should not be written"). (pyiceberg cannot read a v1 file without ``schema``.) ``refs``
  is blank in the v1 column, but it is written when the table has a reference other than the
  implied ``main`` branch (or ``main`` carries retention settings): dropping branches and tags
  would lose data, and every reader accepts the key.
* v2 and v3 write every required field and omit ``schema`` and ``partition-spec`` ("no longer
  required and should be omitted").
* ``current-snapshot-id`` is written as ``-1`` for a table without a current snapshot, in every
  version, as the reference implementation writes it (it once switched to ``null`` and reverted
  to -1). The Java, Rust and Python readers all read -1 as "no current snapshot"; we read -1,
  ``null`` and a missing key alike.
* ``next-row-id`` (v3 row lineage) is read and written for v3 only; ``statistics`` and
  ``partition-statistics`` are written when non-empty.
* ``encryption-keys`` (and a snapshot ``key-id``) raise :class:`UnsupportedFeature` instead of
  being silently dropped. Other unknown keys are ignored.

>>> md = table_metadata_from_json('''{"format-version": 1, "location": "s3://b/t",
...   "last-updated-ms": 1602638573874, "last-column-id": 1,
...   "schema": {"type": "struct", "fields": [
...       {"id": 1, "name": "x", "required": true, "type": "long"}]},
...   "partition-spec": [{"name": "x", "transform": "identity", "source-id": 1}]}''')
>>> md.spec().fields[0].field_id, md.last_partition_id, md.current_snapshot_id
(1000, 1000, None)
>>> d = table_metadata_to_dict(md)
>>> "last-sequence-number" in d, d["current-snapshot-id"], table_metadata_from_json(d) == md
(False, -1, True)
"""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from collections.abc import Mapping
from typing import Any

from icepark.errors import CorruptFile, UnsupportedFeature, ValidationError
from icepark.spec.metadata import (
    MAX_FORMAT_VERSION,
    SUPPORTED_FORMAT_VERSIONS,
    FormatVersion,
    TableMetadata,
)
from icepark.spec.metadata_rules import check_metadata
from icepark.spec.partitioning import PARTITION_FIELD_ID_START, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.serde._json import (
    JsonObject,
    get_int,
    get_list,
    get_str,
    missing,
    opt_int,
    opt_list,
    opt_str,
    show,
    string_map,
)
from icepark.spec.serde.snapshots_json import (
    metadata_log_from_json,
    metadata_log_to_json,
    partition_statistics_file_from_json,
    partition_statistics_file_to_json,
    ref_from_json,
    ref_to_json,
    snapshot_from_json,
    snapshot_log_from_json,
    snapshot_log_to_json,
    snapshot_to_json,
    statistics_file_from_json,
    statistics_file_to_json,
)
from icepark.spec.serde.specs_json import (
    partition_fields_from_json,
    partition_fields_to_json,
    partition_spec_from_json,
    partition_spec_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from icepark.spec.serde.types_json import schema_from_json, schema_to_json
from icepark.spec.snapshots import MAIN_BRANCH, SnapshotRef
from icepark.spec.sorting import UNSORTED, SortOrder

_WHAT = "Table metadata"
_NO_SNAPSHOT = -1

# ------------------------------------------------------------------------------------ reading


def table_metadata_from_json(data: str | bytes | bytearray | Mapping[str, Any],
                             location: str | None = None) -> TableMetadata:
    """Decode a metadata file (its text, its bytes, gzip-compressed or not, or the decoded
    JSON object) and check the rules of :mod:`icepark.spec.metadata_rules`.

    Bytes that do not decode (gzip, UTF-8, JSON) raise :class:`CorruptFile`; a JSON value
    that breaks the spec :class:`ValidationError` (or :class:`UnsupportedFeature`); both name
    the file when ``location`` is given. Nothing else escapes, whatever the input.

    >>> table_metadata_from_json('{"format-version": 4}')
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Unsupported format version 4: icepark supports format \
versions 1 to 3
    >>> table_metadata_from_json("{", "/wh/t/metadata/v3.metadata.json")
    Traceback (most recent call last):
    ...
    icepark.errors.CorruptFile: Table metadata file /wh/t/metadata/v3.metadata.json is not \
valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
    """
    what = _WHAT if location is None else f"{_WHAT} file {location}"
    try:
        md = _decode(_load(data, what))
        check_metadata(md, what)
    except RecursionError:
        raise CorruptFile(f"{what} is nested too deeply to be table metadata") from None
    except (ValidationError, UnsupportedFeature) as e:
        if location is None or location in e.problem or type(e) not in _RENAMED:
            raise
        problem = (what + e.problem[len(_WHAT):] if e.problem.startswith(_WHAT)
                   else f"{what}: {e.problem}")
        raise type(e)(problem, remedy=e.remedy) from e
    return md


_RENAMED = (ValidationError, UnsupportedFeature)


def _decode(obj: JsonObject) -> TableMetadata:
    version = _format_version(obj)
    if obj.get("encryption-keys"):  # an empty list holds nothing to lose
        raise UnsupportedFeature(
            "Table metadata has 'encryption-keys': table encryption (encryption-keys) is not "
            "supported by icepark")
    what = f"{_WHAT} v{version}"
    if version == 1:
        table_uuid = _uuid(opt_str(obj, "table-uuid", what))
        schemas, current_schema_id = _v1_schemas(obj, what)
        specs, default_spec_id, last_partition_id = _v1_specs(obj, what)
        sort_orders, default_sort_order_id = _v1_sort_orders(obj, what)
        last_sequence_number = 0  # "must default to 0"; v1 has no sequence numbers
    else:
        table_uuid = _uuid(get_str(obj, "table-uuid", what))
        last_sequence_number = get_int(obj, "last-sequence-number", what)
        schemas = _schemas(obj, what)
        current_schema_id = _current_schema_id(obj, schemas, what)
        specs = _specs(obj, what)
        default_spec_id = get_int(obj, "default-spec-id", what)
        last_partition_id = get_int(obj, "last-partition-id", what)
        sort_orders = _sort_orders(obj, what)
        default_sort_order_id = get_int(obj, "default-sort-order-id", what)
    current_snapshot_id = opt_int(obj, "current-snapshot-id", what)
    if current_snapshot_id == _NO_SNAPSHOT:
        current_snapshot_id = None
    refs_obj = obj.get("refs")
    if refs_obj is not None and not isinstance(refs_obj, Mapping):
        raise ValidationError(f"{what}: 'refs' must be a JSON object, not {show(refs_obj)}")
    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid,
        location=get_str(obj, "location", what),
        last_sequence_number=last_sequence_number,
        last_updated_ms=get_int(obj, "last-updated-ms", what),
        last_column_id=get_int(obj, "last-column-id", what),
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        properties=string_map(obj, "properties", what),
        current_snapshot_id=current_snapshot_id,
        snapshots=tuple(snapshot_from_json(s, version)
                        for s in opt_list(obj, "snapshots", what)),
        snapshot_log=tuple(map(snapshot_log_from_json, opt_list(obj, "snapshot-log", what))),
        metadata_log=tuple(map(metadata_log_from_json, opt_list(obj, "metadata-log", what))),
        sort_orders=sort_orders,
        default_sort_order_id=default_sort_order_id,
        # "refs" missing: "There is always a main branch reference pointing to the
        # current-snapshot-id even if the refs map is null"; TableMetadata adds it.
        refs={name: ref_from_json(ref, name) for name, ref in (refs_obj or {}).items()},
        statistics=tuple(map(statistics_file_from_json, opt_list(obj, "statistics", what))),
        partition_statistics=tuple(map(partition_statistics_file_from_json,
                                       opt_list(obj, "partition-statistics", what))),
        next_row_id=opt_int(obj, "next-row-id", what) if version >= 3 else None,
    )


def _load(data: str | bytes | bytearray | Mapping[str, Any], what: str) -> JsonObject:
    """The JSON object of a metadata file; gzip-compressed files (``.gz.metadata.json``) are
    recognized by their magic bytes."""
    if isinstance(data, Mapping):
        return data
    if not isinstance(data, str | bytes | bytearray):
        raise ValidationError(f"{what} must be JSON text or an object, not {type(data).__name__}")
    if isinstance(data, bytes | bytearray) and data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise CorruptFile(f"{what} is not a valid gzip file: {e}") from None
    try:
        obj = json.loads(data)
    except UnicodeDecodeError as e:
        raise CorruptFile(f"{what} is not UTF-8 text: {e}") from None
    except ValueError as e:  # JSONDecodeError, or a number too long to convert
        raise CorruptFile(f"{what} is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ValidationError(f"{what} must be a JSON object, not {show(obj)}")
    return obj


_GZIP_MAGIC = b"\x1f\x8b"


def _format_version(obj: JsonObject) -> FormatVersion:
    """Spec: "Implementations must throw an exception if a table's version is higher than the
    supported version"."""
    version = get_int(obj, "format-version", _WHAT)
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise ValidationError(
            f"Unsupported format version {version}: icepark supports format versions 1 to "
            f"{MAX_FORMAT_VERSION}")
    return version


def _uuid(text: str | None) -> uuid.UUID | None:
    if text is None:
        return None
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ValidationError(f"{_WHAT}: 'table-uuid' is not a UUID: {text!r}") from None


def _schemas(obj: JsonObject, what: str) -> tuple[Schema, ...]:
    return tuple(schema_from_json(s) for s in get_list(obj, "schemas", what))


def _current_schema_id(obj: JsonObject, schemas: tuple[Schema, ...], what: str) -> int:
    current = get_int(obj, "current-schema-id", what)
    if all(s.schema_id != current for s in schemas):
        ids = ", ".join(str(s.schema_id) for s in schemas) or "none"
        raise ValidationError(
            f"{what}: 'current-schema-id' {current} is not among the schemas (IDs: {ids})")
    return current


def _specs(obj: JsonObject, what: str) -> tuple[PartitionSpec, ...]:
    return tuple(partition_spec_from_json(s) for s in get_list(obj, "partition-specs", what))


def _sort_orders(obj: JsonObject, what: str) -> tuple[SortOrder, ...]:
    return tuple(sort_order_from_json(s) for s in get_list(obj, "sort-orders", what))


def _v1_schemas(obj: JsonObject, what: str) -> tuple[tuple[Schema, ...], int]:
    """``schemas`` + ``current-schema-id`` when present, else the deprecated ``schema``.

    ``schemas`` without ``current-schema-id`` (written by some older writers): the current
    schema is the one in ``schemas`` with the same columns as ``schema``.
    """
    if obj.get("schemas") is None:
        if obj.get("schema") is None:
            raise missing(what, "schema")
        schema = schema_from_json(obj["schema"])
        return (schema,), schema.schema_id
    schemas = _schemas(obj, what)
    if obj.get("current-schema-id") is not None:
        return schemas, _current_schema_id(obj, schemas, what)
    if obj.get("schema") is None:
        raise ValidationError(
            f"{what} has no valid schema: 'schemas' is given without 'current-schema-id', and "
            "there is no 'schema' to tell which one is current")
    schema = schema_from_json(obj["schema"])
    for candidate in schemas:
        if candidate.same_columns(schema):
            return schemas, candidate.schema_id
    raise ValidationError(
        f"{what} has no valid schema: 'schemas' is given without 'current-schema-id', and "
        "'schema' matches none of them")


def _v1_specs(obj: JsonObject, what: str) -> tuple[tuple[PartitionSpec, ...], int, int]:
    """``partition-specs`` (+ ``default-spec-id``, else the largest spec ID) when present, else
    the deprecated ``partition-spec`` field list as spec 0. ``last-partition-id`` defaults to
    the highest partition field ID (999 when there is none)."""
    if obj.get("partition-specs") is not None:
        specs = _specs(obj, what)
        if not specs:
            raise ValidationError(f"{what}: 'partition-specs' must not be empty")
        default_spec_id = opt_int(obj, "default-spec-id", what)
        if default_spec_id is None:
            default_spec_id = max(s.spec_id for s in specs)
    elif obj.get("partition-spec") is not None:
        fields = partition_fields_from_json(obj["partition-spec"], f"{what} 'partition-spec'")
        specs, default_spec_id = (PartitionSpec(0, fields),), 0
    else:
        raise missing(what, "partition-spec")
    last_partition_id = opt_int(obj, "last-partition-id", what)
    if last_partition_id is None:
        last_partition_id = max((s.last_assigned_field_id for s in specs),
                                default=PARTITION_FIELD_ID_START - 1)
    return specs, default_spec_id, last_partition_id


def _v1_sort_orders(obj: JsonObject, what: str) -> tuple[tuple[SortOrder, ...], int]:
    """``sort-orders`` and ``default-sort-order-id``; a v1 file without them is unsorted."""
    if obj.get("sort-orders") is None:
        return (UNSORTED,), 0
    return _sort_orders(obj, what), get_int(obj, "default-sort-order-id", what)


# ------------------------------------------------------------------------------------ writing


def table_metadata_to_dict(md: TableMetadata) -> dict[str, Any]:
    """The metadata as format ``md.format_version`` writes it, keys in the spec's table order.

    >>> from dataclasses import replace
    >>> md = table_metadata_from_json({"format-version": 1, "location": "s3://b/t",
    ...     "last-updated-ms": 0, "last-column-id": 0, "partition-spec": [],
    ...     "schema": {"type": "struct", "fields": []}})
    >>> v2 = replace(md, format_version=2, table_uuid=uuid.UUID(int=1))
    >>> [k for k in table_metadata_to_dict(v2) if k.startswith(("schema", "partition"))]
    ['schemas', 'partition-specs']
    """
    version = md.format_version
    obj: dict[str, Any] = {"format-version": version}
    if md.table_uuid is not None:
        obj["table-uuid"] = str(md.table_uuid)
    obj["location"] = md.location
    if version >= 2:
        obj["last-sequence-number"] = md.last_sequence_number
    obj["last-updated-ms"] = md.last_updated_ms
    obj["last-column-id"] = md.last_column_id
    if version == 1:
        obj["schema"] = schema_to_json(md.schema())
    obj["schemas"] = [schema_to_json(s) for s in md.schemas]
    obj["current-schema-id"] = md.current_schema_id
    if version == 1:
        obj["partition-spec"] = partition_fields_to_json(md.spec().fields)
    obj["partition-specs"] = [partition_spec_to_json(s) for s in md.partition_specs]
    obj["default-spec-id"] = md.default_spec_id
    obj["last-partition-id"] = md.last_partition_id
    obj["properties"] = dict(md.properties)
    obj["current-snapshot-id"] = (_NO_SNAPSHOT if md.current_snapshot_id is None
                                  else md.current_snapshot_id)
    obj["snapshots"] = [snapshot_to_json(s, version) for s in md.snapshots]
    obj["snapshot-log"] = [snapshot_log_to_json(e) for e in md.snapshot_log]
    obj["metadata-log"] = [metadata_log_to_json(e) for e in md.metadata_log]
    obj["sort-orders"] = [sort_order_to_json(o) for o in md.sort_orders]
    obj["default-sort-order-id"] = md.default_sort_order_id
    if version >= 2 or dict(md.refs) != _implied_refs(md):
        obj["refs"] = {name: ref_to_json(ref) for name, ref in md.refs.items()}
    if md.statistics:
        obj["statistics"] = [statistics_file_to_json(s) for s in md.statistics]
    if md.partition_statistics:
        obj["partition-statistics"] = [partition_statistics_file_to_json(s)
                                       for s in md.partition_statistics]
    if version >= 3 and md.next_row_id is not None:
        obj["next-row-id"] = md.next_row_id
    return obj


def _implied_refs(md: TableMetadata) -> dict[str, SnapshotRef]:
    """The refs a reader derives when ``refs`` is missing: just ``main`` at the current
    snapshot."""
    if md.current_snapshot_id is None:
        return {}
    return {MAIN_BRANCH: SnapshotRef.branch(md.current_snapshot_id)}


def table_metadata_to_json(md: TableMetadata) -> str:
    """The metadata file's text: compact JSON (non-ASCII characters kept as they are)."""
    return json.dumps(table_metadata_to_dict(md), separators=(",", ":"), ensure_ascii=False)

