"""One standalone Spark cluster for the run: a master and two workers started from the pyspark
package's own ``bin/spark-class`` on 127.0.0.1, each worker with one core, modest memory and a
work directory of its own, and stopped at the end (their process groups killed, their work
directories removed), whatever the tests did.

Nothing is installed on the workers but the Python package: their Python workers run this
interpreter (``PYSPARK_PYTHON``), whose environment has icepark installed, and no
``PYTHONPATH`` points at the sources. A driver runs in a process of its own (see
``cluster_driver.py``): a JVM holds one SparkContext, and the test processes hold a
``local[2]`` one. An S3 API endpoint (:mod:`tools.s3_server`) serves the driver's S3 table."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest
from tools.ports import free_port, listening
from tools.s3_server import S3Server, s3_server

SPARK_HOME = Path(pyspark.__file__).resolve().parent
WORKERS = 2
BRIEF_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Options of JVMs that live a minute or two: the C1 compiler only and the serial collector
(with them the test took 83 s of CPU time instead of 162 s)."""
REGISTERED = "Successfully registered with master"
"""What a worker logs once the master has accepted it."""


def clean_env(home: Path) -> dict[str, str]:
    """This process's environment without icepark's, Spark's or AWS's settings and without
    ``PYTHONPATH`` (the package comes from the interpreter's installation), with ``home`` as
    ``HOME`` (no user configuration) and this interpreter for every Python process Spark
    starts."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("ICEPARK_", "SPARK_", "PYSPARK_", "AWS_"))
           and k != "PYTHONPATH"}
    env.update({"HOME": str(home), "SPARK_HOME": str(SPARK_HOME),
                "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable})
    return env


@dataclass(frozen=True)
class Cluster:
    """A standalone cluster: its master URL, its workers' work directories (where each
    executor runs, in ``<work dir>/<app id>/<executor id>``), its logs and its daemons."""

    master: str
    work_dirs: tuple[Path, ...]
    logs: Path
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False,
                                                   compare=False)

    def log_tails(self, chars: int = 3000) -> str:
        """The end of every daemon log and executor ``stderr``: what to show when a run
        fails."""
        paths = [*sorted(self.logs.glob("*.log")),
                 *sorted(p for d in self.work_dirs for p in d.glob("*/*/stderr"))]
        return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-chars:]}" for p in paths)

    def await_workers(self, timeout: float = 180) -> None:
        """Wait until every worker has registered with the master. The fixture does not:
        workers register while a driver starts its JVM, which then waits for its
        executors."""
        self.wait(lambda: all(REGISTERED in (self.logs / f"worker-{i}.log").read_text(
            errors="replace") for i in range(len(self.work_dirs))),
            "the workers did not register with the master", timeout)

    def wait(self, ready: Callable[[], bool], what: str, timeout: float = 180) -> None:
        """Wait until ``ready()``; fail with the logs if a daemon exits or ``timeout``
        passes."""
        deadline = time.monotonic() + timeout
        while not ready():
            exited = [p.args for p in self.daemons if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                reason = f"exited: {exited}" if exited else f"not after {timeout:.0f} s"
                raise RuntimeError(f"The Spark cluster failed: {what} ({reason})\n"
                                   f"{self.log_tails()}")
            time.sleep(0.25)

    def start(self, args: Sequence[str], log: str, env: dict[str, str]) -> None:
        """``spark-class *args`` in a process group of its own, output to ``log``."""
        with (self.logs / log).open("wb") as out:
            self.daemons.append(subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True))

    def stop(self) -> None:
        """Stop every daemon's process group (spark-class's JVM, and a worker's executors
        and their Python workers), workers first."""
        for process in reversed(self.daemons):
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(wait)
                    break


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Server]:
    """An S3 API endpoint (:mod:`tools.s3_server`) for the run."""
    with s3_server() as server:
        yield server


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The run's cluster: the master listening, the workers started (see
    :meth:`Cluster.await_workers`); stopped, and its work directories removed, at the end."""
    root = tmp_path_factory.mktemp("spark-cluster")
    port = free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}",
                      tuple(root / f"worker-{i}" for i in range(WORKERS)), root / "logs")
    cluster.logs.mkdir()
    (root / "conf").mkdir()
    env = clean_env(root)
    env.update({
        # the daemons are bookkeepers: small heaps; executors get their memory from the app
        "SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": BRIEF_JVM,
        # no REST submission server (a fixed port, 6066); executors' scratch space in root
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_LOCAL_DIRS": str(root / "local"), "SPARK_CONF_DIR": str(root / "conf")})
    try:
        cluster.start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(port), "--webui-port", "0"], "master.log", env)
        # a worker that finds no master retries only after 5-15 s: wait for it
        cluster.wait(lambda: listening(port), f"the master did not listen on {port}")
        for i, work_dir in enumerate(cluster.work_dirs):
            work_dir.mkdir()
            cluster.start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                           "--port", "0", "--webui-port", "0", "--cores", "1",
                           "--memory", "1g", "--work-dir", str(work_dir), cluster.master],
                          f"worker-{i}.log", env)
        yield cluster
    finally:
        cluster.stop()
        for work_dir in cluster.work_dirs:
            shutil.rmtree(work_dir, ignore_errors=True)
        shutil.rmtree(root / "local", ignore_errors=True)
