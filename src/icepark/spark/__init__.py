"""icepark for Spark users: every entry point as a plain function::

    import icepark.spark as ips
    spark = ips.build_session()
    ips.write(df, "db.events", mode="append", create=True, partition_by=["day(ts)"])
    ips.read(spark, "db.events", row_filter="kind = 'click'", columns=["id", "ts"])
    ips.register_views(spark, namespace="db")   # SQL: spark.sql("SELECT ... FROM events")
    ips.delete(spark, "db.events", "kind = 'spam'")
    ips.update(spark, "db.events", set={"kind": "'view'"}, where="kind = 'impression'")
    ips.merge("db.events", changes, on="t.id = s.id").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    ips.upsert("db.events", changes, key=["id"])
    with ips.track_progress(spark, print):   # progress of any Spark work, e.g. a read's
        ips.read(spark, "db.events").count()
    ips.rewrite_data_files(spark, "db.events", strategy="sort", sort_order="ts")  # maintenance
    ips.rewrite_manifests(spark, "db.events"); ips.rewrite_position_delete_files(spark, ...)
    ips.remove_orphan_files(spark, "db.events", dry_run=True)
    ips.compute_table_stats(spark, "db.events"); ips.compute_partition_stats(spark, ...)
    df.writeStream.format("icepark").option("checkpointLocation", ckpt).start("db.events")
    spark.readStream.format("icepark").load("db.events")       # appended rows, as a stream
    ips.changes(spark, "db.events", start_snapshot_id=a, compute_updates=True)  # changelog
    df.writeStream.foreachBatch(ips.foreach_batch_writer("db.events")).start()  # exactly once

A table is given as a :class:`~icepark.table.table.Table` or as an identifier (``"db.events"``)
in the catalog the session was configured with (:func:`configure`; the default catalog
otherwise). Metadata work (planning, commits) runs here, in the driver; data work runs in
Spark tasks. The functions are thin: each names where its work is done.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from icepark.spec.snapshots import MAIN_BRANCH

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icepark.catalog import Catalog
    from icepark.expressions import Expr
    from icepark.spark.datasource.source import register as register_datasource
    from icepark.spark.imports import ImportResult, add_files, migrate, snapshot
    from icepark.spark.maintenance.compaction import RewriteDataFilesResult
    from icepark.spark.maintenance.deletes import (
        RewriteDeletesResult,
        rewrite_position_delete_files,
    )
    from icepark.spark.maintenance.manifests import rewrite_manifests
    from icepark.spark.maintenance.orphans import remove_orphan_files
    from icepark.spark.maintenance.stats import compute_partition_stats, compute_table_stats
    from icepark.spark.progress import Progress, ProgressCallback
    from icepark.spark.progress import track as track_progress
    from icepark.spark.reader.views import register_views
    from icepark.spark.rowlevel.assignments import Value
    from icepark.spark.rowlevel.delete import DeleteResult
    from icepark.spark.rowlevel.merge import MergeBuilder, MergeResult
    from icepark.spark.rowlevel.update import UpdateResult
    from icepark.spark.schema import to_iceberg, to_spark
    from icepark.spark.session import build_session
    from icepark.spark.streams.foreach_batch import foreach_batch_writer
    from icepark.spark.tables import TableLike, session_catalog
    from icepark.spec.metadata import FormatVersion
    from icepark.table.maintenance.orphans import OrphanFilesResult
    from icepark.table.maintenance.partition_stats import PartitionStatsResult
    from icepark.table.maintenance.table_stats import TableStatsResult
    from icepark.table.snapshot.rewrite_manifests import RewriteManifestsResult
    from icepark.table.table import Table

# Names served from their modules on first use, so that a Python worker importing one module
# of this package (a write task, a data source reader) does not import all of them.
_LAZY = {  # name -> (module, name there)
    "DeleteResult": ("icepark.spark.rowlevel.delete", "DeleteResult"),
    "ImportResult": ("icepark.spark.imports", "ImportResult"),
    "MergeBuilder": ("icepark.spark.rowlevel.merge", "MergeBuilder"),
    "MergeResult": ("icepark.spark.rowlevel.merge", "MergeResult"),
    "OrphanFilesResult": ("icepark.table.maintenance.orphans", "OrphanFilesResult"),
    "PartitionStatsResult": ("icepark.table.maintenance.partition_stats",
                             "PartitionStatsResult"),
    "RewriteDeletesResult": ("icepark.spark.maintenance.deletes", "RewriteDeletesResult"),
    "RewriteManifestsResult": ("icepark.table.snapshot.rewrite_manifests",
                               "RewriteManifestsResult"),
    "TableStatsResult": ("icepark.table.maintenance.table_stats", "TableStatsResult"),
    "compute_partition_stats": ("icepark.spark.maintenance.stats", "compute_partition_stats"),
    "compute_table_stats": ("icepark.spark.maintenance.stats", "compute_table_stats"),
    "foreach_batch_writer": ("icepark.spark.streams.foreach_batch", "foreach_batch_writer"),
    "remove_orphan_files": ("icepark.spark.maintenance.orphans", "remove_orphan_files"),
    "rewrite_manifests": ("icepark.spark.maintenance.manifests", "rewrite_manifests"),
    "rewrite_position_delete_files": ("icepark.spark.maintenance.deletes",
                                      "rewrite_position_delete_files"),
    "RewriteDataFilesResult": ("icepark.spark.maintenance.compaction",
                               "RewriteDataFilesResult"),
    "Progress": ("icepark.spark.progress", "Progress"),
    "TableLike": ("icepark.spark.tables", "TableLike"),
    "UpdateResult": ("icepark.spark.rowlevel.update", "UpdateResult"),
    "add_files": ("icepark.spark.imports", "add_files"),
    "build_session": ("icepark.spark.session", "build_session"),
    "migrate": ("icepark.spark.imports", "migrate"),
    "register_datasource": ("icepark.spark.datasource.source", "register"),
    "register_views": ("icepark.spark.reader.views", "register_views"),
    "session_catalog": ("icepark.spark.tables", "session_catalog"),
    "snapshot": ("icepark.spark.imports", "snapshot"),
    "to_iceberg": ("icepark.spark.schema", "to_iceberg"),
    "to_spark": ("icepark.spark.schema", "to_spark"),
    "track_progress": ("icepark.spark.progress", "track"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'icepark.spark' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def configure(spark: SparkSession, catalog: Catalog | str | None = None,
              **catalog_properties: str) -> SparkSession:
    """Ready an existing session (a cluster's, a notebook's) for icepark and name its catalog.

    Applies icepark's runtime settings (:func:`icepark.spark.session.configure`: field-ID
    Parquet reads and writes, microsecond timestamps, UTC), registers the ``icepark`` data
    source, and makes ``catalog`` (a catalog object, or a name loaded with
    ``catalog_properties`` such as ``uri=`` and ``warehouse=``) the one table identifiers
    resolve in. Returns ``spark``.
    """
    from icepark.spark import session, tables  # noqa: PLC0415 - see _LAZY
    from icepark.spark.datasource.source import register  # noqa: PLC0415

    session.configure(spark)
    register(spark)
    tables.use_catalog(spark, catalog, catalog_properties)
    return spark


def read(  # noqa: PLR0917 - the order of icepark.spark.reader.read.read
        spark: SparkSession, table: TableLike, row_filter: str | Expr | None = None,
        columns: Sequence[str] | None = None, snapshot_id: int | None = None,
        as_of_timestamp: int | None = None, ref: str | None = None, *,
        metadata_columns: Sequence[str] = (), timestamp_ns: str | None = None) -> DataFrame:
    """The rows of ``table`` matching ``row_filter`` (``"kind = 'click' AND id > 5"``), with
    ``columns`` (all by default), at the current snapshot or one chosen by ``snapshot_id``,
    ``as_of_timestamp`` (milliseconds) or ``ref`` (a branch or tag), then the
    ``metadata_columns`` asked for: ``_file``, ``_pos``, ``_spec_id`` and, on format
    version 3 tables, the row lineage columns ``_row_id`` and
    ``_last_updated_sequence_number``.

    Spark has no nanosecond timestamp: a ``timestamp_ns``/``timestamptz_ns`` column is read
    only as ``timestamp_ns`` says -- ``"micros"``, Spark timestamps truncated toward negative
    infinity, or ``"nanos"``, exact ``bigint`` nanoseconds since the epoch; by default
    (``"error"``, or the session's ``spark.icepark.read.timestamp-ns``) such a read is
    refused, never silently truncated. Filters on those columns are exact either way.

    Only the planned files and needed columns are read, by Spark's own Parquet reader, with
    deletes applied (:func:`icepark.spark.reader.read.read`).
    """
    from icepark.spark.reader.read import read as read_table  # noqa: PLC0415 - see _LAZY
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return read_table(spark, resolve(spark, table), row_filter, columns, snapshot_id,
                      as_of_timestamp, ref, metadata_columns=metadata_columns,
                      timestamp_ns=timestamp_ns)


def read_incremental(  # noqa: PLR0917 - the order of icepark.spark.reader.read
        spark: SparkSession, table: TableLike, from_snapshot_id: int | None,
        to_snapshot_id: int | None = None, row_filter: str | Expr | None = None,
        columns: Sequence[str] | None = None, *, timestamp_ns: str | None = None) -> DataFrame:
    """The rows appended after ``from_snapshot_id`` (exclusive) up to ``to_snapshot_id``
    (inclusive; the current snapshot by default): appends only
    (:func:`icepark.spark.reader.read.read_incremental`); ``timestamp_ns`` as for
    :func:`read`."""
    from icepark.spark.reader.read import read_incremental as appended  # noqa: PLC0415
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return appended(spark, resolve(spark, table), from_snapshot_id, to_snapshot_id,
                    row_filter, columns, timestamp_ns=timestamp_ns)


def write(df: DataFrame, table: TableLike, mode: str = "append", *,
          overwrite_filter: str | Expr | None = None, branch: str = MAIN_BRANCH,
          snapshot_properties: Mapping[str, str] | None = None, merge_schema: bool = False,
          create: bool = False, partition_by: str | Sequence[str] | None = None,
          sort_by: str | Sequence[str] | None = None,
          properties: Mapping[str, str] | None = None,
          format_version: FormatVersion = 2,
          progress: ProgressCallback | None = None) -> Table:
    """Write ``df`` to ``table`` in one snapshot and return the table at its new version.

    ``mode`` is ``append``, ``overwrite`` (the rows matching ``overwrite_filter``; all rows by
    default) or ``dynamic`` (the partitions present in ``df``). ``merge_schema`` first adds
    the DataFrame's new columns to the table. Files are written in the Spark tasks and
    committed once (:func:`icepark.spark.writer.write.write`).

    With ``create=True`` a missing table is created from ``df.schema`` (fresh field IDs), as
    ``df.writeTo(t).create()`` does, partitioned by ``partition_by`` (``"day(ts)"``,
    ``"bucket(16, id)"``), sorted by ``sort_by`` (``"ts desc, id"``), with ``properties`` and
    ``format_version``; those four apply only when the table is created.

    ``progress``, if given, is called with a :class:`~icepark.spark.progress.Progress` about
    twice a second while the Spark job runs (stages, tasks done of total, elapsed), and once
    more at its end with ``done=True`` and the rows and bytes written.
    """
    from icepark.errors import NoSuchTable  # noqa: PLC0415 - see _LAZY
    from icepark.spark.tables import resolve, session_catalog  # noqa: PLC0415
    from icepark.spark.writer.write import write as write_frame  # noqa: PLC0415
    from icepark.table.table import Table  # noqa: PLC0415

    spark = df.sparkSession
    if isinstance(table, Table):
        target = table
    elif create:
        target = session_catalog(spark).create_table_if_not_exists(
            table, df.schema, partition_spec=partition_by, sort_order=sort_by,
            properties=properties, format_version=format_version)
    else:
        try:
            target = resolve(spark, table)
        except NoSuchTable as e:
            raise NoSuchTable(f"{e}; pass create=True to create it from the DataFrame's "
                              "schema") from e
    return write_frame(df, target, mode, overwrite_filter=overwrite_filter, branch=branch,
                       snapshot_properties=snapshot_properties, merge_schema=merge_schema,
                       progress=progress)


def delete(spark: SparkSession, table: TableLike, where: str | Expr, *,
           branch: str = MAIN_BRANCH,
           snapshot_properties: Mapping[str, str] | None = None,
           progress: ProgressCallback | None = None) -> DeleteResult:
    """Delete the rows of ``table`` matching ``where`` in one snapshot: copy-on-write (files
    rewritten without them) or merge-on-read (position delete files), as the table property
    ``write.delete.mode`` says (:func:`icepark.spark.rowlevel.delete.delete_rows`).
    ``progress`` is called as :func:`write`'s is, with the progress of its Spark jobs."""
    from icepark.spark.rowlevel.delete import delete_rows  # noqa: PLC0415 - see _LAZY
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return delete_rows(spark, resolve(spark, table), where, branch=branch,
                       snapshot_properties=snapshot_properties, progress=progress)


def update(spark: SparkSession, table: TableLike, set: Mapping[str, Value],
           where: str | Expr | None = None, *, branch: str = MAIN_BRANCH,
           snapshot_properties: Mapping[str, str] | None = None,
           progress: ProgressCallback | None = None) -> UpdateResult:
    """``UPDATE table SET ... WHERE ...`` in one snapshot: ``set`` maps columns to Spark SQL
    expressions over the row (``{"x": "x + 1"}``) or Columns, ``where`` is a row filter as
    :func:`delete` takes (every row by default). Copy-on-write or merge-on-read as the table
    property ``write.update.mode`` says (:func:`icepark.spark.rowlevel.update.update_rows`)."""
    from icepark.spark.rowlevel.update import update_rows  # noqa: PLC0415 - see _LAZY
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return update_rows(spark, resolve(spark, table), set, where, branch=branch,
                       snapshot_properties=snapshot_properties, progress=progress)


def merge(table: TableLike, source: DataFrame, on: Value, *, source_alias: str = "s",
          target_alias: str = "t") -> MergeBuilder:
    """``MERGE INTO table USING source ON on``: add ``when_...`` clauses, then
    ``execute()`` (:mod:`icepark.spark.rowlevel.merge`). ``on`` and the clauses' conditions
    and values are Spark SQL over the two aliases (``t`` and ``s`` by default), or Columns.
    Copy-on-write or merge-on-read as the table property ``write.merge.mode`` says."""
    from icepark.spark.rowlevel.merge import merge as merge_into  # noqa: PLC0415 - see _LAZY
    from icepark.spark.tables import resolve  # noqa: PLC0415

    spark = source.sparkSession
    return merge_into(spark, resolve(spark, table), source, on, source_alias=source_alias,
                      target_alias=target_alias)


def upsert(table: TableLike, df: DataFrame, key: Sequence[str] | None = None, *,
           branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None,
           progress: ProgressCallback | None = None) -> MergeResult:
    """Update the rows of ``table`` whose ``key`` (default: the table's identifier fields) is
    in ``df`` with ``df``'s values, and insert the rest, in one snapshot: a MERGE
    (:func:`icepark.spark.rowlevel.merge.upsert`). A key twice in ``df`` is an error."""
    from icepark.spark.rowlevel.merge import upsert as merge_upsert  # noqa: PLC0415
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return merge_upsert(resolve(df.sparkSession, table), df, key, branch=branch,
                        snapshot_properties=snapshot_properties, progress=progress)


def rewrite_data_files(
        spark: SparkSession, table: TableLike, *,
        strategy: Literal["binpack", "sort", "zorder"] = "binpack",
        sort_order: str | Sequence[str] | None = None, zorder_by: Sequence[str] | None = None,
        where: str | Expr | None = None, options: Mapping[str, str] | None = None,
        branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None,
        progress: ProgressCallback | None = None) -> RewriteDataFilesResult:
    """Compact ``table``'s data files (those ``where`` may select) into target-size files,
    deletes applied, in ``replace`` snapshots: ``strategy`` ``binpack``, ``sort`` (by
    ``sort_order``, e.g. ``"k DESC NULLS LAST, id"``, default the table's) or ``zorder`` (by
    ``zorder_by``); ``options`` are the reference's (``target-file-size-bytes``,
    ``min-input-files``, ``rewrite-all``, ``partial-progress.enabled``, ``output-spec-id``,
    ...: :mod:`icepark.table.maintenance.compaction`)."""
    from icepark.spark.maintenance.compaction import rewrite_data_files as compact  # noqa: PLC0415
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return compact(spark, resolve(spark, table), strategy=strategy, sort_order=sort_order,
                   zorder_by=zorder_by, where=where, options=options, branch=branch,
                   snapshot_properties=snapshot_properties, progress=progress)


def changes(spark: SparkSession, table: TableLike, *, start_snapshot_id: int | None = None,
            end_snapshot_id: int | None = None, start_timestamp: int | None = None,
            end_timestamp: int | None = None, net_changes: bool = False,
            compute_updates: bool = False,
            identifier_columns: Sequence[str] | None = None) -> DataFrame:
    """The rows the snapshots after ``start_snapshot_id`` up to ``end_snapshot_id`` (or
    committed after ``start_timestamp`` up to ``end_timestamp``, ms) inserted and deleted,
    with ``_change_type``, ``_change_ordinal`` and ``_commit_snapshot_id``, as the reference's
    ``create_changelog_view`` (:mod:`icepark.spark.streams.changes`): copy-on-write carry-over
    rows removed; deletes of position and equality delete files and deletion vectors
    included; ``compute_updates`` pairs them into ``UPDATE_BEFORE``/``UPDATE_AFTER`` by
    ``identifier_columns`` (the identifier fields, or ``_row_id`` on v3); ``net_changes``
    gives the range's net effect."""
    from icepark.spark.streams.changes import changes as changed_rows  # noqa: PLC0415
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return changed_rows(spark, resolve(spark, table), start_snapshot_id=start_snapshot_id,
                        end_snapshot_id=end_snapshot_id, start_timestamp=start_timestamp,
                        end_timestamp=end_timestamp, net_changes=net_changes,
                        compute_updates=compute_updates, identifier_columns=identifier_columns)


def metadata_table(spark: SparkSession, table: TableLike, name: str,
                   snapshot_id: int | None = None) -> DataFrame:
    """A metadata table of ``table`` (``snapshots``, ``history``, ``refs``, ``manifests``,
    ``files``, ``entries``, ``partitions`` and their ``all_`` forms) as a DataFrame."""
    from icepark.spark.metadata_tables import metadata_table as inspect  # noqa: PLC0415
    from icepark.spark.tables import resolve  # noqa: PLC0415

    return inspect(spark, resolve(spark, table), name, snapshot_id)


def load_table(spark: SparkSession, identifier: TableLike) -> Table:
    """The table ``identifier`` names in the session's catalog."""
    from icepark.spark.tables import resolve  # noqa: PLC0415 - see _LAZY

    return resolve(spark, identifier)


__all__ = [
    "DeleteResult",
    "ImportResult",
    "MergeBuilder",
    "MergeResult",
    "OrphanFilesResult",
    "PartitionStatsResult",
    "Progress",
    "RewriteDataFilesResult",
    "RewriteDeletesResult",
    "RewriteManifestsResult",
    "TableLike",
    "TableStatsResult",
    "UpdateResult",
    "add_files",
    "build_session",
    "changes",
    "compute_partition_stats",
    "compute_table_stats",
    "configure",
    "delete",
    "foreach_batch_writer",
    "load_table",
    "merge",
    "metadata_table",
    "migrate",
    "read",
    "read_incremental",
    "register_datasource",
    "register_views",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_manifests",
    "rewrite_position_delete_files",
    "session_catalog",
    "snapshot",
    "to_iceberg",
    "to_spark",
    "track_progress",
    "update",
    "upsert",
    "write",
]
