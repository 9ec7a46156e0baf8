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
from dataclasses import dataclass, field
from typing import Any, Protocol

from icepark.errors import CorruptFile, IcebergError, UnsupportedFeature
from icepark.io.avro import native
from icepark.io.avro.codegen import NAMESPACE, NOT_PAIRS, Emitter
from icepark.io.avro.shape import MapField, MapRun

Path = tuple[str, ...]
Converter = Callable[[Any], Any] | tuple[Any, ...]
"""What a wanted value goes through: a function, or a tuple whose item ``i`` is the value of
the integer ``i`` (other integers are invalid)."""


class BlockReader(Protocol):
    """``read(data, count, gate, ctx)``: the wanted values of the ``count`` records in
    ``data`` (one tuple per record, in the order the wanted fields were given, or what a
    :class:`Finish` makes of them with ``ctx``), skipping records whose gate field the
    ``gate`` rejects. Raises ``ValueError`` (or ``IndexError``, ``UnicodeDecodeError``,
    ``struct.error``) when the data does not hold exactly ``count`` records of the schema."""

    def __call__(self, data: bytes, count: int, gate: Callable[[Any], int] | None,
                 ctx: Any = None, /) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class Finish:
    """Python lines that turn each record's wanted values into what a block reader returns,
    inlined into it (no call and no tuple per record).

    ``prologue`` runs once per block and may read ``ctx``, the reader's last argument;
    ``body`` runs for each record (not rejected by the gate), where ``{0}``, ``{1}``, ... are
    the variables holding the wanted values in order (the lines may assign them), ``append``
    adds to the block's result and ``continue`` leaves a record out; ``_bad(message)`` is the
    ``ValueError`` of bad data. ``consts`` are further names the lines use."""

    prologue: tuple[str, ...]
    body: tuple[str, ...]
    consts: Mapping[str, Any] = field(default_factory=dict)
    check: tuple[str, ...] = ()
    """Lines setting ``rejected``, run as soon as the wanted values numbered ``check_reads``
    are decoded (the lines only read values, by the same ``{i}`` names): a rejected record's
    other fields are skipped, not decoded, and it is left out."""
    check_reads: tuple[int, ...] = ()
    check_all: Callable[[Any, Any], Any] | None = None
    """The check of a whole block at once, for the kernel's reader
    (:mod:`icepark.io.avro.native`): given ``ctx`` and the block's items (``count``, ``data``
    and ``pairs(i)``: numpy arrays of row, key, value and value end of the wanted Iceberg map
    numbered ``i``, None when the kernel did not read it), two numpy arrays: of the rows
    ``check`` would reject and of those it would leave undecided (``rejected`` None); or None
    to run ``check`` row by row."""
    unsure_only: tuple[int, ...] = ()
    """The wanted values the body reads (never assigns) only for a record the check left
    undecided (``rejected`` None): for the others they read as None, and the kernel's reader
    does not make their columns for a block the check decided entirely."""
    lean_body: tuple[str, ...] | None = None
    """``body`` without the checks that ``valid_at_once`` makes for a whole block, for the
    kernel's reader: it runs these lines for the rows of a block ``valid_at_once`` passes
    (``body``, which raises the precise error, for the others)."""
    valid_at_once: Callable[[Any], bool] | None = None
    """Given a block's kept rows as the kernel left them (:class:`icepark.io.avro.native.
    Items`), whether every one passes the checks ``lean_body`` leaves out (False when it
    cannot tell)."""


class _Reader(Emitter):
    """Emits the body of a block reader: the wanted fields of each record, and its gate."""

    def __init__(self, schema: Any, wanted: Mapping[Path, Converter | None],
                 gate: Path | None, pairs: Mapping[Path, frozenset[Any] | None]) -> None:
        super().__init__(schema)
        self.wanted, self.gate, self.pairs = wanted, gate, pairs
        self.outputs: dict[Path, str] = {}
        self.rest_stack: dict[int, Callable[[int], None]] = {}
        self.top: Any = None
        self.check: tuple[str, ...] = ()
        self.check_paths: list[Path] | None = None
        """The paths the check reads that the schema has; None once the check is emitted."""
        self.deferred: list[str] = []
        """Statements decoding wanted strings read before the check, run once it passes
        (a rejected record's file path is never decoded)."""

    def record_fields(self, record: Any, path: Path, ind: int) -> None:
        """Decode the wanted fields of a record at ``path`` (or below it), skip the others."""
        fields = record["fields"]
        skipped: list[Any] = []
        i = 0
        while i < len(fields):
            f = fields[i]
            here = (*path, f["name"])
            run = self.map_run(fields, i, path)
            if run:
                if skipped:
                    self.skip_run(skipped, ind)
                    skipped = []
                self.maps(run, path, ind)
                i += len(run)
                self.maybe_check(fields[i:], path, ind)
                continue
            i += 1
            if here in self.wanted and self._deferrable(here, f["type"]):
                v = self.var()
                self.deferred.append(self.span(ind, v))
                self.outputs[here] = v
            elif here in self.wanted:
                v = self.var()
                if here in self.pairs:
                    self.pair_keys = self.pairs[here]
                self.value(f["type"], ind, v)
                self.pair_keys = NOT_PAIRS
                self.convert(v, self.wanted[here], ind)
                self.outputs[here] = v
                if here == self.gate:
                    self.emit(ind, f"if not gate({v}):")
                    self.emit(ind + 1, "pass")
                    self.skip_rest(fields[i:], path, ind + 1)
                    self.emit(ind + 1, "continue")
                self.maybe_check(fields[i:], path, ind)
            elif any(w[:len(here)] == here for w in self.wanted):
                inner = self.resolve(f["type"])
                if not isinstance(inner, dict) or inner.get("type") not in ("record", "error"):
                    raise UnsupportedFeature(f"Cannot select inside {'.'.join(here)}: it is "
                                             "not a record")
                self.record_fields(inner, here, ind)
            else:
                skipped.append(f["type"])
                following = (*path, fields[i]["name"]) if i < len(fields) else None
                if following is None or any(w[:len(following)] == following
                                            for w in self.wanted):
                    self.skip_run(skipped, ind)
                    skipped = []

    def _deferrable(self, path: Path, t: Any) -> bool:
        """Whether the wanted field at ``path`` is a string the pending check does not read
        (decoded only once the check passes)."""
        return (self.check_paths is not None and path not in self.check_paths
                and path != self.gate and self.wanted[path] is None
                and self.resolve(t) == "string")

    def maybe_check(self, remaining: list[Any], path: Path, ind: int) -> None:
        """The finish's check, once every value it reads is decoded: a rejected record's
        remaining fields (and those of its enclosing records) are skipped, by patterns (a
        metrics filter usually rejects most records)."""
        if self.check_paths is None or any(p not in self.outputs for p in self.check_paths):
            return
        self.check_paths = None
        names = [self.outputs.get(w, "None") for w in self.wanted]
        for line in self.check:
            self.emit(ind, line.format(*names))
        self.emit(ind, "if rejected:")
        self.emit(ind + 1, "pass")
        self.skip_fields(remaining, path, ind + 1)
        _rest_of_enclosing(self, self.top, (*path, ""))[len(path)](ind + 1)
        self.emit(ind + 1, "continue")
        for line in self.deferred:
            self.emit(ind, line)
        self.deferred = []

    def present(self, path: Path) -> bool:
        """Whether the schema has a field at ``path``."""
        record = self.top
        for name in path:
            record = self.resolve(record)
            if not isinstance(record, dict) or record.get("type") not in ("record", "error"):
                return False
            record = next((f["type"] for f in record["fields"] if f["name"] == name), None)
            if record is None:
                return False
        return True

    def map_field(self, t: Any) -> MapField | None:
        """How a field of type ``t`` is read as part of a map run, if it is an Iceberg map of
        int keys to int, long or bytes values (an array of key/value records, maybe in a union
        with null first)."""
        found = self.iceberg_map(t)
        if found is None:
            return None
        nullable, key, value = found
        if key not in ("int", "long") or value not in ("int", "long", "bytes"):
            return None
        return MapField(nullable, value == "bytes", None)

    def map_run(self, fields: list[Any], i: int, path: Path) -> list[tuple[Any, MapField]]:
        """The maps from ``fields[i]`` on (none when it is not one), with the keys wanted."""
        run: list[tuple[Any, MapField]] = []
        for f in fields[i:]:
            here = (*path, f["name"])
            found = self.map_field(f["type"])
            if found is None or here == self.gate or (here not in self.wanted and any(
                    w[:len(here)] == here for w in self.wanted)) or (
                    here in self.wanted and here not in self.pairs):
                break
            keys = self.pairs.get(here)
            run.append((f, MapField(found.nullable, found.bytes_values,
                                    None if keys is None else frozenset(keys),
                                    here in self.wanted)))
        return run

    def maps(self, run: list[tuple[Any, MapField]], path: Path, ind: int) -> None:
        """A run of maps: matched by the pattern of their last shape, else read the slow way
        and their shape learned (:mod:`icepark.io.avro.shape`)."""
        shapes = self.const(MapRun([m for _, m in run]))
        wanted = [(f, self.var()) for f, m in run if m.wanted]
        if wanted:
            self.emit(ind, f"r = {shapes}.read(d, p)")
        else:  # only skipped: the match's end is all it takes
            self.emit(ind, f"r = {shapes}.match(d, p)")
        self.emit(ind, "if r is None:")
        self.emit(ind + 1, "q = p")
        for f, _ in run:
            here = (*path, f["name"])
            target = next((v for g, v in wanted if g is f), None)
            if target is None:
                self.skip(f["type"], ind + 1)
                continue
            self.pair_keys = self.pairs[here]
            self.value(f["type"], ind + 1, target)
            self.pair_keys = NOT_PAIRS
        self.emit(ind + 1, f"{shapes}.learn(d, q)")
        self.emit(ind, "else:")
        if wanted:
            names = ", ".join(v for _, v in wanted)
            self.emit(ind + 1, f"p, ({names}{',' if len(wanted) == 1 else ''}) = r")
        else:
            self.emit(ind + 1, "p = r.end()")
        for f, v in wanted:
            here = (*path, f["name"])
            self.convert(v, self.wanted[here], ind)
            self.outputs[here] = v

    def convert(self, v: str, convert: Converter | None, ind: int) -> None:
        """Pass a decoded value through its converter: a function, or a tuple of the values of
        the integers 0, 1, ... (an enum's members, looked up without a call)."""
        if isinstance(convert, tuple):
            self.emit(ind, f"if {v} is not None:")
            self.emit(ind + 1, f"if not 0 <= {v} < {len(convert)}: "
                               f"raise _bad(f'invalid value {{{v}}}')")
            self.emit(ind + 1, f"{v} = {self.const(convert)}[{v}]")
        elif convert is not None:
            self.emit(ind, f"if {v} is not None: {v} = {self.const(convert)}({v})")

    def skip_rest(self, fields: list[Any], path: Path, ind: int) -> None:
        """Skip the fields after the gate, then the rest of every enclosing record."""
        self.skip_fields(fields, path, ind)
        self.rest_stack[len(path)](ind)

    def skip_fields(self, fields: list[Any], path: Path, ind: int) -> None:
        """Skip fields: runs of maps by the pattern of their shape, the others as
        :meth:`skip_run` does."""
        pending: list[Any] = []
        i = 0
        while i < len(fields):
            run: list[tuple[Any, MapField]] = []
            for f in fields[i:]:
                found = self.map_field(f["type"])
                if found is None:
                    break
                run.append((f, MapField(found.nullable, found.bytes_values, None, False)))
            if not run:
                pending.append(fields[i]["type"])
                i += 1
                continue
            self.skip_run(pending, ind)
            pending = []
            self.maps(run, path, ind)
            i += len(run)
        self.skip_run(pending, ind)


def compile_reader(schema: Any, wanted: Mapping[Path, Converter | None], *,
                   gate: Path | None = None,
                   pairs: Mapping[Path, frozenset[Any] | None] | None = None,
                   finish: Finish | None = None) -> BlockReader:
    """A block reader of ``schema`` records returning the ``wanted`` fields (paths of field
    names, each with a converter or None) of each record, in the order given.

    A converter may also be a tuple: integer ``i`` reads as its item ``i``.

    ``pairs`` are wanted arrays of two-field records (Iceberg's maps with non-string keys)
    to decode as dicts of first field -> second field, keeping only the keys in the given set
    (None: every key); the values of the other keys are skipped.

    ``gate``, one of the wanted paths, rejects records early: when ``gate(value)`` is false
    the rest of the record is skipped and it is left out; when it is
    :data:`~icepark.io.avro.native.SETTLED`, the finish's check may be skipped. A wanted path
    missing from the schema reads as None. ``finish`` replaces the tuple of each record by what
    its lines append. ``UnsupportedFeature`` for a schema this cannot compile (the caller falls
    back to a generic decoder). Runs of Iceberg maps are matched by the pattern of their last shape
    (:mod:`icepark.io.avro.shape`).
    """
    root = _Reader(schema, wanted, gate, pairs or {})
    top = root.resolve(schema)
    if not isinstance(top, dict) or top.get("type") not in ("record", "error"):
        raise UnsupportedFeature("Only Avro files of records can be compiled")
    if gate is not None and gate not in wanted:
        raise UnsupportedFeature(f"Gate {gate} is not a wanted field")
    root.rest_stack = _rest_of_enclosing(root, top, gate)
    root.top = top
    if finish is not None and finish.check:
        paths = list(wanted)
        root.check = finish.check
        root.check_paths = [paths[i] for i in finish.check_reads if root.present(paths[i])]
    root.record_fields(top, (), 2)
    for line in root.deferred:  # the check was never emitted: decode them anyway
        root.emit(2, line)
    outputs = [root.outputs.get(path, "None") for path in wanted]
    if finish is None:
        body = [f"append(({', '.join(outputs)}{',' if len(outputs) == 1 else ''}))"]
        prologue: tuple[str, ...] = ()
    else:
        for i, path in enumerate(wanted):
            if path not in root.outputs:  # a variable the lines may assign
                outputs[i] = root.var()
                root.emit(2, f"{outputs[i]} = None")
        check: list[str] = []
        if root.check_paths is not None:  # not emitted yet: after every field, then
            check = [*finish.check, "if rejected:", "    continue"]
        check = [line.format(*outputs) for line in check]
        if finish.check:
            for i in finish.unsure_only:
                outputs[i] = f"({outputs[i]} if rejected is None else None)"
        body = [*check, *(line.format(*outputs) for line in finish.body)]
        prologue = finish.prologue
        root.consts.update(finish.consts)
    source = "\n".join([
        "def read(d, count, gate, ctx=None):",
        *(f"    {line}" for line in (*prologue, *root.prologue)),
        "    p = 0",
        "    end = len(d)",
        "    out = []",
        "    append = out.append",
        "    for _ in range(count):",
        *root.lines,
        *(f"        {line}" for line in body),
        "    if p != len(d):",
        "        raise _bad(f'block has {len(d) - p} bytes left after its records')",
        "    return out",
    ])
    namespace = {**NAMESPACE, **root.consts, "_runs": {}}
    exec(compile(source, "<avro reader>", "exec"), namespace)  # our own generated source
    reader: BlockReader = namespace["read"]
    try:
        fast = native.native_reader(schema, wanted, gate=gate, pairs=pairs, finish=finish)
    except UnsupportedFeature:
        return reader
    return _either(reader, fast)


def _either(python: BlockReader, kernel: Callable[..., list[Any]]) -> BlockReader:
    """Large blocks read by the kernel (:mod:`icepark.io.avro.native`), small ones by the
    generated Python."""

    def read(data: bytes, count: int, gate: Callable[[Any], int] | None, ctx: Any = None,
             /) -> list[Any]:
        if count >= native.MIN_RECORDS and native.kernel() is not None:
            return kernel(data, count, gate, ctx)
        return python(data, count, gate, ctx)

    return read


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
                gate: Callable[[Any], int] | None, location: str, ctx: Any = None
                ) -> Iterator[list[Any]]:
    """Each block's records, decoded by ``reader``; ``CorruptFile`` naming ``location`` when a
    block does not hold its records."""
    for count, data in blocks:
        try:
            rows = reader(data, count, gate, ctx)
        except IcebergError:  # raised by the gate: not a decoding error
            raise
        except (ValueError, IndexError, UnicodeDecodeError, struct.error) as e:
            raise CorruptFile(f"{location} is corrupt or truncated: {type(e).__name__}: {e}"
                              ) from None
        yield rows
