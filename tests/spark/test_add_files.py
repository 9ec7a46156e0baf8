"""``ips.add_files``, ``ips.snapshot`` and ``ips.migrate`` on what Spark users have: folders of
Parquet files Spark wrote with ``partitionBy``, read back through ``ips.read`` and compared
with Spark reading the folder itself."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import icepark
import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.errors import ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> BaseCatalog:
    catalog = icepark.load_catalog("imports", type="sql",
                                   uri=f"sqlite:///{tmp_path}/catalog.db",
                                   warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    ips.configure(spark, catalog=catalog)
    return catalog


def events(spark: SparkSession, n: int = 200) -> DataFrame:
    return spark.sql(
        f"SELECT id, IF(id % 10 = 0, NULL, concat('n', id)) AS name, "
        f"TIMESTAMP '2024-03-01 00:00:00' + make_interval(0, 0, 0, 0, id) AS ts, "
        f"DATE '2024-03-01' + CAST(id % 3 AS INT) AS dt, IF(id % 2 = 0, 'a', 'b') AS kind "
        f"FROM range({n})")


def spark_folder(spark: SparkSession, path: Path, n: int = 200) -> str:
    """A Hive-style folder as Spark writes it: ``dt=.../kind=.../part-*.parquet``."""
    events(spark, n).repartition(2).write.partitionBy("dt", "kind").parquet(str(path))
    return str(path)


def collected(df: DataFrame) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def digest(root: str) -> dict[str, str]:
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


def test_add_files_brings_a_spark_folder_into_a_partitioned_table(
        spark: SparkSession, catalog: BaseCatalog, tmp_path: Path) -> None:
    source = spark_folder(spark, tmp_path / "source")
    expected = collected(spark.read.parquet(source).select("id", "name", "ts", "dt", "kind"))
    table = catalog.create_table("db.events", events(spark, 1).schema,
                                 partition_spec=["dt", "kind"])

    result = ips.add_files(spark, "db.events", source)

    assert result.added_records == 200 and result.changed_partitions == 6
    assert result.added_files == sum(1 for p in Path(source).rglob("*.parquet"))
    assert collected(ips.read(spark, "db.events")) == expected
    pruned = table.refresh().scan("dt = '2024-03-02' AND kind = 'a'").plan_files()
    assert {t.data_file.partition for t in pruned} == {(19784, "a")}
    assert collected(ips.read(spark, "db.events", row_filter="id >= 190")) == expected[190:]
    with pytest.raises(ValidationError, match=r"^Cannot add \d+ file\(s\) already in table "
                                              r"db\.events: "):
        ips.add_files(spark, "db.events", source)


def test_snapshot_references_the_folder_and_purge_deletes_none_of_it(
        spark: SparkSession, catalog: BaseCatalog, tmp_path: Path) -> None:
    source = spark_folder(spark, tmp_path / "source")
    before = digest(source)
    expected = collected(spark.read.parquet(source))

    result = ips.snapshot(spark, source, "db.snap")

    assert result.table.properties["gc.enabled"] == "false"
    assert [f.name for f in result.table.schema().fields] == ["id", "name", "ts", "dt", "kind"]
    assert collected(ips.read(spark, "db.snap")) == expected
    ips.write(events(spark, 5), "db.snap")
    ips.delete(spark, "db.snap", "id < 100")
    catalog.load_table("db.snap").expire_snapshots(older_than_ms=2**62, retain_last=1)
    catalog.drop_table("db.snap", purge=True)
    assert digest(source) == before


def test_migrate_turns_the_folder_into_the_table(spark: SparkSession, catalog: BaseCatalog,
                                                 tmp_path: Path) -> None:
    source = spark_folder(spark, tmp_path / "events")
    expected = collected(spark.read.parquet(source))

    result = ips.migrate(spark, source, "db.events")

    assert result.table.location == source and os.path.isdir(os.path.join(source, "metadata"))
    assert collected(ips.read(spark, "db.events")) == expected
    ips.write(events(spark, 3), "db.events")
    assert ips.read(spark, "db.events").count() == 203
    assert ips.read(spark, "db.events", row_filter="kind = 'a' AND dt = '2024-03-01'").count() \
        == sum(1 for r in expected if r["kind"] == "a" and str(r["dt"]) == "2024-03-01") + 1
