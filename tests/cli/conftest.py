"""Run the ``icepark`` command as a user would, in a fresh folder, so that the default catalog
(SQLite in ./warehouse) lives in the test's own temporary directory.

Commands that may start Spark (``ingest``, ``query``, ``count``, ``delete``, ``update``,
``quickstart``, ``create --from-file``) run as a subprocess, each with its own JVM, exactly as
a user runs them. The others only touch the catalog and metadata: they run in this process
(:func:`icepark.cli.main.main` with the same argument list, working directory and clean
environment, stdout and stderr captured, ``SystemExit`` as the exit code), which gives the same
result without two seconds of interpreter start and imports per call."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
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


IN_PROCESS = frozenset({"namespaces", "tables", "create", "drop", "rename", "describe",
                        "schema", "history", "snapshots", "files", "properties",
                        "expire-snapshots", "metadata", "add-files", "migrate"})
"""Commands that never start Spark (``create`` unless ``--from-file``)."""
COMMANDS = IN_PROCESS | {"ingest", "query", "count", "delete", "update", "quickstart"}


def in_process(args: Sequence[str]) -> bool:
    """Whether ``icepark *args`` can run in the test process (see the module docstring)."""
    command = next((a for a in args if a in COMMANDS), None)
    return command in IN_PROCESS and "--from-file" not in args


def run_in_process(args: Sequence[str], cwd: Path, env: dict[str, str]
                   ) -> subprocess.CompletedProcess[str]:
    """``icepark *args`` through :func:`icepark.cli.main.main`, as the subprocess would run."""
    from icepark.cli.main import main  # noqa: PLC0415 - the command under test

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for key in list(os.environ):
            if key not in env:
                patch.delenv(key)
        for key, value in env.items():
            patch.setenv(key, value)
        patch.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 1
    return subprocess.CompletedProcess(["icepark", *args], code, out.getvalue(),
                                       err.getvalue())


@pytest.fixture
def icepark_cli(tmp_path: Path) -> Run:
    """``icepark_cli("tables", "db", env={...})`` runs the command in ``tmp_path``."""
    def run(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        environment = cli_env(tmp_path, **(env or {}))
        if in_process(args):
            return run_in_process(args, tmp_path, environment)
        return subprocess.run([sys.executable, "-m", "icepark.cli", *args], cwd=tmp_path,
                              env=environment, capture_output=True, text=True,
                              timeout=timeout, check=False)
    return run


@pytest.fixture
def default_catalog(tmp_path: Path) -> BaseCatalog:
    """The catalog the command uses in ``tmp_path`` without any configuration."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(exist_ok=True)
    return icepark.load_catalog("default", type="sql", uri=f"sqlite:///{warehouse}/catalog.db",
                                warehouse=str(warehouse))
