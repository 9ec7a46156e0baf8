"""Run the ``icepark`` command as a user would, in a fresh folder, so that the default catalog
(SQLite in ./warehouse) lives in the test's own temporary directory.

Commands run in this process: :func:`icepark.cli.main.main` with the same argument list,
working directory and clean environment, stdout and stderr captured, ``SystemExit`` as the exit
code. Commands that start Spark (``ingest``, ``query``, ``count``, ``delete``, ``update``,
``quickstart``, ``create --from-file``) are given the test run's shared Spark session instead
of starting (and stopping) a JVM of their own: that start is most of a small command's time.
``icepark_cli(..., process=True)`` runs the command as a subprocess, with its own JVM, exactly
as a user runs it; the tests of what only a process shows (the JVM's console output kept off
the terminal, a closed pipe, the exit code of a whole run) use it."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tools.cluster import BRIEF_SUBMIT_ARGS

import icepark
from icepark.catalog import BaseCatalog

SRC = Path(__file__).resolve().parents[2] / "src"
Run = Callable[..., subprocess.CompletedProcess[str]]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no ICEPARK_* variables from the caller, HOME without a config,
    and JVM options for brief Spark drivers (:data:`tools.cluster.BRIEF_JVM`)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ICEPARK_")}
    env.update({"PYTHONPATH": str(SRC), "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, "HOME": str(home)})
    # the Spark drivers of these processes live a minute or two: C1 and the serial collector
    # (the README tour alone: 125 s instead of 143 s)
    env["PYSPARK_SUBMIT_ARGS"] = BRIEF_SUBMIT_ARGS
    env.update(extra)
    return env


SPARKLESS = frozenset({"namespaces", "tables", "create", "drop", "rename", "describe",
                       "schema", "history", "snapshots", "files", "properties",
                       "expire-snapshots", "metadata", "add-files", "migrate"})
"""Commands that never start Spark (``create`` unless ``--from-file``)."""
COMMANDS = SPARKLESS | {"ingest", "query", "count", "delete", "update", "quickstart",
                        "rewrite-data-files", "rewrite-manifests", "rewrite-deletes",
                        "remove-orphan-files", "compute-stats"}


def starts_spark(args: Sequence[str]) -> bool:
    """Whether ``icepark *args`` may start Spark (see the module docstring)."""
    command = next((a for a in args if a in COMMANDS), None)
    return command not in SPARKLESS or "--from-file" in args


def lent_session(session: Any) -> Callable[..., Any]:
    """A stand-in for :func:`icepark.cli.spark_session.started_session` that lends the
    command ``session`` (its ``--spark-conf`` settings applied, then restored) and leaves it
    running."""
    @contextlib.contextmanager
    def started(master: str, app_name: str, verbose: bool,
                conf: Mapping[str, str] | None = None) -> Iterator[Any]:
        saved = {key: session.conf.get(key, None) for key in conf or {}}
        for key, value in (conf or {}).items():
            session.conf.set(key, value)
        try:
            yield session
        finally:
            for key, value in saved.items():
                if value is None:
                    session.conf.unset(key)
                else:
                    session.conf.set(key, value)
    return started


def run_in_process(args: Sequence[str], cwd: Path, env: dict[str, str],
                   session: Any = None) -> subprocess.CompletedProcess[str]:
    """``icepark *args`` through :func:`icepark.cli.main.main`, as the subprocess would run;
    a command that starts Spark is lent ``session``."""
    from icepark.cli.main import main  # noqa: PLC0415 - the command under test

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        if session is not None:
            started = lent_session(session)
            patch.setattr("icepark.cli.spark_session.started_session", started)
            patch.setattr("icepark.cli.quickstart.run.started_session", started)
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


def run_process(args: Sequence[str], cwd: Path, env: dict[str, str],
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``icepark *args`` as a subprocess, with a JVM of its own when it starts Spark."""
    return subprocess.run([sys.executable, "-m", "icepark.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def icepark_cli(tmp_path: Path, request: pytest.FixtureRequest) -> Run:
    """``icepark_cli("tables", "db", env={...})`` runs the command in ``tmp_path``, in this
    process unless ``process=True``."""
    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
            process: bool = False) -> subprocess.CompletedProcess[str]:
        environment = cli_env(tmp_path, **(env or {}))
        if process:
            return run_process(args, tmp_path, environment, timeout)
        session = request.getfixturevalue("spark") if starts_spark(args) else None
        return run_in_process(args, tmp_path, environment, session)
    return run


@pytest.fixture
def default_catalog(tmp_path: Path) -> BaseCatalog:
    """The catalog the command uses in ``tmp_path`` without any configuration."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(exist_ok=True)
    return icepark.load_catalog("default", type="sql", uri=f"sqlite:///{warehouse}/catalog.db",
                                warehouse=str(warehouse))
