"""Values built by a trusted constructor are the values the class builds after its checks."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icepark.errors import ValidationError
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestEntry,
)
from icepark.spec.trusted import trusted_constructor
from icepark.table.scan.tasks import FileScanTask, trusted_task

counts = st.none() | st.dictionaries(st.integers(1, 50), st.integers(0, 10**6), max_size=4)
bounds = st.none() | st.dictionaries(st.integers(1, 50), st.binary(max_size=16), max_size=4)
data_file_fields = st.tuples(
    st.text(min_size=1, max_size=40), st.sampled_from(list(FileFormat)),
    st.tuples(st.none() | st.integers(-5, 5), st.none() | st.text(max_size=3)),
    st.integers(0, 10**9), st.integers(0, 10**12),
    st.sampled_from([FileContent.DATA, FileContent.POSITION_DELETES]), st.integers(0, 3),
    counts, counts, counts, counts, counts, bounds, bounds, st.none() | st.binary(max_size=8),
    st.none() | st.lists(st.integers(0, 10**6), max_size=4).map(lambda v: tuple(sorted(v))),
    st.none() | st.lists(st.integers(1, 9), max_size=3).map(tuple),
    st.none() | st.integers(0, 3), st.none() | st.text(min_size=1, max_size=40),
    st.none() | st.integers(0, 10**9),
    st.none() | st.tuples(st.integers(4, 10**6), st.integers(1, 10**4))).map(
        lambda f: (*f[:-1], *(f[-1] or (None, None)))).filter(
            lambda f: not (f[1] is FileFormat.PUFFIN and f[5] is FileContent.POSITION_DELETES
                           and (f[18] is None or f[20] is None)))
"""Every field of a data file (a deletion vector always with its referenced file and blob)."""
build_data_file = trusted_constructor(DataFile)


@given(fields=data_file_fields)
def test_a_trusted_data_file_equals_the_checked_one(fields: tuple[Any, ...]) -> None:
    checked = DataFile(*fields)
    trusted = build_data_file(*fields)
    assert type(trusted) is DataFile
    assert trusted == checked and hash(trusted) == hash(checked)
    assert repr(trusted) == repr(checked)
    assert pickle.loads(pickle.dumps(trusted)) == checked
    assert dataclasses.replace(trusted, record_count=1) == dataclasses.replace(
        checked, record_count=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        trusted.record_count = 3  # type: ignore[misc]  # frozen, which this checks


def test_trusted_tasks_and_entries_equal_checked_ones() -> None:
    f = DataFile("a.parquet", FileFormat.PARQUET, (1,), 10, 100, split_offsets=(4, 50))
    assert trusted_task(f, (), FileScanTask.of(f).residual, 0, 0, 100, (1,), None) == \
        FileScanTask.of(f)
    entry = trusted_constructor(ManifestEntry)(EntryStatus.ADDED, f, 3, 4, 5)
    assert entry == ManifestEntry(EntryStatus.ADDED, f, 3, 4, 5)


def test_only_slotted_dataclasses_have_one() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    class NotData:
        __slots__ = ("x",)

    for cls in (Plain, NotData):
        with pytest.raises(ValidationError, match="not a slotted dataclass"):
            trusted_constructor(cls)
