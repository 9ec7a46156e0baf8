"""Namespace and table identifiers: parsing and the characters a catalog refuses.

An identifier is given as ``"db.events"`` or ``("db", "events")``; a namespace as ``"db"``,
``"a.b"`` or ``("a", "b")``. Every part becomes a directory name (filesystem catalog, default
table locations) or a dot-separated column value (the JDBC catalog's ``table_namespace``), so
a part must be non-empty and must not contain ``/``, ``\\``, ``..``, ``.``, NUL or any other
control character: such a name could escape the warehouse or be read back as a different
identifier. Validation happens before anything is written.

>>> table_identifier("db.events"), table_identifier(("a", "b", "t"))
(('db', 'events'), ('a', 'b', 't'))
>>> namespace_identifier("a.b")
('a', 'b')
>>> table_identifier(("db", "../etc"))
Traceback (most recent call last):
...
icepark.errors.ValidationError: Invalid identifier part '../etc': must not contain '/'
>>> table_identifier("events")
Traceback (most recent call last):
...
icepark.errors.ValidationError: Table identifier 'events' needs a namespace: write 'db.events'
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from icepark.errors import ValidationError
from icepark.table.change.commit import Identifier

NamespaceLike = str | Sequence[str]
"""``"a.b"`` or ``("a", "b")``."""

IdentifierLike = str | Sequence[str]
"""``"db.events"`` or ``("db", "events")``."""

_FORBIDDEN = (("/", "'/'"), ("\\", "'\\'"), ("..", "'..'"),
              (".", "'.' (the namespace separator)"))


def check_part(part: object) -> str:
    """Return ``part`` if it is a valid identifier part, else raise :class:`ValidationError`."""
    if not isinstance(part, str):
        raise ValidationError(f"Identifier parts must be strings, not {part!r}")
    if not part or not part.strip():
        raise ValidationError(f"Invalid identifier part {part!r}: must not be empty or blank")
    for ch in part:
        if ch == "\x00" or unicodedata.category(ch) == "Cc":
            raise ValidationError(
                f"Invalid identifier part {part!r}: must not contain control characters "
                f"(found {ch!r})")
    for needle, shown in _FORBIDDEN:
        if needle in part:
            raise ValidationError(f"Invalid identifier part {part!r}: must not contain {shown}")
    return part


def _split(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        parts: tuple[object, ...] = tuple(value.split("."))
    elif isinstance(value, Sequence):
        parts = tuple(value)
    else:
        raise ValidationError(f"{what} must be a string or a tuple of strings, not {value!r}")
    return tuple(check_part(p) for p in parts)


def namespace_identifier(namespace: NamespaceLike) -> Identifier:
    """A namespace as a tuple of validated parts; the empty namespace is not one."""
    if isinstance(namespace, str | tuple | list) and not namespace:
        raise ValidationError("Namespace cannot be empty")
    return _split(namespace, "Namespace")


def optional_namespace(namespace: NamespaceLike) -> Identifier:
    """Like :func:`namespace_identifier`, but ``()`` and ``""`` mean the catalog's root."""
    if isinstance(namespace, str | tuple | list) and not namespace:
        return ()
    return namespace_identifier(namespace)


def table_identifier(identifier: IdentifierLike) -> Identifier:
    """A table identifier as a tuple of validated parts: one or more namespace levels and the
    table name."""
    parts = _split(identifier, "Table identifier")
    if len(parts) < 2:
        raise ValidationError(
            f"Table identifier {'.'.join(parts)!r} needs a namespace: write "
            f"'db.{'.'.join(parts)}'")
    return parts


def show(identifier: Sequence[str]) -> str:
    """The dotted form used in messages."""
    return ".".join(identifier)
