"""Fixtures of the catalog tests: a catalog of each kind in a fresh warehouse."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from icepark.catalog.base import BaseCatalog
from tests.catalog.catalog_helpers import KINDS, close, make_catalog


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user config file or ICEPARK_* variable leaks into a test."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ICEPARK_CONFIG", raising=False)
    for name in list(os.environ):
        if name.upper().startswith("ICEPARK_CATALOG__"):
            monkeypatch.delenv(name)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def catalog(kind: str, warehouse: Path) -> Iterator[BaseCatalog]:
    cat = make_catalog(kind, warehouse)
    yield cat
    close(cat)


@pytest.fixture
def sql_catalog(warehouse: Path) -> Iterator[BaseCatalog]:
    cat = make_catalog("sql", warehouse)
    yield cat
    close(cat)


@pytest.fixture
def fs_catalog(warehouse: Path) -> Iterator[BaseCatalog]:
    cat = make_catalog("filesystem", warehouse)
    yield cat
    close(cat)
