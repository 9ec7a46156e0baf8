"""Writing one manifest of 100,000 data files plus its manifest list: icepark vs pyiceberg.

Both writers get the same synthetic files (8 columns with every metric Spark writes, two
partition fields, two split offsets), built before timing; each side's time covers writing
the manifest and a manifest list holding it, deflate-compressed, to local files. Rows: wall
and CPU seconds (CPU counts every thread), at icepark's default deflate level and at level 6;
the file sizes are printed too (pyiceberg compresses every record as a block of its own).

    PYTHONPATH=src python benchmarks/bench_manifest.py [N]
"""

from __future__ import annotations

import gc
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFile as PyDataFile
from pyiceberg.manifest import (
    DataFileContent,
    ManifestEntry,
    ManifestEntryStatus,
    write_manifest,
)
from pyiceberg.manifest import FileFormat as PyFileFormat
from pyiceberg.manifest import write_manifest_list as py_write_manifest_list
from pyiceberg.partitioning import PartitionField as PyPartitionField
from pyiceberg.partitioning import PartitionSpec as PyPartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.transforms import BucketTransform, DayTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DoubleType, LongType, StringType, TimestamptzType
from pyiceberg.types import NestedField as PyField

from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import ManifestWriter
from icepark.io.manifest.manifest_list import write_manifest_list
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import DOUBLE, LONG, STRING, TIMESTAMPTZ, NestedField

COLUMNS = 8
SNAPSHOT_ID = 42


def icepark_schema() -> tuple[Schema, PartitionSpec]:
    types = [LONG, STRING, TIMESTAMPTZ, DOUBLE, LONG, STRING, DOUBLE, LONG]
    schema = Schema.of(*(NestedField.optional(i + 1, f"c{i + 1}", t) for i, t in enumerate(types)))
    spec = PartitionSpec(0, (PartitionField(3, 1000, Transform.day(), "c3_day"),
                             PartitionField(1, 1001, Transform.bucket(16), "c1_bucket")))
    return schema, spec


def synthetic_files(n: int) -> list[DataFile]:
    """Files shaped like Spark's output: all metric maps, 8-byte bounds, split offsets."""
    files = []
    for i in range(n):
        rows = 10_000 + i % 5000
        ids = range(1, COLUMNS + 1)
        low = {c: struct.pack("<q", i * 10 + c) for c in ids}
        high = {c: struct.pack("<q", i * 10 + c + rows) for c in ids}
        files.append(DataFile(
            file_path=f"s3://bucket/warehouse/db/t/data/c3_day=2024-01-{1 + i % 28:02d}/"
                      f"c1_bucket={i % 16}/00000-{i}-5f1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d.parquet",
            file_format=FileFormat.PARQUET,
            partition=(19723 + i % 28, i % 16),
            record_count=rows,
            file_size_in_bytes=rows * 37,
            column_sizes={c: rows * 4 + c for c in ids},
            value_counts=dict.fromkeys(ids, rows),
            null_value_counts={c: i % 3 for c in ids},
            nan_value_counts={4: 0, 7: i % 2},
            lower_bounds=low,
            upper_bounds=high,
            split_offsets=(4, rows * 18),
            sort_order_id=0,
        ))
    return files


def write_icepark(files: list[DataFile], root: str, level: str | None = None) -> None:
    io = ArrowFileIO()
    schema, spec = icepark_schema()
    props = {} if level is None else {"write.avro.compression-level": level}
    with ManifestWriter(io, f"{root}/icepark-m0.avro", spec, schema, 2,
                        snapshot_id=SNAPSHOT_ID, properties=props) as writer:
        for f in files:
            writer.add_file(f)
    write_manifest_list(io, f"{root}/icepark-snap.avro", 2, SNAPSHOT_ID, None, 1,
                        [writer.to_manifest_file()], properties=props)


def pyiceberg_schema() -> tuple[PySchema, PyPartitionSpec]:
    """The same schema and partition spec in pyiceberg's classes."""
    types = [LongType(), StringType(), TimestamptzType(), DoubleType(), LongType(), StringType(),
             DoubleType(), LongType()]
    schema = PySchema(*(PyField(i + 1, f"c{i + 1}", t, required=False)
                        for i, t in enumerate(types)))
    spec = PyPartitionSpec(PyPartitionField(3, 1000, DayTransform(), "c3_day"),
                           PyPartitionField(1, 1001, BucketTransform(16), "c1_bucket"))
    return schema, spec


def pyiceberg_files(files: list[DataFile]) -> list[PyDataFile]:
    """pyiceberg's DataFile records for the same files."""
    return [PyDataFile.from_args(
        content=DataFileContent.DATA, file_path=f.file_path,
        file_format=PyFileFormat.PARQUET, partition=Record(*f.partition),
        record_count=f.record_count, file_size_in_bytes=f.file_size_in_bytes,
        column_sizes=f.column_sizes, value_counts=f.value_counts,
        null_value_counts=f.null_value_counts, nan_value_counts=f.nan_value_counts,
        lower_bounds=f.lower_bounds, upper_bounds=f.upper_bounds,
        split_offsets=list(f.split_offsets or ()), sort_order_id=f.sort_order_id)
        for f in files]


def pyiceberg_writer(files: list[DataFile]) -> Callable[[str], None]:
    """pyiceberg's records for the same files (built untimed) and a function writing them."""
    schema, spec = pyiceberg_schema()
    entries = [ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                       snapshot_id=SNAPSHOT_ID, data_file=f)
               for f in pyiceberg_files(files)]
    io = PyArrowFileIO()

    def write(root: str) -> None:
        with write_manifest(2, spec, schema, io.new_output(f"{root}/pyiceberg-m0.avro"),
                            SNAPSHOT_ID, "deflate") as writer:
            for e in entries:
                writer.add(e)
        manifest = writer.to_manifest_file()
        with py_write_manifest_list(2, io.new_output(f"{root}/pyiceberg-snap.avro"), SNAPSHOT_ID,
                                 None, 1, "deflate") as list_writer:
            list_writer.add_manifests([manifest])

    return write


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (all threads of the process) of one call."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def bench(n: int = 100_000, repeat: int = 5, level: str | None = None) -> dict[str, float]:
    """Best-of-``repeat`` wall and CPU seconds of each writer, and the ratios (pyiceberg /
    icepark). ``level`` sets icepark's ``write.avro.compression-level`` (default 3); pyiceberg
    compresses each record as a block of its own at zlib's default level, 6."""
    files = synthetic_files(n)
    py_write = pyiceberg_writer(files)
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    sizes: dict[str, float] = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as root:
            ours.append(_timed(partial(write_icepark, files, root, level)))
            theirs.append(_timed(partial(py_write, root)))
            sizes = {name: os.path.getsize(f"{root}/{name}-m0.avro") / 1e6
                     for name in ("icepark", "pyiceberg")}
    wall, cpu = min(w for w, _ in ours), min(c for _, c in ours)
    py_wall, py_cpu = min(w for w, _ in theirs), min(c for _, c in theirs)
    return {"files": n, "icepark_s": wall, "pyiceberg_s": py_wall, "speedup": py_wall / wall,
            "icepark_cpu_s": cpu, "pyiceberg_cpu_s": py_cpu, "cpu_speedup": py_cpu / cpu,
            "icepark_mb": sizes["icepark"], "pyiceberg_mb": sizes["pyiceberg"]}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(f"{'benchmark':<44} {'icepark s':>10} {'pyiceberg s':>12} {'ratio':>7}")
    for level in (None, "6"):
        r = bench(n, level=level)
        name = f"manifest + list, {n:,} files" + ("" if level is None else f", level {level}")
        print(f"{name + ' (wall)':<44} {r['icepark_s']:>10.3f} {r['pyiceberg_s']:>12.3f} "
              f"{r['speedup']:>6.1f}x")
        print(f"{name + ' (cpu)':<44} {r['icepark_cpu_s']:>10.3f} {r['pyiceberg_cpu_s']:>12.3f} "
              f"{r['cpu_speedup']:>6.1f}x")
        print(f"{name + ' (MB)':<44} {r['icepark_mb']:>10.2f} {r['pyiceberg_mb']:>12.2f}")


if __name__ == "__main__":
    main()
