"""Reading manifests with only some metrics, or some partitions: the same entries otherwise,
through the compiled decoder and through the generic (fastavro) one."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import CorruptFile, UnsupportedFeature, ValidationError
from icepark.io.avro import native
from icepark.io.avro import pattern as avro_pattern
from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest import manifest as manifest_module
from icepark.io.manifest import reader as reader_module
from icepark.io.manifest.manifest import (
    ManifestWriter,
    read_manifest,
    read_manifest_blocks,
    read_manifest_files,
)
from icepark.io.manifest.reader import ALL_STATS, METRIC_FIELDS, NO_STATS, FileMetrics, Stats
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.trusted import trusted_constructor
from tests.io.manifest_fixtures import data_file


@pytest.fixture(params=["compiled", "kernel", "generic"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each test with the compiled decoder (skipping runs of fields with patterns from
    the first record), with the compiled kernel reading every block and with the generic
    fallback."""
    monkeypatch.setattr(avro_pattern, "COMPILE_AFTER", 0)
    monkeypatch.setattr(native, "MIN_RECORDS", 0 if request.param == "kernel" else 10**12)
    if request.param == "generic":
        def unsupported(*_: Any, **__: Any) -> Any:
            raise UnsupportedFeature("forced fallback")

        monkeypatch.setattr(manifest_module, "compiled_entries", unsupported)
    return str(request.param)


def _write(file_io: ArrowFileIO,  # noqa: PLR0917 - the writer's arguments
           path: str, spec: PartitionSpec, schema: Schema, version: Any,
           files: list[DataFile], content: ManifestContent = ManifestContent.DATA
           ) -> ManifestFile:
    with ManifestWriter(file_io, path, spec, schema, version, content, 9) as w:
        for i, f in enumerate(files):
            if i % 4 == 3:
                w.add(ManifestEntry(EntryStatus.DELETED, f, 9, 1, 1))
            else:
                w.add_file(f)
    return replace(w.to_manifest_file(), sequence_number=5)


def _without(f: DataFile, stats: Stats) -> DataFile:
    kept: dict[str, Any] = {}
    for fid, name in METRIC_FIELDS.items():
        values = getattr(f, name)
        if fid not in stats.maps or values is None:
            kept[name] = None
        elif stats.columns is not None:
            kept[name] = {k: v for k, v in values.items() if k in stats.columns}
    return replace(f, **kept)


STATS = [ALL_STATS, NO_STATS, Stats.for_columns({1}), Stats.for_columns({2, 6}),
         Stats(frozenset({108, 111}), None)]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("stats", STATS, ids=["all", "none", "col1", "col2_6", "sizes"])
def test_projected_entries_equal_full_entries_minus_stats(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        version: int, stats: Stats, decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, version,
                      [data_file(i) for i in range(9)])
    full = list(read_manifest(file_io, manifest))
    got = list(read_manifest(file_io, manifest, stats=stats))
    assert got == [replace(e, data_file=_without(e.data_file, stats)) for e in full]
    assert len(got) == 9 and full[0].data_file == data_file(0)
    if stats == NO_STATS:
        assert all(getattr(e.data_file, name) is None for e in got
                   for name in METRIC_FIELDS.values())


def test_delete_files_keep_their_equality_ids_without_stats(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str) -> None:
    files = [data_file(0, content=FileContent.POSITION_DELETES),
             data_file(1, content=FileContent.EQUALITY_DELETES, equality_ids=(1, 3))]
    manifest = _write(file_io, f"{location}/d.avro", spec, schema, 2, files,
                      ManifestContent.DELETES)
    got = [e.data_file for e in read_manifest(file_io, manifest, stats=NO_STATS)]
    assert got == [_without(f, NO_STATS) for f in files]


@pytest.mark.parametrize("version", [1, 2])
def test_partition_filter_leaves_out_rejected_entries(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        version: int, decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, version,
                      [data_file(i) for i in range(12)])
    seen: list[tuple[Any, ...]] = []

    def even_ids(partition: tuple[Any, ...]) -> bool:
        seen.append(partition)
        return bool(partition[1] % 2 == 0)

    full = list(read_manifest(file_io, manifest, discard_deleted=True))
    got = list(read_manifest(file_io, manifest, discard_deleted=True,
                             partition_filter=even_ids, stats=NO_STATS))
    assert got == [replace(e, data_file=_without(e.data_file, NO_STATS)) for e in full
                   if e.data_file.partition[1] % 2 == 0]
    assert 0 < len(got) < len(full) == 9 and seen  # 12 files, 3 of them deleted
    assert all(len(p) == len(spec.fields) for p in seen)


def test_the_counts_check_covers_entries_the_filter_rejected(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2,
                      [data_file(i) for i in range(4)])
    assert list(read_manifest(file_io, manifest, partition_filter=lambda _: False)) == []
    wrong = replace(manifest, added_files_count=(manifest.added_files_count or 0) + 1)
    with pytest.raises(CorruptFile, match="entries but its manifest list entry counts"):
        list(read_manifest(file_io, wrong, partition_filter=lambda _: False))


def test_pyiceberg_manifests_read_without_stats(tmp_path: Path) -> None:
    pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
    from tests.io.test_manifest_pyiceberg import PY_SCHEMA, PY_SPEC, _rows  # noqa: PLC0415
    catalog = pyiceberg_sql.SqlCatalog("interop", uri=f"sqlite:///{tmp_path}/p.db",
                                       warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("db")
    for version in (1, 2):
        table = catalog.create_table(f"db.t{version}", schema=PY_SCHEMA,
                                     partition_spec=PY_SPEC,
                                     properties={"format-version": str(version)})
        table.append(_rows(0))
        io = ArrowFileIO()
        from icepark.io.manifest.manifest_list import read_manifest_list  # noqa: PLC0415
        for manifest in read_manifest_list(io, table.current_snapshot().manifest_list):
            full = list(read_manifest(io, manifest))
            assert full and full[0].data_file.lower_bounds
            for stats in (NO_STATS, Stats.for_columns({2})):
                got = list(read_manifest(io, manifest, stats=stats))
                assert got == [replace(e, data_file=_without(e.data_file, stats))
                               for e in full]
            kept = list(read_manifest(io, manifest, partition_filter=lambda p: p[0] == "a"))
            assert kept == [e for e in full if e.data_file.partition[0] == "a"] != []
    catalog.close()


def test_metrics_filter_leaves_out_rejected_files(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2,
                      [data_file(i) for i in range(8)])
    stats = Stats.for_columns({1, 2})
    seen: list[tuple[Any, ...]] = []

    def odd_nulls(m: FileMetrics) -> bool:
        seen.append((m.value_counts, m.null_value_counts, m.nan_value_counts,
                     m.lower_bounds, m.upper_bounds))
        return bool((m.null_value_counts or {}).get(2, 0) % 2)

    full = list(read_manifest(file_io, manifest, stats=stats))
    got = list(read_manifest(file_io, manifest, stats=stats, metrics_filter=odd_nulls))
    assert got == [e for e in full if not (e.data_file.null_value_counts or {})[2] % 2]
    assert 0 < len(got) < len(full)
    assert seen == [(f.value_counts, f.null_value_counts, f.nan_value_counts, f.lower_bounds,
                     f.upper_bounds) for f in (e.data_file for e in full)]


def test_errors_of_the_filters_keep_their_type(
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2, [data_file(0)])

    def fails(_: Any) -> bool:
        raise ValidationError("Cannot compare a partition value")

    with pytest.raises(ValidationError, match="Cannot compare"):
        list(read_manifest(file_io, manifest, partition_filter=fails))
    with pytest.raises(ValidationError, match="Cannot compare"):
        list(read_manifest(file_io, manifest, metrics_filter=fails))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("split_offsets", (50, 4), "split_offsets must be sorted"),
    ("record_count", -1, "cannot be negative"),
    ("file_size_in_bytes", -1, "cannot be negative"),
])
def test_files_a_data_file_would_refuse_are_refused_when_read(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str, field: str, value: Any, message: str) -> None:
    """The compiled decoder builds files without DataFile's checks, so it makes them itself."""
    good = data_file(0)
    values = [value if f.name == field else getattr(good, f.name) for f in fields(DataFile)]
    bad = trusted_constructor(DataFile)(*values)  # a writer that did not check
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2, [good, bad])
    with pytest.raises((CorruptFile, ValidationError), match=message):
        list(read_manifest(file_io, manifest))


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("stats", STATS, ids=["all", "none", "col1", "col2_6", "sizes"])
def test_files_are_those_of_the_live_entries(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        version: int, stats: Stats, decoder: str) -> None:
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, version,
                      [data_file(i) for i in range(9)])  # every fourth one DELETED
    live = [e.data_file for e in read_manifest(file_io, manifest, stats=stats)
            if e.status is not EntryStatus.DELETED]
    blocks = list(read_manifest_blocks(file_io, manifest, stats=stats, discard_deleted=True))
    assert [e.data_file for block in blocks for e in block] == live
    files = list(read_manifest_files(file_io, manifest, stats=stats))
    assert [f for block in files for f in block] == live and len(live) == 7


@pytest.mark.parametrize("files_only", [False, True])
def test_maps_for_the_filter_alone_stay_only_with_undecided_files(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str, files_only: bool) -> None:
    """``Stats.for_columns(..., filter_only=True)``: the compiled readers (row by row here:
    the filter has no test of a whole block) pass the maps on only for files the filter leaves
    undecided (None); the generic reader keeps them all. The same files are kept either way."""
    files = [data_file(i) for i in range(12)]
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2, files)
    stats = Stats.for_columns({1, 2}, filter_only=True)
    verdicts = {0: True, 1: None, 2: False}  # by null count of column 2 (the file's number)

    def by_number(m: FileMetrics) -> bool | None:
        return verdicts[(m.null_value_counts or {})[2] % 3]

    expected = [f for f in (e.data_file for e in read_manifest(
        file_io, manifest, stats=Stats.for_columns({1, 2}), discard_deleted=True))
        if verdicts[(f.null_value_counts or {})[2] % 3] is not True]
    if files_only:
        got = [f for block in read_manifest_files(file_io, manifest, stats=stats,
                                                  metrics_filter=by_number) for f in block]
    else:
        got = [e.data_file for e in read_manifest(file_io, manifest, stats=stats,
                                                  metrics_filter=by_number,
                                                  discard_deleted=True)]
    undecided = [(f.null_value_counts or {})[2] % 3 == 1 for f in expected]
    assert 0 < sum(undecided) < len(expected) == len(got)
    if decoder == "generic":
        assert got == expected
    else:
        assert got == [f if unsure else _without(f, NO_STATS)
                       for f, unsure in zip(expected, undecided, strict=True)]
    # without a filter to decide them, every file keeps the maps
    kept = list(read_manifest(file_io, manifest, stats=stats, discard_deleted=True))
    assert [e.data_file for e in kept] == [
        e.data_file for e in read_manifest(file_io, manifest, stats=Stats.for_columns({1, 2}),
                                           discard_deleted=True)]


@pytest.mark.parametrize("settle", ["all", "some"])
def test_a_gate_that_settles_every_record_spares_the_metrics_filter(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        decoder: str, settle: str) -> None:
    """A partition filter returning SETTLED says every row of the file matches: the kernel's
    reader then skips the metrics filter of a block whose every kept record is settled (its
    files come out without the maps decoded for the filter alone); the generated Python
    reader (small blocks) and the generic one run it anyway. A block with records the gate
    only keeps is checked whole."""
    files = [data_file(i) for i in range(12)]
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, 2, files)
    called: list[int] = []

    def rejects_all(_: FileMetrics) -> bool:
        called.append(1)
        return True

    def gate(partition: tuple[Any, ...]) -> int:
        if settle == "all" or partition[0]:  # the even files
            return native.SETTLED
        return True

    got = [f for block in read_manifest_files(
        file_io, manifest, stats=Stats.for_columns({1}, filter_only=True),
        partition_filter=gate, metrics_filter=rejects_all) for f in block]
    if decoder == "kernel" and settle == "all":
        assert not called
        assert got == [_without(e.data_file, NO_STATS) for e in read_manifest(
            file_io, manifest, discard_deleted=True)]
    else:
        assert called and got == []


LEAN_CASES: dict[str, tuple[dict[str, Any], bool]] = {
    # a file among good ones, and whether the block passes the check at once
    "good": ({}, True),
    "equal offsets": ({"split_offsets": (4, 4, 90)}, True),
    "one offset": ({"split_offsets": (7,)}, True),
    "no offsets": ({"split_offsets": None}, True),
    "offsets falling": ({"split_offsets": (4, 90, 50)}, False),
    "negative count": ({"record_count": -1}, False),
    "negative size": ({"file_size_in_bytes": -1}, False),
    "position deletes": ({}, False),
}


@pytest.mark.parametrize("case", list(LEAN_CASES))
@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("files_only", [False, True])
def test_a_block_of_valid_data_files_is_checked_at_once(  # noqa: PLR0917 - fixtures
        file_io: ArrowFileIO, location: str, spec: PartitionSpec, schema: Schema,
        monkeypatch: pytest.MonkeyPatch, case: str, version: int, files_only: bool) -> None:
    """The kernel's reader checks a block of data files at once (record counts and sizes not
    negative, split offsets sorted within each file: those of the next file may start lower,
    no delete file's fields) and then builds them without the row-by-row checks; a block with
    any other file is checked row by row, which names a bad file. Either way the files are
    those the generated Python reader makes."""
    change, passes = LEAN_CASES[case]
    deletes = case == "position deletes"  # a manifest of delete files
    if deletes and version == 1:
        pytest.skip("v1 has no delete files")
    files = [data_file(i, content=FileContent.POSITION_DELETES if deletes else FileContent.DATA)
             for i in range(8)]  # split offsets (4, 1000 + i): each below the file's before
    values = {**{f.name: getattr(files[5], f.name) for f in fields(DataFile)}, **change}
    files[5] = trusted_constructor(DataFile)(*values.values())  # as a writer that did not check
    manifest = _write(file_io, f"{location}/m.avro", spec, schema, version, files,
                      ManifestContent.DELETES if deletes else ManifestContent.DATA)
    verdicts: list[bool] = []
    real = reader_module._valid_data_files

    def spy(block: Any) -> bool:
        verdicts.append(real(block))
        return verdicts[-1]

    monkeypatch.setattr(reader_module, "_valid_data_files", spy)
    monkeypatch.setattr(reader_module, "_COMPILED", {})

    def read() -> list[Any]:
        if files_only:
            return [f for block in read_manifest_files(file_io, manifest) for f in block]
        return list(read_manifest(file_io, manifest))

    monkeypatch.setattr(native, "MIN_RECORDS", 10**12)
    bad = case.startswith(("offsets", "negative"))
    if bad:
        with pytest.raises(CorruptFile, match=r"sorted ascending|cannot be negative"):
            read()
    else:
        expected = read()
    monkeypatch.setattr(native, "MIN_RECORDS", 0)
    if bad:
        named = rf"{re.escape(files[5].file_path)}: .*(sorted|negative)"
        with pytest.raises(CorruptFile, match=named):
            read()
    else:
        assert read() == expected
        assert any(f.split_offsets for f in (
            e if files_only else e.data_file for e in expected))
    assert verdicts == [passes]
