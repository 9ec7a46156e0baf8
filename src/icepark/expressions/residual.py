"""Residuals: the part of a row filter still to apply to the rows of one partition.

Spec, *Scan Planning*, note 1: strict projections "are used to calculate the residual
predicates for each file in a scan". For each predicate of the filter and each partition field
on its column: if the strict projection holds for the partition's value, every row of the
partition satisfies the predicate, which becomes true; if the inclusive projection fails, no
row does, and it becomes false. Identity partitions decide every predicate on their column
(both projections are the predicate itself). The rest is kept, so on the rows of that
partition the residual is equivalent to the filter. A field with a transform icepark does not
know decides nothing: "partition fields with unknown transforms are ignored for filtering".

>>> from icepark.expressions.parser import parse
>>> from icepark.spec.partitioning import PartitionSpecBuilder
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, TIMESTAMP, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(2, "ts", TIMESTAMP),
...                    NestedField.optional(3, "cat", STRING))
>>> spec = PartitionSpecBuilder(schema).day("ts").identity("cat").build()
>>> residuals = ResidualEvaluator(schema, spec, parse(
...     "ts >= '2024-01-02T12:00' AND ts < '2024-01-04' AND cat = 'a' AND id > 5"))
>>> print(residuals.residual_for((19724, "a")))  # 2024-01-02: only the lower bound remains
ts >= 1704196800000000 AND id > 5
>>> print(residuals.residual_for((19725, "a")))  # 2024-01-03: both bounds hold
id > 5
>>> print(residuals.residual_for((19725, "b")))
FALSE
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from icepark.errors import ValidationError
from icepark.expressions.bound import (
    BoundExpr,
    BoundPredicate,
    BoundVisitor,
    bind,
    bound_and,
    bound_or,
    rewrite_not,
    visit,
)
from icepark.expressions.evaluator import RowEvaluator, partition_schema
from icepark.expressions.expr import ALWAYS_FALSE, ALWAYS_TRUE, Expr
from icepark.expressions.projection import project_predicate
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema

PartitionTest = Callable[[Sequence[Any]], bool]


class ResidualEvaluator:
    """Residuals of ``expr`` (bound to ``schema``) for partitions of ``spec``."""

    def __init__(self, schema: Schema, spec: PartitionSpec, expr: Expr,
                 case_sensitive: bool = True) -> None:
        self.schema = schema
        self.spec = spec
        self.bound = rewrite_not(bind(expr, schema, case_sensitive))
        self._partition_schema = partition_schema(spec, schema)
        # Per predicate: (strict test, inclusive test) on partition tuples, for each field.
        self._tests: dict[BoundPredicate, list[tuple[PartitionTest, PartitionTest]]] = {
            p: self._field_tests(p) for p in visit(self.bound, _Predicates())}

    def residual_for(self, partition: Sequence[Any]) -> BoundExpr:
        """The filter left for rows of the partition with tuple ``partition`` (in spec field
        order), bound to the table schema."""
        if len(partition) != len(self.spec.fields):
            raise ValidationError(f"Partition tuple has {len(partition)} values but spec "
                                  f"{self.spec.spec_id} has {len(self.spec.fields)} fields")
        return visit(self.bound, _Residual(self._tests, partition))

    def _partition_test(self, projected: Expr | None, default: bool) -> PartitionTest:
        if projected is None:
            return (lambda partition: True) if default else (lambda partition: False)
        return RowEvaluator(self._partition_schema, projected).eval

    def _field_tests(self, p: BoundPredicate) -> list[tuple[PartitionTest, PartitionTest]]:
        return [(self._partition_test(project_predicate(p, field, True), False),
                 self._partition_test(project_predicate(p, field, False), True))
                for field in self.spec.fields
                if field.source_id == p.field_id and not field.transform.is_unknown]


class _Predicates(BoundVisitor[list[BoundPredicate]]):
    def always_true(self) -> list[BoundPredicate]:
        return []

    def always_false(self) -> list[BoundPredicate]:
        return []

    def and_(self, left: list[BoundPredicate],
             right: list[BoundPredicate]) -> list[BoundPredicate]:
        return left + right

    def or_(self, left: list[BoundPredicate],
            right: list[BoundPredicate]) -> list[BoundPredicate]:
        return left + right

    def predicate(self, p: BoundPredicate) -> list[BoundPredicate]:
        return [p]


class _Residual(BoundVisitor[BoundExpr]):
    def __init__(self, tests: dict[BoundPredicate, list[tuple[PartitionTest, PartitionTest]]],
                 partition: Sequence[Any]) -> None:
        self._tests = tests
        self._partition = partition

    def always_true(self) -> BoundExpr:
        return ALWAYS_TRUE

    def always_false(self) -> BoundExpr:
        return ALWAYS_FALSE

    def and_(self, left: BoundExpr, right: BoundExpr) -> BoundExpr:
        return bound_and(left, right)

    def or_(self, left: BoundExpr, right: BoundExpr) -> BoundExpr:
        return bound_or(left, right)

    def predicate(self, p: BoundPredicate) -> BoundExpr:
        for strict, inclusive in self._tests[p]:
            if strict(self._partition):
                return ALWAYS_TRUE
            if not inclusive(self._partition):
                return ALWAYS_FALSE
        return p
