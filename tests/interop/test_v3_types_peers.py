"""The format version 3 types between icepark and the peers (DuckDB 1.5, pyiceberg 0.12).

What each peer reads of a v3 table icepark writes, asserted as it is today, so that a change on
either side shows up here:

============== ============================================== ===================================
type           DuckDB (iceberg extension)                     pyiceberg
============== ============================================== ===================================
timestamp_ns   exact nanoseconds                              exact nanoseconds
timestamptz_ns "Unrecognized primitive type"                  exact nanoseconds
unknown        "Unrecognized primitive type"                  nulls
variant        misread: needs Parquet's VARIANT annotation,   "Unsupported field type: 'variant'"
               which pyarrow cannot write (see below)
geometry       GEOMETRY, exact WKB (``ST_AsText``)            cannot resolve the file's binary
geography      "Not implemented Error: Geography support"     cannot resolve the file's binary
============== ============================================== ===================================

And the other way round: a Parquet file with a shredded variant written by DuckDB (with the
``VARIANT`` annotation and a ``typed_value`` column) reads in icepark as DuckDB reads it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.io import variant as enc
from icepark.io.arrow.reader import ArrowReader
from icepark.io.arrow.schema import field_metadata
from icepark.io.fileio import ArrowFileIO
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.schema import Schema
from icepark.spec.types import (
    GEOGRAPHY,
    GEOMETRY,
    INT,
    LONG,
    TIMESTAMP_NS,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    VARIANT,
    NestedField,
    PrimitiveType,
)
from tests.interop.peers import duckdb_connection

NS = 1510871468123456789  # 2017-11-16T22:31:08.123456789
POINT = struct.pack("<bIdd", 1, 1, 30.0, 10.0)  # POINT (30 10)
COLUMNS: dict[str, tuple[PrimitiveType, Any]] = {
    "tsn": (TIMESTAMP_NS, pa.array([NS, -1, None], pa.timestamp("ns"))),
    "tszn": (TIMESTAMPTZ_NS, pa.array([NS, -1, None], pa.timestamp("ns", tz="UTC"))),
    "u": (UNKNOWN, pa.nulls(3)),
    "v": (VARIANT, pa.array([dict(zip(("metadata", "value"), enc.encode({"a": [1, "x"]}),
                                      strict=True)), None,
                             dict(zip(("metadata", "value"), enc.encode(34), strict=True))])),
    "g": (GEOMETRY, pa.array([POINT, None, POINT], pa.binary())),
    "gg": (GEOGRAPHY, pa.array([POINT, None, POINT], pa.binary())),
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BaseCatalog, Path]]:
    """One v3 table per type, ``db.<column>``, each with the rows of ``COLUMNS``."""
    root = tmp_path_factory.mktemp("v3peers")
    catalog = load_catalog("v3peers", uri=f"sqlite:///{root}/catalog.db",
                           warehouse=str(root / "warehouse"))
    catalog.create_namespace("db")
    for name, (t, values) in COLUMNS.items():
        schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, name, t))
        table = catalog.create_table(f"db.{name}", schema, format_version=3)
        table.append(pa.table({"id": [1, 2, 3], name: values}))
    yield catalog, root


def _duckdb(catalog: BaseCatalog, name: str, select: str) -> list[tuple[Any, ...]]:
    location = catalog.load_table(f"db.{name}").metadata_location
    with duckdb_connection() as con:
        return con.execute(f"SELECT {select} FROM iceberg_scan(?) ORDER BY id",
                           [location]).fetchall()


def _pyiceberg(catalog: BaseCatalog, name: str) -> list[dict[str, Any]]:
    peer = PySqlCatalog("v3peers", uri=catalog.properties["uri"],
                        warehouse=catalog.properties["warehouse"])
    return sorted(peer.load_table(f"db.{name}").scan().to_arrow().to_pylist(),
                  key=lambda r: r["id"])


# --- DuckDB ----------------------------------------------------------------------------------


def test_duckdb_reads_nanosecond_timestamps_exactly(tables: tuple[BaseCatalog, Path]) -> None:
    catalog, _ = tables
    assert _duckdb(catalog, "tsn", "epoch_ns(tsn), typeof(tsn)") == [
        (NS, "TIMESTAMP_NS"), (-1, "TIMESTAMP_NS"), (None, "TIMESTAMP_NS")]


def test_duckdb_reads_geometry_as_wkb(tables: tuple[BaseCatalog, Path]) -> None:
    catalog, _ = tables
    assert _duckdb(catalog, "g", "ST_AsText(g), typeof(g)") == [
        ("POINT (30 10)", "GEOMETRY"), (None, "GEOMETRY"), ("POINT (30 10)", "GEOMETRY")]


@pytest.mark.parametrize(("name", "message"), [
    ("tszn", "Unrecognized primitive type: timestamptz_ns"),
    ("u", "Unrecognized primitive type: unknown"),
    ("gg", "Geography support"),
])
def test_duckdb_cannot_read(tables: tuple[BaseCatalog, Path], name: str, message: str) -> None:
    catalog, _ = tables
    with pytest.raises(Exception, match=message):  # duckdb's own error classes
        _duckdb(catalog, name, "*")


def test_duckdb_misreads_a_variant_group_without_the_variant_annotation(
        tables: tuple[BaseCatalog, Path]) -> None:
    """The spec's Parquet mapping gives ``variant`` the logical type ``VARIANT``; pyarrow 26
    cannot write it (only for its C++ extension type, which Python cannot make), and DuckDB
    then takes the group for a struct and wraps that struct in a variant. icepark, Spark and
    the Java reference find variants by the table schema instead."""
    catalog, _ = tables
    metadata, value = enc.encode({"a": [1, "x"]})
    first = _duckdb(catalog, "v", "v")[0][0]
    assert first == {"metadata": metadata, "value": value}  # not {"a": [1, "x"]}


def test_icepark_reads_duckdbs_shredded_variants(tmp_path: Path) -> None:
    """DuckDB writes Parquet variants with the ``VARIANT`` annotation and shreds them (here
    an ``int32`` ``typed_value``); icepark rebuilds the same values DuckDB reads back."""
    path = tmp_path / "duck.parquet"
    with duckdb_connection() as con:
        con.execute(f"COPY (SELECT 1 AS id, {{'a': 1, 'b': ['y', 'x']}}::VARIANT AS v "
                    "UNION ALL SELECT 2, 34::VARIANT UNION ALL SELECT 3, NULL::VARIANT "
                    f"UNION ALL SELECT 4, 'text'::VARIANT) TO '{path}' (FORMAT parquet)")
        theirs = con.execute(f"SELECT id, v FROM '{path}' ORDER BY id").fetchall()
    assert "Variant(1)" in str(pq.read_metadata(path).schema)
    # the file has no field IDs: give them as a writer with IDs would
    table = pq.read_table(path)
    with_ids = pa.schema([pa.field(f.name, f.type, f.nullable, field_metadata(i + 1))
                          for i, f in enumerate(table.schema)])
    pq.write_table(table.cast(with_ids), tmp_path / "ids.parquet")
    assert "typed_value" in table.schema.field("v").type.names
    schema = Schema.of(NestedField.optional(1, "id", INT), NestedField.optional(2, "v", VARIANT))
    location = str(tmp_path / "ids.parquet")
    data_file = DataFile(location, FileFormat.PARQUET, (), table.num_rows,
                         Path(location).stat().st_size)
    got = [r for batch in ArrowReader(ArrowFileIO(), schema).read_task(data_file)
           for r in batch.to_pylist()]
    decoded = [None if r["v"] is None else enc.decode(r["v"]["metadata"], r["v"]["value"])
               for r in sorted(got, key=lambda r: r["id"])]
    assert decoded == [{"a": 1, "b": ["y", "x"]}, 34, None, "text"]
    assert [value for _, value in theirs] == decoded


# --- pyiceberg -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tsn", "tszn"])
def test_pyiceberg_reads_nanosecond_timestamps_exactly(tables: tuple[BaseCatalog, Path],
                                                       name: str) -> None:
    catalog, _ = tables
    got = pa.array([r[name] for r in _pyiceberg(catalog, name)], COLUMNS[name][1].type)
    assert got.cast(pa.int64()).to_pylist() == [NS, -1, None]


def test_pyiceberg_reads_unknown_as_null(tables: tuple[BaseCatalog, Path]) -> None:
    catalog, _ = tables
    assert _pyiceberg(catalog, "u") == [{"id": 1, "u": None}, {"id": 2, "u": None},
                                       {"id": 3, "u": None}]


@pytest.mark.parametrize(("name", "message"), [
    ("v", "Unsupported field type: 'variant'"),
    ("g", "Cannot promote an binary to geometry"),
    ("gg", "Cannot promote an binary to geography"),
])
def test_pyiceberg_cannot_read(tables: tuple[BaseCatalog, Path], name: str,
                               message: str) -> None:
    catalog, _ = tables
    with pytest.raises(Exception, match=message):  # pyiceberg's own errors
        _pyiceberg(catalog, name)
