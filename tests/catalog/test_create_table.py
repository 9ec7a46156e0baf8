"""create_table from every kind of schema a user holds: icepark, Arrow and Spark schemas."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import types as T  # noqa: N812 - PySpark's conventional name

from icepark.catalog.base import BaseCatalog
from icepark.errors import AlreadyExists, ValidationError
from icepark.io.arrow.schema import field_metadata
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, TIMESTAMPTZ, ListType, NestedField, StructType

# The schema every input below describes, with the IDs a new table gets: top-level fields
# first, then nested ones ("fresh IDs", as the reference implementation and pyiceberg assign).
EXPECTED = Schema.of(
    NestedField.required(1, "id", LONG),
    NestedField.optional(2, "tags", ListType(4, STRING)),
    NestedField.optional(3, "who", StructType((NestedField.optional(5, "name", STRING),))),
)

ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
    pa.field("who", pa.struct([pa.field("name", pa.string())])),
])
SPARK = T.StructType([
    T.StructField("id", T.LongType(), False),
    T.StructField("tags", T.ArrayType(T.StringType(), False)),
    T.StructField("who", T.StructType([T.StructField("name", T.StringType())])),
])


@pytest.fixture
def db(catalog: BaseCatalog) -> BaseCatalog:
    catalog.create_namespace("db")
    return catalog


@pytest.mark.parametrize("given", [EXPECTED, ARROW, SPARK], ids=["icepark", "arrow", "spark"])
def test_any_schema_kind_creates_the_same_table(db: BaseCatalog, given: object) -> None:
    table = db.create_table("db.t", given)
    assert table.schema().as_struct() == EXPECTED.as_struct()
    assert db.load_table("db.t").metadata.last_column_id == 5


def test_arrow_field_ids_are_replaced_unless_kept(db: BaseCatalog) -> None:
    with_ids = pa.schema([pa.field("a", pa.int64(), metadata=field_metadata(7)),
                          pa.field("b", pa.string(), metadata=field_metadata(3))])
    fresh = db.create_table("db.fresh", with_ids).schema()
    assert [(f.field_id, f.name) for f in fresh.fields] == [(1, "a"), (2, "b")]
    kept = db.create_table("db.kept", with_ids, keep_field_ids=True)
    assert [(f.field_id, f.name) for f in kept.schema().fields] == [(7, "a"), (3, "b")]
    assert kept.metadata.last_column_id == 7


def test_spark_field_ids_are_kept_only_when_asked(db: BaseCatalog) -> None:
    with_ids = T.StructType([T.StructField("a", T.LongType(), True,
                                           {"parquet.field.id": 9})])
    assert db.create_table("db.fresh", with_ids).schema().fields[0].field_id == 1
    assert db.create_table("db.kept", with_ids,
                           keep_field_ids=True).schema().fields[0].field_id == 9


def test_icepark_schema_ids_are_kept_when_asked(db: BaseCatalog) -> None:
    schema = Schema.of(NestedField.required(10, "id", LONG))
    assert db.create_table("db.fresh", schema).schema().fields[0].field_id == 1
    assert db.create_table("db.kept", schema,
                           keep_field_ids=True).schema().fields[0].field_id == 10


@pytest.mark.parametrize("given", [ARROW, SPARK], ids=["arrow", "spark"])
def test_keeping_ids_a_schema_does_not_carry_is_an_error(db: BaseCatalog, given: object) -> None:
    with pytest.raises(ValidationError, match=r"keep_field_ids=True, but the .* schema carries "
                                              "no field IDs"):
        db.create_table("db.t", given, keep_field_ids=True)
    assert not db.table_exists("db.t")


@pytest.mark.parametrize("wrong", [{"id": "long"}, "id long", None, [("id", "long")]])
def test_a_wrong_schema_type_names_the_accepted_ones(db: BaseCatalog, wrong: object) -> None:
    with pytest.raises(ValidationError, match=r"must be an icepark Schema, a pyarrow\.Schema or "
                                              "a pyspark StructType, not "):
        db.create_table("db.t", wrong)
    assert not db.table_exists("db.t")


def test_partition_and_sort_clauses_bind_to_the_new_ids(db: BaseCatalog) -> None:
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us", "UTC"))])
    table = db.create_table("db.t", arrow, partition_spec=["day(ts)", "bucket(16, id)"],
                            sort_order="ts desc, id")
    spec = table.spec()
    assert [(f.name, str(f.transform), f.source_id) for f in spec.fields] == [
        ("ts_day", "day", 2), ("id_bucket", "bucket[16]", 1)]
    assert [(f.source_id, f.direction.value) for f in table.sort_order().fields] == [
        (2, "desc"), (1, "asc")]
    assert table.schema().find_field("ts").field_type == TIMESTAMPTZ


@pytest.mark.parametrize(("spec", "message"), [
    (["day(nope)"], "Invalid partition_spec: the table has no column 'nope'"),
    ("frobnicate(ts)", "Invalid partition_spec clause 'frobnicate(ts)': unknown transform"),
    (42, "partition_spec must be a PartitionSpec or clauses such as"),
])
def test_bad_partition_clauses_are_typed_errors(db: BaseCatalog, spec: object,
                                                message: str) -> None:
    arrow = pa.schema([pa.field("ts", pa.timestamp("us", "UTC"))])
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        db.create_table("db.t", arrow, partition_spec=spec)  # type: ignore[arg-type]
    assert not db.table_exists("db.t")


def test_create_table_if_not_exists_returns_the_existing_table(db: BaseCatalog) -> None:
    first = db.create_table_if_not_exists("db.t", ARROW, properties={"owner": "ana"})
    again = db.create_table_if_not_exists("db.t", SPARK, properties={"owner": "bob"})
    assert again.metadata.table_uuid == first.metadata.table_uuid
    assert again.properties["owner"] == "ana"
    with pytest.raises(AlreadyExists):
        db.create_table("db.t", ARROW)


def test_the_pyiceberg_names_work_on_tables_from_arrow(db: BaseCatalog) -> None:
    db.create_table("db.t", ARROW)
    assert db.table_exists("db.t")
    assert db.load_table("db.t").schema().as_struct() == EXPECTED.as_struct()
    db.drop_table("db.t")
    assert not db.table_exists("db.t")


def test_format_version_property_chooses_the_format_version(db: BaseCatalog) -> None:
    """As in the reference implementation, ``format-version`` given as a property at creation
    is the table's format version, not a property kept in its metadata."""
    table = db.create_table("db.v1", ARROW, properties={"format-version": "1", "owner": "ana"})
    assert table.metadata.format_version == 1
    assert dict(table.properties) == {"owner": "ana"}
    v3 = db.create_table("db.v3", ARROW, properties={"format-version": "3"})
    assert (v3.metadata.format_version, v3.metadata.next_row_id) == (3, 0)
    with pytest.raises(ValidationError, match=r"^Invalid table property format-version='4': "
                                              r"write 1, 2 or 3$"):
        db.create_table("db.v4", ARROW, properties={"format-version": "4"})
    with pytest.raises(ValidationError, match=r"^The table property format-version=1 "
                                              r"contradicts format_version=3$"):
        db.create_table("db.v5", ARROW, properties={"format-version": "1"}, format_version=3)
    assert not db.table_exists("db.v4") and not db.table_exists("db.v5")
