"""UPDATE from Spark: ``UPDATE table SET col = expr, ... WHERE ...`` in one snapshot.

The ``where`` filter is icepark's row filter (the syntax of :func:`icepark.spark.delete`, and an
:class:`~icepark.expressions.Expr` too): planning reads only the files that may hold matching
rows (inclusive projection on partitions, column metrics), the Spark reader keeps only the live
rows it matches (as SQL, a row where the filter is null is not updated), and ``set`` gives the
new values as Spark SQL expressions over the row's columns (``"x + 1"``, ``"upper(name)"``) or
Columns, checked against the table schema before any job (:mod:`icepark.spark.rowlevel.
assignments`). The updated rows replace the old ones as ``write.update.mode`` says, by
:func:`icepark.spark.rowlevel.changes.apply_changes`: copy-on-write (default) rewrites the files
holding them; merge-on-read (v2 and later) deletes the old rows by position (deletion vectors
on v3, position delete files on v2) and writes the new rows to new files. On v3 an updated row
keeps its ``_row_id`` and gets the update's sequence number as its
``_last_updated_sequence_number``. Concurrent commits are validated at
``write.update.isolation-level``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import ValidationError
from icepark.expressions import Expr
from icepark.expressions.bound import bind, rewrite_not
from icepark.spark.filters import spark_filter
from icepark.spark.layout import read_columns
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.planning import plan_files
from icepark.spark.reader.scan_rows import FILE_NUMBER, ROW_POSITION, scan_rows
from icepark.spark.rowlevel.assignments import (
    Value,
    checked_assignments,
    clause_values,
    first_line,
)
from icepark.spark.rowlevel.changes import (
    KIND,
    NEW_ROW_ID,
    NEW_SEQUENCE,
    UPDATE,
    RowChanges,
    apply_changes,
    lineage_columns,
)
from icepark.spark.rowlevel.modes import UPDATE_MODE, row_level_mode
from icepark.spark.session import case_sensitive
from icepark.spec.reserved import ROW_ID
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.snapshot.producer import branch_head
from icepark.table.snapshot.validation import as_expr, isolation_level
from icepark.table.table import Table

UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
"""Table property: ``serializable`` (default) or ``snapshot``."""


@dataclass(frozen=True)
class UpdateResult:
    """What an UPDATE did."""

    updated_rows: int
    snapshot_id: int | None
    """The new snapshot; None when no row matched (no commit)."""
    rewritten_files: int
    """Data files replaced (copy-on-write) or removed whole (merge-on-read)."""
    added_data_files: int
    added_delete_files: int


def update_rows(spark: SparkSession, table: Table, set: Mapping[str, Value],
                where: str | Expr | None = None, *, branch: str = MAIN_BRANCH,
                snapshot_properties: Mapping[str, str] | None = None,
                progress: ProgressCallback | None = None) -> UpdateResult:
    """Set the columns of ``set`` in the rows of ``table`` matching ``where`` (every row by
    default) on ``branch``, in one snapshot (see the module docstring); ``table`` is
    refreshed to the new version."""
    assignments = checked_assignments(set, "set")
    metadata = table.metadata
    mode = row_level_mode(metadata, UPDATE_MODE)
    level = isolation_level(metadata.properties, UPDATE_ISOLATION_LEVEL)
    expr = as_expr(where)
    schema = metadata.schema()
    bound = rewrite_not(bind(expr, schema))  # unknown columns fail here, before any job
    condition = spark_filter(bound, schema)
    head = branch_head(metadata, branch)
    if head is None or condition is False:
        return UpdateResult(0, None, 0, 0, 0)
    with track(spark, progress):
        scan = table.scan(expr, ref=branch) if branch in metadata.refs else table.scan(expr)
        tasks = sorted(plan_files(spark, scan, row_lineage=metadata.format_version >= 3),
                       key=lambda t: t.data_file.file_path)
        lineage = lineage_columns(metadata)
        target = scan_rows(spark, table, tasks, schema, ["*"], positions=True,
                           metadata_columns=lineage,
                           condition=None if isinstance(condition, bool) else condition)
        rows = target.rows.select(*read_columns(schema), FILE_NUMBER, ROW_POSITION,
                                  *(F.col(ROW_ID.name) for _ in lineage[:1]))
        try:
            values = clause_values(rows, schema, "update", assignments, target_alias=None,
                                   case_sensitive=case_sensitive(spark), where="UPDATE SET")
            changed = rows.select(
                *(values[f.name].alias(f.name) for f in schema.fields), FILE_NUMBER,
                ROW_POSITION, F.lit(UPDATE).alias(KIND),
                (F.col(ROW_ID.name) if lineage else F.lit(None).cast(T.LongType()))
                .alias(NEW_ROW_ID),
                F.lit(None).cast(T.LongType()).alias(NEW_SEQUENCE))
        except AnalysisException as e:
            raise ValidationError(f"UPDATE cannot be resolved: {first_line(e)}") from None
        result = apply_changes(
            spark, table, RowChanges(changed, target.files, tasks, expr, head.snapshot_id),
            mode=mode, isolation=level, branch=branch, operation="UPDATE",
            snapshot_properties=snapshot_properties)
    return UpdateResult(result.updated_rows, result.snapshot_id, result.rewritten_files,
                        result.added_data_files, result.added_delete_files)


__all__ = ["UPDATE_ISOLATION_LEVEL", "UpdateResult", "update_rows"]
