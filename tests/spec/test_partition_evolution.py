"""Partition evolution, v1 and v2: add, remove, rename, field ID and spec ID reuse, rejections."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from icepark.errors import ValidationError
from icepark.spec.evolution.spec_update import SpecUpdate
from icepark.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)

SCHEMA = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "data", STRING),
    NestedField.optional(3, "category", STRING),
    NestedField.optional(4, "ts", TIMESTAMPTZ),
    NestedField.optional(5, "d", DATE),
    NestedField.optional(6, "f", FLOAT),
    NestedField.optional(7, "tags", ListType(8, STRING)),
    NestedField.optional(9, "props", MapType(10, STRING, 11, STRING)),
    NestedField.optional(12, "loc", StructType((
        NestedField.optional(13, "lat", DOUBLE), NestedField.optional(14, "city", STRING)))),
)

Row = tuple[int, int, str, str]  # (source_id, field_id, transform, name)


def _spec(spec_id: int, *fields: Row) -> PartitionSpec:
    return PartitionSpec(spec_id, tuple(PartitionField(s, f, Transform.parse(t), n)
                                        for s, f, t, n in fields))


def _rows(spec: PartitionSpec) -> list[Row]:
    return [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields]


BUCKET = (1, 1000, "bucket[16]", "id_bucket_16")
DAY = (4, 1001, "day", "ts_day")
SPEC0 = _spec(0, BUCKET, DAY)


def _update(specs: list[PartitionSpec] | None = None, default: int = 0, last: int | None = None,
            version: int = 2) -> SpecUpdate:
    specs = specs if specs is not None else [SPEC0]
    if last is None:
        last = max(s.last_assigned_field_id for s in specs)
    return SpecUpdate(specs, default, SCHEMA, last, format_version=version)


# --- v2 ------------------------------------------------------------------------------------

def test_v2_add_to_an_unpartitioned_table() -> None:
    spec, last = (SpecUpdate([UNPARTITIONED], 0, SCHEMA, 999)
                  .add_field("id", "bucket[16]").add_identity("category")
                  .add_field("ts", Transform.hour(), "hourly").apply())
    assert spec.spec_id == 1
    assert _rows(spec) == [(1, 1000, "bucket[16]", "id_bucket_16"),
                           (3, 1001, "identity", "category"), (4, 1002, "hour", "hourly")]
    assert last == 1002


@pytest.mark.parametrize(("transform", "name"), [
    ("identity", "data"), ("bucket[4]", "data_bucket_4"), ("truncate[3]", "data_trunc_3"),
    ("void", "data_null"),
])
def test_v2_default_names(transform: str, name: str) -> None:
    spec, _ = _update().add_field("data", transform).apply()
    assert spec.fields[-1].name == name


def test_v2_add_nested_struct_field_uses_the_dotted_name() -> None:
    spec, _ = _update().add_field("loc.city", "truncate[2]").apply()
    assert _rows(spec)[-1] == (14, 1002, "truncate[2]", "loc.city_trunc_2")


def test_v2_remove_drops_the_field_and_keeps_the_other_ids() -> None:
    spec, last = _update().remove_field("id_bucket_16").apply()
    assert (spec.spec_id, _rows(spec), last) == (1, [DAY], 1001)


def test_v2_remove_by_term() -> None:
    spec, _ = _update().remove_field("bucket[16](id)").apply()
    assert _rows(spec) == [DAY]


def test_v2_remove_everything_gives_an_unpartitioned_spec() -> None:
    spec, _ = _update().remove_field("id_bucket_16").remove_field("day(ts)").apply()
    assert spec.fields == () and spec.spec_id == 1


def test_v2_rename_keeps_id_and_transform() -> None:
    spec, last = _update().rename_field("ts_day", "day_of_ts").apply()
    assert _rows(spec) == [BUCKET, (4, 1001, "day", "day_of_ts")]
    assert last == 1001


def test_v2_rename_then_reuse_the_old_name() -> None:
    spec, _ = (_update().rename_field("id_bucket_16", "shard")
               .add_field("id", "bucket[8]", "id_bucket_16").apply())
    assert _rows(spec) == [(1, 1000, "bucket[16]", "shard"), DAY,
                           (1, 1002, "bucket[8]", "id_bucket_16")]


def test_v2_remove_then_reuse_the_name() -> None:
    spec, _ = _update().remove_field("ts_day").add_field("d", "day", "ts_day").apply()
    assert _rows(spec) == [BUCKET, (5, 1002, "day", "ts_day")]


def test_v2_change_time_granularity_in_one_update() -> None:
    spec, last = _update().remove_field("ts_day").add_field("ts", "hour").apply()
    assert _rows(spec) == [BUCKET, (4, 1002, "hour", "ts_hour")]
    assert last == 1002


def test_v2_re_adding_a_field_of_an_earlier_spec_reuses_its_id_and_spec() -> None:
    spec1, last = _update().remove_field("id_bucket_16").apply()
    specs = [SPEC0, spec1]
    spec2, last2 = _update(specs, default=1, last=last).add_field("id", "bucket[16]").apply()
    # the same field ID and name; the field is now last
    assert _rows(spec2) == [DAY, BUCKET]
    assert spec2.spec_id == 2
    assert last2 == 1001
    # removing it again gives spec 1's fields back: spec 1 is reused
    spec3, _ = _update([SPEC0, spec1, spec2], default=2).remove_field("id_bucket_16").apply()
    assert spec3 == spec1


def test_v2_re_adding_reuses_the_historic_name_when_none_is_given() -> None:
    spec0 = _spec(0, (1, 1000, "bucket[16]", "shard"))
    spec1 = _spec(1)
    spec, last = _update([spec0, spec1], default=1, last=1000).add_field("id", "bucket[16]").apply()
    assert spec == spec0  # identical fields: spec 0 is reused
    assert last == 1000


def test_v2_re_adding_with_another_name_assigns_a_new_id() -> None:
    spec0 = _spec(0, (1, 1000, "bucket[16]", "shard"))
    spec1 = _spec(1)
    spec, last = (_update([spec0, spec1], default=1, last=1000)
                  .add_field("id", "bucket[16]", "id_shard").apply())
    assert _rows(spec) == [(1, 1001, "bucket[16]", "id_shard")]
    assert (spec.spec_id, last) == (2, 1001)


def test_v2_re_adding_does_not_reuse_an_id_the_current_spec_holds() -> None:
    # An upgraded v1 table whose specs each numbered their fields from 1000.
    spec0 = _spec(0, (1, 1000, "bucket[16]", "id_bucket_16"))
    spec1 = _spec(1, (3, 1000, "identity", "category"))
    spec, last = _update([spec0, spec1], default=1, last=1000).add_field("id", "bucket[16]") \
        .apply()
    assert _rows(spec) == [(3, 1000, "identity", "category"), (1, 1001, "bucket[16]",
                                                                "id_bucket_16")]
    assert last == 1001


def test_v2_remove_and_re_add_in_one_update_keeps_the_field() -> None:
    spec, last = _update().remove_field("ts_day").add_field("ts", "day").apply()
    assert spec == SPEC0
    assert last == 1001


def test_v2_remove_and_re_add_under_a_new_name_renames_it() -> None:
    spec, _ = _update().remove_field("ts_day").add_field("ts", "day", "daily").apply()
    assert _rows(spec) == [BUCKET, (4, 1001, "day", "daily")]


def test_no_change_reuses_the_current_spec() -> None:
    spec, last = _update().apply()
    assert (spec, last) == (SPEC0, 1001)


def test_identical_to_an_older_spec_reuses_its_id() -> None:
    spec1 = _spec(1, BUCKET)
    spec, _ = _update([SPEC0, spec1], default=1).add_field("ts", "day").apply()
    assert spec == SPEC0  # spec 0 has exactly these fields: its ID is reused


def test_new_spec_id_is_one_more_than_the_largest() -> None:
    specs = [_spec(0), _spec(7, BUCKET), _spec(3, DAY)]
    spec, _ = _update(specs, default=3).add_field("category", "identity").apply()
    assert spec.spec_id == 8


@pytest.mark.parametrize(("last", "expected"), [(1001, 1002), (1010, 1011), (900, 1002)])
def test_last_partition_id_bookkeeping(last: int, expected: int) -> None:
    """New IDs follow the table's last assigned ID, and never one a spec holds."""
    spec, new_last = _update(last=last).add_field("category", "identity").apply()
    assert spec.fields[-1].field_id == expected
    assert new_last == expected


def test_last_partition_id_is_kept_when_nothing_is_added() -> None:
    assert _update(last=1050).remove_field("ts_day").apply()[1] == 1050


def test_apply_is_repeatable() -> None:
    update = _update().add_field("category", "identity")
    assert update.apply() == update.apply()


def test_case_insensitive_source_names() -> None:
    update = SpecUpdate([SPEC0], 0, SCHEMA, 1001, case_sensitive=False)
    spec, _ = update.add_field("CATEGORY", "identity").remove_field("bucket[16](ID)").apply()
    assert _rows(spec) == [DAY, (3, 1002, "identity", "category")]


def test_v2_removes_a_void_field_left_by_v1() -> None:
    spec0 = _spec(0, (1, 1000, "void", "id_bucket_16_1000"), DAY)
    spec, _ = _update([spec0]).remove_field("id_bucket_16_1000").apply()
    assert _rows(spec) == [DAY]


# --- v1 ------------------------------------------------------------------------------------

def test_v1_remove_replaces_the_transform_with_void_and_frees_the_name() -> None:
    spec, last = _update(version=1).remove_field("id_bucket_16").apply()
    assert _rows(spec) == [(1, 1000, "void", "id_bucket_16_1000"), DAY]
    assert (spec.spec_id, last) == (1, 1001)
    assert not spec.is_unpartitioned


def test_v1_remove_everything() -> None:
    spec, _ = _update(version=1).remove_field("id_bucket_16").remove_field("ts_day").apply()
    assert _rows(spec) == [(1, 1000, "void", "id_bucket_16_1000"), (4, 1001, "void", "ts_day_1001")]
    assert spec.is_unpartitioned


def test_v1_adds_at_the_end() -> None:
    spec, last = _update(version=1).add_identity("category").apply()
    assert _rows(spec) == [BUCKET, DAY, (3, 1002, "identity", "category")]
    assert last == 1002


def test_v1_change_time_granularity() -> None:
    spec, last = _update(version=1).remove_field("ts_day").add_field("ts", "hour").apply()
    assert _rows(spec) == [BUCKET, (4, 1001, "void", "ts_day_1001"), (4, 1002, "hour", "ts_hour")]
    assert last == 1002


def test_v1_re_add_after_removal_appends_a_new_field() -> None:
    spec1, last = _update(version=1).remove_field("id_bucket_16").apply()
    spec2, last2 = _update([SPEC0, spec1], default=1, last=last, version=1) \
        .add_field("id", "bucket[16]").apply()
    # v1 never reorders or reuses: a new field with a new ID, the old one stays void
    assert _rows(spec2) == [(1, 1000, "void", "id_bucket_16_1000"), DAY,
                            (1, 1002, "bucket[16]", "id_bucket_16")]
    assert last2 == 1002


def test_v1_remove_and_re_add_in_one_update_keeps_the_field() -> None:
    spec, _ = _update(version=1).remove_field("id_bucket_16").add_field("id", "bucket[16]") \
        .apply()
    assert spec == SPEC0


def test_v1_rename() -> None:
    spec, _ = _update(version=1).rename_field("ts_day", "day").apply()
    assert _rows(spec) == [BUCKET, (4, 1001, "day", "day")]


def test_v1_void_field_holding_a_name_is_moved_aside() -> None:
    """Older writers kept a removed v1 field's name; reusing the name renames the void field."""
    spec0 = _spec(0, (3, 1000, "void", "category"))
    spec, last = _update([spec0], version=1).add_identity("category").apply()
    assert _rows(spec) == [(3, 1000, "void", "category_1000"), (3, 1001, "identity", "category")]
    assert last == 1001


def test_v1_rename_onto_a_void_fields_name_moves_it_aside() -> None:
    spec0 = _spec(0, (3, 1000, "void", "shard"), (1, 1001, "bucket[4]", "id_bucket_4"))
    spec, _ = _update([spec0], version=1).rename_field("id_bucket_4", "shard").apply()
    assert _rows(spec) == [(3, 1000, "void", "shard_1000"), (1, 1001, "bucket[4]", "shard")]


def test_v1_cannot_remove_a_void_field_again() -> None:
    spec0 = _spec(0, (1, 1000, "void", "id_bucket_16_1000"))
    with pytest.raises(ValidationError, match="'id_bucket_16_1000': it was already removed"):
        _update([spec0], version=1).remove_field("id_bucket_16_1000")


# --- rejections ----------------------------------------------------------------------------

REJECTIONS: list[tuple[Callable[[SpecUpdate], object], str]] = [
    (lambda u: u.add_field("id", "bucket[4]", "ts_day"),
     "Cannot add partition field bucket.4..id. as 'ts_day': the name is already used by "
     "partition field 1001: ts_day"),
    (lambda u: u.add_field("ts", "month"),
     r"Cannot add redundant partition field month\(ts\): conflicts with 'ts_day' \(day\)"),
    (lambda u: u.add_field("ts", "hour"), "redundant partition field hour.ts."),
    (lambda u: u.remove_field("ts_day").add_field("ts", "hour").add_field("ts", "year"),
     r"redundant partition field year\(ts\): conflicts with 'ts_hour' \(hour\)"),
    (lambda u: u.add_field("id", "bucket[16]", "other"),
     r"Cannot add partition field bucket\[16\]\(id\): it already exists as 'id_bucket_16'"),
    (lambda u: u.add_field("id", "bucket[8]").add_field("id", "bucket[8]", "again"),
     "it was already added as 'id_bucket_8'"),
    (lambda u: u.add_field("category", "identity", "x").add_field("data", "identity", "x"),
     "the name is already used by partition field 1002: x: identity.3., added in this update"),
    (lambda u: u.remove_field("nope"), "Cannot find partition field 'nope' to remove"),
    (lambda u: u.remove_field("bucket[8](id)"), r"Cannot find partition field 'bucket\[8\]\(id\)'"),
    (lambda u: u.add_identity("category").remove_field("category"),
     "Cannot remove partition field 'category': it was added in this update"),
    (lambda u: u.add_field("id", "bucket[8]").remove_field("bucket[8](id)"),
     "it was added in this update"),
    (lambda u: u.remove_field("ts_day").remove_field("ts_day"), "already removed in this update"),
    (lambda u: u.rename_field("ts_day", "daily").remove_field("ts_day"),
     "Cannot remove partition field 'ts_day': it is renamed in this update"),
    (lambda u: u.remove_field("ts_day").rename_field("ts_day", "daily"),
     "Cannot rename partition field 'ts_day': it is removed in this update"),
    (lambda u: u.rename_field("ts_day", "id_bucket_16"),
     "Cannot rename partition field 'ts_day' to 'id_bucket_16': the name is already used"),
    (lambda u: u.rename_field("nope", "x"), "Cannot find partition field 'nope' to rename"),
    (lambda u: u.rename_field("ts_day", ""), "to an empty name"),
    (lambda u: u.add_identity("category").rename_field("category", "cat"),
     "Cannot rename partition field 'category': it was added in this update"),
    (lambda u: u.add_field("nope", "identity"),
     "Cannot add partition field identity.nope.: cannot find source column 'nope'"),
    (lambda u: u.add_field("d", "hour"), r"hour\(d\): hour does not accept date"),
    (lambda u: u.add_field("f", "bucket[4]"),
     r"bucket\[4\]\(f\): bucket\[4\] does not accept float"),
    (lambda u: u.add_field("data", "year"), "year does not accept string"),
    (lambda u: u.add_field("tags.element", "identity"),
     "'tags.element': the source cannot be contained in a list"),
    (lambda u: u.add_field("props.value", "identity"), "cannot be contained in a map"),
    (lambda u: u.add_field("loc", "identity"), "must be a primitive type, not struct"),
    (lambda u: u.add_field("id", "bucket[0]"), "must be positive"),
    (lambda u: u.add_field("id", "zorder"), "Unknown transform 'zorder'"),
    (lambda u: u.add_field("id", "bucket[4]", ""), "the name is empty"),
    (lambda u: u.add_field("id", "bucket[4]", "data").apply(),
     "Partition name 'data' collides with schema column 'data'"),
    (lambda u: u.add_field("data", "identity", "category").apply(), "collides"),
]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("change", "message"), REJECTIONS)
def test_rejections(change: Callable[[SpecUpdate], object], message: str, version: int) -> None:
    with pytest.raises(ValidationError, match=message):
        change(_update(version=version))


def test_a_redundant_time_field_may_replace_one_removed_in_the_same_update() -> None:
    spec, _ = _update().remove_field("ts_day").add_field("ts", "month").apply()
    assert _rows(spec) == [BUCKET, (4, 1002, "month", "ts_month")]


def test_unknown_default_spec() -> None:
    with pytest.raises(ValidationError, match="Cannot find default partition spec 3"):
        SpecUpdate([SPEC0], 3, SCHEMA, 1001)


def test_unknown_format_version() -> None:
    with pytest.raises(ValidationError, match="Unsupported format version 4"):
        SpecUpdate([SPEC0], 0, SCHEMA, 1001, format_version=4)


def test_v3_follows_the_v2_rules() -> None:
    spec, _ = _update(version=3).remove_field("ts_day").apply()
    assert _rows(spec) == [BUCKET]
