"""Container files inflated, and their records run through the kernel, on one thread ahead of
the thread decoding them, a batch of files per call.

A thread that calls code releasing the GIL (zlib, the kernel) must take the GIL back after
each call, and while the thread decoding manifests runs Python it gets it only when that
thread lets it go: at the interpreter's switch interval (5 ms) at the latest. A thread reading
ahead a file at a time, with a call to inflate it and one to run the kernel, then waits longer
than it works. Here the decoding thread reads the files (its reads release the GIL only while
the operating system copies them) and hands them over in batches; :class:`InflateAhead`'s
thread makes one call per batch (:func:`icepark.io.avro.inflate.inflate_files`), which
inflates every file into one uncompressed block (as
:func:`~icepark.io.avro.inflate.inflate_container` does) and runs the kernel over it with the
program of the reader that will decode it, learnt from the files of the same schema decoded
before (:func:`~icepark.io.avro.native.last_program`). The decoding thread then takes the run
(:func:`~icepark.io.avro.native.ran_ahead`) instead of running the kernel itself.

Imported only through :func:`icepark.io.avro.native.inflate_ahead`, where numba and zlib can
be loaded.
"""

from __future__ import annotations

import io
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from icepark.errors import IcebergError
from icepark.io.avro import inflate
from icepark.io.avro.header import encode_header
from icepark.io.avro.native import MIN_RECORDS, SAMPLE_STEP, Ran
from icepark.io.avro.reader import ContainerHeader, open_header

Program = tuple[Any, Any, int]
"""A reader's kernel program: ops, key sets, slot count (see
:func:`icepark.io.avro.native.last_program`)."""
_Job = tuple["Future[list[Inflated | None]]", tuple[Any, ...], "Program | None"]
_NO_PROGRAM: Program = (np.zeros((1, 4), np.int64), np.zeros((1, 1), np.int64), 1)


@dataclass(frozen=True, slots=True)
class Deflated:
    """A container file to inflate ahead: its bytes, its header (its codec ``deflate``) and
    where its first block starts."""

    content: bytes
    header: ContainerHeader
    start: int


def deflated(content: bytes) -> Deflated | None:
    """``content`` to inflate ahead; None when it is not a container file compressed with
    ``deflate`` (its reader reads it as it is, and reports what is wrong with it)."""
    stream = io.BytesIO(content)
    try:
        header = open_header(stream, "")
    except IcebergError:
        return None
    return Deflated(content, header, stream.tell()) if header.codec == "deflate" else None


@dataclass(frozen=True, slots=True)
class Inflated:
    """A file inflated ahead: the same container file with one uncompressed block, and the
    kernel's run over that block, or None."""

    content: bytes
    ran: Ran | None


class InflateAhead:
    """One thread inflating batches of container files (:meth:`submit`), in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="icepark-inflate", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            done, args, program = job
            if not done.set_running_or_notify_cancel():
                continue
            try:  # one call, one release of the GIL, for the whole batch
                results = inflate.inflate_files(*args)
                done.set_result([_inflated(r, program) for r in results])
            except BaseException as e:  # handed to the thread waiting for the batch
                done.set_exception(e)

    def submit(self, files: Sequence[tuple[Deflated, bool]], program: Program | None
               ) -> Future[list[Inflated | None]]:
        """``files`` inflated, each with the kernel's run of ``program`` where its flag is
        true, on the thread: each an :class:`Inflated`, or None where it cannot be inflated
        that way (its reader reports what is wrong)."""
        prefixes = [encode_header({**f.header.metadata, "avro.codec": b"null"}, f.header.sync)
                    for f, _ in files]
        rows = np.zeros((len(files), 7), np.int64)
        at = prefix_at = 0
        for i, ((f, run), prefix) in enumerate(zip(files, prefixes, strict=True)):
            rows[i] = (at, at + len(f.content), f.start, f.header.smallest,
                       run and program is not None, prefix_at, prefix_at + len(prefix))
            at += len(f.content)
            prefix_at += len(prefix)
        syncs = np.frombuffer(b"".join(f.header.sync for f, _ in files), np.uint8)
        ops, keysets, slots = program or _NO_PROGRAM
        done: Future[list[Inflated | None]] = Future()
        self._jobs.put((done, (np.frombuffer(b"".join(f.content for f, _ in files), np.uint8),
                               rows, np.frombuffer(b"".join(prefixes), np.uint8),
                               syncs.reshape(len(files), 16), inflate.VERSION, ops, keysets,
                               slots, MIN_RECORDS), program))
        return done

    def close(self) -> None:
        """Stop the thread once the batches submitted are done."""
        self._jobs.put(None)


def _inflated(result: tuple[Any, ...], program: Program | None) -> Inflated | None:
    status, out, start, end, count, ran = result
    if status != inflate.OK:
        return None
    content = out.tobytes()
    if ran[0] < 0 or program is None:
        return Inflated(content, None)
    return Inflated(content, Ran(program, count, end - start, content[start:end:SAMPLE_STEP],
                                 ran))
