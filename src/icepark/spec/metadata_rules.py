"""The rules of *Table Metadata Fields* that tie one field to others, checked when a metadata
file is read (:func:`icepark.spec.serde.table_metadata_from_json` calls :func:`check_metadata`).

:class:`~icepark.spec.metadata.TableMetadata` itself checks what every value must satisfy
(the current schema, default spec and default sort order exist, the current snapshot and every
reference point to a snapshot, "There is always a ``main`` branch reference pointing to the
``current-snapshot-id``", sequence numbers, ``table-uuid`` from v2). These rules add the
ones that a file can break and that would otherwise be written again by the next commit:

* ``last-partition-id``: "the highest assigned partition field ID across all partition specs
  for the table": no partition field of any spec has a higher ID. (A v1 file may omit it; the
  reader then derives it from the specs.)
* The default partition spec and the default sort order are bound to the current schema:
  "The source columns, selected by ids, must be a primitive type and cannot be contained in a
  map or list, but may be nested in a struct", and the transform must accept the source type.
  ``void`` fields are exempt (spec, *Partition Transforms*: ``void`` may "replace the
  transform in an existing partition field so that the field is effectively dropped in v1
  tables", and its source column may be dropped after it). An unknown transform accepts any
  primitive source, but each of its source columns must exist. Other specs and sort orders are not
  checked against any schema: a column a spec no longer in use partitioned by may have been
  dropped, and the schemas that had it removed. The reference implementation reads metadata
  the same way (it binds only the default spec and sort order to the current schema).
* Multi-argument partition and sort fields (JSON ``source-ids`` listing several columns) only
  in v3: "``source-ids`` was added and must be written in the case of a multi-argument
  transform" is a v3 change (Appendix E), and v1 and v2 fields have a required ``source-id``.
* A snapshot's ``schema-id``, "ID of the table's current schema when the snapshot was
  created", names a schema of the table.
* v3 ``next-row-id``: "A ``long`` higher than all assigned row IDs": no snapshot assigned row
  IDs at or above it (``first-row-id + added-rows``).

``last-column-id``, "the highest assigned column ID for the table", below a field ID of a
schema is checked by :func:`check_last_column_id` when a *table* is loaded through a catalog
(:func:`icepark.catalog.base.read_metadata`), not by the bare decoder: iceberg-rust's own
example metadata (``last-column-id`` 3 with fields up to 8) is one of the vectors every
decoder must parse and round-trip, but a table like that would have its next column collide
with an existing field ID, and its next commit would write the wrong value again.

>>> from icepark.spec.serde import table_metadata_from_json
>>> table_metadata_from_json({"format-version": 1, "location": "s3://b/t",
...     "last-updated-ms": 0, "last-column-id": 1, "last-partition-id": 999,
...     "partition-spec": [{"name": "x", "transform": "identity", "source-id": 1}],
...     "schema": {"type": "struct", "fields": [
...         {"id": 1, "name": "x", "required": True, "type": "long"}]}})
Traceback (most recent call last):
...
icepark.errors.ValidationError: Table metadata: 'last-partition-id' is 999, but partition spec \
0 has field ID 1000: "last-partition-id" is "the highest assigned partition field ID across \
all partition specs for the table"
"""

from __future__ import annotations

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata
from icepark.spec.partitioning import check_partition_source


def check_metadata(md: TableMetadata, what: str = "Table metadata") -> None:
    """Raise :class:`ValidationError` naming the rule ``md`` breaks (module docstring);
    ``what`` names the metadata in the message (e.g. its file)."""
    _check_last_partition_id(md, what)
    _check_multi_argument_fields(md, what)
    _check_default_spec(md, what)
    _check_default_sort_order(md, what)
    _check_snapshots(md, what)


def check_last_column_id(md: TableMetadata, what: str = "Table metadata") -> None:
    """Raise :class:`ValidationError` when a field of any schema has an ID above
    ``last-column-id`` ("the highest assigned column ID for the table")."""
    for schema in md.schemas:
        highest = schema.highest_field_id
        if highest > md.last_column_id:
            raise ValidationError(
                f"{what}: 'last-column-id' is {md.last_column_id}, but schema "
                f"{schema.schema_id} has field ID {highest}: \"last-column-id\" is \"the "
                "highest assigned column ID for the table\"; the writer of this file broke "
                "the spec (register a corrected copy with register_table)")


def _check_last_partition_id(md: TableMetadata, what: str) -> None:
    for spec in md.partition_specs:
        if spec.fields and spec.last_assigned_field_id > md.last_partition_id:
            raise ValidationError(
                f"{what}: 'last-partition-id' is {md.last_partition_id}, but partition spec "
                f"{spec.spec_id} has field ID {spec.last_assigned_field_id}: "
                "\"last-partition-id\" is \"the highest assigned partition field ID across all "
                "partition specs for the table\"")


def _check_multi_argument_fields(md: TableMetadata, what: str) -> None:
    if md.format_version >= 3:
        return
    fields = [(f"partition spec {spec.spec_id} field {f.name!r}", f.sources)
              for spec in md.partition_specs for f in spec.fields]
    fields += [(f"sort order {order.order_id} field {f}", f.sources)
               for order in md.sort_orders for f in order.fields]
    for label, sources in fields:
        if len(sources) > 1:
            raise ValidationError(
                f"{what}: {label} has 'source-ids' {list(sources)}: multi-argument transforms "
                f"need format version 3, not {md.format_version}")


def _check_default_spec(md: TableMetadata, what: str) -> None:
    schema, spec = md.schema(), md.spec()
    for f in spec.fields:
        if f.transform.is_void:
            continue
        try:
            for source_id in f.sources:
                check_partition_source(schema, source_id, f.transform, f.name)
        except ValidationError as e:
            raise ValidationError(
                f"{what}: the default partition spec {spec.spec_id} does not fit the current "
                f"schema {schema.schema_id}: {e}") from None


def _check_default_sort_order(md: TableMetadata, what: str) -> None:
    schema, order = md.schema(), md.sort_order()
    try:
        order.check_compatible(schema)
    except ValidationError as e:
        raise ValidationError(
            f"{what}: the default sort order {order.order_id} does not fit the current schema "
            f"{schema.schema_id}: {e}") from None


def _check_snapshots(md: TableMetadata, what: str) -> None:
    for s in md.snapshots:
        if s.schema_id is not None and md.schema_by_id(s.schema_id) is None:
            ids = ", ".join(str(schema.schema_id) for schema in md.schemas)
            raise ValidationError(
                f"{what}: snapshot {s.snapshot_id} has 'schema-id' {s.schema_id}, which is not "
                f"among the table's schemas (IDs: {ids})")
        if md.next_row_id is not None and s.first_row_id is not None:
            end = s.first_row_id + (s.added_rows or 0)
            if end > md.next_row_id:
                raise ValidationError(
                    f"{what}: snapshot {s.snapshot_id} assigned row IDs up to {end - 1}, but "
                    f"'next-row-id' is {md.next_row_id}: it must be \"higher than all assigned "
                    "row IDs\"")
