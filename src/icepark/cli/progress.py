"""The progress bar of long Spark work: one line on stderr, redrawn in place.

:func:`progress_bar` gives a :data:`~icepark.spark.progress.ProgressCallback` that draws each
:class:`~icepark.spark.progress.Progress` report as one line, only when the stream is a
terminal and the command is neither ``--quiet`` nor ``--json``; the line is redrawn with a
carriage return and cleared when the work ends, so that what the command prints next starts on
a clean line.

>>> from icepark.spark.progress import Progress, StageProgress
>>> report = Progress(42.5, (StageProgress(1, "complete", tasks=4, completed_tasks=4),
...                          StageProgress(2, "active", tasks=8, completed_tasks=2)),
...                   active_tasks=2, bytes_written=1_300_000_000)
>>> bar_line("writing", report)
'writing  stage 2/2  [#####...............] 6/12 tasks  1.3 GB written  0:42'
>>> bar_line("reading", Progress(3.0))
'reading  0:03'
"""

from __future__ import annotations

import shutil
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from icepark.spark.progress import Progress, ProgressCallback

BAR_WIDTH = 20


def size_text(n: int) -> str:
    """Bytes in decimal units, as people read file sizes.

    >>> size_text(999), size_text(12_345), size_text(1_300_000_000)
    ('999 B', '12.3 kB', '1.3 GB')
    """
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def clock_text(seconds: float) -> str:
    """Elapsed time as ``m:ss`` or ``h:mm:ss``.

    >>> clock_text(42.9), clock_text(3725)
    ('0:42', '1:02:05')
    """
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def bar_line(label: str, report: Progress, width: int = BAR_WIDTH) -> str:
    """One report as a line: the stage running of those known, a bar of the tasks done, rows
    or bytes written (else read) where Spark counts them, and the time since the work began."""
    parts = [label]
    stages = len(report.stages)
    if stages and report.tasks:
        current = min(report.stages_done + 1, stages)
        filled = width * report.completed_tasks // report.tasks
        parts += [f"stage {current}/{stages}",
                  f"[{'#' * filled}{'.' * (width - filled)}] "
                  f"{report.completed_tasks:,}/{report.tasks:,} tasks"]
    if report.bytes_written:
        parts.append(f"{size_text(report.bytes_written)} written")
    elif report.rows_written:
        parts.append(f"{report.rows_written:,} rows written")
    elif report.bytes_read:
        parts.append(f"{size_text(report.bytes_read)} read")
    parts.append(clock_text(report.elapsed))
    return "  ".join(parts)


class ProgressBar:
    """Draws reports on ``stream`` in place (a callback for ``progress=``); clears the line on
    the last report. Reports may come from another thread."""

    def __init__(self, label: str, stream: TextIO, columns: int | None = None) -> None:
        self.label = label
        self._stream = stream
        self._columns = columns
        self._shown = 0
        self._lock = threading.Lock()

    def __call__(self, report: Progress) -> None:
        with self._lock:
            if report.done:
                self._clear()
                return
            columns = self._columns or shutil.get_terminal_size().columns
            line = bar_line(self.label, report)[:max(columns - 1, 0)]
            pad = " " * max(self._shown - len(line), 0)
            self._stream.write(f"\r{line}{pad}")
            self._stream.flush()
            self._shown = len(line)

    def _clear(self) -> None:
        if self._shown:
            self._stream.write(f"\r{' ' * self._shown}\r")
            self._stream.flush()
            self._shown = 0


def progress_bar(stream: TextIO, label: str, *, shown: bool = True) -> ProgressCallback | None:
    """A :class:`ProgressBar` on ``stream`` when progress is ``shown`` (not ``--quiet`` or
    ``--json``) and ``stream`` is a terminal; None (no progress tracking at all) otherwise."""
    isatty = getattr(stream, "isatty", None)
    if not shown or isatty is None or not isatty():
        return None
    return ProgressBar(label, stream)


__all__ = ["BAR_WIDTH", "ProgressBar", "bar_line", "clock_text", "progress_bar", "size_text"]
