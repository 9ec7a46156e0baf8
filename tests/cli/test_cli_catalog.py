"""The catalog comes from flags, the environment or a config file (SQLite by default); namespace
and table listings; the global options; exit codes and one-line errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.cli.cli_helpers import json_out, one_error_line
from tests.cli.conftest import Run


def test_default_catalog_is_sqlite_in_warehouse(icepark_cli: Run, tmp_path: Path) -> None:
    assert icepark_cli("namespaces").returncode == 3  # no catalog yet: listing creates none
    assert not (tmp_path / "warehouse").exists()
    created = icepark_cli("namespaces", "create", "db", "--set", "owner=ana")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "created namespace db"
    assert icepark_cli("namespaces", "create", "db.inner").returncode == 0
    assert json_out(icepark_cli("namespaces", "--json")) == [
        {"namespace": "db"}, {"namespace": "db.inner"}]
    assert json_out(icepark_cli("--json", "namespaces", "--parent", "db")) == [
        {"namespace": "db.inner"}]
    with sqlite3.connect(tmp_path / "warehouse" / "catalog.db") as db:
        stored = db.execute("SELECT property_value FROM iceberg_namespace_properties "
                            "WHERE namespace = 'db' AND property_key = 'owner'").fetchall()
    assert stored == [("ana",)]
    assert icepark_cli("namespaces", "drop", "db.inner").returncode == 0
    assert json_out(icepark_cli("namespaces", "--json")) == [{"namespace": "db"}]


def test_flags_environment_and_config_file(icepark_cli: Run, tmp_path: Path) -> None:
    flagged = tmp_path / "flagged"
    result = icepark_cli("--warehouse", str(flagged), "namespaces", "create", "a")
    assert result.returncode == 0, result.stderr
    assert (flagged / "catalog.db").is_file()
    # options may follow the command too
    assert json_out(icepark_cli("namespaces", "--warehouse", str(flagged), "--json")) == [
        {"namespace": "a"}]

    env_home = tmp_path / "from-env"
    env = {"ICEPARK_CATALOG__PROD__WAREHOUSE": str(env_home)}
    assert icepark_cli("--catalog", "prod", "namespaces", "create", "b", env=env).returncode == 0
    assert (env_home / "catalog.db").is_file()
    assert json_out(icepark_cli("namespaces", "--json", env={**env, "ICEPARK_CATALOG": "prod"})
                    ) == [{"namespace": "b"}]

    config = tmp_path / "icepark.toml"
    config.write_text(f'[catalog.files]\ntype = "filesystem"\nwarehouse = "{tmp_path / "fs"}"\n',
                      encoding="utf-8")
    env = {"ICEPARK_CONFIG": str(config)}
    assert icepark_cli("--catalog", "files", "namespaces", "create", "c",
                       env=env).returncode == 0
    assert (tmp_path / "fs" / "c").is_dir()
    assert not (tmp_path / "fs" / "catalog.db").exists()
    assert json_out(icepark_cli("--catalog", "files", "--json", "namespaces", env=env)) == [
        {"namespace": "c"}]


def test_tables_listing(icepark_cli: Run) -> None:
    schema = '{"type": "struct", "fields": [{"id": 1, "name": "id", "required": true, ' \
             '"type": "long"}]}'
    for name in ("a.t1", "a.t2", "b.t3"):
        assert icepark_cli("create", name, "--schema", schema).returncode == 0
    assert json_out(icepark_cli("tables", "a", "--json")) == [{"table": "a.t1"},
                                                             {"table": "a.t2"}]
    listed = icepark_cli("tables")
    assert listed.stdout.split() == ["table", "-----", "a.t1", "a.t2", "b.t3"]


def test_errors_are_one_line_with_exit_codes(icepark_cli: Run) -> None:
    assert icepark_cli("namespaces", "create", "db").returncode == 0
    missing = icepark_cli("tables", "nowhere")
    assert missing.returncode == 3
    assert one_error_line(missing) == "Namespace does not exist: nowhere"
    again = icepark_cli("namespaces", "create", "db")
    assert again.returncode == 4 and "already exists" in one_error_line(again).lower()
    bad_property = icepark_cli("--property", "novalue", "namespaces")
    assert bad_property.returncode == 2
    assert one_error_line(bad_property) == "Invalid --property 'novalue': write key=value"
    bad_name = icepark_cli("namespaces", "create", "a/b")
    assert bad_name.returncode == 2 and "must not contain '/'" in one_error_line(bad_name)
    bad_type = icepark_cli("--catalog", "x", "namespaces",
                           env={"ICEPARK_CATALOG__X__TYPE": "hive"})
    assert bad_type.returncode == 2
    assert one_error_line(bad_type) == "Unknown catalog type 'hive': use 'sql' or 'filesystem'"
    usage = icepark_cli("frobnicate")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    assert icepark_cli("tables", "db", "--bogus").returncode == 2


def test_verbose_shows_the_traceback(icepark_cli: Run) -> None:
    assert icepark_cli("namespaces", "create", "db").returncode == 0
    result = icepark_cli("--verbose", "describe", "db.nope")
    assert result.returncode == 3
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "icepark: error: Table does not exist: db.nope")


def test_help_documents_exit_codes(icepark_cli: Run) -> None:
    result = icepark_cli("--help")
    assert result.returncode == 0
    for line in ("0  success", "2  usage error or invalid input", "3  not found",
                 "4  conflict"):
        assert line in result.stdout
    for command in ("ingest", "query", "delete", "expire-snapshots", "quickstart"):
        assert command in result.stdout
    quickstart = icepark_cli("quickstart", "--help")  # its options come from its own module
    assert quickstart.returncode == 0 and "usage: icepark quickstart" in quickstart.stdout
