"""The Java reference runtime as a peer: one Spark 3.5 session with Apache Iceberg's Spark
runtime, driven over stdin/stdout by :mod:`tools.javaref.client`.

This script runs in its own environment, ``.venv-javaref`` (``make javaref``: ``pyspark==3.5.8``
and ``snowpark-connect-deps-iceberg==1.0.2``, which carries Iceberg 1.10.2's
``iceberg-spark-runtime-3.5_2.12`` jar), because PySpark 3.5 cannot share a process or a venv
with icepark's PySpark 4. Nothing of icepark is imported here.

The session has one catalog, ``ref``: Iceberg's ``SparkCatalog`` of type ``hadoop`` over the
warehouse given as the first argument, the same layout as icepark's ``FilesystemCatalog``
(``<warehouse>/<namespace>/<table>/metadata/v<N>.metadata.json``), so both engines see the same
tables. Timestamps are UTC (the JVM, the session and the Python side).

Protocol: one JSON request per line on stdin, one JSON response per line on stdout.

* ``{"sql": "...", "collect": true}`` runs a statement; with ``collect``, the response carries
  the rows as ``base64(pickle(list of dicts))`` (nested rows as dicts; values as PySpark
  collects them: ``datetime``, ``date``, ``Decimal``, ``bytearray``...).
* ``{"python": "..."}`` runs Python code with ``spark`` (and so ``spark._jvm`` for the Java
  API) in scope; the value it leaves in ``result`` comes back pickled.

A response is ``{"ok": true, "result": "<base64>"}`` or ``{"ok": false, "error": "<class>",
"message": "<first lines>"}``. Spark's own console output goes to stderr.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import pickle
import sys
import traceback
from typing import Any

RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def _runtime_jar() -> str:
    pattern = os.path.join(sys.prefix, "lib", "python*", "site-packages",
                           "snowpark_connect_deps_iceberg", "jars", RUNTIME_JAR)
    found = glob.glob(pattern)
    if not found:
        raise SystemExit(f"javaref: {RUNTIME_JAR} not found under {sys.prefix}: "
                         "run `make javaref`")
    return found[0]


def _session(warehouse: str) -> Any:
    from pyspark.sql import SparkSession  # noqa: PLC0415 - PySpark 3.5, of .venv-javaref

    return (SparkSession.builder.master("local[2]").appName("iceberg-java-reference")
            .config("spark.jars", _runtime_jar())
            .config("spark.sql.extensions", EXTENSIONS)
            .config("spark.sql.catalog.ref", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.ref.type", "hadoop")
            .config("spark.sql.catalog.ref.warehouse", warehouse)
            # icepark changes tables behind the reference's back: never serve a cached one
            .config("spark.sql.catalog.ref.cache-enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions",
                    f"-Duser.timezone=UTC {os.environ.get('JAVAREF_JAVA_OPTIONS', '')}")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate())


def _plain(value: Any) -> Any:
    """A collected value with rows turned into dicts (recursively), picklable without PySpark."""
    from pyspark.sql import Row  # noqa: PLC0415

    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _handle(spark: Any, request: dict[str, Any]) -> Any:
    if "sql" in request:
        df = spark.sql(request["sql"])
        return _plain(df.collect()) if request.get("collect") else None
    scope: dict[str, Any] = {"spark": spark, "result": None}
    exec(request["python"], scope)
    return _plain(scope["result"])


def main() -> None:
    warehouse = sys.argv[1]
    out = sys.stdout
    sys.stdout = sys.stderr  # anything printed by Spark or by steps must not break the protocol
    spark = _session(warehouse)
    out.write(json.dumps({"ok": True, "ready": spark.version}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            result = _handle(spark, json.loads(line))
            payload = base64.b64encode(pickle.dumps(result)).decode("ascii")
            response: dict[str, Any] = {"ok": True, "result": payload}
        except Exception as exc:
            text = str(exc).strip()
            response = {"ok": False, "error": type(exc).__name__,
                        "message": "\n".join(text.splitlines()[:6]),
                        "trace": traceback.format_exc(limit=3)}
        out.write(json.dumps(response) + "\n")
        out.flush()
    spark.stop()


if __name__ == "__main__":
    main()
