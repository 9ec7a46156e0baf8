"""Progress of Spark work through the Python API: ``ips.write`` and ``ips.delete`` take a
``progress`` callback, ``ips.track_progress`` reports any other Spark work (a read's action);
Spark Connect's progress handler and the status tracker's weak consistency are covered with
fakes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import icepark
import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.spark.progress import Progress, StageProgress, track


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> BaseCatalog:
    catalog = icepark.load_catalog("progress", type="sql",
                                   uri=f"sqlite:///{tmp_path}/catalog.db",
                                   warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    ips.configure(spark, catalog=catalog)
    return catalog


def _events(spark: SparkSession, n: int) -> Any:
    return spark.sql(f"SELECT id, IF(id % 5 = 0, 'spam', 'click') AS kind FROM range({n})")


@pytest.mark.spark
def test_write_and_delete_report_stages_tasks_and_what_was_written(
        spark: SparkSession, catalog: BaseCatalog) -> None:
    reports: list[Progress] = []
    table = ips.write(_events(spark, 1000).repartition(3), "db.events", create=True,
                      partition_by=["kind"], progress=reports.append)

    first, last = reports[0], reports[-1]
    assert (first.elapsed, first.stages, first.done) == (0.0, (), False)
    assert [r.done for r in reports].count(True) == 1 and last.done
    assert last.tasks > 0 and last.completed_tasks == last.tasks
    assert last.stages_done == len(last.stages)
    summary = table.current_snapshot().summary.properties  # type: ignore[union-attr]
    assert last.rows_written == int(summary["added-records"]) == 1000
    assert last.bytes_written == int(summary["added-files-size"])

    deleted: list[Progress] = []
    result = ips.delete(spark, "db.events", "id < 10", progress=deleted.append)
    assert result.deleted_rows == 10
    assert deleted[-1].done and deleted[-1].tasks > 0
    # copy-on-write: Spark's Parquet writer rewrote the other 990 rows, and counted them
    assert deleted[-1].rows_written == 990


@pytest.mark.spark
def test_track_progress_reports_a_reads_action(spark: SparkSession,
                                               catalog: BaseCatalog) -> None:
    ips.write(_events(spark, 100), "db.events", create=True)
    reports: list[Progress] = []
    with ips.track_progress(spark, reports.append):
        assert ips.read(spark, "db.events", row_filter="kind = 'spam'").count() == 20
    assert reports[-1].done and reports[-1].tasks > 0
    assert reports[-1].rows_written is None and reports[-1].bytes_written is None


@pytest.mark.spark
def test_a_failing_callback_is_warned_about_and_the_write_goes_on(
        spark: SparkSession, catalog: BaseCatalog) -> None:
    calls: list[Progress] = []

    def broken(report: Progress) -> None:
        calls.append(report)
        raise ValueError("no screen")

    with pytest.warns(RuntimeWarning, match="^icepark: the progress callback failed and is no "
                                            "longer called: ValueError: no screen$"):
        table = ips.write(_events(spark, 10), "db.events", create=True, progress=broken)
    assert len(calls) == 1
    assert ips.read(spark, table).count() == 10


# ----------------------------------------------------------------------------- fakes


@dataclass
class _Job:
    stageIds: tuple[int, ...]  # noqa: N815 - PySpark's name


@dataclass
class _Stage:
    numTasks: int  # noqa: N815
    numActiveTasks: int  # noqa: N815
    numCompletedTasks: int  # noqa: N815


class _StatusTracker:
    """PySpark's ``StatusTracker`` over fixed jobs and stages, with none active."""

    def __init__(self, jobs: dict[int, _Job], stages: dict[int, _Stage]) -> None:
        self.jobs, self.stages = jobs, stages

    def getJobIdsForGroup(self, group: str | None) -> list[int]:  # noqa: N802
        return list(self.jobs)

    def getActiveJobsIds(self) -> list[int]:  # noqa: N802
        return []

    def getActiveStageIds(self) -> list[int]:  # noqa: N802
        return []

    def getJobInfo(self, job: int) -> _Job | None:  # noqa: N802
        return self.jobs.get(job)

    def getStageInfo(self, stage: int) -> _Stage | None:  # noqa: N802
        return self.stages.get(stage)


class _Context:
    """A classic ``SparkContext`` without a JVM: its status store cannot be reached."""

    def __init__(self, tracker: _StatusTracker) -> None:
        self._tracker = tracker

    def statusTracker(self) -> _StatusTracker:  # noqa: N802
        return self._tracker

    def getLocalProperty(self, key: str) -> str | None:  # noqa: N802
        return None


class _Session:
    def __init__(self, context: _Context) -> None:
        self.sparkContext = context


def test_a_job_that_ends_between_two_polls_is_in_the_last_report() -> None:
    status = _StatusTracker({0: _Job((0,))}, {0: _Stage(2, 0, 2)})
    reports: list[Progress] = []
    with track(_Session(_Context(status)), reports.append, interval=3600):
        status.jobs[1] = _Job((1, 2))  # began and ended before any poll
        status.stages.update({1: _Stage(4, 0, 4), 2: _Stage(3, 0, 0)})
    assert [r.done for r in reports] == [False, True]
    assert reports[-1].stages == (StageProgress(1, "complete", 4, 4),
                                  StageProgress(2, "pending", 3, 0))  # job 0 came before
    assert (reports[-1].tasks, reports[-1].completed_tasks, reports[-1].stages_done) == (7, 4, 1)


@dataclass
class _ConnectStage:
    """``pyspark.sql.connect.shell.progress.StageInfo``."""

    stage_id: int
    num_tasks: int
    num_completed_tasks: int
    num_bytes_read: int
    done: bool


class _ConnectSession:
    """A Spark Connect session: no ``sparkContext``, progress handlers instead."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []

    @property
    def sparkContext(self) -> Any:  # noqa: N802
        raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED] sparkContext is not supported")

    def registerProgressHandler(self, handler: Any) -> None:  # noqa: N802
        self.handlers.append(handler)

    def removeProgressHandler(self, handler: Any) -> None:  # noqa: N802
        self.handlers.remove(handler)

    def progress(self, stages: Iterable[_ConnectStage], inflight: int) -> None:
        """What the client does with each progress message of the server."""
        for handler in self.handlers:
            handler(stages=list(stages), inflight_tasks=inflight, operation_id="op-1",
                    done=False)


def test_spark_connect_progress_comes_from_its_progress_handler() -> None:
    session = _ConnectSession()
    reports: list[Progress] = []
    with track(session, reports.append):
        assert len(session.handlers) == 1
        session.progress([_ConnectStage(0, 8, 3, 1_000, False)], inflight=2)
        session.progress([_ConnectStage(0, 8, 8, 4_000, True),
                          _ConnectStage(1, 2, 0, 0, False)], inflight=2)
    assert session.handlers == []
    assert [(r.completed_tasks, r.tasks, r.active_tasks, r.done) for r in reports] == [
        (0, 0, 0, False), (3, 8, 2, False), (8, 10, 2, False), (8, 10, 0, True)]
    assert reports[2].stages_done == 1 and reports[2].bytes_read == 4_000
