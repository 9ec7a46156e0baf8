"""Which delete files apply to which data files (spec, *Scan Planning*)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import ValidationError
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.types import LONG, STRING
from icepark.table.scan.delete_index import DeleteIndex, referenced_data_file
from icepark.table.snapshot.row_delta import RowDelta
from tests.table.scan_fixtures import FILE_PATH_ID, ScanTable, long_bounds, name_of, unpartitioned

DATA, POS, EQ = FileContent.DATA, FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES


def f(path: str, content: FileContent = DATA, spec_id: int = 0,
      partition: tuple[Any, ...] = ("a",), **kwargs: Any) -> DataFile:
    if content is EQ:
        kwargs.setdefault("equality_ids", (1,))
    return DataFile(path, FileFormat.PARQUET, partition, 1, 10, content, spec_id, **kwargs)


# (data seq, data spec, data partition, delete kind, delete seq, delete spec, delete partition,
#  applies)
RULES = [
    (1, 0, ("a",), POS, 1, 0, ("a",), True),    # "less than or equal": same commit applies
    (1, 0, ("a",), POS, 2, 0, ("a",), True),
    (2, 0, ("a",), POS, 1, 0, ("a",), False),   # an older delete never applies
    (1, 0, ("a",), POS, 2, 0, ("b",), False),   # another partition
    (1, 0, ("a",), POS, 2, 1, ("a",), False),   # same values, another spec
    (1, 0, ("a",), POS, 2, 2, (), False),       # position deletes are never global
    (1, 0, ("a",), EQ, 1, 0, ("a",), False),    # "strictly less than"
    (1, 0, ("a",), EQ, 2, 0, ("a",), True),
    (2, 0, ("a",), EQ, 1, 0, ("a",), False),
    (1, 0, ("a",), EQ, 2, 0, ("b",), False),
    (1, 0, ("a",), EQ, 2, 1, ("a",), False),
    (1, 0, ("a",), EQ, 2, 2, (), True),         # an unpartitioned spec: a global delete
    (2, 0, ("a",), EQ, 2, 2, (), False),        # ... still only for older data
    (0, 2, (), EQ, 1, 2, (), True),             # unpartitioned table
    (0, 2, (), POS, 0, 2, (), True),
]


@pytest.mark.parametrize("rule", RULES)
def test_scan_planning_rules(rule: tuple[Any, ...]) -> None:
    data_seq, data_spec, data_part, kind, delete_seq, delete_spec, delete_part, applies = rule
    delete = f("del", kind, delete_spec, delete_part)
    index = DeleteIndex.build([(delete_seq, delete)], unpartitioned_specs=[2])
    found = index.for_data_file(data_seq, f("data", DATA, data_spec, data_part))
    assert found == ((delete,) if applies else ())


def test_lookups_match_a_linear_scan() -> None:
    """Bisection over sorted sequence numbers finds exactly what checking every delete finds."""
    rng = random.Random(7)
    deletes = [(rng.randint(0, 20), f(f"d{i}", rng.choice([POS, EQ]), rng.choice([0, 1]),
                                      (rng.choice("abc"),) if rng.random() < 0.8 else ()))
               for i in range(300)]
    index = DeleteIndex.build(deletes, unpartitioned_specs=[])
    for _ in range(200):
        seq = rng.randint(0, 21)
        data = f("x", DATA, rng.choice([0, 1]), (rng.choice("abc"),))

        def applies(s: int, d: DataFile, seq: int = seq, data: DataFile = data) -> bool:
            same = (d.spec_id, d.partition) == (data.spec_id, data.partition)
            if d.content is POS:
                return same and seq <= s
            return same and seq < s

        expected = {d.file_path for s, d in deletes if applies(s, d)}
        assert {d.file_path for d in index.for_data_file(seq, data)} == expected


def _path_bounds(path: str) -> dict[str, Any]:
    b = to_bytes(STRING, path)
    return {"lower_bounds": {FILE_PATH_ID: b}, "upper_bounds": {FILE_PATH_ID: b}}


def test_position_deletes_of_one_file_skip_the_others() -> None:
    targeted = f("pos-x", POS, **_path_bounds("x"))
    ranged = f("pos-range", POS, lower_bounds={FILE_PATH_ID: b"a"},
               upper_bounds={FILE_PATH_ID: b"z"})
    assert referenced_data_file(targeted) == "x" and referenced_data_file(ranged) is None
    index = DeleteIndex.build([(2, targeted), (2, ranged)])
    assert index.for_data_file(1, f("x")) == (ranged, targeted)
    assert index.for_data_file(1, f("y")) == (ranged,)
    assert index.for_data_file(3, f("x")) == ()
    assert index.for_data_file(1, f("x", partition=("b",))) == ()  # the partition must match


EQ_BOUNDS = [
    # (delete metrics of column 1, data metrics of column 1, may apply)
    (long_bounds(1, 10, 20), long_bounds(1, 0, 9), False),
    (long_bounds(1, 10, 20), long_bounds(1, 21, 30), False),
    (long_bounds(1, 10, 20), long_bounds(1, 20, 30), True),
    (long_bounds(1, 10, 20), long_bounds(1, 0, 10), True),
    (long_bounds(1, 10, 20), {}, True),  # unknown data metrics
    ({}, long_bounds(1, 0, 9), True),    # unknown delete metrics
    # a delete of only nulls and data without nulls
    ({"value_counts": {1: 3}, "null_value_counts": {1: 3}}, long_bounds(1, 0, 9), False),
    # nulls on both sides match (null = null for equality deletes)
    ({"value_counts": {1: 3}, "null_value_counts": {1: 3}},
     {**long_bounds(1, 0, 9), "null_value_counts": {1: 2}}, True),
    ({**long_bounds(1, 10, 20), "null_value_counts": {1: 1}},
     {**long_bounds(1, 0, 9), "null_value_counts": {1: 1}}, True),
]


@pytest.mark.parametrize(("delete_metrics", "data_metrics", "applies"), EQ_BOUNDS)
def test_equality_deletes_pruned_by_bounds(delete_metrics: dict[str, Any],
                                           data_metrics: dict[str, Any], applies: bool) -> None:
    delete = f("eq", EQ, 0, ("a",), **delete_metrics)
    index = DeleteIndex.build([(2, delete)], field_types={1: LONG})
    data = f("data", DATA, 0, ("a",), **data_metrics)
    assert index.for_data_file(1, data) == ((delete,) if applies else ())


def test_equality_bounds_of_unknown_columns_are_not_used() -> None:
    delete = f("eq", EQ, **long_bounds(1, 10, 20))
    index = DeleteIndex.build([(2, delete)])  # no type for column 1
    assert index.for_data_file(1, f("data", **long_bounds(1, 0, 9))) == (delete,)


def test_multi_column_equality_deletes_need_overlap_on_every_column() -> None:
    delete = f("eq", EQ, equality_ids=(1, 2),
               lower_bounds={1: to_bytes(LONG, 0), 2: to_bytes(LONG, 100)},
               upper_bounds={1: to_bytes(LONG, 9), 2: to_bytes(LONG, 100)},
               null_value_counts={1: 0, 2: 0}, value_counts={1: 1, 2: 1})
    index = DeleteIndex.build([(2, delete)], field_types={1: LONG, 2: LONG})
    both: dict[str, Any] = {"lower_bounds": {1: to_bytes(LONG, 5), 2: to_bytes(LONG, 50)},
            "upper_bounds": {1: to_bytes(LONG, 5), 2: to_bytes(LONG, 150)},
            "null_value_counts": {1: 0, 2: 0}}
    assert index.for_data_file(1, f("d", DATA, 0, ("a",), **both)) == (delete,)
    one = {**both, "upper_bounds": {1: to_bytes(LONG, 5), 2: to_bytes(LONG, 99)}}
    assert index.for_data_file(1, f("d", DATA, 0, ("a",), **one)) == ()


def test_empty_index() -> None:
    index = DeleteIndex.build([])
    assert index.is_empty and index.for_data_file(0, f("x")) == ()


def test_a_data_file_is_not_a_delete() -> None:
    with pytest.raises(ValidationError, match="is a data file"):
        DeleteIndex.build([(1, f("x"))])


# ------------------------------------------------------------------------ through a table


def _deletes_by_file(t: ScanTable, **kwargs: Any) -> dict[str, list[str]]:
    return {name_of(x.data_file): [name_of(d) for d in x.delete_files]
            for x in t.scan(**kwargs).plan_files()}


def test_deletes_committed_with_real_snapshots(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a1", ("a",)), t.file("b1", ("b",)))                    # seq 1
    t.row_delta(t.position_deletes("pos-a", ("a",)),                         # seq 2
                t.equality_deletes("eq-b", ("b",)))
    t.row_delta(t.file("a2", ("a",)), t.position_deletes("pos-a2", ("a",)),  # seq 3
                t.equality_deletes("eq-a", ("a",)))
    assert _deletes_by_file(t) == {
        "a1": ["pos-a", "pos-a2", "eq-a"],
        "b1": ["eq-b"],
        "a2": ["pos-a2"],  # same commit: position deletes apply, equality deletes do not
    }


def test_global_equality_deletes(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a1", ("a",)), t.file("b1", ("b",)))
    spec = t.evolve_spec(unpartitioned)
    t.row_delta(t.equality_deletes("global", (), spec_id=spec.spec_id),
                t.position_deletes("pos-unpartitioned", (), spec_id=spec.spec_id))
    t.append(t.file("a2", ("a",), spec_id=0))
    assert _deletes_by_file(t) == {"a1": ["global"], "b1": ["global"], "a2": []}


def test_removed_deletes_no_longer_apply(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a1"))
    t.row_delta(t.position_deletes("p1"))
    t.row_delta(t.position_deletes("p2"))
    t.committer.commit(RowDelta(t.io, t.metadata).remove_deletes(t.path("p1")))
    assert _deletes_by_file(t) == {"a1": ["p2"]}


def test_scan_filter_prunes_delete_files(tmp_path: Path) -> None:
    t = ScanTable(tmp_path, unpartitioned)
    t.append(t.file("d", **long_bounds(1, 0, 100)))
    t.row_delta(t.equality_deletes("eq-low", **long_bounds(1, 0, 9)),
                t.equality_deletes("eq-high", **long_bounds(1, 90, 100)))
    assert _deletes_by_file(t) == {"d": ["eq-low", "eq-high"]}
    # "If metrics show that a delete file has no rows that match a scan predicate, it may be
    # ignored just as a data file would be ignored"
    assert _deletes_by_file(t, row_filter="id = 95") == {"d": ["eq-high"]}


def test_equality_deletes_are_pruned_only_by_their_equality_columns(tmp_path: Path) -> None:
    """An equality delete of id 3 that also stores the deleted row's category 'a' deletes
    every older row with id 3, whatever its category."""
    t = ScanTable(tmp_path, unpartitioned)
    t.append(t.file("d"))
    a, three = to_bytes(STRING, "a"), to_bytes(LONG, 3)
    t.row_delta(t.equality_deletes(
        "eq", ids=(1,), lower_bounds={1: three, 2: a}, upper_bounds={1: three, 2: a},
        value_counts={1: 1, 2: 1}, null_value_counts={1: 0, 2: 0}))
    assert _deletes_by_file(t, row_filter="category = 'b'") == {"d": ["eq"]}
    assert _deletes_by_file(t, row_filter="id = 4") == {"d": []}
    assert _deletes_by_file(t, row_filter="id = 3 AND category = 'b'") == {"d": ["eq"]}


def test_targeted_position_deletes_through_a_table(tmp_path: Path) -> None:
    t = ScanTable(tmp_path)
    t.append(t.file("a1"), t.file("a2"))
    t.row_delta(t.position_deletes("p-a1", target="a1"))
    assert _deletes_by_file(t) == {"a1": ["p-a1"], "a2": []}
