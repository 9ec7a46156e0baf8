"""Deletion vectors (v3) against position delete files (v2) deleting the same rows: the
merge-on-read delete that writes them and full reads through the Spark and Arrow readers, all
in the same run and Spark session.

    PYTHONPATH=src:. python -m benchmarks bench_deletion_vectors            # 20M rows, 20 files
    PYTHONPATH=src:. python -m benchmarks bench_deletion_vectors --rows 1000000 --files 4

Two tables, format version 2 and 3, both ``write.delete.mode=merge-on-read``, get the same
Arrow batches appended in the same order (bench_spark_delete's schema and rows, one data file
per append), so their data files hold the same rows in the same layout. ``delete_rows(spark,
table, "k < 10000")`` then deletes the same ~1% of rows, spread over every file: position
delete files on v2, one deletion vector per data file (Puffin) on v3. Each delete is timed end
to end after one untimed warm-up delete of each table, the two tables in turns, and rolled
back between runs as in bench_spark_delete; the last run's deletes stay for the reads.

Reads, each timed end to end (planning included), after one untimed warm-up of each variant,
best of ``--repeat`` runs taken in turns:

* Spark reader, ``read(spark, table).count()`` (Spark prunes every column);
* Spark reader, ``count(*), sum(id), sum(v)`` (two columns materialized);
* Arrow reader, ``table.scan(selected_fields=("id", "v")).to_arrow_batch_reader()``, summing
  both columns batch by batch.

Each reader is timed on the v2 table (position deletes), the v3 table (deletion vectors) and the
v2 table at the snapshot before the delete (the same reader with nothing to apply), beside a
baseline that reads the data files without any deletes: ``spark.read.parquet`` for Spark, as
bench_spark_read does, and ``pyarrow.parquet`` for Arrow. Both tables must give the same count
and sums (and the same as the other reader, and the baseline's count minus the deleted rows):
an ``AssertionError`` otherwise.

A micro-benchmark decodes 200,000 deleted positions (1% of a 20M-row file, random, fixed
seed) into the sorted numpy array the Arrow reader applies (``DeleteCache.positions``, a
fresh cache each run): from one deletion vector (Puffin blob read, CRC, Roaring bitmap to
numpy) and from one position delete file written as the v2 delete writes them.

Ratios are position-delete time / deletion-vector time: above 1.0, deletion vectors are faster.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.bench_spark_delete import FILTER, SCHEMA, _rows
from icepark.catalog import load_catalog
from icepark.io.arrow.deletes import DeleteCache
from icepark.io.parquet.delete_writer import PositionDeleteWriter
from icepark.io.puffin.deletion_vector import write_deletion_vectors
from icepark.spark.reader.read import read
from icepark.spark.rowlevel.delete import DeleteResult, delete_rows
from icepark.spark.session import build_session
from icepark.spec.manifest import DataFile
from icepark.table.table import Table

POSITIONS, POSITION_SPACE = 200_000, 20_000_000
MICRO_RUNS = 20
SUMMED = ("id", "v")
VARIANTS = ("baseline", "no deletes", "position deletes", "deletion vectors")


@dataclass(frozen=True, slots=True)
class ReadCase:
    """One query timed four ways: seconds and answer by variant (:data:`VARIANTS`)."""

    reader: str
    query: str
    baseline: str
    best: Mapping[str, float]
    answers: Mapping[str, tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Report:
    rows: int
    files: int
    deleted: int
    write: Mapping[str, float]  # "v2", "v3": best delete seconds
    added: Mapping[str, tuple[int, int, int]]  # delete records, distinct files, bytes
    reads: Sequence[ReadCase]
    micro: Mapping[str, Any]
    load: tuple[float, float]


def _turns(works: Mapping[str, Callable[[], Any]], repeat: int
           ) -> tuple[dict[str, float], dict[str, Any]]:
    """Best time and last answer of each work: one untimed warm-up run each, then ``repeat``
    rounds, the order rotating every round so all see the same machine load."""
    names = list(works)
    answers = {n: works[n]() for n in names}
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(repeat):
        shift = i % len(names)
        for n in names[shift:] + names[:shift]:
            start = time.perf_counter()
            answers[n] = works[n]()
            times[n].append(time.perf_counter() - start)
    return {n: min(t) for n, t in times.items()}, answers


def _snapshot_id(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def _rollback(table: Table, snapshot_id: int) -> None:
    table.manage_snapshots().rollback_to_snapshot(snapshot_id).commit()
    table.refresh()


def _time_deletes(spark: Any, tables: Mapping[str, Table], bases: Mapping[str, int],
                  repeat: int) -> tuple[dict[str, float], dict[str, DeleteResult]]:
    """Best ``delete_rows`` time per table, in turns; the last run's deletes are kept."""
    for name, table in tables.items():  # warm-up: JVM code, Python workers, file cache
        delete_rows(spark, table, FILTER)
        _rollback(table, bases[name])
    times: dict[str, list[float]] = {n: [] for n in tables}
    results: dict[str, DeleteResult] = {}
    names = list(tables)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            results[name] = delete_rows(spark, tables[name], FILTER)
            times[name].append(time.perf_counter() - start)
            if i < repeat - 1:
                _rollback(tables[name], bases[name])
            else:
                tables[name].refresh()
    return {n: min(t) for n, t in times.items()}, results


def _added(table: Table) -> tuple[int, int, int]:
    """The delete records the current snapshot applies, their distinct files and bytes."""
    records = {(d.file_path, d.content_offset): d
               for t in table.scan().plan_files() for d in t.delete_files}
    files = {d.file_path: d.file_size_in_bytes for d in records.values()}
    return len(records), len(files), sum(files.values())


def _spark_agg(df: Any) -> tuple[Any, ...]:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    return tuple(df.agg(F.count("*"), *(F.sum(c) for c in SUMMED)).collect()[0])


def _arrow_sums(batches: Any) -> tuple[Any, ...]:
    rows, sums = 0, [0, 0.0]
    for batch in batches:
        rows += batch.num_rows
        for i, c in enumerate(SUMMED):
            sums[i] += pc.sum(batch.column(c)).as_py() or 0
    return (rows, *sums)


def _pyarrow_sums(paths: Sequence[str]) -> tuple[Any, ...]:
    return _arrow_sums(b for p in paths
                       for b in pq.ParquetFile(p).iter_batches(columns=list(SUMMED)))


def _read_cases(spark: Any, v2: Table, v3: Table, *, base: int, paths: Sequence[str],
                repeat: int) -> list[ReadCase]:
    def spark_sum(table: Table, **kw: Any) -> Callable[[], tuple[Any, ...]]:
        return lambda: _spark_agg(read(spark, table, **kw))

    def arrow_sum(table: Table, **kw: Any) -> Callable[[], tuple[Any, ...]]:
        return lambda: _arrow_sums(table.scan(selected_fields=SUMMED, **kw)
                                   .to_arrow_batch_reader())

    cases = [
        ("Spark `read()`", "`.count()`", "`spark.read.parquet(files).count()`", {
            "baseline": lambda: (spark.read.parquet(*paths).count(),),
            "no deletes": lambda: (read(spark, v2, snapshot_id=base).count(),),
            "position deletes": lambda: (read(spark, v2).count(),),
            "deletion vectors": lambda: (read(spark, v3).count(),)}),
        ("Spark `read()`", "`count(*), sum(id), sum(v)`",
         "`spark.read.parquet(files)`, same aggregate", {
             "baseline": lambda: _spark_agg(spark.read.parquet(*paths)),
             "no deletes": spark_sum(v2, snapshot_id=base),
             "position deletes": spark_sum(v2),
             "deletion vectors": spark_sum(v3)}),
        ("Arrow `to_arrow_batch_reader()`", "columns id, v: rows, sum(id), sum(v)",
         "`pyarrow.parquet` `iter_batches` of the files", {
             "baseline": lambda: _pyarrow_sums(paths),
             "no deletes": arrow_sum(v2, snapshot_id=base),
             "position deletes": arrow_sum(v2),
             "deletion vectors": arrow_sum(v3)})]
    found = []
    for reader, query, baseline, works in cases:
        best, answers = _turns(works, repeat)
        found.append(ReadCase(reader, query, baseline, best, answers))
    return found


def _same(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    """Equal answers; sums of doubles may differ in the last bits with the summation order."""
    return len(left) == len(right) and all(
        math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) else a == b
        for a, b in zip(left, right, strict=True))


def _check_reads(cases: Sequence[ReadCase], deleted: int) -> None:
    """Both tables answer alike, every reader answers alike, and the deletes removed exactly
    ``deleted`` rows from what the baseline and the pre-delete snapshot read."""
    for case in cases:
        a = case.answers
        where = f"{case.reader} {case.query}"
        if not _same(a["position deletes"], a["deletion vectors"]):
            raise AssertionError(f"{where}: position deletes (v2) give "
                                 f"{a['position deletes']}, deletion vectors (v3) give "
                                 f"{a['deletion vectors']}")
        if not _same(a["baseline"], a["no deletes"]):
            raise AssertionError(f"{where}: the baseline gives {a['baseline']}, the reader "
                                 f"before the delete {a['no deletes']}")
        if a["no deletes"][0] - deleted != a["deletion vectors"][0]:
            raise AssertionError(f"{where}: {a['no deletes'][0]} rows before the delete and "
                                 f"{a['deletion vectors'][0]} after, but {deleted} deleted")
    sums = [c.answers["deletion vectors"] for c in cases if len(c.answers["baseline"]) > 1]
    if any(not _same(sums[0], s) for s in sums[1:]):
        raise AssertionError(f"The Spark and Arrow readers disagree: {sums}")


def _micro(table: Table, root: str) -> dict[str, Any]:
    """Decoding :data:`POSITIONS` positions into ``DeleteCache.positions``' array, from a
    deletion vector and from a position delete file (as the v2 delete writes them)."""
    rng = np.random.default_rng(20_000)
    positions = np.unique(rng.integers(0, POSITION_SPACE, POSITIONS * 11 // 10))
    positions = np.sort(rng.choice(positions, POSITIONS, replace=False))
    data_path = next(iter(table.scan().plan_files())).data_file.file_path
    io = table.io
    os.makedirs(f"{root}/micro", exist_ok=True)
    written = write_deletion_vectors(io, f"{root}/micro/dv.puffin", {data_path: positions})
    vector = written.data_file(written.vectors[0], spec_id=table.spec().spec_id, partition=())
    writer = PositionDeleteWriter(io, lambda: f"{root}/micro/pos-deletes.parquet",
                                  table.schema(), table.spec(), (), table.properties)
    writer.write(pa.record_batch({"file_path": pa.array([data_path] * len(positions)),
                                  "pos": pa.array(positions, pa.int64())}))
    [position_file] = writer.close()
    files: dict[str, DataFile] = {"position deletes": position_file,
                                  "deletion vectors": vector}

    def decode(f: DataFile) -> Callable[[], Any]:
        return lambda: DeleteCache(io, table.schema()).positions(f)[data_path]

    best, answers = _turns({n: decode(f) for n, f in files.items()}, MICRO_RUNS)
    for name, found in answers.items():
        if not np.array_equal(found, positions):
            raise AssertionError(f"{name}: decoded positions differ from those written")
    return {"best": best, "bytes": {"position deletes": position_file.file_size_in_bytes,
                                    "deletion vectors": vector.content_size_in_bytes}}


def bench(rows: int, files: int, repeat: int) -> Report:
    load_start = os.getloadavg()[0]
    spark = build_session("local[*]", "icepark-bench-dv",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "3g",
                           "spark.sql.shuffle.partitions": "8"})
    root = tempfile.mkdtemp(prefix="icepark-bench-dv-")
    try:
        catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{root}/c.db",
                               warehouse=f"{root}/wh")
        catalog.create_namespace("db")
        mor = {"write.delete.mode": "merge-on-read"}
        tables = {"v2": catalog.create_table("db.v2", SCHEMA, format_version=2, properties=mor),
                  "v3": catalog.create_table("db.v3", SCHEMA, format_version=3, properties=mor)}
        per_file = rows // files
        for i in range(files):
            batch = _rows(i * per_file, per_file)
            for table in tables.values():
                table.append(batch)
        layouts = {n: sorted((t.data_file.record_count, t.data_file.file_size_in_bytes)
                             for t in table.scan().plan_files()) for n, table in tables.items()}
        if layouts["v2"] != layouts["v3"] or len(layouts["v2"]) != files:
            raise AssertionError(f"The tables' data files differ: {layouts}")
        bases = {n: _snapshot_id(t) for n, t in tables.items()}
        paths = [t.data_file.file_path for t in tables["v2"].scan().plan_files()]
        matched = int(spark.read.parquet(*paths).filter(FILTER).count())

        write, results = _time_deletes(spark, tables, bases, repeat)
        for name, result in results.items():
            if result.deleted_rows != matched:
                raise AssertionError(f"{name}: deleted {result.deleted_rows} rows, Spark "
                                     f"found {matched}")
        added = {n: _added(t) for n, t in tables.items()}
        reads = _read_cases(spark, tables["v2"], tables["v3"], base=bases["v2"], paths=paths,
                            repeat=repeat)
        _check_reads(reads, matched)
        micro = _micro(tables["v2"], root)
        return Report(per_file * files, files, matched, write, added, reads, micro,
                      (load_start, os.getloadavg()[0]))
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def _print(report: Report, repeat: int) -> None:
    print(f"{report.rows:,} rows in {report.files} files, {report.deleted:,} deleted by "
          f"{FILTER!r} (every file); best of {repeat}; {os.cpu_count()} cores, load average "
          f"{report.load[0]:.1f} at the start, {report.load[1]:.1f} at the end")
    print("\nratio = position deletes time / deletion vectors time (> 1: deletion vectors "
          "faster)\n")
    print("| merge-on-read `delete_rows` | position deletes (v2) s | deletion vectors (v3) s "
          "| ratio |")
    print("|---|---:|---:|---:|")
    v2, v3 = report.write["v2"], report.write["v3"]
    print(f"| `{FILTER}` | {v2:.2f} | {v3:.2f} | {v2 / v3:.2f}x |")
    (_, f2, b2), (r3, f3, b3) = report.added["v2"], report.added["v3"]
    print(f"\nadded: v2 {f2} position delete files ({b2:,} bytes); v3 {r3} deletion vectors "
          f"in {f3} Puffin files ({b3:,} bytes)\n")
    print("| reader | query | baseline (no deletes) | baseline s | same reader, no deletes s "
          "| position deletes s | deletion vectors s | ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for c in report.reads:
        t = c.best
        print(f"| {c.reader} | {c.query} | {c.baseline} | {t['baseline']:.2f} | "
              f"{t['no deletes']:.2f} | {t['position deletes']:.2f} | "
              f"{t['deletion vectors']:.2f} | "
              f"{t['position deletes'] / t['deletion vectors']:.2f}x |")
    best, size = report.micro["best"], report.micro["bytes"]
    print(f"\n| decode {POSITIONS:,} positions to numpy (`DeleteCache.positions`, best of "
          f"{MICRO_RUNS}) | position delete file ms | deletion vector ms | ratio |")
    print("|---|---:|---:|---:|")
    pos, dv = best["position deletes"], best["deletion vectors"]
    print(f"| {size['position deletes']:,} bytes of Parquet vs a {size['deletion vectors']:,}"
          f"-byte Puffin blob | {pos * 1000:.1f} | {dv * 1000:.1f} | {pos / dv:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _print(bench(args.rows, args.files, args.repeat), args.repeat)


if __name__ == "__main__":
    main()
