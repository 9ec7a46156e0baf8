"""Progress of the Spark work of an action: its jobs' stages and tasks, reported to a callback.

``with track(spark, callback): ...`` reports :class:`Progress` snapshots of the Spark jobs that
run while the block runs: a first one at once (no stages known yet), then as the jobs go on,
and one last snapshot with ``done=True`` when the block ends (also when it fails). Where the
numbers come from:

* **Classic sessions**: a daemon thread polls Spark's status every ``interval`` seconds:
  the jobs started after the block began (the jobs of the caller's job group, or without one,
  found by ID, plus any job active meanwhile), their stages, and per stage the tasks done,
  running and in total (``SparkContext.statusTracker()``). Bytes read and written and rows
  written come from the driver's status store (the one behind Spark's UI and its REST API),
  which counts a task's metrics when the task ends; if this Spark does not offer that store,
  they are None. The callback runs on that thread.
* **Spark Connect** sessions have no ``sparkContext``; the server sends progress with each
  result (``SparkSession.registerProgressHandler``, Spark 4.0+): per stage the tasks done and
  in total, bytes read, and whether it is done, plus the tasks running. The callback runs on
  the thread that waits for the result.

Rows and bytes written by finished tasks are what Spark's own output metrics count (the files
Spark's Parquet writer writes); files written by Python tasks are not in them, so a writer
that knows what it wrote reports it through :meth:`Tracker.written`, and the last snapshot
carries those exact totals.

Progress is best effort: an error while polling ends the reports, never the action; a callback
that raises is warned about once and not called again.

>>> report = Progress(elapsed=42.0, stages=(
...     StageProgress(1, "complete", tasks=4, completed_tasks=4),
...     StageProgress(2, "active", tasks=8, completed_tasks=3, active_tasks=2),
...     StageProgress(3, "skipped", tasks=4)), active_tasks=2)
>>> report.tasks, report.completed_tasks, report.stages_done, len(report.stages)
(12, 7, 2, 3)
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

DEFAULT_INTERVAL = 0.5
"""Seconds between two polls of a classic session's status."""

_FINISHED = frozenset({"complete", "skipped"})


@dataclass(frozen=True, slots=True)
class StageProgress:
    """One stage: its status (``pending``, ``active``, ``complete``, ``skipped`` or
    ``failed``), its tasks, and the metrics of its finished tasks where Spark says them."""

    stage_id: int
    status: str
    tasks: int = 0
    completed_tasks: int = 0
    active_tasks: int = 0
    bytes_read: int | None = None
    bytes_written: int | None = None
    rows_written: int | None = None


@dataclass(frozen=True, slots=True)
class Progress:
    """A snapshot of an action's Spark work: every stage of its jobs so far (by ID), the tasks
    running, the seconds since it began, and rows and bytes written (None: not known)."""

    elapsed: float
    stages: tuple[StageProgress, ...] = ()
    active_tasks: int = 0
    rows_written: int | None = None
    bytes_written: int | None = None
    done: bool = False

    @property
    def tasks(self) -> int:
        """The tasks of the stages that run (skipped stages run none)."""
        return sum(s.tasks for s in self.stages if s.status != "skipped")

    @property
    def completed_tasks(self) -> int:
        return sum(s.completed_tasks for s in self.stages if s.status != "skipped")

    @property
    def stages_done(self) -> int:
        """Stages complete or skipped."""
        return sum(1 for s in self.stages if s.status in _FINISHED)

    @property
    def bytes_read(self) -> int | None:
        return _total(s.bytes_read for s in self.stages)


ProgressCallback = Callable[[Progress], None]
"""What ``progress=`` takes: called with each :class:`Progress` snapshot."""


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


class Tracker:
    """Reports the progress of the Spark work done between :meth:`start` and :meth:`stop`
    (use :func:`track`). Without a callback it does nothing."""

    def __init__(self, spark: Any, callback: ProgressCallback | None, *,
                 interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._spark, self._callback = spark, callback
        self._interval, self._clock = interval, clock
        self._begun = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._source: _Classic | _Connect | None = None
        self._written: tuple[int, int] | None = None
        self._last = Progress(0.0)

    def start(self) -> None:
        if self._callback is None:
            return
        self._begun = self._clock()
        context = spark_context(self._spark)
        try:
            if context is None:
                self._source = _Connect(self._spark, self._pushed)
            else:
                self._source = _Classic(context)
        except Exception:  # progress is best effort; the action goes on
            self._source = None
            return
        self._emit(self._last)  # the work has begun: nothing known of it yet
        if isinstance(self._source, _Classic):
            self._thread = threading.Thread(target=self._poll, name="icepark-progress",
                                            daemon=True)
            self._thread.start()

    def written(self, rows: int, size_bytes: int) -> None:
        """The exact rows and bytes the action wrote, once its files exist."""
        self._written = (rows, size_bytes)

    def stop(self) -> None:
        """Stop polling and report the last snapshot, with ``done=True``."""
        if self._callback is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        source = self._source
        if isinstance(source, _Classic):
            with contextlib.suppress(Exception):
                self._update(*source.poll(final=True))
        elif isinstance(source, _Connect):
            source.close()
        with self._lock:
            last = self._last
        self._emit(self._snapshot(last.stages, 0, done=True))

    # ------------------------------------------------------------------ internals

    def _poll(self) -> None:
        assert isinstance(self._source, _Classic)
        while not self._stop.wait(self._interval):
            try:
                stages, active = self._source.poll(final=False)
            except Exception:  # a stopped session, a gateway error: no more reports
                return
            if not self._stop.is_set():
                self._emit(self._update(stages, active))

    def _pushed(self, stages: tuple[StageProgress, ...], active: int) -> None:
        self._emit(self._update(stages, active))

    def _update(self, stages: tuple[StageProgress, ...], active: int) -> Progress:
        snapshot = self._snapshot(stages, active, done=False)
        with self._lock:
            self._last = snapshot
        return snapshot

    def _snapshot(self, stages: tuple[StageProgress, ...], active: int, *,
                  done: bool) -> Progress:
        rows: int | None
        size: int | None
        if done and self._written is not None:
            rows, size = self._written
        else:  # Spark's output metrics; 0 is "none counted", e.g. files written by Python
            rows = _total(s.rows_written for s in stages) or None
            size = _total(s.bytes_written for s in stages) or None
        return Progress(self._clock() - self._begun, stages, active, rows, size, done)

    def _emit(self, snapshot: Progress) -> None:
        callback = self._callback
        if callback is None:
            return
        try:
            callback(snapshot)
        except Exception as e:  # a broken callback must not fail the action
            self._callback = None
            warnings.warn(f"icepark: the progress callback failed and is no longer called: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)


@contextlib.contextmanager
def track(spark: Any, callback: ProgressCallback | None, *,
          interval: float = DEFAULT_INTERVAL) -> Iterator[Tracker]:
    """Report the progress of the Spark work of the ``with`` block to ``callback`` (nothing
    when it is None); see the module docstring."""
    tracker = Tracker(spark, callback, interval=interval)
    tracker.start()
    try:
        yield tracker
    finally:
        tracker.stop()


def spark_context(spark: Any) -> Any:
    """The session's ``SparkContext``; None for a Spark Connect session, which has none."""
    try:
        return spark.sparkContext
    except Exception:  # Connect raises its own "not supported" error
        return None


# ----------------------------------------------------------------------------- sources


class _Classic:
    """Stages of the jobs started since it was made, from a classic ``SparkContext``."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._status = context.statusTracker()
        self._store = _status_store(context)
        self._group = context.getLocalProperty("spark.jobGroup.id")
        self._first_job = max(self._status.getJobIdsForGroup(self._group), default=-1) + 1
        self._jobs: dict[int, tuple[int, ...]] = {}
        self._finished: dict[int, StageProgress] = {}

    def poll(self, *, final: bool) -> tuple[tuple[StageProgress, ...], int]:
        """The stages of this window's jobs and the tasks running. ``final`` also finds the
        caller's jobs that began and ended between two polls, once Spark's listeners have
        taken in the events of the work done (they run behind it)."""
        if final:
            _settled(self._context)
        active_jobs = set(self._status.getActiveJobsIds())
        found = active_jobs | (set(self._status.getJobIdsForGroup(self._group))
                               if final else set())
        for job in sorted(found):
            if job >= self._first_job and job not in self._jobs:
                info = self._status.getJobInfo(job)
                if info is not None:  # else not known yet: the next poll asks again
                    self._jobs[job] = tuple(info.stageIds)
        active_stages = set(self._status.getActiveStageIds())
        stage_ids = sorted({s for stages in self._jobs.values() for s in stages})
        stages = tuple(s for s in (self._stage(i, i in active_stages) for i in stage_ids)
                       if s is not None)
        return stages, sum(s.active_tasks for s in stages)

    def _stage(self, stage_id: int, active: bool) -> StageProgress | None:
        known = self._finished.get(stage_id)
        if known is not None:
            return known
        stage = self._from_store(stage_id) if self._store is not None else None
        if stage is None:
            stage = self._from_tracker(stage_id, active)
        if stage is not None and stage.status in _FINISHED:
            self._finished[stage_id] = stage
        return stage

    def _from_store(self, stage_id: int) -> StageProgress | None:
        try:
            data = self._store.lastStageAttempt(stage_id)
            return StageProgress(
                stage_id, str(data.status().toString()).lower(), tasks=data.numTasks(),
                completed_tasks=data.numCompletedIndices(), active_tasks=data.numActiveTasks(),
                bytes_read=data.inputBytes(), bytes_written=data.outputBytes(),
                rows_written=data.outputRecords())
        except Exception:  # not in the store (yet), or no such method here
            return None

    def _from_tracker(self, stage_id: int, active: bool) -> StageProgress | None:
        info = self._status.getStageInfo(stage_id)
        if info is None:
            return None
        tasks, done = info.numTasks, info.numCompletedTasks
        status = "complete" if 0 < tasks <= done else "active" if active else "pending"
        return StageProgress(stage_id, status, tasks=tasks, completed_tasks=min(done, tasks),
                             active_tasks=info.numActiveTasks)


def _status_store(context: Any) -> Any:
    """The driver's ``AppStatusStore`` (the data of Spark's UI), or None where this PySpark
    does not reach it."""
    try:
        return context._jsc.sc().statusStore()  # the only way to the store
    except Exception:
        return None


def _settled(context: Any, timeout_ms: int = 2000) -> None:
    """Wait until the driver's listener bus has delivered the events posted so far (at most
    ``timeout_ms``), so that the status store knows the jobs that just ended."""
    with contextlib.suppress(Exception):
        context._jsc.sc().listenerBus().waitUntilEmpty(timeout_ms)


class _Connect:
    """Progress a Spark Connect server sends with each result, as its handler receives it."""

    def __init__(self, spark: Any,
                 push: Callable[[tuple[StageProgress, ...], int], None]) -> None:
        self._spark, self._push = spark, push
        self._stages: dict[int, StageProgress] = {}
        spark.registerProgressHandler(self._handle)

    def _handle(self, stages: Iterable[Any] | None, inflight_tasks: int,
                operation_id: str | None = None, done: bool = False) -> None:
        del operation_id, done  # one operation's end is not the action's
        for stage in stages or ():
            self._stages[stage.stage_id] = StageProgress(
                stage.stage_id, "complete" if stage.done else "active",
                tasks=stage.num_tasks, completed_tasks=stage.num_completed_tasks,
                bytes_read=stage.num_bytes_read)
        ordered = tuple(self._stages[i] for i in sorted(self._stages))
        self._push(ordered, inflight_tasks)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._spark.removeProgressHandler(self._handle)


__all__ = ["DEFAULT_INTERVAL", "Progress", "ProgressCallback", "StageProgress", "Tracker",
           "spark_context", "track"]
