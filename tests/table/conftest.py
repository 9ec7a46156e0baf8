"""Fixtures of the table tests: an in-memory catalog double and a table in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.table.table import Table
from tests.table.committer import InMemoryCommitter, make_table


@pytest.fixture
def committer() -> InMemoryCommitter:
    return InMemoryCommitter()


@pytest.fixture
def table(committer: InMemoryCommitter, tmp_path: Path) -> Table:
    return make_table(committer, str(tmp_path / "t"))
