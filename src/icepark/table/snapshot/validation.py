"""Conflict detection: what concurrent snapshots may have done that an action cannot accept.

Spec, *Optimistic Concurrency*: "The conditions required by a write to successfully commit
determines the isolation level. Writers can select what to validate and can make different
isolation guarantees." and *Commit Conflict Resolution and Retry*: "Updates verify the
conditions under which they can be applied to a new version and retry if those conditions are
met." An action that read the table at a starting snapshot calls these checks on every attempt
with the refreshed branch head; they look only at the snapshots committed since the start
(:func:`validation_history`) and at the entries those snapshots added or deleted themselves
(each snapshot's own manifests), so a later manifest merge cannot hide a change.

Isolation levels, as table properties ``write.delete.isolation-level`` and
``write.overwrite.isolation-level`` (``serializable``, the default, or ``snapshot``):
``serializable`` also fails when concurrently added data files may hold rows matching the
conflict filter; ``snapshot`` fails only on concurrent deletes (delete files added, or data files
removed, that match it).

Matching uses :class:`FileFilter`: the filter's residual for the file's partition (from the
inclusive and strict projections) decides what the partition can, and the inclusive or strict
metrics evaluator decides the rest: a file "may match" (some rows may) or "must match" (every
row does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    Expr,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    bind,
    parse,
    unbind,
)
from icepark.io.fileio import FileIO
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icepark.spec.metadata import TableMetadata
from icepark.spec.reserved import FILE_PATH
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Operation, Snapshot, ancestors_of

DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
OVERWRITE_ISOLATION_LEVEL = "write.overwrite.isolation-level"
"""``file_path`` of a position delete file: "Full URI of a data file with FS scheme"."""

_ADDS_DATA = frozenset({Operation.APPEND, Operation.OVERWRITE})
_ADDS_DELETES = frozenset({Operation.OVERWRITE, Operation.DELETE})
_REMOVES_DATA = frozenset({Operation.OVERWRITE, Operation.DELETE, Operation.REPLACE})


class IsolationLevel(StrEnum):
    """What concurrent changes an action tolerates (see the module docstring)."""

    SERIALIZABLE = "serializable"
    SNAPSHOT = "snapshot"


def isolation_level(properties: Mapping[str, str], key: str) -> IsolationLevel:
    """The isolation level a table property sets (default serializable).

    >>> isolation_level({"write.delete.isolation-level": "SNAPSHOT"}, DELETE_ISOLATION_LEVEL)
    <IsolationLevel.SNAPSHOT: 'snapshot'>
    """
    raw = properties.get(key)
    if raw is None:
        return IsolationLevel.SERIALIZABLE
    try:
        return IsolationLevel(raw.strip().lower())
    except ValueError:
        raise ValidationError(f"Table property {key} must be 'serializable' or 'snapshot', "
                              f"not {raw!r}") from None


def as_expr(row_filter: Expr | str | None) -> Expr:
    """A row filter given as an expression or as text (None: always true)."""
    if row_filter is None:
        return ALWAYS_TRUE
    return parse(row_filter) if isinstance(row_filter, str) else row_filter


class FileFilter:
    """A row filter evaluated on the manifests and files of every partition spec of a table.

    A file's partition decides what it can: the *residual* of the filter for the partition
    (strict projections "are used to calculate the residual predicates for each file") is what
    is left for its metrics, so ``category = 'a' AND id >= 10`` matches every row of a file in
    partition ``a`` whose lower bound of ``id`` is 10.
    """

    def __init__(self, metadata: TableMetadata, row_filter: Expr | str,
                 case_sensitive: bool = True) -> None:
        self.expr = as_expr(row_filter)
        self.schema = metadata.schema()
        self._case_sensitive = case_sensitive
        bind(self.expr, self.schema, case_sensitive)  # fails early on an unknown column
        self._specs = {s.spec_id: s for s in metadata.partition_specs}
        self._manifest: dict[int, ManifestEvaluator] = {}
        self._residuals: dict[int, ResidualEvaluator] = {}
        self._by_partition: dict[tuple[int, tuple[Any, ...]], _FileTests] = {}
        self._whole = _FileTests(self.expr, self.schema, case_sensitive)

    @property
    def always_true(self) -> bool:
        return self.expr == ALWAYS_TRUE

    def __str__(self) -> str:
        return str(self.expr)

    def may_match_manifest(self, manifest: ManifestFile) -> bool:
        """Whether the manifest's partition summaries allow a matching file."""
        spec = self._specs.get(manifest.partition_spec_id)
        if spec is None:
            return True
        evaluator = self._manifest.get(spec.spec_id)
        if evaluator is None:
            evaluator = ManifestEvaluator(self.schema, spec, self.expr, self._case_sensitive)
            self._manifest[spec.spec_id] = evaluator
        return evaluator.eval(manifest)

    def _tests(self, data_file: DataFile) -> _FileTests:
        spec = self._specs.get(data_file.spec_id)
        if spec is None or len(spec.fields) != len(data_file.partition):
            return self._whole
        key = (spec.spec_id, tuple(data_file.partition))
        tests = self._by_partition.get(key)
        if tests is None:
            residuals = self._residuals.get(spec.spec_id)
            if residuals is None:
                residuals = ResidualEvaluator(self.schema, spec, self.expr, self._case_sensitive)
                self._residuals[spec.spec_id] = residuals
            residual = unbind(residuals.residual_for(key[1]))
            tests = _FileTests(residual, self.schema, self._case_sensitive)
            self._by_partition[key] = tests
        return tests

    def may_match(self, data_file: DataFile) -> bool:
        """Whether some rows of the file may match: "if a scan predicate matches a row, then
        the partition predicate must match that row's partition", and its metrics agree."""
        return self._tests(data_file).may_match(data_file)

    def must_match(self, data_file: DataFile) -> bool:
        """Whether every row of the file matches: the *strict projection* "will match a file
        if all of the rows in the file must match the scan predicate", and the metrics prove
        the rest."""
        return self._tests(data_file).must_match(data_file)


class _FileTests:
    """The metrics tests of one (residual) filter."""

    def __init__(self, expr: Expr, schema: Schema, case_sensitive: bool) -> None:
        self.expr = expr
        self._inclusive = InclusiveMetricsEvaluator(schema, expr, case_sensitive)
        self._strict = StrictMetricsEvaluator(schema, expr, case_sensitive)

    def may_match(self, data_file: DataFile) -> bool:
        return self.expr != ALWAYS_FALSE and self._inclusive.eval(data_file)

    def must_match(self, data_file: DataFile) -> bool:
        return self.expr == ALWAYS_TRUE or (
            self.expr != ALWAYS_FALSE and self._strict.eval(data_file))


def validation_history(metadata: TableMetadata, head: Snapshot | None,
                       from_snapshot_id: int | None) -> list[Snapshot]:
    """The branch's snapshots committed after ``from_snapshot_id`` (None: all), newest first.

    Raises ValidationError when the starting snapshot is not an ancestor of ``head`` (expired,
    or on another branch): what happened since cannot be known.
    """
    out: list[Snapshot] = []
    for snapshot in ancestors_of(None if head is None else head.snapshot_id,
                                 metadata.snapshots_by_id):
        if snapshot.snapshot_id == from_snapshot_id:
            return out
        out.append(snapshot)
    if from_snapshot_id is not None:
        raise ValidationError(
            f"Cannot validate the changes since snapshot {from_snapshot_id}: it is not an "
            "ancestor of the branch's current snapshot (it was expired or is on another branch)")
    return out


def _fail(what: str, since: int | None, hits: Sequence[str], conflict: FileFilter | None) -> None:
    if not hits:
        return
    where = "" if conflict is None or conflict.always_true else f" matching {conflict}"
    start = "the table was created" if since is None else f"snapshot {since}"
    shown = ", ".join(sorted(hits)[:5]) + (" ..." if len(hits) > 5 else "")
    raise ValidationError(f"Found conflicting {what}{where} since {start}: {shown}")


class ConcurrentChanges:
    """The changes committed to a branch after a starting snapshot, and the checks on them.

    ``head`` is the branch's snapshot in ``metadata`` (the refreshed base of an attempt) and
    ``from_snapshot_id`` the snapshot the action read (None: the branch was empty).
    """

    def __init__(self, file_io: FileIO, metadata: TableMetadata, head: Snapshot | None,
                 from_snapshot_id: int | None) -> None:
        self._io = file_io
        self.metadata = metadata
        self.from_snapshot_id = from_snapshot_id
        self.snapshots = validation_history(metadata, head, from_snapshot_id)

    def entries(self, operations: frozenset[Operation], status: EntryStatus,
                content: ManifestContent) -> Iterator[ManifestEntry]:
        """The entries each snapshot (of one of ``operations``; any when a snapshot has no
        summary) added or deleted itself, in its own manifests of ``content``."""
        specs = {s.spec_id: s for s in self.metadata.partition_specs}
        for snapshot in self.snapshots:
            if snapshot.operation is not None and snapshot.operation not in operations:
                continue
            for manifest in snapshot_manifests(self._io, snapshot):
                if manifest.added_snapshot_id != snapshot.snapshot_id or \
                        manifest.content != content:
                    continue
                if status is EntryStatus.ADDED and not manifest.has_added_files():
                    continue
                if status is EntryStatus.DELETED and not manifest.has_deleted_files():
                    continue
                for entry in read_manifest(self._io, manifest, specs_by_id=specs):
                    if entry.status is status and entry.snapshot_id == snapshot.snapshot_id:
                        yield entry

    def _check(self, what: str, operations: frozenset[Operation], status: EntryStatus,
               content: ManifestContent, conflict: FileFilter) -> None:
        hits = [e.data_file.file_path for e in self.entries(operations, status, content)
                if conflict.may_match(e.data_file)]
        _fail(what, self.from_snapshot_id, hits, conflict)

    def validate_added_data_files(self, conflict: FileFilter) -> None:
        """Serializable isolation: no data file that may hold rows matching ``conflict`` was
        added."""
        self._check("data files added", _ADDS_DATA, EntryStatus.ADDED, ManifestContent.DATA,
                    conflict)

    def validate_deleted_data_files(self, conflict: FileFilter) -> None:
        """No data file that may hold rows matching ``conflict`` was removed."""
        self._check("data files removed", _REMOVES_DATA, EntryStatus.DELETED,
                    ManifestContent.DATA, conflict)

    def validate_no_new_delete_files(self, conflict: FileFilter) -> None:
        """No delete file that may delete rows matching ``conflict`` was added (concurrent
        row-level deletes)."""
        self._check("delete files added", _ADDS_DELETES, EntryStatus.ADDED,
                    ManifestContent.DELETES, conflict)

    def validate_data_files_exist(self, paths: Iterable[str]) -> None:
        """None of ``paths`` (the data files position deletes refer to) was removed: their
        deletes would no longer apply to anything."""
        wanted = set(paths)
        if not wanted:
            return
        hits = [e.data_file.file_path for e in self.entries(
            _REMOVES_DATA, EntryStatus.DELETED, ManifestContent.DATA)
            if e.data_file.file_path in wanted]
        if hits:
            raise ValidationError(
                f"Cannot commit: {len(hits)} referenced data file(s) were removed concurrently: "
                f"{', '.join(sorted(hits)[:5])}")

    def validate_no_new_deletes_for(self, data_files: Sequence[DataFile],
                                    ignore_equality_deletes: bool = False) -> None:
        """No delete file added may apply to ``data_files`` (which the action removes: the
        deletes would be lost)."""
        if not data_files:
            return
        unpartitioned = {s.spec_id for s in self.metadata.partition_specs
                         if s.is_unpartitioned}
        hits = []
        for e in self.entries(frozenset(Operation), EntryStatus.ADDED, ManifestContent.DELETES):
            if ignore_equality_deletes and \
                    e.data_file.content is FileContent.EQUALITY_DELETES:
                continue
            if any(may_apply(e.data_file, d, unpartitioned) for d in data_files):
                hits.append(e.data_file.file_path)
        _fail("delete files for the removed data files added", self.from_snapshot_id, hits,
              None)


def may_apply(delete_file: DataFile, data_file: DataFile, unpartitioned_specs: set[int]) -> bool:
    """Whether a delete file may apply to a data file by the *Scan Planning* rules: a position
    delete needs "the data file's partition (both spec and partition values)" equal (and, when
    it has ``file_path`` bounds, the data file's path within them); an equality delete too
    "or the delete file's partition spec is unpartitioned"."""
    same_partition = (delete_file.spec_id == data_file.spec_id
                      and tuple(delete_file.partition) == tuple(data_file.partition))
    if delete_file.content is FileContent.EQUALITY_DELETES:
        return same_partition or delete_file.spec_id in unpartitioned_specs
    if not same_partition:
        return False
    path = data_file.file_path.encode()
    low = (delete_file.lower_bounds or {}).get(FILE_PATH.field_id)
    high = (delete_file.upper_bounds or {}).get(FILE_PATH.field_id)
    return (low is None or low <= path) and (high is None or path <= high)
