"""Run every benchmark: ``make bench`` (or ``python -m benchmarks``) from the project root;
``python -m benchmarks NAME... [--flag ...]`` runs the named ones, each with the flags given.

Each benchmark measures icepark and its baseline side by side in the same run and prints a
markdown table of times and ratios; copy the tables into benchmarks/RESULTS.md with the date.
"""

from __future__ import annotations

import importlib
import itertools
import sys

BENCHMARKS = ["bench_manifest", "bench_commit", "bench_concurrent_commits", "bench_planning",
              "bench_spark_write", "bench_spark_read", "bench_spark_delete",
              "bench_deletion_vectors", "bench_merge", "bench_compaction",
              "bench_orphans", "bench_stream_ingest", "bench_driver_overhead",
              "bench_s3", "bench_reference", "bench_distributed_planning",
              "bench_read_relations", "bench_float_stats", "bench_cached_write"]


def main() -> None:
    args = sys.argv[1:]
    names = list(itertools.takewhile(lambda a: not a.startswith("-"), args))
    flags = args[len(names):]
    for name in names or BENCHMARKS:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"\n## {name}\n")
        sys.argv = [name, *flags]
        module.main()


if __name__ == "__main__":
    main()
