"""Table scans: snapshot selection, projection, manifest and file pruning, residuals, count()."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
import threading
from collections.abc import Callable, Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icepark.errors import CorruptFile, FileNotFound, NoSuchSnapshot, ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr, RowEvaluator, equal, parse
from icepark.io.avro import native
from icepark.io.fileio import ArrowFileIO, ArrowInputFile
from icepark.io.manifest.cache import MANIFEST_CACHE
from icepark.io.manifest.list_cache import forget_manifest_lists
from icepark.io.manifest.manifest import read_manifest_blocks, read_manifest_files
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.manifest import ManifestContent
from icepark.spec.metadata import SnapshotLogEntry
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMP,
    NestedField,
    PrimitiveType,
    StructType,
)
from icepark.table.change import updates as u
from icepark.table.scan import planner as planner_module
from icepark.table.scan import tasks as tasks_module
from icepark.table.scan.scan import TableScan, select_columns
from icepark.table.scan.tasks import FileScanTask
from tests.expressions.expr_strategies import expressions, nullable_values, transforms
from tests.table.scan_fixtures import (
    DAY_US,
    SCHEMA,
    ScanTable,
    file_of_rows,
    long_bounds,
    name_of,
    partition_of,
    unpartitioned,
)

# ------------------------------------------------------------------------ snapshot selection


@pytest.fixture
def history(tmp_path: Path) -> tuple[ScanTable, list[Snapshot]]:
    """Three appends: s1 adds a, s2 adds b, s3 adds c; tag t1 on s1, branch dev on s2."""
    t = ScanTable(tmp_path)
    snapshots = [t.append(t.file(name)) for name in ("a", "b", "c")]
    t.tag("t1", snapshots[0].snapshot_id)
    t.branch("dev", snapshots[1].snapshot_id)
    return t, snapshots


@pytest.mark.parametrize(("selector", "expected"), [
    ({}, {"a", "b", "c"}),
    ({"snapshot_id": 0}, {"a"}),
    ({"snapshot_id": 1}, {"a", "b"}),
    ({"ref": "t1"}, {"a"}),
    ({"ref": "dev"}, {"a", "b"}),
    ({"ref": "main"}, {"a", "b", "c"}),
])
def test_snapshot_selection(history: tuple[ScanTable, list[Snapshot]],
                            selector: dict[str, Any], expected: set[str]) -> None:
    t, snapshots = history
    if "snapshot_id" in selector:
        selector = {"snapshot_id": snapshots[selector["snapshot_id"]].snapshot_id}
    assert t.planned(**selector) == expected


def test_fluent_selection(history: tuple[ScanTable, list[Snapshot]]) -> None:
    t, snapshots = history
    scan = t.scan()
    assert {name_of(f.data_file) for f in scan.use_ref("t1").plan_files()} == {"a"}
    assert scan.use_snapshot(snapshots[1].snapshot_id).snapshot() == snapshots[1]
    assert scan.as_of(snapshots[0].timestamp_ms).snapshot() == snapshots[0]
    assert scan.snapshot() == snapshots[2]


def test_as_of_timestamp_uses_the_snapshot_log(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    s1, s2 = t.append(t.file("a")), t.append(t.file("b"))
    log = (SnapshotLogEntry(s1.snapshot_id, 1000), SnapshotLogEntry(s2.snapshot_id, 2000))
    md = replace(t.metadata, snapshot_log=log)
    assert TableScan(md, t.io, as_of_timestamp=1000).snapshot() == s1
    assert TableScan(md, t.io, as_of_timestamp=1999).snapshot() == s1
    assert TableScan(md, t.io, as_of_timestamp=2000).snapshot() == s2
    assert TableScan(md, t.io, as_of_timestamp=10**13).snapshot() == s2
    with pytest.raises(NoSuchSnapshot, match=r"No snapshot was current at 1970-01-01T00:00"):
        TableScan(md, t.io, as_of_timestamp=999)


@pytest.mark.parametrize(("selector", "message"), [
    ({"snapshot_id": 12345}, "Cannot find snapshot 12345"),
    ({"ref": "nope"}, "Cannot find branch or tag 'nope'"),
    ({"snapshot_id": 1, "ref": "main"}, "at most one of"),
    ({"ref": "main", "as_of_timestamp": 1}, "at most one of"),
])
def test_snapshot_selection_errors(history: tuple[ScanTable, list[Snapshot]],
                                   selector: dict[str, Any], message: str) -> None:
    t, _ = history
    with pytest.raises(ValidationError, match=message):
        t.scan(**selector)


def test_fluent_selector_conflicts(history: tuple[ScanTable, list[Snapshot]]) -> None:
    t, snapshots = history
    with pytest.raises(ValidationError, match="at most one of"):
        t.scan(snapshot_id=snapshots[0].snapshot_id).use_ref("dev")


def test_empty_table_plans_nothing(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    assert t.scan().snapshot() is None
    assert list(t.scan().plan_files()) == []
    assert t.scan(ref="main").plan_tasks() == []
    assert t.scan().count() == 0
    with pytest.raises(ValidationError, match="Cannot find column 'nope'"):
        list(t.scan(row_filter="nope = 1").plan_files())


# ------------------------------------------------------------------------ projection


def test_projection_selects_columns(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    assert t.scan().projection() == SCHEMA
    assert [f.name for f in t.scan().select("ts", "id").projection().fields] == ["id", "ts"]
    assert [f.name for f in t.scan().select("ID").with_case_sensitive(False)
            .projection().fields] == ["id"]
    assert t.scan().select("id", "ts").select("ts", "score").selected_fields == ("ts",)
    with pytest.raises(ValidationError, match="'nope'"):
        t.scan().select("nope").projection()


def test_projection_prunes_structs() -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(
        2, "point", StructType((NestedField.optional(3, "x", LONG),
                                NestedField.optional(4, "y", LONG)))))
    pruned = select_columns(schema, ["point.y"])
    assert str(pruned.find_type("point")) == str(StructType((NestedField.optional(4, "y", LONG),)))
    assert select_columns(schema, ["point"]).find_field(3).name == "x"


def test_time_travel_uses_the_snapshot_schema(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    old = t.append(t.file("a"))
    wider = Schema((*SCHEMA.fields, NestedField.optional(5, "extra", LONG)), 1)
    t.update(u.AddSchema(wider, 5), u.SetCurrentSchema(u.LAST_ADDED))
    t.append(t.file("b"))
    t.tag("old", old.snapshot_id)
    t.branch("dev", old.snapshot_id)
    assert "extra" not in [f.name for f in t.scan(snapshot_id=old.snapshot_id).projection().fields]
    assert "extra" not in [f.name for f in t.scan(ref="old").projection().fields]
    assert "extra" in [f.name for f in t.scan(ref="dev").projection().fields]
    assert "extra" in [f.name for f in t.scan().projection().fields]
    with pytest.raises(ValidationError, match="'extra'"):
        list(t.scan(snapshot_id=old.snapshot_id, row_filter="extra = 1").plan_files())
    assert t.planned(row_filter="extra IS NULL") == {"a", "b"}


# ------------------------------------------------------------------------ pruning


def _day(day: int) -> int:
    return day * DAY_US


PRUNING = [
    # (spec, files as (name, partition), filter, expected)
    (lambda b: b.identity("category"), [("a", ("a",)), ("b", ("b",)), ("n", (None,))],
     "category = 'a'", {"a"}),
    (lambda b: b.identity("category"), [("a", ("a",)), ("b", ("b",)), ("n", (None,))],
     "category IS NULL", {"n"}),
    (lambda b: b.identity("category"), [("a", ("a",)), ("b", ("b",)), ("n", (None,))],
     "category != 'a'", {"b"}),
    (lambda b: b.day("ts"), [("d1", (1,)), ("d2", (2,)), ("d3", (3,))],
     f"ts >= {_day(2) + 5} AND ts < {_day(3)}", {"d2"}),
    (lambda b: b.day("ts"), [("d1", (1,)), ("d2", (2,)), ("d3", (3,))],
     f"ts > {_day(2)}", {"d2", "d3"}),
    (lambda b: b.bucket("id", 4), [(f"b{i}", (i,)) for i in range(4)],
     "id = 7", {"b3"}),  # bucket[4](7) == 3
    (lambda b: b.truncate("category", 1), [("t-a", ("a",)), ("t-b", ("b",))],
     "category LIKE 'ab%'", {"t-a"}),
    (lambda b: b.truncate("id", 10), [("r0", (0,)), ("r10", (10,)), ("r20", (20,))],
     "id < 15", {"r0", "r10"}),
    (lambda b: b.day("ts").identity("category"),
     [("x", (1, "a")), ("y", (1, "b")), ("z", (2, "a"))],
     f"ts < {_day(2)} AND category = 'a'", {"x"}),
    (lambda b: b.identity("category"), [("a", ("a",)), ("b", ("b",))],
     "category = 'a' OR id = 3", {"a", "b"}),
]


@pytest.mark.parametrize(("spec", "files", "row_filter", "expected"), PRUNING)
def test_partition_pruning(tmp_path: Path, spec: Any, files: list[tuple[str, tuple[Any, ...]]],
                           row_filter: str, expected: set[str]) -> None:
    t = ScanTable(tmp_path, spec)
    for name, partition in files:  # one manifest per file: manifest pruning too
        t.append(t.file(name, partition))
    assert t.planned(row_filter=row_filter) == expected
    assert t.planned() == {name for name, _ in files}


def test_manifests_are_skipped_by_partition_summaries(tmp_path: Path, monkeypatch: Any) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a1", ("a",)), t.file("a2", ("a",)))
    t.append(t.file("b1", ("b",)))
    read: list[str] = []

    def spy(original: Any) -> Any:
        def reading(io: Any, manifest: Any, **kwargs: Any) -> Any:
            read.append(manifest.manifest_path)
            return original(io, manifest, **kwargs)
        return reading

    monkeypatch.setattr(planner_module, "read_manifest_blocks", spy(read_manifest_blocks))
    monkeypatch.setattr(planner_module, "read_manifest_files", spy(read_manifest_files))
    assert t.planned(row_filter="category = 'b'") == {"b1"}
    assert len(read) == 1


def test_partition_evolution_plans_old_files_with_their_spec(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)  # spec 0: identity(category)
    t.append(t.file("old-a", ("a",)), t.file("old-b", ("b",)))
    spec1 = t.evolve_spec(lambda b: b.day("ts"))
    t.append(t.file("new-d1", (1,), spec_id=spec1.spec_id),
             t.file("new-d2", (2,), spec_id=spec1.spec_id))
    assert t.planned() == {"old-a", "old-b", "new-d1", "new-d2"}
    assert t.planned(row_filter="category = 'a'") == {"old-a", "new-d1", "new-d2"}
    assert t.planned(row_filter=f"ts < {_day(2)}") == {"old-a", "old-b", "new-d1"}
    tasks = {name_of(x.data_file): x for x in t.scan(row_filter="category = 'a'").plan_files()}
    assert tasks["old-a"].spec_id == 0 and tasks["new-d1"].spec_id == spec1.spec_id
    assert tasks["old-a"].residual == ALWAYS_TRUE  # decided by the old spec's partition
    assert str(tasks["new-d1"].residual) == "category = 'a'"


def test_metrics_pruning(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned)
    t.append(t.file("low", **long_bounds(1, 0, 9)), t.file("high", **long_bounds(1, 10, 19)),
             t.file("unknown"), t.file("empty", records=0))
    assert t.planned() == {"low", "high", "unknown"}  # a file without rows is never read
    assert t.planned(row_filter="id = 15") == {"high", "unknown"}
    assert t.planned(row_filter="id < 0") == {"unknown"}
    assert t.planned(row_filter="id IS NULL") == set()  # id is required: always false
    assert t.planned(row_filter="id IN (3, 25)") == {"low", "unknown"}


def test_residuals(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, lambda b: b.day("ts"))
    t.append(t.file("d1", (1,)), t.file("d2", (2,)))
    row_filter = f"ts >= {_day(1) + 100} AND id > 5"
    residuals = {name_of(x.data_file): str(x.residual)
                 for x in t.scan(row_filter=row_filter).plan_files()}
    assert residuals == {"d1": f"ts >= {_day(1) + 100} AND id > 5", "d2": "id > 5"}
    assert all(x.residual == ALWAYS_TRUE for x in t.scan().plan_files())


def test_tasks_are_picklable_values(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a", **long_bounds(1, 0, 9)))
    t.row_delta(t.position_deletes("p"))
    [task] = t.scan(row_filter=equal("id", 3)).plan_files()
    assert pickle.loads(pickle.dumps(task)) == task
    assert [name_of(d) for d in task.delete_files] == ["p"]


def test_count_from_metadata(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a", ("a",), 10, **long_bounds(1, 0, 9)),
             t.file("b", ("b",), 20, **long_bounds(1, 10, 29)))
    assert t.scan().count() == 30
    assert t.scan(row_filter="category = 'a'").count() == 10  # no residual left
    assert t.scan(row_filter="id >= 10").count() == 20  # the metrics prove every row matches
    assert t.scan(row_filter="id >= 5").count() is None  # file a must be read
    assert t.scan(limit=7).count() == 7
    t.row_delta(t.position_deletes("p", ("a",)))
    assert t.scan().count() is None
    assert t.scan(row_filter="category = 'b'").count() == 20  # no delete applies to b


def test_plan_files_streams_manifests_in_order(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned)
    for i in range(6):
        t.append(t.file(f"f{i}"))
    scan = t.scan()
    names = [name_of(x.data_file) for x in scan.plan_files()]
    assert sorted(names) == [f"f{i}" for i in range(6)]
    iterator = scan.plan_files()
    next(iterator)
    assert isinstance(iterator, Generator)
    iterator.close()  # stopping early is fine (pending manifests are not read)


class _ParentOnlyIO(ArrowFileIO):
    """Refuses to open files outside the process that made it: planning workers decode the
    manifest bytes the planning process read."""

    def __init__(self) -> None:
        super().__init__()
        self.pid = os.getpid()

    def new_input(self, location: str) -> ArrowInputFile:
        if os.getpid() != self.pid:
            raise AssertionError(f"a worker opened {location}")
        return super().new_input(location)


def test_process_pool_plans_the_same_files(tmp_path: Path, monkeypatch: Any) -> None:
    t = ScanTable(tmp_path)
    for i in range(8):
        t.append(t.file(f"f{i}", ("a" if i % 2 else "b",), **long_bounds(1, i, i)))
    t.row_delta(t.equality_deletes("eq", ("a",)))
    monkeypatch.setattr(planner_module, "PROCESS_MIN_BYTES", 1)
    # the test process may run Spark's threads; the workers here only decode bytes
    monkeypatch.setattr(planner_module, "can_fork", lambda: True)
    monkeypatch.setattr(tasks_module, "can_fork", lambda: True)
    forked: list[bytes] = []
    real_unpickled = tasks_module._unpickled

    def unpickled(result: bytes) -> list[FileScanTask]:
        forked.append(result)
        return real_unpickled(result)

    monkeypatch.setattr(tasks_module, "_unpickled", unpickled)
    planner = TableScan(t.metadata, _ParentOnlyIO(), row_filter="id > 2").planner()
    planner.workers = 2
    snapshot = t.current()
    parallel = list(planner.plan(snapshot_manifests(t.io, snapshot)))
    assert len(forked) == 8  # every data manifest decoded by a worker
    planner.workers = 1
    sequential = list(planner.plan(snapshot_manifests(t.io, snapshot)))
    assert parallel == sequential
    assert {name_of(x.data_file) for x in parallel} == {f"f{i}" for i in range(3, 8)}
    assert all([name_of(d) for d in x.delete_files] == (["eq"] if x.partition == ("a",) else [])
               for x in parallel)
    lost = [m for m in snapshot_manifests(t.io, snapshot)
            if m.content is ManifestContent.DATA][-1]
    # files are never altered in place (spec): this test alters one, so what the sequential
    # plan left in the manifest cache must go
    MANIFEST_CACHE.clear()
    with open(lost.manifest_path, "r+b") as f:  # decoded in a worker: its error comes back
        f.truncate(os.path.getsize(lost.manifest_path) - 40)
    planner.workers = 2
    with pytest.raises(CorruptFile, match=lost.manifest_path):
        list(planner.plan(snapshot_manifests(t.io, snapshot)))
    os.remove(lost.manifest_path)  # read by the planning process: its error is raised there
    with pytest.raises(FileNotFound, match=lost.manifest_path):
        list(planner.plan(snapshot_manifests(t.io, snapshot)))


class _ThreadRecordingIO(ArrowFileIO):
    def __init__(self) -> None:
        super().__init__()
        self.readers: list[str] = []

    def new_input(self, location: str) -> ArrowInputFile:
        if "/metadata/" in location and location.endswith(".avro"):
            self.readers.append(threading.current_thread().name)
        return super().new_input(location)


@pytest.mark.parametrize("batches", [True, False])
def test_in_process_planning_reads_manifests_ahead_on_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: bool) -> None:
    """Manifests are read ahead on threads (remote ones, and any without numba); those on
    this machine's file system are read by the planning thread itself, in batches that
    another thread inflates (see tests/table/test_inflate_ahead.py)."""
    if not batches:
        monkeypatch.setattr(planner_module, "READ_IN_BATCHES", False)
    t = ScanTable(tmp_path)
    for i in range(5):
        t.append(t.file(f"f{i}", ("a",), **long_bounds(1, i, i)))
    file_io = _ThreadRecordingIO()
    planner = TableScan(t.metadata, file_io, row_filter="id >= 1").planner()
    planner.workers = 1
    manifests = snapshot_manifests(t.io, t.current())
    planned = [name_of(x.data_file) for x in planner.plan(manifests)]
    assert sorted(planned) == ["f1", "f2", "f3", "f4"]
    assert len(file_io.readers) == 5
    if batches and native.inflate_ahead() is not None:
        assert set(file_io.readers) == {threading.current_thread().name}
    else:
        assert all(name.startswith("icepark-read") for name in file_io.readers)


def _can_fork_here(_: object) -> bool:
    return tasks_module.can_fork()


def test_planning_does_not_fork_in_a_daemonic_worker() -> None:
    with multiprocessing.get_context("fork").Pool(1) as pool:  # its workers are daemonic
        assert pool.map(_can_fork_here, [0]) == [False]


def test_planning_forks_only_without_other_threads() -> None:
    started, release = threading.Event(), threading.Event()

    def wait() -> None:
        started.set()
        release.wait(10)

    thread = threading.Thread(target=wait)
    thread.start()
    started.wait(10)
    try:
        assert not tasks_module.can_fork()
        pids: Any = lambda i: [os.getpid()]  # noqa: E731 - the tasks are not looked at
        produced: list[Any] = list(tasks_module.map_tasks(pids, [1, 2, 3], 2))
        assert produced == [[os.getpid()]] * 3  # planned in this process
    finally:
        release.set()
        thread.join()


# ------------------------------------------------------------------------ errors


def test_missing_manifest_is_an_error_naming_it(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    t.append(t.file("b"))
    manifests = snapshot_manifests(t.io, t.current())
    lost = next(m for m in manifests if m.content is ManifestContent.DATA)
    os.remove(lost.manifest_path)
    with pytest.raises(FileNotFound, match=lost.manifest_path):
        list(t.scan().plan_files())


def test_missing_manifest_list_is_an_error_naming_it(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    snapshot = t.append(t.file("a"))
    assert snapshot.manifest_list is not None
    os.remove(snapshot.manifest_list)
    forget_manifest_lists()  # as a process that did not write it: the commit kept it decoded
    with pytest.raises(FileNotFound, match=snapshot.manifest_list):
        list(t.scan().plan_files())


@pytest.mark.parametrize(("row_filter", "message"), [
    ("nope = 3", "Cannot find column 'nope'"),
    ("id = 'abc'", "Cannot compare column 'id'"),
    ("ID = 3", "Cannot find column 'ID'"),
])
def test_bad_filters(tmp_path: Path, row_filter: str, message: str) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    with pytest.raises(ValidationError, match=message):
        list(t.scan(row_filter=row_filter).plan_files())
    assert t.planned(row_filter="ID = 3", case_sensitive=False) == {"a"}


def test_bad_split_options(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a"))
    with pytest.raises(ValidationError, match=r"read\.split\.target-size must be an integer"):
        t.scan(options={"read.split.target-size": "big"}).plan_tasks()
    with pytest.raises(ValidationError, match="must be at least 1, not 0"):
        t.scan().with_options(**{"read.split.planning-lookback": "0"}).plan_tasks()
    assert len(t.scan(options={"read.split.open-file-cost": "0"}).plan_tasks()) == 1


def test_filters_compose(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned)
    t.append(t.file("low", **long_bounds(1, 0, 9)), t.file("high", **long_bounds(1, 10, 19)))
    scan = t.scan().filter("id >= 5").with_filter(parse("id < 10"))
    assert {name_of(x.data_file) for x in scan.plan_files()} == {"low"}
    evaluator = RowEvaluator(SCHEMA, scan.row_filter)
    assert evaluator.eval((7, None, None, None)) and not evaluator.eval((12, None, None, None))


def test_v1_table(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, format_version=1)
    t.append(t.file("a", ("a",)), t.file("b", ("b",)))
    assert t.planned(row_filter="category = 'b'") == {"b"}
    assert t.scan().count() == 20


def test_spec_builder_is_unused_for_unpartitioned(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned)
    assert t.metadata.spec().is_unpartitioned
    assert PartitionSpecBuilder(SCHEMA).build().is_unpartitioned


# ------------------------------------------------------------------------ property


COLUMNS = [(f.name, f.field_type) for f in SCHEMA.fields
           if isinstance(f.field_type, PrimitiveType)]
ROWS = st.tuples(st.integers(-200, 200), nullable_values(STRING),  # truncate cannot overflow
                 nullable_values(TIMESTAMP), nullable_values(DOUBLE))


@st.composite
def partition_specs(draw: st.DrawFn) -> list[tuple[int, Transform]]:
    """Up to two partition fields as (source column ID, transform)."""
    fields: list[tuple[int, Transform]] = []
    for _ in range(draw(st.integers(0, 2))):
        column = draw(st.sampled_from(SCHEMA.fields))
        assert isinstance(column.field_type, PrimitiveType)
        transform = draw(transforms(column.field_type))
        if not any(source == column.field_id and (str(other) == str(transform) or (
                other.is_time and transform.is_time)) for source, other in fields):
            fields.append((column.field_id, transform))  # a spec has no redundant fields
    return fields


def _spec(fields: list[tuple[int, Transform]]) -> Callable[[PartitionSpecBuilder],
                                                            PartitionSpecBuilder]:
    def build(b: PartitionSpecBuilder) -> PartitionSpecBuilder:
        for i, (source_id, transform) in enumerate(fields):
            b = b.add(source_id, transform, f"p{i}_{transform.kind.value}")
        return b
    return build


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(first=partition_specs(), second=st.one_of(st.none(), partition_specs()),
       batches=st.lists(st.lists(ROWS, min_size=1, max_size=8), min_size=1, max_size=3),
       row_filter=expressions(COLUMNS))
def test_pruning_never_drops_a_matching_row(
        first: list[tuple[int, Transform]], second: list[tuple[int, Transform]] | None,
        batches: list[list[tuple[Any, ...]]], row_filter: Expr) -> None:
    """Each batch of rows is appended as files grouped by partition (the spec may evolve before
    the last batch); every file holding a row that matches the filter must be planned, and a
    planned file's residual must agree with the filter on each of its rows."""
    try:
        RowEvaluator(SCHEMA, row_filter)
    except ValidationError:
        return  # e.g. NaN tests on a non-float column do not bind
    with tempfile.TemporaryDirectory() as root:
        t = ScanTable(Path(root), _spec(first))
        rows_of: dict[str, list[tuple[Any, ...]]] = {}
        for b, batch in enumerate(batches):
            if second is not None and b == len(batches) - 1 and b > 0:
                t.evolve_spec(_spec(second))
            spec = t.metadata.spec()
            groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
            for row in batch:
                groups.setdefault(partition_of(SCHEMA, spec, row), []).append(row)
            files = []
            for g, rows in enumerate(groups.values()):
                name = f"b{b}-g{g}"
                rows_of[name] = rows
                files.append(file_of_rows(t.path(name), SCHEMA, spec, rows))
            t.append(*files)
        matches = RowEvaluator(SCHEMA, row_filter).eval
        tasks = {name_of(x.data_file): x for x in t.scan(row_filter=row_filter).plan_files()}
        for name, rows in rows_of.items():
            if any(matches(r) for r in rows):
                assert name in tasks, f"{name} holds a matching row but was pruned"
        for name, task in tasks.items():
            residual = RowEvaluator(SCHEMA, task.residual).eval
            assert all(residual(r) == matches(r) for r in rows_of[name]), task.residual
