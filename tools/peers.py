"""Connections to the peer engines icepark checks interoperability against (test-only).

DESIGN.md: DuckDB's iceberg extension ships on PyPI as ``duckdb-extension-iceberg`` (and needs
``duckdb-extension-avro``); offline it must be loaded by path, from the wheels' files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg


def _extension(package: object, name: str) -> str:
    """The extension file a ``duckdb-extension-*`` wheel ships (DESIGN.md: load by path,
    offline)."""
    root = Path(str(getattr(package, "__file__", ""))).parent / "extensions"
    found = sorted(root.glob(f"v*/{name}.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"No {name}.duckdb_extension under {root}")
    return str(found[-1])


@contextmanager
def duckdb_connection() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with the avro and iceberg extensions loaded from their wheels."""
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    try:
        con.execute(f"LOAD '{_extension(duckdb_extension_avro, 'avro')}'")
        con.execute(f"LOAD '{_extension(duckdb_extension_iceberg, 'iceberg')}'")
        yield con
    finally:
        con.close()


__all__ = ["duckdb_connection"]
