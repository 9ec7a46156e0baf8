"""Cherry-picking: applying a snapshot from another branch (or a staged one) to main.

Spec, *Snapshots*: an ``append`` is a snapshot where "Only data files were added and no files
were removed", so its added files can be appended to another lineage; "a manifest can be written
once and reused in commit retries. To change a sequence number for a retry, only the manifest
list must be rewritten".
"""

from __future__ import annotations

import contextlib
import uuid

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import ManifestWriter, read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests, write_manifest_list
from icepark.spec.manifest import DataFile, EntryStatus, ManifestContent, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH, Operation, Snapshot, Summary
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import MetadataBuilder, now_ms
from icepark.table.change.refs import (
    CARRIED_TOTALS,
    SOURCE_SNAPSHOT_ID,
    main_lineage,
    new_snapshot_id,
    point_main,
    snapshot_of,
)
from icepark.table.change.schema_change import Changes


class CherryPick:
    """Apply a snapshot from another branch (or a staged one) to main.

    When the snapshot's parent is the current snapshot, main fast-forwards to it. Otherwise it
    must be an ``append`` ("Only data files were added and no files were removed"), and its
    added data files are appended to main as a new snapshot whose summary records
    ``source-snapshot-id``. The new manifests are written once and reused by retries
    ("a manifest can be written once and reused in commit retries. To change a sequence number
    for a retry, only the manifest list must be rewritten"). A snapshot that is already an
    ancestor of main, or was already picked into it, is rejected.
    """

    def __init__(self, snapshot_id: int, file_io: FileIO) -> None:
        self.snapshot_id = snapshot_id
        self._io = file_io
        self._new_id: int | None = None
        self._manifests: list[ManifestFile] | None = None
        self._added_size = 0
        self._written: list[str] = []
        self._kept: set[str] = set()

    def _plan(self, base: TableMetadata) -> tuple[Snapshot, bool]:
        """The picked snapshot and whether main can fast-forward to it."""
        action = f"cherry-pick snapshot {self.snapshot_id}"
        picked = snapshot_of(base, self.snapshot_id, action)
        lineage = main_lineage(base, base.current_snapshot_id)
        if any(s.snapshot_id == picked.snapshot_id for s in lineage):
            raise ValidationError(f"Cannot {action}: it is already an ancestor of the current "
                                  "snapshot")
        if any(s.summary is not None
               and s.summary.properties.get(SOURCE_SNAPSHOT_ID) == str(picked.snapshot_id)
               for s in lineage):
            raise ValidationError(f"Cannot {action}: it was already cherry-picked into main")
        if picked.parent_snapshot_id == base.current_snapshot_id:
            return picked, True
        if picked.operation is not Operation.APPEND:
            raise ValidationError(
                f"Cannot {action}: it is not based on the current snapshot, so it must be "
                f"re-applied, and only append snapshots can be (it is {picked.operation})")
        return picked, False

    def preview(self, base: TableMetadata) -> TableMetadata:
        """Validate against ``base``; the result of a fast-forward (else ``base``)."""
        picked, fast_forward = self._plan(base)
        if not fast_forward:
            return base
        return MetadataBuilder(base).apply_all(point_main(base, picked.snapshot_id)[1]).build()

    def changes(self, base: TableMetadata) -> Changes:
        picked, fast_forward = self._plan(base)
        if fast_forward:
            self._kept = set()
            return point_main(base, picked.snapshot_id)
        if self._manifests is None or self._new_id is None:
            self._new_id = new_snapshot_id(base)
            self._manifests = self._write_manifests(base, picked, self._new_id)
        if base.snapshot_by_id(self._new_id) is not None:
            raise ValidationError(f"Snapshot ID {self._new_id} was taken concurrently")
        parent = base.current_snapshot()
        sequence_number = base.last_sequence_number + 1 if base.format_version >= 2 else 0
        location = (f"{base.location}/metadata/snap-{self._new_id}-{len(self._written)}-"
                    f"{uuid.uuid4()}.avro")
        self._written.append(location)
        write_manifest_list(
            self._io, location, base.format_version, self._new_id,
            None if parent is None else parent.snapshot_id, sequence_number,
            [*self._manifests, *([] if parent is None else snapshot_manifests(self._io, parent))],
            properties=base.properties)
        self._kept = {location, *(m.manifest_path for m in self._manifests)}
        snapshot = Snapshot(self._new_id, None if parent is None else parent.snapshot_id,
                            sequence_number, now_ms(), location,
                            Summary(Operation.APPEND, self._summary(picked, parent)),
                            base.current_schema_id)
        _, updates = point_main(base, snapshot.snapshot_id)
        return ([u.AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id)],
                [u.AddSnapshot(snapshot), *updates])

    def _write_manifests(self, base: TableMetadata, picked: Snapshot,
                         snapshot_id: int) -> list[ManifestFile]:
        """One new manifest per partition spec of the files ``picked`` added."""
        specs = {s.spec_id: s for s in base.partition_specs}
        added: dict[int, list[DataFile]] = {}
        for manifest in snapshot_manifests(self._io, picked):
            if (manifest.content is not ManifestContent.DATA
                    or manifest.added_snapshot_id != picked.snapshot_id):
                continue
            for entry in read_manifest(self._io, manifest, specs_by_id=specs,
                                       discard_deleted=True):
                if entry.status is EntryStatus.ADDED and entry.snapshot_id == picked.snapshot_id:
                    added.setdefault(manifest.partition_spec_id, []).append(entry.data_file)
        out: list[ManifestFile] = []
        for spec_id, files in added.items():
            spec = base.spec_by_id(spec_id)
            if spec is None:
                raise ValidationError(f"Cannot cherry-pick snapshot {picked.snapshot_id}: its "
                                      f"files use unknown partition spec {spec_id}")
            location = f"{base.location}/metadata/{uuid.uuid4()}-m{len(out)}.avro"
            self._written.append(location)
            with ManifestWriter(self._io, location, spec, base.schema(), base.format_version,
                                snapshot_id=snapshot_id, properties=base.properties) as writer:
                for data_file in files:
                    writer.add_file(data_file)
                    self._added_size += data_file.file_size_in_bytes
            out.append(writer.to_manifest_file())
        return out

    def _summary(self, picked: Snapshot, parent: Snapshot | None) -> dict[str, str]:
        manifests = self._manifests or []
        added = {"added-data-files": sum(m.added_files_count or 0 for m in manifests),
                 "added-records": sum(m.added_rows_count or 0 for m in manifests),
                 "added-files-size": self._added_size}
        props = {SOURCE_SNAPSHOT_ID: str(picked.snapshot_id),
                 **{key: str(value) for key, value in added.items()}}
        before = {} if parent is None or parent.summary is None else parent.summary.properties
        for total, key in (("total-data-files", "added-data-files"),
                           ("total-records", "added-records"),
                           ("total-files-size", "added-files-size")):
            previous = "0" if parent is None else before.get(total)
            if previous is not None and previous.isdigit():
                props[total] = str(int(previous) + added[key])
        props.update({key: before[key] for key in CARRIED_TOTALS if key in before})
        return props

    def clean_up(self, committed: bool) -> None:
        """Delete what attempts wrote that the committed snapshot does not use."""
        keep = self._kept if committed else set()
        for location in self._written:
            if location not in keep:
                with contextlib.suppress(Exception):
                    self._io.delete(location)
        self._written = [loc for loc in self._written if loc in keep]
