"""A standalone Spark cluster on 127.0.0.1 from the pyspark package's own ``bin/spark-class``:
a master and workers, each worker with its cores, memory and a work directory of its own
(:func:`standalone_cluster`); for the cluster tests and the planning benchmark.

Nothing is installed on the workers: their Python workers run this interpreter
(``PYSPARK_PYTHON``) with the environment :func:`clean_env` gives them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tools.ports import free_port, listening

SPARK_HOME = Path(pyspark.__file__).resolve().parent
BRIEF_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Options of JVMs that live a minute or two: the C1 compiler only and the serial collector
(with them the test took 83 s of CPU time instead of 162 s)."""
BRIEF_SUBMIT_ARGS = f"--driver-java-options '{BRIEF_JVM}' pyspark-shell"
"""``PYSPARK_SUBMIT_ARGS`` giving a Spark driver started from Python the :data:`BRIEF_JVM`."""
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



@contextlib.contextmanager
def standalone_cluster(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       env: Mapping[str, str] | None = None) -> Iterator[Cluster]:
    """A cluster with its files under ``root``: the master listening, the workers started
    (see :meth:`Cluster.await_workers`); stopped, and its work directories removed, at the
    end. ``env`` adds to the daemons' (and so the executors') environment."""
    port = free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}",
                      tuple(root / f"worker-{i}" for i in range(workers)), root / "logs")
    cluster.logs.mkdir(parents=True)
    (root / "conf").mkdir()
    daemon_env = clean_env(root)
    daemon_env.update({
        # the daemons are bookkeepers: small heaps; executors get their memory from the app
        "SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": BRIEF_JVM,
        # no REST submission server (a fixed port, 6066); executors' scratch space in root
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_LOCAL_DIRS": str(root / "local"), "SPARK_CONF_DIR": str(root / "conf"),
        **(env or {})})
    try:
        cluster.start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(port), "--webui-port", "0"], "master.log", daemon_env)
        # a worker that finds no master retries only after 5-15 s: wait for it
        cluster.wait(lambda: listening(port), f"the master did not listen on {port}")
        for i, work_dir in enumerate(cluster.work_dirs):
            work_dir.mkdir()
            cluster.start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                           "--port", "0", "--webui-port", "0", "--cores", str(cores),
                           "--memory", memory, "--work-dir", str(work_dir), cluster.master],
                          f"worker-{i}.log", daemon_env)
        yield cluster
    finally:
        cluster.stop()
        for work_dir in cluster.work_dirs:
            shutil.rmtree(work_dir, ignore_errors=True)
        shutil.rmtree(root / "local", ignore_errors=True)
