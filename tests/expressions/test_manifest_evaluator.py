"""The manifest evaluator over partition summaries: tables, and a property over random
partitioned rows: when the evaluator skips a manifest, no row in it matches."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icepark.errors import CorruptFile, ValidationError
from icepark.expressions import ManifestEvaluator, RowEvaluator, parse
from icepark.spec.bounds import to_bytes
from icepark.spec.manifest import FieldSummary, ManifestFile
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema
from icepark.spec.transforms import Transform
from icepark.spec.types import (
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    IcebergType,
    NestedField,
    PrimitiveType,
)
from tests.expressions.expr_strategies import TYPES, expressions, nullable_values, transforms
from tests.expressions.metrics_fixtures import field_summary

SCHEMA = Schema.of(NestedField.optional(1, "s", STRING), NestedField.optional(2, "f", DOUBLE),
                   NestedField.optional(3, "ts", TIMESTAMP), NestedField.optional(4, "n", INT))
SPEC = PartitionSpec(0, (
    PartitionField(1, 1000, Transform.identity(), "s"),
    PartitionField(2, 1001, Transform.identity(), "f"),
    PartitionField(3, 1002, Transform.day(), "ts_day"),
    PartitionField(4, 1003, Transform.identity(), "n"),
))
NAN = math.nan


def _manifest(*summaries: FieldSummary) -> ManifestFile:
    return ManifestFile("m.avro", 1, 0, 1, partitions=summaries)


MANIFEST = _manifest(
    FieldSummary(True, False, to_bytes(STRING, "b"), to_bytes(STRING, "d")),
    FieldSummary(False, True, to_bytes(DOUBLE, -0.0), to_bytes(DOUBLE, 1.5)),
    FieldSummary(False, None, to_bytes(INT, 19723), to_bytes(INT, 19724)),  # 2024-01-01..02
    FieldSummary(True, False, None, None),  # all null
)


@pytest.mark.parametrize(("text", "expected"), [
    ("s = 'c'", True),
    ("s = 'a'", False),
    ("s > 'd'", False),
    ("s >= 'd'", True),
    ("s < 'b'", False),
    ("s IN ('a', 'e')", False),
    ("s IN ('a', 'c')", True),
    ("s LIKE 'c%'", True),
    ("s LIKE 'e%'", False),
    ("s NOT LIKE 'b%'", True),
    ("s IS NULL", True),
    ("s IS NOT NULL", True),
    ("f IS NAN", True),
    ("f IS NOT NAN", True),
    ("f = 0", True),
    ("f < 0", False),
    ("f > 1.5", False),
    ("f != 0", True),
    ("f IS NULL", False),
    ("ts >= '2024-01-02T10:00'", True),
    ("ts >= '2024-01-03'", False),
    ("ts < '2024-01-01'", False),
    ("ts < '2024-01-01T00:00:01'", True),
    ("n IS NULL", True),
    ("n IS NOT NULL", False),
    ("n = 1", False),
    ("n != 1", False),
    ("n NOT IN (1, 2)", False),
    ("n IS NOT NULL OR s = 'c'", True),
    ("n IS NOT NULL AND s = 'c'", False),
    ("NOT n IS NULL", False),
])
def test_summaries(text: str, expected: bool) -> None:
    assert ManifestEvaluator(SCHEMA, SPEC, parse(text)).eval(MANIFEST) is expected


def test_nan_only_and_unknown_nan() -> None:
    spec = PartitionSpec(0, (PartitionField(2, 1000, Transform.identity(), "f"),))
    only_nan = _manifest(FieldSummary(False, True, None, None))
    unknown = _manifest(FieldSummary(True, None, None, None))

    def evaluate(text: str, manifest: ManifestFile) -> bool:
        return ManifestEvaluator(SCHEMA, spec, parse(text)).eval(manifest)

    assert [evaluate(e, only_nan) for e in ("f IS NAN", "f IS NOT NAN", "f = 1", "f != 1")] == [
        True, False, False, True]
    assert [evaluate(e, unknown) for e in ("f IS NAN", "f IS NOT NULL", "f = 1", "f != 1")] == [
        True, True, False, True]


def test_no_summaries_and_mismatched_summaries() -> None:
    no_summaries = ManifestFile("m.avro", 1, 0, 1, partitions=None)
    assert ManifestEvaluator(SCHEMA, SPEC, parse("s = 'zzz'")).eval(no_summaries)
    with pytest.raises(ValidationError, match="has 1 partition summaries but spec 0 has 4"):
        ManifestEvaluator(SCHEMA, SPEC, parse("s = 'a'")).eval(
            _manifest(FieldSummary(False)))
    assert MANIFEST.partitions is not None
    bad = _manifest(FieldSummary(False, False, b"\xff\xfe", None), *MANIFEST.partitions[1:])
    with pytest.raises(CorruptFile, match=r"m\.avro"):
        ManifestEvaluator(SCHEMA, SPEC, parse("s = 'a'")).eval(bad)


def test_one_evaluator_over_many_manifests() -> None:
    """An evaluator keeps verdicts by summaries and bounds by their bytes: manifests sharing
    them, or not, get the verdicts a fresh evaluator gives each; a bad summary is reported for
    every manifest that has it, by name, however often it repeats."""
    assert MANIFEST.partitions is not None
    rest = MANIFEST.partitions[1:]
    days = [FieldSummary(False, None, to_bytes(INT, lo), to_bytes(INT, hi))
            for lo, hi in ((19723, 19724), (19720, 19722), (19725, 19730), (19723, 19724),
                           (19720, 19730))]
    manifests = [ManifestFile(f"m{i}.avro", 1, 0, 1, partitions=(
        MANIFEST.partitions[0], rest[0], day, rest[2])) for i, day in enumerate(days * 3)]
    for text in ("ts >= '2024-01-02T10:00'", "ts < '2024-01-01'", "n IS NULL AND ts < "
                 "'2024-01-05'"):
        shared = ManifestEvaluator(SCHEMA, SPEC, parse(text))
        assert [shared.eval(m) for m in manifests] == [
            ManifestEvaluator(SCHEMA, SPEC, parse(text)).eval(m) for m in manifests]
    bad = FieldSummary(False, False, b"\xff\xfe", None)
    shared = ManifestEvaluator(SCHEMA, SPEC, parse("s = 'a'"))
    for name in ("first.avro", "second.avro"):
        with pytest.raises(CorruptFile, match=name):
            shared.eval(ManifestFile(name, 1, 0, 1, partitions=(bad, *rest)))
    not_bytes: Any = [1]  # a bad file: not bytes, and unhashable
    unhashable = FieldSummary(False, False, not_bytes, None)
    with pytest.raises(CorruptFile, match="third"):
        shared.eval(ManifestFile("third.avro", 1, 0, 1, partitions=(unhashable, *rest)))


def test_unpartitioned() -> None:
    assert ManifestEvaluator(SCHEMA, PartitionSpec(0, ()), parse("s = 'a'")).eval(
        ManifestFile("m.avro", 1, 0, 1, partitions=()))


@st.composite
def _manifests(draw: st.DrawFn) -> tuple[Schema, PartitionSpec, list[tuple[Any, ...]], Any,
                                         bool]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=2, max_size=2))
    schema = Schema.of(NestedField.optional(1, "a", types[0]),
                       NestedField.optional(2, "b", types[1]))
    fields = []
    for i in range(draw(st.integers(1, 3))):
        source = draw(st.integers(1, 2))
        transform = draw(transforms(types[source - 1]))
        fields.append(PartitionField(source, 1000 + i, transform, f"p{i}"))
    rows = draw(st.lists(st.tuples(*(nullable_values(t) for t in types)), max_size=6))
    expr = draw(expressions([("a", types[0]), ("b", types[1])]))
    return schema, PartitionSpec(0, tuple(fields)), rows, expr, draw(st.booleans())


def _primitive(t: IcebergType) -> PrimitiveType:
    assert isinstance(t, PrimitiveType)
    return t


def _serializable(t: PrimitiveType, value: Any) -> bool:
    try:
        to_bytes(t, value)
    except ValidationError:  # e.g. a truncate below the type's minimum
        return value is None
    return True


@settings(max_examples=200)
@given(_manifests())
def test_manifest_property(case: tuple[Schema, PartitionSpec, list[tuple[Any, ...]], Any,
                                       bool]) -> None:
    schema, spec, rows, expr, nan_known = case
    partition_type = spec.partition_type(schema)
    types = [_primitive(f.field_type) for f in partition_type.fields]
    partitioned = []
    for row in rows:
        partition = tuple(f.transform.apply(schema.find_field(f.source_id).field_type,
                                            row[f.source_id - 1]) for f in spec.fields)
        if all(_serializable(t, v) for t, v in zip(types, partition, strict=True)):
            partitioned.append((row, partition))
    summaries = tuple(field_summary(t, [p[i] for _, p in partitioned], nan_known)
                      for i, t in enumerate(types))
    manifest = ManifestFile("m.avro", 1, 0, 1, partitions=summaries)
    if not ManifestEvaluator(schema, spec, expr).eval(manifest):
        assert not any(RowEvaluator(schema, expr).eval(row) for row, _ in partitioned)
