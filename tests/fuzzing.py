"""Shared pieces of the fuzz tests: how many examples, reproducible settings, and a time bound.

Each fuzz test runs a fixed, derandomized set of examples so that CI is reproducible and fast.
``ICEPARK_FUZZ_EXAMPLES=<n>`` runs ``n`` examples per test instead, with fresh random examples
(``ICEPARK_FUZZ_SEED=<s>`` makes such a run repeatable)::

    ICEPARK_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/io/test_avro_fuzz.py
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import seed as hypothesis_seed

F = TypeVar("F", bound=Callable[..., Any])

EXAMPLES_VARIABLE = "ICEPARK_FUZZ_EXAMPLES"
SEED_VARIABLE = "ICEPARK_FUZZ_SEED"


def fuzz_examples(default: int) -> int:
    """``default``, or the number of examples ``ICEPARK_FUZZ_EXAMPLES`` asks for."""
    return int(os.environ.get(EXAMPLES_VARIABLE) or default)


def fuzz_settings(default_examples: int) -> Callable[[F], F]:
    """Hypothesis settings of a fuzz test: ``default_examples`` derandomized examples (the same
    every run), or an opt-in larger random run (see the module docstring). No deadline: an
    example's time is bounded by :func:`time_bound` instead, which fails a hang outright."""
    larger = os.environ.get(EXAMPLES_VARIABLE)
    chosen = settings(max_examples=fuzz_examples(default_examples), deadline=None,
                      derandomize=not larger, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

    def apply(test: F) -> F:
        test = chosen(test)
        fixed = os.environ.get(SEED_VARIABLE)
        if larger and fixed:
            test = hypothesis_seed(int(fixed))(test)
        return test

    return apply


class Hang(BaseException):
    """An example ran past its time bound: the code under test hangs (or nearly so). Not an
    ``Exception``, so that no ``except Exception`` in the code under test swallows it: catch
    it around the call and fail with :class:`AssertionError`."""


@contextlib.contextmanager
def time_bound(seconds: float, what: str) -> Iterator[None]:
    """Fail with :class:`Hang` if the block runs longer than ``seconds`` (a real timer signal,
    so a loop that never returns is interrupted; the main thread only, as pytest runs). Code
    stuck inside one C call never sees the signal: at twice the bound the process prints
    every thread's stack and exits, so that a hang cannot stall a test run."""

    def expired(signum: int, frame: Any) -> None:
        del signum, frame
        raise Hang(f"{what} ran longer than {seconds}s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(2 * seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
