"""The quickstart's last step: the same aggregates from icepark (Spark), pyiceberg and DuckDB.

Each reader reports ``{"rows": N, "groups": {column: [[value, count], ...]}, "sums": {column:
total}}`` (the format of ``tools/peer_read.py``; group values sorted, null last). icepark's come
from a Spark read of the table; the peers' from ``tools/peer_read.py`` run as a subprocess,
because the peers are test-only dependencies that nothing under ``src/`` imports.

>>> ours = {"rows": 2, "groups": {"kind": [["a", 1], ["b", 1]]}, "sums": {"id": 3}}
>>> differences({"rows": 2, "groups": {"kind": [["a", 2]]}, "sums": {"id": 3}}, ours)
['group kind: [["a", 2]] vs [["a", 1], ["b", 1]]']
>>> differences({"error": "OSError: no such file"}, ours)
['OSError: no such file']
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import icepark
from icepark.cli.quickstart.report import Report
from icepark.cli.render import count
from icepark.errors import ValidationError

PEER_SCRIPT = Path(icepark.__file__).resolve().parents[2] / "tools" / "peer_read.py"
"""``tools/peer_read.py`` of the source checkout icepark runs from (absent when installed)."""


def sorted_groups(pairs: Sequence[tuple[Any, int]]) -> list[list[Any]]:
    return [[v, c] for v, c in sorted(pairs, key=lambda p: (p[0] is None, str(p[0])))]


def spark_aggregates(df: Any, group_by: Sequence[str], sums: Sequence[str]) -> dict[str, Any]:
    """The aggregates of a Spark ``DataFrame``, in one Spark job: counts and sums per
    combination of the ``group_by`` values, added up on the driver."""
    names = [f"`{c}`" for c in group_by]
    query = (f"SELECT {', '.join([*names, 'count(*)', *(f'sum(`{c}`)' for c in sums)])} "
             "FROM {df}" + (f" GROUP BY {', '.join(names)}" if names else ""))
    found = df.sparkSession.sql(query, df=df)
    combos = [tuple(r) for r in found.collect()]
    width = len(group_by)
    groups = {}
    for i, column in enumerate(group_by):
        counts: dict[Any, int] = {}
        for combo in combos:
            counts[combo[i]] = counts.get(combo[i], 0) + int(combo[width])
        groups[column] = sorted_groups(list(counts.items()))
    totals = {}
    for j, column in enumerate(sums):
        partial = [int(combo[width + 1 + j]) for combo in combos
                   if combo[width + 1 + j] is not None]
        totals[column] = sum(partial) if partial else None  # SQL: the sum of no values
    return {"rows": sum(int(combo[width]) for combo in combos), "groups": groups,
            "sums": totals}


def differences(found: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """What a peer's aggregates show differently from ours, briefly."""
    if "error" in found:
        return [str(found["error"])]
    out = [] if found.get("rows") == ours["rows"] else [
        f"{found.get('rows')} rows vs {ours['rows']}"]
    for part in ("groups", "sums"):
        for column, value in ours[part].items():
            theirs = found.get(part, {}).get(column)
            if theirs != value:
                out.append(f"{part[:-1]} {column}: {json.dumps(theirs)[:120]} vs "
                           f"{json.dumps(value)[:120]}")
    return out


def compare_peers(report: Report, metadata_location: str, ours: dict[str, Any], *,
                  group_by: Sequence[str], sums: Sequence[str],
                  script: Path = PEER_SCRIPT) -> tuple[bool | None, dict[str, Any]]:
    """Read the table through the peers and report each: (True if every peer that ran agrees
    with ``ours``, None if none ran; each peer's result)."""
    if not script.is_file():
        report.step("peers", f"skipped: {script.parent} not found (install the test extras "
                    "from a source checkout)", None, "skip")
        return None, {}
    command = [sys.executable, str(script), metadata_location,
               *(a for c in group_by for a in ("--group-by", c)),
               *(a for c in sums for a in ("--sum", c))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        results: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        message = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValidationError(
            f"{script} failed (exit {done.returncode}): {message}") from None
    agree: bool | None = None
    for name, found in sorted(results.items()):
        if "skipped" in found:
            report.step(name, f"skipped: {found['skipped']} (install the test extras)", None,
                        "skip")
            continue
        wrong = differences(found, ours)
        agree = not wrong and agree is not False
        detail = (f"{count(found['rows'], 'row')}, same counts per {' and '.join(group_by)}, same "
                  f"sum({', '.join(sums)})" if not wrong
                  else "DISAGREES with icepark: " + "; ".join(wrong))
        report.step(name, detail, found.get("seconds"), "fail" if wrong else "ok")
    return agree, results


__all__ = ["PEER_SCRIPT", "compare_peers", "differences", "spark_aggregates"]
