"""Scan planning on synthetic tables: icepark's TableScan vs pyiceberg 0.12 and the Java reference.

Tables of 100,000 data files in 100 manifests (and, with ``--large``, 1,000,000 files in 1,000
manifests) are written once with icepark's ManifestWriter into a cache directory under /tmp and
reused by later runs. Every file has 8 columns with all the metrics Spark writes, a partition
``(day(c3), bucket[16](c1))`` and two split offsets; manifest ``m`` holds days ``m // 4`` to
``m // 4 + 3``, so partition summaries overlap a little, as after daily appends. Each table is
also planned with its manifests as other engines write them (``--layouts``):

* ``icepark``: as written above;
* ``pyiceberg``: every manifest and the manifest list rewritten by pyiceberg's writers, which put
  each record in an Avro block of its own (deflated on its own);
* ``java``: the manifests rewritten by the Java reference (``rewrite_manifests``, about as many
  manifests as before, clustered by partition; Iceberg 1.10.2 in ``.venv-javaref``).

Three scans per table, each timed as the wall time to list every planned file (``plan_files``)
after the metadata is loaded, best of ``--repeat`` runs after ``--warmup`` untimed ones (the
medians of every timed run are reported too):

* full: no filter;
* partition: ``c3`` within three days, pruned by partition summaries and partition values;
* metrics: a range of ``c5``, a column that is not partitioned, so every manifest is read and
  only column bounds prune.

icepark plans in one process (``ICEPARK_PLANNING_WORKERS=1``), as in a Spark driver, in a fresh
Python process per layout, twice: with its manifest cache (the default: repeated scans of the
unchanged table reuse the decoded manifests, so the best of several runs is a cached run) and
without (``io.manifest.cache-enabled=false``: every scan decodes its manifests; the decoded
manifest list is kept either way, :mod:`icepark.io.manifest.list_cache`, as the reference keeps
it with its snapshot). Uncached planning runs with
the compiled kernel (:mod:`icepark.io.avro.native`, the default), with the generated Python
decoder alone (``ICEPARK_AVRO_KERNEL=0``, the baseline of the kernel), with the kernel but
the manifests read ahead left deflated for the decoding thread to inflate (the baseline of
inflating ahead, which applies to manifests of at most 2 MiB), with four threads reading
ahead instead of one (the baseline of :data:`icepark.table.scan.planner.LOCAL_READ_AHEAD`) and
with every block of data files checked row by row (the baseline of the kernel's check of a
whole block, ``Finish.valid_at_once``) and with local manifests read ahead a file at a time
(the baseline of :mod:`icepark.table.scan.read_ahead`'s batches), two processes each, in
turns. pyiceberg runs in its
own process. With ``--java``, the reference plans the same metadata file through a static
table in its own JVM (its manifest reading, worker pool and JIT), timed after five untimed
runs of each scan, as many times as icepark's two processes together, in a session started
after icepark's runs and closed before the next ones (an idle Spark driver's threads would
take turns with icepark's on the same cores). Peak RSS (``resource.getrusage``) is each
Python process's own.
``--baselines`` chooses among the five baselines (``python``, ``in_decoder``,
``four_readers``, ``row_checks``, ``by_file``); ``--no-baselines`` leaves them all out (for
the large table, whose runs are long).

    PYTHONPATH=src:. python benchmarks/bench_planning.py [--large | --sizes 100k,1m]
        [--repeat N] [--warmup N] [--rounds N] [--java] [--layouts icepark,pyiceberg,java]
        [--no-pyiceberg]
        [--baselines python,in_decoder,four_readers,row_checks,by_file | --no-baselines]
        [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DAY_US = 86_400_000_000
BASE_DAY = 19723  # 2024-01-01
COLUMNS = 8
SNAPSHOT_ID = 3051729675574597004  # a random-looking 63-bit ID, as Java writes: 9-byte varints
FILTERS = {
    "full": None,
    "partition": "c3 >= '2024-01-11T00:00:00+00:00' AND c3 < '2024-01-14T00:00:00+00:00'",
    "metrics": "c5 >= 500000 AND c5 < 510000",
}
SIZES = {"100k": (100_000, 100), "1m": (1_000_000, 1_000)}


# ----------------------------------------------------------------------------- tables


def table_path(cache: str, files: int, manifests: int) -> str:
    return os.path.join(cache, f"v2-{files}-{manifests}")


def build_table(root: str, files: int, manifests: int, workers: int = 1) -> str:
    """Write the table (manifests, manifest list, metadata.json) unless cached; return the
    metadata file. ``workers`` processes write the manifests."""
    metadata_file = os.path.join(root, "metadata", "v1.metadata.json")
    if os.path.exists(os.path.join(root, "DONE")):
        return metadata_file
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415 - only the parent

    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415 - only the parent writes tables
    from icepark.io.manifest.manifest_list import write_manifest_list  # noqa: PLC0415
    from icepark.spec.serde.metadata_json import table_metadata_to_json  # noqa: PLC0415
    from icepark.spec.snapshots import Operation, Snapshot, SnapshotRef, Summary  # noqa: PLC0415
    from icepark.table.change import updates as u  # noqa: PLC0415

    started = time.perf_counter()
    md = _new_table(root)
    chunks = [range(m, min(m + 10, manifests)) for m in range(0, manifests, 10)]
    args = [(root, files // manifests, chunk) for chunk in chunks]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            written = [m for part in pool.map(_write_manifests, args) for m in part]
    else:
        written = [m for a in args for m in _write_manifests(a)]
    io = ArrowFileIO()
    manifest_list = os.path.join(root, "metadata", f"snap-{SNAPSHOT_ID}.avro")
    write_manifest_list(io, manifest_list, 2, SNAPSHOT_ID, None, 1, written)
    snapshot = Snapshot(SNAPSHOT_ID, None, 1, md.last_updated_ms + 1, manifest_list,
                        Summary(Operation.APPEND), md.current_schema_id)
    md = _builder(md).apply_all([
        u.AddSnapshot(snapshot), u.SetSnapshotRef("main", SnapshotRef.branch(SNAPSHOT_ID))
    ]).build()
    with open(metadata_file, "w") as f:
        f.write(table_metadata_to_json(md))
    with open(os.path.join(root, "DONE"), "w") as f:
        f.write("ok\n")
    print(f"  wrote {files:,} files in {manifests:,} manifests to {root} in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return metadata_file


def _builder(md: Any) -> Any:
    from icepark.table.change.metadata_builder import MetadataBuilder  # noqa: PLC0415
    return MetadataBuilder(md)


def _new_table(root: str) -> Any:
    """The benchmark table's metadata before its snapshot: eight columns, partitioned by the
    day of ``c3`` and 16 buckets of ``c1``."""
    from icepark.spec.partitioning import PartitionSpecBuilder  # noqa: PLC0415
    from icepark.spec.schema import Schema  # noqa: PLC0415
    from icepark.spec.types import (  # noqa: PLC0415
        DOUBLE,
        LONG,
        STRING,
        TIMESTAMPTZ,
        NestedField,
    )
    from icepark.table.change.metadata_builder import MetadataBuilder  # noqa: PLC0415

    types = [LONG, STRING, TIMESTAMPTZ, DOUBLE, LONG, STRING, DOUBLE, LONG]
    schema = Schema.of(*(NestedField.optional(i + 1, f"c{i + 1}", t)
                         for i, t in enumerate(types)))
    md, _ = MetadataBuilder.new_table(
        schema, root, spec=PartitionSpecBuilder(schema).day("c3").bucket("c1", 16).build())
    return md


def _write_manifests(args: tuple[str, int, range]) -> list[Any]:
    """Write manifests ``numbers`` of ``per_manifest`` files each; their manifest files."""
    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415
    from icepark.io.manifest.manifest import ManifestWriter  # noqa: PLC0415
    from icepark.spec.manifest import DataFile, FileFormat  # noqa: PLC0415

    root, per_manifest, numbers = args
    md = _new_table(root)
    schema, spec = md.schema(), md.spec()
    io = ArrowFileIO()
    ids = range(1, COLUMNS + 1)
    written = []
    for m in numbers:
        path = os.path.join(root, "metadata", f"m{m}.avro")
        with ManifestWriter(io, path, spec, schema, 2, snapshot_id=SNAPSHOT_ID) as writer:
            for j in range(per_manifest):
                i = m * per_manifest + j
                day = BASE_DAY + m // 4 + j % 4
                rows = 10_000 + i % 5000
                low = {c: struct.pack("<q", i * 10 + c) for c in ids}
                high = {c: struct.pack("<q", i * 10 + c + rows) for c in ids}
                low[3] = struct.pack("<q", day * DAY_US + j)
                high[3] = struct.pack("<q", day * DAY_US + DAY_US - 1 - j)
                writer.add_file(DataFile(
                    file_path=f"{root}/data/c3_day={day}/c1_bucket={i % 16}/"
                              f"00000-{i}-5f1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d.parquet",
                    file_format=FileFormat.PARQUET, partition=(day, i % 16),
                    record_count=rows, file_size_in_bytes=rows * 37,
                    column_sizes={c: rows * 4 + c for c in ids},
                    value_counts=dict.fromkeys(ids, rows),
                    null_value_counts={c: i % 3 for c in ids},
                    nan_value_counts={4: 0, 7: i % 2},
                    lower_bounds=low, upper_bounds=high,
                    split_offsets=(4, rows * 18), sort_order_id=0))
        written.append(writer.to_manifest_file())
    return written


def build_pyiceberg_layout(source_metadata: str, root: str) -> str:
    """The table of ``source_metadata`` with every manifest and the manifest list rewritten by
    pyiceberg's writers (one Avro block per record, as pyiceberg writes them); return its
    metadata file."""
    metadata_file = os.path.join(root, "metadata", "v1.metadata.json")
    if os.path.exists(os.path.join(root, "DONE")):
        return metadata_file
    from pyiceberg.manifest import write_manifest, write_manifest_list  # noqa: PLC0415
    from pyiceberg.table import StaticTable  # noqa: PLC0415

    started = time.perf_counter()
    table = StaticTable.from_metadata(source_metadata)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    io, spec, schema = table.io, table.spec(), table.schema()
    os.makedirs(os.path.join(root, "metadata"), exist_ok=True)
    written = []
    for i, manifest in enumerate(snapshot.manifests(io)):
        out = io.new_output(os.path.join(root, "metadata", f"m{i}.avro"))
        with write_manifest(2, spec, schema, out, SNAPSHOT_ID, "deflate") as writer:
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                writer.add_entry(entry)
        written.append(writer.to_manifest_file())
    manifest_list = os.path.join(root, "metadata", f"snap-{SNAPSHOT_ID}.avro")
    with write_manifest_list(2, io.new_output(manifest_list), SNAPSHOT_ID, None, 1,
                             "deflate") as lists:
        lists.add_manifests(written)
    with open(source_metadata) as f:
        text = f.read().replace(snapshot.manifest_list, manifest_list)
    with open(metadata_file, "w") as f:
        f.write(text)
    with open(os.path.join(root, "DONE"), "w") as f:
        f.write("ok\n")
    print(f"  rewrote {len(written)} manifests with pyiceberg's writer to {root} in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return metadata_file


def build_java_layout(source_root: str, warehouse: str, files: int, manifests: int) -> str:
    """A copy of the table whose manifests the Java reference rewrote (``rewrite_manifests``,
    about as many manifests as the source); return its metadata file."""
    root = os.path.join(warehouse, "db", "t")
    done = os.path.join(root, "DONE")
    if not os.path.exists(done):
        import shutil  # noqa: PLC0415

        from tools.javaref.client import JavaReference  # noqa: PLC0415

        started = time.perf_counter()
        shutil.rmtree(warehouse, ignore_errors=True)
        build_table(root, files, manifests)  # the same table, at the hadoop catalog's place
        with open(os.path.join(root, "metadata", "version-hint.text"), "w") as f:
            f.write("1")
        size = sum(os.path.getsize(os.path.join(source_root, "metadata", f"m{m}.avro"))
                   for m in range(manifests)) // manifests
        java = JavaReference(Path(warehouse), Path(warehouse) / "javaref.log")
        try:
            java.sql("ALTER TABLE ref.db.t SET TBLPROPERTIES "
                     f"('commit.manifest.target-size-bytes'='{size}')")
            java.sql("CALL ref.system.rewrite_manifests(table => 'db.t', use_caching => false)")
        finally:
            java.close()
        with open(done, "w") as f:
            f.write("ok\n")
        print(f"  the Java reference rewrote the manifests of {root} in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    with open(os.path.join(root, "metadata", "version-hint.text")) as f:
        version = f.read().strip()
    return os.path.join(root, "metadata", f"v{version}.metadata.json")


JAVA_PLANNER = """
import time
jvm = spark._jvm
io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(spark._jsc.hadoopConfiguration())
table = jvm.org.apache.iceberg.BaseTable(
    jvm.org.apache.iceberg.StaticTableOperations(METADATA, io), "bench")
E = jvm.org.apache.iceberg.expressions.Expressions
size = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size
filters = {
    "full": None,
    "partition": getattr(E, "and")(E.greaterThanOrEqual("c3", "2024-01-11T00:00:00+00:00"),
                                   E.lessThan("c3", "2024-01-14T00:00:00+00:00")),
    "metrics": getattr(E, "and")(E.greaterThanOrEqual("c5", 500000), E.lessThan("c5", 510000)),
}
def plan(f):
    scan = table.newScan() if f is None else table.newScan().filter(f)
    return size(scan.planFiles())
result = {}
for name, f in filters.items():
    started = time.perf_counter(); count = plan(f); first = time.perf_counter() - started
    for _ in range(WARMUP):
        plan(f)
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter(); count = plan(f); times.append(time.perf_counter() - started)
    result[name] = {"seconds": min(times), "files": count, "first": first, "times": times}
"""


class JavaPlanner:
    """The Java reference planning each scan of ``metadata_file`` (through a static table:
    its own manifest reading, worker pool and JIT), in one session timed as often as asked:
    its JIT stays warm between timings. ``threads``: the size of its worker pool, which reads
    the manifests of a scan in parallel (the system property ``iceberg.worker.num-threads``;
    None: its default, the CPUs and at least 2)."""

    def __init__(self, metadata_file: str, threads: int | None = None) -> None:
        from tools.javaref.client import JavaReference  # noqa: PLC0415

        home = os.path.dirname(os.path.dirname(metadata_file))
        options = "" if threads is None else f"-Diceberg.worker.num-threads={threads}"
        self.metadata_file = metadata_file
        self.java = JavaReference(Path(home), Path(home) / "javaref-planning.log", options)

    def times(self, repeat: int, warmup: int) -> dict[str, Any]:
        """Each scan's best of ``repeat`` timings, after ``warmup`` untimed runs."""
        code = (f"METADATA = {self.metadata_file!r}\nREPEAT = {repeat}\nWARMUP = {warmup}\n"
                + JAVA_PLANNER)
        result: dict[str, Any] = self.java.python(code)
        return result

    def close(self) -> None:
        self.java.close()


def java_planner_times(metadata_file: str, repeat: int, warmup: int = 5,
                       threads: int | None = None) -> dict[str, Any]:
    """:class:`JavaPlanner`'s timings of one session, after ``warmup`` untimed runs per
    scan."""
    java = JavaPlanner(metadata_file, threads)
    try:
        return java.times(repeat, warmup)
    finally:
        java.close()


def best_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each scan's fastest timing among ``results`` (rounds of one system's timings), with the
    median of every timed run of them (``median``)."""
    best: dict[str, Any] = {}
    for scan in FILTERS:
        best[scan] = dict(min((r[scan] for r in results), key=lambda t: t["seconds"]))
        best[scan]["median"] = statistics.median(t for r in results for t in r[scan]["times"])
    return best


# ----------------------------------------------------------------------------- workers


def icepark_planner(metadata_file: str) -> Callable[[str | None], int]:
    from icepark.io.fileio import ArrowFileIO  # noqa: PLC0415 - measured in its own process
    from icepark.spec.serde.metadata_json import table_metadata_from_json  # noqa: PLC0415
    from icepark.table.scan import planner  # noqa: PLC0415
    from icepark.table.scan.scan import TableScan  # noqa: PLC0415

    if os.environ.get("BENCH_INFLATE_AHEAD") == "0":  # the manifests read ahead stay deflated
        planner.INFLATE_AHEAD_MAX_BYTES = -1
    if os.environ.get("BENCH_BATCHES") == "0":  # read ahead a file at a time, not in batches
        planner.READ_IN_BATCHES = False
    if os.environ.get("BENCH_READ_AHEAD"):  # more threads reading ahead
        planner.LOCAL_READ_AHEAD = int(os.environ["BENCH_READ_AHEAD"])
    if os.environ.get("BENCH_ROW_CHECKS") == "1":  # no block of data files checked at once
        from icepark.io.manifest import reader  # noqa: PLC0415

        reader._valid_data_files = lambda block: False  # the baseline: checked row by row
    with open(metadata_file) as f:
        md = table_metadata_from_json(f.read())
    io = ArrowFileIO({"io.manifest.cache-enabled": os.environ.get("BENCH_CACHE", "true"),
                      "io.manifest.cache.max-total-bytes": str(4 << 30)})

    def plan(row_filter: str | None) -> int:
        scan = TableScan(md, io) if row_filter is None else TableScan(md, io, row_filter)
        return sum(1 for _ in scan.plan_files())

    return plan


def pyiceberg_planner(metadata_file: str) -> Callable[[str | None], int]:
    from pyiceberg.table import StaticTable  # noqa: PLC0415 - measured in its own process

    table = StaticTable.from_metadata(metadata_file)

    def plan(row_filter: str | None) -> int:
        scan = table.scan() if row_filter is None else table.scan(row_filter=row_filter)
        return sum(1 for _ in scan.plan_files())

    return plan


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (icepark's planning workers)."""
    own, children = (resource.getrusage(resource.RUSAGE_SELF),
                     resource.getrusage(resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def worker(library: str, metadata_file: str, repeat: int, warmup: int = 0) -> dict[str, Any]:
    """Time every scan ``repeat`` times in this process, after ``warmup`` untimed runs of it
    (the first run of a process also loads the compiled kernel and generates the manifest
    readers); peak RSS at the end."""
    make = icepark_planner if library == "icepark" else pyiceberg_planner
    plan = make(metadata_file)
    out: dict[str, Any] = {}
    for name, row_filter in FILTERS.items():
        times, cpu, count = [], [], 0
        first = None  # the process's first run of this scan, timed or not
        for _ in range(warmup):
            started = time.perf_counter()
            plan(row_filter)
            first = first or time.perf_counter() - started
        for _ in range(repeat):
            started, cpu_started = time.perf_counter(), _cpu_seconds()
            count = plan(row_filter)
            times.append(time.perf_counter() - started)
            cpu.append(_cpu_seconds() - cpu_started)
        out[name] = {"seconds": min(times), "cpu": min(cpu), "files": count,
                     "first": first or times[0], "times": times}
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["children_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


def run_worker(library: str, metadata_file: str, repeat: int, warmup: int = 0, **environ: str
               ) -> dict[str, Any]:
    env = {**os.environ, **environ, "PYTHONPATH": os.pathsep.join(
        p for p in ("src", ".", os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", library, metadata_file, "--repeat", str(repeat),
         "--warmup", str(warmup)],
        check=True, capture_output=True, text=True, env=env)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


BASELINES = {"python": {"ICEPARK_AVRO_KERNEL": "0"},
             "in_decoder": {"BENCH_INFLATE_AHEAD": "0"},
             "four_readers": {"BENCH_READ_AHEAD": "4"},
             "row_checks": {"BENCH_ROW_CHECKS": "1"},
             "by_file": {"BENCH_BATCHES": "0"}}
"""icepark's own baselines: the environment of each (see :func:`uncached_runs`)."""


def uncached_runs(metadata_file: str, repeat: int, baselines: Sequence[str] = tuple(BASELINES),
                  warmup: int = 0) -> dict[str, dict[str, Any]]:
    """icepark's uncached planning with the compiled kernel (``uncached``) and the chosen
    ``baselines``: the generated Python decoder alone (``python``), the kernel but the
    manifests read ahead left deflated (``in_decoder``: :data:`icepark.table.scan.planner.
    INFLATE_AHEAD_MAX_BYTES` off), four threads reading ahead instead of one
    (``four_readers``: :data:`icepark.table.scan.planner.LOCAL_READ_AHEAD`) and every block
    of data files checked row by row (``row_checks``: no ``Finish.valid_at_once``), local
    manifests read ahead and inflated a file at a time on a thread, the kernel run by the
    decoding thread (``by_file``: not in batches, :mod:`icepark.table.scan.read_ahead`), two
    processes each, in turns (each after ``warmup`` untimed runs of every scan): the best of
    each scan over both."""
    variants = [("uncached", {}), *((name, BASELINES[name]) for name in baselines)]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    for _ in range(2):
        for name, environ in variants:
            runs[name].append(run_worker("icepark", metadata_file, repeat, warmup,
                                         BENCH_CACHE="false",
                                         ICEPARK_PLANNING_WORKERS="1", **environ))
    best: dict[str, dict[str, Any]] = {}
    for name, results in runs.items():
        best[name] = best_of(results)
        best[name]["rss_mb"] = max(r["rss_mb"] for r in results)
    return best


# ----------------------------------------------------------------------------- report


LAYOUTS = ("icepark", "pyiceberg", "java")


def layout_metadata(layout: str, cache: str, files: int, manifests: int) -> str:
    source = table_path(cache, files, manifests)
    metadata_file = build_table(source, files, manifests)
    if layout == "pyiceberg":
        return build_pyiceberg_layout(metadata_file, f"{source}-pyiceberg")
    if layout == "java":
        return build_java_layout(source, f"{source}-java", files, manifests)
    return metadata_file


def interleaved(metadata_file: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """icepark's uncached runs (:func:`uncached_runs`) and, with ``--java``, the reference's
    timings, in ``--rounds`` turns, each the best over the rounds: the machine's speed drifts
    within minutes, and turns let both systems see the same spells of it. Each round starts
    the reference afresh after icepark's runs, warmed up by five untimed runs per scan (the
    issue's protocol; its JIT keeps getting faster with more: ``--keep-java`` keeps one
    session for all rounds), and closes it before the next round's: no JVM is alive while
    icepark is timed (an idle Spark driver's threads take turns on the same two cores). The
    reference is timed ``2 * --repeat`` times a round, as many runs as icepark's two
    processes time."""
    java = None
    rounds: list[dict[str, dict[str, Any]]] = []
    timed: list[dict[str, Any]] = []
    try:
        for turn in range(args.rounds):
            rounds.append(uncached_runs(metadata_file, args.repeat,
                                        () if args.no_baselines else args.baselines.split(","),
                                        args.warmup))
            if not args.java:
                continue
            if java is None:
                java = JavaPlanner(metadata_file, args.java_threads)
            timed.append(java.times(2 * args.repeat, 5 if turn == 0 or not args.keep_java else 1))
            if not args.keep_java:
                java.close()
                java = None
    finally:
        if java is not None:
            java.close()
    out: dict[str, dict[str, Any]] = {}
    for name in rounds[0]:
        out[name] = best_of([r[name] for r in rounds])
        out[name]["rss_mb"] = max(r[name]["rss_mb"] for r in rounds)
    if timed:
        out["java"] = best_of(timed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true",
                        help="also the 1,000,000-file table (about a minute to write once)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs of each scan in each icepark process before it is "
                             "timed (the first loads the kernel and generates the readers; "
                             "the reference gets 5, for its JIT)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="turns of icepark's uncached runs and the reference's timings "
                             "(each reported as its best over the turns)")
    parser.add_argument("--keep-java", action="store_true",
                        help="one reference session for every round (warmed up once, then "
                             "by each round's runs), instead of a fresh one per round")
    parser.add_argument("--cache", default="/tmp/icepark-bench-planning")
    parser.add_argument("--layouts", default=",".join(LAYOUTS),
                        help="whose writers wrote the manifests (icepark, pyiceberg, java)")
    parser.add_argument("--java", action="store_true",
                        help="also time the Java reference's planning (its own environment)")
    parser.add_argument("--java-threads", type=int, default=None,
                        help="the reference's worker pool size (default: the CPUs, at least 2)")
    parser.add_argument("--no-pyiceberg", action="store_true", help="skip timing pyiceberg")
    parser.add_argument("--sizes", default=None,
                        help="the tables: 100k, 1m or both (default: 100k, both with --large)")
    parser.add_argument("--baselines", default=",".join(BASELINES),
                        help="icepark's own baselines to time (default: all)")
    parser.add_argument("--no-baselines", action="store_true",
                        help="skip icepark's own baselines (the Python decoder, inflating "
                             "while decoding, four threads reading ahead, rows checked one "
                             "by one)")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "METADATA"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.repeat, args.warmup)))
        return
    sizes = (args.sizes.split(",") if args.sizes
             else ["100k", "1m"] if args.large else ["100k"])
    rows: list[str] = []
    for size in sizes:
        files, manifests = SIZES[size]
        for layout in args.layouts.split(","):
            metadata_file = layout_metadata(layout, args.cache, files, manifests)
            runs = {"cached": run_worker("icepark", metadata_file, args.repeat, args.warmup,
                                         ICEPARK_PLANNING_WORKERS="1"),
                    **interleaved(metadata_file, args)}
            java = runs.pop("java", None)
            theirs = (None if args.no_pyiceberg
                      else run_worker("pyiceberg", metadata_file, args.repeat, args.warmup))
            for name in FILTERS:
                cached, uncached = runs["cached"][name], runs["uncached"][name]
                cells = [f"{files:,}", layout, name, f"{cached['files']:,}",
                         f"{uncached['seconds']:.3f}"]
                for baseline in BASELINES:
                    b = runs[baseline][name] if baseline in runs else None
                    cells += (["", ""] if b is None else [
                        f"{b['seconds']:.3f}", f"{b['seconds'] / uncached['seconds']:.2f}x"])
                cells.append(f"{cached['seconds']:.3f}")
                for other in (theirs, java):
                    if other is None:
                        cells += ["", "", ""]
                        continue
                    b = other[name]
                    if b["files"] != cached["files"]:
                        print(f"WARNING {size} {layout} {name}: icepark planned "
                              f"{cached['files']} files, the peer {b['files']}",
                              file=sys.stderr)
                    cells += [f"{b['seconds']:.3f}",
                              f"{b['seconds'] / uncached['seconds']:.2f}x",
                              f"**{b['seconds'] / cached['seconds']:.2f}x**"]
                mine = f"{uncached['median']:.3f}"
                cells += ([mine, "", ""] if java is None else [
                    mine, f"{java[name]['median']:.3f}",
                    f"{java[name]['median'] / uncached['median']:.2f}x"])
                rows.append("| " + " | ".join(cells) + " |")
            rss = {name: f"{r['rss_mb']:.0f}" for name, r in runs.items()}
            rows.append(f"| {files:,} | {layout} | peak RSS MB | | "
                        f"{rss['uncached']} | {rss.get('python', '')} | | "
                        f"{rss.get('in_decoder', '')} | | "
                        f"{rss.get('four_readers', '')} | | "
                        f"{rss.get('row_checks', '')} | | "
                        f"{rss.get('by_file', '')} | | "
                        f"{runs['cached']['rss_mb']:.0f} | "
                        + (f"{theirs['rss_mb']:.0f} | | |" if theirs else " | | |")
                        + " | | | | | |")
    print(f"\nScan planning in one process (as in a Spark driver), best of {args.repeat} "
          f"after {args.warmup} untimed run(s) of each scan in each process: "
          f"seconds to list the planned files ({os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}). icepark uncached: every scan decodes the manifests "
          "(io.manifest.cache-enabled=false), its large blocks by the compiled kernel "
          "(the default) or all by the generated Python decoder (ICEPARK_AVRO_KERNEL=0), "
          "or with the manifests read ahead left deflated for the decoding thread to inflate "
          "(inflated while decoding), or read ahead by four threads instead of one, or with "
          "every block of data files checked row by row instead of at once, or with local "
          "manifests read ahead and inflated a file at a time on a thread and the kernel run "
          "by the decoding thread instead of in batches, each the best of two processes run "
          "in turns"
          + (f", in {args.rounds} rounds alternating with the reference's timings (the best "
             "over the rounds, for both)" if args.rounds > 1 else "")
          + "; cached: repeated scans reuse the decoded manifests (the default). Java: the "
          f"reference after 5 warm-up runs per scan, timed {2 * args.repeat} times a round "
          "(as many as icepark's two processes)"
          + ((" in a fresh session each round, started after icepark's runs and closed "
              "before the next round's" if not args.keep_java else
              " (one session for every round, one more warm-up run before each later round)")
             if args.rounds > 1 else "")
          + ", its worker pool "
          + ("a thread per CPU, at least 2" if args.java_threads is None
             else f"{args.java_threads} thread(s)") + ".\n")
    print("| files | manifests by | scan | files planned | icepark uncached | uncached, "
          "Python decoder | kernel speed-up | uncached, inflated while decoding | "
          "inflate-ahead speed-up | uncached, four threads reading ahead | one-reader "
          "speed-up | uncached, checked row by row | block-check speed-up | uncached, a file "
          "at a time | batches speed-up | icepark cached | "
          "pyiceberg | "
          "vs pyiceberg (uncached) | vs pyiceberg (cached) | Java | vs Java (uncached) | "
          "vs Java (cached) | icepark uncached median | Java median | vs Java (medians) |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
