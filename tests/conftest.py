"""One shared local Spark session for the whole test run (Spark tests, the README tour)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from pyspark.sql import SparkSession

from icepark.spark.session import build_session

# Property tests check results, not speed: on a loaded machine (two xdist workers beside JVMs)
# generating inputs can take seconds, which must not fail them.
settings.register_profile("icepark", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("icepark")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(
        master="local[2]",
        app_name="icepark-tests",
        config={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )
    yield session
    session.stop()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Parameter IDs without memory addresses (``<object object at 0x...>``, a memoryview),
    so that every pytest-xdist worker collects the same test names."""
    text = repr(val)
    if " at 0x" in text:
        return f"{argname}={type(val).__name__}"
    return None


LONGEST_FIRST = ("tests/test_readme.py", "tests/connect/test_connect.py",
                 "tests/interop/test_java_reference_v3.py", "tests/spark/test_merge.py",
                 "tests/spark/test_compaction_safety.py",
                 "tests/cluster/test_cluster.py", "tests/spark/test_delete.py",
                 "tests/s3/test_s3_spark.py", "tests/spark/test_sql.py",
                 "tests/spark/test_write_native.py", "tests/cli/test_quickstart.py",
                 "tests/spark/test_datasource_read.py", "tests/interop/test_java_reference.py",
                 "tests/spark/test_streams.py", "tests/spark/test_changes.py")
"""The test files that take minutes (measured in full runs: the README tour alone about 4),
started before the others so that under ``make test`` (``pytest -n 2 --dist loadfile
--no-loadscope-reorder``) they run beside the many short files instead of last, on one worker
while the other waits. (xdist's default order, most tests first, left the three-test README
tour to the very end.)"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move :data:`LONGEST_FIRST` to the front, in its order; every other test keeps its own."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
