"""``import icepark.spark as ips``: tables by identifier in the session's catalog, creation on
write, and typed errors for what a user gets wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import icepark
import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.errors import NoSuchTable, ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> BaseCatalog:
    catalog = icepark.load_catalog("front", type="sql",
                                   uri=f"sqlite:///{tmp_path}/catalog.db",
                                   warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    ips.configure(spark, catalog=catalog)
    return catalog


def _events(spark: SparkSession, n: int = 20):  # type: ignore[no-untyped-def]
    return spark.sql(f"SELECT id, IF(id % 5 = 0, 'spam', 'click') AS kind, "
                     f"TIMESTAMP '2024-03-01 00:00:00' + make_interval(0, 0, 0, id) AS ts "
                     f"FROM range({n})")


def test_write_creates_read_and_delete_by_identifier(spark: SparkSession,
                                                     catalog: BaseCatalog) -> None:
    table = ips.write(_events(spark), "db.events", create=True,
                      partition_by=["day(ts)", "bucket(4, id)"], sort_by="id",
                      properties={"owner": "ana"})
    assert [f.name for f in table.spec().fields] == ["ts_day", "id_bucket"]
    assert catalog.load_table("db.events").properties["owner"] == "ana"
    assert ips.read(spark, "db.events").count() == 20
    ips.write(_events(spark), "db.events", create=True, partition_by=["kind"])  # exists: append
    assert [f.name for f in ips.load_table(spark, "db.events").spec().fields] == [
        "ts_day", "id_bucket"]
    result = ips.delete(spark, "db.events", "kind = 'spam'")
    assert result.deleted_rows == 8
    rows = ips.read(spark, ("db", "events"), row_filter="id < 3", columns=["id"]).collect()
    assert sorted(r.id for r in rows) == [1, 1, 2, 2]
    history = ips.metadata_table(spark, "db.events", "snapshots").count()
    assert history == 3


def test_a_table_object_is_accepted_everywhere(spark: SparkSession,
                                               catalog: BaseCatalog) -> None:
    table = catalog.create_table("db.t", _events(spark, 1).schema)
    table = ips.write(_events(spark, 4), table)
    assert ips.read(spark, table).count() == 4
    first = table.current_snapshot()
    assert first is not None
    table = ips.write(_events(spark, 2), table)
    assert ips.read_incremental(spark, table, first.snapshot_id).count() == 2


def test_a_missing_table_says_how_to_create_it(spark: SparkSession,
                                               catalog: BaseCatalog) -> None:
    with pytest.raises(NoSuchTable, match=r"db\.nope.*; pass create=True to create it"):
        ips.write(_events(spark), "db.nope")
    with pytest.raises(NoSuchTable):
        ips.read(spark, "db.nope")
    assert not catalog.table_exists("db.nope")


def test_identifiers_may_name_the_catalog_and_a_wrong_one_says_so(
        spark: SparkSession, catalog: BaseCatalog) -> None:
    catalog.create_table("db.t", _events(spark, 1).schema)
    assert ips.load_table(spark, "front.db.t").name == ips.load_table(spark, "db.t").name
    with pytest.raises(NoSuchTable) as raised:
        ips.read(spark, "prod.db.t")
    assert str(raised.value) == (
        "Table prod.db.t does not exist: the session's catalog is 'front', which has no "
        "namespace 'prod'; if 'prod' is a catalog, use ips.configure(spark, catalog='prod') "
        "and name the table 'db.t'")


def test_a_wrong_table_argument_is_a_typed_error(spark: SparkSession,
                                                 catalog: BaseCatalog) -> None:
    with pytest.raises(ValidationError, match="must be an icepark Table or an identifier"):
        ips.read(spark, 42)  # type: ignore[arg-type]


def test_configure_by_catalog_name_and_properties(spark: SparkSession, tmp_path: Path) -> None:
    warehouse = tmp_path / "named"
    ips.configure(spark, "named", type="sql", uri=f"sqlite:///{tmp_path}/named.db",
                  warehouse=str(warehouse))
    ips.session_catalog(spark).create_namespace("db")
    ips.write(_events(spark, 3), "db.t", create=True)
    assert (warehouse / "db.db" / "t" / "metadata").is_dir()
    with pytest.raises(ValidationError, match="catalog properties with a catalog name"):
        ips.configure(spark, ips.session_catalog(spark), uri="sqlite://")


def test_task_modules_do_not_import_the_whole_front_door() -> None:
    """Python workers import the module of their task; the package's front door must not
    drag the catalog, the readers and the data source in with it (0.5 s per worker)."""
    code = ("import sys, icepark.spark.writer.tasks, icepark.spark.rowlevel.delete_tasks; "
            "print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy', "
            "'icepark.catalog', 'icepark.spark.reader', 'icepark.spark.datasource'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=120)
    assert result.stdout.strip() == "[]"
