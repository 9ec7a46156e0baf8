"""Two contenders timed in the same turns, compared turn by turn.

A benchmark that runs two systems one after the other in every turn gets pairs of times whose
ratio cancels what the turn shared (the machine's load at that moment, its caches). The best
and the median of each system's own times do not: a slow turn of one and a quick turn of the
other can make a tie look like a lead. :func:`compare` gives the median of the turns' ratios
and a confidence interval for it that assumes nothing about how the times are spread (the sign
test's interval, from the binomial distribution of how many ratios fall below the true median),
and reads it: *ahead* when the whole interval is below 1.00, *behind* when it is above, *level*
when it holds 1.00 (the turns cannot tell the two apart).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    """``first`` against ``second`` over the turns both ran."""

    turns: int
    faster: int
    """Turns in which the first took less time than the second."""
    median: float
    """Median of the turns' ratios, first / second."""
    low: float
    high: float
    """The interval for the median ratio (0 and infinity: too few turns to give one)."""
    coverage: float
    """The interval's confidence (at least the one asked for, when there are enough turns)."""

    @property
    def verdict(self) -> str:
        if self.high < 1.0:
            return "ahead"
        if self.low > 1.0:
            return "behind"
        return "level"


def order_statistic_rank(turns: int, confidence: float) -> int:
    """The largest ``k`` (1-based; 0 if none) such that the ``k``-th smallest and ``k``-th
    largest of ``turns`` ratios bound their median with at least ``confidence``: the chance
    that fewer than ``k`` of them fall below it (Binomial(turns, 1/2)) is at most half of
    ``1 - confidence``.

    >>> order_statistic_rank(7, 0.95), order_statistic_rank(15, 0.95), order_statistic_rank(5, 0.95)
    (1, 4, 0)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    k = 0
    while k < turns and _chance_fewer_below(turns, k + 1) <= (1.0 - confidence) / 2:
        k += 1
    return k


def _chance_fewer_below(turns: int, k: int) -> float:
    """P(Binomial(turns, 1/2) < k): the chance that fewer than ``k`` of ``turns`` ratios fall
    below their median."""
    return sum(math.comb(turns, i) for i in range(k)) / 2.0 ** turns


def compare(first: Sequence[float], second: Sequence[float],
            confidence: float = 0.95) -> Comparison:
    """``first`` against ``second``, the times of the same turns in the same order."""
    if len(first) != len(second) or not first:
        raise ValueError(f"need the same turns of both, not {len(first)} and {len(second)}")
    if min(first) <= 0 or min(second) <= 0:
        raise ValueError("times must be positive")
    ratios = sorted(a / b for a, b in zip(first, second, strict=True))
    n = len(ratios)
    k = order_statistic_rank(n, confidence)
    if k == 0:
        low, high, coverage = 0.0, math.inf, 1.0
    else:
        low, high = ratios[k - 1], ratios[n - k]
        coverage = 1.0 - 2 * _chance_fewer_below(n, k)
    return Comparison(turns=n, faster=sum(a < b for a, b in zip(first, second, strict=True)),
                      median=statistics.median(ratios), low=low, high=high, coverage=coverage)
