"""Existing Parquet files into Iceberg tables without Spark: ``add_files``, and the tables
``snapshot_table`` and ``migrate_table`` make of a directory; read back by icepark and
pyiceberg, and compared with pyarrow reading the files themselves."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

from icepark.catalog import BaseCatalog, load_catalog
from icepark.catalog.imports import migrate_table, snapshot_table
from icepark.errors import AlreadyExists, FileNotFound, ValidationError
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY
from icepark.io.arrow.schema import field_metadata
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import snapshot_manifests
from icepark.spec.bounds import from_bytes
from icepark.spec.manifest import DataFile
from icepark.spec.types import LONG
from icepark.table.change.metadata_builder import now_ms
from icepark.table.imports.add_files import AddFiles, add_files, read_files
from icepark.table.imports.sources import find_files
from icepark.table.table import Table

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("ts", pa.timestamp("us", tz="UTC"))])


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = load_catalog("imports", type="sql", uri=f"sqlite:///{warehouse}/catalog.db",
                           warehouse=str(warehouse))
    catalog.create_namespace("db")
    return catalog


def at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2024, 3, day, hour, tzinfo=dt.UTC)


def write(path: Path, table: pa.Table, **options: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **options)
    return str(path)


def events(ids: range, day: int = 1, schema: pa.Schema = EVENTS) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"n{i}" for i in ids],
                     "ts": [at(day, i % 24) for i in ids]}, schema=schema)


def rows(table: Table, row_filter: str = "true", key: str = "id") -> list[dict[str, Any]]:
    return sorted(table.scan(row_filter).to_arrow().to_pylist(), key=lambda r: r[key])


def data_files(table: Table) -> dict[str, DataFile]:
    """The current snapshot's data files with all their metrics, by location."""
    return {e.data_file.file_path: e.data_file
            for m in snapshot_manifests(table.io, table.current_snapshot())
            for e in read_manifest(table.io, m, discard_deleted=True)}


def planned(table: Table, row_filter: str) -> list[str]:
    return sorted(t.data_file.file_path for t in table.scan(row_filter).plan_files())


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def pyiceberg_rows(catalog: BaseCatalog, name: str) -> list[dict[str, Any]]:
    peer = PySqlCatalog(catalog.name, uri=catalog.properties["uri"],
                        warehouse=catalog.properties["warehouse"])
    return sorted(peer.load_table(name).scan().to_arrow().to_pylist(), key=lambda r: r["id"])


# ----------------------------------------------------------------------------- add_files


def test_files_are_added_in_place_with_metrics_that_prune_scans(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    source = tmp_path / "source"
    paths = [write(source / f"part-{i}.parquet", events(range(i * 100, i * 100 + 100)))
             for i in range(3)]
    (source / "_SUCCESS").write_text("")
    (source / ".part-0.parquet.crc").write_text("x")
    table = catalog.create_table("db.events", EVENTS)

    result = add_files(table, str(source))

    assert (result.added_files, result.added_records, result.changed_partitions) == (3, 300, 1)
    snapshot = table.current_snapshot()
    assert snapshot is not None and result.snapshot_id == snapshot.snapshot_id
    assert snapshot.summary is not None and snapshot.summary.operation.value == "append"
    assert snapshot.summary.properties["added-data-files"] == "3"
    assert planned(table, "id >= 250") == [paths[2]]
    first = data_files(table)[paths[0]]
    assert first.file_size_in_bytes == os.path.getsize(paths[0])
    assert (first.value_counts or {})[1] == 100 and (first.null_value_counts or {})[2] == 0
    assert from_bytes(LONG, (first.lower_bounds or {})[1]) == 0
    assert from_bytes(LONG, (first.upper_bounds or {})[1]) == 99
    expected = pq.read_table(source).to_pylist()
    assert rows(table) == sorted(expected, key=lambda r: r["id"])
    assert pyiceberg_rows(catalog, "db.events") == rows(table)
    assert sorted(os.listdir(source)) == [".part-0.parquet.crc", "_SUCCESS", "part-0.parquet",
                                          "part-1.parquet", "part-2.parquet"]


def test_metrics_follow_the_tables_metrics_modes(catalog: BaseCatalog, tmp_path: Path) -> None:
    path = write(tmp_path / "f.parquet", events(range(10)))
    table = catalog.create_table("db.events", EVENTS, properties={
        "write.metadata.metrics.default": "counts",
        "write.metadata.metrics.column.id": "full"})
    add_files(table, path)
    (data_file,) = data_files(table).values()
    assert set(data_file.lower_bounds or {}) == {1}
    assert set(data_file.value_counts or {}) == {1, 2, 3}


def test_files_without_field_ids_get_the_schemas_name_mapping(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    path = write(tmp_path / "f.parquet", events(range(5)))
    table = catalog.create_table("db.events", EVENTS)
    add_files(table, path)
    assert json.loads(table.properties[NAME_MAPPING_PROPERTY]) == [
        {"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name"]},
        {"field-id": 3, "names": ["ts"]}]


def test_a_tables_name_mapping_maps_other_column_names(catalog: BaseCatalog,
                                                       tmp_path: Path) -> None:
    mapping = json.dumps([{"field-id": 1, "names": ["id", "record_id"]},
                          {"field-id": 2, "names": ["name", "label"]},
                          {"field-id": 3, "names": ["ts"]}])
    table = catalog.create_table("db.events", EVENTS,
                                 properties={NAME_MAPPING_PROPERTY: mapping})
    other = events(range(5)).rename_columns(["record_id", "label", "ts"])
    add_files(table, write(tmp_path / "f.parquet", other))
    assert table.properties[NAME_MAPPING_PROPERTY] == mapping
    assert rows(table) == events(range(5)).to_pylist()
    assert planned(table, "id > 10") == []  # the metrics landed on field 1


def test_files_with_field_ids_map_by_id_whatever_their_names(catalog: BaseCatalog,
                                                             tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS)
    with table.update_schema() as update:
        update.rename_column("name", "label")
    with_ids = pa.schema([pa.field("id", pa.int64(), False, metadata=field_metadata(1)),
                          pa.field("name", pa.string(), metadata=field_metadata(2))])
    add_files(table, write(tmp_path / "f.parquet",
                           pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=with_ids)))
    assert NAME_MAPPING_PROPERTY not in table.properties
    assert rows(table) == [{"id": 1, "label": "a", "ts": None}, {"id": 2, "label": "b", "ts": None}]


def test_hive_directories_give_identity_partition_values(catalog: BaseCatalog,
                                                         tmp_path: Path) -> None:
    source = tmp_path / "source"
    layout = {("2024-03-01", "click"): range(0, 4), ("2024-03-01", "a b/c"): range(4, 6),
              ("2024-03-02", "click"): range(6, 9)}
    for (day, kind), ids in layout.items():
        escaped = kind.replace(" ", "%20").replace("/", "%2F")
        write(source / f"dt={day}" / f"kind={escaped}" / "part-0.parquet",
              pa.table({"id": list(ids)}, schema=pa.schema([pa.field("id", pa.int64())])))
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("kind", pa.string()),
                        pa.field("dt", pa.date32())])
    table = catalog.create_table("db.events", schema, partition_spec=["dt", "kind"])

    result = add_files(table, str(source))

    assert (result.added_files, result.changed_partitions) == (3, 3)
    expected = [{"id": i, "kind": kind, "dt": dt.date.fromisoformat(day)}
                for (day, kind), ids in layout.items() for i in ids]
    assert rows(table) == expected
    assert pyiceberg_rows(catalog, "db.events") == expected
    assert len(planned(table, "dt = '2024-03-02'")) == 1
    assert rows(table, "kind = 'a b/c'") == expected[4:6]


def test_a_partition_filter_takes_only_those_directories(catalog: BaseCatalog,
                                                         tmp_path: Path) -> None:
    for day in (1, 2):
        write(tmp_path / "src" / f"dt=2024-03-0{day}" / "f.parquet",
              events(range(day * 10, day * 10 + 3), day))
    schema = EVENTS.append(pa.field("dt", pa.date32()))
    table = catalog.create_table("db.events", schema, partition_spec=["dt"])
    result = add_files(table, str(tmp_path / "src"), partition_filter={"dt": "2024-03-02"})
    assert result.added_records == 3 and [r["id"] for r in rows(table)] == [20, 21, 22]
    with pytest.raises(ValidationError) as e:
        add_files(table, str(tmp_path / "src"), partition_filter={"dt": "2024-03-09"})
    assert str(e.value) == (f"No file in {tmp_path / 'src'} is in a partition directory "
                            "matching the partition filter dt=2024-03-09")


def test_a_folder_inside_a_partition_folder_takes_its_value_from_its_own_path(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    write(tmp_path / "src" / "dt=2024-03-02" / "hour=1" / "f.parquet", events(range(3), 2))
    schema = EVENTS.append(pa.field("dt", pa.date32()))
    table = catalog.create_table("db.events", schema, partition_spec=["dt"])
    with pytest.raises(ValidationError) as e:  # hour=1 is no column or partition
        add_files(table, str(tmp_path / "src" / "dt=2024-03-02"))
    assert "it is in directory hour=1, but 'hour' names no column" in str(e.value)
    path = write(tmp_path / "src" / "dt=2024-03-02" / "g.parquet", events(range(3, 5), 2))
    add_files(table, path)
    assert {r["dt"] for r in rows(table)} == {dt.date(2024, 3, 2)}


def test_a_partition_neither_a_column_nor_a_directory_tells_is_refused(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    schema = EVENTS.append(pa.field("dt", pa.date32()))
    table = catalog.create_table("db.events", schema, partition_spec=["dt"])
    path = write(tmp_path / "f.parquet", events(range(3)))
    with pytest.raises(ValidationError) as e:
        add_files(table, path)
    assert str(e.value) == (f"Cannot add {path}: it has no column 'dt' and is in no "
                            "'dt=<value>' directory, so its partition of identity(dt) cannot be "
                            "told (a directory dt=__HIVE_DEFAULT_PARTITION__ says null)")
    null = write(tmp_path / "dt=__HIVE_DEFAULT_PARTITION__" / "f.parquet", events(range(3)))
    add_files(table, null)
    assert {r["dt"] for r in rows(table)} == {None}


def test_bucket_partitions_come_from_the_data_only_for_a_single_value(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS, partition_spec=["bucket(4, id)"])
    single = write(tmp_path / "a.parquet", events(range(7, 8)))
    add_files(table, single)
    assert [f.partition for f in data_files(table).values()] == [(table.spec().fields[0]
                                                                  .transform.apply(LONG, 7),)]
    several = write(tmp_path / "b.parquet", events(range(1, 3)))
    with pytest.raises(ValidationError, match="fall in more than one partition of bucket"):
        add_files(table, several)


def test_a_column_missing_from_the_tables_own_name_mapping_is_named(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    mapping = json.dumps([{"field-id": 1, "names": ["id"]}])
    table = catalog.create_table("db.events", EVENTS,
                                 properties={NAME_MAPPING_PROPERTY: mapping})
    path = write(tmp_path / "f.parquet", events(range(3)))
    with pytest.raises(ValidationError) as e:
        add_files(table, path)
    assert str(e.value) == (f"Cannot add {path}: its column 'name' is not in the table's name "
                            "mapping (schema.name-mapping.default): add its name there")


def test_transform_partitions_come_from_directories_or_from_the_data(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS, partition_spec=["day(ts)"])
    named = write(tmp_path / "a" / "ts_day=2024-03-01" / "f.parquet", events(range(0, 5), 1))
    loose = write(tmp_path / "b" / "g.parquet", events(range(5, 9), 2))
    add_files(table, [named, loose])
    files = {path: f.partition for path, f in data_files(table).items()}
    day = dt.date(2024, 3, 1) - dt.date(1970, 1, 1)
    assert files == {named: (day.days,), loose: (day.days + 1,)}
    assert planned(table, "ts >= '2024-03-02T00:00:00+00:00'") == [loose]


def test_files_spanning_partitions_or_disagreeing_with_their_directory_are_refused(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS, partition_spec=["day(ts)"])
    both_days = pa.concat_tables([events(range(2), 1), events(range(2, 4), 2)])
    spanning = write(tmp_path / "spanning.parquet", both_days)
    with pytest.raises(ValidationError) as e:
        add_files(table, spanning)
    assert str(e.value) == (f"Cannot add {spanning}: its values of 'ts' fall in more than one "
                            "partition of day(ts), and a data file holds the rows of one "
                            "partition")
    wrong = write(tmp_path / "ts_day=2024-03-02" / "f.parquet", events(range(3), 1))
    with pytest.raises(ValidationError) as e:
        add_files(table, wrong)
    assert str(e.value) == (f"Cannot add {wrong}: it is in directory ts_day=2024-03-02, but its "
                            "values of 'ts' belong to partition 2024-03-01")
    assert table.current_snapshot() is None


def test_a_directory_no_partition_reads_is_refused(catalog: BaseCatalog,
                                                   tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS)
    path = write(tmp_path / "region=eu" / "f.parquet", events(range(3)))
    with pytest.raises(ValidationError) as e:
        add_files(table, path)
    assert str(e.value) == (f"Cannot add {path}: it is in directory region=eu, but 'region' "
                            "names no column or partition of the table, so the value would be "
                            "lost")


def test_duplicate_files_are_refused_unless_the_check_is_off(catalog: BaseCatalog,
                                                            tmp_path: Path) -> None:
    path = write(tmp_path / "f.parquet", events(range(3)))
    table = catalog.create_table("db.events", EVENTS)
    add_files(table, path)
    with pytest.raises(ValidationError) as e:
        add_files(table, [path, write(tmp_path / "g.parquet", events(range(3, 5)))])
    assert str(e.value) == (f"Cannot add 1 file(s) already in table db.events: {path} (a file "
                            "listed twice is read twice); to add them anyway, pass "
                            "check_duplicate_files=False")
    assert len(table.snapshots()) == 1
    add_files(table, path, check_duplicate_files=False)
    assert len(rows(table)) == 6
    with pytest.raises(ValidationError, match="is given more than once"):
        add_files(table, [str(tmp_path), path])


def test_the_duplicate_check_runs_again_after_a_concurrent_commit(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    path = write(tmp_path / "f.parquet", events(range(3)))
    table = catalog.create_table("db.events", EVENTS)
    stale = catalog.load_table("db.events")
    files = read_files(stale.io, stale.metadata, find_files(stale.io, path))
    add_files(table, path)  # another writer adds the same file first
    with pytest.raises(ValidationError, match=r"^Cannot add 1 file\(s\) already in table"):
        stale.commit(AddFiles(stale.io, stale.metadata, files, table_name=stale.name))
    assert len(rows(table.refresh())) == 3


@pytest.mark.parametrize(("data", "message"), [
    (pa.table({"id": ["1"]}), "Cannot read id of {path}: the file's string cannot be read as "
                              "long"),
    (pa.table({"id": [1], "size": [2]}), "Cannot add {path}: its column 'size' is not in the "
                                         "table's schema (add the column to the table first)"),
    (pa.table({"name": ["x"]}), "Field 'id' (id 1) is required but missing from data file "
                                "{path} and has no initial-default to fill it with"),
    (pa.table({"id": [1], "ts": pa.array([1], pa.timestamp("ns", tz="UTC"))}),
     "Cannot add {path}: its column 'ts' holds nanosecond timestamps (or Spark's legacy INT96 "
     "ones) and the table's column is not timestamp_ns; rewrite the file with microsecond "
     "timestamps (in Spark: spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS)"),
])
def test_incompatible_files_are_refused_naming_file_and_column(
        catalog: BaseCatalog, tmp_path: Path, data: pa.Table, message: str) -> None:
    table = catalog.create_table("db.events", EVENTS)
    good = write(tmp_path / "good.parquet", events(range(3)))
    path = write(tmp_path / "bad.parquet", data)
    with pytest.raises(ValidationError) as e:
        add_files(table, [good, path])
    assert str(e.value) == message.format(path=path)
    assert table.current_snapshot() is None and NAME_MAPPING_PROPERTY not in table.properties


def test_a_partition_column_of_the_wrong_type_is_named_as_such(catalog: BaseCatalog,
                                                              tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS, partition_spec=["bucket(4, id)"])
    path = write(tmp_path / "f.parquet", pa.table({"id": ["1"]}))
    with pytest.raises(ValidationError) as e:
        add_files(table, path)
    assert str(e.value) == f"Cannot read id of {path}: the file's string cannot be read as long"


def test_missing_paths_and_empty_directories(catalog: BaseCatalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS)
    with pytest.raises(FileNotFound) as missing:
        add_files(table, str(tmp_path / "nope"))
    assert str(missing.value) == f"File does not exist: {tmp_path / 'nope'}"
    (tmp_path / "empty" / "_temporary").mkdir(parents=True)
    (tmp_path / "empty" / "_temporary" / "x.parquet").write_text("")
    with pytest.raises(ValidationError) as e:
        add_files(table, str(tmp_path / "empty"))
    assert str(e.value) == (f"Directory {tmp_path / 'empty'} holds no Parquet files (*.parquet, "
                            "not starting with '_' or '.')")
    text = tmp_path / "notes.parquet"
    text.write_text("not parquet")
    with pytest.raises(ValidationError, match=rf"^Cannot add {text}: it is not a readable "):
        add_files(table, str(text))


# ----------------------------------------------------------------------------- snapshot, migrate


def hive_source(root: Path) -> pa.Table:
    """A Hive-style directory (dt=.../part-N.parquet, without the dt column) and its rows."""
    tables = []
    for day in (1, 2, 3):
        data = events(range(day * 100, day * 100 + 50), day)
        write(root / f"dt=2024-03-0{day}" / "part-0.parquet", data)
        tables.append(data.append_column("dt", pa.array([dt.date(2024, 3, day)] * 50)))
    (root / "_SUCCESS").write_text("")
    return pa.concat_tables(tables)


def test_snapshot_leaves_the_source_untouched_and_never_deletes_its_files(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    source = tmp_path / "source"
    expected = hive_source(source).to_pylist()
    before = digest(source)

    result = snapshot_table(catalog, str(source), "db.snap")

    table = result.table
    assert (result.added_files, result.added_records, result.changed_partitions) == (3, 150, 3)
    assert table.properties["gc.enabled"] == "false"
    assert [f.name for f in table.schema().fields] == ["id", "name", "ts", "dt"]
    assert str(table.spec()) == "[1000: dt: identity(4)]"
    assert rows(table) == expected == pyiceberg_rows(catalog, "db.snap")
    assert not table.location.startswith(str(source))
    table.delete("dt = '2024-03-01'")
    table.append(events(range(900, 905), 3).append_column(
        "dt", pa.array([dt.date(2024, 3, 3)] * 5)))
    expired = table.expire_snapshots(older_than_ms=now_ms() + 1000, retain_last=1)
    assert expired.deleted_data_files == () and len(expired.expired_snapshot_ids) == 2
    catalog.drop_table("db.snap", purge=True)
    assert digest(source) == before


@pytest.mark.parametrize("gc", ["true", "false"])
def test_expiry_and_purge_delete_data_files_only_when_gc_is_enabled(
        catalog: BaseCatalog, gc: str) -> None:
    table = catalog.create_table("db.t", EVENTS, properties={"gc.enabled": gc})
    table.append(events(range(3)))
    removed = [t.data_file.file_path for t in table.scan().plan_files()]
    table.delete("id >= 0")
    table.append(events(range(3, 5)))
    live = [t.data_file.file_path for t in table.scan().plan_files()]
    result = table.expire_snapshots(older_than_ms=now_ms() + 1000, retain_last=1)
    assert result.deleted_data_files == (tuple(removed) if gc == "true" else ())
    assert len(result.deleted_manifest_lists) == 2
    catalog.drop_table("db.t", purge=True)
    assert [os.path.exists(p) for p in [*removed, *live]] == [gc == "false"] * 2


def test_migrate_makes_the_directory_the_table_in_place(catalog: BaseCatalog,
                                                        tmp_path: Path) -> None:
    source = tmp_path / "events"
    expected = hive_source(source)
    files = sorted(str(p) for p in source.rglob("*.parquet"))

    result = migrate_table(catalog, str(source), "db.events")

    table = result.table
    assert table.location == str(source) and "gc.enabled" not in table.properties
    assert sorted(t.data_file.file_path for t in table.scan().plan_files()) == files
    assert rows(table) == expected.to_pylist() == pyiceberg_rows(catalog, "db.events")
    assert len(planned(table, "dt >= '2024-03-03'")) == 1
    table.append(events(range(1000, 1002), 4).append_column(
        "dt", pa.array([dt.date(2024, 3, 4)] * 2)))
    assert any(p.startswith(f"{source}/data/") for p in planned(table, "dt = '2024-03-04'"))
    assert (source / "metadata").is_dir()
    with pytest.raises(AlreadyExists) as e:
        migrate_table(catalog, str(source), "db.again")
    assert str(e.value) == (f"{source} already has a metadata directory: is it an Iceberg "
                            "table? (register its metadata file instead)")


def test_a_failed_migrate_leaves_no_table_and_no_metadata(catalog: BaseCatalog,
                                                          tmp_path: Path) -> None:
    source = tmp_path / "events"
    hive_source(source)
    bad = write(source / "dt=2024-03-09" / "part-0.parquet",
                pa.table({"id": ["x"], "name": ["y"],
                          "ts": pa.array([at(9)], pa.timestamp("us", tz="UTC"))}))
    before = digest(source)
    with pytest.raises(ValidationError) as e:
        migrate_table(catalog, str(source), "db.events")
    assert str(e.value).startswith(f"Cannot make one table of {source}: the columns of its "
                                   "files do not agree (e.g. ")
    assert bad in str(e.value)
    assert not catalog.table_exists("db.events") and digest(source) == before
    assert not (source / "metadata").exists()


def test_a_commit_failure_after_create_removes_the_table_again(
        catalog: BaseCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "events"
    hive_source(source)

    def fail(self: Table, *changes: object) -> Table:
        raise ValidationError("commit refused")

    monkeypatch.setattr(Table, "commit", fail)
    with pytest.raises(ValidationError, match="commit refused"):
        migrate_table(catalog, str(source), "db.events")
    assert not catalog.table_exists("db.events")
    assert not (source / "metadata").exists()


def test_files_with_field_ids_keep_them_in_a_new_table(catalog: BaseCatalog,
                                                       tmp_path: Path) -> None:
    schema = pa.schema([pa.field("key", pa.int64(), False, metadata=field_metadata(7)),
                        pa.field("value", pa.string(), metadata=field_metadata(3))])
    write(tmp_path / "src" / "k=1" / "a.parquet", pa.table({"key": [1], "value": ["a"]},
                                                           schema=schema))
    table = snapshot_table(catalog, str(tmp_path / "src"), "db.t").table
    assert str(table.schema()) == ("table {\n  7: key: required long\n  3: value: optional "
                                   "string\n  8: k: optional int\n}")
    assert NAME_MAPPING_PROPERTY not in table.properties
    assert rows(table, key="key") == [{"key": 1, "value": "a", "k": 1}]
    write(tmp_path / "src" / "k=2" / "b.parquet", pa.table({"key": [2], "value": ["b"]}))
    with pytest.raises(ValidationError, match=r"has Parquet field IDs and .* has none$"):
        snapshot_table(catalog, str(tmp_path / "src"), "db.t2")


def test_files_partitioned_differently_cannot_make_one_table(catalog: BaseCatalog,
                                                             tmp_path: Path) -> None:
    a = write(tmp_path / "src" / "dt=2024-03-01" / "a.parquet", events(range(3)))
    b = write(tmp_path / "src" / "b.parquet", events(range(3, 5)))
    with pytest.raises(ValidationError) as e:
        snapshot_table(catalog, str(tmp_path / "src"), "db.t")
    assert str(e.value) == (f"Cannot make one table of {tmp_path / 'src'}: its files are not "
                            f"partitioned alike ({b} is in directories none, {a} in dt=...)")
    assert not catalog.table_exists("db.t")


def test_nanosecond_files_join_a_v3_tables_timestamp_ns_columns_only(
        catalog: BaseCatalog, tmp_path: Path) -> None:
    """A v3 table created from an Arrow schema with nanosecond timestamps has a
    ``timestamp_ns`` column, takes files of them exactly, and a microsecond column still
    refuses them."""
    nanos = pa.schema([pa.field("id", pa.int64(), nullable=False),
                       pa.field("ts", pa.timestamp("ns", tz="UTC"))])
    table = catalog.create_table("db.ns", nanos, format_version=3)
    assert str(table.schema().find_field("ts").field_type) == "timestamptz_ns"
    stamp = 1_709_251_200_123_456_789
    path = write(tmp_path / "ns" / "a.parquet", pa.table(
        {"id": [1], "ts": pa.array([stamp], pa.timestamp("ns", tz="UTC"))}, schema=nanos))
    add_files(table, [path])
    got = table.refresh().scan().to_arrow()
    assert got.column("ts").cast(pa.int64()).to_pylist() == [stamp]
    micros = catalog.create_table("db.us", nanos.set(1, pa.field("ts", pa.timestamp("us"))),
                                  format_version=3)
    with pytest.raises(ValidationError, match=r"holds nanosecond timestamps .* not "
                                              r"timestamp_ns"):
        add_files(micros, [path])
