"""One Spark Connect server for the run, started from the pyspark package's own
``sbin/start-connect-server.sh`` (its ``spark-connect`` jar is in ``pyspark/jars``), on
127.0.0.1, and stopped at the end. Clients run in their own processes: PySpark picks classic
or Connect functions per process, and the test processes hold a classic session."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from tools.cluster import BRIEF_JVM
from tools.ports import free_port, listening

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SRC = Path(__file__).resolve().parents[2] / "src"


def server_env(root: Path) -> dict[str, str]:
    """The server's environment: its Python workers run this interpreter, which has icepark
    installed (as a cluster's workers would have the package)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ICEPARK_")}
    env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_PID_DIR": str(root),
                "SPARK_LOG_DIR": str(root / "logs"), "SPARK_IDENT_STRING": f"icepark{os.getpid()}",
                "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
                "PYTHONPATH": str(SRC), "HOME": str(root)})
    return env


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("connect-server")
    port = free_port()
    env = server_env(root)
    start = SPARK_HOME / "sbin" / "start-connect-server.sh"
    subprocess.run(
        ["bash", str(start), "--master", "local[2]", "--driver-java-options", BRIEF_JVM,
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
         # as ips.build_session: no Python call sites recorded per DataFrame call
         "--conf", "spark.python.sql.dataFrameDebugging.enabled=false"],
        env=env, check=True, capture_output=True, timeout=120)
    try:
        deadline = time.monotonic() + 180
        while not listening(port):
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text(errors="replace")[-3000:]
                                 for p in (root / "logs").glob("*.out"))
                raise RuntimeError(f"the Connect server did not listen on {port}:\n{logs}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", str(SPARK_HOME / "sbin" / "stop-connect-server.sh")],
                       env=env, check=False, capture_output=True, timeout=120)
