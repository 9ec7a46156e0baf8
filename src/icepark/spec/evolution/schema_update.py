"""Schema evolution: a pure builder that adds, deletes, renames, promotes and moves columns.

Spec, *Schema Evolution*: "Schemas may be evolved by type promotion or adding, deleting,
renaming, or reordering fields in structs (both nested structs and the top-level schema's
struct)." :class:`SchemaUpdate` applies such changes to a schema and returns the new schema and
the new last column ID; it does no I/O and assigns no schema ID (the metadata builder does).

Where the spec is silent, this module decides:

* Changes apply in call order to a working copy. Each call is checked at once and either takes
  effect fully or raises :class:`~icepark.errors.ValidationError`, leaving the builder as it was.
* Paths name columns as in the input schema: a rename does not change how a column is addressed
  in the same update. A column added in this update is addressed by its parent's path plus its
  new name, and that name wins over an input column that was renamed away or deleted.
* Renaming a column twice keeps the last name.
* A column that was renamed, updated, moved or given new columns cannot be deleted in the same
  update, nor can a column holding such a column; a deleted column cannot be changed.
* A required column added by :meth:`SchemaUpdate.union_by_name` stays required, so it needs an
  initial default like any other required column.

>>> from icepark.spec.types import LONG, STRING, NestedField, StructType
>>> base = Schema.of(
...     NestedField.required(1, "user_id", LONG),
...     NestedField.optional(2, "profile", StructType((
...         NestedField.optional(3, "first_name", STRING),))))
>>> schema, last_column_id = (SchemaUpdate(base, last_column_id=3)
...     .rename_column("profile.first_name", "given_name")
...     .add_column("profile.last_name", STRING)
...     .move_first("profile")
...     .apply())
>>> print(schema)
table {
  2: profile: optional struct<3: given_name: optional string, 4: last_name: optional string>
  1: user_id: required long
}
>>> last_column_id
4
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from icepark.errors import ValidationError
from icepark.spec import values
from icepark.spec.evolution.type_rewrite import (
    all_fields,
    map_fields,
    promote,
    rekey_defaults,
)
from icepark.spec.evolution.union import union_by_name
from icepark.spec.schema import Schema, assign_fresh_ids, index_by_id
from icepark.spec.types import (
    MAX_FIELD_ID,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    child_fields,
)

Path = str | tuple[str, ...]
UNSET: Final[Any] = object()  # update_column's "leave the write default as it is"


class SchemaUpdate:
    """Changes to one schema, checked as they are made; :meth:`apply` returns the result.

    Spec: "Any struct, including a top-level schema, can evolve through deleting fields, adding
    new fields, renaming existing fields, reordering existing fields, or promoting a primitive
    using the valid type promotions."

    ``last_column_id`` is the table's last assigned column ID; new columns get IDs above it.
    ``allow_incompatible_changes`` permits making an optional column required and adding a
    required column without an initial default.
    """

    def __init__(self, schema: Schema, last_column_id: int, format_version: int = 2,
                 case_sensitive: bool = True, allow_incompatible_changes: bool = False) -> None:
        if last_column_id < schema.highest_field_id:
            raise ValidationError(
                f"last_column_id {last_column_id} is below the schema's highest field ID "
                f"{schema.highest_field_id}; new columns would reuse IDs")
        if format_version < 1:
            raise ValidationError(f"Invalid format version {format_version}")
        self._base = schema
        self._last_id = last_column_id
        self._format_version = format_version
        self._case_sensitive = case_sensitive
        self._allow_incompatible = allow_incompatible_changes
        self._view = Schema(schema.fields)  # the working copy; identifiers are checked in apply
        self._identifier_ids = schema.identifier_field_ids
        self._added: set[int] = set()  # every ID assigned by this update
        self._deleted: set[int] = set()
        self._touched: dict[int, str] = {}  # field ID -> what this update did to it

    # ------------------------------------------------------------------------------ changes

    def add_column(  # noqa: PLR0917 - the agreed API takes the defaults positionally
            self, path: Path, field_type: IcebergType, doc: str | None = None,
            required: bool = False, initial_default: Any = None,
            write_default: Any = None) -> SchemaUpdate:
        """Add a column; ``path`` is the parent's path plus the new name (one part: top level).

        Spec: "Adding a new field assigns a new ID for that field and for any nested fields."
        "When a required field is added, both defaults must be set to a non-null value."
        "The write-default is initially set to the same value as initial-default."
        The parent may be a struct, or a list or map whose element or value is a struct.
        """
        parts, shown = _parts(path), _show(path)
        what = f"Cannot add column {shown!r}"
        parent_path: Path = path.rpartition(".")[0] if isinstance(path, str) else parts[:-1]
        holder = self._struct_holder(self._find(parent_path, what) if parent_path else None, what)
        if not parts[-1]:
            raise ValidationError(f"{what}: a name must not be empty")
        self._check_free(holder, parts[-1], what)
        if required and initial_default is None and not self._allow_incompatible:
            raise ValidationError(
                f"Cannot add required column {shown!r} without an initial default: \"When a "
                "required field is added, both defaults must be set to a non-null value\"; "
                "add it as optional, give initial_default, or allow incompatible changes")
        top = StructType((NestedField(0, parts[-1], field_type, required, doc, initial_default,
                                      initial_default if write_default is None
                                      else write_default),))
        for f in all_fields(top):
            for kind in ("initial_default", "write_default"):
                self._check_default(shown if f is top.fields[0] else f"{shown} field {f.name!r}",
                                    f.field_type, getattr(f, kind), kind)
        counter = self._last_id

        def next_id() -> int:
            nonlocal counter
            if counter >= MAX_FIELD_ID:
                raise ValidationError(
                    f"{what}: field IDs above {MAX_FIELD_ID} are reserved for metadata columns "
                    "(spec, Reserved Field IDs)")
            counter += 1
            return counter

        fresh = rekey_defaults(top, assign_fresh_ids(top, next_id))
        self._set_children(holder, (*self._children(holder), *child_fields(fresh)))
        self._last_id = counter
        self._added.update(index_by_id(fresh))
        if holder is not None:
            self._touched.setdefault(holder, "given new columns")
        return self

    def delete_column(self, path: Path) -> SchemaUpdate:
        """Delete a column. Spec: "Deleting a field removes it from the current schema."

        Identifier fields cannot be deleted unless :meth:`set_identifier_fields` drops them in
        the same update (checked by :meth:`apply`).
        """
        what = f"Cannot delete {_show(path)!r}"
        fid = self._find(path, what)
        parent = self._struct_parent(fid, what)
        for sub in (fid, *index_by_id(self._field(fid).field_type)):
            if sub in self._touched:
                raise ValidationError(f"{what}: column {self._name(sub)!r} was "
                                      f"{self._touched[sub]} in this update")
        kept = tuple(f for f in self._children(parent) if f.field_id != fid)
        self._set_children(parent, kept)
        self._deleted.add(fid)
        return self

    def rename_column(self, path: Path, new_name: str) -> SchemaUpdate:
        """Rename a column, keeping its ID; renaming it again in the same update wins.

        Spec: "Renaming an existing field must change the name, but not the field ID."
        """
        what = f"Cannot rename {_show(path)!r} to {new_name!r}"
        fid = self._find(path, what)
        parent = self._struct_parent(fid, what)
        if not new_name:
            raise ValidationError(f"{what}: a name must not be empty")
        if new_name == self._field(fid).name:
            raise ValidationError(f"{what}: renaming must change the name")
        self._check_free(parent, new_name, what, exclude=fid)
        self._edit(fid, lambda f: replace(f, name=new_name))
        self._touched[fid] = "renamed"
        return self

    def update_column(self, path: Path, field_type: IcebergType | None = None,
                      doc: str | None = None, required: bool | None = None,
                      write_default: Any = UNSET) -> SchemaUpdate:
        """Promote a column's type, set its doc, nullability or write default.

        Spec: "Valid type promotions are: int to long; float to double; decimal(P, S) to
        decimal(P', S) if P' > P". "Evolving primitive types to structs is not allowed, nor is
        evolving a single-field struct to a primitive." "The write-default ... can be changed
        through schema evolution"; the initial default cannot ("The initial-default must be set
        when a field is added and cannot change"). An optional column becomes required only with
        ``allow_incompatible_changes``: existing rows may hold nulls.
        """
        old = self._field(self._find(path, f"Cannot update {_show(path)!r}"))
        name = self._name(old.field_id)
        what = f"Cannot update {name!r}"
        holder = self._view.parent_id(old.field_id)
        holder_type = None if holder is None else self._field(holder).field_type
        in_struct = holder_type is None or isinstance(holder_type, StructType)
        new = old
        if field_type is not None and field_type != old.field_type:
            new = replace(new, field_type=promote(name, old.field_type, field_type,
                                                  self._format_version))
        if doc is not None and doc != old.doc:
            if not in_struct:
                raise ValidationError(f"{what}: list elements and map keys and values have no doc")
            new = replace(new, doc=doc)
        if required is not None and required != old.is_required:
            if required and not self._allow_incompatible:
                raise ValidationError(
                    f"{what}: cannot make an optional column required, existing rows may hold "
                    "nulls; pass allow_incompatible_changes=True to force it")
            if isinstance(holder_type, MapType) and old.field_id == holder_type.key_id:
                raise ValidationError(f"{what}: \"Map keys are required\"")
            new = replace(new, is_required=required)
        if write_default is not UNSET and write_default != old.write_default:
            if not in_struct:
                raise ValidationError(
                    f"{what}: \"Default values can be tracked for struct fields\" only, not for "
                    "list elements or map keys and values")
            self._check_default(name, new.field_type, write_default, "write_default")
            new = replace(new, write_default=write_default)
        if new != old:
            self._edit(old.field_id, lambda _: new)
            self._touched[old.field_id] = "updated"
        return self

    def make_optional(self, path: Path) -> SchemaUpdate:
        """Make a required column optional, always a compatible change."""
        return self.update_column(path, required=False)

    def move_first(self, path: Path) -> SchemaUpdate:
        """Move a column to the front of its struct ("reordering existing fields")."""
        return self._move(path, None, after=False)

    def move_before(self, path: Path, before_path: Path) -> SchemaUpdate:
        """Move a column just before a sibling in the same struct."""
        return self._move(path, before_path, after=False)

    def move_after(self, path: Path, after_path: Path) -> SchemaUpdate:
        """Move a column just after a sibling in the same struct."""
        return self._move(path, after_path, after=True)

    def set_identifier_fields(self, *paths: Path) -> SchemaUpdate:
        """Replace the identifier fields; :meth:`apply` checks them.

        Spec, *Identifier Field IDs*: "Identifier fields may be nested in structs but cannot be
        nested within maps or lists. Float, double, and optional fields cannot be used as
        identifier fields and a nested field cannot be used as an identifier field if it is
        nested in an optional struct".
        """
        ids: list[int] = []
        for path in paths:
            fid = self._find(path, f"Cannot use {_show(path)!r} as an identifier field")
            if fid not in ids:
                ids.append(fid)
        self._identifier_ids = tuple(ids)
        return self

    def union_by_name(self, other: Schema) -> SchemaUpdate:
        """Merge ``other`` into this schema by column name: see
        :func:`icepark.spec.evolution.union.union_by_name`. All or nothing."""
        saved = (self._view, self._last_id, set(self._added), set(self._deleted),
                 dict(self._touched))
        try:
            union_by_name(self, other)
        except ValidationError:
            self._view, self._last_id, self._added, self._deleted, self._touched = saved
            raise
        return self

    def current_field(self, path: Path) -> NestedField | None:
        """The column at ``path`` as this update has left it; None if absent or deleted."""
        fid = self._lookup(path)
        return None if fid is None else self._view.field_by_id(fid)

    def apply(self) -> tuple[Schema, int]:
        """The evolved schema (keeping the input's schema ID) and the new last column ID."""
        for fid in self._identifier_ids:
            if self._view.field_by_id(fid) is None:
                raise ValidationError(
                    f"Cannot delete identifier field {self._name(fid)!r}: drop it with "
                    "set_identifier_fields in the same update")
        try:
            schema = Schema(self._view.fields, self._base.schema_id, self._identifier_ids)
        except ValidationError as e:
            raise ValidationError(f"Invalid schema after update: {e}") from e
        return schema, self._last_id

    # ----------------------------------------------------------------- internals

    def _move(self, path: Path, ref_path: Path | None, after: bool) -> SchemaUpdate:
        """Move ``path`` next to ``ref_path``, or first when that is None."""
        side = "after" if after else "before"
        target = "first" if ref_path is None else f"{side} {_show(ref_path)!r}"
        what = f"Cannot move {_show(path)!r} {target}"
        fid = self._find(path, what)
        parent = self._struct_parent(fid, what)
        rest = [f for f in self._children(parent) if f.field_id != fid]
        at = 0
        if ref_path is not None:
            ref = self._find(ref_path, what)
            if fid == ref:
                raise ValidationError(f"{what}: a column cannot be moved {side} itself")
            if self._view.parent_id(ref) != parent:
                raise ValidationError(
                    f"{what}: a column can only move within its own struct (\"Grouping a subset "
                    "of a struct's fields into a nested struct is not allowed, nor is moving "
                    "fields from a nested struct into its immediate parent struct\")")
            at = next(i for i, f in enumerate(rest) if f.field_id == ref) + (1 if after else 0)
        rest.insert(at, self._field(fid))
        self._set_children(parent, tuple(rest))
        self._touched[fid] = "moved"
        return self

    # ------------------------------------------------------------------------ lookups

    def _find(self, path: Path, what: str) -> int:
        """The ID of the live column at ``path``, or an error starting with ``what``."""
        fid = self._lookup(path)
        if fid is None:
            raise ValidationError(f"{what}: column {_show(path)!r} is not in the schema")
        if self._view.field_by_id(fid) is None:
            why = "is deleted" if fid in self._deleted else "is inside a deleted column"
            raise ValidationError(f"{what}: column {_show(path)!r} {why} in this update")
        return fid

    def _lookup(self, path: Path) -> int | None:
        fid: int | None = None
        for part in _parts(path):
            fid = self._child(fid, part)
            if fid is None:
                break
        if fid is None and isinstance(path, str):  # a name containing dots, or a short name
            fid = self._base.find_field_id(path, self._case_sensitive)
        return fid

    def _child(self, fid: int | None, part: str) -> int | None:
        """The child named ``part`` of column ``fid`` (None: the root); list elements and map
        values may be left out of a path, as in "points.x" for "points.element.x"."""
        match self._type_of(fid):
            case ListType() as t:
                return t.element_id if self._same(part, "element") else self._child(
                    t.element_id, part)
            case MapType() as t:
                if self._same(part, "key") or self._same(part, "value"):
                    return t.key_id if self._same(part, "key") else t.value_id
                return self._child(t.value_id, part)
            case StructType() as t:
                added = (f for f in t.fields if f.field_id in self._added)
                found = next((f for f in added if self._same(f.name, part)), None)
                base = self._base.as_struct() if fid is None else self._base_type(fid)
                if found is None and isinstance(base, StructType):
                    found = base.field_by_name(part, self._case_sensitive)
                return None if found is None else found.field_id
            case _:
                return None

    def _type_of(self, fid: int | None) -> IcebergType | None:
        if fid is None:
            return self._view.as_struct()
        f = self._view.field_by_id(fid)
        return f.field_type if f is not None else self._base_type(fid)

    def _base_type(self, fid: int) -> IcebergType | None:
        f = self._base.field_by_id(fid)
        return None if f is None else f.field_type

    def _field(self, fid: int) -> NestedField:
        return self._view.find_field(fid)

    def _name(self, fid: int) -> str:
        return self._view.find_column_name(fid) or self._base.find_column_name(fid) or str(fid)

    def _same(self, a: str, b: str) -> bool:
        return a == b if self._case_sensitive else a.lower() == b.lower()

    def _struct_parent(self, fid: int, what: str) -> int | None:
        """The struct column holding ``fid`` (None: the root); list elements and map keys and
        values are not struct fields and cannot be renamed, moved or deleted."""
        parent = self._view.parent_id(fid)
        if parent is not None and not isinstance(self._field(parent).field_type, StructType):
            raise ValidationError(
                f"{what}: {self._name(fid)!r} is a list element or map key or value; change the "
                f"enclosing column {self._name(parent)!r} instead")
        return parent

    def _struct_holder(self, parent: int | None, what: str) -> int | None:
        """The column whose struct receives new columns: ``parent``, or the struct element or
        value of a list or map ``parent``."""
        holder, t = parent, self._type_of(parent)
        while isinstance(t, ListType | MapType):
            holder = t.element_id if isinstance(t, ListType) else t.value_id
            t = self._type_of(holder)
        if not isinstance(t, StructType):
            assert parent is not None
            raise ValidationError(
                f"{what}: parent {self._name(parent)!r} is {self._type_of(parent)}, not a struct "
                "or a list or map of structs")
        return holder

    def _children(self, holder: int | None) -> tuple[NestedField, ...]:
        t = self._type_of(holder)
        assert isinstance(t, StructType)
        return t.fields

    def _check_free(self, holder: int | None, name: str, what: str,
                    exclude: int | None = None) -> None:
        for f in self._children(holder):
            if f.field_id != exclude and self._same(f.name, name):
                where = "the table" if holder is None else repr(self._name(holder))
                raise ValidationError(
                    f"{what}: {where} already has a column named {f.name!r}")

    def _check_default(self, shown: str, t: IcebergType, value: Any, kind: str) -> None:
        """Spec, Appendix E: "Default values are added to struct fields in v3"."""
        if value is None:
            return
        if self._format_version < 3:
            raise ValidationError(
                f"Cannot set {kind} of {shown!r}: \"Default values are added to struct fields "
                f"in v3\" and this table is format version {self._format_version}")
        try:
            values.check_value(t, value)
        except ValidationError as e:
            raise ValidationError(f"Invalid {kind} for {shown!r}: {e}") from e

    # ------------------------------------------------------------------------ tree edits

    def _edit(self, fid: int, fn: Callable[[NestedField], NestedField]) -> None:
        root = map_fields(self._view.as_struct(), lambda f: fn(f) if f.field_id == fid else f)
        assert isinstance(root, StructType)
        self._view = Schema(root.fields)

    def _set_children(self, holder: int | None, fields: tuple[NestedField, ...]) -> None:
        """Give the struct of ``holder`` (None: the root) these ``fields``."""
        if holder is None:
            self._view = Schema(fields)
        else:
            self._edit(holder, lambda f: replace(f, field_type=StructType(fields)))


def _parts(path: Path) -> tuple[str, ...]:
    parts = tuple(path.split(".")) if isinstance(path, str) else tuple(path)
    if not parts or not all(isinstance(p, str) for p in parts):
        raise ValidationError(f"Invalid column path {path!r}")
    return parts


def _show(path: Path) -> str:
    return path if isinstance(path, str) else ".".join(path)
