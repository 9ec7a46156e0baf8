"""A child process of the crash and concurrency tests.

``python catalog_worker.py commit <kind> <warehouse> <worker> <count> <barrier dir>`` waits
for ``<barrier dir>/go``, commits ``count`` :class:`FakeAppend` changes to ``db.t`` and prints
the acknowledged keys and the number of attempts as JSON;
``python catalog_worker.py append <kind> <warehouse> <worker> <count> <barrier dir>`` does the
same with ``count`` real :meth:`Table.append` calls of a small Arrow batch of unique ids each,
printing the acknowledged ids and the number of commit attempts;
``python catalog_worker.py crash <kind> <warehouse>`` is killed with SIGKILL after writing its
metadata file and before the swap.

Its catalogs take no commit lock (``lock.enabled=false``): these writers race, to test the
compare-and-swap itself.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

import pyarrow as pa
from tools.concurrent_writers import count_attempts

from icepark.catalog.base import BaseCatalog
from icepark.errors import CommitFailed
from icepark.table.table import Table
from tests.catalog.catalog_helpers import OPTIMISTIC, FakeAppend, SetProperty, make_catalog


def _die(*args: object, **kwargs: object) -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(1)  # not reached


def main(argv: list[str]) -> int:
    mode, kind, warehouse = argv[1:4]
    catalog = make_catalog(kind, Path(warehouse), properties=OPTIMISTIC)
    table = catalog.load_table("db.t")
    if mode == "crash":
        if kind == "sql":  # the metadata file is written; the UPDATE never runs
            setattr(catalog, "_swap_pointer", _die)  # noqa: B010 - patching the instance
        else:  # the temporary file is written and fsynced; the link never happens
            setattr(os, "link", _die)  # noqa: B010
        table.commit(SetProperty("crashed"))
        return 1
    worker, count, barrier = argv[4], int(argv[5]), Path(argv[6])
    (barrier / f"ready-{worker}").touch()
    deadline = time.monotonic() + 120
    while not (barrier / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    if mode == "append":
        return _append(catalog, table, int(worker), count)
    acknowledged: list[str] = []
    attempts = 0
    error = None
    try:
        for i in range(count):
            key = f"w{worker}-{i}"
            change = FakeAppend(key)
            try:
                table.commit(change)
            finally:
                attempts += len(change.attempts)
            acknowledged.append(key)
    except CommitFailed as e:
        error = str(e)
    print(json.dumps({"acknowledged": acknowledged, "attempts": attempts, "error": error}))
    return 0


ROWS_PER_BATCH = 3


def _append(catalog: BaseCatalog, table: Table, worker: int, count: int) -> int:
    """``count`` appends of ``ROWS_PER_BATCH`` rows with ids unique to this worker."""
    attempts = count_attempts(catalog)
    acknowledged: list[int] = []
    error = None
    try:
        for i in range(count):
            ids = [(worker * count + i) * ROWS_PER_BATCH + j for j in range(ROWS_PER_BATCH)]
            table.append(pa.table({"id": pa.array(ids, pa.int64()),
                                   "name": [f"w{worker}-{i}"] * ROWS_PER_BATCH}))
            acknowledged += ids
    except CommitFailed as e:
        error = str(e)
    print(json.dumps({"acknowledged": acknowledged, "attempts": attempts[0], "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
