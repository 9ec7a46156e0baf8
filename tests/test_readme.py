"""The README's Python snippets run as written, in order, in a fresh folder (its default
catalog is ``./warehouse``), and use only the public names."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import cli_env

README = Path(__file__).resolve().parents[1] / "README.md"
PUBLIC = ("icepark", "icepark.spark", "icepark.errors", "icepark.spec.types",
          "icepark.spec.schema", "icepark.spec.partitioning", "icepark.spec.sorting")

pytestmark = pytest.mark.spark


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_its_snippets() -> None:
    assert len(_snippets()) >= 2


def test_snippets_import_only_public_names() -> None:
    for snippet in _snippets():
        for node in ast.walk(ast.parse(snippet)):
            if isinstance(node, ast.ImportFrom):
                assert node.module in PUBLIC, node.module
            elif isinstance(node, ast.Import):
                assert all(alias.name in PUBLIC for alias in node.names)


CHECKS = """
# what the tour did, checked: the spam deleted before the last append, the evolved schema
events = spark.read.format("icepark").load("db.events")
assert events.filter("event_kind = 'spam'").count() == 100, "spam rows left"
assert [f.name for f in table.schema().fields] == ["id", "event_kind", "ts", "country"]
assert catalog.table_exists("db.copy")
# the update, the merge and the upsert
assert events.filter("id < 5 AND event_kind = 'CLICK'").count() > 0
assert events.filter("id >= 995 AND event_kind = 'seen'").count() == 10
# the v3 table: a deletion vector for the spam, a row ID on every row
v3 = catalog.load_table("db.v3")
assert v3.metadata.next_row_id == 1000, v3.metadata.next_row_id
lineage = ips.read(spark, v3, metadata_columns=["_row_id"])
assert lineage.count() == 900 and lineage.filter("_row_id IS NULL").count() == 0
assert int(v3.current_snapshot().summary.properties["added-dvs"]) >= 1
# the maintenance jobs changed no row; the NDV sketch is within its error of the exact count
distinct = ips.read(spark, "db.events").where("id IS NOT NULL").select("id").distinct().count()
assert abs(stats.ndv["id"] - distinct) <= 0.05 * distinct, (stats.ndv, distinct)
print("README OK", events.count())
"""


def test_snippets_run_in_order_in_a_fresh_folder(tmp_path: Path) -> None:
    """As a user runs them: one script, in an empty folder (the default catalog is
    ``./warehouse`` there), with its own Spark driver."""
    script = tmp_path / "tour.py"
    script.write_text("\n".join([*_snippets(), CHECKS]), encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=cli_env(tmp_path),
                            capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "README OK" in result.stdout
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
