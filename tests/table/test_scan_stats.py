"""Which column metrics planned files carry, and planning that does not decode the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icepark.io.avro import native
from icepark.io.fileio import ArrowFileIO
from icepark.spec.bounds import to_bytes
from icepark.spec.types import INT, LONG
from icepark.table.scan.incremental import IncrementalAppendScan
from icepark.table.scan.scan import presence_columns
from tests.table.scan_fixtures import ScanTable, long_bounds, name_of, unpartitioned

METRIC_NAMES = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                "distinct_counts", "lower_bounds", "upper_bounds")


def _full_metrics(i: int) -> dict[str, Any]:
    return {"column_sizes": {1: 10, 3: 20}, "value_counts": {1: 10, 3: 10},
            "null_value_counts": {1: 0, 3: 1}, "nan_value_counts": {4: 0},
            "lower_bounds": {1: to_bytes(LONG, i), 3: to_bytes(LONG, 0)},
            "upper_bounds": {1: to_bytes(LONG, i + 9), 3: to_bytes(LONG, 99)}}


def _table(tmp_path: Path) -> ScanTable:
    t = ScanTable(tmp_path)
    for i in range(6):
        t.append(t.file(f"f{i}", ("a" if i % 2 else "b",), **_full_metrics(i * 10)))
    return t


def test_full_scans_carry_no_column_metrics_unless_asked(tmp_path: Path) -> None:
    t = _table(tmp_path)
    tasks = list(t.scan().plan_files())
    assert len(tasks) == 6
    # nothing but the counts and bounds of column 2 (category, an identity partition source),
    # which these files have none of
    assert all(not getattr(x.data_file, n) for x in tasks for n in METRIC_NAMES)
    assert all(x.data_file.column_sizes is None for x in tasks)
    full = list(t.scan().plan_files(include_column_stats=True))
    assert [x.data_file.lower_bounds for x in full] == [
        _full_metrics(int(name_of(x.data_file)[1:]) * 10)["lower_bounds"] for x in full]
    assert all(x.data_file.column_sizes == {1: 10, 3: 20} for x in full)
    # the same files, tasks and residuals otherwise
    assert [(x.file_path, x.residual, x.partition) for x in tasks] == [
        (x.file_path, x.residual, x.partition) for x in full]


def test_stats_columns_asked_for_are_carried_too(tmp_path: Path) -> None:
    t = _table(tmp_path)
    tasks = list(t.scan(row_filter="id >= 25").plan_files(stats_columns=[3]))
    assert sorted(name_of(x.data_file) for x in tasks) == ["f2", "f3", "f4", "f5"]
    assert all(x.data_file.value_counts == {1: 10, 3: 10} for x in tasks)
    assert all(x.data_file.column_sizes is None for x in tasks)


def test_filtered_scans_carry_the_filter_columns_metrics(tmp_path: Path) -> None:
    t = _table(tmp_path)
    tasks = list(t.scan(row_filter="id >= 25 AND category = 'a'").plan_files())
    assert sorted(name_of(x.data_file) for x in tasks) == ["f3", "f5"]
    for x in tasks:
        f = x.data_file
        i = int(name_of(f)[1:]) * 10
        assert f.lower_bounds == {1: to_bytes(LONG, i)}
        assert f.upper_bounds == {1: to_bytes(LONG, i + 9)}
        assert (f.value_counts, f.null_value_counts, f.nan_value_counts) == ({1: 10}, {1: 0}, {})
        assert f.column_sizes is None and f.distinct_counts is None
    # count() still proves whole files from the metrics the tasks carry
    assert t.scan(row_filter="id >= 30").count() == 30
    assert t.scan(row_filter="id >= 35").count() is None


def test_equality_deletes_are_matched_by_data_metrics_without_a_filter(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    for i in range(4):
        t.append(t.file(f"f{i}", ("a",), **long_bounds(1, i * 10, i * 10 + 9)))
    t.row_delta(t.equality_deletes("eq", ("a",), **long_bounds(1, 12, 14)))
    tasks = {name_of(x.data_file): x for x in t.scan().plan_files()}
    assert {n for n, x in tasks.items() if x.delete_files} == {"f1"}
    assert tasks["f1"].data_file.lower_bounds == {1: to_bytes(LONG, 10)}
    assert tasks["f0"].data_file.column_sizes is None


def test_pruned_plans_equal_unpruned_plans_filtered(tmp_path: Path) -> None:
    t = _table(tmp_path)
    everything = {name_of(x.data_file) for x in t.scan().plan_files(include_column_stats=True)}
    for expr, expected in [("category = 'a'", {"f1", "f3", "f5"}),
                           ("id < 15", {"f0", "f1"}),
                           ("category = 'b' AND id > 30", {"f4"})]:
        assert t.planned(row_filter=expr) == expected <= everything


def test_identity_partition_sources_keep_their_counts(tmp_path: Path) -> None:
    """Readers tell from a file's counts whether it stores an identity partition source column
    (else the partition value fills it): those counts stay in planned files."""
    t = _table(tmp_path)  # partitioned by identity(category), column 2
    t.append(t.file("g", ("a",), value_counts={1: 5, 2: 5}, null_value_counts={2: 0},
                    column_sizes={2: 7}))
    tasks = {name_of(x.data_file): x.data_file for x in t.scan().plan_files()}
    assert tasks["g"].value_counts == {2: 5} and tasks["g"].null_value_counts == {2: 0}
    assert tasks["g"].column_sizes is None
    assert presence_columns(t.metadata, t.metadata.schema()) == frozenset({2})
    incremental = IncrementalAppendScan(t.metadata, t.io, t.current().parent_snapshot_id)
    [appended] = [x.data_file for x in incremental.plan_files_iter()]  # the same, appended
    assert appended.value_counts == {2: 5} and appended.column_sizes is None


@pytest.mark.parametrize("kernel", [False, True])
def test_filter_metrics_the_reader_decided_are_not_carried_unless_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: bool) -> None:
    """A filter the manifest reader tests itself (a comparison of a long column) leaves the
    planned files without its column's metrics, as the Java planner does, but for a file it
    could not decide (bounds of the column before it was promoted from int), which the
    evaluator tests; asked for, they are carried, and ``count()`` asks. (Decoded manifests
    kept in the manifest cache keep the maps: each scan filters them again.)"""
    monkeypatch.setattr(native, "MIN_RECORDS", 0 if kernel else 10**12)  # a block at once
    t = ScanTable(tmp_path, unpartitioned)
    t.io = ArrowFileIO({"io.manifest.cache-enabled": "false"})  # decoded by each scan
    promoted = {**_full_metrics(0), "lower_bounds": {1: to_bytes(INT, 40)},
                "upper_bounds": {1: to_bytes(INT, 49)}}
    t.append(*(t.file(f"f{i}", **_full_metrics(i * 10)) for i in range(6)),
             t.file("old", **promoted))
    scan = t.scan(row_filter="id >= 30")
    tasks = {name_of(x.data_file): x.data_file for x in scan.plan_files()}
    assert sorted(tasks) == ["f3", "f4", "f5", "old"]
    assert all(getattr(f, n) is None for name, f in tasks.items() if name != "old"
               for n in METRIC_NAMES)
    assert tasks["old"].lower_bounds == {1: to_bytes(INT, 40)}
    assert scan.filter_columns() == {1}
    asked = {name_of(x.data_file): x.data_file
             for x in scan.plan_files(stats_columns=scan.filter_columns())}
    assert sorted(asked) == sorted(tasks)
    assert all(f.lower_bounds == {1: to_bytes(LONG, int(name[1:]) * 10)}
               for name, f in asked.items() if name != "old")
    assert scan.count() == 40
    assert t.scan(row_filter="id >= 31").count() is None
