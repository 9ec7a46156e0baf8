"""Transactions: any number of changes, committed atomically in one commit.

Spec, *Table Metadata*: "Each table metadata change creates a new table metadata file that is
committed by an atomic operation." A :class:`Transaction` stages :class:`Change` values and
commits them as one: each change is replayed, in order, on the metadata the previous ones
produced (:func:`replay`), and their updates are concatenated. The requirements kept are the
first of each kind (for ``AssertRefSnapshotId``, the first per reference): later ones were
computed against intermediate versions that this transaction's own updates derived from the
base, so only the first describes the base the commit must still match. A retry replays every
change on the refreshed table, re-validating each.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> from icepark.table.change.schema_change import Call, PropertiesChange, SchemaChange
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> first = SchemaChange((Call("add_column", ("a", STRING)),))
>>> second = SchemaChange((Call("add_column", ("b", STRING)),))
>>> requirements, updates, result = replay([first, PropertiesChange({"k": "v"}), second], md)
>>> requirements
[AssertCurrentSchemaId(current_schema_id=0), AssertLastAssignedFieldId(last_assigned_field_id=1)]
>>> [f.name for f in result.schema().fields], result.schema_by_id(1) is not None
(['id', 'a', 'b'], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

from icepark.errors import ValidationError
from icepark.io.fileio import FileIO
from icepark.spec.metadata import TableMetadata
from icepark.table.change import updates as u
from icepark.table.change.commit import Change
from icepark.table.change.manage_snapshots import ManageSnapshots
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.change.schema_change import (
    FormatVersionChange,
    PropertiesChange,
    ReplaceSortOrder,
    UpdateProperties,
    UpdateSchema,
    UpdateSpec,
)


class Committable(Protocol):
    """What a transaction needs of its table (:class:`~icepark.table.table.Table` is one): its
    name, current metadata and FileIO, and a commit that returns the table's new version."""

    @property
    def name(self) -> str: ...

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def io(self) -> FileIO: ...

    def commit(self, *changes: Change) -> Self: ...


T = TypeVar("T", bound=Committable)


def requirement_kind(requirement: u.TableRequirement) -> object:
    """Requirements of one kind check the same thing; ref requirements one per reference."""
    if isinstance(requirement, u.AssertRefSnapshotId):
        return (u.AssertRefSnapshotId, requirement.ref)
    return type(requirement)


def merge_requirements(requirements: Iterable[u.TableRequirement]) -> list[u.TableRequirement]:
    """The first requirement of each kind, in order."""
    first: dict[object, u.TableRequirement] = {}
    for requirement in requirements:
        first.setdefault(requirement_kind(requirement), requirement)
    return list(first.values())


def replay(changes: Iterable[Change], base: TableMetadata) -> tuple[
        list[u.TableRequirement], list[u.TableUpdate], TableMetadata]:
    """Apply ``changes`` in order, each to the metadata the previous ones produced: the merged
    requirements, all updates, and the resulting metadata."""
    requirements: list[u.TableRequirement] = []
    updates: list[u.TableUpdate] = []
    metadata = base
    for change in changes:
        reqs, ups = change.changes(metadata)
        requirements += reqs
        updates += ups
        if ups:
            metadata = MetadataBuilder(metadata).apply_all(ups).build()
    return merge_requirements(requirements), updates, metadata


class Transaction(Generic[T]):
    """Changes to one table, staged and then committed together (all or nothing).

    Use it as a context manager (commits on leaving the block without an exception, abandons
    on an exception) or call :meth:`commit_transaction`. Builders opened on it
    (:meth:`update_schema`, ...) stage their change here when they commit.
    """

    def __init__(self, table: T, changes: Sequence[Change] = ()) -> None:
        self._table = table
        self._base = table.metadata
        self._staged: list[Change] = []
        self._requirements: list[u.TableRequirement] = []
        self._updates: list[u.TableUpdate] = []
        self._metadata = self._base
        self._closed = False
        self.add(*changes)

    def __repr__(self) -> str:
        return f"Transaction({self._table.name!r}, {len(self._staged)} staged changes)"

    def __enter__(self) -> Transaction[T]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._closed:
            return
        if exc is None:
            self.commit_transaction()
        else:
            self._abandon()

    @property
    def metadata(self) -> TableMetadata:
        """The table's metadata as the staged changes leave it."""
        return self._metadata

    @property
    def staged(self) -> tuple[Change, ...]:
        return tuple(self._staged)

    # ----------------------------------------------------------------------------- staging

    def add(self, *changes: Change) -> Transaction[T]:
        """Stage changes (e.g. snapshot-producing actions); each is validated now, against
        the metadata the changes staged before it produce."""
        self._check_open()
        try:
            requirements, updates, metadata = replay(changes, self._metadata)
        except BaseException:
            for change in changes:  # none of them is staged
                change.clean_up(committed=False)
            raise
        self._staged += changes
        self._requirements = merge_requirements([*self._requirements, *requirements])
        self._updates += updates
        self._metadata = metadata
        return self

    def update_schema(self, allow_incompatible_changes: bool = False,
                      case_sensitive: bool = True) -> UpdateSchema:
        self._check_open()
        return UpdateSchema(self._metadata, self._submit,
                            allow_incompatible_changes=allow_incompatible_changes,
                            case_sensitive=case_sensitive)

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        self._check_open()
        return UpdateSpec(self._metadata, self._submit, case_sensitive=case_sensitive)

    def replace_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        self._check_open()
        return ReplaceSortOrder(self._metadata, self._submit, case_sensitive=case_sensitive)

    def update_properties(self, updates: Mapping[str, str] | None = None,
                          removals: Sequence[str] = ()) -> UpdateProperties:
        self._check_open()
        return UpdateProperties(self._metadata, self._submit, updates, removals)

    def set_properties(self, updates: Mapping[str, str] | None = None,
                       **kwargs: str) -> Transaction[T]:
        return self.add(PropertiesChange({**(updates or {}), **kwargs}))

    def remove_properties(self, *keys: str) -> Transaction[T]:
        return self.add(PropertiesChange({}, keys))

    def upgrade_format_version(self, format_version: int) -> Transaction[T]:
        return self.add(FormatVersionChange(format_version))

    def manage_snapshots(self) -> ManageSnapshots:
        self._check_open()
        return ManageSnapshots(self._metadata, self._submit, self._table.io)

    def _submit(self, changes: Sequence[Change]) -> None:
        self.add(*changes)

    # ----------------------------------------------------------------------------- commit

    def commit_transaction(self) -> T:
        """Commit every staged change at once (replayed on the refreshed table after a
        conflict); returns the table, now at the committed version."""
        self._check_open()
        self._closed = True
        if not self._staged:
            return self._table
        return self._table.commit(self)

    def changes(self, base: TableMetadata) -> tuple[list[u.TableRequirement],
                                                     list[u.TableUpdate]]:
        """The :class:`Change` protocol: every staged change replayed on ``base``."""
        if base is self._base:  # what staging computed, without writing anything again
            return list(self._requirements), list(self._updates)
        requirements, updates, _ = replay(self._staged, base)
        return requirements, updates

    def clean_up(self, committed: bool) -> None:
        for change in self._staged:
            change.clean_up(committed)

    def _abandon(self) -> None:
        self._closed = True
        self.clean_up(committed=False)

    def _check_open(self) -> None:
        if self._closed:
            raise ValidationError("This transaction was already committed or abandoned; "
                                  "start a new one with table.transaction()")
