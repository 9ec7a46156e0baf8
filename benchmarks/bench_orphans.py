"""Orphan file removal over a table location holding many files: icepark's Spark job
(``icepark.spark.maintenance.orphans.remove_orphan_files``) and its driver-only form
(``icepark.table.maintenance.orphans.remove_orphan_files``) against the Java reference
runtime's ``CALL ref.system.remove_orphan_files(...)`` (Iceberg 1.10.2 on Spark 3.5) on an
identical copy of the table, and a floor: ``os.walk`` minus the files the metadata reaches
(``icepark.catalog.purge.reachable_files``), in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_orphans                     # 100k files
    PYTHONPATH=src:. python -m benchmarks bench_orphans --files 10000 --repeat 2

Two tables, ``db.ours`` and ``db.java``, are built the same way in one filesystem-catalog
warehouse that the reference opens as its ``hadoop`` catalog: ``--files`` one-byte data files
spread over ``--dirs`` directories ``data/p=<i>/`` (none is read: the metadata references them
through manifests written by ``append_data_files``, ``--files`` / 10 per append), plus
``--orphans`` unreferenced files among them and a few in ``metadata/`` (a manifest, a manifest
list, a metadata file). Every file is dated two days back (the reference's procedure refuses a
cutoff within the last day); the cutoff is one day ago.

Each run deletes the orphans, which are then written again (and backdated) before the next;
every engine must report exactly them (an ``AssertionError`` otherwise). Best of ``--repeat``
runs after one untimed warm-up run each, the engines in turns. Without the reference's
environment (``make javaref``) its row is left out. Ratio = reference (or floor) time / icepark
time: above 1.0, icepark is faster.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from icepark.catalog.filesystem import FilesystemCatalog
from icepark.catalog.purge import normalize_location, reachable_files
from icepark.spark.maintenance.orphans import remove_orphan_files
from icepark.spark.session import build_session
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, NestedField
from icepark.table.maintenance import orphans as table_orphans
from icepark.table.table import Table

DAY_S = 86_400
APPENDS = 10


def _backdate(paths: Any, days: float = 2) -> None:
    then = time.time() - days * DAY_S
    for path in paths:
        os.utime(path, (then, then))


def _build(catalog: FilesystemCatalog, name: str, files: int, dirs: int,
           orphans: int) -> tuple[Table, list[str]]:
    """A table referencing ``files`` tiny files, and the orphans beside them."""
    table = catalog.create_table(f"db.{name}", Schema.of(NestedField.required(1, "id", LONG)),
                                 format_version=2)
    data = Path(table.location) / "data"
    for d in range(dirs):
        (data / f"p={d}").mkdir(parents=True)
    paths = [str(data / f"p={i % dirs}" / f"{i:08d}.parquet") for i in range(files)]
    for path in paths:
        with open(path, "wb") as f:
            f.write(b"x")
    per = -(-files // APPENDS)
    for start in range(0, files, per):
        table.append_data_files([DataFile(p, FileFormat.PARQUET, (), 1, 1)
                                 for p in paths[start:start + per]])
    table.refresh()
    orphan_paths = [str(data / f"p={i % dirs}" / f"orphan-{i:06d}.parquet")
                    for i in range(orphans)]
    metadata = Path(table.location) / "metadata"
    orphan_paths += [str(metadata / f"{uuid.UUID(int=1)}-m0.avro"),
                     str(metadata / f"snap-1-1-{uuid.UUID(int=2)}.avro"),
                     str(metadata / f"{uuid.UUID(int=3)}.metadata.json")]
    _write_orphans(orphan_paths)
    _backdate(os.path.join(d, f) for d, _, names in os.walk(table.location) for f in names)
    return table, sorted(orphan_paths)


def _write_orphans(paths: list[str]) -> None:
    for path in paths:
        with open(path, "wb") as f:
            f.write(b"orphan")
    _backdate(paths)


def _walk_floor(table: Table, cutoff_ms: int) -> set[str]:
    """``os.walk`` the location and subtract the files the metadata reaches
    (:func:`icepark.catalog.purge.reachable_files`), then delete the rest."""
    referenced = {normalize_location(p) for p in reachable_files(
        table.io, table.metadata, table.metadata_location)}
    referenced.add(normalize_location(f"{table.location}/metadata/version-hint.text"))
    found = set()
    for d, _, names in os.walk(table.location):
        for n in names:
            path = os.path.join(d, n)
            if (not n.startswith((".", "_")) and path not in referenced
                    and os.stat(path).st_mtime * 1000 < cutoff_ms):
                found.add(path)
    for path in found:
        os.remove(path)
    return found


def _turns(works: Mapping[str, Callable[[], set[str]]], reset: Mapping[str, Callable[[], None]],
           repeat: int, expected: Mapping[str, set[str]]) -> dict[str, float]:
    names = list(works)
    for n in names:  # warm-up: JVMs, Python workers, file cache
        found = works[n]()
        assert found == expected[n], f"{n}: {len(found)} orphans, expected {len(expected[n])}"
        reset[n]()
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(repeat):
        shift = i % len(names)
        for n in names[shift:] + names[:shift]:
            start = time.perf_counter()
            found = works[n]()
            times[n].append(time.perf_counter() - start)
            assert found == expected[n], f"{n}: {len(found)} orphans"
            reset[n]()
    return {n: min(t) for n, t in times.items()}


def bench(files: int, dirs: int, orphans: int, repeat: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-orphans-"))
    warehouse = root / "warehouse"
    warehouse.mkdir()
    reference = None
    spark = build_session("local[2]", "icepark-bench-orphans",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "2g"})
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": str(warehouse)})
        catalog.create_namespace("db")
        start = time.perf_counter()
        built = {n: _build(catalog, n, files, dirs, orphans)
                 for n in ("ours", "table", "walk", "java")}
        build_s = time.perf_counter() - start
        try:
            from tools.javaref.client import JavaReference  # noqa: PLC0415 - optional peer

            reference = JavaReference(warehouse, root / "reference.log")
        except Exception as e:  # no `make javaref`: the floor alone
            print(f"(no Java reference: {e})")
        cutoff = datetime.now(UTC) - timedelta(days=1)
        cutoff_ms = int(cutoff.timestamp() * 1000)
        literal = cutoff.strftime("%Y-%m-%d %H:%M:%S")

        def ours() -> set[str]:
            result = remove_orphan_files(spark, built["ours"][0], older_than_ms=cutoff_ms)
            return set(result.orphan_file_locations)

        def table_only() -> set[str]:
            result = table_orphans.remove_orphan_files(built["table"][0],
                                                       older_than_ms=cutoff_ms)
            return set(result.orphan_file_locations)

        def java() -> set[str]:
            assert reference is not None
            found = reference.rows(f"CALL ref.system.remove_orphan_files(table => 'db.java', "
                                   f"older_than => TIMESTAMP '{literal}')")
            return {r["orphan_file_location"].removeprefix("file:") for r in found}

        works: dict[str, Callable[[], set[str]]] = {
            "icepark (Spark)": ours, "icepark (driver only)": table_only,
            "os.walk + set difference": lambda: _walk_floor(built["walk"][0], cutoff_ms)}
        keys = {"icepark (Spark)": "ours", "icepark (driver only)": "table",
                "os.walk + set difference": "walk", "Java reference": "java"}
        if reference is not None:
            works["Java reference"] = java
        expected = {n: set(built[keys[n]][1]) for n in works}
        reset = {n: (lambda k=keys[n]: _write_orphans(built[k][1])) for n in works}
        best = _turns(works, reset, repeat, expected)
        return {"best": best, "build": build_s,
                "version": reference.version if reference is not None else None}
    finally:
        if reference is not None:
            reference.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--orphans", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = bench(args.files, args.dirs, args.orphans, args.repeat)
    best = report["best"]
    print(f"{args.files:,} referenced files in {args.dirs} directories, {args.orphans:,} + 3 "
          f"orphans; tables built in {report['build']:.1f} s; Java reference: "
          f"{report['version'] or 'not run'}")
    print("| engine | seconds | ratio (engine / icepark Spark) |")
    print("|---|---:|---:|")
    ours = best["icepark (Spark)"]
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / ours:.2f}x |")


if __name__ == "__main__":
    main()
