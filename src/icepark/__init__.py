"""icepark: Apache Iceberg tables on stock PySpark.

>>> import icepark, tempfile
>>> catalog = icepark.load_catalog("docs", warehouse=tempfile.mkdtemp())
>>> type(catalog).__name__
'SqlCatalog'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from icepark.catalog import load_catalog

__all__ = ["load_catalog"]


def __getattr__(name: str) -> Any:
    """``icepark.load_catalog`` without importing the catalog layer for every ``import``."""
    if name == "load_catalog":
        from icepark.catalog import load_catalog  # noqa: PLC0415 - lazy on purpose

        return load_catalog
    raise AttributeError(f"module 'icepark' has no attribute {name!r}")
