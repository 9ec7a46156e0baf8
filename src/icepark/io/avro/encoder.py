"""Columnar Avro binary encoding: many records at once, with numpy.

Avro's binary encoding (Avro spec, *Binary Encoding*) writes a record as "the concatenation of
the encodings of its fields", ``int`` and ``long`` as zig-zag variable-length integers,
``string`` and ``bytes`` as a length then the bytes, a union as the branch index then the value,
and an array as blocks of "a long count, followed by that many array items", ended by a zero
count. Encoding record by record in Python costs microseconds per value, and manifests hold
millions of small values, so this module encodes a whole column at a time: every value of a
field across all rows becomes one byte buffer plus row offsets (:class:`Segments`), and a
record's rows are the interleaving of its fields' parts. Runs of integers that sit next to each
other in the encoding (union branch indexes, lengths, counts, map keys and values) are stacked
and varint-encoded together.

Input is columnar: a plain sequence of Python values per primitive field (``None`` for null),
:class:`StructColumn` for a record, :class:`ListColumn` for an array (item values flattened).
Logical types are not converted: dates and timestamps are ints, decimals and UUIDs are the
bytes of their ``fixed``.

>>> schema = {"type": "record", "name": "r", "fields": [
...     {"name": "id", "type": "long"},
...     {"name": "tags", "type": ["null", {"type": "array", "items": "string"}]}]}
>>> rows = StructColumn({"id": [1, -1], "tags": ListColumn([2, None], ["a", "bc"])}, 2)
>>> encode_records(schema, rows).hex(" ")
'02 02 04 02 61 04 62 63 00 01 00'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from icepark.errors import UnsupportedFeature, ValidationError

Bytes = npt.NDArray[np.uint8]
Ints = npt.NDArray[np.int64]


class Segments(NamedTuple):
    """Encoded rows. Variable width (``width`` -1): row ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``, rows contiguous and in order. Fixed width: row ``i``
    is ``data[i * width:(i + 1) * width]``."""

    data: Bytes
    offsets: Ints | None = None
    width: int = -1


Part = Segments | Ints
"""An encoded part of each row, or an int64 array: one ``long`` per row, not yet encoded."""


@dataclass(frozen=True, slots=True)
class StructColumn:
    """The rows of a record: one column per Avro field name (a missing optional field is null)."""

    fields: Mapping[str, Column]
    length: int


@dataclass(frozen=True, slots=True)
class ListColumn:
    """The rows of an array: each row's item count (``None`` for a null array) and the items of
    all non-null rows, flattened in row order."""

    lengths: Sequence[int | None]
    items: Column


Column = Sequence[Any] | StructColumn | ListColumn

_SHIFTS = np.arange(10, dtype=np.uint64) * np.uint64(7)
_NAMED = ("record", "fixed", "enum")


def zigzag_varint(value: int) -> bytes:
    r"""One ``long`` in Avro's zig-zag variable-length encoding.

    >>> zigzag_varint(0), zigzag_varint(-1), zigzag_varint(64)
    (b'\x00', b'\x01', b'\x80\x01')
    """
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


class RecordEncoder:
    """Encodes rows of one Avro record schema (named types resolved once)."""

    def __init__(self, schema: Any) -> None:
        self._schema = schema
        self._encoder = _Encoder(schema)

    def encode(self, rows: StructColumn) -> tuple[Bytes, Ints]:
        """The encoding of ``rows`` and where each row starts in it (``n + 1`` offsets)."""
        n = rows.length
        encoded = _interleave(self._encoder.parts(self._schema, rows, n, ""), n)
        return encoded.data, _row_offsets(encoded, n)


def encode_records(schema: Any, rows: StructColumn) -> bytes:
    """The concatenated Avro binary encoding of ``rows`` of the record ``schema``."""
    return RecordEncoder(schema).encode(rows)[0].tobytes()


def _offsets(lengths: Ints) -> Ints:
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _varints(values: Ints) -> Segments:
    """Zig-zag varints of an int64 array, vectorized one byte position at a time."""
    n = len(values)
    z = ((values << 1) ^ (values >> 63)).view(np.uint64)
    if n == 0 or int(z.max()) < 0x80:
        return Segments(z.astype(np.uint8), None, 1)
    lengths = np.ones(n, np.int64)
    for k in range(1, 10):
        more = z >= np.uint64(1 << (7 * k))
        if not more.any():
            break
        lengths += more
    offsets = _offsets(lengths)
    out = np.empty(int(offsets[-1]), np.uint8)
    start = offsets[:-1]
    width = int(lengths.max())
    for k in range(width):
        byte = ((z >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        if k + 1 < width:
            byte |= (lengths > k + 1).view(np.uint8) << np.uint8(7)
        if k == 0:
            out[start] = byte
        else:
            present = lengths > k
            out[start[present] + k] = byte[present]
    return Segments(out, offsets)


def _row_offsets(s: Segments, n: int) -> Ints:
    if s.width >= 0:
        return np.arange(n + 1, dtype=np.int64) * s.width
    assert s.offsets is not None
    return s.offsets


def _encode_run(run: list[Ints], n: int) -> Segments:
    """Rows of ``len(run)`` consecutive longs each, encoded in one pass."""
    k = len(run)
    encoded = _varints(run[0] if k == 1 else np.column_stack(run).ravel())
    if encoded.width >= 0:
        return Segments(encoded.data, None, k * encoded.width)
    assert encoded.offsets is not None
    return Segments(encoded.data, encoded.offsets[::k])


def _merge_runs(parts: Sequence[Part], n: int) -> list[Segments]:
    out: list[Segments] = []
    run: list[Ints] = []
    for part in parts:
        if isinstance(part, Segments):
            if run:
                out.append(_encode_run(run, n))
                run = []
            if part.width != 0:
                out.append(part)
        else:
            run.append(part)
    if run:
        out.append(_encode_run(run, n))
    return out


def _interleave(parts: Sequence[Part], n: int) -> Segments:
    """One segment per row: row ``i`` of every part, concatenated."""
    segments = _merge_runs(parts, n)
    if len(segments) == 1:
        return segments[0]
    if all(s.width >= 0 for s in segments):  # a table of fixed-width columns
        data = np.hstack([s.data.reshape(n, s.width) for s in segments]).ravel() if n else \
            np.zeros(0, np.uint8)
        return Segments(data, None, sum(s.width for s in segments))
    lengths: Ints = np.zeros(n, np.int64)
    diffs = [None if s.width >= 0 else np.diff(_row_offsets(s, n)) for s in segments]
    for s, diff in zip(segments, diffs, strict=True):
        lengths += s.width if diff is None else diff
    offsets = _offsets(lengths)
    out = np.empty(int(offsets[-1]), np.uint8)
    position = offsets[:-1].copy()
    span = np.arange(max((len(s.data) for s in segments), default=0))
    for s, diff in zip(segments, diffs, strict=True):
        if s.width == 1:
            out[position] = s.data
            position += 1
        elif s.width > 0:
            out[(position[:, None] + span[:s.width]).ravel()] = s.data
            position += s.width
        else:
            assert s.offsets is not None and diff is not None
            if len(s.data):
                index = np.repeat(position - s.offsets[:-1], diff)
                index += span[:len(s.data)]
                out[index] = s.data
            position += diff
    return Segments(out, offsets)


def _expand(present_rows: Segments, present: npt.NDArray[np.bool_]) -> Segments:
    """Segments of the present rows spread over all rows, empty where ``present`` is false."""
    lengths = np.zeros(len(present), np.int64)
    if present_rows.width >= 0:
        lengths[present] = present_rows.width
    else:
        lengths[present] = np.diff(_row_offsets(present_rows, int(present.sum())))
    return Segments(present_rows.data, _offsets(lengths))


class _Encoder:
    def __init__(self, schema: Any) -> None:
        self._named: dict[str, Any] = {}
        self._index(schema)

    def _index(self, schema: Any) -> None:
        if isinstance(schema, list):
            for branch in schema:
                self._index(branch)
        elif isinstance(schema, dict):
            if schema.get("type") in _NAMED:
                self._named[schema["name"]] = schema
            elif isinstance(schema.get("type"), dict | list):
                self._index(schema["type"])
            for f in schema.get("fields", ()):
                self._index(f["type"])
            for key in ("items", "values"):
                if key in schema:
                    self._index(schema[key])

    def parts(self, schema: Any, column: Column, n: int, path: str) -> list[Part]:
        """The encoding of ``n`` rows as parts to interleave (a record's parts are its
        fields' parts, flattened, so nested records are copied once)."""
        if isinstance(schema, str) and schema in self._named:
            schema = self._named[schema]
        if isinstance(schema, list):
            return self._union(schema, column, n, path)
        kind = schema["type"] if isinstance(schema, dict) else schema
        if isinstance(kind, dict | list):  # {"type": {...}}: a wrapped type
            return self.parts(kind, column, n, path)
        if isinstance(column, StructColumn):
            if kind != "record":
                raise ValidationError(f"{path}: got struct values for Avro {kind}")
            return self._record(schema, column, n, path)
        if isinstance(column, ListColumn):
            if kind != "array":
                raise ValidationError(f"{path}: got list values for Avro {kind}")
            return self._array(schema, column, n, path)
        if len(column) != n:
            raise ValidationError(f"{path}: expected {n} values, got {len(column)}")
        return self._primitive(kind, schema, column, n, path)

    def _record(self, schema: Any, column: StructColumn, n: int, path: str) -> list[Part]:
        if column.length != n:
            raise ValidationError(f"{path}: expected {n} rows, got {column.length}")
        parts: list[Part] = []
        for f in schema["fields"]:
            name = f["name"]
            values = column.fields.get(name)
            if values is None:
                if "default" not in f or f["default"] is not None:
                    raise ValidationError(f"{path}.{name}: missing values for required field")
                values = [None] * n
            parts.extend(self.parts(f["type"], values, n, f"{path}.{name}".lstrip(".")))
        return parts

    def _array(self, schema: Any, column: ListColumn, n: int, path: str) -> list[Part]:
        counts = _ints(column.lengths, n, path)
        total = int(counts.sum())
        items = _interleave(self.parts(schema["items"], column.items, total, f"{path}.element"),
                            total)
        grouped = Segments(items.data, _row_offsets(items, total)[_offsets(counts)])
        nonempty = counts > 0
        prefix: Part = counts
        if not nonempty.all():  # an empty array is only its closing zero count
            prefix = _expand(_varints(counts[nonempty]), nonempty)
        return [prefix, grouped, np.zeros(n, np.int64)]

    def _union(self, schema: list[Any], column: Column, n: int, path: str) -> list[Part]:
        if len(schema) != 2 or "null" not in schema:
            raise UnsupportedFeature(f"{path}: only unions with null are supported: {schema}")
        null_index = schema.index("null")
        inner_schema = schema[1 - null_index]
        if isinstance(column, StructColumn):
            raise UnsupportedFeature(f"{path}: optional records are not supported")
        values = column.lengths if isinstance(column, ListColumn) else column
        if len(values) != n:
            raise ValidationError(f"{path}: expected {n} values, got {len(values)}")
        if None not in values:  # common: no nulls
            return [np.full(n, 1 - null_index, np.int64),
                    *self.parts(inner_schema, column, n, path)]
        if values.count(None) == n:  # common too: all null
            return [np.full(n, null_index, np.int64)]
        present = np.fromiter((v is not None for v in values), bool, n)
        non_null = [v for v in values if v is not None]
        inner: Column = ListColumn(non_null, column.items) if isinstance(column, ListColumn) \
            else non_null
        count = int(present.sum())
        encoded = _interleave(self.parts(inner_schema, inner, count, path), count)
        return [np.where(present, 1 - null_index, null_index).astype(np.int64),
                _expand(encoded, present)]

    def _primitive(self, kind: str, schema: Any, values: Sequence[Any], n: int,
                   path: str) -> list[Part]:
        match kind:
            case "int" | "long":
                return [_ints(values, n, path)]
            case "string":
                try:
                    return _length_prefixed([v.encode() for v in values], n, path)
                except (AttributeError, UnicodeEncodeError) as e:
                    raise ValidationError(f"{path}: expected strings ({e})") from None
            case "bytes":
                return _length_prefixed(values, n, path)
            case "fixed":
                size = schema["size"]
                if any(len(v) != size for v in values):
                    raise ValidationError(f"{path}: expected {size}-byte values")
                return [Segments(np.frombuffer(_join(values, path), np.uint8), None, size)]
            case "boolean":
                return [Segments(np.fromiter(values, bool, n).view(np.uint8), None, 1)]
            case "float" | "double":
                floats = np.fromiter(values, "<f4" if kind == "float" else "<f8", n)
                return [Segments(floats.view(np.uint8), None, floats.itemsize)]
            case "null":
                return []
            case _:
                raise UnsupportedFeature(f"{path}: cannot encode Avro type {kind!r}")


def _ints(values: Sequence[Any] | Ints, n: int, path: str) -> Ints:
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "iu" or len(values) != n:
            raise ValidationError(f"{path}: expected {n} integers, got {values.dtype} array")
        return values.astype(np.int64, copy=False)
    try:
        return np.fromiter(values, np.int64, n)
    except OverflowError:
        raise ValidationError(f"{path}: integer out of the 64-bit range") from None
    except (TypeError, ValueError) as e:
        raise ValidationError(f"{path}: expected integers ({e})") from None


def _join(values: Sequence[Any], path: str) -> bytes:
    try:
        return b"".join(values)
    except TypeError as e:
        raise ValidationError(f"{path}: expected bytes ({e})") from None


def _length_prefixed(chunks: Sequence[Any], n: int, path: str) -> list[Part]:
    body = np.frombuffer(_join(chunks, path), np.uint8)
    lengths = np.fromiter(map(len, chunks), np.int64, n)
    if len(body) != int(lengths.sum()):
        raise ValidationError(f"{path}: expected bytes or strings")
    if n and (lengths == lengths[0]).all():  # e.g. 8-byte bounds of long columns
        return [lengths, Segments(body, None, int(lengths[0]))]
    return [lengths, Segments(body, _offsets(lengths))]
