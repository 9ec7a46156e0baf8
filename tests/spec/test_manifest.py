"""Manifest records: validation and sequence number inheritance."""

from __future__ import annotations

import pickle

import pytest

from icepark.errors import ValidationError
from icepark.spec.manifest import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    inherit,
)


def data_file(**kw: object) -> DataFile:
    args: dict[str, object] = {"file_path": "s3://b/t/data/a.parquet",
                               "file_format": FileFormat.PARQUET, "partition": (1,),
                               "record_count": 10, "file_size_in_bytes": 100}
    args.update(kw)
    return DataFile(**args)  # type: ignore[arg-type]  # test helper over keyword arguments


def manifest(sequence_number: int) -> ManifestFile:
    return ManifestFile("m.avro", 10, 0, added_snapshot_id=7, sequence_number=sequence_number,
                        content=ManifestContent.DATA)


def test_added_entries_inherit_snapshot_and_sequence_numbers() -> None:
    entry = ManifestEntry(EntryStatus.ADDED, data_file())
    got = inherit(entry, manifest(5))
    assert (got.snapshot_id, got.sequence_number, got.file_sequence_number) == (7, 5, 5)


def test_explicit_data_sequence_number_is_kept() -> None:
    """"It is also possible to add a new file with data that logically belongs to an older
    sequence number. In that case, the data sequence number must be provided explicitly"."""
    entry = ManifestEntry(EntryStatus.ADDED, data_file(), sequence_number=2)
    got = inherit(entry, manifest(5))
    assert (got.sequence_number, got.file_sequence_number) == (2, 5)


@pytest.mark.parametrize("status", [EntryStatus.EXISTING, EntryStatus.DELETED])
def test_existing_and_deleted_entries_keep_their_numbers(status: EntryStatus) -> None:
    entry = ManifestEntry(status, data_file(), snapshot_id=3, sequence_number=1,
                          file_sequence_number=2)
    assert inherit(entry, manifest(5)) is entry


def test_v1_manifests_default_sequence_numbers_to_zero() -> None:
    """"When reading v1 manifests with no sequence number column, sequence numbers for all
    files must default to 0"."""
    entry = ManifestEntry(EntryStatus.EXISTING, data_file(), snapshot_id=3)
    got = inherit(entry, manifest(0))
    assert (got.sequence_number, got.file_sequence_number) == (0, 0)


def test_data_file_validation() -> None:
    with pytest.raises(ValidationError, match="equality_ids are required"):
        data_file(content=FileContent.EQUALITY_DELETES)
    with pytest.raises(ValidationError, match="sorted ascending"):
        data_file(split_offsets=(8, 4))
    with pytest.raises(ValidationError, match="record_count cannot be negative"):
        data_file(record_count=-1)
    with pytest.raises(ValidationError, match="Unknown file format 'csv'"):
        FileFormat.parse("csv")


def test_records_are_picklable_values() -> None:
    f = data_file(lower_bounds={1: b"\x01"}, split_offsets=(4,))
    assert pickle.loads(pickle.dumps(f)) == f
    assert not f.is_delete and data_file(content=FileContent.POSITION_DELETES).is_delete
    m = manifest(1)
    assert m.has_added_files() and not ManifestFile("m", 1, 0, 1, added_files_count=0
                                                   ).has_added_files()
