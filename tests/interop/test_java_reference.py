"""The Java reference runtime (Apache Iceberg 1.10.2 on Spark 3.5) and icepark, both ways.

Both engines share one warehouse (the reference's ``hadoop`` catalog, icepark's filesystem
catalog). For what icepark writes, the reference reads exactly our rows, snapshots, files and
partition values; for what the reference writes (SQL DML in both row-level modes, its
procedures and evolution, v3), both icepark readers (Arrow and Spark) read exactly its rows.
Alternating writers keep one valid history. The v3 deletion vectors and row lineage, both
ways, are in ``test_java_reference_v3.py``.

The reference's Spark cannot read the ``time`` type at all ("Spark does not support time
fields"), so the schemas here leave it out; pyiceberg and DuckDB check it
(``test_peers_read_our_tables``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icepark.spark as ips
from icepark.errors import UnsupportedFeature
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import FormatVersion
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import (
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    UUID,
    NestedField,
    PrimitiveType,
)
from icepark.table.inspect.files import reachable_manifests, read_entries
from icepark.table.table import Table
from tests.interop.conftest import Shared
from tests.interop.events import SCHEMA as ALL_TYPES
from tests.interop.events import rows

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(*(f for f in ALL_TYPES.fields if f.name != "at"))
"""The peers' table without its ``time`` column, which the reference's Spark cannot read."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def make_rows(ids: range) -> list[dict[str, Any]]:
    """The peers' rows without ``time``, with a NaN and a -0.0 among the floats."""
    out = [{k: v for k, v in row.items() if k != "at"} for row in rows(ids)]
    for row in out:
        if row["id"] == 7:
            row["ratio"] = float("nan")
        if row["id"] == 9:
            row["score"] = -0.0
    return out


def normal(value: Any) -> Any:
    """One form for values the engines return differently: timestamps as naive UTC, UUIDs as
    text, maps as dicts, NaN as a string (NaN != NaN)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list) and value and all(
            isinstance(v, tuple) and len(v) == 2 for v in value):
        return {normal(k): normal(v) for k, v in value}
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    return value


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((normal(r) for r in rows), key=lambda r: r["id"])


def ours_arrow(table: Table, **scan: Any) -> list[dict[str, Any]]:
    return by_id(table.refresh().scan(**scan).to_arrow().to_pylist())


def ours_spark(spark: SparkSession, table: Table, **read: Any) -> list[dict[str, Any]]:
    return by_id(ips.read(spark, table.refresh(), **read).toArrow().to_pylist())


def theirs(shared: Shared, query: str) -> list[dict[str, Any]]:
    return by_id(shared.reference.rows(query))


def live_files(table: Table) -> list[DataFile]:
    table = table.refresh()
    return [e.data_file for entries in read_entries(
        table.io, table.metadata, list(reachable_manifests(table)), live=True)
        for e in entries]


def append(table: Table, rows: list[dict[str, Any]]) -> Table:
    table.refresh().append(pa.Table.from_pylist(rows, schema=to_arrow_schema(table.schema())))
    return table.refresh()


# ----------------------------------------------------------------------- icepark writes


@pytest.mark.parametrize("version", [1, 2])
def test_the_reference_reads_exactly_what_icepark_writes(shared: Shared,
                                                        version: FormatVersion) -> None:
    """Every type but time, identity/bucket/truncate/day partitions, then schema evolution and
    partition evolution (year, month, hour): rows, snapshots, files and partition values."""
    spec = (PartitionSpecBuilder(SCHEMA).identity("flag").bucket("id", 8).truncate("name", 2)
            .day("ts").build())
    table = shared.ours.create_table(shared.ident("t"), SCHEMA, partition_spec=spec,
                                     format_version=version)
    assert [f.name for f in table.spec().fields] == ["flag", "id_bucket", "name_trunc", "ts_day"]
    first = make_rows(range(40))
    table = append(table, first)
    with table.update_schema() as update:
        update.rename_column("device.os", "os_name").add_column("country", STRING)
    with table.refresh().update_spec() as evolve:
        evolve.add_field("day", "year").add_field("local_ts", "month")
        evolve.remove_field("ts_day").add_field("ts", "hour")
    second = make_rows(range(40, 60))
    for row in second:
        row["country"] = ["NL", None][row["id"] % 2]
    for row in (*first, *second):
        if row["device"] is not None:
            row["device"] = {"os_name": row["device"]["os"], "version": row["device"]["version"]}
    table = append(table, second)
    expected = by_id([{**r, "country": None} for r in first] + second)

    assert theirs(shared, f"SELECT * FROM {shared.ref('t')}") == expected
    assert ours_arrow(table) == expected
    ref_snapshots = shared.reference.rows(
        f"SELECT snapshot_id, parent_id, operation FROM {shared.ref('t')}.snapshots")
    assert [(s["snapshot_id"], s["parent_id"]) for s in ref_snapshots] == [
        (s.snapshot_id, s.parent_snapshot_id) for s in table.snapshots()]
    ref_files = {f["file_path"]: f for f in shared.reference.rows(
        f"SELECT file_path, record_count, spec_id, partition FROM {shared.ref('t')}.files")}
    ours = {f.file_path: f for f in live_files(table)}
    assert set(ref_files) == set(ours)
    specs = {s.spec_id: s for s in table.metadata.partition_specs}
    latest = {f.field_id: f.name for s in table.metadata.partition_specs for f in s.fields}
    for path, f in ours.items():
        ref = ref_files[path]
        assert (ref["record_count"], ref["spec_id"]) == (f.record_count, f.spec_id)
        partition = {  # by each field's latest name, as the reference shows them; days as dates
            latest[field.field_id]: EPOCH.date() + timedelta(days=value)
            if str(field.transform) == "day" and value is not None else value
            for field, value in zip(specs[f.spec_id].fields, f.partition, strict=True)
            if str(field.transform) != "void"}
        assert {k: v for k, v in ref["partition"].items() if k in partition} == partition


def test_the_reference_reads_icepark_deletes_time_travel_and_refs(
        spark: SparkSession, shared: Shared) -> None:
    """Position deletes (icepark's Spark merge-on-read), equality deletes and whole-file
    deletes; older snapshots, a branch and a tag read the same in both engines."""
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))
    table = shared.ours.create_table(
        shared.ident("d"), schema, partition_spec=PartitionSpecBuilder(schema).identity("k")
        .build(), properties={"write.delete.mode": "merge-on-read"})
    table = append(table, [{"id": i, "k": "ab"[i % 2]} for i in range(20)])
    first = table.current_snapshot()
    assert first is not None
    ips.delete(spark, table, "id IN (2, 3, 4)")  # position deletes: partial files
    table = table.refresh()
    writer = EqualityDeleteWriter(
        table.io, lambda: f"{table.location}/data/eq-{uuid.uuid4()}.parquet", table.schema(),
        table.spec(), ("a",), table.properties, equality_ids=[1])
    writer.write(pa.table({"id": pa.array([6, 8], pa.int64())}))
    with table.new_row_delta() as delta:
        for f in writer.close():
            delta.add_deletes(f)
    table.refresh().manage_snapshots().create_tag("before", first.snapshot_id).commit()
    table.refresh().manage_snapshots().create_branch("audit").commit()
    table = append(table, [{"id": 100, "k": "b"}])
    table.refresh().delete("k = 'a'")  # whole files

    def expect(ids: set[int]) -> list[dict[str, Any]]:
        return [{"id": i, "k": "ab"[i % 2] if i < 100 else "b"} for i in sorted(ids)]

    now = expect({i for i in range(20) if i % 2} - {3} | {100})
    assert theirs(shared, f"SELECT * FROM {shared.ref('d')}") == now == ours_arrow(table)
    assert theirs(shared, f"SELECT * FROM {shared.ref('d')} VERSION AS OF "
                          f"{first.snapshot_id}") == expect(set(range(20)))
    audit = expect(set(range(20)) - {2, 3, 4, 6, 8})
    assert theirs(shared, f"SELECT * FROM {shared.ref('d')}.branch_audit") == audit
    assert ours_arrow(table, ref="audit") == audit
    assert theirs(shared, f"SELECT * FROM {shared.ref('d')}.tag_before") == expect(
        set(range(20)))


def test_the_reference_and_icepark_write_one_v3_table_in_turn(
        spark: SparkSession, shared: Shared) -> None:
    """A v3 table icepark creates (with a write-default): the reference writes a row, icepark
    appends after it with the next row ID, and the reference reads icepark's lineage."""
    schema = Schema.of(NestedField.required(1, "id", LONG),
                       NestedField.optional(2, "tier", STRING, write_default="free"))
    table = shared.ours.create_table(shared.ident("v3"), schema, format_version=3)
    shared.reference.sql(f"INSERT INTO {shared.ref('v3')} (id, tier) VALUES (1, 'gold')")
    assert theirs(shared, f"SELECT * FROM {shared.ref('v3')}") == [{"id": 1, "tier": "gold"}]
    assert ours_arrow(table) == ours_spark(spark, table) == [{"id": 1, "tier": "gold"}]
    assert table.refresh().metadata.next_row_id == 1  # the reference assigned row ID 0
    table = append(table, [{"id": 2, "tier": None}])
    assert table.metadata.next_row_id == 2
    assert theirs(shared, f"SELECT _row_id, _last_updated_sequence_number, * FROM "
                          f"{shared.ref('v3')}") == [
        {"_row_id": 0, "_last_updated_sequence_number": 1, "id": 1, "tier": "gold"},
        {"_row_id": 1, "_last_updated_sequence_number": 2, "id": 2, "tier": None}]


# ----------------------------------------------------------------- the reference writes


@pytest.mark.parametrize("mode", [pytest.param("copy-on-write", marks=pytest.mark.slow),
                                  "merge-on-read"])
def test_icepark_reads_exactly_what_the_reference_writes(spark: SparkSession, shared: Shared,
                                                         mode: str) -> None:
    """DELETE, UPDATE and MERGE in each row-level mode, then its evolution and procedures."""
    t = shared.ref("r")
    shared.reference.sql(
        f"CREATE TABLE {t} (id BIGINT, k STRING, v DOUBLE, at TIMESTAMP) USING iceberg "
        f"PARTITIONED BY (k, days(at)) TBLPROPERTIES ('format-version'='2', "
        f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', "
        f"'write.merge.mode'='{mode}')")
    shared.reference.sql(
        f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, CASE WHEN id % 3 = 0 THEN 'a' "
        "ELSE 'b' END, id * 1.5, TIMESTAMP '2024-03-05 10:00:00' + make_interval(0, 0, 0, "
        "CAST(id % 2 AS INT)) FROM range(0, 30)")
    shared.reference.sql(f"DELETE FROM {t} WHERE id % 5 = 0")
    shared.reference.sql(f"UPDATE {t} SET v = -v WHERE id % 4 = 1")
    shared.reference.sql(
        f"MERGE INTO {t} USING (SELECT id, 'c' AS k FROM range(25, 35)) s ON {t}.id = s.id "
        f"WHEN MATCHED THEN UPDATE SET k = s.k WHEN NOT MATCHED THEN INSERT (id, k, v, at) "
        f"VALUES (s.id, s.k, 0.5, NULL)")
    table = shared.ours.load_table(shared.ident("r"))
    expected = theirs(shared, f"SELECT * FROM {t}")
    assert len(expected) == 30 - 6 + 6  # 6 deleted; the merge inserts 25 and 30-34
    assert ours_arrow(table) == ours_spark(spark, table) == expected
    assert ours_spark(spark, table, row_filter="k = 'c' AND id > 30") == [
        r for r in expected if r["k"] == "c" and r["id"] > 30]
    if mode == "merge-on-read":
        assert any(f.is_delete for f in live_files(table))

    shared.reference.sql(f"ALTER TABLE {t} RENAME COLUMN v TO value")
    shared.reference.sql(f"ALTER TABLE {t} ADD COLUMN note STRING")
    shared.reference.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)")
    shared.reference.sql(f"INSERT INTO {t} VALUES (99, 'd', 9.0, NULL, 'new')")
    shared.reference.sql(f"CALL ref.system.rewrite_data_files(table => '{shared.namespace}.r', "
                         "options => map('min-input-files', '1'))")
    shared.reference.sql(f"CALL ref.system.rewrite_manifests('{shared.namespace}.r')")
    shared.reference.sql(f"CALL ref.system.expire_snapshots(table => '{shared.namespace}.r', "
                         "retain_last => 2, older_than => TIMESTAMP '2999-01-01 00:00:00')")
    expected = theirs(shared, f"SELECT * FROM {t}")
    assert expected[-1] == {"id": 99, "k": "d", "value": 9.0, "at": None, "note": "new"}
    assert ours_arrow(table) == ours_spark(spark, table) == expected
    assert len(table.refresh().snapshots()) == 2


def test_reference_v3_tables_read_with_deletion_vectors_and_timestamp_ns(
        spark: SparkSession, shared: Shared) -> None:
    """The reference's deletion vector applies in both readers; a ``timestamp_ns`` column the
    reference adds reads as null for its older rows, exactly for the row icepark appends, and
    through Spark only in a read mode the caller chose."""
    t = shared.ref("v3")
    shared.reference.sql(f"CREATE TABLE {t} (id BIGINT, s STRING) USING iceberg PARTITIONED BY "
                         "(s) TBLPROPERTIES ('format-version'='3', "
                         "'write.delete.mode'='merge-on-read')")
    shared.reference.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, IF(id < 3, 'x', 'y') "
                         "FROM range(6)")
    table = shared.ours.load_table(shared.ident("v3"))
    rows = [{"id": i, "s": "x" if i < 3 else "y"} for i in range(6)]
    assert ours_arrow(table) == ours_spark(spark, table) == rows
    shared.reference.sql(f"DELETE FROM {t} WHERE id = 4")  # a deletion vector on the 'y' file
    table = table.refresh()
    assert any(f.is_deletion_vector for f in live_files(table))
    rows = [r for r in rows if r["id"] != 4]
    assert ours_arrow(table) == ours_spark(spark, table) == rows

    shared.reference.python(
        "jvm = spark._jvm\n"
        f"t = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "
        f"'{t}')\n"
        "t.updateSchema().addColumn('tns', "
        "jvm.org.apache.iceberg.types.Types.TimestampNanoType.withoutZone()).commit()\n")
    table = shared.ours.load_table(shared.ident("v3"))
    assert str(table.schema().find_field("tns").field_type) == "timestamp_ns"
    with_tns: list[dict[str, Any]] = [{**r, "tns": None} for r in rows]
    assert ours_arrow(table) == with_tns
    with pytest.raises(UnsupportedFeature, match=r"timestamp_ns='micros'"):
        ours_spark(spark, table)
    assert ours_spark(spark, table, timestamp_ns="nanos") == with_tns
    nanos = 1_709_251_200_123_456_789
    table.append(pa.table({"id": pa.array([9], pa.int64()), "s": ["x"],
                           "tns": pa.array([nanos], pa.timestamp("ns"))}))
    got = ours_spark(spark, table, timestamp_ns="nanos")
    assert got[-1] == {"id": 9, "s": "x", "tns": nanos}
    arrow = table.refresh().scan("id = 9").to_arrow()
    assert arrow.column("tns").cast(pa.int64()).to_pylist() == [nanos]
    # the reference's Spark cannot hold timestamp_ns ("Cannot convert unknown type to Spark");
    # its generic Java reader reads the column: LocalDateTime, whose nanosecond field checks
    # the value
    theirs_rows = shared.reference.python(
        "jvm = spark._jvm\n"
        f"t = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "
        f"'{t}')\n"
        "records = jvm.org.apache.iceberg.data.IcebergGenerics.read(t).build().iterator()\n"
        "result = []\n"
        "while records.hasNext():\n"
        "    r = records.next()\n"
        "    ts = r.getField('tns')\n"
        "    result.append([r.getField('id'), None if ts is None else ts.toString()])\n")
    assert sorted(map(tuple, theirs_rows)) == sorted(
        [(r["id"], None) for r in rows] + [(9, "2024-03-01T00:00:00.123456789")])


# ------------------------------------------------------------------ alternating writers


def test_alternating_writers_keep_one_valid_history(spark: SparkSession, shared: Shared) -> None:
    """Each engine writes in turn (appends, deletes in both modes, updates); after every step
    both read the same rows, and the history is one chain that both see alike."""
    t = shared.ref("alt")
    shared.reference.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING iceberg PARTITIONED BY "
                         "(bucket(2, id)) TBLPROPERTIES ('format-version'='2', "
                         "'write.delete.mode'='merge-on-read', "
                         "'write.update.mode'='copy-on-write')")
    table = shared.ours.load_table(shared.ident("alt"))
    assert [f.name for f in table.spec().fields] == ["id_bucket"]
    steps: list[Callable[[], object]] = [
        lambda: shared.reference.sql(f"INSERT INTO {t} SELECT id, 'ref' FROM range(0, 10)"),
        lambda: ips.write(spark.createDataFrame([(i, "ours") for i in range(10, 20)],
                                                "id long, v string"), table.refresh()),
        lambda: shared.reference.sql(f"DELETE FROM {t} WHERE id IN (1, 11)"),
        lambda: ips.delete(spark, table.refresh(), "id IN (2, 12)"),
        lambda: shared.reference.sql(f"UPDATE {t} SET v = 'updated' WHERE id IN (3, 13)"),
        lambda: append(table, [{"id": 20, "v": "arrow"}]),
    ]
    for step in steps:
        step()
        expected = theirs(shared, f"SELECT * FROM {t}")
        assert ours_arrow(table) == ours_spark(spark, table) == expected
    assert len(expected) == 21 - 4
    snapshots = table.refresh().snapshots()
    assert [s.parent_snapshot_id for s in snapshots[1:]] == [s.snapshot_id
                                                             for s in snapshots[:-1]]
    history = shared.reference.rows(f"SELECT snapshot_id, is_current_ancestor FROM {t}.history")
    assert [h["snapshot_id"] for h in history] == [s.snapshot_id for s in snapshots]
    assert all(h["is_current_ancestor"] for h in history)


# ----------------------------------------------------------------------------- metrics


def test_float_metrics_agree_with_the_reference(spark: SparkSession, shared: Shared) -> None:
    """icepark's Spark writer records float and double bounds and NaN counts as the reference
    does for the same rows (spec: NaN is never a bound, -0.0 precedes +0.0)."""
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "f", FLOAT),
                       NestedField.optional(3, "d", DOUBLE))
    ours = shared.ours.create_table(shared.ident("m"), schema)
    shared.reference.sql(f"CREATE TABLE {shared.ref('r')} (id BIGINT NOT NULL, f FLOAT, "
                         "d DOUBLE) USING iceberg TBLPROPERTIES ('format-version'='2')")
    values = [(1, 1.5, -0.0), (2, float("nan"), 2.0), (3, None, float("nan")),
              (4, -3.25, 0.0), (5, float("nan"), None)]
    df = spark.createDataFrame(values, "id long, f float, d double").coalesce(1)
    ips.write(df, ours)
    shared.reference.sql(f"INSERT INTO {shared.ref('r')} SELECT /*+ COALESCE(1) */ * FROM "
                         "VALUES (1L, 1.5F, -0.0D), (2L, float('NaN'), 2.0D), (3L, NULL, "
                         "double('NaN')), (4L, -3.25F, 0.0D), (5L, float('NaN'), NULL) "
                         "AS v(id, f, d)")
    query = ("SELECT readable_metrics.f AS f, readable_metrics.d AS d FROM {}.files")
    mine = shared.reference.rows(query.format(shared.ref("m")))
    reference = shared.reference.rows(query.format(shared.ref("r")))
    assert len(mine) == len(reference) == 1
    for column in ("f", "d"):
        got, want = mine[0][column], reference[0][column]
        for key in ("nan_value_count", "lower_bound", "upper_bound", "null_value_count",
                    "value_count"):
            assert normal(got[key]) == normal(want[key]), (column, key)
    assert str(mine[0]["d"]["lower_bound"]) == "-0.0"


def test_the_reference_reads_uuid_and_fixed_columns_icepark_spark_writes(
        spark: SparkSession, shared: Shared) -> None:
    schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "u", UUID),
                       NestedField.optional(3, "code", PrimitiveType.fixed(2)))
    table = shared.ours.create_table(shared.ident("u"), schema)
    keys = [str(uuid.UUID(int=i * 7919 + 1)) for i in range(3)]
    df = spark.createDataFrame([(i, keys[i], bytes([i, 9])) for i in range(3)] + [(3, None, None)],
                               "id long, u string, code binary")
    ips.write(df, table)
    expected = [{"id": i, "u": keys[i], "code": bytes([i, 9])} for i in range(3)] + [
        {"id": 3, "u": None, "code": None}]
    assert theirs(shared, f"SELECT * FROM {shared.ref('u')}") == expected
    assert ours_spark(spark, table) == expected
