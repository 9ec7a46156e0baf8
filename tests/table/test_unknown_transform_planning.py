"""A v3 table whose partition spec and sort order use transforms icepark does not know, as another
writer made it: a multi-argument ``zorder`` of two columns (``source-ids``), a single-argument
``bucket_v2[8]`` and an identity field, with partition values stored as that writer typed them
(``zorder`` as binary, ``bucket_v2`` as int) and an equality delete file in one partition.

Appendix C: "All v3 readers are required to read tables with unknown transforms, ignoring
them"; *Scan Planning*: "The inclusive projection for an unknown partition transform is
*true*" and note 4, "the result of an unknown transform is still used when testing whether
partition values are equal"; *Writing data files*: "Writers are not allowed to commit files
with a partition spec that contains a field with an unknown transform."

The table is made the way such a table reaches icepark: data files and manifests on disk, and a
metadata file (JSON edited by the test) registered with a catalog. ``ManifestWriter`` types a
partition by the table's spec (``string`` for an unknown transform, as the reference does), so
the foreign manifests are written with a stand-in spec of the same field IDs and names typing
the values as the other writer did, and that writer's real spec in their key-value metadata.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog import load_catalog
from icepark.cli.table_commands import order_text, spec_text
from icepark.errors import UnsupportedFeature
from icepark.expressions import RowEvaluator
from icepark.expressions.parser import parse
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import FileIO
from icepark.io.manifest.manifest import ManifestWriter, read_manifest_metadata
from icepark.io.manifest.manifest_list import (
    assign_first_row_ids,
    snapshot_manifests,
    write_manifest_list,
)
from icepark.io.parquet.data_writer import write_data_files
from icepark.io.parquet.delete_writer import EqualityDeleteWriter
from icepark.spec.manifest import DataFile, ManifestContent, ManifestFile
from icepark.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.serde import (
    partition_spec_from_json,
    schema_from_json,
    schema_to_json,
    snapshot_to_json,
    table_metadata_to_dict,
)
from icepark.spec.serde.specs_json import partition_fields_to_json
from icepark.spec.snapshots import Operation, Snapshot, Summary
from icepark.spec.transforms import Transform
from icepark.spec.types import BINARY, INT, NestedField
from icepark.table.inspect.tables import metadata_table
from icepark.table.table import Table

EXAMPLE = json.loads((Path(__file__).resolve().parents[1] / "spec" / "serde_examples"
                      / "unknown_transforms.json").read_text())
SCHEMA = schema_from_json(EXAMPLE["schema"])
SPEC = partition_spec_from_json(EXAMPLE["partition-spec"])

# How the other writer typed the partition values: zorder as binary, bucket_v2 as int.
STORED_SCHEMA = Schema.of(*SCHEMA.fields, NestedField.optional(901, "z", BINARY),
                          NestedField.optional(902, "h", INT))
STORED_SPEC = PartitionSpec(0, (
    PartitionField(901, 1000, Transform.identity(), "ab_z"),
    PartitionField(902, 1001, Transform.identity(), "id_b"),
    PartitionField(4, 1002, Transform.identity(), "cat")))

# file name -> (partition tuple, rows of (id, a, b, cat)); f2 differs from f1 only in the zorder
# value, f3 only in cat.
FILES: dict[str, tuple[tuple[Any, ...], list[tuple[int, int, int, str]]]] = {
    "f1": ((b"\x00\x01", 3, "x"), [(1, 0, 0, "x"), (2, 0, 1, "x"), (3, 1, 0, "x")]),
    "f2": ((b"\x00\x02", 3, "x"), [(4, 0, 5, "x"), (5, 2, 2, "x"), (6, 2, 3, "x")]),
    "f3": ((b"\x00\x01", 3, "y"), [(7, 0, 0, "y"), (8, 0, 1, "y"), (9, 1, 0, "y")]),
}
DELETED_PARTITION = (b"\x00\x01", 3, "x")  # deletes rows with a = 0 there: ids 1 and 2 only
ALL_IDS = [i for _, rows in FILES.values() for i, *_ in rows]
LIVE_IDS = sorted(set(ALL_IDS) - {1, 2})


class _ForeignManifestWriter(ManifestWriter):
    """Values typed by the stand-in spec; the real spec and schema in the key-value metadata."""

    def _key_value_metadata(self) -> dict[str, str]:
        meta = super()._key_value_metadata()
        meta["schema"] = json.dumps(schema_to_json(SCHEMA))
        meta["partition-spec"] = json.dumps(partition_fields_to_json(SPEC.fields))
        return meta


@dataclass(frozen=True)
class Made:
    table: Table
    document: dict[str, Any]
    """The metadata file the test wrote."""


def _arrow(rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    names = [f.name for f in SCHEMA.fields]
    return pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows],
                                schema=to_arrow_schema(SCHEMA))


def _at(location: str) -> Callable[[], str]:
    return lambda: location


def _manifest(io: FileIO, location: str, files: Sequence[DataFile], content: ManifestContent,
              snapshot_id: int) -> ManifestFile:
    with _ForeignManifestWriter(io, location, STORED_SPEC, STORED_SCHEMA, 3, content,
                                snapshot_id) as writer:
        writer.add_files(files)
    return writer.to_manifest_file()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    root = tmp_path_factory.mktemp("unknown")
    catalog = load_catalog("unknown", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    base = catalog.create_table("db.base", SCHEMA, format_version=3, keep_field_ids=True)
    io, location = base.io, base.location
    data = []
    for name, (partition, rows) in FILES.items():
        [written] = write_data_files(io, _at(f"{location}/data/{name}.parquet"), SCHEMA,
                                     UNPARTITIONED, (), {}, [_arrow(rows)])
        data.append(replace(written, partition=partition, spec_id=0))
    deletes = EqualityDeleteWriter(io, _at(f"{location}/data/eq.parquet"), SCHEMA,
                                   UNPARTITIONED, (), {}, equality_ids=[2])
    deletes.write(pa.table({"a": pa.array([0], pa.int64())}))
    [eq] = [replace(f, partition=DELETED_PARTITION, spec_id=0) for f in deletes.close()]

    first, added = assign_first_row_ids(
        [_manifest(io, f"{location}/metadata/m1.avro", data, ManifestContent.DATA, 1)], 0)
    write_manifest_list(io, f"{location}/metadata/snap-1.avro", 3, 1, None, 1, first,
                        first_row_id=0)
    s1 = Snapshot(1, None, 1, 1_700_000_000_000, f"{location}/metadata/snap-1.avro",
                  Summary(Operation.APPEND), 0, first_row_id=0, added_rows=added)
    second = [_manifest(io, f"{location}/metadata/m2.avro", [eq], ManifestContent.DELETES, 2),
              *snapshot_manifests(io, s1)]
    write_manifest_list(io, f"{location}/metadata/snap-2.avro", 3, 2, 1, 2, second,
                        first_row_id=added)
    s2 = Snapshot(2, 1, 2, 1_700_000_001_000, f"{location}/metadata/snap-2.avro",
                  Summary(Operation.DELETE), 0, first_row_id=added, added_rows=0)

    assert base.metadata_location is not None
    document = json.loads(Path(base.metadata_location).read_text())
    document.update({
        "partition-specs": [EXAMPLE["partition-spec"]], "default-spec-id": 0,
        "last-partition-id": 1002,
        "sort-orders": [{"order-id": 0, "fields": []}, EXAMPLE["sort-order"]],
        "default-sort-order-id": 1,
        "snapshots": [snapshot_to_json(s, 3) for s in (s1, s2)], "current-snapshot-id": 2,
        "refs": {"main": {"snapshot-id": 2, "type": "branch"}}, "last-sequence-number": 2,
        "next-row-id": added})
    path = Path(location.removeprefix("file://")) / "metadata" / "00001-foreign.metadata.json"
    path.write_text(json.dumps(document, indent=2))
    yield Made(catalog.register_table("db.foreign", str(path)), document)


def test_the_table_loads_and_its_specs_round_trip_byte_for_byte(made: Made) -> None:
    md = made.table.metadata
    assert md.spec() == SPEC
    assert md.spec().fields[0].source_ids == (2, 3)
    assert md.sort_order().fields[0].source_ids == (2, 3)
    written = table_metadata_to_dict(md)
    for key in ("partition-specs", "sort-orders"):
        assert json.dumps(written[key]) == json.dumps(made.document[key])


def test_manifests_keep_the_spec_json_of_their_writer(made: Made) -> None:
    snapshot = made.table.current_snapshot()
    for manifest in snapshot_manifests(made.table.io, snapshot):
        spec = read_manifest_metadata(made.table.io, manifest.manifest_path).spec
        assert spec is not None and spec.fields == SPEC.fields


def test_partition_values_decode_as_stored(made: Made) -> None:
    """The values of unknown fields are whatever the writer stored (here bytes and ints),
    compared as they are."""
    tasks = list(made.table.scan().plan_files())
    assert {_name(t.data_file): t.data_file.partition for t in tasks} == {
        name: p for name, (p, _) in FILES.items()}


@pytest.mark.parametrize(("row_filter", "planned"), [
    ("a = 0", {"f1", "f2", "f3"}),
    ("a = 1 OR b = 3", {"f1", "f2", "f3"}),
    ("NOT (a = 1)", {"f1", "f2", "f3"}),
    ("a IS NOT NULL", {"f1", "f2", "f3"}),
    ("id = 4", {"f2"}),  # bucket_v2[8] cannot prune; the metrics of id can
    ("a = 0 AND b = 0", {"f1", "f3"}),  # nor can zorder; the metrics of b can
])
def test_filters_on_unknown_sources_cannot_prune_partitions(made: Made, row_filter: str,
                                                            planned: set[str]) -> None:
    scan = made.table.scan(row_filter)
    assert {_name(t.data_file) for t in scan.plan_files()} == planned
    assert sorted(scan.to_arrow().column("id").to_pylist()) == _expected(row_filter)


def test_known_fields_of_the_spec_still_prune(made: Made) -> None:
    planned = {_name(t.data_file) for t in made.table.scan("cat = 'y' AND a = 0").plan_files()}
    assert planned == {"f3"}


def test_residuals_keep_what_unknown_fields_cannot_decide(made: Made) -> None:
    residuals = {str(t.residual) for t in made.table.scan("a = 0 AND cat = 'x'").plan_files()}
    assert residuals == {"a = 0"}


def test_deletes_match_data_files_by_the_whole_partition_tuple(made: Made) -> None:
    """Note 4: f2 differs from the delete's partition only in the zorder value, f3 only in
    cat; the equality delete of ``a = 0`` applies to f1 alone."""
    by_file = {_name(t.data_file): len(t.delete_files) for t in made.table.scan().plan_files()}
    assert by_file == {"f1": 1, "f2": 0, "f3": 0}
    assert sorted(made.table.scan().to_arrow().column("id").to_pylist()) == LIVE_IDS


def test_partition_metadata_column_leaves_unknown_fields_out(made: Made) -> None:
    result = made.table.scan("id = 3").to_arrow(metadata_columns=("_partition",))
    assert result.schema.field("_partition").type == pa.struct(
        [pa.field("cat", pa.string())])
    assert result.column("_partition").to_pylist() == [{"cat": "x"}]


def test_metadata_tables_leave_unknown_fields_out_of_partition(made: Made) -> None:
    files = metadata_table(made.table, "files")
    assert files.schema.field("partition").type == pa.struct([pa.field("cat", pa.string())])
    # three data files and the equality delete file
    assert sorted(r["cat"] for r in files.column("partition").to_pylist()) == ["x", "x", "x", "y"]
    for name in ("entries", "partitions"):
        assert metadata_table(made.table, name).num_rows > 0


def test_appends_are_refused_before_any_file_is_written(made: Made) -> None:
    data_dir = Path(made.table.location.removeprefix("file://")) / "data"
    before = sorted(data_dir.iterdir())
    with pytest.raises(UnsupportedFeature) as info:
        made.table.append(_arrow([(10, 1, 1, "x")]))
    message = str(info.value)
    assert "field 'ab_z' uses transform 'zorder'" in message
    assert "field 'id_b' uses transform 'bucket_v2[8]'" in message
    assert sorted(data_dir.iterdir()) == before
    assert made.table.refresh().current_snapshot().snapshot_id == 2  # type: ignore[union-attr]


def test_describe_shows_the_transforms_as_written(made: Made) -> None:
    table = made.table
    assert spec_text(table.spec(), table.schema()) == (
        "1000: ab_z = zorder(a, b) (unknown transform), "
        "1001: id_b = bucket_v2[8](id) (unknown transform), 1002: cat = identity(cat)")
    assert order_text(table.sort_order(), table.schema()) == (
        "zorder(a, b) (unknown transform) asc nulls-first, id desc nulls-last")


def _name(data_file: DataFile) -> str:
    return data_file.file_path.rsplit("/", 1)[-1].removesuffix(".parquet")


def _expected(row_filter: str) -> list[int]:
    evaluator = RowEvaluator(SCHEMA, parse(row_filter))
    return sorted(r[0] for _, rows in FILES.values() for r in rows
                  if r[0] in LIVE_IDS and evaluator.eval(r))
