"""Avro records decoded by generated Python code that reads only the fields asked for.

Avro spec, *Object Container Files*: a block holds "the serialized objects", each "encoded by
encoding the values of its fields in the order that they are declared" (*Binary Encoding*).
A generic decoder (fastavro) builds a Python object for every value of every record. Scan
planning needs a few fields of each manifest entry and none of its per-column metric maps, so
:func:`compile_reader` writes, for one writer schema and the set of fields wanted, a function
with every field's decoding inlined: wanted values are decoded (and passed through a converter),
the others skipped without building objects; runs of varints (such as an ``int -> long`` metric
map) are skipped by one regular-expression match. An optional *gate* on one field stops decoding
a record early: the rest of a record the gate rejects is only skipped.

>>> schema = {"type": "record", "name": "r", "fields": [
...     {"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "map", "values": "int"}},
...     {"name": "name", "type": ["null", "string"]}]}
>>> read = compile_reader(schema, {("id",): None, ("name",): str.upper})
>>> data = bytes([0x54, 0x02, 0x02, 0x61, 0x0E, 0x00, 0x02, 0x04]) + b"ab"
>>> read(data, 1, None)
[(42, 'AB')]
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from icepark.errors import CorruptFile, IcebergError, UnsupportedFeature
from icepark.io.avro_codegen import NAMESPACE, NOT_PAIRS, Emitter

Path = tuple[str, ...]
BlockReader = Callable[[bytes, int, "Callable[[Any], bool] | None"], list[tuple[Any, ...]]]
"""``read(data, count, gate)``: the wanted values of the ``count`` records in ``data`` (one
tuple per record, in the order the wanted fields were given), skipping records whose gate
field the ``gate`` rejects. Raises ``ValueError`` (or ``IndexError``, ``UnicodeDecodeError``,
``struct.error``) when the data does not hold exactly ``count`` records of the schema."""


class _Reader(Emitter):
    """Emits the body of a block reader: the wanted fields of each record, and its gate."""

    def __init__(self, schema: Any, wanted: Mapping[Path, Callable[[Any], Any] | None],
                 gate: Path | None, pairs: Mapping[Path, frozenset[Any] | None]) -> None:
        super().__init__(schema)
        self.wanted, self.gate, self.pairs = wanted, gate, pairs
        self.outputs: dict[Path, str] = {}
        self.rest_stack: dict[int, Callable[[int], None]] = {}

    def record_fields(self, record: Any, path: Path, ind: int) -> None:
        """Decode the wanted fields of a record at ``path`` (or below it), skip the others."""
        fields = record["fields"]
        skipped: list[Any] = []
        for i, f in enumerate(fields):
            here = (*path, f["name"])
            if here in self.wanted:
                v = self.var()
                if here in self.pairs:
                    self.pair_keys = self.pairs[here]
                self.value(f["type"], ind, v)
                self.pair_keys = NOT_PAIRS
                convert = self.wanted[here]
                if convert is not None:
                    self.emit(ind, f"if {v} is not None: {v} = {self.const(convert)}({v})")
                self.outputs[here] = v
                if here == self.gate:
                    self.emit(ind, f"if not gate({v}):")
                    self.emit(ind + 1, "pass")
                    self.skip_rest(fields[i + 1:], path, ind + 1)
                    self.emit(ind + 1, "continue")
            elif any(w[:len(here)] == here for w in self.wanted):
                inner = self.resolve(f["type"])
                if not isinstance(inner, dict) or inner.get("type") not in ("record", "error"):
                    raise UnsupportedFeature(f"Cannot select inside {'.'.join(here)}: it is "
                                             "not a record")
                self.record_fields(inner, here, ind)
            else:
                skipped.append(f["type"])
                following = (*path, fields[i + 1]["name"]) if i + 1 < len(fields) else None
                if following is None or any(w[:len(following)] == following
                                            for w in self.wanted):
                    self.skip_run(skipped, ind)
                    skipped = []

    def skip_rest(self, fields: list[Any], path: Path, ind: int) -> None:
        """Skip the fields after the gate, then the rest of every enclosing record."""
        if fields:
            self.skip_run([f["type"] for f in fields], ind)
        self.rest_stack[len(path)](ind)


def compile_reader(schema: Any, wanted: Mapping[Path, Callable[[Any], Any] | None], *,
                   gate: Path | None = None,
                   pairs: Mapping[Path, frozenset[Any] | None] | None = None) -> BlockReader:
    """A block reader of ``schema`` records returning the ``wanted`` fields (paths of field
    names, each with a converter or None) of each record, in the order given.

    ``pairs`` are wanted arrays of two-field records (Iceberg's maps with non-string keys)
    to decode as dicts of first field -> second field, keeping only the keys in the given set
    (None: every key); the values of the other keys are skipped.

    ``gate``, one of the wanted paths, rejects records early: when ``gate(value)`` is false
    the rest of the record is skipped and it is left out. A wanted path missing from the schema
    reads as None. ``UnsupportedFeature`` for a schema this cannot compile (the caller falls
    back to a generic decoder).
    """
    root = _Reader(schema, wanted, gate, pairs or {})
    top = root.resolve(schema)
    if not isinstance(top, dict) or top.get("type") not in ("record", "error"):
        raise UnsupportedFeature("Only Avro files of records can be compiled")
    if gate is not None and gate not in wanted:
        raise UnsupportedFeature(f"Gate {gate} is not a wanted field")
    root.rest_stack = _rest_of_enclosing(root, top, gate)
    root.record_fields(top, (), 2)
    outputs = [root.outputs.get(path, "None") for path in wanted]
    result = f"({', '.join(outputs)}{',' if len(outputs) == 1 else ''})"
    source = "\n".join([
        "def read(d, count, gate):",
        *(f"    {line}" for line in root.prologue),
        "    p = 0",
        "    end = len(d)",
        "    out = []",
        "    append = out.append",
        "    for _ in range(count):",
        *root.lines,
        f"        append({result})",
        "    if p != len(d):",
        "        raise _bad(f'block has {len(d) - p} bytes left after its records')",
        "    return out",
    ])
    namespace = {**NAMESPACE, **root.consts, "_runs": {}}
    exec(compile(source, "<avro reader>", "exec"), namespace)  # our own generated source
    reader: BlockReader = namespace["read"]
    return reader


def _rest_of_enclosing(gen: _Reader, top: Any, gate: Path | None
                       ) -> dict[int, Callable[[int], None]]:
    """For the gate's enclosing records (by depth), a function emitting skips of the fields
    after the record that contains the gate."""
    stack: dict[int, Callable[[int], None]] = {}
    if gate is None:
        return stack
    record = top
    levels: list[tuple[Any, int]] = []
    for depth, name in enumerate(gate[:-1]):
        fields = record["fields"]
        index = next((i for i, f in enumerate(fields) if f["name"] == name), None)
        if index is None:
            raise UnsupportedFeature(f"Gate {gate} is not in the schema")
        levels.append((fields, index))
        record = gen.resolve(fields[index]["type"])
        del depth

    def make(level: int) -> Callable[[int], None]:
        def emit(ind: int) -> None:
            for outer in range(level - 1, -1, -1):
                fields, index = levels[outer]
                if fields[index + 1:]:
                    gen.skip_run([f["type"] for f in fields[index + 1:]], ind)
        return emit

    for level in range(len(gate)):
        stack[level] = make(level)
    return stack


def read_blocks(reader: BlockReader, blocks: Iterator[tuple[int, bytes]],
                gate: Callable[[Any], bool] | None, location: str
                ) -> Iterator[list[tuple[Any, ...]]]:
    """Each block's records, decoded by ``reader``; ``CorruptFile`` naming ``location`` when a
    block does not hold its records."""
    for count, data in blocks:
        try:
            rows = reader(data, count, gate)
        except IcebergError:  # raised by the gate: not a decoding error
            raise
        except (ValueError, IndexError, UnicodeDecodeError, struct.error) as e:
            raise CorruptFile(f"{location} is corrupt or truncated: {type(e).__name__}: {e}"
                              ) from None
        yield rows
