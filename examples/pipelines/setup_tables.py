"""Create the example's catalog and table (``./warehouse``, ``db.events`` partitioned by day)
and land a few JSON files in ``./landing``; ``--more N`` lands N more files."""

import argparse
import json
from datetime import datetime, timedelta
from pathlib import Path

import icepark
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, NestedField

HERE = Path(__file__).resolve().parent
ROWS_PER_FILE = 100


def land(first_file: int, files: int) -> None:
    landing = HERE / "landing"
    landing.mkdir(exist_ok=True)
    start = datetime(2024, 3, 1)
    for n in range(first_file, first_file + files):
        with (landing / f"events-{n:04d}.json").open("w", encoding="utf-8") as out:
            for i in range(n * ROWS_PER_FILE, (n + 1) * ROWS_PER_FILE):
                kind = "spam" if i % 10 == 0 else "click"
                ts = (start + timedelta(minutes=10 * i)).isoformat()
                out.write(json.dumps({"id": i, "kind": kind, "ts": ts}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--more", type=int, default=0, help="land this many more files")
    args = parser.parse_args()
    warehouse = HERE / "warehouse"
    warehouse.mkdir(exist_ok=True)
    catalog = icepark.load_catalog("default", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                                   warehouse=str(warehouse))
    if not catalog.table_exists("db.events"):
        if not catalog.namespace_exists("db"):
            catalog.create_namespace("db")
        schema = Schema.of(NestedField.optional(1, "id", LONG),
                           NestedField.optional(2, "kind", STRING),
                           NestedField.optional(3, "ts", TIMESTAMPTZ))
        catalog.create_table("db.events", schema, partition_spec=["day(ts)"])
    landed = len(list((HERE / "landing").glob("*.json"))) if (HERE / "landing").exists() else 0
    land(landed, args.more or (0 if landed else 3))


if __name__ == "__main__":
    main()
