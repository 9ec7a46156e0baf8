"""Partition specs: how a table turns a row into its tuple of partition values.

Spec, *Partitioning*: "Tables are configured with a partition spec that defines how to produce a
tuple of partition values from a record. A partition spec has a list of fields that consist of:
A source column id or a list of source column ids from the table's schema; A partition field id
that is used to identify a partition field and is unique within a partition spec. In v2 table
metadata, it is unique across all partition specs; A transform that is applied to the source
column(s) to produce a partition value; A partition name."

Every transform icepark knows takes one source column (:attr:`PartitionField.source_id`). A
field of a multi-argument transform (v3, written with ``source-ids``; such a transform is
unknown to icepark, e.g. ``zorder``) also lists all of them in
:attr:`PartitionField.source_ids`, the first being ``source_id``.

"Partition fields that use an unknown transform can be read by ignoring the partition field for
the purpose of filtering data files during scan planning ... Writers are not allowed to commit
data using a partition spec that contains a field with an unknown transform": writers call
:meth:`PartitionSpec.check_writable` before writing anything.

>>> from icepark.spec.types import LONG, TIMESTAMPTZ, NestedField
>>> from icepark.spec.schema import Schema
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(4, "ts", TIMESTAMPTZ))
>>> spec = PartitionSpecBuilder(schema).day("ts", "ts_day").bucket("id", 16).build()
>>> [(f.field_id, f.name, str(f.transform)) for f in spec.fields]
[(1000, 'ts_day', 'day'), (1001, 'id_bucket', 'bucket[16]')]
>>> spec.partition_type(schema)
struct<1000: ts_day: optional date, 1001: id_bucket: optional int>
>>> spec.partition_path([17486, 3], schema)
'ts_day=2017-11-16/id_bucket=3'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform, TransformKind, check_source_ids
from icepark.spec.types import (
    DATE,
    INT,
    STRING,
    IcebergType,
    NestedField,
    PrimitiveType,
    StructType,
)

PARTITION_FIELD_ID_START = 1000
"""Spec, *Partition Evolution*: "assigned sequentially starting at 1000 in the reference
implementation"."""

# Result types that do not depend on the source, for fields whose source column was dropped.
# void is "Source type or int" (spec, *Partition Transforms*); unknown is always string.
_SOURCE_FREE_RESULT: dict[TransformKind, PrimitiveType] = {
    TransformKind.BUCKET: INT,
    TransformKind.YEAR: INT,
    TransformKind.MONTH: INT,
    TransformKind.DAY: DATE,
    TransformKind.HOUR: INT,
    TransformKind.VOID: INT,
    TransformKind.UNKNOWN: STRING,
}
_DEFAULT_SUFFIX: dict[TransformKind, str] = {
    TransformKind.YEAR: "year",
    TransformKind.MONTH: "month",
    TransformKind.DAY: "day",
    TransformKind.HOUR: "hour",
    TransformKind.VOID: "null",
}


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One partition field: source column ID, partition field ID, transform and name.

    ``source_ids`` is empty for a single-argument field (JSON ``source-id``) and lists every
    source column of a multi-argument one (JSON ``source-ids``), ``source_id`` being its first;
    only an unknown transform can have one. :attr:`sources` is the list in both cases.

    >>> f = PartitionField.of_sources((1, 2), 1000, Transform.unknown("zorder"), "ab")
    >>> print(f)
    1000: ab: zorder(1, 2)
    >>> f.source_id, f.sources, f.is_multi_argument
    (1, (1, 2), True)
    >>> PartitionField.of_sources((1, 2), 1000, Transform.bucket(4), "ab")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Partition field 'ab': bucket[4] takes one source column, \
not 2 (source-ids [1, 2])
    """

    source_id: int
    field_id: int
    transform: Transform
    name: str
    source_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(
                f"Partition field {self.field_id} must have a non-empty name")
        object.__setattr__(self, "source_ids", tuple(self.source_ids))
        check_source_ids(self.transform, self.source_id, self.source_ids,
                         f"Partition field {self.name!r}")

    @staticmethod
    def of_sources(source_ids: Sequence[int], field_id: int, transform: Transform,
                   name: str) -> PartitionField:
        """A multi-argument field (``source-ids``) of an unknown transform."""
        ids = tuple(source_ids)
        if not ids:
            raise ValidationError(f"Partition field {name!r}: 'source-ids' must not be empty")
        return PartitionField(ids[0], field_id, transform, name, ids)

    @property
    def sources(self) -> tuple[int, ...]:
        """Every source column ID: ``source_ids``, or ``(source_id,)``."""
        return self.source_ids or (self.source_id,)

    @property
    def is_multi_argument(self) -> bool:
        """Whether the field is written with ``source-ids`` (a multi-argument transform)."""
        return bool(self.source_ids)

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({_ids(self.sources)})"


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition spec: its ID and its ordered fields.

    Construction checks what needs no schema: field IDs and names are unique within the spec.
    :meth:`check_compatible` checks the fields against a schema.
    """

    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        ids: set[int] = set()
        names: set[str] = set()
        for f in self.fields:
            if f.field_id in ids:
                raise ValidationError(
                    f"Duplicate partition field id {f.field_id} ({f.name!r}) in spec "
                    f"{self.spec_id}: a partition field id is unique within a partition spec")
            if f.name in names:
                raise ValidationError(
                    f"Duplicate partition field name {f.name!r} in spec {self.spec_id}")
            ids.add(f.field_id)
            names.add(f.name)

    @property
    def is_unpartitioned(self) -> bool:
        """No fields, or only ``void`` fields (dropped in a v1 table).

        >>> dropped = PartitionField(1, 1000, Transform.void(), "x_null")
        >>> PartitionSpec(1, (dropped,)).is_unpartitioned, UNPARTITIONED.is_unpartitioned
        (True, True)
        """
        return all(f.transform.is_void for f in self.fields)

    @property
    def unknown_fields(self) -> tuple[PartitionField, ...]:
        """The fields whose transform icepark does not know (ignored for filtering)."""
        return tuple(f for f in self.fields if f.transform.is_unknown)

    def check_writable(self) -> None:
        """Raise :class:`UnsupportedFeature` naming every field with an unknown transform:
        "Writers are not allowed to commit files with a partition spec that contains a field
        with an unknown transform." Writers call it before writing any file.

        >>> spec = PartitionSpec(1, (PartitionField(1, 1000, Transform.unknown("h3[5]"), "h"),))
        >>> spec.check_writable()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        icepark.errors.UnsupportedFeature: Cannot write data files with partition spec 1: \
field 'h' uses transform 'h3[5]', which icepark does not know; ...
        """
        unknown = self.unknown_fields
        if unknown:
            fields = ", ".join(f"field {f.name!r} uses transform {str(f.transform)!r}"
                               for f in unknown)
            raise UnsupportedFeature(
                f"Cannot write data files with partition spec {self.spec_id}: {fields}, which "
                "icepark does not know; \"Writers are not allowed to commit files with a "
                "partition spec that contains a field with an unknown transform\" (remove the "
                "field with update_spec() to write again)")

    @property
    def last_assigned_field_id(self) -> int:
        """The largest partition field ID, or ``PARTITION_FIELD_ID_START - 1`` if none."""
        return max((f.field_id for f in self.fields), default=PARTITION_FIELD_ID_START - 1)

    def field_by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.fields if f.name == name), None)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of partition values: one optional field per partition field, with the
        partition field's ID and name and the transform's result type.

        A source column missing from ``schema`` (dropped after this spec was replaced) gets the
        transform's result type where that does not depend on the source. An unknown
        transform's is ``string``, as the reference implementation types it, whatever its
        sources; the values other writers stored for it may be of another type.
        """
        fields = []
        for f in self.fields:
            source = _source_type(schema, f.source_id)
            result: IcebergType | None
            if f.transform.is_unknown:
                result = STRING
            elif source is None:
                result = _SOURCE_FREE_RESULT.get(f.transform.kind)
                if result is None:
                    raise ValidationError(
                        f"Cannot find source column {f.source_id} for partition field "
                        f"{f.name!r}: the type of {f.transform} depends on its source")
            elif not f.transform.can_transform(source):
                raise ValidationError(
                    f"Partition field {f.name!r}: {f.transform} cannot transform {source}")
            else:
                result = f.transform.result_type(source)
            fields.append(NestedField.optional(f.field_id, f.name, result))
        return StructType(tuple(fields))

    def check_compatible(self, schema: Schema) -> None:
        """Raise ValidationError unless every field is valid against ``schema``.

        Spec: "The source column, selected by id, must be a primitive type and cannot be
        contained in a map or list, but may be nested in a struct." The transform must accept
        the source type. Partition names are unique and do not collide with a schema column
        unless the field is the identity (or void) of that same column. A column has at most
        one time transform (year/month/day/hour) and no (source, transform) pair repeats.
        ``void`` fields (dropped in v1) are exempt from the source checks. Every source of a
        multi-argument field is checked; an unknown transform accepts any primitive source, as
        the reference implementation's does.
        """
        names: set[str] = set()
        by_key: dict[tuple[tuple[int, ...], str], PartitionField] = {}
        for f in self.fields:
            if f.name in names:
                raise ValidationError(f"Partition name {f.name!r} is used more than once")
            names.add(f.name)
            column_id = schema.find_field_id(f.name)
            if column_id is not None and not (
                    column_id == f.source_id and (f.transform.is_identity or f.transform.is_void)):
                raise ValidationError(
                    f"Partition name {f.name!r} collides with schema column {f.name!r}: only an "
                    "identity partition of that column may use its name")
            if f.transform.is_void:
                continue
            for source_id in f.sources:
                check_partition_source(schema, source_id, f.transform, f.name)
            key = (f.sources, "time" if f.transform.is_time else str(f.transform))
            other = by_key.get(key)
            if other is not None:
                raise ValidationError(
                    f"Cannot add redundant partition {f.name!r} ({f.transform}): conflicts "
                    f"with {other.name!r} ({other.transform}) on the same source column "
                    f"{_ids(f.sources)}")
            by_key[key] = f

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Whether both specs have the same fields (sources, transform, name, field ID), in the
        same order; the spec IDs may differ."""
        return self.fields == other.fields

    def partition_path(self, values: Sequence[Any], schema: Schema) -> str:
        """The ``name=value/...`` path of a partition tuple, each part URL-escaped.

        >>> from icepark.spec.types import STRING, NestedField
        >>> s = Schema.of(NestedField.optional(1, "c", STRING))
        >>> PartitionSpecBuilder(s).identity("c").build().partition_path(["a b/c=d"], s)
        'c=a%20b%2Fc%3Dd'
        """
        if len(values) != len(self.fields):
            raise ValidationError(
                f"Partition tuple has {len(values)} values but spec {self.spec_id} has "
                f"{len(self.fields)} fields")
        parts = []
        for f, value in zip(self.fields, values, strict=True):
            source = _source_type(schema, f.source_id)
            if source is None or not f.transform.can_transform(source):
                # Only void and source-free transforms can reach here with values to print.
                source = _SOURCE_FREE_RESULT.get(f.transform.kind, INT)
            human = f.transform.to_human_string(source, value)
            parts.append(f"{quote(f.name, safe='')}={quote(human, safe='')}")
        return "/".join(parts)

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNPARTITIONED = PartitionSpec(0, ())


def _source_type(schema: Schema, source_id: int) -> IcebergType | None:
    found = schema.field_by_id(source_id)
    return None if found is None else found.field_type


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids))


def check_partition_source(schema: Schema, source_id: int, transform: Transform,
                           name: str) -> PrimitiveType:
    """The source column's type, after checking it may be partitioned by ``transform``.

    Spec: "The source column, selected by id, must be a primitive type and cannot be contained
    in a map or list, but may be nested in a struct."
    """
    found = schema.field_by_id(source_id)
    if found is None:
        raise ValidationError(
            f"Cannot find source column {source_id} for partition field {name!r}")
    column = schema.find_column_name(source_id) or str(source_id)
    source = found.field_type
    if not isinstance(source, PrimitiveType):
        raise ValidationError(
            f"Cannot partition {name!r} by {column!r}: the source must be a primitive type, "
            f"not {source.type_id.value}")
    parent = schema.parent_id(source_id)
    while parent is not None:
        holder = schema.find_field(parent)
        if not isinstance(holder.field_type, StructType):
            raise ValidationError(
                f"Cannot partition {name!r} by {column!r}: the source cannot be contained in a "
                f"{holder.field_type.type_id.value}, but may be nested in a struct")
        parent = schema.parent_id(parent)
    if not transform.can_transform(source):
        raise ValidationError(
            f"Cannot partition {name!r} by {transform}({column}): {transform} does not accept "
            f"{source}")
    return source


def default_partition_name(column: str, transform: Transform, *, with_argument: bool = True
                           ) -> str:
    """The name a partition field gets when none is given, as the reference implementation
    names it: a partition field added by partition evolution carries the bucket count or
    truncation width (``id_bucket_16``, ``s_trunc_4``), one of a new table's spec does not
    (``with_argument=False``: ``id_bucket``, ``s_trunc``).

    >>> default_partition_name("id", Transform.bucket(16))
    'id_bucket_16'
    >>> default_partition_name("id", Transform.bucket(16), with_argument=False)
    'id_bucket'
    >>> default_partition_name("ts", Transform.day())
    'ts_day'
    """
    if transform.is_unknown:
        raise ValidationError(f"A partition field of the unknown transform {transform} has no "
                              f"default name: give {transform}({column}) a name")
    match transform.kind:
        case TransformKind.IDENTITY:
            return column
        case TransformKind.BUCKET:
            return f"{column}_bucket" + (f"_{transform.param}" if with_argument else "")
        case TransformKind.TRUNCATE:
            return f"{column}_trunc" + (f"_{transform.param}" if with_argument else "")
        case kind:
            return f"{column}_{_DEFAULT_SUFFIX[kind]}"


class PartitionSpecBuilder:
    """Builds a new table's partition spec from column names.

    Field IDs are assigned from ``last_assigned_field_id + 1``; :meth:`build` runs
    :meth:`PartitionSpec.check_compatible`.

    >>> from icepark.spec.types import STRING, NestedField
    >>> s = Schema.of(NestedField.optional(1, "data", STRING))
    >>> PartitionSpecBuilder(s).truncate("data", 4).build().fields[0].name
    'data_trunc'
    >>> PartitionSpecBuilder(s).hour("data").build()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Cannot partition 'data_hour' by hour(data): hour does not ...
    """

    def __init__(self, schema: Schema, spec_id: int = 0,
                 last_assigned_field_id: int = PARTITION_FIELD_ID_START - 1,
                 case_sensitive: bool = True) -> None:
        self._schema = schema
        self._spec_id = spec_id
        self._last_id = last_assigned_field_id
        self._case_sensitive = case_sensitive
        self._fields: list[PartitionField] = []

    def _add_named(self, source_name: str, transform: Transform,
                   name: str | None) -> PartitionSpecBuilder:
        source_id = self._schema.find_field_id(source_name, self._case_sensitive)
        if source_id is None:
            raise ValidationError(
                f"Cannot find source column {source_name!r} for partition {transform}")
        column = self._schema.find_column_name(source_id) or source_name
        return self.add(source_id, transform, name or self.default_name(column, transform))

    def default_name(self, column: str, transform: Transform) -> str:
        """A new table's default name for a partition field (see
        :func:`default_partition_name`); with the argument where the short name is taken
        (``bucket(8, id)`` after ``bucket(16, id)``)."""
        short = default_partition_name(column, transform, with_argument=False)
        taken = {f.name for f in self._fields}
        return default_partition_name(column, transform) if short in taken else short

    def identity(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.identity(), name)

    def bucket(self, source_name: str, num_buckets: int,
               name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.bucket(num_buckets), name)

    def truncate(self, source_name: str, width: int,
                 name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.truncate(width), name)

    def year(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.year(), name)

    def month(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.month(), name)

    def day(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.day(), name)

    def hour(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.hour(), name)

    def void(self, source_name: str, name: str | None = None) -> PartitionSpecBuilder:
        return self._add_named(source_name, Transform.void(), name)

    def add(self, source_id: int, transform: Transform, name: str,
            field_id: int | None = None) -> PartitionSpecBuilder:
        """Add a field by source ID; without ``field_id`` the next unassigned ID is used."""
        if field_id is None:
            self._last_id += 1
            field_id = self._last_id
        else:
            self._last_id = max(self._last_id, field_id)
        self._fields.append(PartitionField(source_id, field_id, transform, name))
        return self

    def build(self) -> PartitionSpec:
        spec = PartitionSpec(self._spec_id, tuple(self._fields))
        spec.check_compatible(self._schema)
        return spec
