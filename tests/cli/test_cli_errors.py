"""Errors in the CLI user's words: remedies name the CLI's flags and commands, not the Python
API's options; type errors name the column, both types in Spark's words, and the value and
file at fault where known."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from icepark.catalog import BaseCatalog
from icepark.cli.main import CLI_SPELLINGS
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, NestedField, PrimitiveType
from tests.cli.cli_helpers import one_error_line
from tests.cli.conftest import Run

SRC = Path(__file__).resolve().parents[2] / "src" / "icepark"


def _error(result: subprocess.CompletedProcess[str]) -> str:
    """The ``icepark: error: ...`` line a command ends with (after any progress lines)."""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("icepark: error: "), result.stderr
    return last.removeprefix("icepark: error: ")


def _remedy_options() -> set[str]:
    """The API option of every ``Remedy(text, option)`` in the source."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Remedy":
                option = node.args[1] if len(node.args) == 2 else None
                assert isinstance(option, ast.Constant) and isinstance(option.value, str), \
                    f"{path}:{node.lineno}: a remedy's option is a literal"
                found.add(option.value)
    return found


API_ONLY = {"update_schema().union_by_name()", "replace=True"}
"""Remedies of errors the CLI never raises (the ``icepark`` data source's, and
``ips.register_views``'s for a view that exists)."""


def test_every_remedy_has_a_cli_spelling() -> None:
    options = _remedy_options()
    assert {"merge_schema=True", "upgrade_format_version()"} <= options
    assert options - API_ONLY <= set(CLI_SPELLINGS)


def test_format_version_is_set_as_spark_sets_it(icepark_cli: Run,
                                                default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    removed = icepark_cli("properties", "remove", "db.t", "format-version")
    assert removed.returncode == 2
    assert one_error_line(removed) == (
        "Table property 'format-version' is reserved: it is a table metadata field; use "
        "'icepark properties set TABLE format-version=N' to change it")
    upgraded = icepark_cli("properties", "set", "db.t", "format-version=3", "owner=ana")
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.strip() == "set 1 property on db.t; format version 3"
    table = default_catalog.load_table("db.t")
    assert table.metadata.format_version == 3 and table.properties["owner"] == "ana"
    down = icepark_cli("properties", "set", "db.t", "format-version=2")
    assert down.returncode == 2
    assert one_error_line(down) == "Cannot downgrade the table from format version 3 to 2"
    bad = icepark_cli("properties", "set", "db.t", "format-version=three")
    assert bad.returncode == 2
    assert one_error_line(bad) == "format-version must be 1, 2 or 3, not 'three'"


@pytest.fixture
def typed_table(default_catalog: BaseCatalog) -> BaseCatalog:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.t", Schema.of(
        NestedField.optional(1, "id", INT), NestedField.optional(2, "n", LONG),
        NestedField.optional(3, "amount", PrimitiveType.decimal(10, 2))))
    return default_catalog


@pytest.mark.spark
def test_ingest_errors_name_flags_types_values_and_files(icepark_cli: Run, tmp_path: Path,
                                                         typed_table: BaseCatalog) -> None:
    extra = tmp_path / "extra.csv"
    extra.write_text("id,n,amount,note\n1,2,3.50,x\n")
    result = icepark_cli("ingest", "db.t", str(extra))
    assert result.returncode == 2
    assert _error(result) == ("Column(s) 'note' are not in the table schema; add them with "
                              "--merge-schema or drop them")

    flags = tmp_path / "flags.csv"
    flags.write_text("id,n\n1,true\n")
    result = icepark_cli("ingest", "db.t", str(flags))
    assert result.returncode == 2
    assert _error(result) == ("Column 'n' is boolean in the data, which cannot be written to "
                              "the table's bigint column")

    amounts = tmp_path / "amounts.csv"
    amounts.write_text("id,amount\n1,12.50\n2,1x3\n")
    result = icepark_cli("ingest", "db.t", str(amounts))
    assert result.returncode == 2
    assert _error(result) == (f"Column 'amount': the value '1x3' is not a decimal(10,2) "
                              f"(in file://{amounts})")
    assert typed_table.load_table("db.t").current_snapshot() is None
