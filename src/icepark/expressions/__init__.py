"""Row filters: unbound and bound expressions, parsing, binding, projections and evaluators.

Issue 4's expression layer. It imports only :mod:`icepark.errors` and :mod:`icepark.spec`.

>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, STRING, NestedField
>>> schema = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING))
>>> RowEvaluator(schema, parse("id IN (1, 2) AND s LIKE 'a%'")).eval((2, "abc"))
True
"""

from icepark.expressions.bound import (
    BoundAnd,
    BoundExpr,
    BoundNot,
    BoundOr,
    BoundPredicate,
    BoundReference,
    BoundVisitor,
    bind,
    bound_and,
    bound_not,
    bound_or,
    referenced_ids,
    rewrite_not,
    unbind,
    visit,
)
from icepark.expressions.evaluator import (
    RowEvaluator,
    partition_evaluator,
    partition_schema,
)
from icepark.expressions.expr import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expr,
    Not,
    Op,
    Or,
    Predicate,
    Reference,
    and_,
    col,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    starts_with,
)
from icepark.expressions.manifest_evaluator import ManifestEvaluator
from icepark.expressions.metrics_evaluator import (
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
)
from icepark.expressions.parser import parse
from icepark.expressions.projection import inclusive_projection, strict_projection
from icepark.expressions.residual import ResidualEvaluator

__all__ = [
    "ALWAYS_FALSE",
    "ALWAYS_TRUE",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BoundAnd",
    "BoundExpr",
    "BoundNot",
    "BoundOr",
    "BoundPredicate",
    "BoundReference",
    "BoundVisitor",
    "Expr",
    "InclusiveMetricsEvaluator",
    "ManifestEvaluator",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "Reference",
    "ResidualEvaluator",
    "RowEvaluator",
    "StrictMetricsEvaluator",
    "and_",
    "bind",
    "bound_and",
    "bound_not",
    "bound_or",
    "col",
    "equal",
    "greater_than",
    "greater_than_or_equal",
    "inclusive_projection",
    "is_in",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "or_",
    "parse",
    "partition_evaluator",
    "partition_schema",
    "referenced_ids",
    "rewrite_not",
    "starts_with",
    "strict_projection",
    "unbind",
    "visit",
]
