"""Build or configure a SparkSession for icepark.

What icepark needs from Spark (measured facts in DESIGN.md):

- ``spark.sql.parquet.fieldId.read.enabled``: Spark's Parquet reader resolves columns by the
  Iceberg field ID carried in StructField metadata (``parquet.field.id``), which gives the spec's
  *Column Projection* ("Columns in Iceberg data files are selected by field id").
- ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS``: Iceberg timestamps have
  microsecond precision; Spark's default INT96 is not allowed in Iceberg data files.
- Python workers must run the driver's interpreter (``PYSPARK_PYTHON``).
- ``spark.sql.session.timeZone=UTC``: ``timestamptz`` values are stored as UTC.
- ``spark.sql.timeType.enabled``: Iceberg ``time`` columns are Spark ``TimeType(6)``.
- ``spark.sql.legacy.parquet.nanosAsLong``: Spark infers a Parquet file's
  ``TIMESTAMP(NANOS)`` column (``spark.read.parquet`` without a schema, e.g. files to import
  or write) as ``LongType`` nanoseconds, which writes to ``timestamp_ns`` exactly, instead of
  failing (``PARQUET_TYPE_ILLEGAL``); reads with a schema are not affected.
- ``spark.sql.geospatial.enabled`` (on by default in 4.3): ``geometry``/``geography`` columns
  are Spark's ``GeometryType``/``GeographyType`` where Spark has their CRS
  (:mod:`icepark.spark.geo`).

icepark's own session setting ``spark.icepark.read.timestamp-ns`` (``error``, ``micros`` or
``nanos``; :mod:`icepark.spark.nanos`) says how reads that do not choose return
nanosecond timestamps; unset, such reads are refused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from icepark.spark.connect import is_connect

ICEPARK_SPARK_CONFIG: Mapping[str, str] = {
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # Iceberg's ``time`` maps to Spark's TimeType, which PySpark 4.x keeps behind this flag.
    "spark.sql.timeType.enabled": "true",
    # Parquet TIMESTAMP(NANOS) inferred as long nanoseconds instead of failing
    "spark.sql.legacy.parquet.nanosAsLong": "true",
    # geometry and geography are GeometryType/GeographyType where Spark has their CRS
    "spark.sql.geospatial.enabled": "true",
    # the `icepark` data source's reader pushes filters into planning; Spark refuses a Python
    # data source that implements pushFilters unless this is on
    "spark.sql.python.filterPushdown.enabled": "true",
}


BUILD_DEFAULTS: Mapping[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    # PySpark 4 records the Python call site of every DataFrame and Column call for error
    # messages ("DataFrame debugging"): several JVM round trips and a failed `import IPython`
    # per call, which icepark's jobs (thousands of Column calls per job) pay in the driver.
    # Sessions icepark builds turn it off; ips.configure leaves a given session's setting.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
"""Settings of the sessions :func:`build_session` makes, beyond :data:`ICEPARK_SPARK_CONFIG`
(which :func:`configure` also applies to a session made elsewhere)."""


def build_session(master: str = "local[*]", app_name: str = "icepark",
                  config: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession configured for icepark; extra ``config`` entries win over the defaults.

    An already running session is reused (Spark allows one per driver) and configured.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {**ICEPARK_SPARK_CONFIG, **BUILD_DEFAULTS, **(config or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    configure(session)
    return session


def configure(session: SparkSession) -> None:
    """Apply icepark's runtime SQL settings to an existing session (e.g. a cluster's)."""
    for key, value in ICEPARK_SPARK_CONFIG.items():
        session.conf.set(key, value)


CASE_SENSITIVE = "spark.sql.caseSensitive"
"""Spark's setting of how column names resolve (false unless set: ignoring case)."""


def case_sensitive(session: SparkSession) -> bool:
    """Whether ``session`` resolves column names case-sensitively (:data:`CASE_SENSITIVE`);
    icepark matches the names of a write's DataFrame and of a read's columns and filter the
    same way."""
    return str(session.conf.get(CASE_SENSITIVE, "false")).strip().lower() == "true"


def default_parallelism(session: SparkSession) -> int:
    """How many tasks the cluster runs at once: a classic session's
    ``SparkContext.defaultParallelism``. A Spark Connect session has no ``SparkContext``: its
    ``spark.default.parallelism`` if set, else ``spark.sql.shuffle.partitions`` (callers bound
    it by their own number of items)."""
    if not is_connect(session):
        return int(session.sparkContext.defaultParallelism)
    found = session.conf.get("spark.default.parallelism", None)
    if found is None:
        found = session.conf.get("spark.sql.shuffle.partitions", "200")
    return max(1, int(str(found)))

