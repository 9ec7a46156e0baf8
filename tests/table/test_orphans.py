"""Orphan file removal without Spark: what a crashed writer leaves is found and deleted, nothing
the table references is, young files and hidden paths are kept, and the prefix rules of the
reference implementation (equal schemes and authorities, the three mismatch modes)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog.filesystem import FilesystemCatalog
from icepark.errors import FileNotFound, ValidationError
from icepark.io.fileio import ArrowFileIO, FileInfo, FileIO
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.metadata import PartitionStatisticsFile, StatisticsFile, TableMetadata
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change.metadata_builder import MetadataBuilder, now_ms
from icepark.table.imports.add_files import add_files
from icepark.table.maintenance.orphans import (
    OrphanSearch,
    PrefixMismatchMode,
    PrefixRules,
    remove_orphan_files,
    walk,
)
from icepark.table.table import Table

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
LATER = 60_000  # a cutoff a minute ahead: every file on disk is old enough


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                     "s": [f"r{i}" for i in range(start, start + count)]})


def files_under(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def read_ids(table: Table) -> list[int]:
    return sorted(table.refresh().scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def catalog(tmp_path: Path) -> FilesystemCatalog:
    catalog = FilesystemCatalog("fs", {"warehouse": str(tmp_path / "wh")})
    catalog.create_namespace("db")
    return catalog


@pytest.fixture
def table(catalog: FilesystemCatalog) -> Table:
    """Three appends (a metadata log), a branch and a tag on older snapshots, a statistics
    file and a partition statistics file."""
    table = catalog.create_table("db.t", SCHEMA, format_version=2)
    for i in range(3):
        table.append(rows(10 * i, 5))
    first = table.snapshots()[0].snapshot_id
    table.manage_snapshots().create_branch("b", first).create_tag("v1", first).commit()
    stats = f"{table.location}/metadata/stats-{uuid.uuid4()}.puffin"
    part = f"{table.location}/metadata/partition-stats-{uuid.uuid4()}.parquet"
    for path in (stats, part):
        Path(path).write_bytes(b"stats")
    head = table.current_snapshot()
    assert head is not None
    with table.update_statistics() as update:
        update.set_statistics(StatisticsFile(head.snapshot_id, stats, 5, 0))
        update.set_partition_statistics(PartitionStatisticsFile(head.snapshot_id, part, 5))
    return table.refresh()


def crash_leftovers(table: Table) -> set[str]:
    """What writers that died before committing leave: a data file, a manifest, a manifest
    list and a metadata file (copies of live ones under new names)."""
    head = table.current_snapshot()
    assert head is not None and head.manifest_list is not None
    manifest = next(p for p in files_under(f"{table.location}/metadata")
                    if p.endswith(".avro") and "snap-" not in p)
    data = next(p for p in files_under(f"{table.location}/data"))
    made = {f"{table.location}/data/{uuid.uuid4()}.parquet": data,
            f"{table.location}/metadata/{uuid.uuid4()}-m0.avro": manifest,
            f"{table.location}/metadata/snap-1-1-{uuid.uuid4()}.avro": head.manifest_list,
            f"{table.location}/metadata/{uuid.uuid4()}.metadata.json":
                table.metadata_location}
    for target, source in made.items():
        shutil.copyfile(source, target)
    return set(made)


def test_leftovers_of_crashed_writers_are_removed_and_the_table_reads_the_same(
        table: Table) -> None:
    before = read_ids(table)
    referenced = files_under(table.location)
    leftovers = crash_leftovers(table)
    size = sum(os.path.getsize(p) for p in leftovers)
    result = remove_orphan_files(table, older_than_ms=now_ms() + LATER)
    assert set(result.orphan_file_locations) == leftovers
    assert result.deleted_files == len(leftovers) and not result.dry_run
    assert result.orphan_bytes == size and result.failed == ()
    assert files_under(table.location) == referenced
    assert read_ids(table) == before


def test_nothing_referenced_is_removed(table: Table, catalog: FilesystemCatalog) -> None:
    """Every snapshot (on a branch, a tag, or none: rolled back from), the metadata log, the
    version hint and the statistics files stay; a second run finds nothing."""
    second = table.snapshots()[1].snapshot_id
    table.manage_snapshots().rollback_to_snapshot(second).commit()
    everything = files_under(table.location)
    assert any(p.endswith("version-hint.text") for p in everything)
    result = remove_orphan_files(table, older_than_ms=now_ms() + LATER)
    assert result.orphan_file_locations == () and result.deleted_files == 0
    assert files_under(table.location) == everything
    assert read_ids(table) == list(range(5)) + list(range(10, 15))


def test_a_truncated_metadata_log_keeps_the_earlier_metadata_files(table: Table) -> None:
    """``write.metadata.previous-versions-max`` drops old log entries; the logs of earlier
    metadata files still name them (as the reference implementation reads them)."""
    table.set_properties({"write.metadata.previous-versions-max": "1"})
    for i in range(3):
        table.append(rows(100 + i, 1))
    assert len(table.metadata.metadata_log) == 1
    metadata_files = {p for p in files_under(table.location) if p.endswith(".metadata.json")}
    result = remove_orphan_files(table, older_than_ms=now_ms() + LATER)
    assert result.orphan_file_locations == ()
    assert metadata_files <= files_under(table.location)


def test_a_file_younger_than_the_cutoff_is_kept_and_can_be_committed(table: Table) -> None:
    """A write in flight: its file exists, its commit has not landed yet."""
    path = f"{table.location}/data/in-flight.parquet"
    pq.write_table(rows(1000, 3), path)
    written = os.stat(path).st_mtime_ns // 1_000_000
    older = remove_orphan_files(table, older_than_ms=written - 1)
    assert path not in older.orphan_file_locations and os.path.exists(path)
    add_files(table, path)
    assert read_ids(table)[-3:] == [1000, 1001, 1002]
    assert path not in remove_orphan_files(table, older_than_ms=now_ms() + LATER
                                           ).orphan_file_locations


def test_the_default_cutoff_is_three_days(table: Table) -> None:
    leftovers = sorted(crash_leftovers(table))
    old = (now_ms() - 4 * 86_400_000) / 1000
    os.utime(leftovers[0], (old, old))
    result = remove_orphan_files(table)
    assert result.orphan_file_locations == (leftovers[0],)
    assert all(os.path.exists(p) for p in leftovers[1:])


def test_dry_run_reports_the_same_files_and_deletes_nothing(table: Table) -> None:
    leftovers = crash_leftovers(table)
    cutoff = now_ms() + LATER
    dry = remove_orphan_files(table, older_than_ms=cutoff, dry_run=True)
    assert set(dry.orphan_file_locations) == leftovers and dry.deleted_files == 0 and dry.dry_run
    assert all(os.path.exists(p) for p in leftovers)
    real = remove_orphan_files(table, older_than_ms=cutoff)
    assert real.orphan_file_locations == dry.orphan_file_locations
    assert not any(os.path.exists(p) for p in leftovers)


def test_hidden_paths_are_skipped(table: Table) -> None:
    hidden = [f"{table.location}/data/_temporary/0/part-0.parquet",
              f"{table.location}/data/.part-1.parquet.crc",
              f"{table.location}/metadata/.v9.metadata.json.abc.tmp"]
    for path in hidden:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_bytes(b"x")
    assert remove_orphan_files(table, older_than_ms=now_ms() + LATER).orphan_file_locations == ()
    assert all(os.path.exists(p) for p in hidden)


def test_location_limits_the_search_and_must_be_inside_the_table(table: Table,
                                                                 tmp_path: Path) -> None:
    leftovers = crash_leftovers(table)
    data_only = remove_orphan_files(table, older_than_ms=now_ms() + LATER,
                                    location=f"file://{table.location}/data")
    assert [p.split("/data/")[-1] for p in data_only.orphan_file_locations] == [
        p.split("/data/")[-1] for p in leftovers if "/data/" in p]
    assert len(files_under(f"{table.location}/metadata") & leftovers) == 3
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.parquet").write_bytes(b"x")
    for location in (str(outside), f"{table.location}/../t2", f"{table.location}x",
                     f"s3://bucket{table.location}/data"):
        with pytest.raises(ValidationError, match="not inside the table location"):
            remove_orphan_files(table, older_than_ms=now_ms() + LATER, location=location)
    assert (outside / "precious.parquet").exists()


def test_an_unreadable_manifest_fails_the_run_before_any_delete(table: Table) -> None:
    leftovers = crash_leftovers(table)
    head = table.current_snapshot()
    assert head is not None and head.manifest_list is not None
    live = [p for p in files_under(f"{table.location}/metadata")
            if p.endswith("-m0.avro") and p not in leftovers]
    os.remove(sorted(live)[0])
    with pytest.raises(FileNotFound):
        remove_orphan_files(table, older_than_ms=now_ms() + LATER)
    assert all(os.path.exists(p) for p in leftovers)


def test_gc_disabled_tables_are_refused(table: Table) -> None:
    table.set_properties({"gc.enabled": "false"})
    leftovers = crash_leftovers(table)
    with pytest.raises(ValidationError, match=r"gc\.enabled is false"):
        remove_orphan_files(table, older_than_ms=now_ms() + LATER)
    assert all(os.path.exists(p) for p in leftovers)


class _CommitDuringListing:
    """The table as :func:`remove_orphan_files` sees it, whose listing lets another writer
    commit ``path`` (an old file) before it returns."""

    def __init__(self, table: Table, other: Table, path: str) -> None:
        self._table, self._other, self._path = table, other, path
        outer = self

        class _IO(ArrowFileIO):
            def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
                listed = list(super().list_prefix(prefix))
                add_files(outer._other, outer._path)
                return iter(listed)

        self.io: FileIO = _IO()

    @property
    def metadata(self) -> TableMetadata:
        return self._table.metadata

    @property
    def metadata_location(self) -> str:
        return self._table.metadata_location

    def refresh(self) -> Any:
        return self._table.refresh()


def test_a_file_committed_during_the_listing_is_kept(table: Table,
                                                     catalog: FilesystemCatalog) -> None:
    path = f"{table.location}/data/slow-writer.parquet"
    pq.write_table(rows(500, 2), path)
    leftovers = crash_leftovers(table)
    source = _CommitDuringListing(table, catalog.load_table("db.t"), path)
    result = remove_orphan_files(source, older_than_ms=now_ms() + LATER)
    assert path not in result.orphan_file_locations and os.path.exists(path)
    assert set(result.orphan_file_locations) == leftovers
    assert read_ids(table)[-2:] == [500, 501]


# ------------------------------------------------------------------ prefixes


class _Table:
    """A table with no snapshots at ``location``, for the comparison rules alone."""

    def __init__(self, location: str) -> None:
        self.metadata, _ = MetadataBuilder.new_table(SCHEMA, location)
        self.metadata_location = f"{location}/metadata/v1.metadata.json"
        self.io: FileIO = ArrowFileIO()

    def refresh(self) -> Any:
        return self


def listed(*locations: str) -> list[FileInfo]:
    return [FileInfo(location, 1, 0) for location in locations]


PREFIX_CASES = [
    # (referenced, listed, options, orphan?) with the table at s3://bucket/t
    ("s3://bucket/t/a", "s3://bucket/t/a", {}, False),
    ("s3a://bucket/t/a", "s3://bucket/t/a", {}, False),  # default equal schemes
    ("s3n://bucket/t/a", "s3://bucket/t/a", {}, False),
    ("s3://bucket/t/a", "s3://bucket/t/b", {}, True),
    ("gs://bucket/t/a", "s3://bucket/t/a", {"prefix_mismatch_mode": "ignore"}, False),
    ("gs://bucket/t/a", "s3://bucket/t/a", {"prefix_mismatch_mode": "delete"}, True),
    ("gs://bucket/t/a", "s3://bucket/t/a", {"equal_schemes": {"gs,s3a": "s3"}}, False),
    ("s3://other/t/a", "s3://bucket/t/a", {"prefix_mismatch_mode": "ignore"}, False),
    ("s3://other/t/a", "s3://bucket/t/a", {"prefix_mismatch_mode": "DELETE"}, True),
    ("s3://other/t/a", "s3://bucket/t/a", {"equal_authorities": {"other": "bucket"}}, False),
    ("s3://BUCKET/t/./a", "s3://bucket/t/a", {}, False),
    ("/t/a", "s3://bucket/t/a", {"prefix_mismatch_mode": "delete"}, True),  # a local file
]


@pytest.mark.parametrize(("referenced", "found", "options", "orphan"), PREFIX_CASES)
def test_prefix_rules(referenced: str, found: str, options: dict[str, Any],
                      orphan: bool) -> None:
    search = OrphanSearch(_Table("s3://bucket/t"), older_than_ms=1, **options)
    search.references.add_location(referenced)
    assert [i.location for i in search.orphans(listed(found))] == ([found] if orphan else [])


def test_a_prefix_mismatch_is_an_error_by_default_naming_the_files_and_the_remedy() -> None:
    search = OrphanSearch(_Table("s3://bucket/t"), older_than_ms=1)
    search.references.add_location("s3://other/t/a")
    search.references.add_location("s3://bucket/t/c")
    with pytest.raises(ValidationError) as e:
        search.orphans(listed("s3://bucket/t/a", "s3://bucket/t/b", "s3://bucket/t/c"))
    assert "s3://bucket/t/a (referenced as s3://other...)" in str(e.value)
    assert "equal_schemes/equal_authorities" in str(e.value)
    assert "prefix_mismatch_mode='ignore'" in str(e.value)


def test_a_file_referenced_under_both_prefixes_is_never_an_orphan() -> None:
    search = OrphanSearch(_Table("s3://bucket/t"), older_than_ms=1,
                          prefix_mismatch_mode="delete")
    search.references.add_location("s3://other/t/a")
    search.references.add_location("s3://bucket/t/a")
    assert search.orphans(listed("s3://bucket/t/a")) == []


def test_files_outside_the_table_location_are_never_orphans() -> None:
    search = OrphanSearch(_Table("s3://bucket/t"), older_than_ms=1,
                          prefix_mismatch_mode="delete")
    found = listed("s3://bucket/t/../u/a", "s3://bucket/tx/a", "s3://elsewhere/t/a",
                   "s3://bucket/t/data/a")
    assert [i.location for i in search.orphans(found)] == ["s3://bucket/t/data/a"]


def test_a_mismatched_local_file_is_kept_deleted_or_refused_as_the_mode_says(
        table: Table) -> None:
    """A data file the metadata names under another scheme (``file1``): the reference's own
    example. ``error`` deletes nothing, ``ignore`` keeps it, ``equal_schemes`` makes it the
    same file, ``delete`` deletes it."""
    path = f"{table.location}/data/elsewhere.parquet"
    pq.write_table(rows(0, 1), path)
    table.append_data_files([DataFile(f"file1://{path}", FileFormat.PARQUET, (), 1,
                                      os.path.getsize(path))])
    cutoff = now_ms() + LATER
    with pytest.raises(ValidationError, match="another scheme or authority"):
        remove_orphan_files(table, older_than_ms=cutoff)
    for options in ({"prefix_mismatch_mode": "ignore"}, {"equal_schemes": {"file1": "file"}}):
        result = remove_orphan_files(table, older_than_ms=cutoff, **options)
        assert result.orphan_file_locations == () and os.path.exists(path)
    result = remove_orphan_files(table, older_than_ms=cutoff, prefix_mismatch_mode="delete")
    assert result.orphan_file_locations == (path,) and not os.path.exists(path)


def test_bad_options_are_typed_errors(table: Table) -> None:
    with pytest.raises(ValidationError, match="Unknown prefix_mismatch_mode 'maybe'"):
        remove_orphan_files(table, prefix_mismatch_mode="maybe")
    with pytest.raises(ValidationError, match="older_than_ms must be milliseconds"):
        remove_orphan_files(table, older_than_ms=1.5)  # type: ignore[arg-type] # a bad input
    with pytest.raises(ValidationError, match="equal_schemes entry must map a string"):
        remove_orphan_files(table, equal_schemes={"s3a": 3})  # type: ignore[dict-item] # bad
    assert PrefixMismatchMode.of(PrefixMismatchMode.DELETE) is PrefixMismatchMode.DELETE


def test_equal_maps_keys_may_list_several_comma_separated() -> None:
    rules = PrefixRules.of({"aa, bb": "s3"}, {"x,y": "z"})
    assert rules.key("bb://y/p") == rules.key("s3://z/p") == rules.key("aa://x/./p")


def test_walk_hands_wide_directories_to_other_workers(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for i in range(12):
        (root / "data" / f"p={i}").mkdir(parents=True)
        (root / "data" / f"p={i}" / "f.parquet").write_bytes(b"x")
    (root / "data" / "_temporary").mkdir()
    (root / "data" / "_h=1").mkdir()
    (root / "metadata").mkdir()
    (root / "metadata" / "v1.metadata.json").write_bytes(b"{}")
    files, pending = walk(ArrowFileIO(), str(root), ("_h=",), max_depth=3, max_subdirs=10)
    assert [i.location for i in files] == [f"{root}/metadata/v1.metadata.json"]
    assert sorted(pending) == sorted([*(f"{root}/data/p={i}" for i in range(12)),
                                      f"{root}/data/_h=1"])
    files, pending = walk(ArrowFileIO(), str(root), (), max_depth=1, max_subdirs=10)
    assert files == [] and sorted(pending) == [f"{root}/data", f"{root}/metadata"]
