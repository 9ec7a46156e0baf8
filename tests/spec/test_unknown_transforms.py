"""Transforms icepark does not know, and multi-argument fields (``source-ids``).

Appendix C: "All v3 readers are required to read tables with unknown transforms, ignoring
them" and "For partition fields with a transform with a single argument, only ``source-id`` is
written. In case of a multi-argument transform, only ``source-ids`` is written." *Scan
Planning*: "The inclusive projection for an unknown partition transform is *true*". The
behaviour of an unknown transform follows the reference implementation's ``UnknownTransform``:
any source, result type ``string``, no projection, no computation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.expressions.expr import ALWAYS_FALSE, ALWAYS_TRUE
from icepark.expressions.manifest_evaluator import ManifestEvaluator
from icepark.expressions.parser import parse
from icepark.expressions.projection import inclusive_projection, strict_projection
from icepark.expressions.residual import ResidualEvaluator
from icepark.spec.evolution.spec_update import SpecUpdate
from icepark.spec.manifest import FieldSummary, ManifestFile
from icepark.spec.partitioning import (
    PartitionField,
    PartitionSpec,
    default_partition_name,
)
from icepark.spec.schema import Schema
from icepark.spec.serde import (
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    sort_order_from_json,
    sort_order_to_json,
    table_metadata_from_json,
    table_metadata_to_dict,
)
from icepark.spec.serde.specs_json import partition_fields_from_json, partition_fields_to_json
from icepark.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import Transform, TransformKind
from icepark.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMP_NS,
    UUID,
    ListType,
    NestedField,
    PrimitiveType,
    StructType,
)

EXAMPLE = json.loads((Path(__file__).resolve().parent / "serde_examples"
                      / "unknown_transforms.json").read_text())
SCHEMA = schema_from_json(EXAMPLE["schema"])
SPEC = partition_spec_from_json(EXAMPLE["partition-spec"])
ORDER = sort_order_from_json(EXAMPLE["sort-order"])
ZORDER = Transform.unknown("zorder")

# --- parsing -------------------------------------------------------------------------------

UNKNOWN_TEXTS = ["zorder", "bucket_v2[8]", "h3[5]", "Zorder", "geo_hash[4]", "bucket",
                 "truncate", "bucket[-1]", "identity[3]", "day[1]", "unknown", " zorder "]


@pytest.mark.parametrize("text", UNKNOWN_TEXTS)
def test_unknown_transforms_keep_their_text_exactly(text: str) -> None:
    t = Transform.from_json(text)
    assert t.kind is TransformKind.UNKNOWN and t.is_unknown
    assert str(t) == repr(t) == t.text == text
    assert Transform.from_json(str(t)) == t == Transform.unknown(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("identity", Transform.identity()), ("BUCKET[16]", Transform.bucket(16)),
    ("truncate[4]", Transform.truncate(4)), ("Day", Transform.day()), ("void", Transform.void()),
])
def test_known_transforms_read_as_before(text: str, expected: Transform) -> None:
    assert Transform.from_json(text) == expected
    assert not expected.is_unknown


@pytest.mark.parametrize(("text", "message"), [
    ("", "non-empty string"), ("  ", "non-empty string"),
    ("bucket[0]", "must be positive"), ("truncate[0]", "must be positive"),
    ("bucket[2147483648]", "at most 2147483647"),
])
def test_known_names_with_bad_parameters_are_still_errors(text: str, message: str) -> None:
    """The reference implementation fails on these too: only names it does not know are
    unknown transforms."""
    with pytest.raises(ValidationError, match=message):
        Transform.from_json(text)


@pytest.mark.parametrize("text", ["zorder", "bucket_v2[8]", "unknown"])
def test_what_people_write_must_be_a_known_transform(text: str) -> None:
    with pytest.raises(ValidationError, match="Unknown transform"):
        Transform.parse(text)


@pytest.mark.parametrize("make", [
    lambda: Transform(TransformKind.UNKNOWN), lambda: Transform.unknown(" "),
    lambda: Transform(TransformKind.UNKNOWN, 3, "x"),
    lambda: Transform(TransformKind.IDENTITY, text="identity"),
])
def test_constructor_rejections(make: Callable[[], Transform]) -> None:
    with pytest.raises(ValidationError):
        make()


def test_unknown_transforms_are_equal_by_their_text() -> None:
    assert Transform.unknown("zorder") == Transform.from_json("zorder")
    assert Transform.unknown("zorder") != Transform.unknown("Zorder")
    assert len({Transform.unknown("a"), Transform.unknown("a"), Transform.unknown("b")}) == 2


# --- behaviour (the reference's UnknownTransform) ------------------------------------------

SOURCES = [BOOLEAN, INT, LONG, DOUBLE, DATE, STRING, UUID, BINARY, TIMESTAMP_NS,
           PrimitiveType.decimal(9, 2), StructType((NestedField.optional(9, "x", INT),)),
           ListType(10, INT)]


@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_any_source_and_a_string_result(source: Any) -> None:
    """"assume the transform function can be applied for any type"; "the actual result type is
    not known", so it is ``string``."""
    assert ZORDER.can_transform(source)
    assert ZORDER.result_type(source) == STRING


@pytest.mark.parametrize("source", [LONG, STRING], ids=str)
def test_an_unknown_transform_cannot_be_computed(source: PrimitiveType) -> None:
    with pytest.raises(UnsupportedFeature, match="Cannot compute transform 'zorder'"):
        ZORDER.function(source)
    with pytest.raises(UnsupportedFeature):
        ZORDER.apply(source, 1)


def test_order_is_not_preserved_and_only_itself_satisfies_it() -> None:
    assert not ZORDER.preserves_order
    assert ZORDER.satisfies_order_of(Transform.unknown("zorder"))
    assert not ZORDER.satisfies_order_of(Transform.identity())
    assert not Transform.identity().satisfies_order_of(ZORDER)
    assert not Transform.day().satisfies_order_of(ZORDER)


@pytest.mark.parametrize(("value", "expected"), [
    (None, "null"), ("0b0110", "0b0110"), (42, "42"), (b"\x00\x01", "AAE="),
])
def test_human_strings_of_whatever_other_writers_stored(value: Any, expected: str) -> None:
    assert ZORDER.to_human_string(LONG, value) == expected


def test_a_field_of_an_unknown_transform_has_no_default_name() -> None:
    with pytest.raises(ValidationError, match="no default name"):
        default_partition_name("a", ZORDER)


# --- partition and sort field JSON ---------------------------------------------------------

FIELD_JSON: list[tuple[dict[str, Any], int, tuple[int, ...], dict[str, Any]]] = [
    # (read, source_id, source_ids, written back)
    ({"source-ids": [1, 2], "transform": "zorder"}, 1, (1, 2),
     {"source-ids": [1, 2], "transform": "zorder"}),
    # a one-column field of an unknown transform keeps the form its writer chose
    ({"source-ids": [3], "transform": "zorder"}, 3, (3,),
     {"source-ids": [3], "transform": "zorder"}),
    # every known transform takes one argument: written with source-id
    ({"source-ids": [3], "transform": "bucket[4]"}, 3, (),
     {"source-id": 3, "transform": "bucket[4]"}),
    ({"source-id": 3, "source-ids": [3], "transform": "identity"}, 3, (),
     {"source-id": 3, "transform": "identity"}),
    ({"source-id": 3, "transform": "h3[5]"}, 3, (), {"source-id": 3, "transform": "h3[5]"}),
]


def _partition_field(obj: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in obj.items() if k.startswith("source")}, "field-id": 1000,
            "name": "p", "transform": obj["transform"]}


def _sort_field(obj: dict[str, Any]) -> dict[str, Any]:
    return {"transform": obj["transform"], **{k: v for k, v in obj.items()
                                              if k.startswith("source")},
            "direction": "asc", "null-order": "nulls-first"}


@pytest.mark.parametrize(("read", "source_id", "source_ids", "written"), FIELD_JSON)
def test_partition_field_sources(read: dict[str, Any], source_id: int,
                                 source_ids: tuple[int, ...], written: dict[str, Any]) -> None:
    [f] = partition_fields_from_json([_partition_field(read)])
    assert (f.source_id, f.source_ids) == (source_id, source_ids)
    assert f.sources == (source_ids or (source_id,))
    assert json.dumps(partition_fields_to_json([f])) == json.dumps([_partition_field(written)])


@pytest.mark.parametrize(("read", "source_id", "source_ids", "written"), FIELD_JSON)
def test_sort_field_sources(read: dict[str, Any], source_id: int,
                            source_ids: tuple[int, ...], written: dict[str, Any]) -> None:
    order = sort_order_from_json({"order-id": 1, "fields": [_sort_field(read)]})
    [f] = order.fields
    assert (f.source_id, f.source_ids) == (source_id, source_ids)
    assert json.dumps(sort_order_to_json(order)["fields"]) == json.dumps([_sort_field(written)])


BAD_SOURCES: list[tuple[dict[str, Any], str]] = [
    ({"source-ids": [], "transform": "zorder"}, "'source-ids' must not be empty"),
    ({"source-ids": [1, 2], "transform": "bucket[4]"}, "bucket[4] takes one source column"),
    ({"source-ids": [1, 2], "transform": "identity"}, "identity takes one source column"),
    ({"source-id": 1, "source-ids": [2], "transform": "zorder"}, "disagree"),
    ({"source-id": 1, "source-ids": [1, 2], "transform": "zorder"}, "disagree"),
    ({"source-ids": "1", "transform": "zorder"}, "'source-ids' must be a JSON list"),
    ({"source-ids": [1, True], "transform": "zorder"}, "must be a list of integers"),
    ({"transform": "zorder"}, "missing required field 'source-id'"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_SOURCES)
def test_bad_sources_are_errors_naming_the_field(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        partition_fields_from_json([_partition_field(bad)])
    with pytest.raises(ValidationError, match=re.escape(message)):
        sort_order_from_json({"order-id": 1, "fields": [_sort_field(bad)]})


def test_spec_and_sort_order_round_trip_byte_for_byte() -> None:
    assert json.dumps(partition_spec_to_json(SPEC)) == json.dumps(EXAMPLE["partition-spec"])
    assert json.dumps(sort_order_to_json(ORDER)) == json.dumps(EXAMPLE["sort-order"])


def test_field_constructors_check_their_sources() -> None:
    f = PartitionField.of_sources((2, 3), 1000, ZORDER, "ab_z")
    assert f == SPEC.fields[0] and f.is_multi_argument and str(f) == "1000: ab_z: zorder(2, 3)"
    with pytest.raises(ValidationError, match="not the first"):
        PartitionField(3, 1000, ZORDER, "ab_z", (2, 3))
    with pytest.raises(ValidationError, match="must not be empty"):
        PartitionField.of_sources((), 1000, ZORDER, "ab_z")
    with pytest.raises(ValidationError, match="single-argument transform"):
        SortField(1, Transform.day(), SortDirection.ASC, NullOrder.NULLS_FIRST, (1,))
    assert str(ORDER.fields[0]) == "zorder(2, 3) asc nulls-first"


# --- binding to a schema -------------------------------------------------------------------

def test_partition_type_of_unknown_transforms_is_string() -> None:
    assert SPEC.partition_type(SCHEMA) == StructType((
        NestedField.optional(1000, "ab_z", STRING), NestedField.optional(1001, "id_b", STRING),
        NestedField.optional(1002, "cat", STRING)))
    dropped = Schema.of(NestedField.required(1, "id", LONG))  # a, b, cat dropped
    old = PartitionSpec(0, SPEC.fields[:2])
    assert [f.field_type for f in old.partition_type(dropped).fields] == [STRING, STRING]


def test_check_compatible_checks_every_source_of_a_multi_argument_field() -> None:
    SPEC.check_compatible(SCHEMA)
    ORDER.check_compatible(SCHEMA)
    without_b = Schema.of(*(f for f in SCHEMA.fields if f.name != "b"))
    with pytest.raises(ValidationError, match="Cannot find source column 3"):
        SPEC.check_compatible(without_b)
    with pytest.raises(ValidationError, match="Cannot find source column 3"):
        ORDER.check_compatible(without_b)
    nested = Schema.of(NestedField.optional(2, "a", LONG),
                       NestedField.optional(5, "l", ListType(3, LONG)))
    with pytest.raises(ValidationError, match="cannot be contained in a list"):
        PartitionSpec(0, SPEC.fields[:1]).check_compatible(nested)


def test_redundant_multi_argument_fields_are_rejected() -> None:
    twice = PartitionSpec(0, (SPEC.fields[0], replace(SPEC.fields[0], field_id=1003, name="z2")))
    with pytest.raises(ValidationError, match="redundant"):
        twice.check_compatible(SCHEMA)
    other_order = replace(SPEC.fields[0], source_id=3, source_ids=(3, 2), field_id=1003, name="z")
    PartitionSpec(0, (SPEC.fields[0], other_order)).check_compatible(SCHEMA)


def test_partition_path_shows_what_was_stored() -> None:
    assert SPEC.partition_path([b"\x01", 5, "x"], SCHEMA) == "ab_z=AQ%3D%3D/id_b=5/cat=x"
    assert not SPEC.is_unpartitioned
    assert [f.name for f in SPEC.unknown_fields] == ["ab_z", "id_b"]


def test_writers_are_refused_naming_every_unknown_field() -> None:
    with pytest.raises(UnsupportedFeature) as info:
        SPEC.check_writable()
    message = str(info.value)
    assert "field 'ab_z' uses transform 'zorder'" in message
    assert "field 'id_b' uses transform 'bucket_v2[8]'" in message
    with pytest.raises(UnsupportedFeature, match="its field zorder\\(2, 3\\) asc"):
        ORDER.check_writable()
    PartitionSpec(0, SPEC.fields[2:]).check_writable()
    SortOrder(1, ORDER.fields[1:]).check_writable()


def test_sort_order_satisfaction_compares_every_source() -> None:
    assert ORDER.satisfies(ORDER)
    swapped = SortOrder(2, (SortField(3, ZORDER, SortDirection.ASC, NullOrder.NULLS_FIRST,
                                      (3, 2)),))
    assert not swapped.satisfies(SortOrder(1, ORDER.fields[:1]))


# --- table metadata ------------------------------------------------------------------------

def metadata(format_version: int, spec: dict[str, Any] | None = None,
             order: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format-version": format_version, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
        "last-column-id": 4, "current-schema-id": 0, "schemas": [EXAMPLE["schema"]],
        "default-spec-id": 0, "partition-specs": [spec or EXAMPLE["partition-spec"]],
        "last-partition-id": 1002, "default-sort-order-id": 1,
        "sort-orders": [{"order-id": 0, "fields": []}, order or EXAMPLE["sort-order"]],
        "properties": {}, "current-snapshot-id": -1, "snapshots": [], "snapshot-log": [],
        "metadata-log": [], "refs": {}}
    if format_version >= 3:
        doc["next-row-id"] = 0
    return doc


def test_v3_metadata_with_unknown_and_multi_argument_transforms_round_trips() -> None:
    doc = metadata(3)
    md = table_metadata_from_json(doc)
    assert md.spec() == SPEC and md.sort_order() == ORDER
    written = table_metadata_to_dict(md)
    for key in ("partition-specs", "sort-orders"):
        assert json.dumps(written[key]) == json.dumps(doc[key])
    assert table_metadata_from_json(written) == md


@pytest.mark.parametrize("version", [1, 2])
def test_multi_argument_fields_need_format_version_3(version: int) -> None:
    with pytest.raises(ValidationError, match="partition spec 0 field 'ab_z' has 'source-ids' "
                       "\\[2, 3\\]: multi-argument transforms need format version 3"):
        table_metadata_from_json(metadata(version))
    one_column_spec = {"spec-id": 0, "fields": EXAMPLE["partition-spec"]["fields"][1:]}
    with pytest.raises(ValidationError, match="sort order 1 field zorder\\(2, 3\\)"):
        table_metadata_from_json(metadata(version, one_column_spec))


@pytest.mark.parametrize("version", [2, 3])
def test_single_argument_unknown_transforms_load_in_any_version(version: int) -> None:
    spec = {"spec-id": 0, "fields": [
        {"source-id": 2, "field-id": 1000, "name": "a_h", "transform": "h3[5]"},
        {"source-ids": [3], "field-id": 1001, "name": "b_z", "transform": "zorder"}]}
    order = {"order-id": 1, "fields": [{"transform": "h3[5]", "source-id": 2,
                                        "direction": "asc", "null-order": "nulls-first"}]}
    md = table_metadata_from_json(metadata(version, spec, order))
    assert [str(f.transform) for f in md.spec().fields] == ["h3[5]", "zorder"]
    assert table_metadata_to_dict(md)["partition-specs"] == [spec]


def test_the_default_spec_needs_every_source_column() -> None:
    spec = {"spec-id": 0, "fields": [
        {"source-ids": [2, 9], "field-id": 1000, "name": "z", "transform": "zorder"}]}
    with pytest.raises(ValidationError, match="default partition spec 0 does not fit"):
        table_metadata_from_json(metadata(3, spec))


# --- partition evolution -------------------------------------------------------------------

def update(format_version: int = 3) -> SpecUpdate:
    return SpecUpdate([SPEC], 0, SCHEMA, 1002, format_version=format_version)


def test_evolution_keeps_unknown_fields_as_they_are() -> None:
    spec, last = update().rename_field("ab_z", "z").add_field("a", "bucket[4]").apply()
    assert spec.fields[0] == replace(SPEC.fields[0], name="z")
    assert spec.fields[0].source_ids == (2, 3)
    assert spec.fields[1:3] == SPEC.fields[1:3]
    assert (str(spec.fields[3].transform), last) == ("bucket[4]", 1003)


def test_removing_the_unknown_fields_makes_a_writable_spec() -> None:
    spec, _ = update().remove_field("ab_z").remove_field("id_b").apply()
    assert spec.fields == SPEC.fields[2:]
    spec.check_writable()


def test_v1_removal_keeps_the_field_as_void() -> None:
    v1 = PartitionSpec(0, (PartitionField(2, 1000, Transform.unknown("h3[5]"), "a_h"),))
    spec, _ = SpecUpdate([v1], 0, SCHEMA, 1000, format_version=1).remove_field("a_h").apply()
    assert spec.fields == (PartitionField(2, 1000, Transform.void(), "a_h_1000"),)


@pytest.mark.parametrize("transform", ["zorder", Transform.unknown("zorder")], ids=str)
def test_an_unknown_transform_cannot_be_added(transform: str | Transform) -> None:
    with pytest.raises(ValidationError, match="zorder"):
        update().add_field("a", transform)


# --- planning: ignored for filtering -------------------------------------------------------

FILTERS = ["a = 1", "b > 5 AND a < 3", "id = 7", "a IS NULL", "a IN (1, 2)", "NOT (b = 2)"]


@pytest.mark.parametrize("row_filter", FILTERS)
def test_inclusive_projection_through_unknown_fields_is_true(row_filter: str) -> None:
    """"The inclusive projection for an unknown partition transform is *true*"; no strict
    projection can prove a row matches through one."""
    assert inclusive_projection(SCHEMA, SPEC)(parse(row_filter)) is ALWAYS_TRUE
    assert strict_projection(SCHEMA, SPEC)(parse(row_filter)) is ALWAYS_FALSE


def test_known_fields_of_the_same_spec_still_filter() -> None:
    projected = inclusive_projection(SCHEMA, SPEC)(parse("a = 1 AND cat = 'x'"))
    assert str(projected) == "cat = 'x'"


def test_residuals_keep_predicates_on_unknown_sources() -> None:
    residuals = ResidualEvaluator(SCHEMA, SPEC, parse("a = 1 AND cat = 'x'"))
    assert str(residuals.residual_for((b"\x01", 5, "x"))) == "a = 1"
    assert str(residuals.residual_for(("anything", None, "y"))) == "FALSE"


def test_manifests_are_not_skipped_by_unknown_fields() -> None:
    """Their summaries' bounds are in a type icepark cannot know: never read."""
    garbage = FieldSummary(False, False, b"\xff", b"\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6")
    cat = FieldSummary(False, False, b"x", b"x")
    manifest = ManifestFile("m.avro", 1, 0, 1, partitions=(garbage, garbage, cat))
    for row_filter in FILTERS:
        assert ManifestEvaluator(SCHEMA, SPEC, parse(row_filter)).eval(manifest)
    assert not ManifestEvaluator(SCHEMA, SPEC, parse("cat = 'y' AND a = 1")).eval(manifest)
