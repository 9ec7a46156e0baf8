"""Tables for the scan planning tests: real metadata trees in a temporary directory.

:class:`ScanTable` commits through the real snapshot producers (fast append, row delta,
overwrite, rewrite) with the in-memory committer of the producer tests, so every scan reads
manifests and manifest lists written by ``io/manifest.py`` and ``io/manifest_list.py``.
:func:`file_of_rows` makes a data file record whose partition and metrics are those of rows the
test knows, so a test can check a plan against the rows themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from icepark.io.fileio import ArrowFileIO
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.metadata import FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot, SnapshotRef
from icepark.spec.types import DOUBLE, LONG, STRING, TIMESTAMP, NestedField, PrimitiveType
from icepark.table.change import updates as u
from icepark.table.change.commit import CommitResult
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.scan.scan import TableScan
from icepark.table.snapshot.append import FastAppend
from icepark.table.snapshot.overwrite import DeleteFiles, RewriteFiles
from icepark.table.snapshot.row_delta import RowDelta
from tests.table.producer_fixtures import InMemoryCommitter

IO = ArrowFileIO()
SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "category", STRING),
    NestedField.optional(3, "ts", TIMESTAMP),
    NestedField.optional(4, "score", DOUBLE),
)
DAY_US = 86_400_000_000
POS = FileContent.POSITION_DELETES
EQ = FileContent.EQUALITY_DELETES
FILE_PATH_ID = 2147483546
SpecBuild = Callable[[PartitionSpecBuilder], PartitionSpecBuilder]


def identity_category(b: PartitionSpecBuilder) -> PartitionSpecBuilder:
    return b.identity("category")


def unpartitioned(b: PartitionSpecBuilder) -> PartitionSpecBuilder:
    return b


class ScanTable:
    """A table at ``tmp_path/t`` changed by real snapshot producers."""

    def __init__(self, tmp_path: Path, spec: SpecBuild = identity_category, *,
                 schema: Schema = SCHEMA, format_version: FormatVersion = 2,
                 properties: dict[str, str] | None = None) -> None:
        self.location = str(tmp_path / "t")
        md, _ = MetadataBuilder.new_table(
            schema, self.location, spec=spec(PartitionSpecBuilder(schema)).build(),
            properties=properties or {}, format_version=format_version)
        self.committer = InMemoryCommitter(md)
        self.io = IO

    @property
    def metadata(self) -> TableMetadata:
        return self.committer.metadata

    @property
    def spec_id(self) -> int:
        return self.metadata.default_spec_id

    def path(self, name: str) -> str:
        return f"{self.location}/data/{name}.parquet"

    def scan(self, **kwargs: Any) -> TableScan:
        return TableScan(self.metadata, self.io, **kwargs)

    def planned(self, **kwargs: Any) -> set[str]:
        """The names of the planned data files."""
        return {name_of(t.data_file) for t in self.scan(**kwargs).plan_files()}

    def current(self) -> Snapshot:
        snapshot = self.metadata.current_snapshot()
        assert snapshot is not None
        return snapshot

    def append(self, *files: DataFile) -> Snapshot:
        self.committer.commit(FastAppend(self.io, self.metadata).append_files(files))
        return self.current()

    def row_delta(self, *files: DataFile) -> Snapshot:
        """Commit data and delete files together (a delete or an overwrite)."""
        self.committer.commit(RowDelta(self.io, self.metadata).add_files(files))
        return self.current()

    def delete(self, *names: str) -> Snapshot:
        self.committer.commit(DeleteFiles(self.io, self.metadata).delete_files(
            [self.path(n) for n in names]))
        return self.current()

    def rewrite(self, removed: Sequence[str], added: Sequence[DataFile]) -> Snapshot:
        self.committer.commit(RewriteFiles(self.io, self.metadata).rewrite(
            [self.path(n) for n in removed], added))
        return self.current()

    def update(self, *updates: u.TableUpdate) -> None:
        md = MetadataBuilder(self.metadata).apply_all(updates).build()
        self.committer.current = CommitResult(md, self.committer.current.metadata_location)

    def evolve_spec(self, spec: SpecBuild) -> PartitionSpec:
        """Add a new default partition spec (new partition field IDs)."""
        md = self.metadata
        built = spec(PartitionSpecBuilder(md.schema(), len(md.partition_specs),
                                          md.last_partition_id)).build()
        self.update(u.AddPartitionSpec(built), u.SetDefaultSpec(u.LAST_ADDED))
        return self.metadata.spec()

    def tag(self, name: str, snapshot_id: int) -> None:
        self.update(u.SetSnapshotRef(name, SnapshotRef.tag(snapshot_id)))

    def branch(self, name: str, snapshot_id: int) -> None:
        self.update(u.SetSnapshotRef(name, SnapshotRef.branch(snapshot_id)))

    def file(self, name: str, partition: tuple[Any, ...] | None = None, records: int = 10, *,
             spec_id: int | None = None, content: FileContent = FileContent.DATA,
             size: int = 1000, **kwargs: Any) -> DataFile:
        """A file record named ``name``; the partition defaults to ``("a",)``, or ``()``
        for an unpartitioned spec."""
        sid = self.spec_id if spec_id is None else spec_id
        spec = self.metadata.spec_by_id(sid)
        assert spec is not None
        if partition is None:
            partition = ("a",) if spec.fields else ()
        return DataFile(self.path(name), FileFormat.PARQUET, partition, records, size, content,
                        sid, **kwargs)

    def position_deletes(self, name: str, partition: tuple[Any, ...] | None = None, *,
                         target: str | None = None, **kwargs: Any) -> DataFile:
        """A position delete file; ``target`` names the one data file it references (its
        ``file_path`` bounds)."""
        if target is not None:
            path = to_bytes(STRING, self.path(target))
            kwargs.update(lower_bounds={FILE_PATH_ID: path}, upper_bounds={FILE_PATH_ID: path})
        return self.file(name, partition, content=POS, **kwargs)

    def equality_deletes(self, name: str, partition: tuple[Any, ...] | None = None, *,
                         ids: tuple[int, ...] = (1,), **kwargs: Any) -> DataFile:
        return self.file(name, partition, content=EQ, equality_ids=ids, **kwargs)


def name_of(f: DataFile) -> str:
    return f.file_path.rsplit("/", 1)[-1].removesuffix(".parquet")


def long_bounds(field_id: int, low: int, high: int) -> dict[str, Any]:
    """Metrics of a long column holding values in ``[low, high]`` and no nulls."""
    return {"lower_bounds": {field_id: to_bytes(LONG, low)},
            "upper_bounds": {field_id: to_bytes(LONG, high)},
            "value_counts": {field_id: 10}, "null_value_counts": {field_id: 0}}


def metrics_of(schema: Schema, rows: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """Value, null and NaN counts and bounds of every top-level primitive column."""
    out: dict[str, dict[int, Any]] = {k: {} for k in (
        "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")}
    for i, f in enumerate(schema.fields):
        t = f.field_type
        assert isinstance(t, PrimitiveType)
        values = [row[i] for row in rows]
        out["value_counts"][f.field_id] = len(values)
        out["null_value_counts"][f.field_id] = sum(v is None for v in values)
        present = [v for v in values if v is not None]
        if t == DOUBLE:
            out["nan_value_counts"][f.field_id] = sum(math.isnan(v) for v in present)
            present = [v for v in present if not math.isnan(v)]
        if present:  # -0.0 sorts before 0.0, as IEEE 754 totalOrder
            low = min(present, key=lambda v: (v, math.copysign(1, v) if t == DOUBLE else 0))
            high = max(present, key=lambda v: (v, math.copysign(1, v) if t == DOUBLE else 0))
            out["lower_bounds"][f.field_id] = to_bytes(t, low)
            out["upper_bounds"][f.field_id] = to_bytes(t, high)
    return out


def partition_of(schema: Schema, spec: PartitionSpec, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The partition tuple of a row (top-level source columns only)."""
    values = []
    for f in spec.fields:
        position = next(i for i, c in enumerate(schema.fields) if c.field_id == f.source_id)
        source = schema.fields[position].field_type
        values.append(f.transform.apply(source, row[position]))
    return tuple(values)


def file_of_rows(path: str, schema: Schema, spec: PartitionSpec,
                 rows: Sequence[tuple[Any, ...]]) -> DataFile:
    """A data file holding ``rows``, which must all be in one partition of ``spec``."""
    partitions = {partition_of(schema, spec, r) for r in rows}
    assert len(partitions) == 1, partitions
    return DataFile(path, FileFormat.PARQUET, partitions.pop(), len(rows), 100 * len(rows),
                    FileContent.DATA, spec.spec_id, **metrics_of(schema, rows))
