"""Partition evolution: derive a table's next partition spec from its current one.

Spec, *Partition Evolution*: "Table partitioning can be evolved by adding, removing, renaming, or
reordering partition spec fields. Changing a partition spec produces a new spec identified by a
unique spec ID ... When evolving a spec, changes should not cause partition field IDs to change
because the partition field IDs are used as the partition tuple field IDs in manifest files.
In v2, partition field IDs must be explicitly tracked for each partition field. New IDs are
assigned based on the last assigned partition ID in table metadata."

For v1 tables the spec recommends: "1. Do not reorder partition fields 2. Do not drop partition
fields; instead replace the field's transform with the ``void`` transform 3. Only add partition
fields at the end of the previous partition spec". A removed v1 field is therefore kept as
``void`` and renamed ``<name>_<field id>``, so its name can be used again.

As the reference implementation does, a v2 update that adds a (source, transform) pair some
earlier spec already had, with no name or that field's name, reuses that field's ID and name;
removing and re-adding a field in one update keeps it unchanged.

A field with a transform icepark does not know (read from metadata, possibly of several source
columns) is kept as it is, and can be renamed or removed, which is how a table gets a spec that
writers can use again ("Writers are not allowed to commit data using a partition spec that
contains a field with an unknown transform"); such a transform cannot be added. (The reference
implementation refuses any update of a spec holding one.)

>>> from icepark.spec.types import LONG, TIMESTAMPTZ, NestedField
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.partitioning import PartitionSpecBuilder
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(2, "ts", TIMESTAMPTZ))
>>> spec0 = PartitionSpecBuilder(schema).month("ts").build()
>>> spec1, last_id = (SpecUpdate([spec0], 0, schema, 1000)
...                   .remove_field("ts_month").add_field("ts", "day").add_field("id", "bucket[8]")
...                   .apply())
>>> print(spec1, last_id)
[1001: ts_day: day(2), 1002: id_bucket_8: bucket[8](1)] 1002
>>> v1 = SpecUpdate([spec0], 0, schema, 1000, format_version=1)
>>> print(v1.remove_field("ts_month").apply()[0])
[1000: ts_month_1000: void(2)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from icepark.errors import ValidationError
from icepark.spec.partitioning import (
    PartitionField,
    PartitionSpec,
    check_partition_source,
    default_partition_name,
)
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform

_TERM_RE = re.compile(r"\s*([A-Za-z]+(?:\[\d+\])?)\s*\(\s*(.+?)\s*\)\s*")


class SpecUpdate:
    """A pending change to the default partition spec; :meth:`apply` computes the new spec.

    ``specs`` are all of the table's specs, ``last_partition_id`` the table's last assigned
    partition field ID. Each method validates its change at once and raises ValidationError.
    Order matters for names: remove or rename a field before reusing its name.
    """

    def __init__(  # noqa: PLR0917 - the positional signature shared with TableMetadata
            self, specs: Sequence[PartitionSpec], default_spec_id: int, schema: Schema,
                 last_partition_id: int, format_version: int = 2,
                 case_sensitive: bool = True) -> None:
        if format_version not in (1, 2, 3):
            raise ValidationError(f"Unsupported format version {format_version}: use 1, 2 or 3")
        current = next((s for s in specs if s.spec_id == default_spec_id), None)
        if current is None:
            raise ValidationError(
                f"Cannot find default partition spec {default_spec_id} among the table's specs "
                f"{sorted(s.spec_id for s in specs)}")
        self._specs = tuple(specs)
        self._spec = current
        self._schema = schema
        # Never reuse an ID some spec holds, even if last_partition_id lags behind.
        self._last_id = max(last_partition_id, *(s.last_assigned_field_id for s in specs))
        self._v1 = format_version == 1
        self._case_sensitive = case_sensitive
        self._adds: list[PartitionField] = []
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}

    def add_identity(self, source_name: str) -> SpecUpdate:
        """Partition by the column's values, named after the column."""
        return self.add_field(source_name, Transform.identity())

    def add_field(self, source_name: str, transform: Transform | str,
                  name: str | None = None) -> SpecUpdate:
        """Add ``transform(source_name)`` at the end of the spec, named ``name`` or the default
        name (``id_bucket_16``, ``ts_day``, ...)."""
        t = Transform.parse(transform) if isinstance(transform, str) else transform
        if t.is_unknown:
            raise ValidationError(
                f"Cannot add partition field {t}({source_name}): icepark does not know the "
                f"transform {str(t)!r}, and no writer could use a spec with it")
        source_id = self._schema.find_field_id(source_name, self._case_sensitive)
        if source_id is None:
            raise ValidationError(
                f"Cannot add partition field {t}({source_name}): cannot find source column "
                f"{source_name!r}")
        column = self._schema.find_column_name(source_id) or source_name
        label = f"{t}({column})"
        check_partition_source(self._schema, source_id, t,
                               name or default_partition_name(column, t))
        if name is not None and not name:
            raise ValidationError(f"Cannot add partition field {label}: the name is empty")
        existing = next((f for f in self._spec.fields
                         if f.source_id == source_id and f.transform == t), None)
        if existing is not None and existing.field_id in self._deletes:
            # Removed and re-added in one update: keep the field (and its ID) as it was.
            self._deletes.discard(existing.field_id)
            if name is not None and name != existing.name:
                self.rename_field(existing.name, name)
            return self
        if existing is not None:
            raise ValidationError(
                f"Cannot add partition field {label}: it already exists as {existing.name!r}")
        added = next((a for a in self._adds if a.source_id == source_id and a.transform == t),
                     None)
        if added is not None:
            raise ValidationError(
                f"Cannot add partition field {label}: it was already added as {added.name!r}")
        if t.is_time:
            clash = next((f for f in self._kept_fields()
                          if f.source_id == source_id and f.transform.is_time), None)
            if clash is not None:
                raise ValidationError(
                    f"Cannot add redundant partition field {label}: conflicts with "
                    f"{clash.name!r} ({clash.transform}); a column has at most one time "
                    "partition, so remove that field in the same update")
        recycled = self._recycle(source_id, t, name)
        field_name = recycled.name if recycled is not None else (
            name or default_partition_name(column, t))
        self._claim_name(field_name, f"Cannot add partition field {label} as {field_name!r}")
        if recycled is None:
            self._last_id += 1
            recycled = PartitionField(source_id, self._last_id, t, field_name)
        self._adds.append(recycled)
        return self

    def remove_field(self, name_or_term: str) -> SpecUpdate:
        """Remove a field by its partition name (or by its term, e.g. ``"bucket[16](id)"``).

        v2 drops the field; v1 keeps it with the ``void`` transform, renamed
        ``<name>_<field id>``.
        """
        key = self._term(name_or_term)
        if any(a.name == name_or_term or (a.source_id, a.transform) == key for a in self._adds):
            raise ValidationError(
                f"Cannot remove partition field {name_or_term!r}: it was added in this update")
        f = self._spec.field_by_name(name_or_term) or next(
            (f for f in self._spec.fields if (f.source_id, f.transform) == key), None)
        if f is None:
            raise ValidationError(
                f"Cannot find partition field {name_or_term!r} to remove; the spec has "
                f"{[f.name for f in self._spec.fields]}")
        if f.name in self._renames:
            raise ValidationError(
                f"Cannot remove partition field {f.name!r}: it is renamed in this update")
        if f.field_id in self._deletes:
            raise ValidationError(
                f"Cannot remove partition field {f.name!r}: it is already removed in this update")
        if self._v1 and f.transform.is_void:
            raise ValidationError(
                f"Cannot remove partition field {f.name!r}: it was already removed (v1 keeps "
                "removed fields with the void transform)")
        self._deletes.add(f.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> SpecUpdate:
        """Rename a partition field; its ID and transform stay."""
        if any(a.name == name for a in self._adds):
            raise ValidationError(
                f"Cannot rename partition field {name!r}: it was added in this update; add it "
                "with the new name instead")
        f = self._spec.field_by_name(name)
        if f is None:
            raise ValidationError(f"Cannot find partition field {name!r} to rename")
        if f.field_id in self._deletes:
            raise ValidationError(
                f"Cannot rename partition field {name!r}: it is removed in this update")
        if not new_name:
            raise ValidationError(f"Cannot rename partition field {name!r} to an empty name")
        if new_name == self._final_name(f):
            return self
        self._claim_name(new_name, f"Cannot rename partition field {name!r} to {new_name!r}",
                         renaming=f)
        self._renames[name] = new_name
        return self

    def apply(self) -> tuple[PartitionSpec, int]:
        """The new spec and the new last partition ID.

        The spec reuses the ID of an existing spec with identical fields, else takes the
        largest spec ID + 1; it is checked against the schema.
        """
        fields: list[PartitionField] = []
        for f in self._spec.fields:
            final = self._final_name(f)
            if final is None:
                continue
            if f.field_id in self._deletes:  # v1: the field stays, with void of its source
                fields.append(PartitionField(f.source_id, f.field_id, Transform.void(), final))
            else:
                fields.append(replace(f, name=final))
        fields.extend(self._adds)
        new_fields = tuple(fields)
        spec_id = next((s.spec_id for s in self._specs if s.fields == new_fields),
                       max(s.spec_id for s in self._specs) + 1)
        spec = PartitionSpec(spec_id, new_fields)
        spec.check_compatible(self._schema)
        return spec, self._last_id

    def _final_name(self, f: PartitionField) -> str | None:
        """The name a current field has after this update; None if v2 drops it."""
        if f.field_id in self._deletes:
            return f"{f.name}_{f.field_id}" if self._v1 else None
        return self._renames.get(f.name, f.name)

    def _kept_fields(self) -> list[PartitionField]:
        kept = [f for f in self._spec.fields if f.field_id not in self._deletes]
        return kept + self._adds

    def _claim_name(self, name: str, action: str,
                    renaming: PartitionField | None = None) -> None:
        """Make sure no other field ends up named ``name``; a void (v1-removed) field holding
        it is moved aside to ``<name>_<field id>``."""
        for f in self._spec.fields:
            if f is renaming or self._final_name(f) != name:
                continue
            if f.transform.is_void and f.name not in self._renames:
                self._renames[f.name] = f"{f.name}_{f.field_id}"
                continue
            raise ValidationError(f"{action}: the name is already used by partition field {f}")
        added = next((a for a in self._adds if a.name == name), None)
        if added is not None:
            raise ValidationError(
                f"{action}: the name is already used by partition field {added}, added in "
                "this update")

    def _term(self, text: str) -> tuple[int, Transform] | None:
        """(source ID, transform) of a term like ``"day(ts)"``, or None if it is not one."""
        m = _TERM_RE.fullmatch(text)
        if m is None:
            return None
        source_id = self._schema.find_field_id(m.group(2), self._case_sensitive)
        try:
            transform = Transform.parse(m.group(1))
        except ValidationError:
            return None
        return None if source_id is None else (source_id, transform)

    def _recycle(self, source_id: int, transform: Transform,
                 name: str | None) -> PartitionField | None:
        """v2: a field of an earlier spec with this (source, transform) and no conflicting name,
        whose ID no current or added field holds."""
        if self._v1:
            return None
        used = {f.field_id for f in self._spec.fields} | {a.field_id for a in self._adds}
        for spec in self._specs:
            for f in spec.fields:
                if (f.source_id == source_id and f.transform == transform
                        and name in (None, f.name) and f.field_id not in used):
                    return f
        return None
