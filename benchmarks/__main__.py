"""Run every benchmark: ``make bench`` (or ``python -m benchmarks``) from the project root.

Each benchmark measures icepark and its baseline side by side in the same run and prints a
markdown table of times and ratios; copy the tables into benchmarks/RESULTS.md with the date.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ["bench_manifest", "bench_commit", "bench_concurrent_commits", "bench_planning",
              "bench_spark_write", "bench_spark_read", "bench_spark_delete"]


def main() -> None:
    chosen = sys.argv[1:] or BENCHMARKS
    for name in chosen:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"\n## {name}\n")
        sys.argv = [name]
        module.main()


if __name__ == "__main__":
    main()
