"""`icepark metadata FILE`, run as a user would: any table metadata file, described."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from icepark.catalog import load_catalog
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField


def icepark(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icepark.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_metadata_file_is_described_as_text_and_json(tmp_path: Path) -> None:
    catalog = load_catalog("m", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    catalog.create_namespace("db")
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.optional(2, "country", STRING))
    table = catalog.create_table("db.t", schema, partition_spec=PartitionSpecBuilder(
        schema).truncate("country", 4).build())
    with table.update_schema() as update:
        update.add_column("note", STRING)
    path = table.refresh().metadata_location

    described = icepark("metadata", path)
    assert described.returncode == 0, described.stderr
    assert "country_trunc" in described.stdout and "format version 2" in described.stdout
    assert "3: note: optional string" in described.stdout
    as_json = json.loads(icepark("metadata", path, "--json").stdout)
    assert as_json["format-version"] == 2 and len(as_json["schemas"]) == 2


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.metadata.json"
    bad.write_text('{"format-version": 9}', encoding="utf-8")
    result = icepark("metadata", str(bad))
    assert result.returncode == 2  # invalid input
    assert result.stderr.strip().splitlines() == [
        f"icepark: error: Table metadata file {bad}: Unsupported format version 9: icepark "
        "supports format versions 1 to 3"]
    bad.write_text('{"format-version": ', encoding="utf-8")
    result = icepark("metadata", str(bad))
    assert result.returncode == 7  # corrupt file
    assert result.stderr.strip().startswith(f"icepark: error: Table metadata file {bad} is not")
    missing = icepark("metadata", str(tmp_path / "nope.json"))
    assert missing.returncode == 3 and "No such file" in missing.stderr  # not found
    assert icepark("frobnicate").returncode == 2
