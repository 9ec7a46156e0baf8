"""Table-level changes to a table's schema, partition spec, sort order, properties and format.

Each change is data: the user's calls, recorded as :class:`Call` values, and replayed by
:meth:`changes` on whichever table version a commit is attempted on (STYLE rule 9, "retry by
replaying intent"). Spec, *Commit Conflict Resolution and Retry*: "Table schema updates and
partition spec changes must validate that the schema has not changed between the base version
and the current version." So schema, spec and sort order changes send the requirements
``AssertCurrentSchemaId`` (plus ``AssertLastAssignedFieldId``, ``AssertDefaultSpecId`` and
``AssertLastAssignedPartitionId``, ``AssertDefaultSortOrderId``): a concurrent change fails the
commit, and the retry replays the calls on the new schema, which re-validates them.

The builders (:class:`UpdateSchema`, :class:`UpdateSpec`, :class:`ReplaceSortOrder`,
:class:`UpdateProperties`) check every call at once against the version they were opened on
and hand their change to the table (which commits it) or to a transaction (which stages it),
once, on :meth:`PendingUpdate.commit` or on leaving a ``with`` block without an exception.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> change = SchemaChange((Call("add_column", ("name", STRING)),))
>>> requirements, updates = change.changes(md)
>>> requirements
[AssertCurrentSchemaId(current_schema_id=0), AssertLastAssignedFieldId(last_assigned_field_id=1)]
>>> print(updates[0].schema)
table {
  1: id: required long
  2: name: optional string
}
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, cast

from icepark.errors import Remedy, ValidationError
from icepark.spec.evolution.schema_update import UNSET, Path, SchemaUpdate
from icepark.spec.evolution.spec_update import SpecUpdate
from icepark.spec.metadata import FORMAT_VERSION_PROPERTY, FormatVersion, TableMetadata
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.snapshots import FrozenMap
from icepark.spec.sorting import NullOrder, SortOrder, SortOrderBuilder
from icepark.spec.transforms import Transform
from icepark.spec.types import IcebergType
from icepark.table.change import updates as u
from icepark.table.change.commit import Change

Submit = Callable[[Sequence[Change]], object]
"""Where a finished builder sends its changes: a table commits them, a transaction stages
them."""

Changes = tuple[list[u.TableRequirement], list[u.TableUpdate]]

RESERVED_PROPERTIES = frozenset({FORMAT_VERSION_PROPERTY})
"""Properties that are table metadata fields, not settings; change them with their own call."""

_INTEGER_PROPERTIES = frozenset({
    "commit.retry.num-retries", "commit.retry.min-wait-ms", "commit.retry.max-wait-ms",
    "commit.retry.total-timeout-ms", "history.expire.max-snapshot-age-ms",
    "history.expire.min-snapshots-to-keep", "history.expire.max-ref-age-ms",
    "write.metadata.previous-versions-max",
})


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded builder call, replayed on each version a commit is attempted on."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=FrozenMap, hash=False)

    def replay(self, target: object) -> None:
        getattr(target, self.method)(*self.args, **self.kwargs)


# ------------------------------------------------------------------------------ the changes


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """Evolve the current schema: "Schemas may be evolved by type promotion or adding,
    deleting, renaming, or reordering fields in structs"."""

    calls: tuple[Call, ...]
    case_sensitive: bool = True
    allow_incompatible_changes: bool = False

    def changes(self, base: TableMetadata) -> Changes:
        current = base.schema()
        update = SchemaUpdate(current, base.last_column_id, base.format_version,
                              self.case_sensitive, self.allow_incompatible_changes)
        for call in self.calls:
            call.replay(update)
        schema, last_column_id = update.apply()
        if schema.same_columns(current) and last_column_id == base.last_column_id:
            return [], []
        return ([u.AssertCurrentSchemaId(base.current_schema_id),
                 u.AssertLastAssignedFieldId(base.last_column_id)],
                [u.AddSchema(schema, last_column_id), u.SetCurrentSchema(u.LAST_ADDED)])

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


@dataclass(frozen=True, slots=True)
class SpecChange:
    """Evolve the default partition spec: "Table partitioning can be evolved by adding,
    removing, renaming, or reordering partition spec fields"."""

    calls: tuple[Call, ...]
    case_sensitive: bool = True

    def changes(self, base: TableMetadata) -> Changes:
        update = SpecUpdate(base.partition_specs, base.default_spec_id, base.schema(),
                            base.last_partition_id, base.format_version, self.case_sensitive)
        for call in self.calls:
            call.replay(update)
        spec, _ = update.apply()
        if spec.spec_id == base.default_spec_id:
            return [], []
        return ([u.AssertCurrentSchemaId(base.current_schema_id),
                 u.AssertDefaultSpecId(base.default_spec_id),
                 u.AssertLastAssignedPartitionId(base.last_partition_id)],
                [u.AddPartitionSpec(spec), u.SetDefaultSpec(u.LAST_ADDED)])

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


@dataclass(frozen=True, slots=True)
class SortOrderChange:
    """Replace the default sort order (no calls: the unsorted order)."""

    calls: tuple[Call, ...]
    case_sensitive: bool = True

    def changes(self, base: TableMetadata) -> Changes:
        builder = SortOrderBuilder(base.schema(), case_sensitive=self.case_sensitive)
        for call in self.calls:
            call.replay(builder)
        order = builder.build()
        if order.same_order(base.sort_order()):
            return [], []
        return ([u.AssertCurrentSchemaId(base.current_schema_id),
                 u.AssertDefaultSortOrderId(base.default_sort_order_id)],
                [u.AddSortOrder(order), u.SetDefaultSortOrder(u.LAST_ADDED)])

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


@dataclass(frozen=True, slots=True)
class PropertiesChange:
    """Set and remove table properties. It has no requirements: properties set by others
    survive, and the same keys set by this change win (last writer wins per key); removing a
    missing key does nothing."""

    updates: Mapping[str, str] = field(default_factory=FrozenMap, hash=False)
    removals: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", FrozenMap(self.updates))
        object.__setattr__(self, "removals", tuple(self.removals))
        for key, value in self.updates.items():
            check_property(key, value)
        for key in self.removals:
            _check_key(key)
        both = sorted(set(self.updates) & set(self.removals))
        if both:
            raise ValidationError(f"Cannot both set and remove the table property {both[0]!r}")

    def changes(self, base: TableMetadata) -> Changes:
        updates: list[u.TableUpdate] = []
        if self.updates:
            updates.append(u.SetProperties(dict(self.updates)))
        if self.removals:
            updates.append(u.RemoveProperties(self.removals))
        return [], updates

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


@dataclass(frozen=True, slots=True)
class FormatVersionChange:
    """Upgrade the table's format version (Appendix E). Everything the table holds is kept; the
    metadata is then written in the new version ("Tables that are upgraded from v1 may contain
    metadata that does not follow these requirements"). v2 requires a table UUID ("table-uuid
    is now required"), so a v1 table without one gets one. Upgrading to the current version
    does nothing; downgrading is an error.
    """

    format_version: int

    def changes(self, base: TableMetadata) -> Changes:
        version = self.format_version
        if version not in (1, 2, 3):
            raise ValidationError(f"Unsupported format version {version}: icepark supports "
                                  "format versions 1 to 3")
        if version < base.format_version:
            raise ValidationError(f"Cannot downgrade the table from format version "
                                  f"{base.format_version} to {version}")
        if version == base.format_version:
            return [], []
        updates: list[u.TableUpdate] = []
        if base.table_uuid is None:
            updates.append(u.AssignUUID(uuid.uuid4()))
        updates.append(u.UpgradeFormatVersion(cast(FormatVersion, version)))
        return [], updates

    def clean_up(self, committed: bool) -> None:
        """Nothing to clean up: the change writes no files."""


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise ValidationError(f"Table property names must be non-empty strings, not {key!r}")
    if key in RESERVED_PROPERTIES:
        raise ValidationError(f"Table property {key!r} is reserved: it is a table metadata "
                              "field", remedy=Remedy("use {} to change it",
                                                     "upgrade_format_version()"))


def check_property(key: object, value: object) -> None:
    """Properties are "A string to string map"; the numeric settings icepark reads must be
    non-negative integers.

    >>> check_property("commit.retry.num-retries", "three")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Table property commit.retry.num-retries must be a \
non-negative integer, not 'three'
    """
    _check_key(key)
    if not isinstance(value, str):
        raise ValidationError(f"Table property {key!r} must be a string, not {value!r}")
    if key in _INTEGER_PROPERTIES and not value.isdigit():
        raise ValidationError(
            f"Table property {key} must be a non-negative integer, not {value!r}")


# ------------------------------------------------------------------------------ the builders


class PendingUpdate:
    """A builder that commits once: on :meth:`commit` or on leaving its ``with`` block."""

    def __init__(self, metadata: TableMetadata, submit: Submit) -> None:
        self._metadata = metadata
        self._submit = submit
        self._closed = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None and not self._closed:
            self.commit()
        self._closed = True

    def commit(self) -> None:
        """Commit the change (or stage it, in a transaction)."""
        self._check_open()
        self._closed = True
        changes = self._changes()
        if changes:
            self._submit(changes)

    def _changes(self) -> list[Change]:
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise ValidationError(
                f"This {type(self).__name__} was already committed or abandoned; start a new one")


class _RecordingUpdate(PendingUpdate):
    """Checks each call on a live builder now and records it for replay."""

    _live: Any

    def __init__(self, metadata: TableMetadata, submit: Submit) -> None:
        super().__init__(metadata, submit)
        self._calls: list[Call] = []

    def _record(self, method: str, *args: Any, **kwargs: Any) -> Self:
        self._check_open()
        getattr(self._live, method)(*args, **kwargs)
        self._calls.append(Call(method, args, kwargs))
        return self


class UpdateSchema(_RecordingUpdate):
    """Schema evolution (methods as :class:`~icepark.spec.evolution.schema_update.SchemaUpdate`)."""

    def __init__(self, metadata: TableMetadata, submit: Submit, *,
                 allow_incompatible_changes: bool = False, case_sensitive: bool = True) -> None:
        super().__init__(metadata, submit)
        self._case_sensitive = case_sensitive
        self._allow_incompatible = allow_incompatible_changes
        self._live = SchemaUpdate(metadata.schema(), metadata.last_column_id,
                                  metadata.format_version, case_sensitive,
                                  allow_incompatible_changes)

    def add_column(  # noqa: PLR0917 - mirrors SchemaUpdate.add_column
            self, path: Path, field_type: IcebergType, doc: str | None = None,
            required: bool = False, initial_default: Any = None,
            write_default: Any = None) -> Self:
        return self._record("add_column", path, field_type, doc, required, initial_default,
                            write_default)

    def delete_column(self, path: Path) -> Self:
        return self._record("delete_column", path)

    def rename_column(self, path: Path, new_name: str) -> Self:
        return self._record("rename_column", path, new_name)

    def update_column(self, path: Path, field_type: IcebergType | None = None,
                      doc: str | None = None, required: bool | None = None,
                      write_default: Any = UNSET) -> Self:
        return self._record("update_column", path, field_type, doc, required, write_default)

    def make_optional(self, path: Path) -> Self:
        return self._record("make_optional", path)

    def move_first(self, path: Path) -> Self:
        return self._record("move_first", path)

    def move_before(self, path: Path, before_path: Path) -> Self:
        return self._record("move_before", path, before_path)

    def move_after(self, path: Path, after_path: Path) -> Self:
        return self._record("move_after", path, after_path)

    def set_identifier_fields(self, *paths: Path) -> Self:
        return self._record("set_identifier_fields", *paths)

    def union_by_name(self, other: Schema) -> Self:
        return self._record("union_by_name", other)

    def apply(self) -> tuple[Schema, int]:
        """The schema and last column ID this update produces on the version it was opened
        on."""
        result: tuple[Schema, int] = self._live.apply()
        return result

    def _changes(self) -> list[Change]:
        if not self._calls:
            return []
        return [SchemaChange(tuple(self._calls), self._case_sensitive, self._allow_incompatible)]


class UpdateSpec(_RecordingUpdate):
    """Partition evolution (methods as
    :class:`~icepark.spec.evolution.spec_update.SpecUpdate`)."""

    def __init__(self, metadata: TableMetadata, submit: Submit, *,
                 case_sensitive: bool = True) -> None:
        super().__init__(metadata, submit)
        self._case_sensitive = case_sensitive
        self._live = SpecUpdate(metadata.partition_specs, metadata.default_spec_id,
                                metadata.schema(), metadata.last_partition_id,
                                metadata.format_version, case_sensitive)

    def add_identity(self, source_name: str) -> Self:
        return self._record("add_identity", source_name)

    def add_field(self, source_name: str, transform: Transform | str,
                  name: str | None = None) -> Self:
        return self._record("add_field", source_name, transform, name)

    def remove_field(self, name_or_term: str) -> Self:
        return self._record("remove_field", name_or_term)

    def rename_field(self, name: str, new_name: str) -> Self:
        return self._record("rename_field", name, new_name)

    def apply(self) -> PartitionSpec:
        """The spec this update produces on the version it was opened on."""
        spec: PartitionSpec = self._live.apply()[0]
        return spec

    def _changes(self) -> list[Change]:
        return [SpecChange(tuple(self._calls), self._case_sensitive)] if self._calls else []


class ReplaceSortOrder(_RecordingUpdate):
    """A new default sort order (methods as :class:`~icepark.spec.sorting.SortOrderBuilder`).

    Committing with no fields makes the table unsorted."""

    def __init__(self, metadata: TableMetadata, submit: Submit, *,
                 case_sensitive: bool = True) -> None:
        super().__init__(metadata, submit)
        self._case_sensitive = case_sensitive
        self._live = SortOrderBuilder(metadata.schema(), case_sensitive=case_sensitive)

    def asc(self, name: str, null_order: NullOrder = NullOrder.NULLS_FIRST,
            transform: Transform | str = "identity") -> Self:
        self._record("asc", name, null_order, transform)
        self._check_built()
        return self

    def desc(self, name: str, null_order: NullOrder = NullOrder.NULLS_LAST,
             transform: Transform | str = "identity") -> Self:
        self._record("desc", name, null_order, transform)
        self._check_built()
        return self

    def apply(self) -> SortOrder:
        """The order this update produces on the version it was opened on."""
        order: SortOrder = self._live.build()
        return order

    def _check_built(self) -> None:
        """A transform that cannot apply to its column is found by ``build``: undo the call."""
        try:
            self._live.build()
        except ValidationError:
            self._calls.pop()
            self._live = SortOrderBuilder(self._metadata.schema(),
                                          case_sensitive=self._case_sensitive)
            for call in self._calls:
                call.replay(self._live)
            raise

    def _changes(self) -> list[Change]:
        return [SortOrderChange(tuple(self._calls), self._case_sensitive)]


class UpdateProperties(PendingUpdate):
    """Set and remove table properties; :meth:`set` and :meth:`remove` chain."""

    def __init__(self, metadata: TableMetadata, submit: Submit,
                 updates: Mapping[str, str] | None = None, removals: Sequence[str] = ()) -> None:
        super().__init__(metadata, submit)
        self._updates: dict[str, str] = {}
        self._removals: list[str] = []
        for key, value in (updates or {}).items():
            self.set(key, value)
        self.remove(*([removals] if isinstance(removals, str) else removals))

    def set(self, key: str, value: str) -> Self:
        self._check_open()
        check_property(key, value)
        if key in self._removals:
            raise ValidationError(f"Cannot set the table property {key!r}: it is removed in "
                                  "this update")
        self._updates[key] = value
        return self

    def remove(self, *keys: str) -> Self:
        self._check_open()
        for key in keys:
            _check_key(key)
            if key in self._updates:
                raise ValidationError(f"Cannot remove the table property {key!r}: it is set "
                                      "in this update")
            if key not in self._removals:
                self._removals.append(key)
        return self

    def _changes(self) -> list[Change]:
        if not self._updates and not self._removals:
            return []
        return [PropertiesChange(self._updates, tuple(self._removals))]
