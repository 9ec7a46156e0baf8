"""Which data path a Spark job takes for the files it reads or writes: Spark's own Parquet reader
and writer, or icepark's Arrow reader and Parquet writer inside Spark's Python workers.

Spec, *File System Operations*: "Iceberg only requires that file systems support the following
operations: In-place write ... Seekable reads ... Deletes". Spark opens files through Hadoop
file systems, and stock PySpark ships Hadoop's client (local files, ``hdfs://``,
``viewfs://``) but not ``hadoop-aws`` (S3A) or another object store's connector: its
readers and writers fail on ``s3://``, ``s3a://``, ``gs://`` or ``abfs://`` paths ("No
FileSystem for scheme"). icepark's FileIO (:mod:`icepark.io.fileio`, pyarrow's file systems
configured by the catalog's ``s3.*`` properties) opens them in any Python process. So:

* ``spark``: Spark's Parquet reader (:mod:`icepark.spark.reader.scan_rows`) and, where its
  files are spec-compliant, its Parquet writer (:mod:`icepark.spark.writer.native`);
* ``python``: the planned files are read by :class:`~icepark.io.arrow.reader.ArrowReader` in
  ``mapInArrow`` tasks (:mod:`icepark.spark.reader.arrow_rows`) and written by icepark's
  Parquet writer in the Python workers (:mod:`icepark.spark.writer.tasks`), both through the
  table's FileIO properties, which travel with the tasks.

The session setting :data:`DATA_PATH_SETTING` chooses: ``spark``, ``python``, or ``auto``
(the default), where Spark's path is taken for a location Spark can open: a local path or
``file:``, ``hdfs:`` and ``viewfs:`` (Hadoop's client is in PySpark), or a scheme the session
configures a Hadoop file system for (``spark.hadoop.fs.<scheme>.impl``, e.g.
``spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem`` with ``hadoop-aws`` on the
class path). Hadoop's defaults name S3A's class for ``s3a:`` even where its jar is missing, so
only an explicit setting counts; a session with the connector but without the setting reads
and writes correctly through the Python workers, and ``spark.icepark.data-path=spark`` sends it
through Spark's own path. The check reads the session configuration only (no
``sparkContext``, no JVM access), so it works on Spark Connect too.

>>> scheme_of("s3://bucket/wh/t/data/a.parquet"), scheme_of("/tmp/t"), scheme_of("C:/t")
('s3', '', '')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pyspark.sql import SparkSession

from icepark.errors import UnsupportedFeature, ValidationError

DataPath = Literal["spark", "python"]
DATA_PATH_SETTING = "spark.icepark.data-path"
"""Session setting: ``auto`` (the default), ``spark`` or ``python`` (see the module docstring)."""
HADOOP_SCHEMES = frozenset({"", "file", "hdfs", "viewfs"})
"""Schemes PySpark's own Hadoop client opens without a connector."""


def scheme_of(location: str) -> str:
    """The lower-case URI scheme of ``location`` ("" for a plain path, also a Windows drive)."""
    head, sep, _ = location.partition(":")
    if not sep or len(head) <= 1 or "/" in head:
        return ""
    return head.lower()


def data_path(spark: SparkSession, locations: Iterable[str]) -> DataPath:
    """The data path for files at ``locations`` (a table's data path, or the files a scan
    reads): ``spark`` only if Spark opens every one of their schemes."""
    setting = (spark.conf.get(DATA_PATH_SETTING, None) or "auto").strip().lower()
    if setting in ("spark", "python"):
        return "spark" if setting == "spark" else "python"
    if setting != "auto":
        raise ValidationError(f"Invalid {DATA_PATH_SETTING}={setting!r}: use auto, spark or "
                              "python")
    for scheme in {scheme_of(location) for location in locations}:
        if scheme not in HADOOP_SCHEMES and not spark.conf.get(
                f"spark.hadoop.fs.{scheme}.impl", None):
            return "python"
    return "spark"


_NO_FILE_SYSTEM = ("No FileSystem for scheme", "UnsupportedFileSystemException")


def unopenable(error: BaseException, location: str) -> UnsupportedFeature | None:
    """The typed error for a Spark ``error`` that says Spark has no Hadoop file system for
    ``location``'s scheme (the session forced ``spark.icepark.data-path=spark`` or configured a
    connector class that is missing), else None."""
    text = str(error)
    scheme = scheme_of(location)
    missing_class = "ClassNotFoundException" in text and "FileSystem" in text
    if not (missing_class or any(marker in text for marker in _NO_FILE_SYSTEM)):
        return None
    return UnsupportedFeature(
        f"Spark cannot open {location}: this session has no Hadoop file system for "
        f"{scheme or 'its'} paths. Set {DATA_PATH_SETTING}=auto (or python) to read and write "
        f"them in Python tasks, or install the connector (e.g. hadoop-aws) and set "
        f"spark.hadoop.fs.{scheme or '<scheme>'}.impl")


__all__ = ["DATA_PATH_SETTING", "HADOOP_SCHEMES", "DataPath", "data_path", "scheme_of",
           "unopenable"]
