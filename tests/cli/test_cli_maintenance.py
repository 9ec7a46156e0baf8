"""The maintenance commands: each runs its Spark job on the table the catalog names, prints a
line (or one JSON document with ``--json``), and refuses bad options before Spark starts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import BaseCatalog
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.table import Table
from tests.cli.cli_helpers import json_out
from tests.cli.conftest import Run

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.optional(1, "id", LONG), NestedField.optional(2, "kind", STRING))


def _events(catalog: BaseCatalog, appends: int = 4, version: int = 2) -> Table:
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("kind").build()
    table = catalog.create_table("db.events", SCHEMA, partition_spec=spec,
                                 format_version=version,  # type: ignore[arg-type]
                                 properties={"write.delete.mode": "merge-on-read"})
    for i in range(appends):
        ids = list(range(i * 10, (i + 1) * 10))
        table.append(pa.table({"id": pa.array(ids, pa.int64()),
                               "kind": ["a" if j % 2 else "b" for j in ids]}))
    return table


def _ids(table: Table) -> list[int]:
    return sorted(table.refresh().scan().to_arrow().column("id").to_pylist())


def test_rewrite_data_files_and_manifests(icepark_cli: Run,
                                          default_catalog: BaseCatalog) -> None:
    table = _events(default_catalog)
    ids = _ids(table)
    result = icepark_cli("rewrite-data-files", "db.events", "--strategy", "sort",
                         "--sort-order", "id DESC", "--option", "min-input-files=2", "--json")
    assert result.returncode == 0, result.stderr
    doc = json_out(result)
    assert (doc["rewritten_data_files"], doc["added_data_files"], doc["groups"]) == (8, 2, 2)
    assert _ids(table) == ids
    assert table.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]

    text = icepark_cli("rewrite-data-files", "db.events", "--option", "min-input-files=2")
    assert text.returncode == 0, text.stderr
    assert "nothing to rewrite; no new snapshot" in text.stdout

    manifests = icepark_cli("rewrite-manifests", "db.events", "--json")
    assert manifests.returncode == 0, manifests.stderr
    assert json_out(manifests)["snapshot_id"] == table.refresh().current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert _ids(table) == ids


def test_rewrite_deletes_orphans_and_stats(icepark_cli: Run, tmp_path: Path,
                                           default_catalog: BaseCatalog) -> None:
    table = _events(default_catalog, appends=2, version=3)
    deleted = icepark_cli("delete", "db.events", "--where", "id < 3")
    assert deleted.returncode == 0, deleted.stderr
    deletes = icepark_cli("rewrite-deletes", "db.events", "--json")
    assert deletes.returncode == 0, deletes.stderr
    assert set(json_out(deletes)) >= {"rewritten_delete_files_count", "snapshot_ids"}
    assert _ids(table) == list(range(3, 20))

    orphan = Path(table.location) / "data" / "left-by-a-crash.parquet"
    orphan.write_bytes(b"not referenced")
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    now = str(int(time.time() * 1000))
    refused = icepark_cli("remove-orphan-files", "db.events", "--older-than", now)
    assert refused.returncode == 2 and "--force" in refused.stderr and orphan.exists()
    found = icepark_cli("remove-orphan-files", "db.events", "--dry-run", "--force",
                        "--older-than", now, "--json")
    assert found.returncode == 0, found.stderr
    doc = json_out(found)
    assert [Path(p).name for p in doc["orphan_file_locations"]] == [orphan.name]
    assert doc["deleted_files"] == 0 and orphan.exists()
    removed = icepark_cli("remove-orphan-files", "db.events", "--force",
                          "--older-than", str(int(time.time() * 1000)))
    assert removed.returncode == 0, removed.stderr
    assert "found 1 orphan file" in removed.stdout and not orphan.exists()
    assert _ids(table) == list(range(3, 20))

    stats = icepark_cli("compute-stats", "db.events", "--columns", "id,kind",
                        "--partition-stats", "--json")
    assert stats.returncode == 0, stats.stderr
    doc = json_out(stats)
    assert doc["ndv"] == {"id": 17, "kind": 2}
    assert doc["partition_statistics"]["partitions"] == 2
    table.refresh()
    assert [s.statistics_path for s in table.metadata.statistics] == [doc["statistics_path"]]


def test_bad_options_exit_2_before_spark(icepark_cli: Run,
                                         default_catalog: BaseCatalog) -> None:
    _events(default_catalog, appends=1)
    cases = [("rewrite-data-files", "db.events", "--option", "nope=1"),
             ("rewrite-data-files", "db.events", "--option", "min-input-files"),
             ("rewrite-deletes", "db.events", "--option", "rewrite-all=maybe"),
             ("remove-orphan-files", "db.events", "--older-than", "yesterday"),
             ("compute-stats", "db.events", "--columns", ",")]
    for args in cases:
        result = icepark_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "starting Spark" not in result.stderr, args
        assert result.stderr.strip().splitlines()[-1].startswith("icepark: error: ")
    missing = icepark_cli("rewrite-manifests", "db.nope")
    assert missing.returncode == 3
