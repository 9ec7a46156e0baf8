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
