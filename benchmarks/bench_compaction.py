"""Compaction (``rewrite_data_files``) of many small files, icepark against the Java reference
runtime's ``CALL ref.system.rewrite_data_files(...)`` (Iceberg 1.10.2 on Spark 3.5), each
measured against its own Spark's plain Parquet rewrite of the same files, in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_compaction                  # 2,000 files, 10M rows
    PYTHONPATH=src:. python -m benchmarks bench_compaction --rows 1000000 --files 200
    PYTHONPATH=src:. python -m benchmarks bench_compaction --rows 2000000 --files 4 \
        --partitions 500 --strategies binpack     # many small partitions: 2,000 small files

Two identical tables, ``db.ours`` and ``db.java`` (``--files`` files holding ``--rows`` rows
of 8 columns: ``id``, ``k`` (a hash of the id), 4 doubles and 2 strings), are written by
icepark in one filesystem-catalog warehouse that the reference opens as its ``hadoop`` catalog.
Both engines compact with the same options (``target-file-size-bytes`` 64 MiB,
``min-input-files`` 2):

* ``binpack``: the rows as they are, into ``ceil(bytes / target)`` files;
* ``sort`` by ``k DESC NULLS LAST``: range-partitioned into that many files, each sorted.

The floor of each is the plain job any engine must run: ``spark.read.parquet(<the data
files>)``, coalesced (binpack) or range-partitioned and sorted (sort) into the same number of
tasks, written with Spark's own Parquet writer (``zstd``, as both engines write) to a scratch
directory, in the engine's own Spark (icepark's PySpark 4, the reference's PySpark 3.5). Each
run is followed by a rollback to the written snapshot; best of ``--repeat`` after one warm-up
run of every variant. Ratio = engine / its floor (1.0: as fast as the plain rewrite).

With ``--partitions N`` the tables are partitioned by ``identity(p)``, ``p = id % N``: each of
the ``--files`` write tasks leaves a small file in every partition, and each partition is one
file group. The floor then hash-distributes the rows by ``p`` and writes them partitioned by
``p`` (one file per partition), the plain job that rewrites every partition at once.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

import icepark.spark as ips
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.session import build_session, default_parallelism
from icepark.table.table import Table

TARGET = 64 * 1024 * 1024
OPTIONS = {"target-file-size-bytes": str(TARGET), "min-input-files": "2"}
SORT = "k DESC NULLS LAST"


def _source(spark: SparkSession, rows: int, files: int, partitions: int) -> Any:
    ids = spark.range(rows, numPartitions=files)
    extra = [(F.col("id") % partitions).alias("p")] if partitions else []
    return ids.select(
        F.col("id"), *extra, (F.xxhash64("id") % 1_000_000).alias("k"),
        *((F.col("id") * (i + 1) / 7.0).alias(f"d{i}") for i in range(4)),
        F.concat(F.lit("name-"), (F.col("id") % 100_003).cast("string")).alias("s0"),
        F.when(F.col("id") % 10 == 0, None).otherwise(
            F.sha1(F.col("id").cast("string")).substr(1, 12)).alias("s1"))


def _table(catalog: FilesystemCatalog, spark: SparkSession, name: str, rows: int,
           files: int, *, partitions: int) -> Table:
    df = _source(spark, rows, files, partitions)
    spec = ["p"] if partitions else None
    ips.write(df, catalog.create_table(f"db.{name}", ips.to_iceberg(df.schema),
                                       partition_spec=spec, format_version=2), mode="append")
    return catalog.load_table(f"db.{name}")


def _floor_code(paths: list[str], scratch: str, count: int, sort: bool,
                partitioned: bool) -> str:
    """Python for either Spark: the plain Parquet rewrite of ``paths`` into ``count`` tasks
    (partitioned: by ``p``, one file per partition)."""
    if partitioned:
        arrange = f".repartition({count}, 'p')"
        if sort:
            arrange += ".sortWithinPartitions('p', F.col('k').desc_nulls_last())"
        write = ".write.partitionBy('p')"
    else:
        arrange = (f".repartitionByRange({count}, F.col('k').desc_nulls_last())"
                   ".sortWithinPartitions(F.col('k').desc_nulls_last())" if sort
                   else f".coalesce({count})")
        write = ".write"
    return (f"from pyspark.sql import functions as F\n"
            f"spark.read.parquet(*{paths!r}){arrange}{write}.mode('overwrite')"
            f".option('compression', 'zstd').parquet({scratch!r})\n")


def _best(run: Callable[[], None], reset: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        reset()
    return min(times)


def bench(rows: int, files: int, repeat: int,
          strategies: tuple[str, ...] = ("binpack", "sort"), partitions: int = 0
          ) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-compaction-"))
    warehouse = root / "warehouse"
    warehouse.mkdir()
    reference = None
    spark = build_session("local[2]", "icepark-bench-compaction",
                          {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                           "spark.sql.shuffle.partitions": "4"})
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": str(warehouse)})
        catalog.create_namespace("db")
        ours = _table(catalog, spark, "ours", rows, files, partitions=partitions)
        java_table = _table(catalog, spark, "java", rows, files, partitions=partitions)
        written = {t.name: t.current_snapshot().snapshot_id  # type: ignore[union-attr]
                   for t in (ours, java_table)}
        data_files = [t.data_file for t in ours.scan().plan_files()]
        paths = [f.file_path for f in data_files]
        size = sum(f.file_size_in_bytes for f in data_files)
        count = max(1, -(-size // TARGET))
        if partitions:
            count = min(partitions, default_parallelism(spark))  # as icepark packs them
        try:
            from tools.javaref.client import JavaReference  # noqa: PLC0415 - optional peer

            reference = JavaReference(warehouse, root / "reference.log")
        except Exception as e:  # no `make javaref`: icepark and its floor alone
            print(f"(no Java reference: {e})")

        def rollback() -> None:
            ours.refresh().manage_snapshots().rollback_to_snapshot(written[ours.name]).commit()

        def java_rollback() -> None:
            assert reference is not None
            reference.sql(f"CALL ref.system.rollback_to_snapshot('db.java', "
                          f"{written[java_table.name]})")

        def floor(sort: bool, engine: str) -> Callable[[], None]:
            code = _floor_code(paths, str(root / f"floor-{engine}"), count, sort,
                               bool(partitions))
            if engine == "java":
                assert reference is not None
                return lambda: reference.python(code)
            return lambda: exec(code, {"spark": spark})

        def icepark(strategy: str) -> Callable[[], None]:
            def run() -> None:
                result = ips.rewrite_data_files(
                    spark, ours.refresh(), strategy=strategy,  # type: ignore[arg-type]
                    sort_order=SORT if strategy == "sort" else None, options=OPTIONS)
                assert result.rewritten_data_files == len(paths), result
            return run

        def java(strategy: str) -> Callable[[], None]:
            options = ", ".join(f"'{k}', '{v}'" for k, v in OPTIONS.items())
            order = f", sort_order => '{SORT}'" if strategy == "sort" else ""

            def run() -> None:
                assert reference is not None
                found = reference.rows(
                    f"CALL ref.system.rewrite_data_files(table => 'db.java', strategy => "
                    f"'{strategy}'{order}, options => map({options}))")
                assert found[0]["rewritten_data_files_count"] == len(paths), found
            return run

        variants: dict[tuple[str, str], tuple[Callable[[], None], Callable[[], None]]] = {}
        for strategy in strategies:
            variants[("icepark", strategy)] = (icepark(strategy), rollback)
            variants[("icepark floor", strategy)] = (floor(strategy == "sort", "ours"),
                                                     lambda: None)
            if reference is not None:
                variants[("java", strategy)] = (java(strategy), java_rollback)
                variants[("java floor", strategy)] = (floor(strategy == "sort", "java"),
                                                      lambda: None)
        for run, reset in variants.values():  # warm-up: JVMs, Python workers, file cache
            run()
            reset()
        best = {key: _best(run, reset, repeat) for key, (run, reset) in variants.items()}
        return {"best": best, "size": size, "count": count, "files": len(paths),
                "version": reference.version if reference is not None else None}
    finally:
        if reference is not None:
            reference.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--strategies", nargs="+", choices=("binpack", "sort"),
                        default=["binpack", "sort"], help="the strategies to time")
    parser.add_argument("--partitions", type=int, default=0,
                        help="partition by id %% N (0: unpartitioned)")
    args = parser.parse_args()
    report = bench(args.rows, args.files, args.repeat, tuple(args.strategies),
                   args.partitions)
    best = report["best"]
    into = (f"{args.partitions} partitions" if args.partitions
            else f"{report['count']} files of 64 MiB")
    print(f"{report['files']:,} files, {args.rows:,} rows, {report['size'] / 2**20:.0f} MiB "
          f"into {into}; Java reference: {report['version'] or 'not run'}")
    print("| strategy | engine | seconds | its plain Spark rewrite s | engine / floor |")
    print("|---|---|---:|---:|---:|")
    for strategy in args.strategies:
        for engine in ("icepark", "java"):
            if (engine, strategy) not in best:
                continue
            seconds, floor_s = best[(engine, strategy)], best[(f"{engine} floor", strategy)]
            print(f"| {strategy} | {engine} | {seconds:.1f} | {floor_s:.1f} | "
                  f"{seconds / floor_s:.2f}x |")


if __name__ == "__main__":
    main()
