"""Scan planning on synthetic tables: icepark's TableScan vs pyiceberg 0.12, side by side.

Tables of 100,000 data files in 100 manifests (and, with ``--large``, 1,000,000 files in 1,000
manifests) are written once with icepark's ManifestWriter into a cache directory under /tmp and
reused by later runs. Every file has 8 columns with all the metrics Spark writes, a partition
``(day(c3), bucket[16](c1))`` and two split offsets; manifest ``m`` holds days ``m // 4`` to
``m // 4 + 3``, so partition summaries overlap a little, as after daily appends.

Three scans per table, each timed as the wall time to list every planned file (``plan_files``)
after the metadata is loaded, best of ``--repeat`` runs:

* full: no filter;
* partition: ``c3`` within three days, pruned by partition summaries and partition values;
* metrics: a range of ``c5``, a column that is not partitioned, so every manifest is read and
  only column bounds prune.

Each (library, table) pair runs in a fresh Python process, so the peak RSS it reports
(``resource.getrusage``; icepark's forked planning workers are reported separately) is its own.
icepark runs twice: as it plans by default (forked workers decode the manifests, one per CPU,
when a scan reads at least 4 MB of them and the process runs no other thread), and in one
process (``ICEPARK_PLANNING_WORKERS=1``), as it plans in a Spark driver. The "first" columns
are each scan's first run in that process: cold, before either library has cached anything
for it (icepark caches the decoders it generates per manifest layout, never decoded entries).

    PYTHONPATH=src:. python benchmarks/bench_planning.py [--large] [--repeat N] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

DAY_US = 86_400_000_000
BASE_DAY = 19723  # 2024-01-01
COLUMNS = 8
SNAPSHOT_ID = 3051729675574597004  # a random-looking 63-bit ID, as Java writes: 9-byte varints
FILTERS = {
    "full": None,
    "partition": "c3 >= '2024-01-11T00:00:00+00:00' AND c3 < '2024-01-14T00:00:00+00:00'",
    "metrics": "c5 >= 500000 AND c5 < 510000",
}
SIZES = {"100k": (100_000, 100), "1m": (1_000_000, 1_000)}


# ----------------------------------------------------------------------------- tables


def table_path(cache: str, files: int, manifests: int) -> str:
    return os.path.join(cache, f"v2-{files}-{manifests}")


def build_table(root: str, files: int, manifests: int) -> str:
    """Write the table (manifests, manifest list, metadata.json) unless cached; return the
    metadata file."""
    metadata_file = os.path.join(root, "metadata", "v1.metadata.json")
    if os.path.exists(os.path.join(root, "DONE")):
        return metadata_file
    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415 - only the parent writes tables
    from icepark.io.manifest.manifest import ManifestWriter  # noqa: PLC0415
    from icepark.io.manifest.manifest_list import write_manifest_list  # noqa: PLC0415
    from icepark.spec.manifest import DataFile, FileFormat  # noqa: PLC0415
    from icepark.spec.partitioning import PartitionSpecBuilder  # noqa: PLC0415
    from icepark.spec.schema import Schema  # noqa: PLC0415
    from icepark.spec.serde.metadata_json import table_metadata_to_json  # noqa: PLC0415
    from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef, Summary  # noqa: PLC0415
    from icepark.spec.types import (  # noqa: PLC0415
        DOUBLE,
        LONG,
        STRING,
        TIMESTAMPTZ,
        NestedField,
    )
    from icepark.table.change import updates as u  # noqa: PLC0415
    from icepark.table.change.metadata_builder import MetadataBuilder  # noqa: PLC0415

    started = time.perf_counter()
    io = ArrowFileIO()
    types = [LONG, STRING, TIMESTAMPTZ, DOUBLE, LONG, STRING, DOUBLE, LONG]
    schema = Schema.of(*(NestedField.optional(i + 1, f"c{i + 1}", t)
                         for i, t in enumerate(types)))
    md, _ = MetadataBuilder.new_table(
        schema, root, spec=PartitionSpecBuilder(schema).day("c3").bucket("c1", 16).build())
    schema, spec = md.schema(), md.spec()
    per_manifest = files // manifests
    written = []
    ids = range(1, COLUMNS + 1)
    for m in range(manifests):
        path = os.path.join(root, "metadata", f"m{m}.avro")
        with ManifestWriter(io, path, spec, schema, 2, snapshot_id=SNAPSHOT_ID) as writer:
            for j in range(per_manifest):
                i = m * per_manifest + j
                day = BASE_DAY + m // 4 + j % 4
                rows = 10_000 + i % 5000
                low = {c: struct.pack("<q", i * 10 + c) for c in ids}
                high = {c: struct.pack("<q", i * 10 + c + rows) for c in ids}
                low[3] = struct.pack("<q", day * DAY_US + j)
                high[3] = struct.pack("<q", day * DAY_US + DAY_US - 1 - j)
                writer.add_file(DataFile(
                    file_path=f"{root}/data/c3_day={day}/c1_bucket={i % 16}/"
                              f"00000-{i}-5f1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d.parquet",
                    file_format=FileFormat.PARQUET, partition=(day, i % 16),
                    record_count=rows, file_size_in_bytes=rows * 37,
                    column_sizes={c: rows * 4 + c for c in ids},
                    value_counts=dict.fromkeys(ids, rows),
                    null_value_counts={c: i % 3 for c in ids},
                    nan_value_counts={4: 0, 7: i % 2},
                    lower_bounds=low, upper_bounds=high,
                    split_offsets=(4, rows * 18), sort_order_id=0))
        written.append(writer.to_manifest_file())
    manifest_list = os.path.join(root, "metadata", f"snap-{SNAPSHOT_ID}.avro")
    write_manifest_list(io, manifest_list, 2, SNAPSHOT_ID, None, 1, written)
    snapshot = Snapshot(SNAPSHOT_ID, None, 1, md.last_updated_ms + 1, manifest_list,
                        Summary(Operation.APPEND), md.current_schema_id)
    md = MetadataBuilder(md).apply_all([
        u.AddSnapshot(snapshot), u.SetSnapshotRef("main", SnapshotRef.branch(SNAPSHOT_ID))
    ]).build()
    with open(metadata_file, "w") as f:
        f.write(table_metadata_to_json(md))
    with open(os.path.join(root, "DONE"), "w") as f:
        f.write("ok\n")
    print(f"  wrote {files:,} files in {manifests:,} manifests to {root} in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return metadata_file


# ----------------------------------------------------------------------------- workers


def icepark_planner(metadata_file: str) -> Callable[[str | None], int]:
    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415 - measured in its own process
    from icepark.spec.serde.metadata_json import table_metadata_from_json  # noqa: PLC0415
    from icepark.table.scan.scan import TableScan  # noqa: PLC0415

    with open(metadata_file) as f:
        md = table_metadata_from_json(f.read())
    io = ArrowFileIO()

    def plan(row_filter: str | None) -> int:
        scan = TableScan(md, io) if row_filter is None else TableScan(md, io, row_filter)
        return sum(1 for _ in scan.plan_files())

    return plan


def pyiceberg_planner(metadata_file: str) -> Callable[[str | None], int]:
    from pyiceberg.table import StaticTable  # noqa: PLC0415 - measured in its own process

    table = StaticTable.from_metadata(metadata_file)

    def plan(row_filter: str | None) -> int:
        scan = table.scan() if row_filter is None else table.scan(row_filter=row_filter)
        return sum(1 for _ in scan.plan_files())

    return plan


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (icepark's planning workers)."""
    own, children = (resource.getrusage(resource.RUSAGE_SELF),
                     resource.getrusage(resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def worker(library: str, metadata_file: str, repeat: int) -> dict[str, Any]:
    """Time every scan ``repeat`` times in this process; peak RSS at the end."""
    make = icepark_planner if library == "icepark" else pyiceberg_planner
    plan = make(metadata_file)
    out: dict[str, Any] = {}
    for name, row_filter in FILTERS.items():
        times, cpu, count = [], [], 0
        for _ in range(repeat):
            started, cpu_started = time.perf_counter(), _cpu_seconds()
            count = plan(row_filter)
            times.append(time.perf_counter() - started)
            cpu.append(_cpu_seconds() - cpu_started)
        out[name] = {"seconds": min(times), "cpu": min(cpu), "files": count,
                     "first": times[0]}
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["children_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


def run_worker(library: str, metadata_file: str, repeat: int, **environ: str
               ) -> dict[str, Any]:
    env = {**os.environ, **environ, "PYTHONPATH": os.pathsep.join(
        p for p in ("src", ".", os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", library, metadata_file, "--repeat", str(repeat)],
        check=True, capture_output=True, text=True, env=env)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ----------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true",
                        help="also the 1,000,000-file table (about a minute to write once)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", default="/tmp/icepark-bench-planning")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "METADATA"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.repeat)))
        return
    sizes = ["100k", "1m"] if args.large else ["100k"]
    rows: list[str] = []
    for size in sizes:
        files, manifests = SIZES[size]
        metadata_file = build_table(table_path(args.cache, files, manifests), files, manifests)
        runs = {"default": run_worker("icepark", metadata_file, args.repeat),
                "one process": run_worker("icepark", metadata_file, args.repeat,
                                          ICEPARK_PLANNING_WORKERS="1")}
        theirs = run_worker("pyiceberg", metadata_file, args.repeat)
        for name in FILTERS:
            b = theirs[name]
            for mode, ours in runs.items():
                a = ours[name]
                if a["files"] != b["files"]:
                    print(f"WARNING {size} {name}: icepark planned {a['files']} files, "
                          f"pyiceberg {b['files']}", file=sys.stderr)
                rows.append(f"| {files:,} / {manifests:,} | {name} | {mode} | {a['files']:,} | "
                            f"{a['seconds']:.2f} | {b['seconds']:.2f} | "
                            f"**{b['seconds'] / a['seconds']:.1f}x** | {a['cpu']:.2f} | "
                            f"{b['cpu']:.2f} | {b['cpu'] / a['cpu']:.1f}x | {a['first']:.2f} | "
                            f"{b['first']:.2f} | {b['first'] / a['first']:.1f}x |")
        for mode, ours in runs.items():
            workers = (f" (+ workers {ours['children_rss_mb']:.0f} each)"
                       if ours["children_rss_mb"] else "")
            rows.append(f"| {files:,} / {manifests:,} | peak RSS MB | {mode} | | "
                        f"{ours['rss_mb']:.0f}{workers} | {theirs['rss_mb']:.0f} "
                        f"| {theirs['rss_mb'] / ours['rss_mb']:.1f}x less | | | | | | |")
    print(f"\nScan planning, best of {args.repeat}: seconds to list the planned files "
          f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; CPU counts "
          "every thread and icepark's worker processes)\n")
    print("| files / manifests | scan | icepark planning | files planned | icepark wall "
          "| pyiceberg wall | speedup | icepark CPU | pyiceberg CPU | CPU ratio | icepark first "
          "| pyiceberg first | first-run speedup |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
