"""Namespaces in both catalogs: create, list (nested), properties, drop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from icepark.catalog.base import BaseCatalog, PropertiesUpdate
from icepark.errors import AlreadyExists, IcebergError, NoSuchNamespace, ValidationError
from tests.catalog.catalog_helpers import SCHEMA, all_files


def test_create_list_exists_and_properties(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db", {"owner": "ann", "comment": "raw events"})
    catalog.create_namespace(("other",))
    assert catalog.namespace_exists("db") and catalog.namespace_exists(("other",))
    assert not catalog.namespace_exists("nope")
    assert catalog.list_namespaces() == [("db",), ("other",)]
    assert catalog.load_namespace_properties("db") == {"owner": "ann", "comment": "raw events"}
    assert catalog.load_namespace_properties("other") == {}


def test_nested_namespaces(catalog: BaseCatalog) -> None:
    catalog.create_namespace("a")
    catalog.create_namespace("a.b")
    catalog.create_namespace(("a", "b", "c"), {"k": "v"})
    catalog.create_namespace("a.d")
    assert catalog.list_namespaces() == [("a",)]
    assert catalog.list_namespaces("a") == [("a", "b"), ("a", "d")]
    assert catalog.list_namespaces(("a", "b")) == [("a", "b", "c")]
    assert catalog.list_namespaces("a.b.c") == []
    assert catalog.load_namespace_properties("a.b.c") == {"k": "v"}
    with pytest.raises(NoSuchNamespace):
        catalog.list_namespaces("x")


def test_parent_of_a_nested_namespace_exists_implicitly(catalog: BaseCatalog) -> None:
    catalog.create_namespace("p.q")
    assert catalog.namespace_exists("p")
    assert catalog.list_namespaces() == [("p",)]
    assert catalog.load_namespace_properties("p") == {}


def test_update_properties(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db", {"a": "1", "b": "2"})
    summary = catalog.update_namespace_properties("db", removals=["a", "zz"],
                                                  updates={"b": "3", "c": "4"})
    assert summary == PropertiesUpdate(removed=("a",), updated=("b", "c"), missing=("zz",))
    assert catalog.load_namespace_properties("db") == {"b": "3", "c": "4"}
    catalog.update_namespace_properties("db", removals=["b", "c"])
    assert catalog.load_namespace_properties("db") == {}
    assert catalog.namespace_exists("db"), "removing every property keeps the namespace"
    with pytest.raises(ValidationError, match="both remove and set"):
        catalog.update_namespace_properties("db", removals=["x"], updates={"x": "1"})


def test_drop_namespace(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db", {"a": "1"})
    catalog.drop_namespace("db")
    assert not catalog.namespace_exists("db")
    assert catalog.list_namespaces() == []
    catalog.create_namespace("db")  # can be made again
    assert catalog.load_namespace_properties("db") == {}


def test_drop_refuses_non_empty_namespaces(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    catalog.create_namespace("parent.child")
    with pytest.raises(ValidationError, match="not empty"):
        catalog.drop_namespace("db")
    with pytest.raises(ValidationError, match="not empty"):
        catalog.drop_namespace("parent")
    catalog.drop_table("db.t")
    catalog.drop_namespace("db")
    catalog.drop_namespace("parent.child")
    # SQL: "parent" existed only through its child; filesystem: its directory remains
    assert catalog.list_namespaces() in ([], [("parent",)])


Call = Callable[[BaseCatalog], object]

ERRORS: list[tuple[str, Call, type[IcebergError]]] = [
    ("duplicate", lambda c: c.create_namespace("db"), AlreadyExists),
    ("properties of unknown", lambda c: c.load_namespace_properties("nope"), NoSuchNamespace),
    ("update unknown", lambda c: c.update_namespace_properties("nope", updates={"a": "b"}),
     NoSuchNamespace),
    ("drop unknown", lambda c: c.drop_namespace("nope"), NoSuchNamespace),
    ("list tables of unknown", lambda c: c.list_tables("nope"), NoSuchNamespace),
    ("empty", lambda c: c.create_namespace(()), ValidationError),
    ("empty string", lambda c: c.create_namespace(""), ValidationError),
    ("empty level", lambda c: c.create_namespace("a..b"), ValidationError),
    ("slash", lambda c: c.create_namespace(("a/b",)), ValidationError),
    ("backslash", lambda c: c.create_namespace(("a\\b",)), ValidationError),
    ("dot dot", lambda c: c.create_namespace(("..",)), ValidationError),
    ("NUL", lambda c: c.create_namespace(("a\x00",)), ValidationError),
    ("newline", lambda c: c.create_namespace(("a\nb",)), ValidationError),
    ("escape", lambda c: c.create_namespace(("a\x1bb",)), ValidationError),
    ("non-string property", lambda c: c.create_namespace("n", {"a": 1}),  # type: ignore[dict-item]
     ValidationError),
]


@pytest.mark.parametrize(("case", "call", "error"), ERRORS, ids=[e[0] for e in ERRORS])
def test_namespace_errors(catalog: BaseCatalog, warehouse: Path, case: str, call: Call,
                          error: type[IcebergError]) -> None:
    catalog.create_namespace("db")
    before = all_files(warehouse)
    with pytest.raises(error):
        call(catalog)
    assert [f for f in all_files(warehouse) if not f.startswith("catalog.db")] == [
        f for f in before if not f.startswith("catalog.db")]
    assert catalog.list_namespaces() == [("db",)]
