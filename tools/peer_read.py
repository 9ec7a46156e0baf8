"""Read an Iceberg table through the peer engines (pyiceberg, DuckDB) and print aggregates.

Usage::

    python tools/peer_read.py METADATA_JSON [--group-by COLUMN]... [--sum COLUMN]...

Prints one JSON object with an entry per engine, ``{"pyiceberg": ..., "duckdb": ...}``. An
entry is ``{"rows": N, "groups": {COLUMN: [[value, count], ...]}, "sums": {COLUMN: total}}``
(group values sorted, null last), ``{"skipped": reason}`` when the engine is not installed, or
``{"error": message}`` when it could not read the table; a read also reports its
``seconds``. Both engines read the table from its
metadata file alone, the way the spec's *Table Metadata* section describes: "Table metadata is
stored as JSON. Each table metadata change creates a new table metadata file". Columns are
top-level names.

The peers are test-only dependencies of icepark (nothing under ``src/`` imports them), which is
why this runs as a separate script: ``icepark quickstart`` calls it when it is available.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Aggregates = dict[str, Any]


def _sorted_groups(pairs: list[tuple[Any, int]]) -> list[list[Any]]:
    return [[_plain(v), c] for v, c in sorted(pairs, key=lambda p: (p[0] is None, str(p[0])))]


def _plain(value: Any) -> Any:
    """A JSON-ready value: strings, numbers, booleans and null stay, anything else is text."""
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def read_pyiceberg(location: str, group_by: Sequence[str], sums: Sequence[str]) -> Aggregates:
    """The aggregates of the table at ``location`` as pyiceberg's ``StaticTable`` reads it."""
    import pyarrow.compute as pc  # noqa: PLC0415 - optional peer, imported when used
    from pyiceberg.table import StaticTable  # noqa: PLC0415

    columns = tuple(dict.fromkeys([*group_by, *sums])) or ("*",)
    arrow = StaticTable.from_metadata(location).scan(selected_fields=columns).to_arrow()
    groups = {}
    for column in group_by:
        counted = pc.value_counts(arrow.column(column)).to_pylist()
        groups[column] = _sorted_groups([(r["values"], r["counts"]) for r in counted])
    totals = {column: _plain(pc.sum(arrow.column(column)).as_py()) for column in sums}
    return {"rows": arrow.num_rows, "groups": groups, "sums": totals}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_duckdb(location: str, group_by: Sequence[str], sums: Sequence[str]) -> Aggregates:
    """The aggregates of the table at ``location`` as DuckDB's ``iceberg_scan`` reads it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.peers import duckdb_connection  # noqa: PLC0415 - optional peer

    source = "iceberg_scan('" + location.replace("'", "''") + "')"
    with duckdb_connection() as con:
        selected = ", ".join(["count(*)", *(f"sum({_quote(c)})" for c in sums)])
        first = con.execute(f"SELECT {selected} FROM {source}").fetchone()
        assert first is not None  # an aggregate always returns one row
        groups = {}
        for column in group_by:
            found = con.execute(
                f"SELECT {_quote(column)}, count(*) FROM {source} GROUP BY 1").fetchall()
            groups[column] = _sorted_groups([(v, int(c)) for v, c in found])
    totals = {c: _plain(int(v) if isinstance(v, int) else v)
              for c, v in zip(sums, first[1:], strict=True)}
    return {"rows": int(first[0]), "groups": groups, "sums": totals}


ENGINES: dict[str, Callable[[str, Sequence[str], Sequence[str]], Aggregates]] = {
    "pyiceberg": read_pyiceberg,
    "duckdb": read_duckdb,
}


def read_all(location: str, group_by: Sequence[str], sums: Sequence[str]) -> dict[str, Any]:
    """Each engine's aggregates, or why it was skipped or failed."""
    out: dict[str, Any] = {}
    for name, reader in ENGINES.items():
        start = time.perf_counter()
        try:
            out[name] = reader(location, group_by, sums)
            out[name]["seconds"] = round(time.perf_counter() - start, 3)
        except ImportError as e:
            out[name] = {"skipped": f"{name} is not installed ({e.name or e})"}
        except Exception as e:  # reported in the output: the caller decides
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("metadata", help="the table's metadata JSON file (path or URI)")
    parser.add_argument("--group-by", action="append", default=[], metavar="COLUMN",
                        help="count rows per value of this top-level column (repeatable)")
    parser.add_argument("--sum", action="append", default=[], metavar="COLUMN",
                        help="sum this numeric top-level column (repeatable)")
    args = parser.parse_args(argv)
    print(json.dumps(read_all(args.metadata, args.group_by, args.sum), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
