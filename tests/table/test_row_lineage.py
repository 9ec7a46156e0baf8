"""v3 row lineage: assignment on commit, inheritance on read, and the ``_row_id`` and
``_last_updated_sequence_number`` metadata columns of the Arrow reader.

Spec (v3), *Row Lineage*: "In v3 and later, an Iceberg table must track row lineage fields for
all newly created rows", assigned by inheritance: snapshots take the table's ``next-row-id``
as their ``first-row-id``, new data manifests get a ``first_row_id`` when the manifest list is
written, and new data files inherit one when read. The worked example of *Row lineage example*
is the first test.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.io.fileio import ArrowFileIO
from icepark.io.manifest.manifest import read_manifest
from icepark.io.manifest.manifest_list import assign_first_row_ids, read_manifest_list
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileFormat,
    ManifestContent,
    ManifestFile,
    RowIdAssigner,
)
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.snapshots import Snapshot, SnapshotRef
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.change import updates as u
from icepark.table.change.metadata_builder import MetadataBuilder
from icepark.table.table import Table
from tests.table.committer import FAST_RETRIES, InMemoryCommitter

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "k", STRING))
LINEAGE = ["_row_id", "_last_updated_sequence_number"]


def make(committer: InMemoryCommitter, tmp_path: Path, *, format_version: Any = 3,
         partitioned: bool = False) -> Table:
    spec = PartitionSpecBuilder(SCHEMA).identity("k").build() if partitioned else None
    metadata, _ = MetadataBuilder.new_table(SCHEMA, str(tmp_path / "t"), spec=spec,
                                            format_version=format_version,
                                            properties=FAST_RETRIES)
    identifier = ("db", "t")
    return Table(identifier, committer.create(identifier, metadata), ArrowFileIO(), committer)


def rows(ids: list[int], k: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [k] * len(ids)})


def head(table: Table) -> Snapshot:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot


def lineage(table: Table, **scan: Any) -> dict[int, tuple[Any, Any]]:
    """id -> (_row_id, _last_updated_sequence_number) as the Arrow reader reads them."""
    got = table.refresh().scan(**scan).to_arrow(LINEAGE).to_pylist()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}


# ------------------------------------------------------------------------ the spec's example


def test_the_specs_row_lineage_example() -> None:
    """*Row lineage example*: a table with ``next-row-id`` 1000 commits three new manifests
    after an existing one; ``next-row-id`` becomes 1,375 and the data files of ``added1``
    inherit 1000 and 1050."""
    def m(path: str, added: int, existing: int, first: int | None = None) -> ManifestFile:
        return ManifestFile(path, 1, 0, 1, added_rows_count=added, existing_rows_count=existing,
                            first_row_id=first)

    manifests, added_rows = assign_first_row_ids(
        [m("existing", 75, 0, 925), m("added1", 100, 25), m("added2", 0, 100),
         m("added3", 125, 25), replace(m("deletes", 3, 0), content=ManifestContent.DELETES)],
        1000)
    assert [x.first_row_id for x in manifests] == [925, 1000, 1125, 1225, None]
    assert 1000 + added_rows == 1375
    assigner = RowIdAssigner(1000)
    assert [assigner.first_row_id(EntryStatus.EXISTING, 800, 25),
            assigner.first_row_id(EntryStatus.ADDED, None, 50),
            assigner.first_row_id(EntryStatus.DELETED, None, 99),
            assigner.first_row_id(EntryStatus.ADDED, None, 50)] == [800, 1000, None, 1050]


# ------------------------------------------------------------------------ writing and reading


def test_appends_assign_row_ids_in_commit_order(committer: InMemoryCommitter,
                                                tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    table.append(rows([1, 2, 3]))
    table.refresh().append(rows([4, 5]))
    table = table.refresh()
    assert table.metadata.next_row_id == 5
    # "the _row_id field for an added row is ... assigned when reading": first_row_id + _pos
    assert lineage(table) == {1: (0, 1), 2: (1, 1), 3: (2, 1), 4: (3, 2), 5: (4, 2)}
    first = table.snapshots()[0].snapshot_id
    assert lineage(table, snapshot_id=first) == {1: (0, 1), 2: (1, 1), 3: (2, 1)}


def test_rewritten_manifests_keep_the_inherited_first_row_ids(committer: InMemoryCommitter,
                                                              tmp_path: Path) -> None:
    """"The inherited value of ``first_row_id`` must be written into data file metadata when
    creating existing and deleted entries": removing one file rewrites the manifest holding
    the others, whose rows keep their IDs and sequence numbers."""
    table = make(committer, tmp_path, partitioned=True)
    table.append(pa.concat_tables([rows([1, 2], "a"), rows([3, 4], "b")]))
    before = lineage(table)
    table.refresh().delete("k = 'a'")
    table = table.refresh()
    assert lineage(table) == {3: before[3], 4: before[4]}
    entries = [e for m in read_manifest_list(table.io, str(head(table).manifest_list))
               if m.content is ManifestContent.DATA for e in read_manifest(table.io, m)]
    assert {e.status for e in entries} == {EntryStatus.EXISTING, EntryStatus.DELETED}
    # stored, not inherited: the rewritten manifest's own first_row_id no longer decides them
    assert all(e.data_file.first_row_id is not None for e in entries)
    assert head(table).added_rows == 2  # the rewritten manifest's existing rows
    assert table.metadata.next_row_id == 6


def test_filtered_scans_read_the_same_row_ids(committer: InMemoryCommitter,
                                              tmp_path: Path) -> None:
    """Inheritance counts the rows of every file before one in its manifest, also files a
    filter leaves out: row IDs do not depend on the filter."""
    table = make(committer, tmp_path, partitioned=True)
    table.append(pa.concat_tables([rows([1, 2, 3], "a"), rows([4], "b"), rows([5, 6], "c")]))
    everything = lineage(table)
    assert sorted(v[0] for v in everything.values()) == list(range(6))
    assert lineage(table, row_filter="k = 'c'") == {5: everything[5], 6: everything[6]}
    assert lineage(table, row_filter="id = 4") == {4: everything[4]}


def test_stored_lineage_columns_win_and_nulls_inherit(committer: InMemoryCommitter,
                                                      tmp_path: Path) -> None:
    """"Read any non-null ``_row_id`` or ``_last_updated_sequence_number`` without
    modification"; null ones are inherited from the file's ``first_row_id`` and data sequence
    number."""
    table = make(committer, tmp_path)
    table.append(rows([1]))  # next-row-id 1
    path = f"{table.location}/data/moved.parquet"
    arrow = pa.table({
        "id": pa.array([7, 8, 9], pa.int64()), "k": ["x"] * 3,
        "_row_id": pa.array([42, None, 40], pa.int64()),
        "_last_updated_sequence_number": pa.array([1, None, None], pa.int64())})
    pq.write_table(arrow.cast(pa.schema([
        pa.field("id", pa.int64(), False, {b"PARQUET:field_id": b"1"}),
        pa.field("k", pa.string(), True, {b"PARQUET:field_id": b"2"}),
        pa.field("_row_id", pa.int64(), True, {b"PARQUET:field_id": b"2147483540"}),
        pa.field("_last_updated_sequence_number", pa.int64(), True,
                 {b"PARQUET:field_id": b"2147483539"})])), path)
    table.refresh().append_data_files([DataFile(path, FileFormat.PARQUET, (), 3,
                                                Path(path).stat().st_size)])
    got = lineage(table)
    assert got[1] == (0, 1)
    # the new file's first_row_id is 1 (next-row-id), its data sequence number 2
    assert (got[7], got[8], got[9]) == ((42, 1), (1 + 1, 2), (40, 2))
    # without lineage columns requested, the stored columns stay hidden
    assert table.refresh().scan().to_arrow().column_names == ["id", "k"]


def test_an_upgraded_table_reads_null_lineage_until_its_next_commit(
        committer: InMemoryCommitter, tmp_path: Path) -> None:
    """*Row Lineage for Upgraded Tables*: "existing snapshots are not modified (that is,
    ``first-row-id`` remains unset or null)" and "values for ``_row_id`` are read as null";
    "When writing the manifest list, all data manifests must be assigned a
    ``first_row_id``", so the first commit after the upgrade gives the old files IDs."""
    table = make(committer, tmp_path, format_version=2)
    table.append(rows([1, 2]))
    table.refresh().append(rows([3]))
    table = table.refresh().upgrade_format_version(3).refresh()
    assert table.metadata.next_row_id == 0
    assert lineage(table) == {1: (None, None), 2: (None, None), 3: (None, None)}
    table.append(rows([4]))
    table = table.refresh()
    got = lineage(table)
    assert sorted(got[i][0] for i in (1, 2, 3, 4)) == [0, 1, 2, 3]  # disjoint, from 0
    assert got[4][1] == 3 and {got[i][1] for i in (1, 2)} == {1}  # sequence numbers
    assert table.metadata.next_row_id == 4
    assert head(table).first_row_id == 0


def test_a_branch_commit_advances_next_row_id_too(committer: InMemoryCommitter,
                                                  tmp_path: Path) -> None:
    """"When the new snapshot is committed, the table's ``next-row-id`` must also be updated
    (even if the new snapshot is not in the main branch)"."""
    table = make(committer, tmp_path)
    table.append(rows([1, 2]))
    table = table.refresh()
    table.manage_snapshots().create_branch("audit", head(table).snapshot_id).commit()
    table.refresh().append(rows([3, 4, 5]), branch="audit")
    table.refresh().append(rows([6]))
    table = table.refresh()
    assert table.metadata.next_row_id == 6
    assert lineage(table, ref="audit") == {1: (0, 1), 2: (1, 1), 3: (2, 2), 4: (3, 2),
                                           5: (4, 2)}
    assert lineage(table)[6] == (5, 3)


def test_a_retried_commit_takes_the_new_next_row_id(committer: InMemoryCommitter,
                                                    tmp_path: Path) -> None:
    """*Snapshot Row IDs*: "If a commit is retried, the ``first-row-id`` must be reassigned
    based on the table's current ``next-row-id``"."""
    table = make(committer, tmp_path)
    table.append(rows([1]))

    def concurrent_append(metadata: Any) -> list[u.TableUpdate]:
        stale = table.refresh()  # another writer appends two rows first
        stale.append(rows([10, 11]))
        return []

    committer.fail_next(1, concurrent_append)
    table.refresh().append(rows([2]))
    table = table.refresh()
    assert [(s.first_row_id, s.added_rows) for s in table.snapshots()] == [
        (0, 1), (1, 2), (3, 1)]
    assert lineage(table)[2] == (3, 3)


def test_a_snapshot_without_lineage_is_refused_on_a_v3_table(committer: InMemoryCommitter,
                                                             tmp_path: Path) -> None:
    table = make(committer, tmp_path)
    table.append(rows([1]))
    table = table.refresh()
    snapshot = table.current_snapshot()
    assert snapshot is not None
    builder = MetadataBuilder(table.metadata)
    bad = replace(snapshot, snapshot_id=99, sequence_number=5, first_row_id=None)
    with pytest.raises(Exception, match="without first-row-id and added-rows"):
        builder.apply(u.AddSnapshot(bad))
    behind = replace(snapshot, snapshot_id=98, sequence_number=5, first_row_id=0)
    with pytest.raises(Exception, match="below the table's next-row-id"):
        MetadataBuilder(table.metadata).apply(u.AddSnapshot(behind))
    ok = replace(snapshot, snapshot_id=97, sequence_number=5, first_row_id=1, added_rows=0)
    md = MetadataBuilder(table.metadata).apply_all(
        [u.AddSnapshot(ok), u.SetSnapshotRef("main", SnapshotRef.branch(97))]).build()
    assert md.next_row_id == 1


def test_merged_manifests_keep_every_rows_id(committer: InMemoryCommitter,
                                             tmp_path: Path) -> None:
    """Merging manifests writes existing entries with their inherited ``first_row_id``: "When
    writing an existing data file into a new manifest, its ``first_row_id`` must be written
    into the manifest"."""
    table = make(committer, tmp_path)
    table = table.set_properties({"commit.manifest.min-count-to-merge": "2",
                                  "commit.manifest-merge.enabled": "true"}).refresh()
    seen: dict[int, tuple[Any, Any]] = {}
    for batch in range(6):
        table.append(rows([batch * 10, batch * 10 + 1]))
        table = table.refresh()
        got = lineage(table)
        assert {k: v for k, v in got.items() if k in seen} == seen  # earlier rows unchanged
        seen = got
    manifests = read_manifest_list(table.io, str(head(table).manifest_list))
    assert len(manifests) < 6  # merged
    assert sorted(v[0] for v in seen.values()) == sorted(set(v[0] for v in seen.values()))
