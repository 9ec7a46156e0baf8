"""The progress bar of long Spark work: drawn in place on a terminal and cleared at the end,
never drawn when stderr is not a terminal, and silenced (with the status lines) by
``--quiet`` and ``--json``."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icepark.catalog import BaseCatalog
from icepark.cli.main import main
from icepark.cli.progress import ProgressBar, progress_bar
from icepark.spark.progress import Progress, StageProgress
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from tests.cli.conftest import cli_env, lent_session


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _report(elapsed: float, done: int, *, written: int | None = None,
            finished: bool = False) -> Progress:
    return Progress(elapsed, (StageProgress(0, "complete", tasks=2, completed_tasks=2),
                              StageProgress(1, "active", tasks=8, completed_tasks=done)),
                    bytes_written=written, done=finished)


def test_the_bar_is_redrawn_in_place_and_cleared_at_the_end() -> None:
    terminal = _Terminal()
    bar = progress_bar(terminal, "writing")
    assert isinstance(bar, ProgressBar)
    bar(Progress(0.0))
    bar(_report(1.5, 3))
    bar(_report(75.2, 8, written=2_500_000))
    bar(_report(76.0, 8, finished=True))
    first = "writing  0:00"
    second = "writing  stage 2/2  [##########..........] 5/10 tasks  0:01"
    third = "writing  stage 2/2  [####################] 10/10 tasks  2.5 MB written  1:15"
    assert terminal.getvalue() == (f"\r{first}\r{second}\r{third}\r{' ' * len(third)}\r")


def test_a_shorter_line_covers_the_longer_one_and_a_narrow_terminal_cuts_it() -> None:
    terminal = _Terminal()
    bar = ProgressBar("deleting", terminal, columns=30)
    bar(_report(1.0, 3))
    bar(Progress(2.0))
    assert terminal.getvalue() == ("\rdeleting  stage 2/2  [#######\r"
                                   f"deleting  0:02{' ' * 15}")


def test_no_bar_when_not_a_terminal_or_when_quiet() -> None:
    assert progress_bar(io.StringIO(), "writing") is None
    assert progress_bar(_Terminal(), "writing", shown=False) is None


def test_quiet_and_json_silence_the_status_lines(
        tmp_path: Path, default_catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    default_catalog.create_namespace("db")
    table = default_catalog.create_table("db.t", Schema.of(
        NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "kind": ["a", "b"]}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ICEPARK_CATALOG", raising=False)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)

    assert main(["query", "db.t", "--where", "id > 1"]) == 0
    out, _ = capsys.readouterr()
    assert out == "id  kind\n--  ----\n 2  b\n"
    shown = terminal.getvalue()
    assert shown.startswith("1 row in ") and shown.endswith(" s, read with Arrow\n")

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["query", "db.t", "--where", "id > 1", "--quiet"]) == 0
    assert main(["--quiet", "count", "db.t"]) == 0
    assert main(["count", "db.t", "--json"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("id  kind\n--  ----\n 2  b\n2\n{\n")
    assert terminal.getvalue() == ""


def _on_a_terminal(cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal: its exit code, stdout and what the
    terminal showed (line ends as ``\\n``)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "icepark.cli", *args], cwd=cwd,
                               env=cli_env(cwd), stdout=subprocess.PIPE, stderr=follower,
                               text=True)
    os.close(follower)
    shown: list[bytes] = []

    def pump() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the command ended
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=pump)
    reader.start()
    out, _ = process.communicate(timeout=600)
    reader.join(timeout=30)
    os.close(leader)
    return process.returncode, out, b"".join(shown).decode().replace("\r\n", "\n")


@pytest.mark.spark
def test_ingest_draws_a_bar_on_a_terminal_unless_quiet(
        tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "a.csv"
    data.write_text("id,kind\n1,click\n2,view\n3,click\n", encoding="utf-8")

    code, out, shown = _on_a_terminal(tmp_path, "ingest", "db.events", str(data))
    assert code == 0, shown
    assert out.startswith("db.events: snapshot ") and out.endswith(", 3 rows in total\n")
    # each bar is drawn at once, redrawn in place, and blanked before the next line
    assert "reading 1 csv file...\n\rreading  0:00" in shown
    bars, blank, last = shown[shown.index("\rwriting  0:00"):].rsplit("\r", 2)
    assert "\n" not in bars and blank.strip() == "" and len(blank) >= len("writing  0:00")
    assert last.startswith("wrote 1 file, 3 rows in ") and last.count("\n") == 1

    # --quiet, in this process (lent the shared session) with stderr on a terminal
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr("icepark.cli.spark_session.started_session", lent_session(spark))
    for key, value in cli_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", "db.events", str(data), "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert terminal.getvalue() == ""
    assert out.endswith(", 6 rows in total\n")
