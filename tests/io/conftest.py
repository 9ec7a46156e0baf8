"""Fixtures of the io tests: a local FileIO, a nested schema and a partition spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.io.fileio import ArrowFileIO
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from tests.io.manifest_fixtures import NESTED_SCHEMA, PARTITION_SPEC


@pytest.fixture
def file_io() -> ArrowFileIO:
    return ArrowFileIO()


@pytest.fixture
def schema() -> Schema:
    return NESTED_SCHEMA


@pytest.fixture
def spec() -> PartitionSpec:
    PARTITION_SPEC.check_compatible(NESTED_SCHEMA)
    return PARTITION_SPEC


@pytest.fixture
def location(tmp_path: Path) -> str:
    """A directory for the test's files, as a ``file://`` URI."""
    return f"file://{tmp_path}"
