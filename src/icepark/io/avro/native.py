"""Avro blocks decoded by a compiled kernel, then turned into Python values a column at a time.

The generated Python readers of :mod:`icepark.io.avro.compiled` walk every byte of a block
under the GIL, so a second planning thread cannot help. This module compiles the same
request (a writer schema, the fields wanted with their converters, a gate, a
:class:`~icepark.io.avro.compiled.Finish`) into a program (:mod:`icepark.io.avro.program`) for
:mod:`icepark.io.avro.kernel`, which walks the block's bytes in machine code without the GIL
and leaves each wanted value's varint or byte range in arrays. Python then builds each wanted
field's values as a column (:mod:`icepark.io.avro.columns`: ``tolist``, one slice and
``decode`` per string) and runs the finish over the columns' rows, so a block's records come
out exactly as the generated reader returns them.

Avro spec, *Binary Encoding* (see :mod:`icepark.io.avro.kernel` for the encodings). Natively
decoded: ``null``, ``boolean``, ``int``, ``long``, ``float``, ``double``, ``bytes``,
``string``, ``fixed``, ``enum``, records of those, unions of ``null`` and one of those, arrays
of ints or longs, and Iceberg maps of int keys to int, long, bytes or string values (arrays
of two-field records) read as dicts. Any other wanted value is skipped by the kernel, which
notes where it is, and decoded from there by a generated Python decoder. Skipped values may be
of any type.

A thread inflating files ahead (:mod:`icepark.io.avro.ahead`) may run the kernel over a block
with the program of the reader that will decode it (:func:`last_program`); that reader then
takes the run (:func:`ran_ahead`) instead of running the kernel itself.

The kernel is compiled by numba on first use (cached on disk). Blocks of fewer than
:data:`MIN_RECORDS` records, and every block when numba cannot be imported or
``ICEPARK_AVRO_KERNEL=0`` is set, are read by the generated Python reader alone.

>>> schema = {"type": "record", "name": "r", "fields": [
...     {"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "map", "values": "int"}},
...     {"name": "name", "type": ["null", "string"]}]}
>>> read = native_reader(schema, {("id",): None, ("name",): str.upper})
>>> data = bytes([0x54, 0x02, 0x02, 0x61, 0x0E, 0x00, 0x02, 0x04]) + b"ab"
>>> read(data, 1, None)
[(42, 'AB')]
"""

from __future__ import annotations

import ast
import importlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from icepark.errors import UnsupportedFeature
from icepark.io.avro.codegen import NAMESPACE
from icepark.io.avro.columns import Block, Path
from icepark.io.avro.program import K, Program

SETTLED = 2
"""What a gate may return (it is true) for a value whose records the finish's check would all
pass: the check need not run for them (this reader skips it for a block whose every record's
gate value is this)."""
MIN_RECORDS = 64
"""Blocks of at least this many records are decoded by the kernel; smaller ones are not worth
the arrays (and a process that reads only small manifests never imports numba)."""


# ----------------------------------------------------------------------------- the kernel

_AST_LOCK = threading.Lock()
"""Held while ``ast.parse`` builds Python objects: CPython 3.11 counts the depth of that
construction in state shared by every thread, so two threads compiling readers at once (the
read-ahead threads of ``inspect.files``, say) can fail with ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython#106905)."""
_MODULES: dict[str, Any] = {}
_MODULES_LOCK = threading.Lock()


def _compiled_module(name: str) -> Any:
    """The module ``icepark.io.avro.<name>`` of numba-compiled functions, imported once;
    None when numba (or what the module needs) cannot be imported or
    ``ICEPARK_AVRO_KERNEL=0``."""
    if name in _MODULES:
        return _MODULES[name]
    with _MODULES_LOCK:
        if name not in _MODULES:
            module: Any = None
            if os.environ.get("ICEPARK_AVRO_KERNEL", "1") != "0":
                try:  # numba: slow to import, and an optional speed-up
                    module = importlib.import_module(f"icepark.io.avro.{name}")
                except ImportError:
                    module = None
            _MODULES[name] = module
    return _MODULES[name]


def kernel() -> Any:
    """The kernel module (:mod:`icepark.io.avro.kernel`), imported (and its functions
    compiled) once; None when numba cannot be imported or ``ICEPARK_AVRO_KERNEL=0``."""
    return _compiled_module("kernel")


_LOCAL = threading.local()
"""This thread's kernel run done ahead (``ran``, see :func:`ran_ahead`) and the program of its
last kernel run (``program``, see :func:`last_program`)."""
SAMPLE_STEP = 512
"""A run done ahead is taken for a block of the same length and program whose every
``SAMPLE_STEP``-th byte is the same (see :class:`Ran`)."""


@dataclass(frozen=True, slots=True)
class Ran:
    """The kernel's run over a block (``result``, as :func:`icepark.io.avro.kernel.run`
    returns it), done ahead by another thread with ``program`` (as :func:`last_program`
    gives it) over ``count`` records of ``size`` bytes, whose every :data:`SAMPLE_STEP`-th
    byte is ``sample``. The thread decoding the block takes it instead of running the kernel
    (:func:`ran_ahead`): the sample is a check that it is the block the run was for (its
    caller hands the block's file to the reader, and the run is taken once), not a proof."""

    program: tuple[Any, Any, int]
    count: int
    size: int
    sample: bytes
    result: tuple[Any, ...]


@contextmanager
def ran_ahead(ran: Ran | None) -> Iterator[None]:
    """While inside, the first block this thread's native readers decode with ``ran``'s
    program, count, size and sample takes ``ran.result`` instead of running the kernel."""
    _LOCAL.ran = ran
    try:
        yield
    finally:
        _LOCAL.ran = None


def last_program() -> tuple[Any, Any, int] | None:
    """The program (ops, key sets, slot count) of this thread's last kernel run, for a run
    ahead (:func:`icepark.io.avro.inflate.inflate_files`) of blocks of the same reader; None
    when it ran none since the last call."""
    program: tuple[Any, Any, int] | None = getattr(_LOCAL, "program", None)
    _LOCAL.program = None
    return program


def inflate_ahead() -> Any:
    """The module :mod:`icepark.io.avro.ahead`, imported once; None when numba or zlib cannot
    be loaded or ``ICEPARK_AVRO_KERNEL=0``."""
    module = _compiled_module("ahead")
    return module if module is not None and module.inflate.AVAILABLE else None


def inflated(content: bytes, block_bytes: int) -> bytes:
    """The container file ``content`` with its deflated blocks (``block_bytes`` long at most on
    average) inflated and joined into one uncompressed block, by
    :func:`icepark.io.avro.inflate.inflate_container` without the GIL; ``content`` itself when
    it is not such a file, cannot be inflated that way (its reader reports what is wrong), or
    numba or zlib cannot be loaded."""
    module = _compiled_module("inflate")
    found = None if module is None else module.inflate_container(content, block_bytes)
    return content if found is None else found


def native_reader(schema: Any, wanted: Mapping[Path, Any], *, gate: Path | None = None,
                  pairs: Mapping[Path, frozenset[Any] | None] | None = None,
                  finish: Any = None) -> Callable[..., list[Any]]:
    """A block reader of ``schema`` records, as :func:`icepark.io.avro.compiled.compile_reader`
    makes one for the same arguments (same results, same errors as ``ValueError``), decoding
    with the kernel. ``UnsupportedFeature`` for a schema it cannot read."""
    pairs = pairs or {}
    program = Program(schema, pairs)
    top = program.resolve(schema)
    if not isinstance(top, dict) or top.get("type") not in ("record", "error"):
        raise UnsupportedFeature("Only Avro files of records can be compiled")
    if gate is not None and gate not in wanted:
        raise UnsupportedFeature(f"Gate {gate} is not a wanted field")
    names = {path: f"v{i}" for i, path in enumerate(wanted, 1)}
    checked = finish is not None and bool(finish.check)
    # strings decoded once a record is kept: those the gate, the check and converters do not
    # need
    check_reads = {list(wanted)[i] for i in finish.check_reads} if checked else set()
    spans = frozenset(path for path, convert in wanted.items()
                      if (gate is not None or checked) and convert is None and path != gate
                      and path not in check_reads)
    program.record_fields(top, (), wanted, spans)
    program.op(K.END)
    return _assemble(program, wanted, names, gate, finish)


def _indented(lines: str) -> str:
    return "    " + lines.replace("\n", "\n    ")


def _rows_loop(program: Program, names: dict[Path, str], finish: Any,  # noqa: PLR0917
               loop: Callable[..., str], paths: list[Path], lines: Sequence[str], *,
               unsure_only: Sequence[Path] = ()) -> str:
    """The loop over a block's kept rows, over the columns of ``paths`` (the wanted paths, or
    some of them: the others are None), decoding spans and running the finish's ``lines``
    (its body or lean body). The values of ``unsure_only`` are passed on only for rows the
    check left undecided, which the list ``unsure`` flags."""
    outputs = [f"({names[p]} if rejected is None else None)" if p in unsure_only else names[p]
               for p in names]
    rest = [p for p in paths if p in program.columns or p in program.spans]
    body = [f"{names[p]} = d[{names[p]}:{names[p]}_end].decode()" for p in paths
            if p in program.spans]
    if unsure_only:
        body.append("rejected = None if flag else False")
    if finish is None:
        body.append(f"append(({', '.join(outputs)}{',' if len(outputs) == 1 else ''}))")
    else:
        body += [line.format(*outputs) for line in lines]
    # a field the block does not have is None in every row: set once, unless a row may set it
    absent = [names[p] for p in names if p not in rest]
    with _AST_LOCK:  # see _AST_LOCK
        tree = ast.parse("\n".join(body))
    assigned = {n.id for n in ast.walk(tree)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    lines = [f"    {n} = None" for n in absent if n not in assigned]
    body[:0] = [f"{n} = None" for n in absent if n in assigned]
    return "\n".join([*lines, loop(rest, body, kept=False,
                                   flags="unsure" if unsure_only else None)])


def _assemble(program: Program, wanted: Mapping[Path, Any], names: dict[Path, str],
              gate: Path | None, finish: Any) -> Callable[..., list[Any]]:
    """The reader: the kernel's run; the gate over its column and the check over the
    columns it reads, each leaving out the rows it rejects before the next columns are made;
    then the other columns, and a loop over their rows decoding spans and running the
    finish."""
    import numpy as np  # noqa: PLC0415 - with pyarrow, already loaded by any reader

    ops = np.array(program.ops, dtype=np.int64)
    width = max((len(k) for k in program.keysets), default=0) + 1
    keysets = np.zeros((max(len(program.keysets), 1), width), dtype=np.int64)
    for i, keys in enumerate(program.keysets):
        keysets[i, 0] = len(keys)
        keysets[i, 1:len(keys) + 1] = sorted(keys)
    slots = max(program.slots, 1)
    paths = list(wanted)
    outputs = [names[path] for path in paths]
    checked = finish is not None and bool(finish.check)
    check_reads = [p for i, p in enumerate(paths) if checked and i in finish.check_reads]
    check_paths = [p for p in check_reads if p in program.columns]

    def loop(over: list[Path], body: list[str], kept: bool, flags: str | None = None) -> str:
        """A loop over the rows of the columns of ``over`` (and of their row numbers, or of
        the list named ``flags``, as ``flag``)."""
        loop_names = [n for p in over for n in ((names[p], f"{names[p]}_end")
                                                if p in program.spans else (names[p],))]
        lead = "range(block.count), " if kept else f"{flags}, " if flags else ""
        if kept or flags:
            loop_names.insert(0, "row" if kept else "flag")
        head = (f"for {', '.join(loop_names)}{',' if len(loop_names) == 1 else ''} in "
                f"zip({lead}*columns(block, {[paths.index(p) for p in over]})):")
        if not loop_names:
            head = "for _ in range(block.count):"
        return "\n".join([f"    {head}", *(f"        {line}" for line in body)])

    parts = ["def read(d, count, gate, ctx=None):",
             *(f"    {line}" for line in (finish.prologue if finish is not None else ())),
             "    block = run(d, count)"]
    if gate is not None:  # a gate on a field the schema does not have sees None
        parts += [f"    gate_rows, settled = gated(gate, block, {paths.index(gate)})",
                  "    block.select(gate_rows)"]
    else:
        parts.append("    settled = False")
    unsure_only = [paths[i] for i in finish.unsure_only] if checked else []
    if checked:
        missing = [f"{names[p]} = None" for p in check_reads if p not in program.columns]
        parts += ["    unsure = ()",
                  "    if not settled:",
                  "        kept, unsure = at_once(ctx, block)",
                  "        if kept is None:",
                  "            kept, unsure = [], []",
                  "        " + loop(check_paths, [*missing, *(line.format(*outputs)
                                                            for line in finish.check),
                                                 "if not rejected:", "    kept.append(row)",
                                                 *(["    unsure.append(rejected is None)"]
                                                   if unsure_only else [])],
                                  kept=True).replace("\n", "\n        "),
                  "        block.select(kept)"]
    parts += ["    out = []", "    append = out.append"]

    def rows(lines: Sequence[str]) -> str:
        if not unsure_only:
            return _rows_loop(program, names, finish, loop, paths, lines)
        # the values only undecided rows read are made only for a block that has some
        return "\n".join([
            "    if any(unsure):",
            _indented(_rows_loop(program, names, finish, loop, paths, lines,
                                 unsure_only=unsure_only)),
            "    else:",
            _indented(_rows_loop(program, names, finish, loop,
                                 [p for p in paths if p not in unsure_only], lines))])

    if finish is None:
        parts.append(rows(()))
    elif finish.lean_body is None:
        parts.append(rows(finish.body))
    else:  # the lean body for a block whose every row passes the checks it leaves out
        parts += ["    if valid_at_once(Items(block)):", _indented(rows(finish.lean_body)),
                  "    else:", _indented(rows(finish.body))]
    parts.append("    return out")
    source = "\n".join(parts)

    program_of = (ops, keysets, slots)

    def run_kernel(d: bytes, count: int) -> Block:
        k = kernel()
        local = _LOCAL.__dict__
        ran = local.get("ran")
        if (ran is not None and ran.program[0] is ops and ran.count == count
                and ran.size == len(d) and ran.sample == d[::SAMPLE_STEP]):
            local["ran"] = None  # taken once
            result = ran.result
        else:
            result = k.run(ops, keysets, np.frombuffer(d, dtype=np.uint8), count, slots)
        local["program"] = program_of
        status, position = result[0], result[1]
        if status == k.LEFT_OVER:
            raise ValueError(f"block has {len(d) - position} bytes left after its records")
        if status:
            raise ValueError(f"{k.MESSAGES[status]} at {position}")
        return Block(d, count, result)

    def columns(block: Block, which: list[int]) -> list[list[Any]]:
        out: list[list[Any]] = []
        for i in which:
            path = paths[i]
            if path in program.spans:
                out += [block.v(program.spans[path]), block.e(program.spans[path])]
            else:
                out.append(program.columns[path](block))
        return out

    def gated(test: Callable[[Any], int], block: Block, i: int) -> tuple[list[int], bool]:
        """The rows the gate keeps, and whether it settles every one (:data:`SETTLED`)."""
        column = program.columns.get(paths[i])
        values = column(block) if column is not None else [None] * block.count
        try:  # a gate is a function of the value: once per distinct value
            verdicts = {v: test(v) for v in set(values)}
        except TypeError:
            found = [test(v) for v in values]
            rows = [row for row, g in enumerate(found) if g]
            return rows, all(found[row] == SETTLED for row in rows)
        return ([row for row, v in enumerate(values) if verdicts[v]],
                all(g == SETTLED for g in verdicts.values() if g))

    def at_once(ctx: Any, block: Block) -> tuple[list[int] | None, list[bool] | None]:
        """The rows the finish's ``check_all`` keeps, and whether each is undecided; or
        None, None: check row by row."""
        check_all = finish.check_all
        if check_all is None:
            return None, None
        found = check_all(ctx, Items(block))
        if found is None:
            return None, None
        rejected, unsure = found
        kept = np.flatnonzero(~rejected)
        return kept.tolist(), unsure[kept].tolist()

    class Items:
        """What a check of a whole block reads, for its kept rows: the block's bytes, its
        row count, and by wanted index the items of its wanted Iceberg maps
        (:meth:`Block.item_arrays`) and the varints, arrays of varints and null flags the
        kernel left (numpy arrays; None where the value is not one)."""

        def __init__(self, block: Block) -> None:
            self.block = block
            self.count = block.count
            self.data = np.frombuffer(block.d, dtype=np.uint8)

        def pairs(self, i: int) -> tuple[Any, Any, Any, Any] | None:
            slot = program.pair_slots.get(paths[i])
            return None if slot is None else self.block.item_arrays(slot)

        def present(self, i: int) -> bool:
            """Whether the schema has wanted value ``i`` (else it is None in every row)."""
            return paths[i] in program.columns or paths[i] in program.spans

        def values(self, i: int) -> Any:
            """Each row's varint, or where its array's items start (see :meth:`items`)."""
            slot = program.value_slots.get(paths[i])
            return None if slot is None else self.block.array("values", slot)

        def ends(self, i: int) -> Any:
            """Where each row's array's items end (see :meth:`items`)."""
            slot = program.value_slots.get(paths[i])
            return None if slot is None else self.block.array("ends", slot)

        def nulls(self, i: int) -> Any:
            """Each row's null flag (1: null), when the value is in a union with null."""
            slot = program.null_slots.get(paths[i])
            return None if slot is None else self.block.array("nulls", slot)

        def items(self) -> Any:
            """The collected items of the block's arrays (of every wanted array and map), in
            record order: a row's array's are ``items()[values(i)[row]:ends(i)[row]]``."""
            return self.block.items

    consts = finish.consts if finish is not None else {}
    namespace = {**NAMESPACE, **consts, "run": run_kernel, "columns": columns, "gated": gated,
                 "at_once": at_once, "Items": Items,
                 "valid_at_once": finish.valid_at_once if finish is not None else None}
    exec(compile(source, "<avro native reader>", "exec"), namespace)  # our own source
    read: Callable[..., list[Any]] = namespace["read"]
    return read
