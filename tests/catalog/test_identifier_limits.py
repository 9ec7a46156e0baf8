"""Overlong names: every catalog method raises ValidationError naming the limit before any I/O
(never an OSError "File name too long" or a database error), and names at the limit work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog.base import BaseCatalog
from icepark.catalog.identifier import check_part, namespace_identifier, table_identifier
from icepark.errors import ValidationError
from tests.catalog.catalog_helpers import SCHEMA

LONG_NAME = "t" * 300
WIDE_NAME = "\u00e9" * 200  # 200 characters, 400 bytes
LONG_NAMESPACE = tuple(f"level{i}_" + "n" * 50 for i in range(5))  # 5 x 57 + 4 = 289 chars

NAME_LIMIT = r"names are limited to 255 bytes \(UTF-8\)"
NAMESPACE_LIMIT = r"is limited to 252 bytes \(UTF-8\)"

CASES: list[tuple[str, Any, str]] = [
    ("table name", ("db", LONG_NAME), f"Table name 'tttt.*' is 300 characters long; {NAME_LIMIT}"),
    ("multi-byte table name", ("db", WIDE_NAME),
     rf"is 200 characters \(400 bytes in UTF-8\) long; {NAME_LIMIT}"),
    ("namespace name", (LONG_NAME, "t"), f"Namespace name 'tttt.*' is 300 characters long; "
                                         f"{NAME_LIMIT}"),
    ("joined namespace", (*LONG_NAMESPACE, "t"), f"Namespace 'level0.*' is 289 characters long; "
                                                 f"a namespace .*{NAMESPACE_LIMIT}"),
]
CALLS: dict[str, Callable[[BaseCatalog, Any], object]] = {
    "table_exists": lambda c, ident: c.table_exists(ident),
    "load_table": lambda c, ident: c.load_table(ident),
    "create_table": lambda c, ident: c.create_table(ident, SCHEMA),
    "drop_table": lambda c, ident: c.drop_table(ident),
    "rename_table (source)": lambda c, ident: c.rename_table(ident, "db.other"),
    "rename_table (target)": lambda c, ident: c.rename_table("db.t", ident),
    "register_table": lambda c, ident: c.register_table(ident, "/nowhere/v1.metadata.json"),
    "create_namespace": lambda c, ident: c.create_namespace(ident[:-1]),
    "namespace_exists": lambda c, ident: c.namespace_exists(ident[:-1]),
    "list_tables": lambda c, ident: c.list_tables(ident[:-1]),
    "list_namespaces": lambda c, ident: c.list_namespaces(ident[:-1]),
    "drop_namespace": lambda c, ident: c.drop_namespace(ident[:-1]),
    "namespace properties": lambda c, ident: c.load_namespace_properties(ident[:-1]),
}


NAMESPACE_CALLS = {"create_namespace", "namespace_exists", "list_tables", "list_namespaces",
                   "drop_namespace", "namespace properties"}
MATRIX = [(call, *case) for call in CALLS for case in CASES
          if "namespace" in case[0] or call not in NAMESPACE_CALLS]  # ("db",) is valid


@pytest.mark.parametrize(("call", "case", "ident", "message"), MATRIX,
                         ids=[f"{m[0]}-{m[1]}" for m in MATRIX])
def test_overlong_names_are_rejected_before_any_io(  # noqa: PLR0917 - parametrized
        catalog: BaseCatalog, warehouse: Path, call: str, case: str, ident: Any,
        message: str) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    before = sorted(p.name for p in warehouse.rglob("*"))
    with pytest.raises(ValidationError, match=message):
        CALLS[call](catalog, ident)
    assert sorted(p.name for p in warehouse.rglob("*")) == before


def test_names_at_the_limit_work(catalog: BaseCatalog) -> None:
    namespace = ("a" * 126, "b" * 125)  # 252 characters joined
    name = "n" * 85 + "\u00e9" * 85  # 170 characters, 255 bytes
    catalog.create_namespace(namespace)
    ident = (*namespace, name)
    assert not catalog.table_exists(ident)
    table = catalog.create_table(ident, SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert catalog.table_exists(ident)
    assert catalog.load_table(ident).scan().to_arrow().num_rows == 1
    assert catalog.list_tables(namespace) == [ident]
    catalog.drop_table(ident)
    assert not catalog.table_exists(ident)


def test_one_byte_more_is_too_long() -> None:
    assert table_identifier(("db", "x" * 255)) == ("db", "x" * 255)
    with pytest.raises(ValidationError, match="is 128 characters \\(256 bytes"):
        table_identifier(("db", "\u00e9" * 128))
    assert namespace_identifier(("a" * 126, "b" * 125)) == ("a" * 126, "b" * 125)
    with pytest.raises(ValidationError, match=r"Namespace 'a+\.\.\.' is 253 characters long"):
        namespace_identifier(("a" * 126, "b" * 126))
    with pytest.raises(ValidationError, match=r"Namespace 'a+\.\.\.' is 253 characters long"):
        table_identifier(("a" * 126, "b" * 126, "t"))
    with pytest.raises(ValidationError, match=r"is 201 characters \(401 bytes in UTF-8\)"):
        namespace_identifier(("\u00e9" * 100, "\u00e9" * 100))


def test_lone_surrogates_are_rejected() -> None:
    with pytest.raises(ValidationError, match="must be valid Unicode, not a lone surrogate"):
        check_part("a\ud800b")
    with pytest.raises(ValidationError, match="lone surrogate"):
        table_identifier("db.t\udc80")
