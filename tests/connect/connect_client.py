"""A Spark Connect client process running icepark's entry points against the test server:
``python connect_client.py sc://host:port <folder>``. It prints one JSON object: the outcome
of each step (``"ok"`` or the error) and what the reads returned."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import icepark
import icepark.spark as ips
from icepark.catalog import Catalog


def main(url: str, folder: Path) -> dict[str, Any]:
    spark = SparkSession.builder.remote(url).getOrCreate()
    warehouse = folder / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = {"uri": f"sqlite:///{warehouse / 'catalog.db'}", "warehouse": str(warehouse)}
    catalog: Catalog = icepark.load_catalog("default", **props)
    catalog.create_namespace("db")
    ips.configure(spark, catalog)
    steps: dict[str, str] = {}
    found: dict[str, Any] = {"session": type(spark).__module__}

    def step(name: str, action: Callable[[], Any]) -> None:
        try:
            action()
            steps[name] = "ok"
        except Exception as e:
            steps[name] = f"{type(e).__name__}: {e}"[:2000] + traceback.format_exc()[-2000:]

    rows = spark.sql("SELECT id, IF(id % 10 = 0, 'spam', 'click') AS kind FROM range(1000)")
    more = spark.sql("SELECT id, 'click' AS kind FROM range(1000, 1100)")
    step("write", lambda: ips.write(rows, "db.t", create=True, partition_by=["bucket(4, id)"],
                                    properties={"write.delete.mode": "merge-on-read",
                                                "write.update.mode": "merge-on-read"}))
    step("datasource write", lambda: more.write.format("icepark").options(**props)
         .mode("append").save("db.t"))
    step("delete", lambda: ips.delete(spark, "db.t", "kind = 'spam'"))
    step("update", lambda: ips.update(spark, "db.t", set={"kind": "upper(kind)"},
                                      where="id < 5"))
    changes = spark.sql("SELECT id, 'm' AS kind FROM range(995, 1005)")
    step("merge", lambda: ips.merge("db.t", changes, on="t.id = s.id")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    step("upsert", lambda: ips.upsert(
        "db.t", spark.sql("SELECT id, 'u' AS kind FROM range(0, 3)"), key=["id"]))
    def narrow_merge() -> None:
        """A source with more keys than the target filter lists: the target is narrowed by
        a semi join with the broadcast source."""
        ips.write(spark.sql("SELECT id, 'x' AS kind FROM range(3000)"), "db.n", create=True,
                  properties={"write.merge.mode": "merge-on-read"})
        (ips.merge("db.n", spark.sql("SELECT id, 'n' AS kind FROM range(1000, 4000, 2)"),
                   on="t.id = s.id").when_matched_update_all().when_not_matched_insert_all()
         .execute())
        found["narrow merge"] = sorted(
            [r["kind"], r["count"]]
            for r in ips.read(spark, "db.n").groupBy("kind").count().collect())

    step("narrow merge", narrow_merge)
    found["read"] = sorted(tuple(r) for r in ips.read(spark, "db.t").collect())
    found["filtered"] = ips.read(spark, "db.t", row_filter="id < 100").count()
    found["datasource read"] = spark.read.format("icepark").options(**props).load("db.t") \
        .filter("id >= 1000").count()
    step("changes", lambda: found.__setitem__("changes", ips.changes(
        spark, "db.t", start_snapshot_id=catalog.load_table("db.t").current_snapshot()
        .parent_snapshot_id).count()))  # type: ignore[union-attr]
    step("rewrite_data_files", lambda: ips.rewrite_data_files(
        spark, "db.t", options={"min-input-files": "2"}))
    step("rewrite_position_delete_files", lambda: ips.rewrite_position_delete_files(
        spark, "db.t"))
    step("rewrite_manifests", lambda: ips.rewrite_manifests(spark, "db.t"))
    step("compute_table_stats", lambda: found.__setitem__(
        "ndv", ips.compute_table_stats(spark, "db.t").ndv))
    step("compute_partition_stats", lambda: ips.compute_partition_stats(spark, "db.t"))
    step("remove_orphan_files", lambda: found.__setitem__("orphans", len(
        ips.remove_orphan_files(spark, "db.t", dry_run=True).orphan_file_locations)))
    step("metadata_table", lambda: found.__setitem__(
        "snapshots", ips.metadata_table(spark, "db.t", "snapshots").count()))
    found["after maintenance"] = sorted(tuple(r) for r in ips.read(spark, "db.t").collect())

    def distributed_read() -> None:  # manifests planned in tasks on the server
        table = catalog.load_table("db.t")
        table.set_properties({"read.data-planning-mode": "distributed"})
        found["distributed read"] = sorted(tuple(r) for r in ips.read(spark, "db.t").collect())
        table.refresh().remove_properties("read.data-planning-mode")

    step("distributed planning", distributed_read)

    v3 = catalog.create_table("db.v3", ips.to_iceberg(rows.schema), format_version=3,
                              properties={"write.delete.mode": "merge-on-read"})
    step("v3 write", lambda: ips.write(rows, v3))
    step("v3 delete", lambda: ips.delete(spark, "db.v3", "id < 10"))
    found["v3 row ids"] = sorted(
        r[0] for r in ips.read(spark, "db.v3", metadata_columns=["_row_id"])
        .select("_row_id").collect())

    def stream() -> None:
        ips.write(spark.read.format("icepark").options(**props).load("db.t").limit(0),
                  "db.feed", create=True)
        query = (spark.readStream.format("icepark").options(**props).load("db.t")
                 .writeStream.format("icepark").options(**props)
                 .option("checkpointLocation", str(folder / "checkpoints" / "feed"))
                 .trigger(availableNow=True).start("db.feed"))
        query.awaitTermination()
        found["feed"] = sorted(tuple(r) for r in ips.read(spark, "db.feed").collect())

    step("stream", stream)

    def foreach_batch() -> None:
        target = ips.write(rows.limit(0), "db.batches", create=True)
        # foreachBatch functions run on the server, where this process's catalog is unknown
        # and the query's ID is not visible: a Table carries its catalog, query_id names it
        writer = ips.foreach_batch_writer(target, query_id="batches")
        query = (spark.readStream.format("icepark").options(**props).load("db.v3")
                 .writeStream.foreachBatch(writer)
                 .option("checkpointLocation", str(folder / "checkpoints" / "batches"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        found["batches"] = ips.read(spark, "db.batches").count()

    step("foreach_batch_writer", foreach_batch)

    def cached_write() -> None:  # field IDs given by DataFrame.to on the server's cache
        cached = spark.sql("SELECT id, CAST(id AS STRING) AS s FROM range(500)").cache()
        cached.count()
        ips.write(cached, "db.cached", create=True)
        found["cached write"] = sorted(tuple(r) for r in ips.read(spark, "db.cached").collect())
        cached.unpersist()

    step("cached write", cached_write)

    parquet = folder / "legacy"
    spark.range(50).selectExpr("id", "'p' AS kind").write.parquet(str(parquet))
    step("snapshot", lambda: ips.snapshot(spark, str(parquet), "db.legacy"))
    found["legacy"] = ips.read(spark, "db.legacy").count() if steps["snapshot"] == "ok" else 0
    found["steps"] = steps
    return found


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2])), default=str))
