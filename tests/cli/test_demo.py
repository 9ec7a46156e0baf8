"""`icepark demo` and `icepark metadata`, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyiceberg.table import StaticTable


def icepark(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icepark.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_demo_writes_metadata_that_pyiceberg_reads(tmp_path: Path) -> None:
    result = icepark("demo", "--warehouse", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "each parses to the table that was written" in result.stdout
    files = sorted((tmp_path / "demo" / "events" / "metadata").glob("*.metadata.json"))
    assert len(files) == 3
    table = StaticTable.from_metadata(str(files[-1]))
    schema = table.schema()
    assert schema.find_field("device.os_name").field_id == 8
    assert schema.find_field("country").field_id == 13
    assert [f.name for f in table.spec().fields] == ["ts_day", "user_id_bucket_16",
                                                      "country_trunc_4"]
    assert len(table.metadata.metadata_log) == 2

    described = icepark("metadata", str(files[-1]))
    assert described.returncode == 0, described.stderr
    assert "country_trunc_4" in described.stdout and "format version 2" in described.stdout
    as_json = json.loads(icepark("metadata", str(files[-1]), "--json").stdout)
    assert as_json["format-version"] == 2 and len(as_json["partition-specs"]) == 2


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.metadata.json"
    bad.write_text('{"format-version": 9}', encoding="utf-8")
    result = icepark("metadata", str(bad))
    assert result.returncode == 2  # invalid input
    assert result.stderr.strip().splitlines() == [
        "icepark: error: Unsupported format version 9: icepark supports format versions 1 to 3"]
    missing = icepark("metadata", str(tmp_path / "nope.json"))
    assert missing.returncode == 3 and "No such file" in missing.stderr  # not found
    assert icepark("frobnicate").returncode == 2
