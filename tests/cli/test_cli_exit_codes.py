"""Exit codes exactly as the README's table (and ``icepark --help``) says, every row tested by
running the command, a closed pipe is not an error, and what ``properties list`` and
``schema`` show."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog import BaseCatalog
from icepark.cli.main import EPILOG, main
from icepark.errors import CommitFailed, CommitStateUnknown
from icepark.spec.types import INT
from icepark.table.table import Table
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


# -- every row of the exit-code table, as README.md and `icepark --help` state it ----------------

README = Path(__file__).resolve().parents[2] / "README.md"
TABLE: dict[int, tuple[str, ...]] = {
    0: ("success",),
    1: ("I/O errors", "unsupported Iceberg features", "Spark errors"),
    2: ("bad arguments", "input files of an unknown format", "malformed filter",
        "data that does not fit the table"),
    3: ("catalog", "table", "namespace", "snapshot", "branch or tag", "property", "input file"),
    4: ("exists", "concurrent commit"),
    5: ("commit state unknown",),
    6: ("catalog unavailable",),
    7: ("corrupt file",),
}
"""Each exit code and the cases its row names (in both tables, word for word)."""


def _text(text: str) -> str:
    return " ".join(text.split())


def test_readme_and_help_state_the_same_table() -> None:
    readme = _text(README.read_text(encoding="utf-8").split("Exit codes: ", 1)[1]
                   .split("\n\n", 1)[0])
    epilog = _text(EPILOG)
    for code, cases in TABLE.items():
        row_readme = readme.split(f"{code} ", 1)[1].split(" · ", 1)[0]
        row_help = epilog.split(f" {code} ", 1)[1].split(f" {code + 1} ", 1)[0]
        for case in cases:
            assert case.lower() in row_readme.lower(), (code, case, row_readme)
            assert case.lower() in row_help.lower(), (code, case, row_help)


Case = Callable[[Run, Path, BaseCatalog], subprocess.CompletedProcess[str]]
CSV_OF_TEXT = "column_0,column_1\nnot a number,1\n"


def _ingest(run: Run, tmp_path: Path, name: str, content: bytes | str) -> \
        subprocess.CompletedProcess[str]:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return run("ingest", "db.t", str(path))


def _corrupt_a_data_file(run: Run, catalog: BaseCatalog) -> subprocess.CompletedProcess[str]:
    task = next(iter(catalog.load_table("db.t").scan().plan_files()))
    Path(task.data_file.file_path.removeprefix("file://")).write_bytes(b"PAR1 truncated")
    return run("query", "db.t")


CASES: dict[tuple[int, str], Case] = {
    (0, "success"): lambda run, _, __: run("tables", "db"),
    (1, "I/O errors"): lambda run, tmp, _: run("metadata", str(tmp)),  # a directory
    (1, "unsupported Iceberg features"): lambda run, tmp, _: (
        pq.write_table(pa.table({"t": pa.array([1], pa.timestamp("ns"))}), tmp / "ns.parquet"),
        run("create", "db.ns", "--from-file", str(tmp / "ns.parquet")))[1],
    (1, "Spark errors"): lambda run, tmp, _: _ingest(run, tmp, "bad.parquet", b"not parquet"),
    (2, "bad arguments"): lambda run, _, __: run("tables", "db", "--bogus"),
    (2, "input files of an unknown format"): lambda run, tmp, _: _ingest(
        run, tmp, "notes.txt", "hello\n"),
    (2, "malformed filter"): lambda run, _, __: run("delete", "db.t", "--where", "column_0 >"),
    (2, "data that does not fit the table"): lambda run, tmp, _: _ingest(
        run, tmp, "text.csv", CSV_OF_TEXT),
    (3, "catalog"): lambda run, _, __: run("--catalog", "elsewhere", "--uri",
                                          "sqlite:///nowhere/catalog.db", "tables"),
    (3, "table"): lambda run, _, __: run("describe", "db.nope"),
    (3, "namespace"): lambda run, _, __: run("tables", "nowhere"),
    (3, "snapshot"): lambda run, _, __: run("files", "db.t", "--snapshot", "12345"),
    (3, "branch or tag"): lambda run, _, __: run("query", "db.t", "--ref", "nope"),
    (3, "property"): lambda run, _, __: run("properties", "get", "db.t", "nope"),
    (3, "input file"): lambda run, tmp, _: run("ingest", "db.t", str(tmp / "missing.csv")),
    (4, "exists"): lambda run, _, __: run("namespaces", "create", "db"),
    (6, "catalog unavailable"): lambda run, _, __: run(
        "--catalog", "down", "--uri", "postgresql+psycopg://postgres@127.0.0.1:1/postgres",
        "tables", "db"),
    (7, "corrupt file"): lambda run, _, catalog: _corrupt_a_data_file(run, catalog),
}
IN_PROCESS: dict[tuple[int, str], type[Exception]] = {
    (4, "concurrent commit"): CommitFailed,
    (5, "commit state unknown"): CommitStateUnknown,
}
"""Cases no single command can cause on its own: the commit of ``properties set`` fails."""
SPARK_CASES = {(1, "Spark errors"), (2, "data that does not fit the table")}


def test_every_row_has_a_case() -> None:
    rows = {(code, case) for code, cases in TABLE.items() for case in cases}
    assert rows == set(CASES) | set(IN_PROCESS)


@pytest.mark.parametrize("row", [pytest.param(row, marks=pytest.mark.spark, id=" ".join(map(
    str, row))) if row in SPARK_CASES else pytest.param(row, id=" ".join(map(str, row)))
    for row in CASES])
def test_each_row_exits_with_its_code(row: tuple[int, str], icepark_cli: Run, tmp_path: Path,
                                      default_catalog: BaseCatalog) -> None:
    _table(default_catalog)
    result = CASES[row](icepark_cli, tmp_path, default_catalog)
    assert result.returncode == row[0], result.stderr
    if row[0]:  # the last line says what went wrong (after progress lines or the usage)
        assert result.stderr.strip().splitlines()[-1].startswith("icepark: error: "), \
            result.stderr


@pytest.mark.parametrize("row", list(IN_PROCESS), ids=lambda row: " ".join(map(str, row)))
def test_commit_outcomes_exit_with_their_code(row: tuple[int, str], tmp_path: Path,
                                              default_catalog: BaseCatalog,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _table(default_catalog)
    for variable in [v for v in os.environ if v.upper().startswith("ICEPARK_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    def fail(*_: object, **__: object) -> None:
        raise IN_PROCESS[row]("injected")

    monkeypatch.setattr(Table, "commit", fail)
    assert main(["properties", "set", "db.t", "owner=ana"]) == row[0]
    assert capsys.readouterr().err == "icepark: error: injected\n"
