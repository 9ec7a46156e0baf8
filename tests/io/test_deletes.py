"""Reading position and equality delete files and matching them against data rows."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow import deletes
from icepark.io.arrow.deletes import (
    DeleteCache,
    EqualityDeletes,
    count_deleted,
    deleted_positions,
    equality_delete_groups,
    position_keep_mask,
)
from icepark.io.arrow.name_mapping import from_json
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.delete_writer import equality_delete_schema
from icepark.spec.manifest import DataFile, FileContent, FileFormat
from icepark.spec.schema import Schema
from icepark.spec.types import INT, LONG, STRING, UUID, NestedField, StructType
from tests.io.reader_fixtures import (
    IO,
    Files,
    equality_deletes,
    position_deletes,
    write_arrow,
)

# The table of the spec's *Equality Delete Files* example.
TABLE = Schema.of(NestedField.required(1, "id", LONG),
                  NestedField.optional(2, "category", STRING),
                  NestedField.optional(3, "name", STRING))
ROWS = {"id": [1, 2, 3, 4], "category": ["marsupial", "toy", None, None],
        "name": ["Koala", "Teddy", "Grizzly", "Polar"]}


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


class CountingIO(ArrowFileIO):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def new_input(self, location: str) -> Any:
        self.opened.append(location)
        return super().new_input(location)


def deleted_rows(groups: list[EqualityDeletes], data: dict[int, Any], n: int) -> list[bool]:
    mask = np.zeros(n, dtype=bool)
    for g in groups:
        mask |= g.deleted(data, n)
    return [bool(m) for m in mask]


def spec_columns() -> dict[int, Any]:
    return {1: pa.array(ROWS["id"], pa.int64()), 2: pa.array(ROWS["category"], pa.string()),
            3: pa.array(ROWS["name"], pa.string())}


# --- positions ------------------------------------------------------------------------------


def test_position_masks() -> None:
    deleted = np.array([0, 3, 4, 10], dtype=np.int64)
    assert position_keep_mask(deleted, 0, 3).tolist() == [False, True, True]  # type: ignore[union-attr]
    assert position_keep_mask(deleted, 5, 5) is None
    assert position_keep_mask(deleted, 3, 8).tolist() == [  # type: ignore[union-attr]
        False, False, True, True, True, True, True, False]
    assert count_deleted(deleted, 0, 5) == 3
    assert count_deleted(deleted, 5, 5) == 0
    assert count_deleted(np.empty(0, dtype=np.int64), 0, 5) == 0


def test_positions_by_data_file(files: Files) -> None:
    """"A data row is deleted if there is an entry in a position delete file for the row's
    file and position": entries for other files are ignored, several files are merged."""
    first = position_deletes(files, TABLE, {"a.parquet": [0, 3], "b.parquet": [1]})
    second = position_deletes(files, TABLE, {"a.parquet": [3, 5]})
    cache = DeleteCache(IO, TABLE)
    assert deleted_positions(cache, [first, second], "a.parquet").tolist() == [0, 3, 5]
    assert deleted_positions(cache, [first, second], "b.parquet").tolist() == [1]
    assert deleted_positions(cache, [first], "c.parquet").tolist() == []
    assert deleted_positions(cache, [], "a.parquet").tolist() == []


def test_delete_files_are_read_once_per_cache(files: Files) -> None:
    pos = position_deletes(files, TABLE, {"a.parquet": [0]})
    eq = equality_deletes(files, TABLE, [1], {"id": [1]})
    io = CountingIO()
    cache = DeleteCache(io, TABLE)
    for path in ("a.parquet", "b.parquet", "a.parquet"):
        deleted_positions(cache, [pos], path)
        equality_delete_groups(cache, [eq])
    assert sorted(io.opened) == sorted([pos.file_path, eq.file_path])
    other = position_deletes(files, TABLE, {"b.parquet": [0]})
    small = DeleteCache(io, TABLE, max_files=1)  # least recently used files are dropped
    io.opened.clear()
    for d in (pos, pos, other, pos):
        small.positions(d)
    assert io.opened == [pos.file_path, other.file_path, pos.file_path]


def test_position_file_without_field_ids(tmp_path: Path) -> None:
    """A hand-written delete file without IDs is read by the spec's column names; an unsorted
    file with repeated entries still deletes each position once."""
    path = str(tmp_path / "pos.parquet")
    pq.write_table(pa.table({"file_path": ["x", "y", "x", "x", None],
                             "pos": pa.array([7, 1, 2, 7, 3], pa.int64())}), path)
    delete_file = DataFile(path, FileFormat.PARQUET, (), 5, 1,
                           content=FileContent.POSITION_DELETES)
    cache = DeleteCache(IO, TABLE)
    assert cache.positions(delete_file)["x"].tolist() == [2, 7]
    assert deleted_positions(cache, [delete_file], "y").tolist() == [1]


def test_position_file_without_the_columns(tmp_path: Path) -> None:
    path = str(tmp_path / "bad.parquet")
    pq.write_table(pa.table({"path": ["x"]}), path)
    bad = DataFile(path, FileFormat.PARQUET, (), 1, 1, content=FileContent.POSITION_DELETES)
    with pytest.raises(ValidationError, match="has no file_path"):
        DeleteCache(IO, TABLE).positions(bad)


def test_wrong_kinds_of_delete_files(files: Files) -> None:
    pos = position_deletes(files, TABLE, {"a": [0]})
    cache = DeleteCache(IO, TABLE)
    with pytest.raises(ValidationError, match="not a EQUALITY_DELETES file"):
        cache.equality(pos)
    avro = DataFile("x.avro", FileFormat.AVRO, (), 1, 1, content=FileContent.POSITION_DELETES)
    with pytest.raises(UnsupportedFeature, match="AVRO delete files are not supported"):
        cache.positions(avro)


# --- equality -------------------------------------------------------------------------------


@pytest.mark.parametrize("packed", [True, False])
def test_spec_examples(files: Files, packed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The delete ``id = 3`` (written with only ``id`` or with the whole row), and
    ``id = 4 AND category IS NULL``, of *Equality Delete Files*."""
    if not packed:
        monkeypatch.setattr(deletes, "_MAX_KEY_SPACE", 1)  # match by join instead
    cache = DeleteCache(IO, TABLE)
    only_id = equality_deletes(files, TABLE, [1], {"id": [3]})
    whole_row = replace(write_arrow(files, pa.Table.from_pydict(
        {"id": [3], "category": [None], "name": ["Grizzly"]}, schema=to_arrow_schema(TABLE))),
        content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    pair = equality_deletes(files, TABLE, [1, 2], {"id": [4], "category": [None]})
    for delete in (only_id, whole_row):
        groups = equality_delete_groups(cache, [delete])
        assert deleted_rows(groups, spec_columns(), 4) == [False, False, True, False]
    groups = equality_delete_groups(cache, [pair])
    assert deleted_rows(groups, spec_columns(), 4) == [False, False, False, True]
    groups = equality_delete_groups(cache, [only_id, pair])
    assert len(groups) == 2
    assert deleted_rows(groups, spec_columns(), 4) == [False, False, True, True]


@pytest.mark.parametrize("packed", [True, False])
def test_null_matches_null_only(files: Files, packed: bool,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """"A ``null`` value in a delete column matches a row if the row's value is ``null``"."""
    if not packed:
        monkeypatch.setattr(deletes, "_MAX_KEY_SPACE", 1)
    delete = equality_deletes(files, TABLE, [2], {"category": [None]})
    groups = equality_delete_groups(DeleteCache(IO, TABLE), [delete])
    assert deleted_rows(groups, spec_columns(), 4) == [False, False, True, True]
    # A non-null delete value never matches a null.
    delete = equality_deletes(files, TABLE, [2, 3], {"category": ["toy", "x"],
                                                    "name": ["Teddy", None]})
    groups = equality_delete_groups(DeleteCache(IO, TABLE), [delete])
    assert deleted_rows(groups, spec_columns(), 4) == [False, True, False, False]


def test_files_with_the_same_columns_are_one_group(files: Files) -> None:
    a = equality_deletes(files, TABLE, [1], {"id": [1]})
    b = equality_deletes(files, TABLE, [1], {"id": [2]})
    empty_table = pa.Table.from_pydict({"name": []}, schema=to_arrow_schema(
        equality_delete_schema(TABLE, [3])))
    empty = replace(write_arrow(files, empty_table), content=FileContent.EQUALITY_DELETES,
                    equality_ids=(3,))
    groups = equality_delete_groups(DeleteCache(IO, TABLE), [a, b, empty])
    assert len(groups) == 1
    assert deleted_rows(groups, spec_columns(), 4) == [True, True, False, False]


def test_prepared_groups_are_cached(files: Files) -> None:
    """The same delete files apply to many data files: their match is prepared once."""
    a = equality_deletes(files, TABLE, [1], {"id": [1]})
    b = equality_deletes(files, TABLE, [1], {"id": [2]})
    cache = DeleteCache(IO, TABLE)
    [first] = equality_delete_groups(cache, [a, b])
    [again] = equality_delete_groups(cache, [b, a])
    [other] = equality_delete_groups(cache, [a])
    assert first is again and other is not first


def test_column_dropped_from_the_table(files: Files) -> None:
    """"If a delete column in an equality delete file is later dropped from the table, it
    must still be used": it is typed by the delete file."""
    before = Schema.of(*TABLE.fields, NestedField.optional(4, "legacy", INT))
    delete = equality_deletes(files, before, [4], {"legacy": [7, None]})
    cache = DeleteCache(IO, TABLE)  # the current schema has no field 4
    [group] = equality_delete_groups(cache, [delete])
    assert group.fields == (NestedField.optional(4, "legacy", INT),)
    data = {4: pa.array([7, 8, None], pa.int32())}
    assert deleted_rows([group], data, 3) == [True, False, True]


def test_delete_column_promoted_since(files: Files) -> None:
    """A delete file written when ``id`` was an int is read as the table's long."""
    old = Schema.of(NestedField.required(1, "id", INT))
    delete = equality_deletes(files, old, [1], {"id": [2]})
    [group] = equality_delete_groups(DeleteCache(IO, TABLE), [delete])
    assert deleted_rows([group], spec_columns(), 4) == [False, True, False, False]


def test_nested_and_uuid_delete_columns(files: Files) -> None:
    schema = Schema.of(NestedField.required(1, "u", UUID),
                       NestedField.required(2, "s", StructType((
                           NestedField.required(3, "k", STRING),))))
    u1, u2 = uuid.UUID(int=1), uuid.UUID(int=2)
    delete = equality_deletes(files, schema, [1, 3], {
        "u": pa.array([u1.bytes], pa.binary(16)), "s": [{"k": "a"}]})
    [group] = equality_delete_groups(DeleteCache(IO, schema), [delete])
    data = {1: pa.array([u1.bytes, u1.bytes, u2.bytes], pa.binary(16)),
            3: pa.array(["a", "b", "a"])}
    assert deleted_rows([group], data, 3) == [True, False, False]


def test_delete_file_missing_a_column_the_table_dropped(tmp_path: Path) -> None:
    path = str(tmp_path / "eq.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), path)
    delete = DataFile(path, FileFormat.PARQUET, (), 1, 1, content=FileContent.EQUALITY_DELETES,
                      equality_ids=(9,))
    mapping = from_json([{"field-id": 1, "names": ["id"]}])
    with pytest.raises(ValidationError, match="no column with field ID 9"):
        DeleteCache(IO, TABLE, mapping).equality(delete)
    in_table = replace(delete, equality_ids=(1, 2))  # the table has 2, the file has not
    with pytest.raises(ValidationError, match="no column with field ID 2"):
        DeleteCache(IO, TABLE, mapping).equality(in_table)
    with pytest.raises(ValidationError, match="at least one"):
        EqualityDeletes([])


# --- cross-check against DuckDB ---------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_equality_deletes_match_duckdb(files: Files, seed: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Random data and deletes over a small domain with nulls: the rows left are DuckDB's
    anti-join with ``IS NOT DISTINCT FROM`` on every delete column."""
    rng = random.Random(seed)
    if seed % 2:
        monkeypatch.setattr(deletes, "_MAX_KEY_SPACE", 1)

    def value(domain: list[Any]) -> Any:
        return None if rng.random() < 0.2 else rng.choice(domain)

    n = 200
    data = {"id": [rng.randrange(10) for _ in range(n)],
            "category": [value(["a", "b", "c"]) for _ in range(n)],
            "name": [value(["x", "y"]) for _ in range(n)]}
    dels = {"id": [rng.randrange(10) for _ in range(12)],
            "category": [value(["a", "b", "c"]) for _ in range(12)],
            "name": [value(["x", "y"]) for _ in range(12)]}
    ids = rng.choice([[1], [2], [1, 2], [2, 3], [1, 2, 3]])
    names = [TABLE.find_field(i).name for i in ids]
    delete = equality_deletes(files, TABLE, ids, {k: dels[k] for k in names})
    groups = equality_delete_groups(DeleteCache(IO, TABLE), [delete])
    columns = {1: pa.array(data["id"], pa.int64()), 2: pa.array(data["category"]),
               3: pa.array(data["name"])}
    mask = deleted_rows(groups, columns, n)
    ours = sorted(i for i in range(n) if not mask[i])

    data_table = pa.table({**data, "row": list(range(n))})  # noqa: F841 - read by DuckDB
    delete_table = pa.table({k: dels[k] for k in names})  # noqa: F841
    condition = " AND ".join(f"d.{c} IS NOT DISTINCT FROM t.{c}" for c in names)
    theirs = duckdb.sql(f"SELECT row FROM data_table t WHERE NOT EXISTS "
                        f"(SELECT 1 FROM delete_table d WHERE {condition}) ORDER BY row")
    assert ours == [r[0] for r in theirs.fetchall()]
