"""The driver's cost per Spark job of small row-level operations, with PySpark 4's DataFrame
debugging (``spark.python.sql.dataFrameDebugging.enabled``, on by default in PySpark) and
without it (what :func:`icepark.spark.build_session` sets).

    PYTHONPATH=src:. python -m benchmarks bench_driver_overhead [--repeat 3]

PySpark reads the setting once per process, so each variant runs in a process of its own
(``local[2]``), the two alternating, best of ``--repeat``. The workload, timed inside the
process after a warm-up write: on a 20,000-row table partitioned by ``bucket(8, id)``, five
updates, five merges (copy-on-write and merge-on-read), five deletes and five filtered reads.
Ratio = with debugging off / on (below 1.0: off is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOAD = r'''
import json, sys, time
import icepark, icepark.spark as ips
debugging, folder = sys.argv[1], sys.argv[2]
spark = ips.build_session("local[2]", "icepark-bench-driver", {
    "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
    "spark.python.sql.dataFrameDebugging.enabled": debugging})
catalog = icepark.load_catalog("bench", type="sql", uri=f"sqlite:///{folder}/c.db",
                               warehouse=folder)
catalog.create_namespace("db")
ips.configure(spark, catalog)
rows = spark.sql("SELECT id, CAST(id % 97 AS STRING) AS kind, id * 1.5 AS amount "
                 "FROM range(20000)")
for name, mode in (("cow", "copy-on-write"), ("mor", "merge-on-read")):
    ips.write(rows, f"db.{name}", create=True, partition_by=["bucket(8, id)"],
              properties={"write.delete.mode": mode, "write.update.mode": mode,
                          "write.merge.mode": mode})
start = time.perf_counter()
for i in range(5):
    name = ("cow", "mor")[i % 2]
    ips.update(spark, f"db.{name}", set={"amount": "amount + 1"},
               where=f"id >= {i * 3000} AND id < {i * 3000 + 400}")
    source = spark.sql(f"SELECT id, 'm{i}' AS kind, 0.0 AS amount FROM range({i * 300}, "
                       f"{i * 300 + 600})")
    (ips.merge(f"db.{name}", source, on="t.id = s.id").when_matched_update_all()
     .when_not_matched_insert_all().execute())
    ips.delete(spark, f"db.{name}", f"kind = '{i}'")
    ips.read(spark, f"db.{name}", row_filter=f"kind = 'm{i}'").count()
print(json.dumps({"seconds": time.perf_counter() - start}))
spark.stop()
'''


def _run(debugging: str) -> float:
    with tempfile.TemporaryDirectory(prefix="icepark-bench-driver-") as folder:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
               "PYSPARK_DRIVER_PYTHON": sys.executable}
        result = subprocess.run([sys.executable, "-c", WORKLOAD, debugging, folder],
                                capture_output=True, text=True, env=env, check=True,
                                cwd=Path(__file__).resolve().parents[1], timeout=1800)
        seconds: float = json.loads(result.stdout.strip().splitlines()[-1])["seconds"]
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"true": [], "false": []}
    for _ in range(args.repeat):
        for debugging in ("true", "false"):
            times[debugging].append(_run(debugging))
    on, off = min(times["true"]), min(times["false"])
    print("| DataFrame debugging | best s | all runs s |")
    print("|---|---:|---|")
    for label, key in (("on (PySpark's default)", "true"), ("off (build_session)", "false")):
        print(f"| {label} | {min(times[key]):.1f} | "
              f"{', '.join(f'{t:.1f}' for t in times[key])} |")
    print(f"\noff / on: {off / on:.2f}x")


if __name__ == "__main__":
    main()
