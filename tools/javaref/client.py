"""Drive the Java reference runtime (:mod:`tools.javaref.server`) from icepark's tests.

The server runs in ``.venv-javaref`` (``make javaref``), in a subprocess, with a ``hadoop``
catalog named ``ref`` over a warehouse that icepark opens as a ``FilesystemCatalog``: both
engines see the same tables. One server serves a whole test run.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-javaref"
SERVER = Path(__file__).with_name("server.py")
JAVA_OPTIONS = "JAVAREF_JAVA_OPTIONS"
"""The environment variable that passes more JVM options to the server."""


class ReferenceError(Exception):
    """The reference runtime refused a statement; ``kind`` is its Python exception class
    (``AnalysisException``, ``IllegalArgumentException``, ``Py4JJavaError``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def python_path() -> Path:
    """The reference environment's interpreter; a clear failure when it was never made."""
    python = VENV / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"The Java reference environment {VENV} does not exist: "
                           "run `make javaref` (make test does)")
    return python


class JavaReference:
    """One running reference session (see the server's docstring for the protocol)."""

    def __init__(self, warehouse: Path, log: Path, java_options: str = "") -> None:
        """``java_options``: more options of the reference's JVM (the tests' make it brief;
        benchmarks leave it as Spark starts it)."""
        python = python_path()
        env = {**os.environ, "TZ": "UTC", "PYSPARK_PYTHON": str(python),
               "PYSPARK_DRIVER_PYTHON": str(python), JAVA_OPTIONS: java_options}
        env.pop("PYTHONPATH", None)
        env.pop("SPARK_HOME", None)
        self.warehouse = warehouse
        self._log = log.open("ab")
        self._process = subprocess.Popen(
            [str(python), str(SERVER), str(warehouse)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, env=env, cwd=str(warehouse))
        ready = self._receive()
        self.version = str(ready.get("ready", ""))

    def _receive(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"The Java reference session ended; see {self._log.name}")
        response: dict[str, Any] = json.loads(line)
        return response

    def _call(self, request: dict[str, Any]) -> Any:
        assert self._process.stdin is not None
        self._process.stdin.write((json.dumps(request) + "\n").encode())
        self._process.stdin.flush()
        response = self._receive()
        if not response["ok"]:
            raise ReferenceError(response["error"], response["message"])
        return pickle.loads(base64.b64decode(response["result"]))

    def sql(self, statement: str) -> None:
        """Run a statement for its effect."""
        self._call({"sql": statement})

    def rows(self, query: str) -> list[dict[str, Any]]:
        """The rows of a query, as dicts of Python values."""
        result: list[dict[str, Any]] = self._call({"sql": query, "collect": True})
        return result

    def python(self, code: str) -> Any:
        """Run Python code with ``spark`` in scope in the reference session; the value it
        assigns to ``result`` comes back (for the Java API: ``spark._jvm``)."""
        return self._call({"python": code})

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()
