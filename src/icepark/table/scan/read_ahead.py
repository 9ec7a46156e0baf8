"""Data manifests on this machine's file system read by the planning thread, and inflated and
run through the Avro kernel on one thread ahead of it (:mod:`icepark.io.avro.ahead`).

The planning thread reads each batch of manifests (a read from the page cache holds it
briefly) and hands the batch to the inflating thread, which makes one call for it: it takes
the GIL back once per batch, not after every file and every call as a thread reading ahead a
file at a time does. Two batches are in flight; the first ones are small, so that decoding
starts soon, and the kernel's program for a manifest is the one its reader ran for the last
manifest of the same schema and partition spec decoded here (so the first manifests of a
schema run the kernel on the planning thread, and teach it).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from icepark.io.avro.native import last_program, ran_ahead
from icepark.spec.manifest import ManifestFile

R = TypeVar("R")
BATCHES = (1, 2, 4, 8)
"""Manifests handed over at once, batch after batch (then the last, again and again)."""
BATCH_BYTES = 4 * 1024 * 1024
"""A batch ends once its manifests are this long (they inflate to about six times this)."""
FIRST_SHARE = 0.5
"""The share of the first batch's manifests whose kernel runs ahead (see :data:`SHARE_STEP`),
halfway: which share keeps both threads busy depends on the manifests (inflating one of large
blocks takes about twice as long as running the kernel over it, inflating one of a record per
block several times as long) and on the scan (a filter that rejects most files leaves the
planning thread less to do)."""
SHARE_STEP = 0.25
"""How much the share of a batch's manifests whose kernel runs ahead grows after a batch was
ready before the planning thread needed it, or shrinks after it was not (manifests of a record
per block take longer to inflate than to decode: the inflating thread then runs none)."""
_Job = tuple[ManifestFile, "bytes | None", Any, int]


def inflated_ahead(ahead: Any, manifests: list[ManifestFile],
                   read: Callable[[ManifestFile], tuple[ManifestFile, bytes | None]],
                   decode: Callable[[tuple[ManifestFile, bytes | None]], R],
                   max_bytes: int) -> Iterator[R]:
    """``decode`` of each of ``manifests`` (``read`` gives its bytes, or None for one the
    decoder reads itself), in order, those of at most ``max_bytes`` inflated ahead through
    ``ahead`` (the module :mod:`icepark.io.avro.ahead`)."""
    engine = ahead.InflateAhead()
    programs: dict[tuple[bytes, int], Any] = {}
    remaining = iter(manifests)
    sizes = itertools.chain(BATCHES, itertools.repeat(BATCHES[-1]))
    share = [FIRST_SHARE]  # of each batch's manifests, how many the kernel runs for ahead

    def batch(size: int) -> tuple[list[_Job], Future[list[Any]] | None]:
        jobs: list[_Job] = []
        files: list[tuple[Any, bool]] = []
        program = None
        total = 0
        for asked in itertools.islice(remaining, size):
            try:
                m, content = read(asked)
            except Exception as e:  # raised in its turn, after the manifests before it
                failed.append(e)
                break
            found = (ahead.deflated(content)
                     if content is not None and len(content) <= max_bytes else None)
            slot = -1
            if found is not None:
                known = programs.get((found.header.metadata["avro.schema"],
                                      m.partition_spec_id))
                program = program or known
                slot = len(files)
                files.append((found, known is not None and known is program
                              and share[0] * size > len(files)))
            jobs.append((m, content, found, slot))
            total += len(content or b"")
            if total >= BATCH_BYTES:
                break
        return jobs, engine.submit(files, program) if files else None

    pending: deque[tuple[list[_Job], Future[list[Any]] | None]] = deque()
    failed: list[Exception] = []  # reading a manifest: no more are read
    try:
        while True:
            while len(pending) < 2 and not failed:
                jobs, future = batch(next(sizes))
                if not jobs:
                    break
                pending.append((jobs, future))
            if not pending:
                if failed:
                    raise failed[0]
                return
            jobs, future = pending.popleft()
            if future is not None and future.done():  # the inflating thread keeps ahead
                share[0] = min(1.0, share[0] + SHARE_STEP)
            elif future is not None:  # this thread waits for it: it takes less
                share[0] = max(0.0, share[0] - SHARE_STEP)
            done = future.result() if future is not None else []
            for m, content, found, slot in jobs:
                inflated = done[slot] if slot >= 0 else None
                last_program()  # forget the runs before this manifest's
                with ran_ahead(inflated.ran if inflated is not None else None):
                    result = decode((m, content if inflated is None else inflated.content))
                program = last_program()
                if program is not None and found is not None:
                    programs[(found.header.metadata["avro.schema"], m.partition_spec_id)] = \
                        program
                yield result
    finally:
        engine.close()
