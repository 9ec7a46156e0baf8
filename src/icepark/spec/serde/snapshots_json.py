"""JSON for snapshots, references, statistics files and the metadata logs (spec, Appendix C).

"Snapshots are not serialized separately. Instead, they are stored in the table metadata JSON."
Which snapshot fields a format version writes follows the *Snapshots* table and Appendix E:
"Snapshot field ``sequence-number`` should not be written" in v1; in v2 "``sequence-number`` was
added and is required", "``manifest-list`` is now required" and ``summary`` is required.

>>> s = snapshot_from_json({"snapshot-id": 3051729675574597004, "timestamp-ms": 1515100955770,
...     "summary": {"operation": "append"}, "manifest-list": "s3://b/wh/s1.avro",
...     "schema-id": 0}, format_version=1)
>>> s.sequence_number, s.summary.operation
(0, <Operation.APPEND: 'append'>)
>>> sorted(snapshot_to_json(s, 2))
['manifest-list', 'schema-id', 'sequence-number', 'snapshot-id', 'summary', 'timestamp-ms']
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.metadata import (
    BlobMetadata,
    MetadataLogEntry,
    PartitionStatisticsFile,
    SnapshotLogEntry,
    StatisticsFile,
)
from icepark.spec.serde._json import (
    as_object,
    get_int,
    get_list,
    get_object,
    get_str,
    int_list,
    missing,
    opt_int,
    opt_str,
    show,
    string_map,
)
from icepark.spec.snapshots import Operation, RefType, Snapshot, SnapshotRef, Summary

# -------------------------------------------------------------------------------- snapshots


def summary_to_json(summary: Summary) -> dict[str, str]:
    """The summary string map, ``operation`` first."""
    return {"operation": summary.operation.value, **summary.properties}


def summary_from_json(data: Any, what: str = "Snapshot") -> Summary:
    """Decode "A string map that summarizes the snapshot changes, including ``operation``"."""
    obj = as_object(data, f"{what} summary")
    operation = get_str(obj, "operation", f"{what} summary")
    try:
        op = Operation(operation)
    except ValueError:
        allowed = ", ".join(o.value for o in Operation)
        raise ValidationError(
            f"{what} summary: unknown operation {operation!r}; expected one of {allowed}") from None
    properties = string_map({"summary": obj}, "summary", what)
    del properties["operation"]
    return Summary(op, properties)


def snapshot_to_json(snapshot: Snapshot, format_version: int) -> dict[str, Any]:
    """A snapshot as format ``format_version`` writes it.

    ``parent-snapshot-id`` is "Omitted for any snapshot with no parent"; ``sequence-number`` is
    written from v2 on; ``manifests`` only when there is no manifest list; the row-lineage
    fields ``first-row-id`` and ``added-rows`` when set.
    """
    obj: dict[str, Any] = {"snapshot-id": snapshot.snapshot_id}
    if snapshot.parent_snapshot_id is not None:
        obj["parent-snapshot-id"] = snapshot.parent_snapshot_id
    if format_version >= 2:
        obj["sequence-number"] = snapshot.sequence_number
    obj["timestamp-ms"] = snapshot.timestamp_ms
    if snapshot.manifest_list is not None:
        obj["manifest-list"] = snapshot.manifest_list
    elif snapshot.manifests:
        obj["manifests"] = list(snapshot.manifests)
    if snapshot.summary is not None:
        obj["summary"] = summary_to_json(snapshot.summary)
    if snapshot.schema_id is not None:
        obj["schema-id"] = snapshot.schema_id
    if snapshot.first_row_id is not None:
        obj["first-row-id"] = snapshot.first_row_id
    if snapshot.added_rows is not None:
        obj["added-rows"] = snapshot.added_rows
    return obj


def snapshot_from_json(data: Any, format_version: int = 2) -> Snapshot:
    """Decode a snapshot of a format ``format_version`` table.

    v1 (Appendix E, "Reading v1 metadata for v2"): "Snapshot field ``sequence-number`` must
    default to 0"; ``summary`` is optional; ``manifests`` is read when ``manifest-list`` is
    absent. v2 and v3 require ``sequence-number``, ``manifest-list`` and ``summary``.

    >>> snapshot_from_json({"snapshot-id": 1, "timestamp-ms": 0, "manifest-list": "m.avro",
    ...                     "summary": {"operation": "append"}})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Snapshot 1 is missing required field 'sequence-number'
    """
    obj = as_object(data, "Snapshot")
    snapshot_id = get_int(obj, "snapshot-id", "Snapshot")
    what = f"Snapshot {snapshot_id}"
    if obj.get("key-id") is not None:
        raise UnsupportedFeature(
            f"{what} has a 'key-id': table encryption (encryption-keys) is not supported")
    manifest_list = opt_str(obj, "manifest-list", what)
    manifests: tuple[str, ...] = ()
    if format_version >= 2:
        sequence_number = get_int(obj, "sequence-number", what)
        if manifest_list is None:
            raise missing(what, "manifest-list")
        summary: Summary | None = summary_from_json(get_object(obj, "summary", what), what)
    else:
        sequence_number = 0  # v1 has no sequence numbers: "must default to 0"
        summary = None if obj.get("summary") is None else summary_from_json(obj["summary"], what)
        if manifest_list is None:
            if "manifests" not in obj:
                raise ValidationError(f"{what} has neither 'manifest-list' nor 'manifests'")
            manifests = tuple(_str_list(get_list(obj, "manifests", what), what, "manifests"))
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=opt_int(obj, "parent-snapshot-id", what),
        sequence_number=sequence_number,
        timestamp_ms=get_int(obj, "timestamp-ms", what),
        manifest_list=manifest_list,
        summary=summary,
        schema_id=opt_int(obj, "schema-id", what),
        manifests=manifests,
        first_row_id=opt_int(obj, "first-row-id", what),
        added_rows=opt_int(obj, "added-rows", what),
    )


def _str_list(values: list[Any], what: str, key: str) -> list[str]:
    for value in values:
        if not isinstance(value, str):
            raise ValidationError(f"{what}: {key!r} must be a list of strings, not {show(values)}")
    return values


# ------------------------------------------------------------------------------------- refs


def ref_to_json(ref: SnapshotRef) -> dict[str, Any]:
    """A snapshot reference; retention fields are written only when set."""
    obj: dict[str, Any] = {"snapshot-id": ref.snapshot_id, "type": ref.ref_type.value}
    for key, value in (("min-snapshots-to-keep", ref.min_snapshots_to_keep),
                       ("max-snapshot-age-ms", ref.max_snapshot_age_ms),
                       ("max-ref-age-ms", ref.max_ref_age_ms)):
        if value is not None:
            obj[key] = value
    return obj


def ref_from_json(data: Any, name: str) -> SnapshotRef:
    """Decode the reference called ``name``; "Type of the reference, ``tag`` or ``branch``".

    >>> ref_from_json({"snapshot-id": 1, "type": "tag", "max-snapshot-age-ms": 5}, "v1.0")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Reference 'v1.0': Tags cannot have max-snapshot-age-ms: it \
is "For branch type only"
    """
    what = f"Reference {name!r}"
    obj = as_object(data, what)
    ref_type = get_str(obj, "type", what)
    try:
        kind = RefType(ref_type.lower())
    except ValueError:
        raise ValidationError(
            f"{what}: 'type' must be \"branch\" or \"tag\", not {ref_type!r}") from None
    try:
        return SnapshotRef(get_int(obj, "snapshot-id", what), kind,
                           opt_int(obj, "min-snapshots-to-keep", what),
                           opt_int(obj, "max-snapshot-age-ms", what),
                           opt_int(obj, "max-ref-age-ms", what))
    except ValidationError as e:
        if str(e).startswith(what):
            raise
        raise ValidationError(f"{what}: {e}") from e


# ------------------------------------------------------------------------------- statistics


def statistics_file_to_json(stats: StatisticsFile) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "snapshot-id": stats.snapshot_id,
        "statistics-path": stats.statistics_path,
        "file-size-in-bytes": stats.file_size_in_bytes,
        "file-footer-size-in-bytes": stats.file_footer_size_in_bytes,
    }
    if stats.key_metadata is not None:
        obj["key-metadata"] = base64.b64encode(stats.key_metadata).decode("ascii")
    obj["blob-metadata"] = [_blob_to_json(b) for b in stats.blob_metadata]
    return obj


def _blob_to_json(blob: BlobMetadata) -> dict[str, Any]:
    obj: dict[str, Any] = {"type": blob.type, "snapshot-id": blob.snapshot_id,
                           "sequence-number": blob.sequence_number, "fields": list(blob.fields)}
    if blob.properties:
        obj["properties"] = dict(blob.properties)
    return obj


def statistics_file_from_json(data: Any) -> StatisticsFile:
    """Decode a ``statistics`` entry (spec, *Table statistics*). The spec's table types
    ``snapshot-id`` as a string, but every implementation writes a long; a long is required.
    """
    obj = as_object(data, "Statistics file")
    what = f"Statistics file of snapshot {get_int(obj, 'snapshot-id', 'Statistics file')}"
    key_metadata = opt_str(obj, "key-metadata", what)
    return StatisticsFile(
        snapshot_id=get_int(obj, "snapshot-id", what),
        statistics_path=get_str(obj, "statistics-path", what),
        file_size_in_bytes=get_int(obj, "file-size-in-bytes", what),
        file_footer_size_in_bytes=get_int(obj, "file-footer-size-in-bytes", what),
        blob_metadata=tuple(_blob_from_json(b, what)
                            for b in get_list(obj, "blob-metadata", what)),
        key_metadata=None if key_metadata is None else _base64(key_metadata, what),
    )


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(f"{what}: 'key-metadata' must be Base64, not {show(text)}") from None


def _blob_from_json(data: Any, parent: str) -> BlobMetadata:
    obj = as_object(data, f"{parent}: blob metadata")
    what = f"{parent}: blob metadata"
    return BlobMetadata(
        type=get_str(obj, "type", what),
        snapshot_id=get_int(obj, "snapshot-id", what),
        sequence_number=get_int(obj, "sequence-number", what),
        fields=tuple(int_list(obj, "fields", what, required=True)),
        properties=string_map(obj, "properties", what),
    )


def partition_statistics_file_to_json(stats: PartitionStatisticsFile) -> dict[str, Any]:
    return {"snapshot-id": stats.snapshot_id, "statistics-path": stats.statistics_path,
            "file-size-in-bytes": stats.file_size_in_bytes}


def partition_statistics_file_from_json(data: Any) -> PartitionStatisticsFile:
    obj = as_object(data, "Partition statistics file")
    what = "Partition statistics file"
    return PartitionStatisticsFile(get_int(obj, "snapshot-id", what),
                                   get_str(obj, "statistics-path", what),
                                   get_int(obj, "file-size-in-bytes", what))


# ------------------------------------------------------------------------------------- logs


def snapshot_log_to_json(entry: SnapshotLogEntry) -> dict[str, Any]:
    return {"snapshot-id": entry.snapshot_id, "timestamp-ms": entry.timestamp_ms}


def snapshot_log_from_json(data: Any) -> SnapshotLogEntry:
    obj = as_object(data, "Snapshot log entry")
    return SnapshotLogEntry(get_int(obj, "snapshot-id", "Snapshot log entry"),
                            get_int(obj, "timestamp-ms", "Snapshot log entry"))


def metadata_log_to_json(entry: MetadataLogEntry) -> dict[str, Any]:
    return {"metadata-file": entry.metadata_file, "timestamp-ms": entry.timestamp_ms}


def metadata_log_from_json(data: Any) -> MetadataLogEntry:
    obj = as_object(data, "Metadata log entry")
    return MetadataLogEntry(get_str(obj, "metadata-file", "Metadata log entry"),
                            get_int(obj, "timestamp-ms", "Metadata log entry"))

