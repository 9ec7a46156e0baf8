"""A catalog that cannot be reached or opened raises :class:`CatalogUnavailable`, saying why
and never showing the database URL (it may hold a password)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.catalog import load_catalog
from icepark.errors import CatalogUnavailable


def test_a_database_that_refuses_connections(tmp_path: Path) -> None:
    with pytest.raises(CatalogUnavailable) as raised:
        load_catalog("down", uri="postgresql+psycopg://ana:s3cret@127.0.0.1:1/postgres",
                     warehouse=str(tmp_path))
    message = str(raised.value)
    assert message.startswith("Catalog 'down' is unavailable: cannot open its database (")
    assert "Connection refused" in message and "s3cret" not in message


def test_a_sqlite_database_that_cannot_be_opened(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(CatalogUnavailable, match="Cannot open the SQLite catalog database "):
        load_catalog("x", uri=f"sqlite:///{tmp_path}/file/catalog.db", warehouse=str(tmp_path))
    (tmp_path / "dir.db").mkdir()  # the database "file" is a folder
    with pytest.raises(CatalogUnavailable,
                       match=f"cannot open its database {tmp_path}/dir.db "):
        load_catalog("x", uri=f"sqlite:///{tmp_path}/dir.db", warehouse=str(tmp_path))


def test_a_filesystem_warehouse_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "wh").write_text("")
    with pytest.raises(CatalogUnavailable, match=r"its warehouse .*/wh is not a directory"):
        load_catalog("fs", type="filesystem", warehouse=str(tmp_path / "wh"))
