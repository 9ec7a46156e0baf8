"""Table commands run as a user would: create from schema JSON, describe with field IDs,
properties, rename, drop, history/snapshots/files and expire-snapshots; bad input fails with one
line and the documented exit code. None of these start Spark."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa

from icepark.catalog import BaseCatalog
from tests.cli.cli_helpers import json_out, one_error_line
from tests.cli.conftest import Run

SCHEMA = {"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
    {"id": 3, "name": "kind", "required": False, "type": "string"},
    {"id": 4, "name": "device", "required": False, "type": {
        "type": "struct", "fields": [{"id": 5, "name": "os", "required": False,
                                      "type": "string"}]}},
]}


def _create_events(icepark_cli: Run, tmp_path: Path,
                   partition_by: str = "day(ts), bucket(8, id), kind") -> None:
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA), encoding="utf-8")
    result = icepark_cli("create", "db.events", "--schema", str(schema_file),
                         "--partition-by", partition_by,
                         "--sort-by", "ts desc", "--set", "owner=ana")
    assert result.returncode == 0, result.stderr
    assert "created table db.events" in result.stdout
    assert "created namespace db" in result.stderr


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "ts": pa.array([1_709_251_200_000_000 + i for i in range(n)], pa.timestamp("us", "UTC")),
        "kind": pa.array(["click"] * n),
        "device": pa.array([{"os": "linux"}] * n),
    })


def test_create_from_schema_json_and_describe(icepark_cli: Run, tmp_path: Path,
                                               default_catalog: BaseCatalog) -> None:
    _create_events(icepark_cli, tmp_path)
    table = default_catalog.load_table("db.events")
    assert [f.name for f in table.spec().fields] == ["ts_day", "id_bucket", "kind"]
    assert table.properties["owner"] == "ana"
    assert table.schema().identifier_field_ids == (1,)

    text = icepark_cli("describe", "db.events")
    assert text.returncode == 0, text.stderr
    for line in ("1: id: required long", "4: device: optional struct<5: os: optional string>",
                 "partition spec 0: 1000: ts_day = day(ts), 1001: id_bucket = bucket[8](id), "
                 "1002: kind = identity(kind)",
                 "sort order 1: ts desc nulls-last", "owner = ana", "current snapshot: none"):
        assert line in text.stdout, text.stdout
    doc = json_out(icepark_cli("describe", "db.events", "--json"))
    assert doc["table"] == "db.events" and doc["format_version"] == 2
    assert [(f["id"], f["name"]) for f in doc["schema"]["fields"]] == [
        (1, "id"), (2, "ts"), (3, "kind"), (4, "device")]
    assert doc["partition_spec"]["fields"][1] == {"source-id": 1, "field-id": 1001,
                                                  "name": "id_bucket",
                                                  "transform": "bucket[8]"}
    assert doc["current_snapshot"] is None and doc["properties"] == {"owner": "ana"}
    assert json_out(icepark_cli("schema", "db.events", "--json"))["fields"][3]["type"][
        "fields"][0]["id"] == 5

    inline = icepark_cli("create", "db.small", "--schema",
                         '{"type": "struct", "fields": [{"id": 7, "name": "x", '
                         '"required": false, "type": "decimal(9, 2)"}]}', "--json")
    assert json_out(inline)["created"] == "db.small"
    assert str(default_catalog.load_table("db.small").schema().fields[0]) == (
        "1: x: optional decimal(9,2)")  # fresh IDs
    assert doc["next_row_id"] is None and "next row ID" not in text.stdout


def test_describe_shows_a_v3_tables_next_row_id(icepark_cli: Run,
                                                default_catalog: BaseCatalog) -> None:
    created = icepark_cli("create", "db.v3", "--format-version", "3", "--schema",
                          '{"type": "struct", "fields": [{"id": 1, "name": "id", '
                          '"required": true, "type": "long"}]}')
    assert created.returncode == 0, created.stderr
    default_catalog.load_table("db.v3").append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert "next row ID: 2" in icepark_cli("describe", "db.v3").stdout
    assert json_out(icepark_cli("describe", "db.v3", "--json"))["next_row_id"] == 2


def test_properties_rename_and_drop(icepark_cli: Run, tmp_path: Path,
                                    default_catalog: BaseCatalog) -> None:
    _create_events(icepark_cli, tmp_path)
    assert icepark_cli("properties", "set", "db.events", "a=1", "b=two").stdout.strip() == (
        "set 2 properties on db.events")
    assert icepark_cli("properties", "get", "db.events", "b").stdout.strip() == "two"
    assert json_out(icepark_cli("properties", "get", "db.events", "--json")) == [
        {"key": "a", "value": "1"}, {"key": "b", "value": "two"}, {"key": "owner",
                                                                 "value": "ana"}]
    removed = icepark_cli("properties", "remove", "db.events", "a", "zzz", "--json")
    assert json_out(removed)["properties"] == {"b": "two", "owner": "ana"}
    missing = icepark_cli("properties", "get", "db.events", "a")
    assert missing.returncode == 3
    assert one_error_line(missing) == "Table db.events has no property 'a'"
    assert dict(default_catalog.load_table("db.events").properties) == {"b": "two",
                                                                       "owner": "ana"}

    assert icepark_cli("namespaces", "create", "prod").returncode == 0
    renamed = icepark_cli("rename", "db.events", "prod.events")
    assert renamed.stdout.strip() == "renamed table db.events to prod.events"
    gone = icepark_cli("describe", "db.events")
    assert gone.returncode == 3 and one_error_line(gone) == "Table does not exist: db.events"
    assert icepark_cli("properties", "get", "prod.events", "b").stdout.strip() == "two"
    assert icepark_cli("create", "prod.events", "--schema", json.dumps(SCHEMA)).returncode == 4

    dropped = icepark_cli("drop", "prod.events", "--purge", "--json")
    assert json_out(dropped) == {"dropped": "prod.events", "purged": True}
    assert not default_catalog.table_exists("prod.events")
    again = icepark_cli("drop", "prod.events")
    assert again.returncode == 3 and "prod.events" in one_error_line(again)


def test_history_snapshots_files_and_expiry(icepark_cli: Run, tmp_path: Path,
                                            default_catalog: BaseCatalog) -> None:
    _create_events(icepark_cli, tmp_path, partition_by="kind")
    table = default_catalog.load_table("db.events")
    for i in range(3):
        table.append(_rows(5, start=10 * i))
    table.delete("id < 10")  # the first append's file is removed whole
    snapshot_ids = [s.snapshot_id for s in table.snapshots()]

    history = json_out(icepark_cli("history", "db.events", "--json"))
    assert [h["snapshot_id"] for h in history] == snapshot_ids
    assert all(h["is_current_ancestor"] for h in history)
    snapshots = json_out(icepark_cli("snapshots", "db.events", "--json"))
    assert [s["operation"] for s in snapshots] == ["append", "append", "append", "delete"]
    assert snapshots[-1]["summary"]["total-records"] == "10"
    text = icepark_cli("snapshots", "db.events").stdout.splitlines()
    assert text[0].split() == ["committed_at", "snapshot_id", "parent_id", "operation",
                               "added_records", "total_records", "total_data_files"]
    assert len(text) == 2 + 4

    files = json_out(icepark_cli("files", "db.events", "--json"))
    assert sorted(f["record_count"] for f in files) == [5, 5]
    assert all(f["file_path"].endswith(".parquet") and f["partition"]["kind"] == "click"
               for f in files)
    assert files[0]["readable_metrics"]["device.os"]["lower_bound"] == "linux"
    first = json_out(icepark_cli("files", "db.events", "--snapshot", str(snapshot_ids[0]),
                                 "--json"))
    assert [f["record_count"] for f in first] == [5]
    first_file = Path(first[0]["file_path"].removeprefix("file://"))
    assert first_file.exists()
    listed = icepark_cli("files", "db.events")
    assert listed.stdout.splitlines()[0].split() == [
        "content", "file_path", "partition", "record_count", "file_size_in_bytes"]

    dry = json_out(icepark_cli("expire-snapshots", "db.events", "--older-than", "0s",
                               "--retain-last", "1", "--dry-run", "--json"))
    assert dry["expired_snapshot_ids"] == sorted(snapshot_ids[:3])
    assert len(table.refresh().snapshots()) == 4
    expired = icepark_cli("expire-snapshots", "db.events", "--older-than",
                          str(int(time.time() * 1000) + 1000), "--retain-last", "1")
    assert expired.returncode == 0, expired.stderr
    assert expired.stdout.startswith("expired 3 snapshots, deleted ")
    assert [s.snapshot_id for s in table.refresh().snapshots()] == snapshot_ids[3:]
    assert not first_file.exists()  # only the expired snapshots reached it


def test_bad_input_exits_2_with_one_line(icepark_cli: Run, tmp_path: Path) -> None:
    _create_events(icepark_cli, tmp_path)
    (tmp_path / "notes.txt").write_text("id\n1\n", encoding="utf-8")
    cases = [
        (("create", "db.x", "--schema", "{not json"), "--schema is not valid JSON"),
        (("create", "db.x", "--schema", '{"fields": []}'),
         "Schema is missing required field 'type'"),
        (("create", "db.x", "--schema", json.dumps(SCHEMA), "--partition-by", "hour(kind)"),
         "Cannot partition"),
        (("create", "db.x", "--schema", json.dumps(SCHEMA), "--partition-by", "bucket(id)"),
         "Invalid --partition-by clause 'bucket(id)': bucket needs a number and a column"),
        (("create", "db.x", "--schema", json.dumps(SCHEMA), "--partition-by", "nope"),
         "Invalid --partition-by: the table has no column 'nope'"),
        (("create", "events", "--schema", json.dumps(SCHEMA)), "needs a namespace"),
        (("properties", "set", "db.events", "noequals"), "Invalid property 'noequals'"),
        (("expire-snapshots", "db.events", "--older-than", "yesterday"),
         "Invalid --older-than 'yesterday'"),
        (("query", "db.events", "--where", "kind = = 'a'"), "Cannot parse filter"),
        (("query", "db.events", "--where", "nope = 1"), "nope"),
        (("query", "db.events", "--columns", "id,nope"), "nope"),
        (("query", "db.events", "--as-of", "soon"), "Invalid --as-of 'soon'"),
        (("delete", "db.events", "--where", "id >"), "Cannot parse filter"),
        (("ingest", "db.events", str(tmp_path / "notes.txt")), "Cannot tell the input format"),
    ]
    for args, expected in cases:
        result = icepark_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert expected in one_error_line(result), (args, result.stderr)
        assert "Spark" not in result.stderr  # checked before Spark starts

    for args in (("query", "db.nope"), ("delete", "db.nope", "--where", "id = 1"),
                 ("ingest", "db.events", str(tmp_path / "missing.csv")),
                 ("create", "db.y", "--schema", str(tmp_path / "missing.json"))):
        result = icepark_cli(*args)
        assert result.returncode == 3, (args, result.stderr)
        one_error_line(result)
    assert icepark_cli("query", "db.events", "--limit", "x").returncode == 2
    assert icepark_cli("expire-snapshots", "db.events", "--retain-last", "0").returncode == 2
