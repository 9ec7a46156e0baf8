"""Run the ``icepark`` command as a user would: a subprocess in a fresh folder, so that the
default catalog (SQLite in ./warehouse) lives in the test's own temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import icepark
from icepark.catalog import BaseCatalog

SRC = Path(__file__).resolve().parents[2] / "src"
Run = Callable[..., subprocess.CompletedProcess[str]]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no ICEPARK_* variables from the caller, HOME without a config."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ICEPARK_")}
    env.update({"PYTHONPATH": str(SRC), "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, "HOME": str(home)})
    env.update(extra)
    return env


@pytest.fixture
def icepark_cli(tmp_path: Path) -> Run:
    """``icepark_cli("tables", "db", env={...})`` runs the command in ``tmp_path``."""
    def run(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "icepark.cli", *args], cwd=tmp_path,
                              env=cli_env(tmp_path, **(env or {})), capture_output=True,
                              text=True, timeout=timeout, check=False)
    return run


@pytest.fixture
def default_catalog(tmp_path: Path) -> BaseCatalog:
    """The catalog the command uses in ``tmp_path`` without any configuration."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(exist_ok=True)
    return icepark.load_catalog("default", type="sql", uri=f"sqlite:///{warehouse}/catalog.db",
                                warehouse=str(warehouse))
