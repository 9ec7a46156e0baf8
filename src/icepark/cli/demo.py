"""``icepark demo``: the spec core end to end, on local files, until the quickstart exists.

Creates an events table's metadata (nested struct/list/map columns, a ``day(ts)`` and
``bucket[16](user_id)`` spec, a sort order), evolves its schema and partitioning, writes each
version as ``<V>-<uuid>.metadata.json`` the way metastore tables name them, reads every file back
to check it parses to the same table, and shows sample rows' partition values and paths.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from icepark.spec import values
from icepark.spec.metadata import TableMetadata
from icepark.spec.partition_evolution import SpecUpdate
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.schema_evolution import SchemaUpdate
from icepark.spec.serde import table_metadata_from_json, table_metadata_to_json
from icepark.spec.sorting import SortOrderBuilder
from icepark.spec.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from icepark.table import updates as u
from icepark.table.metadata_builder import MetadataBuilder

EVENTS = Schema.of(
    NestedField.required(1, "event_id", LONG),
    NestedField.required(2, "user_id", LONG),
    NestedField.required(3, "ts", TIMESTAMPTZ),
    NestedField.optional(4, "kind", STRING),
    NestedField.optional(5, "device", StructType((
        NestedField.optional(6, "os", STRING),
        NestedField.optional(7, "version", STRING),
    ))),
    NestedField.optional(8, "tags", ListType(9, STRING, element_required=False)),
    NestedField.optional(10, "metrics", MapType(11, STRING, 12, DOUBLE, value_required=False)),
    identifier_field_ids=[1],
)

SAMPLE_ROWS = [
    (1, 42, datetime(2024, 3, 1, 9, 30, tzinfo=UTC), "click", "US"),
    (2, 7, datetime(1969, 12, 31, 23, 59, tzinfo=UTC), "view", "Deutschland"),
    (3, 42, datetime(2024, 3, 2, 0, 0, tzinfo=UTC), "buy", None),
]


def run(warehouse: Path, say: Callable[[str], None]) -> TableMetadata:
    """Run the demo under ``warehouse``; ``say`` prints one line of the report."""
    metadata_dir = warehouse / "demo" / "events" / "metadata"
    metadata_dir.mkdir(parents=True, exist_ok=True)
    location = (warehouse / "demo" / "events").resolve().as_uri()
    written: list[tuple[Path, TableMetadata]] = []

    def publish(md: TableMetadata, step: str) -> TableMetadata:
        path = metadata_dir / f"{len(written):05d}-{uuid.uuid4()}.metadata.json"
        path.write_text(table_metadata_to_json(md), encoding="utf-8")
        written.append((path, md))
        say(f"{step}: wrote {path.relative_to(warehouse)}")
        return md

    def previous() -> str:
        return written[-1][0].resolve().as_uri()

    spec = PartitionSpecBuilder(EVENTS).day("ts").bucket("user_id", 16).build()
    order = SortOrderBuilder(EVENTS).asc("ts").build()
    md, _ = MetadataBuilder.new_table(EVENTS, location, spec=spec, sort_order=order,
                                      properties={"owner": "icepark-demo"})
    md = publish(md, "create table (format v2)")
    say(_indent(str(md.schema())))
    say(f"  partition spec {md.spec()}; sort order {md.sort_order()}")

    new_schema, last_column_id = (
        SchemaUpdate(md.schema(), md.last_column_id)
        .rename_column("device.os", "os_name")
        .add_column("country", STRING, doc="ISO country, added later")
        .apply())
    md = publish(MetadataBuilder(md).apply_all([
        u.AddSchema(new_schema, last_column_id), u.SetCurrentSchema(u.LAST_ADDED),
    ]).build(previous()), "evolve schema: rename device.os -> device.os_name, add country")
    say(f"  device.os_name keeps field ID {md.schema().find_field('device.os_name').field_id}; "
        f"country gets ID {md.schema().find_field('country').field_id}")

    new_spec, last_partition_id = (
        SpecUpdate(md.partition_specs, md.default_spec_id, md.schema(), md.last_partition_id)
        .add_field("country", "truncate[4]").apply())
    md = publish(MetadataBuilder(md).apply_all([
        u.AddPartitionSpec(new_spec), u.SetDefaultSpec(u.LAST_ADDED),
    ]).build(previous()), "evolve partition spec: add truncate[4](country)")
    say(f"  spec {md.default_spec_id}: {md.spec()} (last partition ID {last_partition_id})")

    for path, expected in written:
        reread = table_metadata_from_json(path.read_text(encoding="utf-8"))
        if reread != expected:
            raise AssertionError(f"{path} did not read back as the table that was written")
    say(f"read back {len(written)} metadata files: each parses to the table that was written")

    schema = md.schema()
    partition_type = md.spec().partition_type(schema)
    say("partition values of sample rows under the current spec:")
    for event_id, user_id, ts, kind, country in SAMPLE_ROWS:
        row = {"ts": values.from_python(TIMESTAMPTZ, ts), "user_id": user_id,
               "country": country}
        partition = tuple(
            pf.transform.apply(schema.find_type(pf.source_id),
                               row[schema.find_column_name(pf.source_id) or ""])
            for pf in md.spec().fields)
        say(f"  event {event_id} ({kind}, {ts.isoformat()}): "
            f"{md.spec().partition_path(partition, schema)}")
    say(f"  partition tuple type: {partition_type}")
    say(f"the warehouse is left at {warehouse.resolve()}")
    return md


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
