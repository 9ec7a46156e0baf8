"""Concurrent appenders: commit locks vs optimistic retries, same catalogs, same run.

For each catalog (SQLite, PostgreSQL started from the machine's binaries, the filesystem
catalog) and each number of writer processes (2, 4, 8, 16, 32), ``db.t`` is created with the
default table properties and every writer makes 20 small Arrow appends
(:mod:`tools.concurrent_writers`), once with the commit lock (the default) and once with
``lock.enabled=false`` (the reference's behaviour: optimistic commits, 4 retries with backoff).
Reported: commits per second (from the first writer's start to the last one's end), give-ups
(appends that raised ``CommitFailed``), commit attempts, median and worst append latency, and
whether the table holds every acknowledged row exactly once with a linear history.

    PYTHONPATH=src:. python -m benchmarks.bench_concurrent_commits \
        [--writers 2,4,8,16,32] [--catalogs sqlite,postgres,filesystem] [--appends 20]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator

from tools import postgres
from tools.concurrent_writers import RaceResult, race

MODES = {"lock": "true", "optimistic": "false"}


@contextlib.contextmanager
def _catalog(kind: str, mode: str, n: int) -> Iterator[dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="icepark-bench-") as root:
        props = {"name": f"b_{mode}_{n}", "warehouse": root, "lock.enabled": MODES[mode]}
        if kind == "filesystem":
            props["type"] = "filesystem"
        elif kind == "postgres":
            props["uri"] = _POSTGRES[0]
        yield props


_POSTGRES: list[str] = []


def _row(kind: str, n: int, results: dict[str, RaceResult]) -> str:
    lock, optimistic = results["lock"], results["optimistic"]
    ratio = lock.commits_per_second / optimistic.commits_per_second
    ok = "yes" if not lock.problems and not optimistic.problems else "NO"
    return (f"| {kind} | {n} | {lock.commits_per_second:.1f} | "
            f"{optimistic.commits_per_second:.1f} | **{ratio:.2f}x** | {lock.give_ups} | "
            f"{optimistic.give_ups} ({optimistic.give_ups / (n * optimistic.appends):.1%}) | "
            f"{lock.attempts} / {optimistic.attempts} | {lock.p50_ms:.0f} / "
            f"{optimistic.p50_ms:.0f} | {lock.max_ms:.0f} / {optimistic.max_ms:.0f} | {ok} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", default="2,4,8,16,32")
    parser.add_argument("--catalogs", default="sqlite,postgres,filesystem")
    parser.add_argument("--appends", type=int, default=20)
    args = parser.parse_args()
    writers = [int(w) for w in args.writers.split(",")]
    kinds = args.catalogs.split(",")
    with contextlib.ExitStack() as stack:
        if "postgres" in kinds:
            if postgres.available() is None:
                _POSTGRES.append(stack.enter_context(postgres.postgres_server()).url)
            else:
                print(f"(PostgreSQL skipped: {postgres.available()})")
                kinds.remove("postgres")
        print("| catalog | writers | commits/s, lock | commits/s, optimistic | ratio | "
              "give-ups, lock | give-ups, optimistic | attempts | p50 ms | max ms | "
              "every row once, linear |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for kind in kinds:
            for n in writers:
                results = {}
                for mode in MODES:
                    with _catalog(kind, mode, n) as props:
                        results[mode] = race(props, n, args.appends)
                print(_row(kind, n, results), flush=True)


if __name__ == "__main__":
    main()
