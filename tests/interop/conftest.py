"""The Java reference runtime as a peer: one session for the whole run (see tools/javaref)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from tools.cluster import BRIEF_JVM
from tools.javaref.client import JavaReference

from icepark.catalog.filesystem import FilesystemCatalog

_NAMESPACES = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "javaref" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.javaref)


@pytest.fixture(scope="session")
def javaref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaReference]:
    """Apache Iceberg 1.10.2 on Spark 3.5, its ``hadoop`` catalog ``ref`` over a warehouse
    that :func:`shared` opens as icepark's filesystem catalog."""
    root = tmp_path_factory.mktemp("javaref")
    (root / "warehouse").mkdir()
    # C1 and the serial collector: the file of v3 tests alone took 186 s instead of 210 s
    reference = JavaReference(root / "warehouse", root / "reference.log", BRIEF_JVM)
    yield reference
    reference.close()


class Shared:
    """One test's namespace in the warehouse both engines share: ``ours`` is icepark's
    catalog, ``ref(name)`` the reference's name for a table of the namespace."""

    def __init__(self, reference: JavaReference, namespace: str) -> None:
        self.reference = reference
        self.namespace = namespace
        self.ours = FilesystemCatalog("shared", {"warehouse": str(reference.warehouse)})
        self.ours.create_namespace(namespace)

    def ref(self, table: str) -> str:
        return f"ref.{self.namespace}.{table}"

    def ident(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def location(self, table: str) -> Path:
        return Path(self.reference.warehouse) / self.namespace / table


@pytest.fixture
def shared(javaref: JavaReference) -> Shared:
    return Shared(javaref, f"ns{next(_NAMESPACES)}")
