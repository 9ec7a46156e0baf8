"""Iceberg tables made of a directory of Parquet files: a snapshot beside it, or the directory
migrated in place. The reference implementation's ``snapshot`` and ``migrate`` procedures, for a
directory rather than a Hive table.

Both infer the table (:mod:`icepark.table.imports.infer`: columns from the files, identity
partitions from their ``key=value`` directories), read and check every file before anything is
created, then create the table and add the files where they are in one ``append`` snapshot
(:mod:`icepark.table.imports.add_files`). If that commit fails the new table is removed again
(its catalog entry and the metadata file written for it; never a data file), so no half-made
table is left.

* :func:`snapshot_table` leaves the directory untouched: the table lives at its own location
  (the catalog's default, or ``location``) and only references the files. It has
  ``gc.enabled=false``, the reference implementation's guard for tables that do not own their
  files: expiring its snapshots or purging it never deletes a data file.
* :func:`migrate_table` makes the directory the table: the table location is the directory,
  its metadata goes to ``<directory>/metadata`` and later writes to ``<directory>/data``, and
  the table owns the files (expiry and purge may delete them as for any table). A directory
  that already has a ``metadata`` folder is refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence

from icepark.catalog.base import BaseCatalog, Catalog
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.catalog.identifier import IdentifierLike, show, table_identifier
from icepark.errors import AlreadyExists, NoSuchNamespace, UnsupportedFeature, ValidationError
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.spec.metadata import FormatVersion
from icepark.spec.properties import GC_ENABLED
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.imports.add_files import AddFiles, ImportResult, read_files, result_of
from icepark.table.imports.infer import infer_table
from icepark.table.imports.sources import SourceFile, find_files, normalize


def snapshot_table(catalog: Catalog, source: str, identifier: IdentifierLike, *,
                   location: str | None = None, properties: Mapping[str, str] | None = None,
                   format_version: FormatVersion = 2) -> ImportResult:
    """A new table ``identifier`` of the Parquet files under the directory ``source``, which
    is left as it is (module docstring)."""
    given = dict(properties or {})
    if given.get(GC_ENABLED, "false").strip().lower() != "false":
        raise ValidationError(f"A snapshot table does not own its files, so {GC_ENABLED} "
                              "stays false")
    if location is not None and _inside(normalize(location), normalize(source)):
        raise ValidationError(f"A snapshot leaves {source} untouched: choose a table location "
                              "outside it (or migrate the directory in place)")
    return _create(catalog, source, identifier, location=location,
                   properties={**given, GC_ENABLED: "false"}, format_version=format_version)


def migrate_table(catalog: Catalog, source: str, identifier: IdentifierLike, *,
                  properties: Mapping[str, str] | None = None,
                  format_version: FormatVersion = 2) -> ImportResult:
    """The directory ``source`` of Parquet files made the table ``identifier``, in place
    (module docstring)."""
    if isinstance(catalog, FilesystemCatalog):
        raise UnsupportedFeature("The filesystem catalog keeps each table in a directory of its "
                                 "own; migrate into a SQL catalog (or snapshot the directory)")
    root = normalize(source)
    metadata_dir = f"{root.rstrip('/')}/metadata"
    if next(iter(_file_io(catalog).list_prefix(metadata_dir)), None) is not None:
        raise AlreadyExists(f"{source} already has a metadata directory: is it an Iceberg "
                            "table? (register its metadata file instead)")
    return _create(catalog, source, identifier, location=root,
                   properties=dict(properties or {}), format_version=format_version)


def _file_io(catalog: Catalog) -> FileIO:
    return catalog.file_io if isinstance(catalog, BaseCatalog) else ArrowFileIO()


def _inside(location: str, root: str) -> bool:
    return location.rstrip("/") == root.rstrip("/") or location.startswith(
        root.rstrip("/") + "/")


def _create(catalog: Catalog, source: str, identifier: IdentifierLike, *,
            location: str | None, properties: dict[str, str],
            format_version: FormatVersion) -> ImportResult:
    """Infer, read and check everything, then create the table and commit its files."""
    ident = table_identifier(identifier)
    if not catalog.namespace_exists(ident[:-1]):
        raise NoSuchNamespace(f"Namespace does not exist: {show(ident[:-1])}")
    if catalog.table_exists(ident):
        raise AlreadyExists(f"Table already exists: {show(ident)}")
    io = _file_io(catalog)
    sources = _directory_files(io, source)
    inferred = infer_table(io, sources, source)
    planned, _ = MetadataBuilder.new_table(
        inferred.schema, location or normalize(source), spec=inferred.spec,
        properties=properties, format_version=format_version, fresh_ids=False)
    files = read_files(io, planned, sources)
    table = catalog.create_table(ident, inferred.schema, partition_spec=inferred.spec,
                                 location=location, properties=properties,
                                 format_version=format_version, keep_field_ids=True)
    created = table.metadata_location
    try:
        if (table.schema(), table.spec()) != (planned.schema(), planned.spec()):
            raise ValidationError(f"Table {show(ident)} was created with another schema or "
                                  "partition spec than the files were checked against")
        table.commit(AddFiles(table.io, table.metadata, files, table_name=table.name,
                              check_duplicate_files=False))
    except BaseException:
        _remove(catalog, io, ident, created, location)
        raise
    return result_of(table, [f.data_file for f in files])


def _directory_files(io: FileIO, source: str) -> Sequence[SourceFile]:
    sources = find_files(io, source)
    if len(sources) == 1 and sources[0].location == normalize(source):
        raise ValidationError(f"{source} is a file: a table is made of a directory of "
                              "Parquet files (add single files to a table with add_files)")
    return sources


def _remove(catalog: Catalog, io: FileIO, ident: tuple[str, ...], metadata_location: str,
            location: str | None) -> None:
    """Undo a table creation whose files could not be committed: the catalog entry and the
    metadata file only (best effort; the data files are never touched)."""
    with contextlib.suppress(Exception):
        catalog.drop_table(ident, purge=False)
    with contextlib.suppress(Exception):
        io.delete(metadata_location)
    if location is not None and "://" not in location:  # a local migrate: its new folder
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(location, "metadata"))
