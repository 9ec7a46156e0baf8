"""Independent Spark actions of one operation run at once from the driver.

Spark schedules jobs submitted from different driver threads side by side: a merge-on-read
MERGE's position delete files and its new data files both read the persisted changes, and
neither needs the other, so each runs in a thread of its own and the shorter one costs no wall
time of its own (benchmarks/RESULTS.md, "icepark against the Java reference"). The threads are
PySpark's ``InheritableThread``: a job group or Connect tags set on the caller's thread (by which
:func:`icepark.spark.progress.track` finds the operation's jobs) carry over.

Every action runs to its end, failed or not, so that the caller can clean up what each one
wrote: :func:`run_together` returns an :class:`Outcome` per action.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pyspark.sql import SparkSession
from pyspark.util import InheritableThread

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What one action gave: its ``value``, or the ``error`` it raised."""

    value: T | None = None
    error: BaseException | None = None


def run_together(spark: SparkSession, actions: Sequence[Callable[[], Any]]
                 ) -> list[Outcome[Any]]:
    """Run ``actions`` at once (the last on this thread, the others on inheritable threads)
    and wait for all of them; their outcomes in order."""
    outcomes: list[Outcome[Any] | None] = [None] * len(actions)

    def run(i: int) -> None:
        try:
            outcomes[i] = Outcome(value=actions[i]())
        except BaseException as e:  # handed to the caller, which re-raises it
            outcomes[i] = Outcome(error=e)

    threads = [InheritableThread(run, args=(i,), session=spark)
               for i in range(len(actions) - 1)]
    for thread in threads:
        thread.start()
    try:
        if actions:
            run(len(actions) - 1)
    finally:
        for thread in threads:  # even when interrupted: their files must be known
            thread.join()
    return [o if o is not None else Outcome(error=RuntimeError("action did not run"))
            for o in outcomes]


__all__ = ["Outcome", "run_together"]
