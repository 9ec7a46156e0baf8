"""A table whose metadata breaks ``last-column-id`` does not load through a catalog (the
bare decoder still parses such files: they are among the vectors every reader must parse)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from icepark.catalog.base import BaseCatalog
from icepark.errors import ValidationError
from icepark.spec.serde import table_metadata_from_json
from tests.catalog.catalog_helpers import SCHEMA
from tests.vectors import vectors

VECTOR = vectors("metadata", "rust", "example_table_metadata_v2.json")


def test_last_column_id_below_a_field_id_is_refused_at_load(catalog: BaseCatalog,
                                                            kind: str) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    path = Path(table.metadata_location.removeprefix("file://"))
    data = json.loads(path.read_text())
    data["last-column-id"] = 2  # SCHEMA has fields 1, 2 and 3
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match=re.escape(
            f"Table metadata file {table.metadata_location}: 'last-column-id' is 2, but schema "
            "0 has field ID 3")):
        catalog.load_table("db.t")

    if kind == "sql":  # a corrected copy registers and loads
        data["last-column-id"] = 3
        fixed = path.with_name("fixed.metadata.json")
        fixed.write_text(json.dumps(data))
        assert catalog.register_table("db.u", str(fixed)).metadata.last_column_id == 3


def test_the_decoder_still_parses_the_vector() -> None:
    metadata = table_metadata_from_json(VECTOR.read_text())
    assert metadata.last_column_id == 3 and metadata.schema().highest_field_id == 8
