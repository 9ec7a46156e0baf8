"""The planner's metrics prefilter decides as the metrics evaluator: whenever it says a file
cannot match (or might), the evaluator says so too (and does not raise)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.expressions import InclusiveMetricsEvaluator, and_, bind, parse, rewrite_not
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileFormat
from icepark.spec.schema import Schema
from icepark.spec.types import DATE, INT, LONG, STRING, TIMESTAMP, NestedField
from icepark.table.scan.prefilter import metrics_prefilter

SCHEMA = Schema.of(NestedField.optional(1, "a", LONG), NestedField.optional(2, "b", INT),
                   NestedField.optional(3, "d", DATE), NestedField.optional(4, "t", TIMESTAMP),
                   NestedField.optional(5, "s", STRING))
TYPES = {1: LONG, 2: INT, 3: DATE, 4: TIMESTAMP}
NAMES = {1: "a", 2: "b", 3: "d", 4: "t"}
small = st.integers(-20, 20)


@st.composite
def bound_bytes(draw: Any, fid: int) -> bytes | None:
    choice = draw(st.sampled_from(["none", "value", "value", "bad"]))
    if choice == "none":
        return None
    if choice == "bad":
        bad: bytes = draw(st.binary(min_size=1, max_size=9).filter(
            lambda b: len(b) != (8 if TYPES[fid] in (LONG, TIMESTAMP) else 4)))
        return bad
    value: bytes = to_bytes(TYPES[fid], draw(small))
    return value


@st.composite
def data_files(draw: Any) -> DataFile:
    ids = draw(st.sets(st.sampled_from(sorted(TYPES))))
    values = {i: draw(st.integers(0, 5)) for i in ids}
    nulls = {i: draw(st.integers(0, 5)) for i in ids if draw(st.booleans())}
    lower = {i: b for i in ids if (b := draw(bound_bytes(i))) is not None}
    upper = {i: b for i in ids if (b := draw(bound_bytes(i))) is not None}
    return DataFile("f.parquet", FileFormat.PARQUET, (), draw(st.integers(1, 5)), 1,
                    value_counts=draw(st.sampled_from([values, None])),
                    null_value_counts=draw(st.sampled_from([nulls, None])),
                    lower_bounds=draw(st.sampled_from([lower, None])),
                    upper_bounds=draw(st.sampled_from([upper, None])))


comparisons = st.builds(lambda fid, op, v: f"{NAMES[fid]} {op} {v}",
                        st.sampled_from(sorted(TYPES)),
                        st.sampled_from(["<", "<=", ">", ">=", "="]), small)


@settings(max_examples=400, deadline=None)
@given(files=st.lists(data_files(), min_size=1, max_size=5),
       filters=st.lists(comparisons, min_size=1, max_size=3))
def test_a_proof_agrees_with_the_evaluator(files: list[DataFile], filters: list[str]) -> None:
    expr = parse(filters[0])
    for text in filters[1:]:
        expr = and_(expr, parse(text))
    test = metrics_prefilter(rewrite_not(bind(expr, SCHEMA)))
    assert test is not None
    evaluator = InclusiveMetricsEvaluator(SCHEMA, expr)
    for f in files:
        verdict = test(f)
        if verdict is not None:  # a decision: the evaluator's (which does not raise)
            assert evaluator.eval(f) is (not verdict)


def test_proofs_prune_what_the_evaluator_prunes() -> None:
    def file(low: int, high: int, **kw: Any) -> DataFile:
        return DataFile("f.parquet", FileFormat.PARQUET, (), 10, 1, value_counts={1: 10},
                        null_value_counts={1: 0}, lower_bounds={1: to_bytes(LONG, low)},
                        upper_bounds={1: to_bytes(LONG, high)}, **kw)

    test = metrics_prefilter(bind(parse("a >= 10 AND a < 20"), SCHEMA))
    assert test is not None
    assert [test(file(lo, hi)) for lo, hi in [(0, 9), (0, 10), (19, 30), (20, 30), (30, 1)]] \
        == [True, False, False, True, False]  # out-of-order bounds are ignored
    all_null = DataFile("f.parquet", FileFormat.PARQUET, (), 3, 1, value_counts={1: 3},
                        null_value_counts={1: 3})
    assert test(all_null)


def test_other_filters_have_no_prefilter() -> None:
    for text in ("s = 'x'", "a > 1 OR a < -1", "a IS NULL", "a IN (1, 2)", "a != 3",
                 "a > 1 AND s = 'x'"):
        assert metrics_prefilter(rewrite_not(bind(parse(text), SCHEMA))) is None


@settings(max_examples=300, deadline=None)
@given(low=small, high=small, nulls=st.integers(0, 3),
       filters=st.lists(st.builds(lambda op, v: f"a {op} {v}",
                                  st.sampled_from(["<", "<=", ">", ">=", "="]), small),
                        min_size=1, max_size=4))
def test_proofs_on_one_column_equal_the_evaluator(low: int, high: int, nulls: int,
                                                  filters: list[str]) -> None:
    """With all its metrics known, a file is proven not to match exactly when the evaluator
    prunes it (several comparisons of a column are combined into one test)."""
    expr = parse(filters[0])
    for text in filters[1:]:
        expr = and_(expr, parse(text))
    test = metrics_prefilter(rewrite_not(bind(expr, SCHEMA)))
    assert test is not None
    f = DataFile("f.parquet", FileFormat.PARQUET, (), 3, 1, value_counts={1: 3},
                 null_value_counts={1: nulls}, lower_bounds={1: to_bytes(LONG, min(low, high))},
                 upper_bounds={1: to_bytes(LONG, max(low, high))})
    assert test(f) is not InclusiveMetricsEvaluator(SCHEMA, expr).eval(f)
