"""Skipping whole manifests with the partition summaries of a manifest list.

Spec, *Scan Planning*: "Manifests that contain no matching files, determined using either file
counts or partition summaries, may be skipped." The row filter is projected inclusively onto
the manifest's partition spec and evaluated against each partition field's ``field_summary``:
``contains_null``, ``contains_nan``, and "Lower bound for the non-null, non-NaN values in the
partition field, or null if all values are null or NaN" (likewise the upper bound). The
projection never names a field with an unknown transform (its inclusive projection is true), so
its summary, whose bounds are in a type icepark cannot know, is never read.

>>> from icepark.expressions.parser import parse
>>> from icepark.spec.manifest import FieldSummary, ManifestFile
>>> from icepark.spec.partitioning import PartitionSpecBuilder
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import INT, NestedField
>>> from icepark.spec.bounds import to_bytes
>>> schema = Schema.of(NestedField.optional(1, "x", INT))
>>> spec = PartitionSpecBuilder(schema).truncate("x", 10).build()
>>> summary = FieldSummary(False, None, to_bytes(INT, 10), to_bytes(INT, 50))
>>> manifest = ManifestFile("m.avro", 1, 0, 1, partitions=(summary,))
>>> [ManifestEvaluator(schema, spec, parse(f)).eval(manifest)
...  for f in ("x < 10", "x < 11", "x >= 60", "x IS NULL", "x != 5")]
[False, True, False, False, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icepark.errors import CorruptFile, ValidationError
from icepark.expressions.bound import BoundPredicate, BoundVisitor, bind, rewrite_not, visit
from icepark.expressions.evaluator import partition_schema
from icepark.expressions.expr import Expr, Op
from icepark.expressions.literals import decode_bounds
from icepark.expressions.projection import inclusive_projection
from icepark.spec.manifest import FieldSummary, ManifestFile
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema


class ManifestEvaluator:
    """Whether a manifest written with ``spec`` might hold files with rows matching
    ``row_filter``; ``False`` means the manifest can be skipped."""

    def __init__(self, schema: Schema, spec: PartitionSpec, row_filter: Expr,
                 case_sensitive: bool = True) -> None:
        self.spec = spec
        projected = inclusive_projection(schema, spec, case_sensitive)(row_filter)
        self.partition_filter = rewrite_not(bind(projected, partition_schema(spec, schema)))
        self._bounds: dict[tuple[int, bytes | None, bytes | None], tuple[Any, Any]] = {}
        """Decoded bounds by the type's ``id`` (the bound filter's, alive as long as this
        evaluator) and the bytes."""
        self._verdicts: dict[tuple[FieldSummary, ...], bool] = {}
        """Verdicts by summaries: the manifests of a table often share them (each appended
        to the same partitions: every manifest of a daily job spans its day)."""

    def eval(self, manifest: ManifestFile) -> bool:
        """A manifest without partition summaries might always match."""
        summaries = manifest.partitions
        if summaries is None:
            return True
        if len(summaries) != len(self.spec.fields):
            raise ValidationError(
                f"Manifest {manifest.manifest_path} has {len(summaries)} partition summaries "
                f"but spec {self.spec.spec_id} has {len(self.spec.fields)} fields")
        key: tuple[FieldSummary, ...] | None = summaries
        try:
            known = self._verdicts.get(summaries)
        except TypeError:  # a summary of unhashable values: bad, and reported below
            known = key = None
        if known is not None:
            return known
        try:
            verdict = visit(self.partition_filter, _SummaryVisitor(summaries, self._bounds))
        except ValidationError as e:
            raise CorruptFile(f"Manifest {manifest.manifest_path}: bad partition summary: "
                              f"{e}") from e
        if key is not None:
            if len(self._verdicts) >= _KEPT_LIMIT:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict


_KEPT_LIMIT = 4096
"""Distinct summaries (and bounds) whose verdicts (and values) an evaluator keeps, at most;
then it forgets them all."""


class _SummaryVisitor(BoundVisitor[bool]):
    def __init__(self, summaries: Sequence[FieldSummary],
                 bounds: dict[tuple[int, bytes | None, bytes | None], tuple[Any, Any]]) -> None:
        self._summaries, self._bounds = summaries, bounds

    def always_true(self) -> bool:
        return True

    def always_false(self) -> bool:
        return False

    def and_(self, left: bool, right: bool) -> bool:
        return left and right

    def or_(self, left: bool, right: bool) -> bool:
        return left or right

    def predicate(self, p: BoundPredicate) -> bool:
        s = self._summaries[p.accessor.position]
        no_bounds = s.lower_bound is None and s.upper_bound is None  # all null or NaN
        all_null = s.contains_null and s.contains_nan is False and no_bounds
        match p.op:
            case Op.IS_NULL:
                return s.contains_null
            case Op.NOT_NULL:
                return not all_null
            case Op.IS_NAN:
                return s.contains_nan is not False
            case Op.NOT_NAN:  # a null is not NaN
                return not (s.contains_nan and not s.contains_null and no_bounds)
        if no_bounds:  # only NaN compares true, and only with != and NOT IN
            return p.op in (Op.NOT_EQ, Op.NOT_IN) and s.contains_nan is not False
        lower, upper = self._decoded(p.term.type, s.lower_bound, s.upper_bound)
        return bounds_might_match(p, lower, upper, s.contains_nan is False)

    def _decoded(self, t: Any, lower: bytes | None, upper: bytes | None) -> tuple[Any, Any]:
        """:func:`decode_bounds`, once per type and bytes."""
        key = (id(t), lower, upper)
        try:
            found = self._bounds.get(key)
        except TypeError:  # bounds that are not bytes: decode_bounds says what is wrong
            return decode_bounds(t, lower, upper)
        if found is None:
            found = decode_bounds(t, lower, upper)
            if len(self._bounds) >= _KEPT_LIMIT:
                self._bounds.clear()
            self._bounds[key] = found
        return found


def bounds_might_match(p: BoundPredicate, lower: Any, upper: Any, no_nan: bool) -> bool:
    """Whether a value within ``[lower, upper]`` (a bound is ``None`` when unknown), null or
    (unless ``no_nan``) NaN might satisfy the comparison ``p``."""
    match p.op:
        case Op.IN:
            return any((lower is None or lower <= v) and (upper is None or v <= upper)
                       for v in p.literals)
        case Op.NOT_IN:
            return not (no_nan and lower is not None and lower == upper
                        and lower in frozenset(p.literals))
    v = p.literal
    match p.op:
        case Op.LT:
            return lower is None or lower < v
        case Op.LT_EQ:
            return lower is None or lower <= v
        case Op.GT:
            return upper is None or upper > v
        case Op.GT_EQ:
            return upper is None or upper >= v
        case Op.EQ:
            return (lower is None or lower <= v) and (upper is None or v <= upper)
        case Op.NOT_EQ:
            return not (no_nan and lower is not None and lower == v and upper == v)
        case Op.STARTS_WITH:
            n = len(v)
            return (lower is None or lower[:n] <= v) and (upper is None or upper[:n] >= v)
        case _:  # not_starts_with: all values between two strings starting with v do too
            return not (lower is not None and upper is not None
                        and lower.startswith(v) and upper.startswith(v))
