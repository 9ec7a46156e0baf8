"""JSON for partition specs and sort orders (spec, Appendix C).

"Partition specs are serialized as a JSON object" with ``spec-id`` and ``fields``; "In some
cases partition specs are stored using only the field list instead of the object format that
includes the spec ID, like the deprecated ``partition-spec`` field in table metadata."

"The ``field-id`` property was added for each partition field in v2. In v1, the reference
implementation assigned field ids sequentially in each spec starting at 1,000."

Source columns (v3): "For partition fields with a transform with a single argument, only
``source-id`` is written. In case of a multi-argument transform, only ``source-ids`` is written"
(sort fields likewise). Every transform icepark knows takes one argument, so a field of a known
transform read with ``source-ids: [3]`` is written back with ``source-id: 3``; a field of an
unknown transform read with ``source-ids`` keeps them (its writer knew it takes several
arguments), so it is written back as it was read. Both keys on one field must agree
(``source-ids`` equal to ``[source-id]``); a transform icepark does not know is kept as its text
(:meth:`~icepark.spec.transforms.Transform.from_json`).

>>> spec = partition_spec_from_json({"spec-id": 0, "fields": [
...     {"source-id": 4, "name": "ts_day", "transform": "day"},
...     {"source-id": 1, "name": "id_bucket", "transform": "bucket[16]"}]})
>>> [(f.field_id, str(f.transform)) for f in spec.fields]
[(1000, 'day'), (1001, 'bucket[16]')]
>>> sort_order_to_json(sort_order_from_json({"order-id": 1, "fields": [
...     {"transform": "bucket[4]", "source-id": 3, "direction": "desc",
...      "null-order": "nulls-last"}]}))["fields"]
[{'transform': 'bucket[4]', 'source-id': 3, 'direction': 'desc', 'null-order': 'nulls-last'}]
>>> partition_fields_to_json(partition_fields_from_json([
...     {"source-ids": [1, 2], "field-id": 1000, "name": "ab_z", "transform": "zorder"}]))
[{'source-ids': [1, 2], 'field-id': 1000, 'name': 'ab_z', 'transform': 'zorder'}]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from icepark.spec.serde._json import (
    JsonObject,
    as_object,
    get_int,
    get_list,
    get_str,
    int_list,
    opt_int,
    show,
)
from icepark.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from icepark.spec.transforms import Transform

# ------------------------------------------------------------------------- partition specs


def partition_fields_to_json(fields: Sequence[PartitionField]) -> list[dict[str, Any]]:
    """The bare field list (the v1 ``partition-spec`` form, and a manifest's
    ``partition-spec``)."""
    return [{**_sources_to_json(f.source_id, f.source_ids), "field-id": f.field_id,
             "name": f.name, "transform": str(f.transform)} for f in fields]


def partition_spec_to_json(spec: PartitionSpec) -> dict[str, Any]:
    """The object form: ``{"spec-id": ..., "fields": [...]}``."""
    return {"spec-id": spec.spec_id, "fields": partition_fields_to_json(spec.fields)}


def partition_fields_from_json(items: Any,
                               what: str = "Partition spec") -> tuple[PartitionField, ...]:
    """Decode a partition field list. Without ``field-id`` (v1), IDs are assigned sequentially
    from 1000; a list where only some fields have one is rejected as ambiguous."""
    fields = [as_object(item, f"{what} field") for item in _list(items, what)]
    with_ids = sum("field-id" in f for f in fields)
    if 0 < with_ids < len(fields):
        raise ValidationError(
            f"{what}: {len(fields) - with_ids} of {len(fields)} partition fields have no "
            "'field-id'; either every field or none must have one")
    result = []
    for position, obj in enumerate(fields):
        source_id, source_ids = _sources_from_json(obj, f"{what} field")
        ctx = f"{what} field for source {_ids(source_id, source_ids)}"
        name = get_str(obj, "name", ctx)
        ctx = f"{what} field {name!r}"
        field_id = opt_int(obj, "field-id", ctx)
        if field_id is None:
            field_id = PARTITION_FIELD_ID_START + position
        transform = _transform(get_str(obj, "transform", ctx), ctx)
        result.append(PartitionField(source_id, field_id, transform, name,
                                     _arguments(transform, source_ids)))
    return tuple(result)


def partition_spec_from_json(data: Any) -> PartitionSpec:
    """Decode the object form of a partition spec."""
    obj = as_object(data, "Partition spec")
    spec_id = get_int(obj, "spec-id", "Partition spec")
    what = f"Partition spec {spec_id}"
    return PartitionSpec(spec_id, partition_fields_from_json(get_list(obj, "fields", what), what))


# ----------------------------------------------------------------------------- sort orders


def sort_order_to_json(order: SortOrder) -> dict[str, Any]:
    """``{"order-id": ..., "fields": [{"transform", "source-id", "direction", "null-order"}]}``."""
    return {"order-id": order.order_id,
            "fields": [{"transform": str(f.transform),
                        **_sources_to_json(f.source_id, f.source_ids),
                        "direction": f.direction.value, "null-order": f.null_order.value}
                       for f in order.fields]}


def sort_order_from_json(data: Any) -> SortOrder:
    """Decode a sort order; "direction" is "asc" or "desc", "null-order" is "nulls-first" or
    "nulls-last".

    >>> sort_order_from_json({"order-id": 1, "fields": [{"transform": "identity",
    ...     "source-id": 2, "direction": "up", "null-order": "nulls-first"}]})
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Sort order 1 field for source 2: 'direction' must be \
"asc" or "desc", not 'up'
    """
    obj = as_object(data, "Sort order")
    order_id = get_int(obj, "order-id", "Sort order")
    what = f"Sort order {order_id}"
    fields = []
    for item in get_list(obj, "fields", what):
        f = as_object(item, f"{what} field")
        source_id, source_ids = _sources_from_json(f, f"{what} field")
        ctx = f"{what} field for source {_ids(source_id, source_ids)}"
        transform = _transform(get_str(f, "transform", ctx), ctx)
        fields.append(SortField(
            source_id, transform,
            _enum(SortDirection, get_str(f, "direction", ctx), ctx, "direction"),
            _enum(NullOrder, get_str(f, "null-order", ctx), ctx, "null-order"),
            _arguments(transform, source_ids)))
    return SortOrder(order_id, tuple(fields))


# ---------------------------------------------------------------------------------- helpers


def _list(items: Any, what: str) -> list[Any]:
    if not isinstance(items, list):
        raise ValidationError(f"{what} fields must be a JSON list, not {show(items)}")
    return items


def _transform(text: str, what: str) -> Transform:
    try:
        return Transform.from_json(text)
    except ValidationError as e:
        raise ValidationError(f"{what}: invalid 'transform': {e}") from e


def _sources_to_json(source_id: int, source_ids: tuple[int, ...]) -> dict[str, Any]:
    return {"source-ids": list(source_ids)} if source_ids else {"source-id": source_id}


def _sources_from_json(obj: JsonObject, what: str) -> tuple[int, tuple[int, ...]]:
    """``(source_id, source_ids)`` of a partition or sort field as written: ``source_ids`` is
    empty for ``source-id`` (see the module docstring)."""
    if "source-ids" not in obj:
        return get_int(obj, "source-id", what), ()
    ids = int_list(obj, "source-ids", what, required=True)
    if not ids:
        raise ValidationError(f"{what}: 'source-ids' must not be empty")
    if "source-id" in obj:
        single = get_int(obj, "source-id", what)
        if ids != [single]:
            raise ValidationError(
                f"{what}: 'source-id' {single} and 'source-ids' {ids} disagree; a field has "
                "one source column ('source-id') or a list of them ('source-ids')")
        return single, ()
    return ids[0], tuple(ids)


def _arguments(transform: Transform, source_ids: tuple[int, ...]) -> tuple[int, ...]:
    """The field's ``source_ids``: none for a known transform of one column, which takes one
    argument and is written with ``source-id``; more for one of several columns is an error
    raised by the field."""
    return () if len(source_ids) == 1 and not transform.is_unknown else source_ids


def _ids(source_id: int, source_ids: tuple[int, ...]) -> str:
    return ", ".join(map(str, source_ids or (source_id,)))


def _enum(kind: type[SortDirection] | type[NullOrder], text: str, what: str,
          key: str) -> Any:
    try:
        return kind(text.lower())
    except ValueError:
        allowed = " or ".join(f'"{m.value}"' for m in kind)
        raise ValidationError(f"{what}: {key!r} must be {allowed}, not {text!r}") from None
