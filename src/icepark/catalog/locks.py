"""Commit locks: writers of one table take turns instead of racing.

The spec's optimistic concurrency is correct on its own: a commit is a compare-and-swap of the
metadata pointer, and a writer that loses "goes back to step 1". Under contention it is
wasteful and unfair, though: with N writers each round has one winner and N-1 losers who
rebuild their manifest list and metadata file and try again, and after the reference's 4
retries some give up (measured: 6% of appends at 8 writers, 21% at 16). A lock per table
around *refresh, apply, swap* lets the next writer wait for its turn instead, so a change that
cannot conflict never fails.

The lock is an optimisation, never what correctness rests on: the compare-and-swap still
decides, so writers that do not take it (other engines, icepark with ``lock.enabled=false``)
stay safe, and a writer that cannot get the lock within ``lock.acquire-timeout-ms`` goes ahead
optimistically. Every lock here is released by the operating system or the database server
when its holder dies (``kill -9`` included): an ``flock`` on a local file or directory, or a
PostgreSQL transaction-level advisory lock.

Catalog properties (the names of the reference's lock managers where they exist):

* ``lock.enabled``: ``true`` (default) or ``false``;
* ``lock.acquire-timeout-ms``: how long a writer waits for its turn (default 180000, as the
  reference's lock managers).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import AbstractContextManager

from icepark.errors import ValidationError

log = logging.getLogger(__name__)

LOCK_ENABLED = "lock.enabled"
LOCK_ACQUIRE_TIMEOUT_MS = "lock.acquire-timeout-ms"
DEFAULT_ACQUIRE_TIMEOUT_MS = 180_000
_FIRST_POLL_S, _LAST_POLL_S = 0.0005, 0.02


def lock_enabled(properties: Mapping[str, str]) -> bool:
    """``lock.enabled`` (default true).

    >>> lock_enabled({}), lock_enabled({"lock.enabled": "false"})
    (True, False)
    """
    return properties.get(LOCK_ENABLED, "true").strip().lower() != "false"


def acquire_timeout_s(properties: Mapping[str, str]) -> float:
    """``lock.acquire-timeout-ms`` in seconds (default 180).

    >>> acquire_timeout_s({"lock.acquire-timeout-ms": "1500"})
    1.5
    >>> acquire_timeout_s({"lock.acquire-timeout-ms": "soon"})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Catalog property lock.acquire-timeout-ms must be a \
number of milliseconds (0 or more), not 'soon'
    """
    raw = properties.get(LOCK_ACQUIRE_TIMEOUT_MS)
    if raw is None:
        return DEFAULT_ACQUIRE_TIMEOUT_MS / 1000
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValidationError(f"Catalog property {LOCK_ACQUIRE_TIMEOUT_MS} must be a number of "
                              f"milliseconds (0 or more), not {raw!r}")
    return value / 1000


def lock_key(*parts: str) -> bytes:
    """A stable digest of a lock's name (catalog, namespace, table), for file names and
    database lock keys: the same in every process (unlike ``hash``), so writers meet on it.

    >>> lock_key("cat", "db", "t").hex()[:16]
    '4964a31d8325b379'
    >>> lock_key("cat", "db.t") != lock_key("cat", "db", "t")
    True
    """
    return hashlib.sha256("\0".join(("icepark-commit", *parts)).encode()).digest()


@contextlib.contextmanager
def flock(path: str, timeout_s: float, *, create: bool = True) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (a directory, or a file, created with its
    folder when missing and ``create``) for the ``with`` block; yields False, holding
    nothing, when the path is missing, the lock was not free within ``timeout_s`` or cannot
    be taken on that file system.

    ``flock`` belongs to the open file, so threads of one process exclude each other too; the
    kernel drops it when the holder dies. Waiting polls with growing, jittered sleeps (at most
    20 ms), so a waiter never sleeps through more than a short commit.
    """
    try:
        if os.path.isdir(path):
            fd = os.open(path, os.O_RDONLY)
        elif create:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        else:
            yield False
            return
    except OSError as e:
        log.warning("Cannot open commit lock %s (%s): committing without it", path, e)
        yield False
        return
    try:
        held = _acquire(fd, path, timeout_s)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_HELD = threading.local()


@contextlib.contextmanager
def once_per_thread(key: Hashable,
                    take: Callable[[], AbstractContextManager[bool]]) -> Iterator[bool]:
    """The lock ``take()`` holds, taken only if this thread does not hold ``key`` already: a
    commit nested in another commit of the same table waits for nobody (it would otherwise
    wait for itself).

    >>> import contextlib
    >>> def take():
    ...     print("taken")
    ...     return contextlib.nullcontext(True)
    >>> with once_per_thread("t", take) as outer, once_per_thread("t", take) as inner:
    ...     outer, inner
    taken
    (True, True)
    """
    held: set[Hashable] = _HELD.__dict__.setdefault("keys", set())
    if key in held:
        yield True
        return
    with take() as got:
        if got:
            held.add(key)
        try:
            yield got
        finally:
            held.discard(key)


def _acquire(fd: int, path: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    pause = _FIRST_POLL_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                log.warning("Cannot lock %s (%s): committing without the lock", path, e)
                return False
        left = deadline - time.monotonic()
        if left <= 0:
            log.warning("The commit lock %s was not free within %.1f s: committing without "
                        "it", path, timeout_s)
            return False
        time.sleep(min(left, random.uniform(pause / 2, pause)))
        pause = min(_LAST_POLL_S, pause * 2)
