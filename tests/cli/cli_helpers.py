"""Helpers of the CLI tests."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``icepark: error: ...`` line of a failed run (no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("icepark: error: "), result.stderr
    return lines[0].removeprefix("icepark: error: ")


def json_out(result: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a successful ``--json`` run printed."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
