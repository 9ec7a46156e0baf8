"""Changelog reads: ``ips.changes(spark, table, start_snapshot_id=a, end_snapshot_id=b)``.

The rows the snapshots after ``a`` up to ``b`` inserted and deleted, each with

* ``_change_type``: ``INSERT`` or ``DELETE`` (``UPDATE_BEFORE`` / ``UPDATE_AFTER`` with
  ``compute_updates``),
* ``_change_ordinal``: the snapshot's place in the range, from 0,
* ``_commit_snapshot_id``: the snapshot that made the change,

as the reference implementation's ``create_changelog_view`` gives them. Each snapshot's changed
files are planned by :mod:`icepark.table.streams.changelog` and read twice with the Spark reader
(:func:`icepark.spark.reader.scan_rows.scan_rows`, deletes applied): as of the snapshot's parent
and as of the snapshot. Rows only before are deleted, rows only after inserted: a multiset
difference over every column and, on v3, ``_row_id``, computed for the whole range in one
aggregation (each row counted -1 before and +1 after its snapshot). So deletes
from position delete files, equality delete files and deletion vectors all appear, and rows a
copy-on-write rewrite carried over unchanged do not.

* ``compute_updates``: within a snapshot, a deleted and an inserted row with the same identifier
  columns (``identifier_columns``, else the table's identifier fields, else on v3 ``_row_id``,
  which an update keeps: spec, *Row lineage*) are an ``UPDATE_BEFORE`` and an
  ``UPDATE_AFTER``;
* ``net_changes``: the range's net effect: a row inserted and later deleted does not appear, and
  each remaining change carries the ordinal and snapshot of its last change.

Timestamps choose the range instead of IDs: the snapshots committed after ``start_timestamp``
(ms) up to the one current at ``end_timestamp``. Map columns cannot be compared by Spark's set
operations; a table with one is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spark.layout import read_columns
from icepark.spark.reader.scan_rows import scan_rows
from icepark.spark.schema import quote
from icepark.spec.reserved import ROW_ID
from icepark.spec.snapshots import ancestors_of
from icepark.spec.types import MapType
from icepark.table.scan.tasks import FileScanTask
from icepark.table.streams.changelog import changelog_snapshots, plan_changelog
from icepark.table.table import Table

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
_SIGN = "__icepark_sign"


def changes(spark: SparkSession, table: Table, *, start_snapshot_id: int | None = None,
            end_snapshot_id: int | None = None, start_timestamp: int | None = None,
            end_timestamp: int | None = None, net_changes: bool = False,
            compute_updates: bool = False,
            identifier_columns: Sequence[str] | None = None) -> DataFrame:
    """The changed rows of ``table`` in a range of snapshots (see the module docstring)."""
    metadata = table.metadata
    schema = metadata.schema()
    if net_changes and compute_updates:
        raise ValidationError("net_changes and compute_updates cannot be combined: net changes "
                              "are inserts and deletes of whole rows")
    maps = [f.name for f in schema.fields if _has_map(f.field_type)]
    if maps:
        raise UnsupportedFeature(f"Cannot compute changes of a table with map columns "
                                 f"({', '.join(maps)}): Spark cannot compare map values")
    start, end = _range(table, start_snapshot_id, end_snapshot_id, start_timestamp,
                        end_timestamp)
    lineage = metadata.format_version >= 3
    ids = _identifiers(table, identifier_columns, lineage) if compute_updates else []
    planned = plan_changelog(metadata, table.io, changelog_snapshots(metadata, start, end))
    compared = [*(F.col(quote(f.name)) for f in schema.fields),
                *([F.col(ROW_ID.name)] if lineage else [])]

    def rows(tasks: tuple[FileScanTask, ...]) -> DataFrame:
        read = scan_rows(spark, table, tasks, schema, ["*"],
                         metadata_columns=[ROW_ID.name] if lineage else []).rows
        return read.select(*read_columns(schema), *compared[len(schema.fields):])

    frames = []
    for change in planned:  # each snapshot's rows before (-1) and after (+1) it
        marks = [F.lit(change.ordinal).alias(CHANGE_ORDINAL),
                 F.lit(change.snapshot.snapshot_id).alias(COMMIT_SNAPSHOT_ID)]
        frames += [rows(change.before).select("*", *marks, F.lit(-1).alias(_SIGN)),
                   rows(change.after).select("*", *marks, F.lit(1).alias(_SIGN))]
    if not frames:
        frames = [rows(()).select("*", F.lit(0).alias(CHANGE_ORDINAL),
                                  F.lit(0).cast(T.LongType()).alias(COMMIT_SNAPSHOT_ID),
                                  F.lit(1).alias(_SIGN))]
    values = [quote(c) for c in frames[0].columns
              if c not in (CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID, _SIGN)]
    signed = reduce(DataFrame.unionByName, frames)
    result = _changes(signed.groupBy(*values, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
                      .agg(F.sum(_SIGN).alias(_SIGN)), values)
    if net_changes:
        result = _net(result, [quote(c) for c in result.columns
                               if c not in (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)])
    if compute_updates:
        result = _updates(result, ids)
    if lineage and ROW_ID.name not in (identifier_columns or ()):
        result = result.drop(ROW_ID.name)
    return result


def _has_map(t: object) -> bool:
    if isinstance(t, MapType):
        return True
    children = getattr(t, "fields", None)
    if children is not None:
        return any(_has_map(c.field_type) for c in children)
    element = getattr(t, "element_type", None)
    return element is not None and _has_map(element)


def _range(table: Table, start_id: int | None, end_id: int | None, start_ms: int | None,
           end_ms: int | None) -> tuple[int | None, int | None]:
    """The range as snapshot IDs: the start exclusive, the end inclusive."""
    if start_id is not None and start_ms is not None:
        raise ValidationError("Give start_snapshot_id or start_timestamp, not both")
    if end_id is not None and end_ms is not None:
        raise ValidationError("Give end_snapshot_id or end_timestamp, not both")
    metadata = table.metadata
    if end_ms is not None:
        snapshot = table.snapshot_as_of(end_ms)
        if snapshot is None:
            raise ValidationError(f"No snapshot was current at end_timestamp {end_ms}")
        end_id = snapshot.snapshot_id
    if start_ms is not None:
        head = end_id if end_id is not None else metadata.current_snapshot_id
        older = [s for s in ancestors_of(head, metadata.snapshots_by_id)
                 if s.timestamp_ms < start_ms]
        start_id = older[0].snapshot_id if older else None
    return start_id, end_id


def _identifiers(table: Table, given: Sequence[str] | None, lineage: bool) -> list[str]:
    schema = table.metadata.schema()
    if given:
        names = {f.name for f in schema.fields} | ({ROW_ID.name} if lineage else set())
        unknown = [c for c in given if c not in names]
        if unknown:
            raise ValidationError(f"identifier_columns: the table has no column(s) {unknown}")
        return list(given)
    fields = [schema.find_column_name(i) for i in schema.identifier_field_ids]
    if fields and all(f is not None for f in fields):
        return [f for f in fields if f is not None]
    if lineage:
        return [ROW_ID.name]
    raise ValidationError("compute_updates needs identifier columns: the table has no "
                          "identifier fields; pass identifier_columns=[...]")


def _changes(counted: DataFrame, values: list[str]) -> DataFrame:
    """Rows with a net count (:data:`_SIGN`) as that many inserts, or deletes when negative:
    a multiset difference in one aggregation (one shuffle for the whole range)."""
    copies = F.explode(F.array_repeat(F.lit(1), F.abs(F.col(_SIGN)).cast("int")))
    return counted.where(F.col(_SIGN) != 0).select(
        *values, F.when(F.col(_SIGN) > 0, "INSERT").otherwise("DELETE").alias(CHANGE_TYPE),
        CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID, copies.alias(_SIGN)).drop(_SIGN)


def _net(df: DataFrame, columns: list[str]) -> DataFrame:
    """Inserts and deletes of equal rows cancelled over the whole range, each remaining change
    at its last snapshot."""
    signed = df.withColumn(_SIGN, F.when(F.col(CHANGE_TYPE) == "INSERT", 1).otherwise(-1))
    return _changes(signed.groupBy(*columns).agg(
        F.sum(_SIGN).alias(_SIGN), F.max(CHANGE_ORDINAL).alias(CHANGE_ORDINAL),
        F.max_by(COMMIT_SNAPSHOT_ID, CHANGE_ORDINAL).alias(COMMIT_SNAPSHOT_ID)), columns)


def _updates(df: DataFrame, ids: list[str]) -> DataFrame:
    """A snapshot's one delete and one insert of the same identifier as an update."""
    group = Window.partitionBy(COMMIT_SNAPSHOT_ID, *(F.col(quote(c)) for c in ids))
    deletes = F.sum(F.when(F.col(CHANGE_TYPE) == "DELETE", 1).otherwise(0)).over(group)
    inserts = F.sum(F.when(F.col(CHANGE_TYPE) == "INSERT", 1).otherwise(0)).over(group)
    pair = (deletes == 1) & (inserts == 1)
    kind = (F.when(pair & (F.col(CHANGE_TYPE) == "DELETE"), "UPDATE_BEFORE")
            .when(pair & (F.col(CHANGE_TYPE) == "INSERT"), "UPDATE_AFTER")
            .otherwise(F.col(CHANGE_TYPE)))
    return df.withColumn(CHANGE_TYPE, kind)


__all__ = ["CHANGE_ORDINAL", "CHANGE_TYPE", "COMMIT_SNAPSHOT_ID", "changes"]
