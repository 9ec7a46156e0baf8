"""The ``icepark`` command: argument parsing and rendering only.

Errors print one clear line (``icepark: error: ...``) and exit 1; ``--verbose`` shows the
traceback. Usage errors exit 2, as argparse does.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from icepark.errors import IcebergError
from icepark.spec.serde import table_metadata_from_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icepark", description="Apache Iceberg on PySpark")
    parser.add_argument("--verbose", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="create and evolve a table's metadata locally")
    demo.add_argument("--warehouse", type=Path, default=Path("warehouse"),
                      help="folder for the demo table (default: ./warehouse)")
    show = commands.add_parser("metadata", help="describe a table metadata JSON file")
    show.add_argument("path", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            from icepark.cli import demo  # noqa: PLC0415 - only this command needs it

            demo.run(args.warehouse, print)
        else:
            _describe(args.path)
    except (IcebergError, OSError) as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"icepark: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _describe(path: Path) -> None:
    md = table_metadata_from_json(path.read_bytes())
    print(f"format version {md.format_version}, table {md.table_uuid}")
    print(f"location {md.location}")
    print(f"schema {md.current_schema_id}:")
    for line in str(md.schema()).splitlines():
        print(f"  {line}")
    print(f"partition spec {md.default_spec_id}: {md.spec()}")
    print(f"sort order {md.default_sort_order_id}: {md.sort_order()}")
    current = md.current_snapshot()
    print(f"snapshots: {len(md.snapshots)}; current: "
          f"{current.snapshot_id if current else 'none'}")
    for name, ref in sorted(md.refs.items()):
        print(f"  {ref.ref_type} {name} -> {ref.snapshot_id}")


if __name__ == "__main__":
    sys.exit(main())
