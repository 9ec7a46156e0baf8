"""The layering of DESIGN.md, enforced: imports point downward only.

    errors < spec < expressions < io < table < catalog < spark < cli

``pyspark`` is imported only under ``spark/``; ``pyarrow`` only in ``io/``, ``table/`` (scan
execution) and ``spark/``; the peer engines (pyiceberg, duckdb) never under ``src/``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "icepark"
LAYERS = ["errors", "spec", "expressions", "io", "table", "catalog", "spark", "cli"]
THIRD_PARTY_HOMES = {
    "pyspark": {"spark"},
    "pyarrow": {"io", "table", "spark"},
    "pyiceberg": set(),
    "duckdb": set(),
}


def _layer(parts: tuple[str, ...]) -> str | None:
    """The layer of a module path below ``icepark`` (None for the package root)."""
    if not parts:
        return None
    head = parts[0].removesuffix(".py")
    return head if head in LAYERS else None


def _modules() -> Iterator[tuple[Path, str | None]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, _layer(path.relative_to(SRC).parts)


def _imports(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("icepark", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                yield f"{base}.{node.module}" if node.module else base
            elif node.module:
                yield node.module


def _violations() -> Iterator[str]:
    for path, layer in _modules():
        rank = LAYERS.index(layer) if layer else len(LAYERS)
        for name in _imports(path):
            top, _, rest = name.partition(".")
            where = path.relative_to(SRC)
            if top == "icepark":
                target = _layer(tuple(rest.split("."))) if rest else None
                if target is not None and LAYERS.index(target) > rank:
                    yield f"{where} ({layer}) imports {name} ({target}), a higher layer"
            elif top in THIRD_PARTY_HOMES and layer not in THIRD_PARTY_HOMES[top]:
                yield f"{where} imports {top}, allowed only in {sorted(THIRD_PARTY_HOMES[top])}"


def test_imports_point_downward_only() -> None:
    assert list(_violations()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("spec/x.py", "from icepark.catalog import sql\n", "a higher layer"),
        ("spec/x.py", "import pyspark.sql\n", "allowed only in"),
        ("io/x.py", "from icepark.spec.types import LONG\nimport pyarrow\n", None),
        ("spec/x.py", "from ..table import scan\n", "a higher layer"),
    ],
)
def test_the_checker_catches_upward_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str,
    expected: str | None,
) -> None:
    fake = tmp_path / "icepark"
    target = fake / module
    target.parent.mkdir(parents=True)
    target.write_text(source, encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.SRC", fake)
    found = list(_violations())
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0]
