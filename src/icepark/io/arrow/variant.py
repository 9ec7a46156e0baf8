"""variant as Arrow: the unshredded ``struct<metadata, value>``, and shredded files read back.

Spec, Appendix A, *Parquet*: a ``variant`` is a "``group`` with ``metadata`` and ``value``
fields. ``metadata`` and ``value`` must not be assigned field IDs and the fields are accessed
through names." Its Arrow type here is :func:`arrow_type`,
``struct<metadata: binary not null, value: binary not null>``: the group's field carries the
column's ID, its two children none, and pyarrow writes it as the unshredded group
``{required binary metadata; required binary value}``. The ``metadata`` field is tagged
``{"variant": "true"}``, the mark PySpark (4.x) puts on the Arrow struct of its
``VariantType``, so Spark takes these batches as variants.

pyarrow 26 cannot write the ``VARIANT`` logical type from Python: its writer annotates only
its own C++ ``arrow.parquet.variant`` extension type, which Python cannot construct (and a
Python extension type of that name crashes the writer), so the group is written without the
annotation; readers find variants by the table schema, as the spec's "accessed through names"
allows.

Files written by others may be *shredded* (Parquet's VariantShredding.md): beside ``value``
(now optional) a ``typed_value`` holds values of one type, an object's fields as a group of
``{value, typed_value}`` pairs, or an array's elements as a list of them. "When
``typed_value`` is present, readers **must** reconstruct shredded values"; :func:`reader`
rebuilds the unshredded value bytes (primitives, objects, arrays, nested), and raises
:class:`~icepark.errors.UnsupportedFeature` for a ``typed_value`` type that is not a shredding
type, :class:`~icepark.errors.CorruptFile` for data the spec calls invalid.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icepark.errors import CorruptFile, IncompatibleColumn, UnsupportedFeature, ValidationError
from icepark.io import variant as enc
from icepark.io.variant import Primitive

METADATA, VALUE, TYPED_VALUE = "metadata", "value", "typed_value"
SPARK_MARK = {b"variant": b"true"}
"""PySpark's mark on the ``metadata`` field of a variant's Arrow struct."""


def arrow_type() -> Any:
    """``struct<metadata: binary not null, value: binary not null>``, no field IDs inside."""
    return pa.struct([pa.field(METADATA, pa.binary(), nullable=False, metadata=SPARK_MARK),
                      pa.field(VALUE, pa.binary(), nullable=False)])


def _is_binary(t: Any) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t)
                or pa.types.is_binary_view(t))


def is_variant_struct(t: Any, *, marked: bool = False) -> bool:
    """Whether ``t`` is a variant's struct: binary ``metadata`` and ``value`` (in any order,
    optionally a ``typed_value``), their fields without field IDs. With ``marked``, the
    ``metadata`` field must also carry PySpark's variant mark."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if not pa.types.is_struct(t):
        return False
    fields = {t.field(i).name: t.field(i) for i in range(t.num_fields)}
    if set(fields) - {METADATA, VALUE, TYPED_VALUE} or METADATA not in fields \
            or not _is_binary(fields[METADATA].type):
        return False
    if VALUE in fields and not _is_binary(fields[VALUE].type):
        return False
    if VALUE not in fields and TYPED_VALUE not in fields:
        return False
    if any(b"PARQUET:field_id" in (f.metadata or {}) for f in fields.values()):
        return False
    return not marked or (fields[METADATA].metadata or {}).get(b"variant") == b"true"


def _child(arr: Any, name: str) -> Any | None:
    t = arr.type
    for i in range(t.num_fields):
        if t.field(i).name == name:
            return arr.field(i)
    return None


def _binary(arr: Any) -> Any:
    return arr if arr.type == pa.binary() else arr.cast(pa.binary())


def _assemble(valid: Any, metadata: Any, value: Any) -> Any:
    """The variant array of ``metadata`` and ``value`` (binary, no nulls where ``valid``),
    null where ``valid`` is false (None: nowhere); children hold ``b""`` under null rows, as
    the Parquet writer wants non-nullable children without nulls."""
    if valid is not None:
        metadata = pc.if_else(valid, metadata, b"")
        value = pc.if_else(valid, value, b"")
        mask = pc.invert(valid)
    else:
        mask = None
    return pa.StructArray.from_arrays([_binary(metadata), _binary(value)],
                                      fields=list(arrow_type()), mask=mask)


def _validity(arr: Any) -> Any | None:
    return arr.is_valid() if arr.null_count else None


def conform(arr: Any, path: str) -> Any:
    """An input column of a variant column as :func:`arrow_type`: a struct of binary
    ``metadata`` and ``value`` in either order (PySpark's is ``value`` first), or such an
    extension type's storage. A non-null row needs both parts; a shredded struct is refused
    (write the unshredded form)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if not is_variant_struct(arr.type) or _child(arr, VALUE) is None \
            or _child(arr, TYPED_VALUE) is not None:
        raise IncompatibleColumn(
            f"Column {path!r} has Arrow type {arr.type}, which cannot be written as Iceberg "
            "variant: expected struct<metadata: binary, value: binary>", path, str(arr.type),
            "variant")
    valid = _validity(arr)
    metadata, value = _child(arr, METADATA), _child(arr, VALUE)
    assert metadata is not None and value is not None
    for name, part in ((METADATA, metadata), (VALUE, value)):
        missing = part.is_null() if valid is None else pc.and_(valid, part.is_null())
        count = pc.sum(missing).as_py() or 0
        if count:
            raise ValidationError(f"Column {path!r}: {count} variant value(s) have a null "
                                  f"{name}; a null variant is a null struct")
    return _assemble(valid, metadata, value)


# --- reading ---------------------------------------------------------------------------------


def reader(source: Any, where: str) -> Callable[[Any], Any]:
    """The conversion of a file's variant group (Arrow type ``source``) to :func:`arrow_type`;
    ``where`` names the column and file in errors."""
    storage = source.storage_type if isinstance(source, pa.BaseExtensionType) else source
    if not is_variant_struct(storage):
        raise ValidationError(f"Cannot read {where}: the file's {source} is not a variant "
                              "group (binary metadata and value)")
    names = {storage.field(i).name for i in range(storage.num_fields)}
    if TYPED_VALUE in names:
        _check_shredded(storage.field(TYPED_VALUE).type, where)

    def read(arr: Any) -> Any:
        if isinstance(arr.type, pa.BaseExtensionType):
            arr = arr.storage
        valid = _validity(arr)
        metadata = _binary(_child(arr, METADATA))
        value = _child(arr, VALUE)
        typed = _child(arr, TYPED_VALUE)
        if typed is None:
            assert value is not None
            return _assemble(valid, metadata, _binary(value))
        rebuilt = _rebuild(metadata, value, typed, where)
        # "If a Variant is missing in a context where a value is required, readers must
        # return a Variant null"
        return _assemble(valid, metadata, pc.fill_null(rebuilt, enc.NULL))

    return read


def _check_shredded(t: Any, where: str) -> None:
    """Refuse, before reading, a ``typed_value`` that is not one of the shredding types."""
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            if not is_variant_field_group(f.type):
                raise _unsupported(where, f"shredded field {f.name!r} of type {f.type}")
            if f.type.get_field_index(TYPED_VALUE) >= 0:
                _check_shredded(f.type.field(TYPED_VALUE).type, where)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        element = t.value_type
        if not is_variant_field_group(element):
            raise _unsupported(where, f"shredded array element of type {element}")
        if element.get_field_index(TYPED_VALUE) >= 0:
            _check_shredded(element.field(TYPED_VALUE).type, where)
    elif _primitive_kind(t) is None:
        raise _unsupported(where, f"shredded type {t}")


def is_variant_field_group(t: Any) -> bool:
    """A shredded object field or array element: ``{value?, typed_value?}``, at least one."""
    if not pa.types.is_struct(t):
        return False
    names = {t.field(i).name for i in range(t.num_fields)}
    return bool(names) and names <= {VALUE, TYPED_VALUE} and (
        VALUE not in names or _is_binary(t.field(VALUE).type))


def _unsupported(where: str, what: str) -> UnsupportedFeature:
    return UnsupportedFeature(f"Cannot read {where}: its {what} is not a Variant shredding "
                              "type icepark rebuilds (VariantShredding.md)")


def _corrupt(where: str, what: str) -> CorruptFile:
    return CorruptFile(f"Cannot read {where}: invalid shredded variant: {what}")


def _primitive_kind(t: Any) -> Primitive | None:
    """The variant primitive a shredded Arrow type holds (the *Shredded Value Types* table)."""
    types = pa.types
    if isinstance(t, pa.BaseExtensionType):
        return Primitive.UUID if t.extension_name == "arrow.uuid" else None
    simple = ((types.is_boolean, Primitive.TRUE), (types.is_int8, Primitive.INT8),
              (types.is_int16, Primitive.INT16), (types.is_int32, Primitive.INT32),
              (types.is_int64, Primitive.INT64), (types.is_float32, Primitive.FLOAT),
              (types.is_float64, Primitive.DOUBLE), (types.is_date32, Primitive.DATE),
              (_is_binary, Primitive.BINARY),
              (lambda x: types.is_string(x) or types.is_large_string(x)
               or types.is_string_view(x), Primitive.STRING))
    for check, kind in simple:
        if check(t):
            return kind
    if types.is_decimal128(t) and t.precision <= 38:
        return Primitive.DECIMAL16
    if types.is_time64(t) and t.unit == "us":
        return Primitive.TIME
    if types.is_timestamp(t) and t.unit in ("us", "ns"):
        micros = t.unit == "us"
        if t.tz is None:
            return Primitive.TIMESTAMP_NTZ if micros else Primitive.TIMESTAMP_NTZ_NANOS
        return Primitive.TIMESTAMP if micros else Primitive.TIMESTAMP_NANOS
    if types.is_fixed_size_binary(t) and t.byte_width == 16:
        return Primitive.UUID
    return None


_FIXED_NUMPY = {Primitive.INT8: "<i1", Primitive.INT16: "<i2", Primitive.INT32: "<i4",
                Primitive.INT64: "<i8", Primitive.FLOAT: "<f4", Primitive.DOUBLE: "<f8",
                Primitive.DATE: "<i4", Primitive.TIME: "<i8", Primitive.TIMESTAMP: "<i8",
                Primitive.TIMESTAMP_NTZ: "<i8", Primitive.TIMESTAMP_NANOS: "<i8",
                Primitive.TIMESTAMP_NTZ_NANOS: "<i8"}


def _encode_primitives(typed: Any) -> Any:
    """The variant values of a shredded primitive column (null where it is null)."""
    kind = _primitive_kind(typed.type)
    assert kind is not None  # checked by _check_shredded
    if kind in _FIXED_NUMPY:
        return _encode_fixed(typed, kind)
    encode: Callable[[Any], bytes]
    match kind:
        case Primitive.TRUE:
            encode = lambda v: enc.primitive_header(Primitive.TRUE if v else Primitive.FALSE)  # noqa: E731
        case Primitive.BINARY:
            encode = enc.encode_binary
        case Primitive.STRING:
            encode = enc.encode_string
        case Primitive.UUID:
            typed = typed.storage if isinstance(typed.type, pa.BaseExtensionType) else typed
            encode = enc.encode_uuid
        case _:  # decimals: the width follows the column's precision
            precision = typed.type.precision

            def encode(v: Any) -> bytes:
                return enc.encode_decimal(v, precision)
    return pa.array([None if v is None else encode(v) for v in typed.to_pylist()], pa.binary())


def _encode_fixed(typed: Any, kind: Primitive) -> Any:
    """Fixed-width primitives without a Python loop: a header byte and the little-endian
    bytes of each value, side by side in one buffer."""
    dtype = np.dtype(_FIXED_NUMPY[kind])
    n = len(typed)
    storage = typed.cast(pa.int64()) if pa.types.is_timestamp(typed.type) \
        or pa.types.is_time64(typed.type) else typed
    if pa.types.is_date32(storage.type):
        storage = storage.cast(pa.int32())
    values = storage.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    rows = np.empty((n, 1 + dtype.itemsize), dtype=np.uint8)
    rows[:, 0] = enc.header(enc.BasicType.PRIMITIVE, kind)
    rows[:, 1:] = values.view(np.uint8).reshape(n, dtype.itemsize)
    offsets = np.arange(n + 1, dtype=np.int32) * (1 + dtype.itemsize)
    validity = typed.is_valid().buffers()[1] if typed.null_count else None
    return pa.BinaryArray.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets),
                                                        pa.py_buffer(rows.tobytes())],
                                       null_count=typed.null_count)


def _rebuild(metadata: Any, value: Any | None, typed: Any, where: str) -> Any:
    """The variant values of ``value``/``typed_value`` pairs (binary; null where missing),
    following *Reconstructing a Shredded Variant*."""
    t = typed.type
    if pa.types.is_struct(t):
        return _rebuild_object(metadata, value, typed, where)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _rebuild_array(metadata, value, typed, where)
    shredded = _encode_primitives(typed)
    if value is None:
        return shredded
    both = pc.sum(pc.and_(typed.is_valid(), value.is_valid())).as_py() or 0
    if both:
        raise _corrupt(where, f"{both} value(s) have both value and a shredded {t} "
                              "typed_value")
    return pc.coalesce(shredded, _binary(value))


def _pair(metadata: Any, group: Any, where: str) -> Any:
    """The rebuilt values of a ``{value, typed_value}`` group (an object field or element),
    null where both are null (missing)."""
    flat = group.flatten() if group.null_count else [group.field(i)
                                                      for i in range(group.type.num_fields)]
    parts = {group.type.field(i).name: flat[i] for i in range(group.type.num_fields)}
    value, typed = parts.get(VALUE), parts.get(TYPED_VALUE)
    if typed is None:
        assert value is not None
        return _binary(value)
    return _rebuild(metadata, value, typed, where)


def _rebuild_object(metadata: Any, value: Any | None, typed: Any, where: str) -> Any:
    names = [typed.type.field(i).name for i in range(typed.type.num_fields)]
    flat = typed.flatten() if typed.null_count else [typed.field(i) for i in range(len(names))]
    fields = [_pair(metadata, flat[i], f"{where} (field {name!r})").to_pylist()
              for i, name in enumerate(names)]
    shredded_rows = typed.is_valid().to_pylist()
    values = value.to_pylist() if value is not None else [None] * len(typed)
    metadatas = metadata.to_pylist()
    out: list[bytes | None] = []
    for row, is_object in enumerate(shredded_rows):
        residual = values[row]
        if not is_object:
            out.append(residual)
            continue
        keys = _keys(metadatas[row])
        present = {name: column[row] for name, column in zip(names, fields, strict=True)
                   if column[row] is not None}
        if residual is not None:
            try:
                extra = enc.object_fields(residual)
            except ValidationError as e:
                raise _corrupt(where, f"a partially shredded value is not an object ({e})") \
                    from None
            for fid, field_value in extra:
                name = keys[fid] if fid < len(keys) else None
                if name is None or name in present:
                    raise _corrupt(where, f"field id {fid} of a partially shredded value is "
                                          "unknown or also shredded")
                present[name] = field_value
        ids = _key_ids(metadatas[row])
        try:
            out.append(enc.encode_object([(ids[name], present[name])
                                          for name in sorted(present)]))
        except KeyError as e:
            raise _corrupt(where, f"shredded field {e} is not in the row's metadata") from None
    return pa.array(out, pa.binary())


def _rebuild_array(metadata: Any, value: Any | None, typed: Any, where: str) -> Any:
    if value is not None:
        both = pc.sum(pc.and_(typed.is_valid(), value.is_valid())).as_py() or 0
        if both:
            raise _corrupt(where, f"{both} array(s) have both value and typed_value")
    parents = pc.list_parent_indices(typed)
    elements = _pair(metadata.take(parents), pc.list_flatten(typed), f"{where} (element)")
    if elements.null_count:
        raise _corrupt(where, "an array element is missing (neither value nor typed_value)")
    element_values = elements.to_pylist()
    counts = np.bincount(parents.to_numpy(zero_copy_only=False), minlength=len(typed))
    offsets = np.concatenate([[0], np.cumsum(counts)]).tolist()
    valid = typed.is_valid().to_pylist()
    values = value.to_pylist() if value is not None else [None] * len(typed)
    out = [enc.encode_array(element_values[offsets[i]:offsets[i + 1]]) if valid[i]
           else values[i] for i in range(len(typed))]
    return pa.array(out, pa.binary())


@lru_cache(maxsize=256)
def _keys(metadata: bytes) -> tuple[str, ...]:
    return enc.decode_metadata(metadata)


@lru_cache(maxsize=256)
def _key_ids(metadata: bytes) -> dict[str, int]:
    ids: dict[str, int] = {}
    for i, key in enumerate(_keys(metadata)):
        ids.setdefault(key, i)
    return ids
