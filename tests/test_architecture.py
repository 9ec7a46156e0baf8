"""The layering of DESIGN.md, enforced: imports point downward only, and no module cycles.

    errors < spec < expressions < io < table < catalog < spark < cli

Inside a layer, its subpackages are ranked too (:data:`COMPONENTS`): a module may import from
its own component and from the components before it, never from one after it. The layer's
``__init__.py`` is its front door and may import from every component of the layer (so may
the command's parser, ``cli/main.py``).

``pyspark`` is imported only under ``spark/``; ``pyarrow`` only in ``io/``, ``table/`` (scan
execution) and ``spark/``; the peer engines (pyiceberg, duckdb) never under ``src/``.
Every import counts, including those inside functions and under ``TYPE_CHECKING``: no two
modules may reach each other through imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "icepark"
LAYERS = ["errors", "spec", "expressions", "io", "table", "catalog", "spark", "cli"]
# The components of each layer, lowest first; "" is the layer's own modules (not __init__).
COMPONENTS: Mapping[str, list[str]] = {
    "spec": ["", "serde", "evolution"],
    "io": ["", "avro", "manifest", "puffin", "arrow", "parquet"],
    "table": ["change", "scan", "snapshot", "maintenance", "streams", "", "imports", "inspect"],
    "spark": ["", "writer", "reader", "rowlevel", "maintenance", "datasource", "streams"],
    "cli": ["", "quickstart"],
}
# Modules that assemble a whole layer, like its ``__init__``: the command's parser.
FRONT_DOORS = {("cli", "main")}
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


def _component(parts: tuple[str, ...]) -> str | None:
    """The component of a module inside its layer: a subpackage name, "" for the layer's own
    modules, None for the layer's front door (its ``__init__``) or a layer without ranks."""
    layer = _layer(parts)
    if layer not in COMPONENTS or len(parts) < 2 or parts[1] == "__init__" or parts in FRONT_DOORS:
        return None
    return parts[1] if len(parts) > 2 else ""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("icepark", *parts))


def _modules() -> Iterator[tuple[Path, str | None]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, _layer(path.relative_to(SRC).with_suffix("").parts)


def _imports(path: Path) -> Iterator[str]:
    """Every module name ``path`` imports, ``from a import b`` as ``a.b`` when that is a
    module and ``a`` otherwise."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("icepark", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            elif node.module:
                module = node.module
            else:
                continue
            submodules = [f"{module}.{alias.name}" for alias in node.names
                          if _exists(f"{module}.{alias.name}")]
            yield from submodules or [module]


def _exists(module: str) -> bool:
    top, _, rest = module.partition(".")
    if top != "icepark":
        return False
    path = SRC.joinpath(*rest.split(".")) if rest else SRC
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _violations() -> Iterator[str]:
    for path, layer in _modules():
        rank = LAYERS.index(layer) if layer else len(LAYERS)
        parts = path.relative_to(SRC).with_suffix("").parts
        component = _component(parts)
        for name in _imports(path):
            top, _, rest = name.partition(".")
            where = path.relative_to(SRC)
            if top == "icepark":
                target_parts = tuple(rest.split(".")) if rest else ()
                if SRC.joinpath(*target_parts).is_dir():
                    target_parts = (*target_parts, "__init__")
                target = _layer(target_parts)
                if target is not None and LAYERS.index(target) > rank:
                    yield f"{where} ({layer}) imports {name} ({target}), a higher layer"
                elif (target is not None and target == layer and target in COMPONENTS
                      and component is not None):
                    order = COMPONENTS[target]
                    other = _component(target_parts)
                    if target_parts == (target, "__init__"):
                        yield f"{where} imports its layer's front door {name}"
                    elif other is not None and order.index(other) > order.index(component):
                        yield (f"{where} ({component or 'root'}) imports {name} "
                               f"({other or 'root'}), a higher component of {layer}")
            elif top in THIRD_PARTY_HOMES and layer not in THIRD_PARTY_HOMES[top]:
                yield f"{where} imports {top}, allowed only in {sorted(THIRD_PARTY_HOMES[top])}"


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path, _ in _modules():
        name = _module_name(path)
        graph[name] = {target for target in _imports(path)
                       if target.startswith("icepark.") and target != name and _exists(target)}
    return graph


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_imports_point_downward_only() -> None:
    assert list(_violations()) == []


def test_no_module_imports_itself_through_others() -> None:
    assert _cycles(_graph()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("spec/x.py", "from icepark.catalog import sql\n", "a higher layer"),
        ("spec/x.py", "import pyspark.sql\n", "allowed only in"),
        ("io/x.py", "from icepark.spec.types import LONG\nimport pyarrow\n", None),
        ("spec/x.py", "from ..table import scan\n", "a higher layer"),
        ("io/avro/x.py", "from icepark.io.manifest.y import z\n", "a higher component of io"),
        ("io/avro/x.py", "from icepark.io import y\n", "its layer's front door"),
        ("io/manifest/x.py", "from icepark.io.avro.y import z\n", None),
        ("table/scan/x.py", "from icepark.table.table import Table\n", "a higher component"),
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


def test_the_checker_finds_cycles_also_through_type_checking_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = tmp_path / "icepark" / "table"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "a.py").write_text("from icepark.table.b import B\n", encoding="utf-8")
    (fake / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from icepark.table import a\n", encoding="utf-8")
    (fake / "c.py").write_text("from icepark.table.a import A\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.SRC", tmp_path / "icepark")
    assert _cycles(_graph()) == [["icepark.table.a", "icepark.table.b"]]
