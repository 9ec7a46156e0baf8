"""Building frozen, slotted spec values cheaply, for values whose fields are already checked.

A frozen dataclass sets each field through ``object.__setattr__`` (its own ``__setattr__``
refuses), about 0.1 µs a field, and :class:`~icepark.spec.manifest.DataFile` checks its fields
in ``__post_init__``: together about 1.8 µs for one file record. Scan planning builds one for
every live file of every manifest it reads, from fields its manifest decoder has already read
and checked, so :func:`trusted_constructor` builds the same value from a plain slotted twin
class (whose attribute stores are cheap), then gives the object its real class: the twin has the
same slots in the same order, so the object *is* a value of the class, equal to (and hashing,
pickling and printing like) one built the checked way. Values from users, and anything not just
decoded and checked, keep going through the class itself.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, slots=True)
... class Pair:
...     left: int
...     right: int = 0
...     def __post_init__(self) -> None:
...         if self.left < 0:
...             raise ValueError("left cannot be negative")
>>> build = trusted_constructor(Pair)
>>> p = build(1, 2)
>>> type(p) is Pair, p == Pair(1, 2), hash(p) == hash(Pair(1, 2))
(True, True, True)
>>> p.left = 5
Traceback (most recent call last):
...
dataclasses.FrozenInstanceError: cannot assign to field 'left'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from icepark.errors import ValidationError

T = TypeVar("T")


def trusted_constructor(cls: type[T]) -> Callable[..., T]:
    """A function taking every field of the frozen, slotted dataclass ``cls`` positionally, in
    field order (no defaults), and returning a ``cls`` value without calling ``__init__`` or
    ``__post_init__``: only for fields already checked as ``cls`` would check them."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise ValidationError(f"{cls.__name__} is not a slotted dataclass")
    names = tuple(f.name for f in dataclasses.fields(cls))
    if tuple(cls.__dict__["__slots__"]) != names:
        raise ValidationError(f"{cls.__name__}'s slots are not its fields in order")
    params = ", ".join(f"f{i}" for i in range(len(names)))
    body = "".join(f"    self.{name} = f{i}\n" for i, name in enumerate(names))
    source = f"def __init__(self, {params}):\n{body}    self.__class__ = cls\n"
    namespace: dict[str, Any] = {"cls": cls}
    exec(compile(source, f"<trusted {cls.__name__}>", "exec"), namespace)  # our own source
    twin: Callable[..., T] = type(f"_Trusted{cls.__name__}", (),
                                  {"__slots__": names, "__init__": namespace["__init__"]})
    probe = twin(*([None] * len(names)))  # the layouts match, or this raises TypeError
    if type(probe) is not cls:
        raise ValidationError(f"Cannot build {cls.__name__} values from a twin class")
    return twin
