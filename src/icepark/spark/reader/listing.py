"""Spark's file source over the files a table's metadata names, listed without a Spark job.

``spark.read.parquet(*paths)`` lists the paths it is given before it reads them (its
``InMemoryFileIndex``): up to ``spark.sql.sources.parallelPartitionDiscovery.threshold`` paths
(32 by default) on the driver, more in a Spark job with a task per path (up to
``...parallelPartitionDiscovery.parallelism``, 10,000). The files of a scan come from its
manifests, so they are known to exist and have nothing under them; for local files that job is
all overhead. Measured on 2 cores (``local[2]``), building the DataFrame of files of one row
each, median of 5: 300 files 1.11 s with the job, 0.064 s listed on the driver; 2,000 files
5.18 s and 0.28 s; a 300-file table's ``ips.read(...).selectExpr("sum(x)").collect()`` 1.41 s
and 0.42 s.

So local files (no scheme, or ``file:``) are listed on the driver, however many there are.
Other file systems keep the session's setting: each file there is a request to a remote
service, which Spark's job spreads over the executors. On Spark Connect the server resolves
the read later, outside this setting's scope, and lists as its session is set.

**Resolved relations are kept.** Building that DataFrame is the costliest step of a read's
driver work in a classic session: Spark checks that each path exists, lists them into its
file index and analyses the relation, 20 to 30 ms for 4 files on this machine (timed by hand,
the read's whole driver side 60 to 80 ms), every time. A table's data and delete files are
never changed once written (spec, *File System Operations*: "Files are not moved or altered
once they are written"), so the relation over the same files with the same read schema is the
same relation, and a session keeps the last :data:`RELATIONS_KEPT` it built (and at most
:data:`PATHS_KEPT` paths in all), reusing one for the next scan of the same files: repeated
reads of an unchanged table, the notebook's and the streaming job's common case. A DataFrame
is an immutable plan, and everything else a read depends on (the session's settings for the
Parquet reader, the split sizes) is read when a query runs, not when the relation is built.
A file that went missing fails the query that reads it, as it would without the cache.
Connect sessions build plans on the client without a round trip and keep nothing here.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from urllib.parse import urlsplit

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T  # noqa: N812 - PySpark's conventional name

from icepark.spark.connect import is_connect
from icepark.spark.paths import spark_location
from icepark.spark.session import scoped_conf

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
SPARK_LISTING_THRESHOLD = 32
"""Spark's default for :data:`LISTING_THRESHOLD`: more paths than this are listed in a job."""
_ON_THE_DRIVER = {LISTING_THRESHOLD: str(2**31 - 1)}
RELATIONS_KEPT = 64
"""How many resolved file relations a session keeps (see the module docstring)."""
PATHS_KEPT = 200_000
"""How many paths the relations a session keeps hold in all; a read of more is not kept."""
KEEP_RELATIONS = True
"""False: every read resolves its relation anew (the baseline of
``benchmarks/bench_read_relations.py``)."""


def is_local(location: str) -> bool:
    """Whether ``location`` is a file of the local file system.

    >>> is_local("/wh/db/t/data/a.parquet"), is_local("file:/wh/a.parquet")
    (True, True)
    >>> is_local("s3://bucket/wh/a.parquet")
    False
    """
    return urlsplit(location).scheme in ("", "file")


def read_parquet(spark: SparkSession, read_type: T.StructType,
                 locations: Sequence[str]) -> DataFrame:
    """``spark.read.schema(read_type).parquet(...)`` of the files at ``locations`` (exactly
    those files: :func:`~icepark.spark.paths.spark_location`), listed on the driver when there
    are more than Spark would list there and all of them are local (see the module
    docstring)."""
    paths = [spark_location(location) for location in locations]
    if is_connect(spark) or not KEEP_RELATIONS:
        return _resolved(spark, read_type, paths, locations)
    relations = _session_relations(spark)
    key = (read_type.json(), tuple(paths))
    found = relations.get(key)
    if found is None:
        found = _resolved(spark, read_type, paths, locations)
        relations.put(key, found)
    return found


def _resolved(spark: SparkSession, read_type: T.StructType, paths: Sequence[str],
              locations: Sequence[str]) -> DataFrame:
    """Spark's relation over ``paths``, listed as :func:`read_parquet` says."""
    if not lists_on_driver(locations):
        return spark.read.schema(read_type).parquet(*paths)
    with scoped_conf(spark, _ON_THE_DRIVER):
        return spark.read.schema(read_type).parquet(*paths)


class Relations:
    """The file relations one session resolved, the most recently used last, bounded by
    :data:`RELATIONS_KEPT` entries and :data:`PATHS_KEPT` paths (see the module docstring)."""

    def __init__(self, entries: int = RELATIONS_KEPT, paths: int = PATHS_KEPT) -> None:
        self._entries, self._paths = entries, paths
        self._kept: OrderedDict[tuple[str, tuple[str, ...]], DataFrame] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, tuple[str, ...]]) -> DataFrame | None:
        """The relation kept under ``key`` (read schema JSON, paths), or None."""
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: tuple[str, tuple[str, ...]], relation: DataFrame) -> None:
        """Keep ``relation`` under ``key``, forgetting the least recently used beyond the
        bounds; a relation of more than :data:`PATHS_KEPT` paths is not kept."""
        size = len(key[1])
        if size > self._paths:
            return
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return
            self._kept[key] = relation
            self._held += size
            while len(self._kept) > self._entries or self._held > self._paths:
                (_, paths), _ = self._kept.popitem(last=False)
                self._held -= len(paths)

    def __len__(self) -> int:
        return len(self._kept)


_RELATIONS: weakref.WeakKeyDictionary[SparkSession, Relations] = weakref.WeakKeyDictionary()
_RELATIONS_LOCK = threading.Lock()


def _session_relations(spark: SparkSession) -> Relations:
    """The relations ``spark`` keeps (made on first use, gone with the session object)."""
    with _RELATIONS_LOCK:
        found = _RELATIONS.get(spark)
        if found is None:
            found = _RELATIONS[spark] = Relations()
        return found


def lists_on_driver(locations: Sequence[str]) -> bool:
    """Whether :func:`read_parquet` has Spark list ``locations`` on the driver where it would
    run a job: more than :data:`SPARK_LISTING_THRESHOLD` of them, all local.

    >>> lists_on_driver([f"/wh/{i}.parquet" for i in range(33)])
    True
    >>> lists_on_driver([f"/wh/{i}.parquet" for i in range(32)])
    False
    >>> lists_on_driver([*(f"/wh/{i}.parquet" for i in range(40)), "s3://b/wh/x.parquet"])
    False
    """
    return len(locations) > SPARK_LISTING_THRESHOLD and all(map(is_local, locations))


__all__ = ["KEEP_RELATIONS", "LISTING_THRESHOLD", "PATHS_KEPT", "RELATIONS_KEPT",
           "SPARK_LISTING_THRESHOLD", "Relations", "is_local", "lists_on_driver",
           "read_parquet"]
