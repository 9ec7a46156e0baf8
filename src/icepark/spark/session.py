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

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping

from pyspark.sql import DataFrame, SparkSession

from icepark.errors import ValidationError
from icepark.spark.connect import is_connect
from icepark.spec.properties import parse_size

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


BROADCAST_THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


def broadcast_threshold(session: SparkSession) -> int | None:
    """The most bytes Spark broadcasts a join side of (:data:`BROADCAST_THRESHOLD`, in
    Spark's byte notation: ``10485760b``, ``10MB``); None where broadcasts are off (``-1``)
    or the setting cannot be read."""
    raw = str(session.conf.get(BROADCAST_THRESHOLD, "10MB")).strip()
    if raw.startswith("-"):
        return None
    try:
        return parse_size(raw, BROADCAST_THRESHOLD)
    except ValidationError:
        return None


def plan_bytes(df: DataFrame) -> int | None:
    """The size Spark's optimizer estimates ``df`` to have: the statistics of its optimized
    plan, by which its join planning sizes a side against :data:`BROADCAST_THRESHOLD` (a
    built cache's measured size, a local relation's rows, a file scan's files; filters do not
    shrink it). None on Spark Connect, whose client sees no plan statistics, or where Spark
    cannot give them."""
    if is_connect(df.sparkSession):
        return None
    jdf = getattr(df, "_jdf", None)  # a classic DataFrame's JVM side
    if jdf is None:
        return None
    try:  # advisory: whatever this PySpark's JVM side refuses leaves the caller's default
        # a Scala BigInt: py4j gives an int, or an object whose str is its digits
        return int(str(jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:
        return None


_SCOPED_LOCK = threading.Lock()
_SCOPED: dict[tuple[int, str], tuple[int, str | None]] = {}
"""(session, key) -> (blocks holding the setting, the session's own value) of the settings
:func:`scoped_conf` holds."""


@contextlib.contextmanager
def scoped_conf(session: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` in force in ``session`` for the block (for the queries it runs), the
    session's own values afterwards. Spark has no per-query settings: concurrent blocks
    holding one key (always with the same value) share it, and the session's value returns
    when the last one ends, whatever order they end in; other queries running meanwhile see
    the settings too, so only settings that leave results unchanged belong here."""
    held: list[str] = []
    with _SCOPED_LOCK:
        for key, value in settings.items():
            slot = (id(session), key)
            holding = _SCOPED.get(slot)
            if holding is not None:
                _SCOPED[slot] = (holding[0] + 1, holding[1])
            else:
                current = session.conf.get(key, None)
                if current is not None and current.lower() == value.lower():
                    continue
                _SCOPED[slot] = (1, current)
                session.conf.set(key, value)
            held.append(key)
    try:
        yield
    finally:
        with _SCOPED_LOCK:
            for key in held:
                slot = (id(session), key)
                count, original = _SCOPED[slot]
                if count > 1:
                    _SCOPED[slot] = (count - 1, original)
                    continue
                del _SCOPED[slot]
                if original is None:
                    session.conf.unset(key)
                else:
                    session.conf.set(key, original)


SMALL_JOB_SETTINGS: Mapping[str, str] = {"spark.sql.adaptive.enabled": "false"}
"""For jobs whose shuffles are few rows in as many partitions as the job chose (the positions
of a row-level delete, a merge source's key range: one row): adaptive execution would run each
stage as a job of its own and plan the rest again after it, about 0.1 s on two cores for
nothing it could improve (benchmarks/RESULTS.md, "icepark against the Java reference")."""


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

