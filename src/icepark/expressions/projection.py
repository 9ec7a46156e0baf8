"""Inclusive and strict projections of a row filter onto a partition spec.

Spec, *Scan Planning*: "Scan predicates are converted to partition predicates using an
*inclusive projection*: if a scan predicate matches a row, then the partition predicate must
match that row's partition." And note 1: "An alternative, *strict projection*, creates a
partition predicate that will match a file if all of the rows in the file must match the scan
predicate. These projections are used to calculate the residual predicates for each file in a
scan."

The filter is bound, NOT is rewritten away, then each predicate is projected through every
partition field whose source is its column (:mod:`~icepark.expressions.transform_projection`).
Several fields on one column combine with AND (inclusive: each must accept the row) or OR
(strict: any one proves the predicate). A predicate no field can express becomes true
(inclusive) or false (strict). The result is an unbound expression over the partition field
names, for :func:`icepark.expressions.evaluator.partition_evaluator` or a manifest evaluator.

Fields with a transform icepark does not know are skipped: "The inclusive projection for an
unknown partition transform is *true* because the partition field is ignored and not used in
filtering", and no strict projection through one can prove a predicate.

>>> from icepark.expressions.parser import parse
>>> from icepark.spec.partitioning import PartitionSpecBuilder
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, TIMESTAMP, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG),
...                    NestedField.optional(2, "ts", TIMESTAMP))
>>> spec = PartitionSpecBuilder(schema).day("ts").bucket("id", 16).build()
>>> print(inclusive_projection(schema, spec)(parse("ts > '2024-01-01T10:00' AND id = 7")))
ts_day >= 19723 AND id_bucket = 3
>>> print(strict_projection(schema, spec)(parse("ts >= '2024-01-02' OR id != 7")))
ts_day > 19723 OR id_bucket != 3
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from icepark.expressions.bound import (
    BoundPredicate,
    BoundVisitor,
    bind,
    rewrite_not,
    visit,
)
from icepark.expressions.expr import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    Expr,
    Op,
    Predicate,
    and_,
    or_,
)
from icepark.expressions.transform_projection import project
from icepark.spec.partitioning import PartitionField, PartitionSpec
from icepark.spec.schema import Schema

Projector = Callable[[Expr], Expr]


def inclusive_projection(schema: Schema, spec: PartitionSpec,
                         case_sensitive: bool = True) -> Projector:
    """A function from a row filter to a partition filter that is true whenever the row
    filter might be true for a row of the partition."""
    return _Projector(schema, spec, case_sensitive, strict=False)


def strict_projection(schema: Schema, spec: PartitionSpec,
                      case_sensitive: bool = True) -> Projector:
    """A function from a row filter to a partition filter that is true only when the row
    filter is true for every row of the partition."""
    return _Projector(schema, spec, case_sensitive, strict=True)


def project_predicate(p: BoundPredicate, field: PartitionField, strict: bool) -> Expr | None:
    """One bound predicate through one partition field (whose source must be its column), as
    a predicate on the field's name, or ``None`` when the transform cannot express it (always
    for an unknown transform)."""
    if field.transform.is_unknown:
        return None
    projected = project(p.op, p.literals, field.transform, p.term.type, strict)
    if projected is None:
        return None
    op, literals = projected
    if op.is_set and len(literals) == 1:
        op = Op.EQ if op is Op.IN else Op.NOT_EQ
    return Predicate(op, field.name, literals)


@dataclass(frozen=True, slots=True)
class _Projector:
    schema: Schema
    spec: PartitionSpec
    case_sensitive: bool
    strict: bool

    def __call__(self, expr: Expr) -> Expr:
        bound = rewrite_not(bind(expr, self.schema, self.case_sensitive))
        return visit(bound, _ProjectVisitor(self.spec, self.strict))


class _ProjectVisitor(BoundVisitor[Expr]):
    def __init__(self, spec: PartitionSpec, strict: bool) -> None:
        self._spec = spec
        self._strict = strict

    def always_true(self) -> Expr:
        return ALWAYS_TRUE

    def always_false(self) -> Expr:
        return ALWAYS_FALSE

    def and_(self, left: Expr, right: Expr) -> Expr:
        return and_(left, right)

    def or_(self, left: Expr, right: Expr) -> Expr:
        return or_(left, right)

    def predicate(self, p: BoundPredicate) -> Expr:
        parts = []
        for field in self._spec.fields:
            if field.source_id == p.field_id and not field.transform.is_unknown:
                projected = project_predicate(p, field, self._strict)
                if projected is None:
                    projected = ALWAYS_FALSE if self._strict else ALWAYS_TRUE
                parts.append(projected)
        return or_(*parts) if self._strict else and_(*parts)
