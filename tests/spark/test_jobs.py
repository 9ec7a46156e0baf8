"""Actions run together (:mod:`icepark.spark.jobs`): every one runs to its end, their outcomes
come back in order, and a job group set on the caller's thread reaches the others' jobs."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql import SparkSession

from icepark.spark.jobs import run_together

pytestmark = pytest.mark.spark


def test_every_action_runs_to_its_end_and_comes_back_in_order(spark: SparkSession) -> None:
    threads: set[int] = set()

    def count(n: int) -> int:
        threads.add(threading.get_ident())
        return spark.range(n).count()

    def fail() -> None:
        raise ValueError("refused")

    outcomes = run_together(spark, [lambda: count(10), fail, lambda: count(20)])
    assert [o.value for o in outcomes] == [10, None, 20]
    assert isinstance(outcomes[1].error, ValueError)
    assert outcomes[0].error is None and outcomes[2].error is None
    assert len(threads) == 2  # the first on a thread of its own, the last on this one
    assert run_together(spark, []) == []


def test_the_callers_job_group_reaches_every_action(spark: SparkSession) -> None:
    context = spark.sparkContext
    context.setJobGroup("icepark-test-together", "run_together")
    try:
        run_together(spark, [lambda: spark.range(5).count(), lambda: spark.range(6).count()])
        jobs = context.statusTracker().getJobIdsForGroup("icepark-test-together")
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    assert len(jobs) >= 2
