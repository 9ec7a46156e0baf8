"""Committing appends through a SQL catalog: icepark vs pyiceberg, same files, same run.

Two workloads, each on a fresh table in a SQLite catalog in a temporary folder:

* one append of N data-file records (default 100,000): writing the manifest, the manifest
  list, the new metadata JSON and swapping the catalog pointer;
* 100 successive appends of 10 files each (each a full commit with a metadata refresh).

pyiceberg uses ``update_snapshot().fast_append()`` with the same DataFile records; icepark is
measured with its fast append and with its default merge append (which compacts manifests once
100 have accumulated, so later reads stay fast). Times are best-of-``repeat`` wall seconds.

    PYTHONPATH=src:. python benchmarks/bench_commit.py [N]
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

from benchmarks.bench_manifest import (
    icepark_schema,
    pyiceberg_files,
    pyiceberg_schema,
    synthetic_files,
)
from icepark.catalog import load_catalog
from icepark.spec.manifest import DataFile
from icepark.table.snapshot.append import FastAppend, MergeAppend
from icepark.table.table import Table

SUCCESSIVE, PER_COMMIT = 100, 10


def _icepark_table(root: str) -> Table:
    catalog = load_catalog("bench", uri=f"sqlite:///{root}/icepark.db",
                           warehouse=f"{root}/icepark")
    catalog.create_namespace("db")
    schema, spec = icepark_schema()
    return catalog.create_table("db.t", schema, partition_spec=spec)


def _pyiceberg_table(root: str) -> Any:
    catalog = PySqlCatalog("bench", uri=f"sqlite:///{root}/pyiceberg.db",
                           warehouse=f"file://{root}/pyiceberg")
    catalog.create_namespace("db")
    schema, spec = pyiceberg_schema()
    return catalog.create_table("db.t", schema, partition_spec=spec)


def icepark_append(files: list[DataFile], merge: bool) -> Callable[[Table], None]:
    def run(table: Table) -> None:
        producer = (MergeAppend if merge else FastAppend)(table.io, table.metadata)
        table.commit(producer.append_files(files))
    return run


def pyiceberg_append(files: list[Any]) -> Callable[[Any], None]:
    def run(table: Any) -> None:
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for f in files:
                append.append_data_file(f)
    return run


def _best(setup: Callable[[str], Any], work: Callable[[Any], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as root:
            target = setup(root)
            gc.collect()
            start = time.perf_counter()
            work(target)
            best = min(best, time.perf_counter() - start)
    return best


def _successive(append: Callable[[list[Any]], Callable[[Any], None]],
                batches: list[list[Any]]) -> Callable[[Any], None]:
    def run(table: Any) -> None:
        for batch in batches:
            append(batch)(table)
    return run


def bench(n: int = 100_000, repeat: int = 3) -> list[tuple[str, float, float]]:
    """Rows of (workload, icepark seconds, pyiceberg seconds)."""
    files = synthetic_files(n)
    py_files = pyiceberg_files(files)
    small = synthetic_files(SUCCESSIVE * PER_COMMIT)
    batches = [small[i:i + PER_COMMIT] for i in range(0, len(small), PER_COMMIT)]
    py_small = pyiceberg_files(small)
    py_batches = [py_small[i:i + PER_COMMIT] for i in range(0, len(py_small), PER_COMMIT)]
    theirs_one = _best(_pyiceberg_table, pyiceberg_append(py_files), repeat)
    theirs_many = _best(_pyiceberg_table, _successive(pyiceberg_append, py_batches), 1)
    return [
        (f"one append of {n:,} files (fast append)",
         _best(_icepark_table, icepark_append(files, merge=False), repeat), theirs_one),
        (f"one append of {n:,} files (merge append)",
         _best(_icepark_table, icepark_append(files, merge=True), repeat), theirs_one),
        (f"{SUCCESSIVE} appends of {PER_COMMIT} files (fast append)",
         _best(_icepark_table, _successive(lambda b: icepark_append(b, merge=False), batches),
               1), theirs_many),
        (f"{SUCCESSIVE} appends of {PER_COMMIT} files (merge append)",
         _best(_icepark_table, _successive(lambda b: icepark_append(b, merge=True), batches),
               1), theirs_many),
    ]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print("| workload | icepark s | pyiceberg s | speed-up |")
    print("| --- | ---: | ---: | ---: |")
    for name, ours, theirs in bench(n):
        print(f"| {name} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.1f}x |")


if __name__ == "__main__":
    Path(tempfile.gettempdir()).mkdir(exist_ok=True)
    main()
