"""MERGE and UPDATE through Spark against the cheapest plain-Spark equivalent, and against
pyiceberg's ``upsert``, in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_merge                       # 10M-row target
    PYTHONPATH=src:. python -m benchmarks bench_merge --rows 1000000 --files 4

The target has 20 columns (``id``, ``k``, 9 more longs, 5 doubles, 4 strings), ``--rows``
rows written by ``ips.write`` into ``--files`` data files, unpartitioned. The source has
``rows / 10`` rows, the issue's shape: half carry ids of the target, spread over every data file
(every 20th id) with changed values, half new ids. Timed end to end (planning, Spark jobs,
files written, commit), best of ``--repeat``, the table rolled back to the written snapshot
after each run:

* ``MERGE ... WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``
  (``ips.upsert`` without its change check, i.e. ``when_matched_update_all`` +
  ``when_not_matched_insert_all``), copy-on-write and merge-on-read;
* ``UPDATE ... SET d0 = d0 + 1 WHERE k < 10000`` (about 1% of the rows, in every file), both
  modes.

The floor of each is the plain Spark job any copy-on-write engine must run, reading the same
Parquet files: ``spark.read.parquet(<data files>)`` full-outer-joined with the source on ``id``
(the new value where the source has one), or the UPDATE's ``CASE WHEN`` projection, written
with Spark's own Parquet writer (``zstd``, as icepark) to a scratch directory. Ratios are
floor / icepark (1.0: as fast as the floor).

pyiceberg: its ``Table.upsert`` loads the whole source and the matching target rows into
Arrow memory and rewrites matching files copy-on-write; it runs at ``--pyiceberg-rows`` (a
size it finishes) on its own copy of the data, beside icepark's ``ips.upsert`` on an identical
table (both with their change checks: only rows whose values differ are updated).

Driver memory: the peak of Python allocations (``tracemalloc``) in icepark's driver during the
merge-on-read MERGE at the full target size and at a tenth of it. The Spark JVM runs the
driver and the executors in one process in local mode, so its heap is not the driver's; the
Python driver is where icepark holds its file lists, and it must not grow with the target.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

import icepark.spark as ips
from benchmarks.bench_spark_delete import _best
from icepark.catalog import load_catalog
from icepark.spark.schema import to_iceberg
from icepark.spark.session import build_session
from icepark.table.table import Table

LONGS = [f"l{i}" for i in range(9)]
DOUBLES = [f"d{i}" for i in range(5)]
STRINGS = [f"s{i}" for i in range(4)]
UPDATE_FILTER = "k < 10000"


def _frame(spark: SparkSession, start: int, count: int, salt: int = 0) -> DataFrame:
    """Rows ``start .. start + count - 1`` of the 20-column schema; ``salt`` changes every
    value but ``id`` and ``k``."""
    i = F.col("id")
    columns = [i, F.pmod(i * F.lit(7919), F.lit(1 << 20)).alias("k")]
    columns += [(i * F.lit(n + 3) + F.lit(salt)).alias(c) for n, c in enumerate(LONGS)]
    columns += [(i.cast("double") * F.lit(0.5 + n) + F.lit(salt)).alias(c)
                for n, c in enumerate(DOUBLES)]
    columns += [F.concat(F.lit(f"{c}-{salt}-"), F.pmod(i, F.lit(65536)).cast("string"))
                .alias(c) for c in STRINGS]
    return spark.range(start, start + count).select(*columns)


def _source(spark: SparkSession, rows: int) -> DataFrame:
    """``rows // 10`` rows: half every 20th target id with changed values, half new ids."""
    half = rows // 20
    matching = _frame(spark, 0, half, salt=1).withColumn("id", F.col("id") * F.lit(20))
    new = _frame(spark, rows, half, salt=2)
    return matching.unionByName(new).cache()


def _target(spark: SparkSession, catalog: Any, name: str, rows: int, files: int) -> Table:
    table: Table = catalog.create_table(f"db.{name}", to_iceberg(_frame(spark, 0, 1).schema,
                                                           fresh_ids=True),
                                 properties={"write.target-file-size-bytes": str(1 << 40)})
    ips.write(_frame(spark, 0, rows).repartition(files), table)
    return table.refresh()


def _merge(spark: SparkSession, table: Table, source: DataFrame) -> ips.MergeResult:
    return (ips.merge(table, source, "t.id = s.id").when_matched_update_all()
            .when_not_matched_insert_all().execute())


def bench(rows: int, files: int, repeat: int, pyiceberg_rows: int, *,
          modes: tuple[str, ...] = ("copy-on-write", "merge-on-read"),
          extras: bool = True) -> list[str]:
    spark = build_session("local[*]", "icepark-bench-merge",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "6g",
                           "spark.sql.shuffle.partitions": "8"})
    root = tempfile.mkdtemp(prefix="icepark-bench-merge-")
    out: list[str] = []
    try:
        catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{root}/c.db",
                               warehouse=f"{root}/wh")
        catalog.create_namespace("db")
        table = _target(spark, catalog, "t", rows, files)
        snapshot = table.current_snapshot()
        assert snapshot is not None
        base = snapshot.snapshot_id
        paths = [t.data_file.file_path for t in table.scan().plan_files()]
        source = _source(spark, rows)
        matched = source.where(F.col("id") < F.lit(rows)).count()
        inserted = source.count() - matched
        scratch = f"{root}/floor"

        def reset() -> None:
            table.manage_snapshots().rollback_to_snapshot(base).commit()
            table.refresh()

        def merge_floor() -> None:
            target = spark.read.parquet(*paths)
            s = source.select(*(F.col(c).alias(f"_s_{c}") for c in source.columns))
            joined = target.join(s, target["id"] == s["_s_id"], "full_outer")
            joined.select(*(F.coalesce(F.col(f"_s_{c}"), F.col(c)).alias(c)
                            for c in source.columns)) \
                .write.mode("overwrite").option("compression", "zstd").parquet(scratch)

        def update_floor() -> None:
            frame = spark.read.parquet(*paths)
            frame.withColumn("d0", F.when(F.expr(UPDATE_FILTER), F.col("d0") + 1)
                             .otherwise(F.col("d0"))) \
                .write.mode("overwrite").option("compression", "zstd").parquet(scratch)

        merge_floor()  # warm the JVM and the file system cache for every variant
        merge_floor_s, _ = _best(merge_floor, repeat)
        update_floor_s, _ = _best(update_floor, repeat)
        out += [f"Target {rows:,} rows x 20 columns in {len(paths)} files; source "
                f"{matched + inserted:,} rows ({matched:,} matching, {inserted:,} new).", "",
                "| operation | mode | icepark s | plain Spark floor s | floor / icepark |",
                "|---|---|---:|---:|---:|"]
        for mode in modes:
            table.set_properties({"write.merge.mode": mode, "write.update.mode": mode})
            table.refresh()
            seconds, result = _best(lambda: _merge(spark, table, source), repeat, reset)
            if (result.updated_rows, result.inserted_rows) != (matched, inserted):
                raise AssertionError(f"{mode}: {result}, expected {matched} updated and "
                                     f"{inserted} inserted")
            out.append(f"| MERGE (update * / insert *) | {mode} | {seconds:.1f} | "
                       f"{merge_floor_s:.1f} | {merge_floor_s / seconds:.2f}x |")
            seconds, update = _best(
                lambda: ips.update(spark, table, {"d0": "d0 + 1"}, UPDATE_FILTER), repeat,
                reset)
            out.append(f"| UPDATE 1% ({update.updated_rows:,} rows) | {mode} | {seconds:.1f} "
                       f"| {update_floor_s:.1f} | {update_floor_s / seconds:.2f}x |")
        if not extras:
            return out
        table.set_properties({"write.merge.mode": "merge-on-read"})
        out += ["", *_driver_memory(spark, catalog, table, source, rows, files, reset)]
        out += ["", *_pyiceberg(spark, root, pyiceberg_rows)]
        return out
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def _peak_python_bytes(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _driver_memory(  # noqa: PLR0917 - the full-size table and how to make a small one
        spark: SparkSession, catalog: Any, table: Table, source: DataFrame, rows: int,
        files: int, reset: Callable[[], None]) -> list[str]:
    small = _target(spark, catalog, "small", rows // 10, files)
    small.set_properties({"write.merge.mode": "merge-on-read"})
    small_source = _source(spark, rows // 10)
    small_peak = _peak_python_bytes(lambda: _merge(spark, small.refresh(), small_source))
    big_peak = _peak_python_bytes(lambda: _merge(spark, table, source))
    reset()
    return ["| merge-on-read MERGE, target rows | peak Python driver allocations |",
            "|---:|---:|",
            f"| {rows // 10:,} | {small_peak / 2**20:.1f} MiB |",
            f"| {rows:,} | {big_peak / 2**20:.1f} MiB |",
            "", f"Ratio small / full target: {small_peak / big_peak:.2f}x (1.0: flat)."]


def _pyiceberg(spark: SparkSession, root: str, rows: int) -> list[str]:
    """pyiceberg's upsert and icepark's on identical tables of ``rows`` rows."""
    from pyiceberg.catalog.sql import SqlCatalog  # noqa: PLC0415 - a baseline only

    target = _frame(spark, 0, rows).toArrow()
    source = _source(spark, rows).toArrow()
    theirs_catalog = SqlCatalog("pyi", uri=f"sqlite:///{root}/pyi.db",
                                warehouse=f"file://{root}/pyi")
    theirs_catalog.create_namespace("db")
    theirs = theirs_catalog.create_table("db.t", schema=target.schema)
    theirs.append(target)
    ours_catalog = load_catalog("ours", type="sql", uri=f"sqlite:///{root}/ours.db",
                                warehouse=f"{root}/ours")
    ours_catalog.create_namespace("db")
    ours = ours_catalog.create_table("db.t", target.schema)
    ours.append(target)
    ours_snapshot = ours.current_snapshot()
    theirs_snapshot = theirs.current_snapshot()
    assert ours_snapshot is not None and theirs_snapshot is not None
    frame = spark.createDataFrame(source).cache()
    frame.count()

    def reset_ours() -> None:
        ours.manage_snapshots().rollback_to_snapshot(ours_snapshot.snapshot_id).commit()
        ours.refresh()

    def reset_theirs() -> None:
        theirs.manage_snapshots().rollback_to_snapshot(theirs_snapshot.snapshot_id).commit()

    ours_s, ours_result = _best(lambda: ips.upsert(ours, frame, key=["id"]), 1, reset_ours)
    theirs_s, theirs_result = _best(lambda: theirs.upsert(pa.Table.from_batches(
        source.to_batches(), source.schema), join_cols=["id"]), 1, reset_theirs)
    if (ours_result.updated_rows, ours_result.inserted_rows) != (
            theirs_result.rows_updated, theirs_result.rows_inserted):
        raise AssertionError(f"icepark {ours_result} vs pyiceberg {theirs_result}")
    return [f"Upsert of {source.num_rows:,} rows into {rows:,} (copy-on-write, "
            f"{ours_result.updated_rows:,} updated, {ours_result.inserted_rows:,} inserted):",
            "", "| pyiceberg upsert s | icepark ips.upsert s | pyiceberg / icepark |",
            "|---:|---:|---:|",
            f"| {theirs_s:.1f} | {ours_s:.1f} | {theirs_s / ours_s:.2f}x |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pyiceberg-rows", type=int, default=200_000)
    parser.add_argument("--modes", default="copy-on-write,merge-on-read",
                        help="row-level modes to time (comma-separated)")
    parser.add_argument("--no-extras", action="store_true",
                        help="skip the driver-memory and pyiceberg comparisons")
    args = parser.parse_args()
    print("\n".join(bench(args.rows, args.files, args.repeat, args.pyiceberg_rows,
                          modes=tuple(args.modes.split(",")), extras=not args.no_extras)))


if __name__ == "__main__":
    main()
