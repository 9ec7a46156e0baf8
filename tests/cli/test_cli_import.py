"""``icepark add-files`` and ``icepark migrate`` run as a user would: one result line (or one
JSON document), one error line with the documented exit code, and the table's rows equal to
what pyarrow reads from the files. Neither command starts Spark."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icepark.catalog import BaseCatalog
from tests.cli.cli_helpers import json_out, one_error_line
from tests.cli.conftest import Run

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("kind", pa.string())])


def write(path: Path, ids: range, schema: pa.Schema = SCHEMA) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids), "kind": [f"k{i % 2}" for i in ids]},
                            schema=schema), path)
    return str(path)


def hive_folder(root: Path) -> list[str]:
    """``dt=2024-03-0N/part-0.parquet`` files without the ``dt`` column, as Hive lays them out."""
    return [write(root / f"dt=2024-03-0{day}" / "part-0.parquet", range(day * 10, day * 10 + 3))
            for day in (1, 2)]


def snapshot_id(catalog: BaseCatalog, name: str) -> int:
    snapshot = catalog.load_table(name).current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def test_add_files_adds_a_folder_once(icepark_cli: Run, tmp_path: Path,
                                      default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.events", SCHEMA.append(pa.field("dt", pa.date32())),
                                 partition_spec=["dt"])
    files = hive_folder(tmp_path / "src")

    result = icepark_cli("add-files", "db.events", "src")

    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"added to db.events: 2 files, 6 rows in 2 partitions (snapshot "
                             f"{snapshot_id(default_catalog, 'db.events')})\n")
    assert result.stderr.startswith("done in ")
    rows = default_catalog.load_table("db.events").scan().to_arrow().sort_by("id")
    expected = [{**r, "dt": dt.date(2024, 3, day)} for day, f in zip((1, 2), files, strict=True)
                for r in pq.read_table(f).to_pylist()]
    assert rows.to_pylist() == expected

    again = icepark_cli("add-files", "db.events", "src")
    assert again.returncode == 2
    assert one_error_line(again) == (
        f"Cannot add 2 file(s) already in table db.events: {files[0]}, {files[1]} (a file "
        "listed twice is read twice); to add them anyway, pass --no-check-duplicate-files")

    forced = json_out(icepark_cli("add-files", "db.events", files[0], "--json",
                                  "--no-check-duplicate-files"))
    assert forced == {"table": "db.events", "snapshot_id": snapshot_id(default_catalog,
                                                                       "db.events"),
                      "added_files": 1, "added_records": 3, "changed_partitions": 1}


def test_add_files_takes_a_partition_filter(icepark_cli: Run, tmp_path: Path,
                                            default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.events", SCHEMA.append(pa.field("dt", pa.date32())),
                                 partition_spec=["dt"])
    hive_folder(tmp_path / "src")
    doc = json_out(icepark_cli("add-files", "db.events", "src", "--partition-filter",
                               "dt=2024-03-02", "--json"))
    assert (doc["added_files"], doc["added_records"]) == (1, 3)


def test_add_files_errors_name_the_file_and_exit_with_their_code(
        icepark_cli: Run, tmp_path: Path, default_catalog: BaseCatalog) -> None:
    default_catalog.create_namespace("db")
    default_catalog.create_table("db.events", SCHEMA)
    wrong = str(tmp_path / "wrong.parquet")
    pq.write_table(pa.table({"id": ["1"], "kind": ["a"]}), wrong)
    cases = [
        (("add-files", "db.nope", "wrong.parquet"), 3, "Table does not exist: db.nope"),
        (("add-files", "db.events", "missing.parquet"), 3,
         "File does not exist: missing.parquet"),
        (("add-files", "db.events", "wrong.parquet"), 2,
         f"Cannot read id of {wrong}: the file's string cannot be read as long"),
        (("add-files", "db.events", "wrong.parquet", "--partition-filter", "dt"), 2,
         "Invalid --partition-filter 'dt': write key=value"),
    ]
    for args, code, message in cases:
        result = icepark_cli(*args)
        assert (result.returncode, one_error_line(result)) == (code, message), args
    assert default_catalog.load_table("db.events").current_snapshot() is None


def test_migrate_makes_a_folder_the_table_in_place(icepark_cli: Run, tmp_path: Path,
                                                   default_catalog: BaseCatalog) -> None:
    files = hive_folder(tmp_path / "events")

    result = icepark_cli("migrate", "events", "db.events")

    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"migrated events to db.events in place: 2 files, 6 rows in 2 "
                             f"partitions (snapshot {snapshot_id(default_catalog, 'db.events')})"
                             "\n")
    assert "created namespace db" in result.stderr
    table = default_catalog.load_table("db.events")
    assert table.location == str(tmp_path / "events")
    assert (tmp_path / "events" / "metadata").is_dir()
    assert table.scan().to_arrow().sort_by("id").to_pylist() == [
        {**r, "dt": dt.date(2024, 3, day)} for day, f in zip((1, 2), files, strict=True)
        for r in pq.read_table(f).to_pylist()]

    again = icepark_cli("migrate", "events", "db.again")
    assert again.returncode == 4
    assert one_error_line(again) == ("events already has a metadata directory: is it an "
                                     "Iceberg table? (register its metadata file instead)")
    missing = icepark_cli("migrate", "nowhere", "db.x")
    assert (missing.returncode, one_error_line(missing)) == (3, "File does not exist: nowhere")
    located = icepark_cli("migrate", "events", "db.x", "--location", "elsewhere")
    assert (located.returncode, one_error_line(located)) == (
        2, "--location applies to --snapshot only: a migrated table's location is PATH")


def test_migrate_snapshot_leaves_the_folder_as_it_is(icepark_cli: Run, tmp_path: Path,
                                                     default_catalog: BaseCatalog) -> None:
    hive_folder(tmp_path / "src")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "src").rglob("*"))

    doc = json_out(icepark_cli("migrate", "src", "db.snap", "--snapshot", "--set", "owner=ana",
                               "--json"))

    table = default_catalog.load_table("db.snap")
    assert doc == {"table": "db.snap", "mode": "snapshot", "location": table.location,
                   "snapshot_id": snapshot_id(default_catalog, "db.snap"), "added_files": 2,
                   "added_records": 6, "changed_partitions": 2}
    assert table.location == str(tmp_path / "warehouse" / "db.db" / "snap")
    assert dict(table.properties) | {} == {
        "owner": "ana", "gc.enabled": "false",
        "schema.name-mapping.default": table.properties["schema.name-mapping.default"]}
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "src").rglob("*")) == before
    dropped = icepark_cli("drop", "db.snap", "--purge")
    assert dropped.returncode == 0, dropped.stderr
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "src").rglob("*")) == before


def test_a_folder_that_cannot_be_one_table_creates_nothing(icepark_cli: Run, tmp_path: Path,
                                                          default_catalog: BaseCatalog) -> None:
    a = write(tmp_path / "src" / "dt=2024-03-01" / "a.parquet", range(3))
    b = write(tmp_path / "src" / "b.parquet", range(3, 5))
    result = icepark_cli("migrate", "src", "db.events")
    assert result.returncode == 2
    assert one_error_line(result) == (f"Cannot make one table of src: its files are not "
                                      f"partitioned alike ({b} is in directories none, {a} in "
                                      "dt=...)")
    assert not default_catalog.namespace_exists("db")  # created for it, and removed again
    assert not (tmp_path / "src" / "metadata").exists()
