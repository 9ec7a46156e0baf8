"""icepark (PySpark 4) and the Java reference runtime (Apache Iceberg on PySpark 3.5) side by
side, each also against its own Spark's plain Parquet, on the same data in the same run.

    PYTHONPATH=src:. python -m benchmarks bench_reference                  # 2M rows, best of 3
    PYTHONPATH=src:. python -m benchmarks bench_reference --rows 200000 --repeat 1 \
        --json reference.json

icepark runs in this process (``ips.build_session``, ``local[2]``); the reference in the
``.venv-javaref`` subprocess of :mod:`tools.javaref.client` (its own JVM, ``local[2]``), given
the same driver memory and ``spark.sql.shuffle.partitions`` (and microsecond Parquet
timestamps for its plain writes, as icepark's session has). Both open one warehouse (icepark's
filesystem catalog, the reference's ``hadoop`` catalog ``ref``); each engine creates, writes and
changes only its own tables (format version 2, the same schema). Each Spark generates the same
``--rows`` rows with ``spark.range`` in ``--files`` tasks and caches them: 20 columns (``id``
and 5 more longs, 5 doubles, 5 strings, 2 dates, 2 timestamps), ``l1`` a hash of the id.

Workloads, each with its baseline run in the same engine's own Spark on plain Parquet (zstd):

* write, unpartitioned (baseline ``df.write.parquet``) and partitioned by ``day(ts0)``,
  ``bucket[16](id)`` (baseline: the rows with ``unix_date(CAST(ts0 AS DATE))`` and
  ``pmod(hash(id), 16)`` appended, repartitioned by them, ``partitionBy`` them: the hash
  distribution both engines apply to a partitioned table, with Spark's built-in hash for the
  bucket). Every repetition writes a new table or folder;
* read (of the last unpartitioned table each engine wrote; baseline ``spark.read.parquet`` of
  that table's data files): ``sum(d1), count(*)`` where ``l1 < 10000`` (2 of 20 columns, ~1% of
  the rows, no file skippable), and ``count(*)`` with ``max`` of all 20 columns;
* delete ``l1 < 10000`` (~1%, in every file), ``write.delete.mode`` merge-on-read and
  copy-on-write (``DELETE FROM`` on the reference, ``ips.delete``); baseline
  ``spark.read.parquet(files).filter(...).count()``, finding the rows;
* merge-on-read upsert by ``id`` of 1% changed rows (every 100th id) and 1% new ones
  (``MERGE INTO ... UPDATE SET * ... INSERT *`` on the reference, ``ips.merge`` with
  ``when_matched_update_all().when_not_matched_insert_all()``); baseline: the join of the data
  files' ``id`` with the source's that finds the matches, counted.

A delete or merge is rolled back to the written snapshot after each run, so every run changes
the same table. Times are taken inside each engine's process, around the operation alone
(loading the table included; creating it, rolling back and checking not): best and median
of ``--repeat``, the variants taking turns (icepark, Java, icepark's Parquet, Java's Parquet;
reversed on every other repetition), after one warm-up pass of everything at
``--warmup-rows`` and ``--warmup`` untimed turns of each workload at full size (without them
the first timed turns of a workload took up to twice as long as its last, in every variant, and
the best of five was one lucky turn). Every run's answers are checked: both engines and both
baselines agree.
Ratios are engine / its own Parquet baseline (1.00x: as fast; lower is better).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession
from tools.javaref.client import JavaReference

import icepark.spark as ips
from benchmarks.paired import compare
from icepark.catalog.filesystem import FilesystemCatalog
from icepark.spark.session import build_session
from icepark.spec.schema import Schema

ROWS_VIEW, CHANGES_VIEW = "bench_rows", "bench_changes"
FILTER = "l1 < 10000"
SPEC = "day(ts0), bucket(16, id)"
JAVA_PARTITIONING = "PARTITIONED BY (days(ts0), bucket(16, id))"
DERIVED = {"ts0_day": "unix_date(CAST(ts0 AS DATE))", "id_bucket": "pmod(hash(id), 16)"}
ORDER = ("icepark", "java", "icepark parquet", "java parquet")
SYSTEMS = ("icepark", "java")
MANY_FILES = 300
"""Files of the many-files read (a table appended to often, as by a stream, has many)."""

W = TypeVar("W")
Variant = tuple[Callable[[], tuple[float, Any]], Callable[[], None]]
"""One contender of a workload: a run giving (seconds, answer), and its untimed reset."""
Check = Callable[[dict[str, Any]], None]
"""Raises unless a repetition's answers (by variant) agree."""


def columns(salt: int = 0) -> list[str]:
    """The 20 columns as Spark SQL over ``spark.range``'s ``id`` (the same in Spark 3.5 and
    4); ``salt`` changes every value but ``id``, ``l1`` and the timestamps."""
    cols = ["id", "(id * 7919) % 1000003 AS l1"]
    cols += [f"(id * {31 + i}) % {10_000 * (i + 1)} + {salt} AS l{i}" for i in range(2, 6)]
    cols += [f"CAST(id AS DOUBLE) * {0.5 + i}D + {salt}D AS d{i}" for i in range(5)]
    cols += [f"concat('s{i}-{salt}-', CAST((id * {13 + i}) % 50000 AS STRING)) AS s{i}"
             for i in range(5)]
    cols += [f"date_from_unix_date(CAST((id + {97 * i + salt}) % 3650 AS INT)) AS dt{i}"
             for i in range(2)]
    cols += [f"timestamp_seconds(1700000000 + (id * {i + 3}) % 2592000) AS ts{i}"
             for i in range(2)]
    return cols


SCHEMA_DDL = ", ".join(
    [f"{c} BIGINT" for c in ("id", "l1", "l2", "l3", "l4", "l5")]
    + [f"d{i} DOUBLE" for i in range(5)] + [f"s{i} STRING" for i in range(5)]
    + [f"dt{i} DATE" for i in range(2)] + [f"ts{i} TIMESTAMP" for i in range(2)])
"""Both engines' table schema (every column optional, as a DataFrame's ``CREATE`` makes it)."""


def _setup_code(rows: int, files: int, shuffle_partitions: int) -> str:
    """Python for either Spark: the session settings both share, and the two cached views
    (the table's rows; the merge source, every 100th id changed plus ``rows / 100`` new)."""
    new = f"spark.range({rows}, {rows + rows // 100}, 1, {files}).selectExpr(*{columns(2)!r})"
    return (f"spark.conf.set('spark.sql.shuffle.partitions', '{shuffle_partitions}')\n"
            "spark.conf.set('spark.sql.parquet.outputTimestampType', 'TIMESTAMP_MICROS')\n"
            f"for view in ({ROWS_VIEW!r}, {CHANGES_VIEW!r}):\n"
            "    spark.sql(f'UNCACHE TABLE IF EXISTS {view}')\n"
            f"spark.range(0, {rows}, 1, {files}).selectExpr(*{columns()!r})"
            f".createOrReplaceTempView({ROWS_VIEW!r})\n"
            f"spark.range(0, {rows}, 100, {files}).selectExpr(*{columns(1)!r})"
            f".unionByName({new}).createOrReplaceTempView({CHANGES_VIEW!r})\n"
            f"spark.sql('CACHE TABLE {ROWS_VIEW}')\nspark.sql('CACHE TABLE {CHANGES_VIEW}')\n")


def _timed(body: str) -> str:
    """Python for either Spark: ``body`` timed; ``result`` is (seconds, what it left in
    ``answer``)."""
    return ("import time\nanswer = None\nstart = time.perf_counter()\n"
            f"{body}\nresult = (time.perf_counter() - start, answer)\n")


def _close(left: Any, right: Any) -> bool:
    """Equal answers; sums of doubles may differ in their last bits between engines."""
    if isinstance(left, float) and isinstance(right, float):
        return math.isclose(left, right, rel_tol=1e-9)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_close, left, right))
    return bool(left == right)


def _agree(what: str, answers: dict[str, Any]) -> None:
    first, *rest = answers.items()
    for key, value in rest:
        if not _close(first[1], value):
            raise AssertionError(f"{what}: {first[0]} gave {first[1]!r}, {key} {value!r}")


class Suite:
    """The workloads of one pass (warm-up or timed) over both engines."""

    def __init__(self, spark: SparkSession, reference: JavaReference,
                 catalog: FilesystemCatalog, root: Path, *, rows: int, files: int, prefix: str,
                 shuffle_partitions: int) -> None:
        self.spark, self.reference, self.catalog = spark, reference, catalog
        self.root, self.rows, self.prefix = root, rows, prefix
        self.flat: dict[str, str] = {}  # the last unpartitioned table each engine wrote
        self.many: dict[str, str] = {}  # the tables of many files each engine wrote
        self.written: dict[str, Any] = {}  # data files and rows of each engine's tables
        self._count = 0
        setup = _setup_code(rows, files, shuffle_partitions)
        self.on("icepark", setup)
        self.on("java", setup)
        self.schema: Schema = ips.to_iceberg(spark.createDataFrame([], SCHEMA_DDL).schema)

    def on(self, system: str, code: str) -> Any:
        """Run Python ``code`` with ``spark`` in scope in ``system``'s Spark; its ``result``."""
        if system == "java":
            return self.reference.python(code)
        scope: dict[str, Any] = {"spark": self.spark, "result": None}
        exec(code, scope)
        return scope["result"]

    def _name(self, system: str, case: str) -> str:
        self._count += 1
        return f"db.{self.prefix}{system}_{case}_{self._count}"

    def _paths(self, system: str, tables: Mapping[str, str] | None = None) -> list[str]:
        """The data files of ``system``'s table (in ``tables``, by default the last
        unpartitioned one)."""
        name = (tables or self.flat)[system]
        if system == "java":
            return [r["file_path"] for r in self.reference.rows(
                f"SELECT file_path FROM ref.{name}.data_files")]
        table = self.catalog.load_table(name)
        return [t.data_file.file_path for t in table.scan().plan_files()]

    def _code(self, system: str, code: Callable[[], str],
              reset: Callable[[], None] = lambda: None) -> Variant:
        """A variant running the timed Python ``code()`` gives in ``system``'s Spark."""
        def run() -> tuple[float, Any]:
            seconds, answer = self.on(system, _timed(code()))
            return float(seconds), answer
        return run, reset

    def _scans(self, answer: Callable[[str], str],
               tables: Mapping[str, str] | None = None) -> dict[str, Variant]:
        """Both baselines: ``answer`` of ``spark.read.parquet(<the data files of the engine's
        table>)``, as Python for either Spark (``tables``: as for :meth:`_paths`)."""
        def variant(system: str) -> Variant:
            paths = self._paths(system, tables)
            code = f"answer = {answer(f'spark.read.parquet(*{paths!r})')}"
            return self._code(system, lambda: code)
        return {f"{system} parquet": variant(system) for system in SYSTEMS}

    def _after(self, system: str, tables: Mapping[str, str] | None = None) -> list[Any]:
        """The changed table's ``count(*), sum(d0)`` (untimed; ``tables``: as for
        :meth:`_paths`)."""
        name = (tables or self.flat)[system]
        if system == "java":
            row = self.reference.rows(f"SELECT count(*) AS n, sum(d0) AS s "
                                      f"FROM ref.{name}")[0]
            return [row["n"], row["s"]]
        table = self.catalog.load_table(name)
        return list(ips.read(self.spark, table).selectExpr("count(*)", "sum(d0)").collect()[0])

    # writes

    def write(self, partitioned: bool) -> tuple[dict[str, Variant], Check]:
        case = "partitioned" if partitioned else "flat"
        folders = self.root / "parquet"

        def icepark() -> tuple[float, Any]:
            name = self._name("icepark", case)
            table = self.catalog.create_table(name, self.schema, format_version=2,
                                              partition_spec=SPEC if partitioned else None)
            start = time.perf_counter()
            table = ips.write(self.spark.table(ROWS_VIEW), table)
            seconds = time.perf_counter() - start
            files = [t.data_file for t in table.scan().plan_files()]
            if not partitioned:
                self.flat["icepark"] = name
            return seconds, [len(files), sum(f.record_count for f in files)]

        def java() -> tuple[float, Any]:
            name = self._name("java", case)
            self.reference.sql(f"CREATE TABLE ref.{name} ({SCHEMA_DDL}) USING iceberg "
                               f"{JAVA_PARTITIONING if partitioned else ''} "
                               "TBLPROPERTIES ('format-version' = '2')")
            seconds, _ = self.reference.python(
                _timed(f"spark.table({ROWS_VIEW!r}).writeTo('ref.{name}').append()"))
            found = self.reference.rows(f"SELECT count(*) AS files, sum(record_count) AS rows"
                                        f" FROM ref.{name}.data_files")[0]
            if not partitioned:
                self.flat["java"] = name
            return seconds, [found["files"], found["rows"]]

        def parquet(system: str) -> Callable[[], str]:
            def body() -> str:
                self._count += 1
                folder = str(folders / system / f"{case}_{self._count}")
                if not partitioned:
                    return (f"spark.table({ROWS_VIEW!r}).write.option('compression', 'zstd')"
                            f".parquet({folder!r})")
                derived = [f"{sql} AS {name}" for name, sql in DERIVED.items()]
                return (f"spark.table({ROWS_VIEW!r}).selectExpr('*', *{derived!r})"
                        f".repartition(*{list(DERIVED)!r}).write.partitionBy(*{list(DERIVED)!r})"
                        f".option('compression', 'zstd').parquet({folder!r})")
            return body

        def check(answers: dict[str, Any]) -> None:
            for system in SYSTEMS:
                if answers[system][1] != self.rows:
                    raise AssertionError(f"{system} wrote {answers[system]} (files, rows)")
                self.written[f"{system} {case}"] = answers[system]

        def clear() -> None:
            shutil.rmtree(folders, ignore_errors=True)

        return {"icepark": (icepark, lambda: None), "java": (java, lambda: None),
                "icepark parquet": self._code("icepark", parquet("icepark"), clear),
                "java parquet": self._code("java", parquet("java"), clear)}, check

    # reads

    def read(self, row_filter: str | None, names: Sequence[str] | None,
             exprs: Sequence[str]) -> tuple[dict[str, Variant], Check]:
        query = (f".filter({row_filter!r})" if row_filter else "") + \
            f".selectExpr(*{list(exprs)!r}).collect()[0]"

        def icepark() -> tuple[float, Any]:
            start = time.perf_counter()
            df = ips.read(self.spark, self.catalog.load_table(self.flat["icepark"]),
                          row_filter=row_filter, columns=names)
            if row_filter:
                df = df.filter(row_filter)
            answer = list(df.selectExpr(*exprs).collect()[0])
            return time.perf_counter() - start, answer

        java = f"answer = list(spark.table('ref.{self.flat['java']}'){query})"
        return {"icepark": (icepark, lambda: None), "java": self._code("java", lambda: java),
                **self._scans(lambda df: f"list({df}{query})")}, \
            lambda answers: _agree("read", answers)

    def _many(self, count: int) -> dict[str, str]:
        """Each engine's table of ``count`` files, the same rows as the others, written
        (untimed, once) from the rows in ``count`` tasks."""
        if self.many:
            return self.many
        tables = {system: self._name(system, "many") for system in SYSTEMS}
        table = self.catalog.create_table(tables["icepark"], self.schema, format_version=2)
        ips.write(self.spark.table(ROWS_VIEW).repartition(count), table)
        self.reference.sql(f"CREATE TABLE ref.{tables['java']} ({SCHEMA_DDL}) USING iceberg "
                           "TBLPROPERTIES ('format-version' = '2')")
        self.reference.python(f"spark.table({ROWS_VIEW!r}).repartition({count})"
                              f".writeTo('ref.{tables['java']}').append()")
        for system in SYSTEMS:
            found = len(self._paths(system, tables))
            if found != count:
                raise AssertionError(f"{system} wrote {found} files, not {count}")
        self.many = tables
        return tables

    def many_files(self, count: int, exprs: Sequence[str]) -> tuple[dict[str, Variant], Check]:
        """``exprs`` over each engine's table of ``count`` files (:meth:`_many`)."""
        tables = self._many(count)
        query = f".selectExpr(*{list(exprs)!r}).collect()[0]"

        def icepark() -> tuple[float, Any]:
            start = time.perf_counter()
            df = ips.read(self.spark, self.catalog.load_table(tables["icepark"]))
            answer = list(df.selectExpr(*exprs).collect()[0])
            return time.perf_counter() - start, answer

        java = f"answer = list(spark.table('ref.{tables['java']}'){query})"
        return {"icepark": (icepark, lambda: None), "java": self._code("java", lambda: java),
                **self._scans(lambda df: f"list({df}{query})", tables)}, \
            lambda answers: _agree("read", answers)

    # row-level changes

    def _rollbacks(self, tables: Mapping[str, str] | None = None
                   ) -> dict[str, Callable[[], None]]:
        """How each engine puts its table back at its current snapshot."""
        names = tables or self.flat
        ours, theirs = names["icepark"], names["java"]
        current = self.catalog.load_table(ours).current_snapshot()
        assert current is not None
        snapshot = self.reference.rows(f"SELECT snapshot_id FROM ref.{theirs}.refs "
                                       "WHERE name = 'main'")[0]["snapshot_id"]

        def icepark() -> None:
            self.catalog.load_table(ours).manage_snapshots().rollback_to_snapshot(
                current.snapshot_id).commit()

        def java() -> None:
            self.reference.sql(f"CALL ref.system.rollback_to_snapshot('{theirs}', {snapshot})")

        return {"icepark": icepark, "java": java}

    def _set(self, key: str, value: str, tables: Mapping[str, str] | None = None) -> None:
        names = tables or self.flat
        self.catalog.load_table(names["icepark"]).set_properties({key: value})
        self.reference.sql(f"ALTER TABLE ref.{names['java']} SET TBLPROPERTIES "
                           f"('{key}' = '{value}')")

    def _java_change(self, statement: str, tables: Mapping[str, str] | None = None
                     ) -> tuple[float, Any]:
        seconds, _ = self.reference.python(_timed(f"spark.sql({statement!r})"))
        return seconds, self._after("java", tables)

    def delete(self, mode: str) -> tuple[dict[str, Variant], Check]:
        self._set("write.delete.mode", mode)
        rollback = self._rollbacks()

        def icepark() -> tuple[float, Any]:
            start = time.perf_counter()
            result = ips.delete(self.spark, self.catalog.load_table(self.flat["icepark"]),
                                FILTER)
            seconds = time.perf_counter() - start
            return seconds, [result.deleted_rows, self._after("icepark")]

        def check(answers: dict[str, Any]) -> None:
            found = answers["icepark parquet"]
            _agree("rows to delete", {"icepark": answers["icepark"][0], "scan": found,
                                      "java's scan": answers["java parquet"]})
            _agree("after the delete", {"icepark": answers["icepark"][1],
                                        "java": answers["java"]})
            if answers["java"][0] != self.rows - found:
                raise AssertionError(f"{self.rows - answers['java'][0]} rows deleted, not "
                                     f"{found}")

        java = f"DELETE FROM ref.{self.flat['java']} WHERE {FILTER}"
        return {"icepark": (icepark, rollback["icepark"]),
                "java": (lambda: self._java_change(java), rollback["java"]),
                **self._scans(lambda df: f"{df}.filter({FILTER!r}).count()")}, check

    def merge(self, tables: Mapping[str, str] | None = None) -> tuple[dict[str, Variant], Check]:
        """The merge into each engine's table (``tables``: as for :meth:`_paths`)."""
        names = dict(tables or self.flat)
        self._set("write.merge.mode", "merge-on-read", names)
        rollback = self._rollbacks(names)
        matched, new = -(-self.rows // 100), self.rows // 100

        def icepark() -> tuple[float, Any]:
            start = time.perf_counter()
            table = self.catalog.load_table(names["icepark"])
            result = (ips.merge(table, self.spark.table(CHANGES_VIEW), "t.id = s.id")
                      .when_matched_update_all().when_not_matched_insert_all().execute())
            seconds = time.perf_counter() - start
            return seconds, [result.updated_rows, result.inserted_rows,
                             self._after("icepark", names)]

        def check(answers: dict[str, Any]) -> None:
            _agree("matches", {"icepark updates": answers["icepark"][0], "expected": matched,
                               "scan": answers["icepark parquet"],
                               "java's scan": answers["java parquet"]})
            _agree("inserts", {"icepark": answers["icepark"][1], "expected": new})
            _agree("after the merge", {"icepark": answers["icepark"][2],
                                       "java": answers["java"]})
            if answers["java"][0] != self.rows + new:
                raise AssertionError(f"java: {answers['java'][0]} rows after the merge")

        t = f"ref.{names['java']}"
        java = (f"MERGE INTO {t} t USING {CHANGES_VIEW} s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        join = (f".select('id').join(spark.table({CHANGES_VIEW!r}).select('id'), 'id')"
                ".count()")
        return {"icepark": (icepark, rollback["icepark"]),
                "java": (lambda: self._java_change(java, names), rollback["java"]),
                **self._scans(lambda df: f"{df}{join}", names)}, check

    def workloads(self) -> list[tuple[str, Callable[[], tuple[dict[str, Variant], Check]]]]:
        """(label, how to set it up) in the order they run: reads, deletes and the merge use
        the last unpartitioned tables the writes left."""
        every = ["count(*)", *(f"max({c.split()[0]})" for c in SCHEMA_DDL.split(", "))]
        return [
            ("write, unpartitioned", lambda: self.write(False)),
            ("write, partitioned day(ts0), bucket[16](id)", lambda: self.write(True)),
            ("read 2 of 20 columns, l1 < 10000 (~1%): sum, count",
             lambda: self.read(FILTER, ["l1", "d1"], ["sum(d1)", "count(*)"])),
            ("read all 20 columns: count, max of each", lambda: self.read(None, None, every)),
            (f"read a table of {MANY_FILES} files: count, sum(d0)",
             lambda: self.many_files(MANY_FILES, ["count(*)", "sum(d0)"])),
            ("delete 1% (l1 < 10000), merge-on-read", lambda: self.delete("merge-on-read")),
            ("delete 1% (l1 < 10000), copy-on-write", lambda: self.delete("copy-on-write")),
            ("merge by id, 1% changed + 1% new, merge-on-read", self.merge),
            (f"merge by id into the table of {MANY_FILES} files, merge-on-read",
             lambda: self.merge(self._many(MANY_FILES)))]


def _measure(variants: dict[str, Variant], check: Check,
             repeat: int, warmup: int = 0) -> dict[str, list[float]]:
    """Every variant's seconds over ``repeat`` turns, after ``warmup`` untimed turns, the
    order reversed every other turn; each turn's answers checked."""
    times: dict[str, list[float]] = {key: [] for key in ORDER}
    for i in range(warmup + repeat):
        answers = {}
        for key in ORDER if i % 2 == 0 else reversed(ORDER):
            run, reset = variants[key]
            seconds, answers[key] = run()
            if i >= warmup:
                times[key].append(seconds)
            reset()
        check(answers)
    return times


def bench(rows: int, files: int, repeat: int, *, warmup_rows: int, driver_memory: str,
          shuffle_partitions: int, only: Sequence[str] = (), warmup: int = 1
          ) -> dict[str, Any]:
    """Run every workload (with ``only``, those whose label holds one of its words, and the
    unpartitioned write the others read and change); the report :func:`main` prints (and
    writes as JSON)."""
    os.environ["TZ"] = "UTC"  # both engines collect timestamps as UTC wall times
    time.tzset()
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    load_start = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="icepark-bench-reference-"))
    (root / "warehouse").mkdir()
    spark = build_session("local[2]", "icepark-bench-reference",
                          {"spark.ui.enabled": "false", "spark.driver.memory": driver_memory,
                           "spark.sql.shuffle.partitions": str(shuffle_partitions)})
    before = os.environ.get("PYSPARK_SUBMIT_ARGS")
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {driver_memory} pyspark-shell"
    try:
        reference = JavaReference(root / "warehouse", root / "reference.log")
    finally:
        if before is None:
            del os.environ["PYSPARK_SUBMIT_ARGS"]
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = before
    try:
        catalog = FilesystemCatalog("bench", {"warehouse": str(root / "warehouse")})
        catalog.create_namespace("db")
        java_versions = reference.python(
            "result = (spark._jvm.org.apache.iceberg.IcebergBuild.version(), "
            "spark._jvm.java.lang.System.getProperty('java.version'))")
        if warmup_rows:
            warm = Suite(spark, reference, catalog, root, rows=warmup_rows, files=files,
                         prefix="warm_", shuffle_partitions=shuffle_partitions)
            for _, setup in _chosen(warm.workloads(), only):
                _measure(*setup(), repeat=1)
        suite = Suite(spark, reference, catalog, root, rows=rows, files=files, prefix="",
                      shuffle_partitions=shuffle_partitions)
        results = []
        for label, setup in _chosen(suite.workloads(), only):
            times = _measure(*setup(), repeat=repeat, warmup=warmup)
            results.append({"workload": label, "seconds": times,
                            "best": {key: min(values) for key, values in times.items()},
                            "median": {key: statistics.median(values)
                                       for key, values in times.items()}})
            print(f"  {label}: " + ", ".join(f"{key} {min(t):.2f} s"
                                             for key, t in times.items()), flush=True)
        return {"rows": rows, "files": files, "repeat": repeat, "warmup_rows": warmup_rows,
                "warmup": warmup,
                "driver_memory": driver_memory, "shuffle_partitions": shuffle_partitions,
                "cpus": os.cpu_count(), "load_average": {"start": load_start,
                                                         "end": os.getloadavg()},
                "versions": {"icepark spark": spark.version, "java spark": reference.version,
                             "iceberg (java)": java_versions[0], "java": java_versions[1],
                             "python": sys.version.split()[0]},
                "tables": suite.written, "workloads": results}
    except Exception:
        log = root / "reference.log"
        if log.exists():
            print("".join(log.read_text(errors="replace").splitlines(True)[-30:]),
                  file=sys.stderr)
        raise
    finally:
        reference.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def _chosen(workloads: list[tuple[str, W]], only: Sequence[str]) -> list[tuple[str, W]]:
    """The workloads ``only`` names (all without it); the first, the unpartitioned write whose
    table the reads, deletes and the merge use, always."""
    return [w for i, w in enumerate(workloads)
            if not only or i == 0 or any(word in w[0] for word in only)]


def markdown(report: dict[str, Any], command: str) -> str:
    """The report as RESULTS.md shows benchmarks: what ran, then one row per workload."""
    v, load = report["versions"], report["load_average"]
    tables = ", ".join(f"{k} {files:,} files" for k, (files, _) in report["tables"].items())
    lines = [f"`{command}`", "",
             f"{report['rows']:,} rows x 20 columns in {report['files']} tasks, best and "
             f"median of {report['repeat']} after {report.get('warmup', 0)} untimed turn(s) "
             f"at full size; icepark on PySpark {v['icepark spark']}, the reference "
             f"Iceberg {v['iceberg (java)']} on PySpark {v['java spark']} (Java {v['java']}, "
             f"Python {v['python']}); {report['cpus']} CPUs, load average "
             f"{' '.join(f'{x:.2f}' for x in load['start'])} at the start, "
             f"{' '.join(f'{x:.2f}' for x in load['end'])} at the end. Tables written: "
             f"{tables}.", "",
             "| workload | icepark s | Java s | icepark / Java | icepark vs own Parquet | "
             "Java vs own Parquet | icepark's Parquet s | Java's Parquet s | icepark median "
             "| Java median | icepark / Java (medians) | icepark vs own Parquet (medians) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w in report["workloads"]:
        b = w["best"]
        m = w.get("median") or {key: statistics.median(t) for key, t in w["seconds"].items()}
        lines.append(
            f"| {w['workload']} | {b['icepark']:.3f} | {b['java']:.3f} | "
            f"{b['icepark'] / b['java']:.2f}x | {b['icepark'] / b['icepark parquet']:.2f}x | "
            f"{b['java'] / b['java parquet']:.2f}x | {b['icepark parquet']:.3f} | "
            f"{b['java parquet']:.3f} | {m['icepark']:.3f} | {m['java']:.3f} | "
            f"{m['icepark'] / m['java']:.2f}x | {m['icepark'] / m['icepark parquet']:.2f}x |")
    lines += ["", "Ratios: seconds / seconds (vs own Parquet: 1.00x is as fast as that "
              "engine's own Spark on plain Parquet; lower is better).", "",
              "Turn by turn (each turn runs both engines one after the other; "
              "`benchmarks/paired.py`: the median of the turns' icepark / Java ratios, its "
              "sign-test interval, ahead or behind only when the interval is all below or all "
              "above 1.00):", "",
              "| workload | icepark faster in | median of icepark / Java | interval | "
              "confidence | verdict |", "|---|---:|---:|---:|---:|---|"]
    for w in report["workloads"]:
        c = compare(w["seconds"]["icepark"], w["seconds"]["java"])
        interval = (f"{c.low:.3f}-{c.high:.3f}" if math.isfinite(c.high)
                    else "(too few turns)")
        lines.append(f"| {w['workload']} | {c.faster} of {c.turns} | {c.median:.3f} | "
                     f"{interval} | {c.coverage:.1%} | {c.verdict} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4,
                        help="tasks generating the rows (= files of an unpartitioned write)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--warmup-rows", type=int, default=50_000,
                        help="rows of the untimed warm-up pass of every workload (0: none)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed turns of every workload at full size before its timed "
                             "ones (without them the first turns took up to twice as long)")
    parser.add_argument("--driver-memory", default="4g", help="of both Spark drivers")
    parser.add_argument("--shuffle-partitions", type=int, default=8,
                        help="spark.sql.shuffle.partitions of both sessions")
    parser.add_argument("--json", type=Path, help="also write the raw times here")
    parser.add_argument("--only", default="",
                        help="comma-separated words: run the workloads whose label holds one "
                             "(e.g. delete,merge); the unpartitioned write always runs")
    args = parser.parse_args()
    command = "PYTHONPATH=src:. python -m benchmarks bench_reference " + " ".join(sys.argv[1:])
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    report = bench(args.rows, args.files, args.repeat, warmup_rows=args.warmup_rows,
                   driver_memory=args.driver_memory,
                   shuffle_partitions=args.shuffle_partitions,
                   only=[w for w in args.only.split(",") if w], warmup=args.warmup)
    report = {"command": command.strip(), "started": started, **report}
    print(markdown(report, report["command"]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
        print(f"\nRaw times: {args.json}")


if __name__ == "__main__":
    main()
