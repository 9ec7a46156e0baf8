"""A throwaway PostgreSQL server from the machine's own binaries, for tests and benchmarks.

``initdb`` and ``pg_ctl`` run as the ``postgres`` user (PostgreSQL refuses to run as root) on a
private port and socket folder in a temporary data directory, which is removed on exit.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from tools.ports import free_port

BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def available() -> str | None:
    """Why a server cannot be started here, or None when it can."""
    if not BIN:
        return "no PostgreSQL server binaries under /usr/lib/postgresql"
    if shutil.which("runuser") is None or os.geteuid() != 0:
        return "needs root and runuser to run PostgreSQL as 'postgres'"
    return None


def _as_postgres(*args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *args], check=True,
                   capture_output=True, timeout=120)


@dataclass
class Server:
    """A running server: its SQLAlchemy URL (psycopg 3), and how to stop it early."""

    url: str
    data: str
    bindir: str
    stopped: bool = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            _as_postgres(f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")


@contextlib.contextmanager
def postgres_server(max_connections: int = 200) -> Iterator[Server]:
    """Start a server; stop it and delete its data on exit."""
    reason = available()
    if reason is not None:
        raise RuntimeError(f"Cannot start PostgreSQL: {reason}")
    bindir = BIN[-1]
    data = tempfile.mkdtemp(prefix="icepark-pg-")
    shutil.chown(data, "postgres", "postgres")
    port = free_port()
    _as_postgres(f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
    _as_postgres(f"{bindir}/pg_ctl", "-D", data, "-w", "-l", f"{data}/log", "-o",
                 f"-p {port} -k {data} -c listen_addresses=127.0.0.1 "
                 f"-c max_connections={max_connections}", "start")
    server = Server(f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", data, bindir)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
