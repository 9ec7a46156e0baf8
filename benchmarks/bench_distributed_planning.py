"""Scan planning on the driver vs in Spark tasks (:mod:`icepark.spark.reader.planning`).

One table of ``--files`` data files (default 10,000,000) in ``--manifests`` manifests (1,000),
built once by :func:`benchmarks.bench_planning.build_table` and cached under
``/tmp/icepark-bench-planning``. Each scan of :data:`~benchmarks.bench_planning.FILTERS` (a full
scan, a partition predicate, a metrics-only predicate) is planned through
:func:`icepark.spark.reader.planning.plan_files` with the table's ``read.data-planning-mode``
set to ``local`` (the baseline: the driver decodes every manifest, in one process, as a Spark
driver must) and to ``distributed``, on ``local[2]`` and on a standalone cluster of two
one-core workers (:mod:`tools.cluster`). Each configuration runs in a fresh driver process;
the tasks are counted as they stream (a reader that lists them holds them either way). Times
are the best of ``--repeat``; peak RSS is the driver's Python process and its JVM (on
``local[2]`` the JVM also hosts the executors).

    PYTHONPATH=src:. python -m benchmarks bench_distributed_planning [--files N]
        [--manifests M] [--repeat R] [--no-cluster] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_planning import FILTERS, build_table, table_path

CACHE = "/tmp/icepark-bench-planning"
DRIVER_CONFIG = {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                 "spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "4"}


def _jvm_peak_mb(pid: int) -> float:
    """A process's peak resident set (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def driver(master: str, mode: str, metadata_file: str, repeat: int) -> dict[str, Any]:
    """Plan every scan ``repeat`` times in this (driver) process."""
    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415 - measured in its own process
    from icepark.spark.reader.planning import PLANNING_MODE, plan_files  # noqa: PLC0415
    from icepark.spark.session import build_session  # noqa: PLC0415
    from icepark.spec.serde.metadata_json import table_metadata_from_json  # noqa: PLC0415
    from icepark.table.scan.scan import TableScan  # noqa: PLC0415

    spark = build_session(master, "bench-planning", DRIVER_CONFIG)
    spark.range(1).count()  # executors registered and warm before timing
    with open(metadata_file) as f:
        md = table_metadata_from_json(f.read())
    io = ArrowFileIO()
    out: dict[str, Any] = {}
    for name, row_filter in FILTERS.items():
        times, count = [], 0
        for _ in range(repeat):
            scan = TableScan(md, io, row_filter or "true", options={PLANNING_MODE: mode})
            started = time.perf_counter()
            count = sum(1 for _ in plan_files(spark, scan))
            times.append(time.perf_counter() - started)
        out[name] = {"seconds": min(times), "first": times[0], "files": count}
    gateway = spark.sparkContext._gateway  # the driver JVM's process
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    process = getattr(gateway, "proc", None)
    out["jvm_rss_mb"] = _jvm_peak_mb(process.pid) if process is not None else 0.0
    spark.stop()
    return out


def run_driver(master: str, mode: str, metadata_file: str, repeat: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in ("src", ".", os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_distributed_planning", "--driver", master,
         mode, metadata_file, "--repeat", str(repeat)],
        check=False, capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"driver {master} {mode} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(results: dict[str, dict[str, dict[str, Any]]], files: int, manifests: int) -> None:
    print(f"{files:,} files in {manifests:,} manifests; best of the runs; ratio = driver-only "
          "time / distributed time (above 1: distributed is faster)\n")
    print("| master | scan | files planned | driver-only s | distributed s | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for master, by_mode in results.items():
        local, dist = by_mode["local"], by_mode["distributed"]
        for name in FILTERS:
            assert local[name]["files"] == dist[name]["files"], (master, name)
            print(f"| {master} | {name} | {local[name]['files']:,} | "
                  f"{local[name]['seconds']:.2f} | {dist[name]['seconds']:.2f} | "
                  f"{local[name]['seconds'] / dist[name]['seconds']:.2f}x |")
    print("\n| master | driver peak RSS, driver-only (Python + JVM) | distributed |")
    print("|---|---:|---:|")
    for master, by_mode in results.items():
        local, dist = by_mode["local"], by_mode["distributed"]
        print(f"| {master} | {local['rss_mb']:.0f} + {local['jvm_rss_mb']:.0f} MB | "
              f"{dist['rss_mb']:.0f} + {dist['jvm_rss_mb']:.0f} MB |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000_000)
    parser.add_argument("--manifests", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-cluster", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--driver", nargs=3, metavar=("MASTER", "MODE", "METADATA"))
    args = parser.parse_args()
    if args.driver:
        master, mode, metadata_file = args.driver
        print(json.dumps(driver(master, mode, metadata_file, args.repeat)))
        return
    os.makedirs(CACHE, exist_ok=True)
    metadata_file = build_table(table_path(CACHE, args.files, args.manifests), args.files,
                                args.manifests, workers=os.cpu_count() or 1)
    results: dict[str, dict[str, dict[str, Any]]] = {"local[2]": {}}
    for mode in ("local", "distributed"):
        results["local[2]"][mode] = run_driver("local[2]", mode, metadata_file, args.repeat)
        print(f"  local[2] {mode}: {results['local[2]'][mode]}", file=sys.stderr)
    if not args.no_cluster:
        from tools.cluster import standalone_cluster  # noqa: PLC0415 - only with a cluster

        with tempfile.TemporaryDirectory() as root, \
                standalone_cluster(Path(root), workers=2, cores=1, memory="3g") as cluster:
            cluster.await_workers()
            name = "cluster (2 workers x 1 core)"
            results[name] = {}
            for mode in ("local", "distributed"):
                results[name][mode] = run_driver(cluster.master, mode, metadata_file,
                                                 args.repeat)
                print(f"  cluster {mode}: {results[name][mode]}", file=sys.stderr)
    report(results, args.files, args.manifests)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
