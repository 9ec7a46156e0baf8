"""icepark loads tables pyiceberg wrote, after appends, a schema change and a partition-spec
change, with the same snapshots, schemas, specs and data files, and reads the same rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
from pyiceberg.types import StringType

from icepark.catalog import load_catalog
from icepark.io.manifest.list_cache import snapshot_manifests
from icepark.io.manifest.manifest import read_manifest
from icepark.spec.serde import partition_spec_from_json, schema_from_json
from icepark.table.table import Table


def _peer_table(tmp_path: Path) -> Any:
    peer = PySqlCatalog("shared", uri=f"sqlite:///{tmp_path}/catalog.db",
                        warehouse=f"file://{tmp_path}/warehouse")
    peer.create_namespace("shop")
    first = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                      "region": pa.array(["eu", "us", None], pa.string())})
    table = peer.create_table("shop.orders", schema=first.schema)
    with table.update_spec() as spec:
        spec.add_identity("region")
    table.append(first)
    with table.update_schema() as schema:
        schema.add_column("note", StringType())
    second = pa.table({"id": pa.array([4, 5], pa.int64()),
                       "region": pa.array(["eu", "ap"], pa.string()),
                       "note": pa.array(["x", None], pa.string())})
    table.append(second)
    with table.update_spec() as spec:
        spec.remove_field("region")
    table.append(second.slice(0, 1))
    return peer.load_table("shop.orders")


def _json(model: Any) -> Any:
    return json.loads(model.model_dump_json(by_alias=True))


def _live_paths(table: Table, snapshot_id: int) -> set[str]:
    snapshot = table.snapshot(snapshot_id)
    return {entry.data_file.file_path
            for manifest in snapshot_manifests(table.io, snapshot)
            for entry in read_manifest(table.io, manifest, specs_by_id=table.specs(),
                                       discard_deleted=True)}


def test_same_snapshots_schemas_specs_and_files(tmp_path: Path) -> None:
    theirs = _peer_table(tmp_path)
    catalog = load_catalog("shared", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=str(tmp_path / "warehouse"))
    ours = catalog.load_table("shop.orders")

    assert ours.metadata_location == theirs.metadata_location
    assert {s.schema_id: s for s in ours.metadata.schemas} == {
        s.schema_id: schema_from_json(_json(s)) for s in theirs.metadata.schemas}
    assert ours.specs() == {s.spec_id: partition_spec_from_json(_json(s))
                            for s in theirs.metadata.partition_specs}
    assert [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.manifest_list)
            for s in ours.snapshots()] == [
        (s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.manifest_list)
        for s in theirs.snapshots()]
    for snapshot in theirs.snapshots():
        expected = {task.file.file_path
                    for task in theirs.scan(snapshot_id=snapshot.snapshot_id).plan_files()}
        assert _live_paths(ours, snapshot.snapshot_id) == expected
