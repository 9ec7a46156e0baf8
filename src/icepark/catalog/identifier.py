"""Namespace and table identifiers: parsing and the characters a catalog refuses.

An identifier is given as ``"db.events"`` or ``("db", "events")``; a namespace as ``"db"``,
``"a.b"`` or ``("a", "b")``. Every part becomes a directory name (filesystem catalog, default
table locations) or a dot-separated column value (the JDBC catalog's ``table_namespace``), so
a part must be non-empty and must not contain ``/``, ``\\``, ``..``, ``.``, NUL or any other
control character (nor a lone surrogate, which no file system or database stores): such a
name could escape the warehouse or be read back as a different identifier. Validation happens
before any I/O, so an invalid name is a :class:`ValidationError` from every method, also from
``table_exists`` and ``namespace_exists``.

Lengths, the same in every catalog so that a table can move between them:

* each part (namespace level or table name) is at most 255 bytes in UTF-8, the file-name
  limit of common file systems (a part is a directory of the filesystem catalog and of
  default table locations);
* the namespace, its parts joined with ``.``, is at most 252 bytes in UTF-8: the SQL
  catalog's default table location is ``<warehouse>/<namespace>.db/<table>`` (the Hive
  convention that pyiceberg and the reference implementation use too), so ``<namespace>.db``
  must be a file name, and the joined namespace must fit the SQL catalog's
  ``table_namespace`` and ``namespace`` columns, ``VARCHAR(255)`` as in the reference
  implementation's JDBC catalog. The table name fits ``table_name`` (255) by the first rule:
  a name within 255 bytes is within 255 characters.

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
>>> table_identifier(("db", "x" * 300))
Traceback (most recent call last):
...
icepark.errors.ValidationError: Table name 'xxxxxxxxxxxxxxxxxxxxxxxx...' is 300 characters \
long; names are limited to 255 bytes (UTF-8)
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

MAX_NAME_BYTES = 255
"""Longest namespace level or table name, in UTF-8 bytes: a file name."""
MAX_NAMESPACE_BYTES = MAX_NAME_BYTES - len(".db")
"""Longest namespace, its levels joined with ``.``, in UTF-8 bytes: the directory
``<namespace>.db`` of default table locations is a file name."""


def _short(text: str) -> str:
    return repr(text if len(text) <= 24 else text[:24] + "...")


def _length(text: str) -> str:
    size = len(text.encode())
    extra = "" if size == len(text) else f" ({size} bytes in UTF-8)"
    return f"{len(text)} characters{extra} long"


def check_part(part: object, what: str = "Identifier part") -> str:
    """Return ``part`` if it is a valid identifier part, else raise :class:`ValidationError`
    (``what`` names the part in the message: "Table name", "Namespace name").

    >>> check_part("é" * 200, "Namespace name")
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: Namespace name 'éééééééééééééééééééééééé...' is 200 \
characters (400 bytes in UTF-8) long; names are limited to 255 bytes (UTF-8)
    """
    if not isinstance(part, str):
        raise ValidationError(f"Identifier parts must be strings, not {part!r}")
    if not part or not part.strip():
        raise ValidationError(f"Invalid identifier part {part!r}: must not be empty or blank")
    for ch in part:
        category = unicodedata.category(ch)
        if ch == "\x00" or category == "Cc":
            raise ValidationError(
                f"Invalid identifier part {_short(part)}: must not contain control characters "
                f"(found {ch!r})")
        if category == "Cs":
            raise ValidationError(
                f"Invalid identifier part {_short(part)}: must be valid Unicode, not a lone "
                f"surrogate ({ch!r})")
    for needle, shown in _FORBIDDEN:
        if needle in part:
            raise ValidationError(f"Invalid identifier part {part!r}: must not contain {shown}")
    if len(part.encode()) > MAX_NAME_BYTES:
        raise ValidationError(
            f"{what} {_short(part)} is {_length(part)}; names are limited to "
            f"{MAX_NAME_BYTES} bytes (UTF-8)")
    return part


def _split(value: object, what: str) -> tuple[object, ...]:
    if isinstance(value, str):
        return tuple(value.split("."))
    if isinstance(value, Sequence):
        return tuple(value)
    raise ValidationError(f"{what} must be a string or a tuple of strings, not {value!r}")


def _namespace(parts: Sequence[object]) -> Identifier:
    checked = tuple(check_part(p, "Namespace name") for p in parts)
    joined = ".".join(checked)
    if len(joined.encode()) > MAX_NAMESPACE_BYTES:
        raise ValidationError(
            f"Namespace {_short(joined)} is {_length(joined)}; a namespace (its names joined "
            f"with '.') is limited to {MAX_NAMESPACE_BYTES} bytes (UTF-8), so that its "
            "directory '<namespace>.db' is a valid file name")
    return checked


def namespace_identifier(namespace: NamespaceLike) -> Identifier:
    """A namespace as a tuple of validated parts; the empty namespace is not one."""
    if isinstance(namespace, str | tuple | list) and not namespace:
        raise ValidationError("Namespace cannot be empty")
    return _namespace(_split(namespace, "Namespace"))


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
        name = check_part(parts[0], "Table name") if parts else ""
        raise ValidationError(
            f"Table identifier {name!r} needs a namespace: write 'db.{name}'")
    return (*_namespace(parts[:-1]), check_part(parts[-1], "Table name"))


def show(identifier: Sequence[str]) -> str:
    """The dotted form used in messages."""
    return ".".join(identifier)
