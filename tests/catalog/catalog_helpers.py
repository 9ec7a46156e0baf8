"""Shared pieces of the catalog tests: catalogs, a schema, small changes to commit, and the
rows of a table read back."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from icepark.catalog import FilesystemCatalog, SqlCatalog
from icepark.catalog.base import BaseCatalog
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.metadata import TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef, Summary
from icepark.spec.types import LONG, STRING, TIMESTAMP, NestedField
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import now_ms
from icepark.table.table import Table

KINDS = ("sql", "filesystem")

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "name", STRING),
    NestedField.optional(3, "ts", TIMESTAMP),
)

FAST_RETRY = {
    "commit.retry.num-retries": "200",
    "commit.retry.min-wait-ms": "2",
    "commit.retry.max-wait-ms": "40",
}


OPTIMISTIC = {"lock.enabled": "false"}
"""Catalog properties of writers that race instead of taking turns (the commit lock is off)."""


def make_catalog(kind: str, warehouse: Path, name: str = "test",
                 properties: dict[str, str] | None = None) -> BaseCatalog:
    props = {"warehouse": str(warehouse), **(properties or {})}
    if kind == "sql":
        return SqlCatalog(name, props)
    return FilesystemCatalog(name, props)


def close(catalog: BaseCatalog) -> None:
    if isinstance(catalog, SqlCatalog):
        catalog.close()


def metadata_dir(location: str) -> Path:
    return Path(location.removeprefix("file://")) / "metadata"


def metadata_files(location: str) -> list[str]:
    """The visible ``*.metadata.json`` files of a table, sorted."""
    folder = metadata_dir(location)
    if not folder.is_dir():
        return []
    return sorted(str(p) for p in folder.iterdir() if p.name.endswith(".metadata.json"))


def all_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@dataclass
class SetProperty:
    """A change that sets one property (no requirement: always applies)."""

    key: str
    value: str = "1"

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                    list[u.TableUpdate]]:
        return [], [u.SetProperties({self.key: self.value})]

    def clean_up(self, committed: bool) -> None:
        pass


@dataclass
class FakeAppend:
    """A snapshot with a made-up manifest list on top of ``main``, tagged ``key`` in its
    summary and in a table property; requires ``main`` unchanged since ``base``."""

    key: str
    attempts: list[int] = field(default_factory=list)

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                    list[u.TableUpdate]]:
        parent = base.current_snapshot_id
        snapshot_id = random.getrandbits(62) + 1
        self.attempts.append(snapshot_id)
        snapshot = Snapshot(snapshot_id, parent, base.last_sequence_number + 1, now_ms(),
                            f"{base.location}/metadata/snap-{snapshot_id}.avro",
                            Summary(Operation.APPEND, {"commit-key": self.key}),
                            base.current_schema_id)
        return ([u.AssertRefSnapshotId("main", parent)],
                [u.AddSnapshot(snapshot), u.SetSnapshotRef("main", SnapshotRef.branch(snapshot_id)),
                 u.SetProperties({self.key: str(os.getpid())})])

    def clean_up(self, committed: bool) -> None:
        pass


def register_files(table: Table, paths: Sequence[str]) -> Table:
    """Append files that exist (each said to hold one row) with the real append producer,
    :meth:`Table.append_data_files`."""
    spec = table.spec()
    partition = tuple(None for _ in spec.fields)
    return table.append_data_files(
        DataFile(path, FileFormat.PARQUET, partition, 1, 10, spec_id=spec.spec_id)
        for path in paths)


def live_data_files(table: Table, snapshot: Snapshot | None = None) -> list[DataFile]:
    """The data files live in a snapshot (default: the current one), from its manifests."""
    snapshot = snapshot or table.current_snapshot()
    if snapshot is None:
        return []
    return [e.data_file for m in snapshot_manifests(table.io, snapshot)
            for e in read_manifest(table.io, m, discard_deleted=True)]


def live_rows(table: Table, snapshot: Snapshot | None = None) -> list[dict[str, Any]]:
    """Every row of the snapshot's live data files, read with pyarrow."""
    return [row for f in live_data_files(table, snapshot)
            for row in pq.read_table(f.file_path.removeprefix("file://")).to_pylist()]
