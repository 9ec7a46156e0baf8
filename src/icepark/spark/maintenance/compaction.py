"""Compaction (``rewrite_data_files``): rewriting data files into fewer, target-size (and
optionally sorted or Z-ordered) files as Spark jobs, committed as ``replace`` snapshots.

Spec, *Snapshots*: ``replace`` -- "Data and delete files were added and removed without
changing table data; i.e., compaction, changing the data file format, or relocating data
files". Which files are rewritten, in which groups, is planned by
:mod:`icepark.table.maintenance.compaction` (the reference implementation's options and
defaults). Each group is one Spark job: its files are read by the Spark reader with their
deletes applied (so the rewrite also removes deleted rows, and on v3 the deletion vectors of the
replaced files go with them), arranged by the strategy, and written by
:func:`icepark.spark.writer.data_files.write_data_files` to the output spec
(``output-spec-id``, default the current one) at ``target-file-size-bytes``:

* ``binpack``: the group's rows as they are, in ``ceil(bytes / target)`` tasks (no shuffle);
* ``sort``: range-partitioned into that many tasks and sorted by ``sort_order`` (the table's
  sort order by default), e.g. ``"k DESC NULLS LAST, id"``;
* ``zorder``: range-partitioned and sorted by the Z-order value of ``zorder_by``
  (:mod:`icepark.io.arrow.zorder`), which clusters rows by all those columns at once.

Small groups share a job. A table with many small partitions (say 500 partitions of a few
small files each) has as many groups, each expected to become one file; a Spark job for each
would cost far more than their rows (about half a second of driver work and scheduling per
job). Groups that become one file are packed, up to ``max-file-group-size-bytes`` per pack,
into one job that hash-distributes the rows by their output partition (so each partition's
rows still become one file, sorted or Z-ordered within it). Without partial progress every
group is in the one commit, so any group may be packed; with it, only groups that are alone in
their partition of the output spec are, and the job's files are assigned back to their groups
by partition, so that each commit still replaces exactly its groups' rows.

Row lineage (v3), spec *Row lineage assignment*: rows moved to a new file keep their
``_row_id`` and ``_last_updated_sequence_number``, written into the new files.

Commits: one ``replace`` snapshot for all groups, or with ``partial-progress.enabled`` up to
``partial-progress.max-commits`` of them, each validated from the snapshot the compaction read:
"Replace operations must verify that the files that will be deleted are still in the table",
and no delete file added since may apply to a rewritten file
(:class:`icepark.table.snapshot.overwrite.RewriteFiles`), so a concurrent row-level delete is
never lost. With ``use-starting-sequence-number`` (the default) the new files take the data
sequence number of that snapshot: "It is also possible to add a new file with data that
logically belongs to an older sequence number", so equality deletes committed meanwhile still
apply to them. Under partial progress a commit that fails fails alone (its files are deleted)
and the others stand; otherwise a failure deletes every file written and commits nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name

from icepark.errors import CommitStateUnknown, ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr
from icepark.io.arrow.zorder import z_values
from icepark.spark.layout import read_columns
from icepark.spark.progress import ProgressCallback, track
from icepark.spark.reader.planning import plan_files
from icepark.spark.reader.scan_rows import scan_rows
from icepark.spark.rowlevel.changes import lineage_columns
from icepark.spark.schema import quote
from icepark.spark.session import default_parallelism
from icepark.spark.transforms import partition_columns
from icepark.spark.writer.data_files import WrittenFiles, write_data_files
from icepark.spark.writer.distribution import DISTRIBUTION_MODE, sort_keys
from icepark.spark.writer.write import JOB_ID_PROPERTY
from icepark.spec.clauses import sort_order as parse_sort_order
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.spec.sorting import SortOrder
from icepark.spec.types import PrimitiveType
from icepark.table.maintenance.compaction import (
    TARGET_FILE_SIZE_PROPERTY,
    FileGroup,
    RewriteOptions,
    commit_batches,
    plan_groups,
)
from icepark.table.scan.tasks import FileScanTask
from icepark.table.snapshot.producer import branch_head
from icepark.table.snapshot.rewrite_deletes import DeleteRewriteOptions, plan
from icepark.table.snapshot.validation import as_expr
from icepark.table.table import Table

Strategy = Literal["binpack", "sort", "zorder"]
STRATEGIES: tuple[Strategy, ...] = ("binpack", "sort", "zorder")
_Z = "__icepark_z"


@dataclass(frozen=True)
class RewriteDataFilesResult:
    """What a compaction did."""

    rewritten_data_files: int
    added_data_files: int
    rewritten_bytes: int
    added_bytes: int
    failed_data_files: int
    """Files of groups whose commit failed under partial progress (left as they were)."""
    groups: int
    """File groups rewritten and committed."""
    snapshot_ids: tuple[int, ...]
    """The ``replace`` snapshots committed (none when nothing needed rewriting), the last
    one removing dangling deletes with ``remove-dangling-deletes``."""


@dataclass(frozen=True)
class _Arrangement:
    """How a group's rows are laid out before they are written."""

    strategy: Strategy
    order: SortOrder | None = None
    zorder_by: tuple[str, ...] = ()


def rewrite_data_files(
        spark: SparkSession, table: Table, *, strategy: Strategy = "binpack",
        sort_order: str | Sequence[str] | None = None,
        zorder_by: Sequence[str] | None = None, where: str | Expr | None = None,
        options: Mapping[str, str] | None = None, branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        progress: ProgressCallback | None = None) -> RewriteDataFilesResult:
    """Compact the data files of ``table`` on ``branch`` that ``where`` may select (every
    file by default), as the module docstring describes; ``table`` is refreshed."""
    metadata = table.metadata
    opts = RewriteOptions.parse(options, metadata)
    arrangement = _arrangement(metadata, strategy, sort_order, zorder_by)
    expr = as_expr(where) if where is not None else ALWAYS_TRUE
    head = branch_head(metadata, branch)
    if head is None:
        return RewriteDataFilesResult(0, 0, 0, 0, 0, 0, ())
    with track(spark, progress):
        scan = table.scan(expr, ref=branch) if branch in metadata.refs else table.scan(expr)
        tasks = plan_files(spark, scan, row_lineage=metadata.format_version >= 3)
        groups = plan_groups(tasks, opts)
        if not groups:
            return RewriteDataFilesResult(0, 0, 0, 0, 0, 0, ())
        sequence = head.sequence_number if opts.use_starting_sequence_number else None
        job = _Job(spark, table, metadata, opts, arrangement)
        return job.run(groups, head.snapshot_id, sequence, branch,
                       dict(snapshot_properties or {}))


def _arrangement(metadata: TableMetadata, strategy: str, sort_order: str | Sequence[str] | None,
                 zorder_by: Sequence[str] | None) -> _Arrangement:
    schema = metadata.schema()
    if strategy not in STRATEGIES:
        raise ValidationError(f"Unknown rewrite strategy {strategy!r}: choose one of "
                              f"{', '.join(STRATEGIES)}")
    if strategy != "sort" and sort_order is not None:
        raise ValidationError(f"sort_order is for strategy='sort', not {strategy!r}")
    if strategy != "zorder" and zorder_by:
        raise ValidationError(f"zorder_by is for strategy='zorder', not {strategy!r}")
    if strategy == "binpack":
        return _Arrangement("binpack")
    if strategy == "sort":
        order = (parse_sort_order(sort_order, schema) if sort_order is not None
                 else metadata.sort_order())
        if order.is_unsorted:
            raise ValidationError("strategy='sort' needs a sort order: the table has none; "
                                  "pass sort_order='col [asc|desc] [nulls first|last], ...'")
        return _Arrangement("sort", order=order)
    names = tuple(zorder_by or ())
    if not names:
        raise ValidationError("strategy='zorder' needs zorder_by=[columns]")
    for name in names:
        field = schema.find_field(name) if schema.find_field_id(name) is not None else None
        if field is None:
            raise ValidationError(f"zorder_by: the table has no column {name!r} (columns: "
                                  f"{', '.join(f.name for f in schema.fields)})")
        if not isinstance(field.field_type, PrimitiveType):
            raise ValidationError(f"zorder_by: column {name!r} is a {field.field_type}; "
                                  "Z-order takes primitive columns")
    return _Arrangement("zorder", zorder_by=names)


@dataclass
class _Job:
    spark: SparkSession
    table: Table
    metadata: TableMetadata
    options: RewriteOptions
    arrangement: _Arrangement

    def run(self, groups: Sequence[FileGroup], head_id: int, sequence: int | None,
            branch: str, properties: dict[str, str]) -> RewriteDataFilesResult:
        batches = commit_batches(groups, self.options)
        written: dict[int, WrittenFiles] = {}
        try:
            written = self._write_all(groups)
        except BaseException:
            for files in written.values():
                files.abort(self.table.io)
            raise
        committed: list[tuple[FileGroup, WrittenFiles]] = []
        snapshots: list[int] = []
        failed_files = 0
        failures: list[BaseException] = []
        for batch in batches:
            pairs = [(g, written[id(g)]) for g in batch]
            try:
                snapshots.append(self._commit(pairs, head_id, sequence, branch, properties))
            except CommitStateUnknown:
                raise
            except BaseException as e:
                for _, files in pairs:
                    files.abort(self.table.io)
                if not self.options.partial_progress or not isinstance(e, Exception):
                    raise
                failures.append(e)
                failed_files += sum(len(g.tasks) for g in batch)
                continue
            committed += pairs
        if committed and self.options.remove_dangling_deletes:
            removed = self._remove_dangling(branch, properties)
            snapshots += [removed] if removed is not None else []
        allowed = (self.options.max_commits if self.options.max_failed_commits is None
                   else self.options.max_failed_commits)
        if failures and (not committed or len(failures) > allowed):
            raise ValidationError(
                f"rewrite_data_files: {len(failures)} of {len(batches)} commits failed "
                f"({failed_files} files left as they were); the first: {failures[0]}"
            ) from failures[0]
        return RewriteDataFilesResult(
            rewritten_data_files=sum(len(g.tasks) for g, _ in committed),
            added_data_files=sum(len(w.files) for _, w in committed),
            rewritten_bytes=sum(g.size_in_bytes for g, _ in committed),
            added_bytes=sum(f.file_size_in_bytes for _, w in committed for f in w.files),
            failed_data_files=failed_files, groups=len(committed),
            snapshot_ids=tuple(snapshots))

    def _write_all(self, groups: Sequence[FileGroup]) -> dict[int, WrittenFiles]:
        """Every group's new files, up to ``max-concurrent-file-group-rewrites`` Spark jobs at
        a time (a pack of small groups is one job); on a failure the files already written
        are deleted."""
        done: dict[int, WrittenFiles] = {}
        keys = Counter((g.spec_id, g.partition) for g in groups)
        packable = [g for g in groups if self._packable(g, keys)]
        packed = {id(g) for g in packable}
        jobs = [[g] for g in groups if id(g) not in packed]
        jobs += _packs(packable, self.options.max_group_size)
        workers = min(self.options.max_concurrent_groups, len(jobs))
        if workers == 1:
            for job in jobs:
                done.update(self._write_job(job))
            return done
        with ThreadPoolExecutor(workers, thread_name_prefix="icepark-rewrite") as pool:
            futures = [pool.submit(self._write_job, job) for job in jobs]
            error: BaseException | None = None
            for future in futures:
                try:
                    done.update(future.result())
                except BaseException as e:  # keep collecting, to delete what was written
                    error = error or e
            if error is not None:
                for files in done.values():
                    files.abort(self.table.io)
                raise error
        return done

    def _packable(self, group: FileGroup, keys: Counter[tuple[int, tuple[Any, ...]]]
                  ) -> bool:
        """Whether ``group`` may share a job: it becomes one file, and either every group is
        committed at once (no partial progress) or its files can be told apart from the other
        groups' by partition (it is the only group of its partition, in the output spec)."""
        if group.output_files(self.options.target_file_size) != 1:
            return False
        return not self.options.partial_progress or (
            group.spec_id == self.options.output_spec_id
            and keys[(group.spec_id, group.partition)] == 1)

    def _write_job(self, job: Sequence[FileGroup]) -> dict[int, WrittenFiles]:
        if len(job) == 1:
            return {id(job[0]): self._write(job[0])}
        return self._write_pack(job)

    def _write(self, group: FileGroup) -> WrittenFiles:
        count = group.output_files(self.options.target_file_size)
        return self._write_rows(group.tasks, lambda rows, view: self._arrange(rows, view, count))

    def _write_pack(self, pack: Sequence[FileGroup]) -> dict[int, WrittenFiles]:
        """The files of a pack of small groups, written by one job and assigned back to their
        groups by partition (see the module docstring)."""
        size = sum(g.size_in_bytes for g in pack)
        count = min(len(pack), max(-(-size // self.options.target_file_size),
                                   default_parallelism(self.spark)))
        written = self._write_rows(
            [t for g in pack for t in g.tasks],
            lambda rows, view: self._arrange_by_partition(rows, view, count))
        files: dict[int, list[DataFile]] = {id(g): [] for g in pack}
        if not self.options.partial_progress:  # one commit for all: any group may hold them
            files[id(pack[0])] = list(written.files)
        else:
            by_partition = {(g.spec_id, g.partition): g for g in pack}
            for data_file in written.files:
                group = by_partition.get((data_file.spec_id, data_file.partition))
                if group is None:  # cannot happen for packable groups: account for every file
                    written.abort(self.table.io)
                    raise AssertionError(
                        f"rewrite_data_files: {data_file.file_path} is in partition "
                        f"{data_file.partition!r}, of no packed group")
                files[id(group)].append(data_file)
        return {key: dataclasses.replace(written, files=found) for key, found in files.items()}

    def _write_rows(self, tasks: Sequence[FileScanTask],
                    arrange: Callable[[DataFrame, TableMetadata], DataFrame]) -> WrittenFiles:
        metadata = self.metadata
        schema = metadata.schema()
        lineage = lineage_columns(metadata)
        rows = scan_rows(self.spark, self.table, tasks, schema, ["*"],
                         metadata_columns=lineage).rows
        rows = rows.select(*read_columns(schema), *(F.col(quote(c)) for c in lineage))
        view = self._write_metadata()
        size = sum(t.data_file.file_size_in_bytes for t in tasks)
        records = sum(t.data_file.record_count for t in tasks)
        written = write_data_files(arrange(rows, view), view, self.table.io,
                                   row_bytes=size / max(records, 1), lineage=bool(lineage))
        if self.arrangement.order is not None and self._order_id(metadata) is None:
            # a sort order the table does not have: the files cannot name it
            written = dataclasses.replace(written, files=[
                dataclasses.replace(f, sort_order_id=None) for f in written.files])
        return written

    def _arrange(self, rows: DataFrame, view: TableMetadata, count: int) -> DataFrame:
        schema = view.schema()
        match self.arrangement.strategy:
            case "binpack":
                return rows.coalesce(count)
            case "sort":
                keys = sort_keys(view.sort_order(), schema, rows)
                tasks = count * self.options.shuffle_partitions_per_file
                return rows.repartitionByRange(tasks, *keys)
            case _:
                z = _z_column([F.col(quote(n)) for n in self.arrangement.zorder_by])
                parts = partition_columns(view.spec(), schema, rows)
                tasks = count * self.options.shuffle_partitions_per_file
                with_z = rows.withColumn(_Z, z)
                return (with_z.repartitionByRange(tasks, *parts, F.col(_Z))
                        .sortWithinPartitions(*parts, F.col(_Z)).drop(_Z))

    def _arrange_by_partition(self, rows: DataFrame, view: TableMetadata,
                              count: int) -> DataFrame:
        """A pack's rows in ``count`` tasks, each partition's rows in one task, sorted by
        partition and then by the arrangement."""
        schema = view.schema()
        parts = partition_columns(view.spec(), schema, rows)
        spread = rows.repartition(count, *parts)
        match self.arrangement.strategy:
            case "binpack":
                return spread.sortWithinPartitions(*parts)
            case "sort":
                return spread.sortWithinPartitions(
                    *parts, *sort_keys(view.sort_order(), schema, rows))
            case _:
                z = _z_column([F.col(quote(n)) for n in self.arrangement.zorder_by])
                return (spread.withColumn(_Z, z).sortWithinPartitions(*parts, F.col(_Z))
                        .drop(_Z))

    def _order_id(self, metadata: TableMetadata) -> int | None:
        """The ID of the table's sort order equal to the arrangement's, if it has one."""
        wanted = self.arrangement.order
        if wanted is None:
            return None
        for order in metadata.sort_orders:
            if order.fields == wanted.fields:
                return order.order_id
        return None

    def _write_metadata(self) -> TableMetadata:
        """The table as the writer sees it: the output spec, the arrangement's sort order
        (none for binpack and Z-order: the rows are already laid out), no distribution (the
        arrangement made it) and the target file size."""
        metadata = self.metadata
        properties = {**metadata.properties, DISTRIBUTION_MODE: "none",
                      TARGET_FILE_SIZE_PROPERTY: str(self.options.target_file_size)}
        orders = metadata.sort_orders
        order_id = 0
        if self.arrangement.order is not None:
            found = self._order_id(metadata)
            if found is None:
                found = max(o.order_id for o in orders) + 1
                orders = (*orders, dataclasses.replace(self.arrangement.order,
                                                       order_id=found))
            order_id = found
        return dataclasses.replace(metadata, properties=properties,
                                   default_spec_id=self.options.output_spec_id,
                                   sort_orders=orders, default_sort_order_id=order_id)

    def _remove_dangling(self, branch: str, properties: dict[str, str]) -> int | None:
        """``remove-dangling-deletes``: one more ``replace`` snapshot removing the position
        delete files and deletion vectors that no longer apply to any live data file (those
        of the rewritten files), as the reference does after a compaction."""
        table = self.table.refresh()
        dangling = plan(table.io, table.metadata, _no_options(), branch=branch).dangling
        if not dangling:
            return None
        removal = table.new_rewrite(branch=branch, snapshot_properties=properties)
        for delete_file in dangling:
            removal.delete_file(delete_file)
        removal.commit()
        head = branch_head(self.table.metadata, branch)
        return None if head is None else head.snapshot_id

    def _commit(self, pairs: Sequence[tuple[FileGroup, WrittenFiles]], head_id: int,
                sequence: int | None, branch: str, properties: dict[str, str]) -> int:
        job_ids = ",".join(dict.fromkeys(w.job_id for _, w in pairs))
        rewrite = self.table.new_rewrite(
            branch=branch, snapshot_properties={**properties, JOB_ID_PROPERTY: job_ids})
        for group, written in pairs:
            rewrite.rewrite(group.files, written.files, data_sequence_number=sequence)
        rewrite.validate_from_snapshot(head_id).commit()
        head = branch_head(self.table.metadata, branch)
        assert head is not None
        return head.snapshot_id


def _packs(groups: Sequence[FileGroup], max_size: int) -> list[list[FileGroup]]:
    """``groups`` (each one file, in a partition of its own) in packs of at most ``max_size``
    bytes, largest first."""
    packs: list[list[FileGroup]] = []
    size = 0
    for group in sorted(groups, key=lambda g: -g.size_in_bytes):
        if not packs or size + group.size_in_bytes > max_size:
            packs.append([])
            size = 0
        packs[-1].append(group)
        size += group.size_in_bytes
    return packs


def _no_options() -> DeleteRewriteOptions:
    return DeleteRewriteOptions.parse({}, {})


def _z_column(columns: Sequence[Column]) -> Column:
    """The Z-order value of ``columns``, computed in Arrow batches by the Python workers."""

    # PySpark 4's Arrow UDF: Arrow arrays in and out, no pandas
    @F.arrow_udf("binary")  # type: ignore[attr-defined, untyped-decorator]  # not in its stub
    def z_value(*arrays: pa.Array) -> pa.Array:
        return z_values(arrays)

    with contextlib.suppress(AttributeError):
        z_value.__name__ = "icepark_zorder"
    column: Column = z_value(*columns)
    return column


__all__ = ["STRATEGIES", "RewriteDataFilesResult", "Strategy", "rewrite_data_files"]
