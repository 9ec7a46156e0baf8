"""The pipeline's flow: landing JSON events, cleaned, appended to the icepark table
``db.events`` through the ``icepark`` sink (one snapshot per micro-batch, exactly once)."""

from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

import icepark.spark as ips

HERE = Path(__file__).resolve().parents[1]
WAREHOUSE = HERE / "warehouse"

spark = SparkSession.active()
ips.register_datasource(spark)  # the `icepark` format, in the pipeline's Connect session

# The sink runs in the server's Python workers: it names its catalog in its options.
dp.create_sink("events_table", format="icepark", options={
    "path": "db.events",
    "uri": f"sqlite:///{WAREHOUSE / 'catalog.db'}",
    "warehouse": str(WAREHOUSE),
})


@dp.append_flow(target="events_table")
def landing_events() -> DataFrame:
    return (spark.readStream.format("json")
            .schema("id LONG, kind STRING, ts STRING")
            .load(str(HERE / "landing"))
            .where("kind <> 'spam'")
            .selectExpr("id", "kind", "CAST(ts AS TIMESTAMP) AS ts"))
