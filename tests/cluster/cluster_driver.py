"""A Spark driver running icepark's data work on a standalone cluster:
``python cluster_driver.py spark://host:port <folder>``. It prints one JSON object: the outcome
of each step (``"ok"`` or the error), what the reads returned, and where this driver and its
tasks ran.

Two catalogs: ``default``, whose warehouse is ``<folder>/warehouse`` on the local disk every
process shares, and ``remote``, whose tables live in an S3 bucket (``<folder>/s3.json``: the
endpoint's FileIO properties and the bucket). The executors' environment knows no S3
endpoint or key: they can read and write the remote table's files only with the catalog's
FileIO properties, which travel with the tasks."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

import icepark
import icepark.spark as ips

BRIEF_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""As the cluster's daemons (``conftest.BRIEF_JVM``): JVMs that live a minute or two."""
MERGE_ON_READ = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}


def _where(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's one row: the process ID and working directory of its Python worker."""
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"pid": [os.getpid()], "cwd": [os.getcwd()]})


def session(master: str) -> SparkSession:
    return ips.build_session(master=master, app_name="icepark-cluster-test", config={
        "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
        # the first job waits for both executors (at most 120 s), so that both take part
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
        "spark.driver.extraJavaOptions": BRIEF_JVM, "spark.executor.extraJavaOptions": BRIEF_JVM})


def main(master: str, folder: Path) -> dict[str, Any]:
    spark = session(master)
    warehouse = folder / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = {"uri": f"sqlite:///{warehouse / 'catalog.db'}", "warehouse": str(warehouse)}
    catalog = icepark.load_catalog("default", **props)
    catalog.create_namespace("db")
    ips.configure(spark, catalog)
    s3 = json.loads((folder / "s3.json").read_text(encoding="utf-8"))
    remote = icepark.load_catalog("remote", uri=f"sqlite:///{folder / 'remote.db'}",
                                  warehouse=f"s3://{s3['bucket']}/warehouse",
                                  **s3["properties"])
    remote.create_namespace("db")
    steps: dict[str, str] = {}
    found: dict[str, Any] = {"driver": {"pid": os.getpid(), "cwd": os.getcwd()},
                             "steps": steps}

    def step(name: str, action: Callable[[], Any]) -> None:
        start = time.monotonic()
        try:
            action()
            steps[name] = "ok"
        except Exception as e:
            steps[name] = f"{type(e).__name__}: {e}"[:2000] + traceback.format_exc()[-3000:]
        print(f"{name}: {time.monotonic() - start:.1f} s", file=sys.stderr)

    found["tasks"] = [r.asDict() for r in spark.range(0, 8, 1, 8)
                      .mapInArrow(_where, "pid long, cwd string").collect()]

    # Spark's own Parquet writer in the tasks (flat columns), then row-level changes
    rows = spark.sql("SELECT id, IF(id % 10 = 0, 'spam', 'click') AS kind FROM range(2000)")
    step("write native", lambda: ips.write(rows, "db.events", create=True,
                                           partition_by=["bucket(16, id)"],
                                           properties=MERGE_ON_READ))
    step("delete", lambda: ips.delete(spark, "db.events", "kind = 'spam'"))
    step("update", lambda: ips.update(spark, "db.events", set={"kind": "upper(kind)"},
                                      where="id < 5"))
    changes = spark.sql("SELECT id, 'm' AS kind FROM range(1995, 2005)")
    step("merge", lambda: ips.merge("db.events", changes, on="t.id = s.id")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    found["read"] = sorted(tuple(r) for r in ips.read(spark, "db.events").collect())
    found["filtered"] = ips.read(spark, "db.events", row_filter="id < 100").count()

    # the Python-worker writer (list and map columns), read back through the data source
    nested = spark.sql("SELECT id, array(CAST(id AS STRING), 'x') AS tags, map('n', id) AS "
                       "attrs, CAST(id % 3 AS STRING) AS part FROM range(300)")
    step("write python", lambda: ips.write(nested, "db.nested", create=True,
                                           partition_by=["part"]))
    found["source read"] = sorted(
        (r.id, r.tags, r.attrs) for r in spark.read.format("icepark").options(**props)
        .load("db.nested").filter("id >= 250").collect())

    # maintenance: merge the delete files, compact, find a planted orphan
    step("rewrite_position_delete_files", lambda: found.__setitem__(
        "deletes rewritten", ips.rewrite_position_delete_files(
            spark, "db.events", options={"min-input-files": "2"}).rewritten_delete_files_count))
    step("rewrite_data_files", lambda: found.__setitem__(
        "data rewritten", ips.rewrite_data_files(
            spark, "db.events", options={"min-input-files": "2"}).rewritten_data_files))
    location = catalog.load_table("db.events").location.removeprefix("file:")
    partition = sorted(p for p in (Path(location) / "data").iterdir() if p.is_dir())[0]
    planted = partition / "from-a-failed-job.parquet"
    planted.write_bytes(b"PAR1")
    week_ago = time.time() - 7 * 24 * 3600
    os.utime(planted, (week_ago, week_ago))
    found["planted"] = str(planted)
    step("remove_orphan_files", lambda: found.__setitem__("orphans", list(
        ips.remove_orphan_files(spark, "db.events", dry_run=True).orphan_file_locations)))
    found["after maintenance"] = sorted(tuple(r) for r in ips.read(spark, "db.events").collect())

    # a table in S3: its files are written, deleted from and read in the executors
    def s3_table() -> None:
        table = remote.create_table("db.remote", ips.to_iceberg(rows.schema),
                                    properties=MERGE_ON_READ)
        table = ips.write(rows, table)
        ips.delete(spark, table, "kind = 'spam' AND id < 1000")
        found["remote"] = sorted(tuple(r) for r in ips.read(spark, table).collect())
        # its manifests planned in the executors too, which open them from the bucket
        table = table.refresh().set_properties({"read.data-planning-mode": "distributed"})
        found["remote planned in tasks"] = sorted(
            tuple(r) for r in ips.read(spark, table).collect())

    step("s3 table", s3_table)
    spark.stop()
    return found


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2])), default=str))
