"""Tables in both catalogs: create, load, list, exists, drop, rename, register; identifiers."""

from __future__ import annotations

import gzip
import pickle
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from icepark.catalog import SqlCatalog
from icepark.catalog.base import BaseCatalog, Catalog, write_metadata
from icepark.errors import (
    AlreadyExists,
    IcebergError,
    NoSuchNamespace,
    NoSuchTable,
    UnsupportedFeature,
    ValidationError,
)
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.sorting import SortOrderBuilder
from icepark.table.change import updates as u
from icepark.table.change.commit import TableCommitter
from icepark.table.change.metadata_builder import MetadataBuilder
from tests.catalog.catalog_helpers import SCHEMA, all_files, metadata_files

METASTORE_NAME = re.compile(r"\d{5}-([0-9a-f-]{36})\.metadata\.json")


def test_create_load_list_exists(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    spec = PartitionSpecBuilder(SCHEMA).day("ts").build()
    order = SortOrderBuilder(SCHEMA).asc("name").build()
    table = catalog.create_table("db.events", SCHEMA, partition_spec=spec, sort_order=order,
                                 properties={"owner": "ann"})
    assert table.identifier == ("db", "events") and table.name == "db.events"
    loaded = catalog.load_table(("db", "events"))
    assert loaded.metadata_location == table.metadata_location
    assert loaded.metadata == table.metadata
    assert loaded.schema().same_columns(SCHEMA)
    assert [f.name for f in loaded.spec().fields] == ["ts_day"]
    assert loaded.sort_order().order_id == 1
    assert loaded.properties == {"owner": "ann"}
    assert loaded.current_snapshot() is None
    assert catalog.table_exists("db.events") and not catalog.table_exists("db.nope")
    catalog.create_table("db.another", SCHEMA)
    assert catalog.list_tables("db") == [("db", "another"), ("db", "events")]
    assert catalog.list_namespaces() == [("db",)], "tables are not namespaces"


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_create_each_format_version(catalog: BaseCatalog, format_version: int) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA,
                                 format_version=format_version)  # type: ignore[arg-type]
    assert catalog.load_table("db.t").metadata.format_version == format_version
    assert table.metadata.format_version == format_version


def test_sql_default_location_and_file_name(sql_catalog: BaseCatalog, warehouse: Path) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.events", SCHEMA)
    assert table.location == f"{warehouse}/db.db/events"
    name = table.metadata_location.rsplit("/", 1)[-1]
    match = METASTORE_NAME.fullmatch(name)
    assert match is not None and name.startswith("00000-")
    assert uuid.UUID(match.group(1)).version == 4
    assert table.metadata_location == f"{warehouse}/db.db/events/metadata/{name}"
    sql_catalog.create_namespace("a.b")
    assert sql_catalog.create_table("a.b.t", SCHEMA).location == f"{warehouse}/a.b.db/t"


def test_sql_location_from_namespace_or_argument(sql_catalog: BaseCatalog,
                                                 tmp_path: Path) -> None:
    sql_catalog.create_namespace("db", {"location": f"{tmp_path}/elsewhere/"})
    assert sql_catalog.create_table("db.t", SCHEMA).location == f"{tmp_path}/elsewhere/t"
    explicit = sql_catalog.create_table("db.u", SCHEMA, location=f"{tmp_path}/x/u/")
    assert explicit.location == f"{tmp_path}/x/u"
    assert Path(explicit.metadata_location).parent == tmp_path / "x" / "u" / "metadata"


def test_filesystem_location_is_the_path(fs_catalog: BaseCatalog, warehouse: Path) -> None:
    fs_catalog.create_namespace("a.b")
    table = fs_catalog.create_table("a.b.t", SCHEMA)
    assert table.location == f"{warehouse}/a/b/t"
    assert table.metadata_location == f"{warehouse}/a/b/t/metadata/v1.metadata.json"
    assert (warehouse / "a/b/t/metadata/version-hint.text").read_text() == "1"
    same = fs_catalog.create_table("a.b.u", SCHEMA, location=f"file://{warehouse}/a/b/u")
    assert same.location == f"{warehouse}/a/b/u"
    with pytest.raises(ValidationError, match="location is its path"):
        fs_catalog.create_table("a.b.v", SCHEMA, location=f"{warehouse}/x")
    assert not fs_catalog.table_exists("a.b.v")


Call = Callable[[BaseCatalog], object]

ERRORS: list[tuple[str, Call, type[IcebergError]]] = [
    ("duplicate", lambda c: c.create_table("db.t", SCHEMA), AlreadyExists),
    ("unknown namespace", lambda c: c.create_table("nope.t", SCHEMA), NoSuchNamespace),
    ("no namespace", lambda c: c.create_table("t", SCHEMA), ValidationError),
    ("load unknown", lambda c: c.load_table("db.nope"), NoSuchTable),
    ("drop unknown", lambda c: c.drop_table("db.nope"), NoSuchTable),
    ("purge unknown", lambda c: c.drop_table("db.nope", purge=True), NoSuchTable),
    ("load in unknown namespace", lambda c: c.load_table("nope.t"), NoSuchTable),
    ("register missing namespace", lambda c: c.register_table("nope.t", "/x.metadata.json"),
     NoSuchNamespace),
]


@pytest.mark.parametrize(("case", "call", "error"), ERRORS, ids=[e[0] for e in ERRORS])
def test_table_errors(catalog: BaseCatalog, warehouse: Path, case: str, call: Call,
                      error: type[IcebergError]) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    before = all_files(warehouse)
    with pytest.raises(error):
        call(catalog)
    assert all_files(warehouse) == before
    assert catalog.list_tables("db") == [("db", "t")]


BAD_IDENTIFIERS: list[object] = [
    ("db", "a/b"), ("db", "../../etc"), ("db", "a\\b"), ("db", ".."), ("db", "a..b"),
    ("db", "a\x00b"), ("db", "a\nb"), ("db", "tab\t"), ("db", "del\x7f"), ("db", "\x85"),
    ("db", ""), ("db", "  "), ("", "t"), ("db", "a.b"), ("..", "t"), ("a/b", "t"),
    "db..t", "db.", ".t", "db/x.t", "db.t\x00", 42, ("db", 7),
]


@pytest.mark.parametrize("identifier", BAD_IDENTIFIERS, ids=repr)
@pytest.mark.parametrize("operation", ["create", "load", "exists", "drop", "register",
                                       "rename", "commit"])
def test_bad_identifiers_are_rejected_and_nothing_is_written(
        catalog: BaseCatalog, warehouse: Path, identifier: object, operation: str) -> None:
    catalog.create_namespace("db")
    good = catalog.create_table("db.good", SCHEMA)
    before = all_files(warehouse)
    calls: dict[str, Call] = {
        "create": lambda c: c.create_table(identifier, SCHEMA),  # type: ignore[arg-type]
        "load": lambda c: c.load_table(identifier),  # type: ignore[arg-type]
        "exists": lambda c: c.table_exists(identifier),  # type: ignore[arg-type]
        "drop": lambda c: c.drop_table(identifier, purge=True),  # type: ignore[arg-type]
        "register": lambda c: c.register_table(identifier,  # type: ignore[arg-type]
                                               good.metadata_location),
        "rename": lambda c: c.rename_table("db.good", identifier),  # type: ignore[arg-type]
        "commit": lambda c: c.commit_table(identifier, [], []),  # type: ignore[arg-type]
    }
    with pytest.raises(ValidationError):
        calls[operation](catalog)
    assert all_files(warehouse) == before
    assert catalog.load_table("db.good").metadata_location == good.metadata_location


def test_drop_table(catalog: BaseCatalog, kind: str) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    catalog.drop_table("db.t")
    assert not catalog.table_exists("db.t") and catalog.list_tables("db") == []
    # The metastore drops the entry and keeps the files; a path-based table is its directory.
    assert bool(metadata_files(table.location)) == (kind == "sql")
    again = catalog.create_table("db.t", SCHEMA)
    assert again.metadata.table_uuid != table.metadata.table_uuid


def test_sql_rename(sql_catalog: BaseCatalog) -> None:
    sql_catalog.create_namespace("db")
    sql_catalog.create_namespace("archive")
    table = sql_catalog.create_table("db.t", SCHEMA)
    sql_catalog.create_table("archive.taken", SCHEMA)
    renamed = sql_catalog.rename_table("db.t", ("archive", "t2024"))
    assert renamed.identifier == ("archive", "t2024")
    assert renamed.metadata_location == table.metadata_location
    assert not sql_catalog.table_exists("db.t")
    assert sql_catalog.list_tables("archive") == [("archive", "t2024"), ("archive", "taken")]
    with pytest.raises(AlreadyExists):
        sql_catalog.rename_table("archive.t2024", "archive.taken")
    with pytest.raises(NoSuchTable):
        sql_catalog.rename_table("db.t", "db.u")
    with pytest.raises(NoSuchNamespace):
        sql_catalog.rename_table("archive.t2024", "nope.t")


def test_filesystem_refuses_rename(fs_catalog: BaseCatalog) -> None:
    fs_catalog.create_namespace("db")
    fs_catalog.create_table("db.t", SCHEMA)
    with pytest.raises(UnsupportedFeature, match="location is its path"):
        fs_catalog.rename_table("db.t", "db.u")
    assert fs_catalog.table_exists("db.t") and not fs_catalog.table_exists("db.u")


def test_sql_register(sql_catalog: BaseCatalog, warehouse: Path) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", SCHEMA, properties={"p": "1"})
    sql_catalog.drop_table("db.t")
    registered = sql_catalog.register_table("db.back", table.metadata_location)
    assert registered.metadata_location == table.metadata_location
    assert sql_catalog.load_table("db.back").metadata == table.metadata
    with pytest.raises(AlreadyExists):
        sql_catalog.register_table("db.back", table.metadata_location)
    other = SqlCatalog("other", {"warehouse": str(warehouse)})  # same database, other catalog
    other.create_namespace("ns")
    assert other.register_table("ns.t", table.metadata_location).metadata == table.metadata
    assert other.list_tables("ns") == [("ns", "t")]
    assert sql_catalog.list_namespaces() == [("db",)]
    other.close()


def test_filesystem_register(fs_catalog: BaseCatalog, warehouse: Path, tmp_path: Path) -> None:
    fs_catalog.create_namespace("db")
    metadata, _ = MetadataBuilder.new_table(SCHEMA, f"{warehouse}/db/t", properties={"p": "1"})
    outside = f"{tmp_path}/exported.metadata.json"
    write_metadata(fs_catalog.file_io, outside, metadata)
    table = fs_catalog.register_table("db.t", outside)
    assert table.metadata_location.endswith("/db/t/metadata/v1.metadata.json")
    assert fs_catalog.load_table("db.t").metadata == metadata
    with pytest.raises(AlreadyExists):
        fs_catalog.register_table("db.t", outside)
    with pytest.raises(ValidationError, match="location is its path"):
        fs_catalog.register_table("db.u", outside)


def test_catalog_credentials_stay_out_of_tables_and_messages(warehouse: Path) -> None:
    secret = "s3cr3t-Pa55"
    catalog = SqlCatalog("c", {"warehouse": str(warehouse), "s3.secret-access-key": secret,
                               "s3.access-key-id": "AKIA"})
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    assert secret not in repr(catalog) and secret not in repr(table.io)
    assert not any(secret in v for v in table.properties.values())
    assert secret not in Path(table.metadata_location).read_text()
    catalog.close()
    with pytest.raises(ValidationError) as caught:
        SqlCatalog("c", {"uri": f"nosuchdb://user:{secret}@host/db"})
    assert secret not in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        SqlCatalog("c", {"uri": f"::user:{secret}@@"})
    assert secret not in str(caught.value)


def test_catalogs_satisfy_the_protocol(catalog: BaseCatalog) -> None:
    as_protocol: Catalog = catalog  # checked by mypy
    committer: TableCommitter = catalog
    assert as_protocol.name == "test" and committer is catalog


def test_a_table_pickles_with_its_catalog(catalog: BaseCatalog) -> None:
    """A pickled table (e.g. in a Spark Connect foreachBatch function) reconnects to its
    catalog where it is unpickled, and commits there."""
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", SCHEMA)
    copy = pickle.loads(pickle.dumps(table))
    assert type(copy) is type(table) and copy.metadata == table.metadata
    copy.set_properties(by="copy")
    assert catalog.load_table("db.t").properties == {"by": "copy"}
    again = pickle.loads(pickle.dumps(catalog))
    assert (type(again), again.name, again.properties) == (
        type(catalog), catalog.name, catalog.properties)


def test_sql_registers_a_gzip_metadata_file(sql_catalog: BaseCatalog, tmp_path: Path) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", SCHEMA)
    packed = tmp_path / "00007-3f0f1c56-2f0e-4c1b-9d59-8a5d2a1c7e11.gz.metadata.json"
    packed.write_bytes(gzip.compress(Path(table.metadata_location).read_bytes()))
    registered = sql_catalog.register_table("db.packed", str(packed))
    assert registered.metadata == table.metadata
    assert sql_catalog.commit_table(("db", "packed"), [], []).metadata_location == str(packed)
    result = sql_catalog.commit_table(("db", "packed"), [], [u.SetProperties({"a": "b"})])
    assert Path(result.metadata_location).name.startswith("00008-")
    assert Path(result.metadata_location).parent == Path(table.location) / "metadata"
