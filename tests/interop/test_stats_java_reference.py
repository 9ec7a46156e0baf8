"""Statistics files between icepark and the Java reference (Iceberg 1.10.2 on Spark 3.5).

Java's ``compute_table_stats`` and ``compute_partition_stats`` procedures write the files of a
snapshot; icepark reads them and computes its own for the same snapshot: the column sketches
are the same bytes (the same values, serialized and hashed the same way) and the partition
rows the same counts. Then icepark's files replace Java's, and Java reads them back with its
table API, its Puffin reader, its DataSketches ``CompactSketch`` and its
``PartitionStatsHandler``.
"""

from __future__ import annotations

from typing import Any

import datasketches
import pytest
from pyspark.sql import SparkSession

from icepark.io.puffin.reader import PuffinReader
from icepark.io.puffin.theta import THETA_BLOB_TYPE, ndv
from icepark.spark.maintenance.stats import compute_partition_stats, compute_table_stats
from icepark.table.inspect.files import partition_coercer, table_partition_type
from icepark.table.maintenance.partition_stats import (
    collect_partition_stats,
    read_partition_stats,
)
from icepark.table.maintenance.table_stats import read_theta_sketches
from tests.interop.conftest import Shared

pytestmark = [pytest.mark.javaref, pytest.mark.spark]

COLUMNS = "id bigint, s string, i int, d double, f float, dt date, ts timestamp, " \
          "dec decimal(10, 2), b boolean, bin binary"
ROWS = [
    "(1, 'a', 1, 1.5, 1.5, DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00', 1.25, true, "
    "X'00ff')",
    "(2, 'a', 1, -0.0, 0.0, DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.999999', -1.00, "
    "false, X'')",
    "(3, 'b', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, '', 2, 0.0, -0.0, DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00', 12345678.99, "
    "true, X'01')",
    "(5, NULL, 3, 2.5, 2.5, DATE '2000-02-29', TIMESTAMP '2000-02-29 00:00:00', 0.01, true, "
    "X'00ff')",
]

JAVA_SKETCHES = """
jvm = spark._jvm
t = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, '{name}')
shaded = 'org.apache.iceberg.shaded.org.apache.datasketches'
files = t.statisticsFiles()
result = []
for n in range(files.size()):
    f = files.get(n)
    reader = jvm.org.apache.iceberg.puffin.Puffin.read(t.io().newInputFile(f.path())).build()
    it = reader.readAll(reader.fileMetadata().blobs()).iterator()
    while it.hasNext():
        pair = it.next()
        blob, data = pair.first(), jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(
            pair.second())
        memory = getattr(jvm, shaded + '.memory.Memory').wrap(data)
        sketch = getattr(jvm, shaded + '.theta.CompactSketch').wrap(memory)
        result.append((f.snapshotId(), f.path(), blob.type(), list(blob.inputFields()),
                       blob.snapshotId(), blob.sequenceNumber(), dict(blob.properties()),
                       sketch.getEstimate(), bytes(data)))
    reader.close()
"""

JAVA_PARTITION_STATS = """
jvm = spark._jvm
t = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, '{name}')
files = t.partitionStatisticsFiles()
handler = jvm.org.apache.iceberg.PartitionStatsHandler
schema = handler.schema(jvm.org.apache.iceberg.Partitioning.partitionType(t), {version})
any_class = jvm.java.lang.Class.forName('java.lang.Object')
result = []
for n in range(files.size()):
    f = files.get(n)
    rows = []
    it = handler.readPartitionStatsFile(schema, t.io().newInputFile(f.path())).iterator()
    while it.hasNext():
        s = it.next()
        p = s.partition()
        rows.append(([p.get(k, any_class) for k in range(p.size())], s.specId(),
                     s.dataRecordCount(), s.dataFileCount(), s.totalDataFileSizeInBytes(),
                     s.positionDeleteRecordCount(), s.positionDeleteFileCount(),
                     s.equalityDeleteRecordCount(), s.equalityDeleteFileCount(),
                     s.lastUpdatedAt(), s.lastUpdatedSnapshotId(), s.dvCount()))
    result.append((f.snapshotId(), f.path(), f.fileSizeInBytes(), rows))
"""


def same_sketch(a: bytes, b: bytes) -> bool:
    """The same theta and retained hashes (the preambles may differ in unused bytes and in
    Java's single-item flag)."""
    x, y = (datasketches.compact_theta_sketch.deserialize(s) for s in (a, b))
    differ = datasketches.theta_a_not_b()
    return bool(x.theta64 == y.theta64 and x.num_retained == y.num_retained
                and differ.compute(x, y).num_retained == 0
                and differ.compute(y, x).num_retained == 0)


def _row(r: dict[str, Any]) -> tuple[Any, ...]:
    return (list(r["partition"].values()), r["spec_id"], r["data_record_count"],
            r["data_file_count"], r["total_data_file_size_in_bytes"],
            r["position_delete_record_count"], r["position_delete_file_count"],
            r["equality_delete_record_count"], r["equality_delete_file_count"],
            r["last_updated_at"], r["last_updated_snapshot_id"], r.get("dv_count") or 0)


@pytest.mark.parametrize("version", [2, 3])
def test_statistics_files_both_ways(spark: SparkSession, shared: Shared, version: int) -> None:
    name = shared.ref("t")
    ref = shared.reference
    ref.sql(f"CREATE TABLE {name} ({COLUMNS}) USING iceberg PARTITIONED BY (s) "
            f"TBLPROPERTIES ('format-version'='{version}')")
    ref.sql(f"INSERT INTO {name} VALUES {', '.join(ROWS[:3])}")
    ref.sql(f"INSERT INTO {name} VALUES {', '.join(ROWS[3:])}")
    ref.sql(f"DELETE FROM {name} WHERE id = 3")  # a delete file (v2) or a deletion vector (v3)
    ref.sql(f"CALL ref.system.compute_table_stats(table => '{shared.ident('t')}')")
    ref.sql(f"CALL ref.system.compute_partition_stats(table => '{shared.ident('t')}')")

    table = shared.ours.load_table(shared.ident("t"))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    # icepark reads Java's statistics file
    [theirs] = table.metadata.statistics
    assert theirs.snapshot_id == snapshot.snapshot_id
    java_sketches = read_theta_sketches(table.io, theirs)
    with PuffinReader(table.io, theirs.statistics_path) as reader:
        java_ndv = {b.fields[0]: int(b.properties["ndv"]) for b in reader.metadata.blobs}
    assert {fid: ndv(s) for fid, s in java_sketches.items()} == java_ndv
    # icepark reads Java's partition statistics file: the rows icepark computes
    [their_partitions] = table.metadata.partition_statistics
    java_rows = read_partition_stats(table.io, their_partitions).to_pylist()
    md = table.metadata
    ptype = table_partition_type(md)
    ours_rows = collect_partition_stats(table.io, md, snapshot, ptype,
                                        partition_coercer(md, ptype))
    assert [_row(r) for r in java_rows] == [
        ([*s.partition], s.spec_id, s.data_record_count, s.data_file_count,
         s.total_data_file_size_in_bytes, s.position_delete_record_count,
         s.position_delete_file_count, s.equality_delete_record_count,
         s.equality_delete_file_count, s.last_updated_at, s.last_updated_snapshot_id,
         s.dv_count) for s in ours_rows]
    assert [r["partition"]["s"] for r in java_rows] == [None, "", "a", "b"]

    # icepark computes the same sketches, byte for byte, and replaces Java's files
    result = compute_table_stats(spark, table)
    table = table.refresh()
    [ours] = table.metadata.statistics
    assert ours.statistics_path == result.statistics_path != theirs.statistics_path
    our_sketches = read_theta_sketches(table.io, ours)
    assert our_sketches.keys() == java_sketches.keys()
    for field_id, sketch in our_sketches.items():
        assert same_sketch(sketch, java_sketches[field_id]), field_id
    # id 3's row is deleted, "" and X'' are not counted (the library ignores empty input), and
    # Spark SQL reads the literal -0.0 as the decimal 0, so 0.0 twice
    assert result.ndv == {"id": 4, "s": 1, "i": 3, "d": 3, "f": 3, "dt": 3, "ts": 3,
                          "dec": 4, "b": 2, "bin": 2}
    partitions = compute_partition_stats(spark, table)
    assert partitions.partitions == len(java_rows)

    # Java reads icepark's files with its own readers
    read_back = ref.python(JAVA_SKETCHES.format(name=name))
    assert {r[1] for r in read_back} == {result.statistics_path}
    by_field = {r[3][0]: r for r in read_back}
    ids = {f.name: f.field_id for f in table.schema().fields}
    for column, count in result.ndv.items():
        snapshot_id, _, blob_type, _, blob_snapshot, sequence, props, estimate, data = \
            by_field[ids[column]]
        assert (snapshot_id, blob_type, blob_snapshot, sequence) == (
            snapshot.snapshot_id, THETA_BLOB_TYPE, snapshot.snapshot_id,
            snapshot.sequence_number)
        assert int(estimate) == count and props == {"ndv": str(count)}
        assert data == our_sketches[ids[column]]
    java_partitions = ref.python(JAVA_PARTITION_STATS.format(name=name, version=version))
    [(snapshot_id, path, size, rows)] = java_partitions
    assert (snapshot_id, path) == (snapshot.snapshot_id, partitions.statistics_path)
    assert partitions.statistics_file is not None
    assert size == partitions.statistics_file.file_size_in_bytes
    assert [tuple(r) for r in rows] == [tuple(_row(r)) for r in java_rows]
