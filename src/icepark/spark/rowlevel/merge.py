"""MERGE INTO from Spark: a source DataFrame merged into a table by clauses, in one snapshot.

The builder has the shape Delta Lake's Python API made familiar, with icepark's names::

    (ips.merge(spark, "db.t", updates, on="t.id = s.id")
        .when_matched_update(set={"d": "s.d"}, condition="s.op = 'u'")
        .when_matched_delete(condition="s.op = 'd'")
        .when_not_matched_insert_all()
        .execute())

Semantics are SQL's MERGE as Spark runs it with the reference implementation: a target row and
a source row *match* where ``on`` is true; each target-source pair, each source row without a
match (``not matched``) and each target row without one (``not matched by source``) takes the
first clause of its kind, in the order given, whose condition is true, and no clause leaves it
as it is (an unmatched source row is then not inserted). Only the last clause of a kind may omit
its condition (a later one could never apply). A target row matched by more than one source row
where an update or delete applies is a cardinality violation
(:class:`~icepark.errors.CardinalityViolation`): nothing is committed.

Expressions (``on``, conditions, assigned values) are Spark SQL over the two aliases
(``target_alias``, default ``t``; ``source_alias``, default ``s``) or Spark ``Column`` objects.
``set`` and ``values`` are keyed by target column (``d``, ``t.d``, a nested ``addr.city`` in an
update); a column an update does not set keeps its value, one an insert does not give takes its
``write-default`` (null without one; a required column without one is an error). The assigned
values are checked and converted as writes convert a DataFrame's columns
(:mod:`icepark.spark.writer.columns`: allowed promotions, checked narrowings, Spark's type names
in errors), before any file is written; a null in a required column fails the job.
``when_matched_update_all`` needs every table column in the source; ``when_not_matched_insert_all``
fills the ones it lacks as an insert does; source columns the table lacks are ignored by both.

Execution (the driver holds file lists, never rows): planning reads the target only from
files that can match (:mod:`icepark.spark.rowlevel.merge_keys`: the ``on`` condition's
target-only predicates and the source's key bounds; with a ``not matched by source`` clause every
file can change). The target rows are read by the Spark reader with their file number and
position (and row lineage on v3), joined with the source (inner; outer on the side whose
unmatched rows a clause acts on), and the clauses computed as one projection. Where no clause
acts on unmatched target rows and the source's join columns fit a broadcast (the usual upsert
of a batch into a large table), a left semi join with the broadcast source first drops the
target rows no source row matches as the scan streams them, so that the join shuffles and
sorts only the matched ones (the source is read once more for it); the changed rows
are applied by :func:`icepark.spark.rowlevel.changes.apply_changes` as ``write.merge.mode``
says (copy-on-write by default, or merge-on-read: deletion vectors on v3, position delete files
on v2), validated at ``write.merge.isolation-level``. Copy-on-write runs the join twice: once
over the columns the clauses need, to count the changes per file, then over every row of the
files that change (outer on the target side, their unchanged rows kept as they are), whose
output is the files' new contents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Self

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import CardinalityViolation, ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr, and_
from icepark.expressions.bound import bind, rewrite_not
from icepark.spark.filters import spark_filter
from icepark.spark.layout import read_columns
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.planning import plan_files
from icepark.spark.reader.scan_rows import FILE_NUMBER, ROW_POSITION, ScanRows, scan_rows
from icepark.spark.rowlevel.assignments import (
    Value,
    as_column,
    checked_assignments,
    clause_values,
    find_name,
    first_line,
    qualified,
    spark_type,
)
from icepark.spark.rowlevel.changes import (
    DELETE,
    INSERT,
    KEEP,
    KIND,
    NEW_ROW_ID,
    NEW_SEQUENCE,
    UPDATE,
    ChangeResult,
    RowChanges,
    apply_changes,
    lineage_columns,
)
from icepark.spark.rowlevel.merge_keys import estimated_bytes, read_on, source_filter
from icepark.spark.rowlevel.modes import MERGE_MODE, row_level_mode
from icepark.spark.schema import quote
from icepark.spark.session import broadcast_threshold, case_sensitive, default_parallelism
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from icepark.spec.schema import Schema
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.snapshot.producer import branch_head
from icepark.table.snapshot.validation import isolation_level
from icepark.table.table import Table

if TYPE_CHECKING:
    from icepark.table.scan.tasks import FileScanTask

MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
"""Table property: ``serializable`` (default) or ``snapshot``."""

When = Literal["matched", "not matched", "not matched by source"]

T_PRESENT = "__icepark_t_present"
S_PRESENT = "__icepark_s_present"
T_ROW_ID = "__icepark_t_row_id"
T_SEQUENCE = "__icepark_t_seq"
CLAUSE = "__icepark_clause"
_KINDS = {"update": UPDATE, "delete": DELETE, "insert": INSERT}
"""The change a clause's action makes (:data:`~icepark.spark.rowlevel.changes.KIND`)."""


@dataclass(frozen=True)
class Clause:
    """One WHEN clause of a MERGE."""

    when: When
    action: Literal["update", "delete", "insert"]
    condition: Value | None = None
    assignments: Mapping[str, Value] | None = field(default=None)
    """Target column -> value; None: every column from the source's column of that name."""

    def describe(self, number: int) -> str:
        verb = {"update": "UPDATE", "delete": "DELETE", "insert": "INSERT"}[self.action]
        star = " *" if self.assignments is None and self.action != "delete" else ""
        return f"clause {number} (WHEN {self.when.upper()} THEN {verb}{star})"


@dataclass(frozen=True)
class MergeResult:
    """What a MERGE did."""

    inserted_rows: int
    updated_rows: int
    deleted_rows: int
    snapshot_id: int | None
    """The new snapshot; None when no clause changed anything (no commit)."""
    rewritten_files: int
    """Data files replaced (copy-on-write) or removed whole (merge-on-read)."""
    added_data_files: int
    added_delete_files: int


class MergeBuilder:
    """A MERGE of ``source`` into ``table``, built clause by clause; see the module docstring."""

    def __init__(self, spark: SparkSession, table: Table, source: DataFrame, on: Value, *,
                 source_alias: str = "s", target_alias: str = "t") -> None:
        if not isinstance(on, (str, Column)):
            raise ValidationError(f"on must be a SQL condition or a Column, not "
                                  f"{type(on).__name__}")
        if source_alias.lower() == target_alias.lower():
            raise ValidationError(f"The source and target aliases must differ, both are "
                                  f"{source_alias!r}")
        self._spark = spark
        self._table = table
        self._source = source
        self._on = on
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._clauses: list[Clause] = []

    # ------------------------------------------------------------------------ clauses

    def when_matched_update(self, set: Mapping[str, Value],
                            condition: Value | None = None) -> Self:
        """Update matched target rows: ``set`` maps target columns to new values."""
        return self._add(Clause("matched", "update", condition, checked_assignments(set, "set")))

    def when_matched_update_all(self, condition: Value | None = None) -> Self:
        """Update every column of matched target rows from the source column of its name."""
        return self._add(Clause("matched", "update", condition))

    def when_matched_delete(self, condition: Value | None = None) -> Self:
        """Delete matched target rows."""
        return self._add(Clause("matched", "delete", condition))

    def when_not_matched_insert(self, values: Mapping[str, Value],
                                condition: Value | None = None) -> Self:
        """Insert a row for each source row without a match: ``values`` maps target columns
        to values; the others take their write-default."""
        return self._add(Clause("not matched", "insert", condition,
                                checked_assignments(values, "values")))

    def when_not_matched_insert_all(self, condition: Value | None = None) -> Self:
        """Insert each source row without a match, its columns by name."""
        return self._add(Clause("not matched", "insert", condition))

    def when_not_matched_by_source_update(self, set: Mapping[str, Value],
                                          condition: Value | None = None) -> Self:
        """Update target rows no source row matches (their values only: there is no
        source row)."""
        return self._add(Clause("not matched by source", "update", condition,
                                checked_assignments(set, "set")))

    def when_not_matched_by_source_delete(self, condition: Value | None = None) -> Self:
        """Delete target rows no source row matches."""
        return self._add(Clause("not matched by source", "delete", condition))

    def _add(self, clause: Clause) -> Self:
        if clause.condition is not None and not isinstance(clause.condition, (str, Column)):
            raise ValidationError(f"A condition must be a SQL condition or a Column, not "
                                  f"{type(clause.condition).__name__}")
        earlier = [c for c in self._clauses if c.when == clause.when and c.condition is None]
        if earlier:
            raise ValidationError(
                f"A WHEN {clause.when.upper()} clause follows one without a condition, so it "
                f"could never apply: only the last WHEN {clause.when.upper()} clause may omit "
                "its condition")
        self._clauses.append(clause)
        return self

    # ------------------------------------------------------------------------ execution

    def execute(self, *, branch: str = MAIN_BRANCH,
                snapshot_properties: Mapping[str, str] | None = None,
                progress: ProgressCallback | None = None) -> MergeResult:
        """Run the MERGE and commit it in one snapshot on ``branch`` (none when nothing
        changes); ``progress`` receives the progress of its Spark jobs."""
        if not self._clauses:
            raise ValidationError("A MERGE needs at least one WHEN clause")
        with track(self._spark, progress):
            return self._execute(branch, snapshot_properties)

    def _execute(self, branch: str,
                 snapshot_properties: Mapping[str, str] | None) -> MergeResult:
        table = self._table
        metadata = table.metadata
        mode = row_level_mode(metadata, MERGE_MODE)
        level = isolation_level(metadata.properties, MERGE_ISOLATION_LEVEL)
        changes = self._changes(metadata, branch)
        result = apply_changes(self._spark, table, changes, mode=mode, isolation=level,
                               branch=branch, operation="MERGE",
                               snapshot_properties=snapshot_properties)
        return _merge_result(result)

    def _changes(self, metadata: TableMetadata, branch: str) -> RowChanges:
        """The rows the clauses change (a DataFrame not yet run) and the files they read."""
        schema = metadata.schema()
        by_source = any(c.when == "not matched by source" for c in self._clauses)
        prune, narrow, source_rows = ((ALWAYS_TRUE, False, None) if by_source
                                      else self._prune(schema))
        head = branch_head(metadata, branch)
        tasks: list[FileScanTask] = []
        if head is not None:
            scan = (self._table.scan(prune, ref=branch) if branch in metadata.refs
                    else self._table.scan(prune))
            tasks = sorted(plan_files(self._spark, scan,
                                      row_lineage=metadata.format_version >= 3),
                           key=lambda t: t.data_file.file_path)
        condition = None if prune == ALWAYS_TRUE else spark_filter(
            rewrite_not(bind(prune, schema)), schema)
        lineage = lineage_columns(metadata)

        def target_rows(condition: Column | bool | None) -> tuple[DataFrame, ScanRows]:
            target = scan_rows(self._spark, self._table, tasks, schema, ["*"], positions=True,
                               metadata_columns=lineage,
                               condition=None if isinstance(condition, bool) else condition)
            rows = target.rows.limit(0) if condition is False else target.rows
            return rows.select(
                *read_columns(schema), FILE_NUMBER, ROW_POSITION,
                *((F.col(c.name) if lineage else F.lit(None).cast(T.LongType())).alias(a)
                  for c, a in ((ROW_ID, T_ROW_ID), (LAST_UPDATED_SEQUENCE_NUMBER, T_SEQUENCE))),
                F.lit(True).alias(T_PRESENT)), target

        # the changes read only the rows the pruning filter leaves; a rewrite reads every row
        # of the files it rewrites
        t_rows, target = target_rows(condition)

        def rewrite(touched: Sequence[int]) -> DataFrame:
            every, _ = target_rows(None)
            return self._changed(every, schema, keep=F.col(FILE_NUMBER).isin(list(touched)))

        try:
            return RowChanges(self._changed(t_rows, schema, narrow=narrow), target.files, tasks,
                              prune,
                              None if head is None else head.snapshot_id, rewrite,
                              kinds=frozenset(_KINDS[c.action] for c in self._clauses),
                              new_rows_estimate=source_rows)
        except AnalysisException as e:
            raise ValidationError(f"MERGE cannot be resolved: {first_line(e)}") from None

    def _prune(self, schema: Schema) -> tuple[Expr, bool, int | None]:
        """The target rows that can match: the ``on`` condition's target-only predicates and
        the source's key bounds (:mod:`icepark.spark.rowlevel.merge_keys`); whether the
        source columns ``on`` reads fit a broadcast (Spark's
        ``spark.sql.autoBroadcastJoinThreshold``, at Spark's estimate of a value's size) while
        its keys are too many to list in the filter; and the source's row count, if the
        bounds' aggregation counted it."""
        if not isinstance(self._on, str):
            return ALWAYS_TRUE, False, None
        on = read_on(self._on, self._target_alias, self._source_alias, schema)
        keys = source_filter(self._source, self._source_alias, on.keys, schema)
        limit = broadcast_threshold(self._spark)
        if keys.rows is None or keys.listed or limit is None:
            return and_(on.target_filter, keys.filter), False, keys.rows
        fields = self._source.schema.fields
        if on.keys_only:
            names = {k.source.lower() for k in on.keys}
            fields = [f for f in fields if f.name.lower() in names]
        width = sum(estimated_bytes(f.dataType) for f in fields)
        return and_(on.target_filter, keys.filter), keys.rows * width <= limit, keys.rows

    def _changed(self, t_rows: DataFrame, schema: Schema, keep: Column | None = None, *,
                 narrow: bool = False) -> DataFrame:
        """The joined rows each clause changes, as :class:`RowChanges` rows; with ``keep`` (a
        condition on the target row) also the unchanged target rows it holds for, as
        :data:`KEEP` rows (a copy-on-write rewrite of the files they are in), and only the
        changed target rows it holds for. ``narrow``: where the join drops the target rows no
        source row matches (inner, right outer), a left semi join with the broadcast source
        drops them first, as the scan streams, so that only matched rows are shuffled for the
        join."""
        ta, sa = self._target_alias, self._source_alias
        given = self._source
        if narrow:  # a source that fits a broadcast: as many tasks as run at once, not more
            given = given.coalesce(default_parallelism(self._spark))
        source = given.select("*", F.lit(True).alias(S_PRESENT)).alias(sa)
        whens = {c.when for c in self._clauses}
        # every target row is carried when unchanged ones are kept
        how = {(False, False): "inner", (True, False): "right_outer",
               (False, True): "left_outer", (True, True): "full_outer"}[
            ("not matched" in whens, keep is not None or "not matched by source" in whens)]
        if narrow and how in ("inner", "right_outer"):
            t_rows = t_rows.alias(ta).join(F.broadcast(given.alias(sa)),
                                           as_column(self._on), "left_semi")
        joined = t_rows.alias(ta).join(source, as_column(self._on), how)
        t_present, s_present = F.col(T_PRESENT).isNotNull(), F.col(S_PRESENT).isNotNull()
        kinds = {"matched": t_present & s_present, "not matched": s_present & ~t_present,
                 "not matched by source": t_present & ~s_present}
        chosen: Column | None = None
        for i, clause in enumerate(self._clauses):
            applies = kinds[clause.when]
            if clause.condition is not None:
                applies = applies & F.coalesce(as_column(clause.condition), F.lit(False))
            chosen = (F.when(applies, F.lit(i)) if chosen is None
                      else chosen.when(applies, F.lit(i)))
        assert chosen is not None
        picked = joined.select("*", chosen.alias(CLAUSE))
        picked = picked.where(F.col(CLAUSE).isNotNull() if keep is None
                              else F.when(t_present, keep).otherwise(F.col(CLAUSE).isNotNull()))
        sensitive = case_sensitive(self._spark)
        source_names = [f.name for f in self._source.schema.fields]
        values = [{} if c.action == "delete" else clause_values(
            picked, schema, c.action, c.assignments, target_alias=ta, source_alias=sa,
            source_names=source_names, case_sensitive=sensitive,
            where=f"MERGE {c.describe(i + 1)}") for i, c in enumerate(self._clauses)]
        # one CASE per column, its tests built once: each Column call is a call into the JVM
        chosen_clause = F.col(CLAUSE)
        by_clause = [chosen_clause == F.lit(i) for i in range(len(self._clauses))]
        columns = [
            # a kept row's value is its own; an insert gives every column a value
            _case([(test, assigned[f.name]) for test, assigned in zip(by_clause, values,
                                                                      strict=True)
                   if f.name in assigned],
                  F.lit(None).cast(spark_type(f)) if keep is None
                  else F.col(qualified(ta, f.name))).alias(f.name)
            for f in schema.fields]
        kind = _case([(test, F.lit(_KINDS[c.action]))
                      for test, c in zip(by_clause, self._clauses, strict=True)],
                     F.lit(None if keep is None else KEEP).cast(T.IntegerType()))
        # lineage: an updated row keeps its ID and takes the new sequence number, a kept row
        # keeps both, an inserted row has neither (spec: "Row lineage assignment")
        labelled = picked.select("*", kind.alias(KIND))
        changed = labelled.select(
            *columns,
            F.when(t_present, F.col(FILE_NUMBER)).alias(FILE_NUMBER),
            F.when(t_present, F.col(ROW_POSITION)).alias(ROW_POSITION),
            F.col(KIND),
            F.when(F.col(KIND).isin(UPDATE, KEEP), F.col(T_ROW_ID)).alias(NEW_ROW_ID),
            F.when(F.col(KIND) == F.lit(KEEP), F.col(T_SEQUENCE)).alias(NEW_SEQUENCE))
        changed.schema  # noqa: B018 - resolve now: a Connect session resolves lazily
        return changed


def _case(branches: Sequence[tuple[Column, Column]], otherwise: Column) -> Column:
    """``CASE WHEN test THEN value ... ELSE otherwise END`` of the (test, value) branches, in
    order: one ``CASE``, built with a call into the JVM per branch."""
    if not branches:
        return otherwise
    (test, value), *rest = branches
    case = F.when(test, value)
    for test, value in rest:
        case = case.when(test, value)
    return case.otherwise(otherwise)


def _merge_result(result: ChangeResult) -> MergeResult:
    return MergeResult(result.inserted_rows, result.updated_rows, result.deleted_rows,
                       result.snapshot_id, result.rewritten_files, result.added_data_files,
                       result.added_delete_files)


def merge(spark: SparkSession, table: Table, source: DataFrame, on: Value, *,
          source_alias: str = "s", target_alias: str = "t") -> MergeBuilder:
    """A MERGE of ``source`` into ``table`` on ``on``; add clauses, then ``execute()``."""
    return MergeBuilder(spark, table, source, on, source_alias=source_alias,
                        target_alias=target_alias)


def upsert(table: Table, source: DataFrame, key: Sequence[str] | None = None, *,
           branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None,
           progress: ProgressCallback | None = None) -> MergeResult:
    """Insert the rows of ``source`` whose ``key`` is not in ``table`` and update those whose
    key is, in one snapshot: a MERGE on ``key`` (the table's identifier fields by default)
    that updates the matched rows' columns the source has, where a value differs, and inserts
    the others whole (columns the source lacks take their write-default). A key given twice
    in the source is a :class:`~icepark.errors.CardinalityViolation` (one aggregation over the
    source finds it), even where SQL's MERGE would insert both rows."""
    spark = source.sparkSession
    schema = table.metadata.schema()
    names = list(key) if key is not None else [
        n for i in sorted(schema.identifier_field_ids)
        if (n := schema.find_column_name(i)) is not None]
    if not names:
        raise ValidationError(
            "upsert needs a key: pass key=[...] or give the table identifier fields "
            "(table.update_schema().set_identifier_fields(...))")
    sensitive = case_sensitive(spark)
    source_names = [f.name for f in source.schema.fields]
    table_names = [f.name for f in schema.fields]
    for name in names:
        top = name.split(".")[0]
        if find_name(top, table_names, sensitive) is None:
            raise ValidationError(f"upsert key {name!r} is not a column of the table")
        if find_name(top, source_names, sensitive) is None:
            raise ValidationError(f"upsert key {name!r} is not a column of the source")
    twice = (source.groupBy(*(F.col(_path(n)) for n in names)).count()
             .where(F.col("count") > F.lit(1)).limit(1).collect())
    if twice:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, twice[0][:-1], strict=True))
        raise CardinalityViolation(
            f"upsert: the source has {twice[0][-1]} rows with the key {shown}; an upsert "
            "needs one row per key (e.g. dropDuplicates or a window keeping the latest); "
            "nothing was written")
    on = " AND ".join(f"t.{_path(n)} = s.{_path(n)}" for n in names)
    keys = {find_name(n, table_names, sensitive) for n in names}
    updated = {f.name: f"s.{quote(found)}" for f in schema.fields
               if f.name not in keys
               and (found := find_name(f.name, source_names, sensitive)) is not None}
    builder = merge(spark, table, source, on)
    if updated:
        comparable = [n for n in updated
                      if _comparable(source.schema[find_name(n, source_names, sensitive)
                                                   or n].dataType)]
        changed = None if len(comparable) < len(updated) else " OR ".join(
            f"NOT (t.{quote(n)} <=> {updated[n]})" for n in comparable)
        builder = builder.when_matched_update(set=updated, condition=changed)
    return builder.when_not_matched_insert_all().execute(
        branch=branch, snapshot_properties=snapshot_properties, progress=progress)


def _path(name: str) -> str:
    return ".".join(quote(part) for part in name.split("."))


def _comparable(t: T.DataType) -> bool:
    """Whether Spark can compare values of ``t`` with ``<=>`` (maps and variants cannot)."""
    match t:
        case T.MapType() | T.VariantType():
            return False
        case T.StructType():
            return all(_comparable(f.dataType) for f in t.fields)
        case T.ArrayType():
            return _comparable(t.elementType)
        case _:
            return True


__all__ = ["MERGE_ISOLATION_LEVEL", "Clause", "MergeBuilder",
           "MergeResult", "merge", "upsert"]
