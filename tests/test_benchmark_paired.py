"""The benchmarks' turn-by-turn comparison (benchmarks/paired.py): the sign test's interval
for the median ratio, checked against the binomial distribution counted out by hand."""

from __future__ import annotations

import itertools
import math

import pytest
from benchmarks.paired import compare, order_statistic_rank


def _chance_fewer_below(turns: int, k: int) -> float:
    """P(fewer than ``k`` of ``turns`` fair coin flips come up heads), by enumeration."""
    outcomes = list(itertools.product((0, 1), repeat=turns))
    return sum(sum(o) < k for o in outcomes) / len(outcomes)


@pytest.mark.parametrize("turns", range(1, 16))
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_rank_is_the_largest_with_the_confidence(turns: int, confidence: float) -> None:
    k = order_statistic_rank(turns, confidence)
    tail = (1 - confidence) / 2
    assert 0 <= k <= turns // 2 + 1
    assert _chance_fewer_below(turns, k) <= tail + 1e-12
    if k < turns:
        assert _chance_fewer_below(turns, k + 1) > tail


def test_known_ranks() -> None:
    # n = 7: only the extremes bound the median at 95% (coverage 1 - 2/128); n = 15: the 4th
    assert order_statistic_rank(7, 0.95) == 1
    assert order_statistic_rank(15, 0.95) == 4
    assert order_statistic_rank(5, 0.95) == 0


def test_ahead_behind_level() -> None:
    java = [2.0, 2.1, 2.2, 2.0, 2.3, 2.1, 2.0]
    ahead = compare([t * 0.9 for t in java], java)
    assert ahead.verdict == "ahead" and ahead.faster == 7
    assert ahead.median == pytest.approx(0.9) and ahead.high == pytest.approx(0.9)
    assert ahead.coverage == pytest.approx(1 - 2 / 128)
    behind = compare([t * 1.1 for t in java], java)
    assert behind.verdict == "behind" and behind.faster == 0
    level = compare([t * r for t, r in zip(java, [0.95, 1.04, 0.99, 1.02, 0.97, 1.01, 1.0],
                                             strict=True)], java)
    assert level.verdict == "level" and level.faster == 3
    assert level.low == pytest.approx(0.95) and level.high == pytest.approx(1.04)
    assert level.median == pytest.approx(1.0)


def test_interval_uses_inner_order_statistics() -> None:
    second = [1.0] * 15
    first = [0.80 + 0.02 * i for i in range(15)]  # ratios 0.80 .. 1.08, shuffled below
    first = first[7:] + first[:7]
    result = compare(first, second)
    assert result.low == pytest.approx(0.86) and result.high == pytest.approx(1.02)
    assert result.median == pytest.approx(0.94)
    assert result.verdict == "level"
    assert result.coverage == pytest.approx(1 - 2 * 576 / 32768)


def test_too_few_turns_give_no_interval() -> None:
    result = compare([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert (result.low, result.high) == (0.0, math.inf)
    assert result.verdict == "level" and result.faster == 3


@pytest.mark.parametrize("first, second", [([], []), ([1.0], [1.0, 2.0]), ([0.0], [1.0])])
def test_bad_input(first: list[float], second: list[float]) -> None:
    with pytest.raises(ValueError):
        compare(first, second)


def test_confidence_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="confidence"):
        order_statistic_rank(7, 1.0)
