"""Exit codes exactly as the README's table says, a closed pipe is not an error, and what
``properties list`` and ``schema`` show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from icepark.catalog import BaseCatalog
from icepark.spec.types import INT
from tests.cli.cli_helpers import json_out, one_error_line
from tests.cli.conftest import Run, cli_env


def _table(catalog: BaseCatalog, columns: int = 2) -> None:
    catalog.create_namespace("db")
    schema = pa.schema([pa.field(f"column_{i}", pa.int64()) for i in range(columns)])
    table = catalog.create_table("db.t", schema)
    table.append(pa.table({f"column_{i}": [1, 2] for i in range(columns)}))


def test_a_missing_snapshot_is_not_found(icepark_cli: Run,
                                         default_catalog: BaseCatalog) -> None:
    _table(default_catalog)
    missing = icepark_cli("files", "db.t", "--snapshot", "12345")
    assert missing.returncode == 3
    assert one_error_line(missing).startswith(
        "Cannot inspect snapshot 12345: it is not a snapshot of the table (snapshots: ")


def test_closing_the_pipe_early_ends_quietly(tmp_path: Path,
                                             default_catalog: BaseCatalog) -> None:
    _table(default_catalog, columns=3000)  # a schema of more than a pipe's buffer of text
    reader = subprocess.Popen(  # as `icepark schema db.t | head -c 10`
        [sys.executable, "-m", "icepark", "schema", "db.t"], cwd=tmp_path,
        env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.read(10)
    reader.stdout.close()
    assert reader.wait(timeout=120) == 0
    assert reader.stderr.read() == b""


def test_read_only_commands_never_create_a_catalog(icepark_cli: Run, tmp_path: Path) -> None:
    for command in (["tables"], ["namespaces"], ["describe", "db.t"],
                    ["properties", "get", "db.t"], ["drop", "db.t"]):
        result = icepark_cli(*command)
        assert result.returncode == 3, result.stderr
        assert one_error_line(result) == (
            f"No catalog 'default' here: {tmp_path}/warehouse/catalog.db does not exist "
            "(create a table first, or name the catalog's uri or warehouse)")
    assert not (tmp_path / "warehouse").exists()
    assert icepark_cli("namespaces", "create", "db").returncode == 0
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
    listed = icepark_cli("tables")
    assert listed.returncode == 0, listed.stderr


def test_properties_list_and_schema_defaults(icepark_cli: Run,
                                             default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    table = default_catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]),
                                         format_version=3)  # defaults are v3
    with table.update_schema() as update:
        update.add_column("n", INT, "a number", False, 5)
    table.refresh().set_properties({"owner": "ana"})
    listed = icepark_cli("properties", "list", "db.t")
    assert listed.returncode == 0, listed.stderr
    assert [line.split() for line in listed.stdout.splitlines()] == [
        ["key", "value"], ["-----", "-----"], ["owner", "ana"]]
    assert json_out(icepark_cli("properties", "list", "db.t", "--json")) == [
        {"key": "owner", "value": "ana"}]
    shown = icepark_cli("schema", "db.t").stdout
    assert "  2: n: optional int (a number)" in shown
    assert shown.rstrip().endswith("defaults:\n  2: n: initial default 5, write default 5")
