"""Adding existing Parquet files to a table, in place, in one ``append`` snapshot.

Spec, *Snapshots*: ``append`` is "Only data files were added and no files were removed". The
files stay where they are and are never deleted by this: a failed commit deletes only the
manifests it wrote. Each file is read as :mod:`icepark.table.imports.data_file` says (columns
checked, metrics from the footer, partition from its directories or data); footers are read on
threads.

A file the table already references is refused, as the reference implementation's
``add_files`` refuses it: the same file listed twice would be read twice. The check runs on
every commit attempt, against the branch's live files then (a retry after a concurrent commit
checks the manifests that commit added), so two imports of one file cannot both succeed;
``check_duplicate_files=False`` turns it off. When a file has no field IDs and the table has no
name mapping, the commit also sets ``schema.name-mapping.default`` to the mapping of the
schema the files were checked against, which readers then use to find their columns. The
schema and partition spec must still be the ones the files were checked against when the
commit is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icepark.errors import Remedy, ValidationError
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY, create_mapping, to_json
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.reader import NO_STATS
from icepark.spec.manifest import DataFile, ManifestContent, ManifestFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.change import updates as u
from icepark.table.change.commit import Change
from icepark.table.change.schema_change import PropertiesChange
from icepark.table.imports.data_file import ImportedFile, ImportTarget, import_file
from icepark.table.imports.sources import SourceFile, find_files
from icepark.table.scan.tasks import parallel_map
from icepark.table.snapshot.append import new_append
from icepark.table.snapshot.producer import branch_head, has_live_files
from icepark.table.table import Table
from icepark.table.transaction import replay

FOOTER_THREADS = 8
"""How many footers are read at once: the reads wait on storage, not on the GIL."""
_SHOWN = 5


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import committed: the table at its new version, the snapshot, and how many
    files, rows and partitions it added."""

    table: Table
    snapshot_id: int | None
    added_files: int
    added_records: int
    changed_partitions: int


def read_files(file_io: FileIO, metadata: TableMetadata, sources: Sequence[SourceFile],
               threads: int = FOOTER_THREADS) -> list[ImportedFile]:
    """Each source file as a data file of the table ``metadata`` describes, read on threads."""
    target = ImportTarget.of(metadata)
    return list(parallel_map(lambda s: import_file(file_io, target, s), sources,
                             min(threads, max(1, len(sources)))))


class AddFiles:
    """The :class:`~icepark.table.change.commit.Change` that appends imported files (see the
    module docstring); ``planned`` is the table version they were read against."""

    def __init__(self, file_io: FileIO, planned: TableMetadata, files: Sequence[ImportedFile],
                 *, table_name: str, check_duplicate_files: bool = True,
                 branch: str = MAIN_BRANCH,
                 snapshot_properties: Mapping[str, str] | None = None) -> None:
        self._io, self._planned, self._name = file_io, planned, table_name
        self._check = check_duplicate_files
        self._branch = branch
        self._paths = {f.data_file.file_path for f in files}
        self._by_name = any(f.by_name for f in files)
        self._checked: set[str] = set()
        self._append = new_append(file_io, planned, branch=branch,
                                  snapshot_properties=snapshot_properties)
        self._append.append_files(f.data_file for f in files)

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        planned = self._planned
        if (base.current_schema_id, base.default_spec_id) != (planned.current_schema_id,
                                                              planned.default_spec_id):
            raise ValidationError(f"The schema or partition spec of {self._name} changed while "
                                  "the files were being added; add them again")
        if self._check:
            self._check_duplicates(base)
        staged: list[Change] = []
        if self._by_name and NAME_MAPPING_PROPERTY not in base.properties:
            staged.append(PropertiesChange(
                {NAME_MAPPING_PROPERTY: to_json(create_mapping(base.schema()))}))
        requirements, updates, _ = replay([*staged, self._append], base)
        requirements += [u.AssertCurrentSchemaId(base.current_schema_id),
                         u.AssertDefaultSpecId(base.default_spec_id)]
        return requirements, updates

    def clean_up(self, committed: bool) -> None:
        """Delete the manifests attempts wrote that the table does not use; never the files
        added."""
        self._append.clean_up(committed)

    def _check_duplicates(self, base: TableMetadata) -> None:
        """Refuse files the branch already has live; manifests checked by an earlier attempt
        are not read again (a manifest never changes)."""
        specs = {s.spec_id: s for s in base.partition_specs}
        unread = [m for m in snapshot_manifests(self._io, branch_head(base, self._branch))
                  if m.content is ManifestContent.DATA and has_live_files(m)
                  and m.manifest_path not in self._checked]

        def present(manifest: ManifestFile) -> list[str]:
            return [e.data_file.file_path for e in read_manifest(
                self._io, manifest, specs_by_id=specs, discard_deleted=True, stats=NO_STATS)
                    if e.data_file.file_path in self._paths]

        found = sorted({p for paths in parallel_map(present, unread) for p in paths})
        if found:
            shown = ", ".join(found[:_SHOWN]) + (" ..." if len(found) > _SHOWN else "")
            raise ValidationError(
                f"Cannot add {len(found)} file(s) already in table {self._name}: {shown} (a "
                "file listed twice is read twice)",
                remedy=Remedy("to add them anyway, pass {}", "check_duplicate_files=False"))
        self._checked.update(m.manifest_path for m in unread)


def add_files(table: Table, source: str | Sequence[str], *,
              partition_filter: Mapping[str, str] | None = None,
              check_duplicate_files: bool = True, branch: str = MAIN_BRANCH,
              snapshot_properties: Mapping[str, str] | None = None) -> ImportResult:
    """Add the Parquet files ``source`` names (a directory searched recursively, a file, or a
    list of them) to ``table`` in one ``append`` snapshot; see the module docstring.

    ``partition_filter`` (``{"dt": "2024-03-01"}``) takes only the files in the partition
    directories it names.
    """
    sources = find_files(table.io, source, partition_filter)
    files = read_files(table.io, table.metadata, sources)
    change = AddFiles(table.io, table.metadata, files, table_name=table.name,
                      check_duplicate_files=check_duplicate_files, branch=branch,
                      snapshot_properties=snapshot_properties)
    table.commit(change)
    return result_of(table, [f.data_file for f in files], branch)


def result_of(table: Table, files: Sequence[DataFile], branch: str = MAIN_BRANCH
              ) -> ImportResult:
    """The :class:`ImportResult` of committing ``files`` to ``branch`` of ``table``."""
    snapshot = table.snapshot_by_ref(branch)
    return ImportResult(table, None if snapshot is None else snapshot.snapshot_id, len(files),
                        sum(f.record_count for f in files),
                        len({(f.spec_id, f.partition) for f in files}))
