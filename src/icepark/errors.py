"""Typed errors raised by icepark.

Every error a user can meet is one of these; none is a bare ``KeyError`` or ``TypeError``.
The message names the field, value or rule at fault and, where it helps, what to do instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Remedy:
    """What to do about an error, naming the option that does it: ``text`` with ``{}`` where
    ``option`` goes, spelled as the Python API has it (``merge_schema=True``,
    ``upgrade_format_version()``). A front end with other spellings (the CLI's flags) renders
    it with its own (:meth:`render`), so no message is rewritten.

    >>> Remedy("add them with {} or drop them", "merge_schema=True").render()
    'add them with merge_schema=True or drop them'
    >>> Remedy("add them with {}", "merge_schema=True").render({"merge_schema=True": "--x"})
    'add them with --x'
    """

    text: str
    option: str

    def render(self, spellings: Mapping[str, str] | None = None) -> str:
        """The remedy with ``option`` as ``spellings`` name it (the API's by default)."""
        return self.text.format((spellings or {}).get(self.option, self.option))


class IcebergError(Exception):
    """Base class of every error icepark raises on purpose.

    ``remedy`` (keyword only) says what to do; the message is ``<problem>; <remedy>`` in the
    API's words, and :meth:`explain` gives it in another front end's.

    >>> e = ValidationError("Column(s) 'x' are not in the table schema",
    ...                     remedy=Remedy("add them with {} or drop them", "merge_schema=True"))
    >>> str(e)
    "Column(s) 'x' are not in the table schema; add them with merge_schema=True or drop them"
    >>> e.explain({"merge_schema=True": "--merge-schema"})
    "Column(s) 'x' are not in the table schema; add them with --merge-schema or drop them"
    """

    def __init__(self, *args: object, remedy: Remedy | None = None) -> None:
        self.problem = str(args[0]) if args else ""
        self.remedy = remedy
        if remedy is not None:
            args = (f"{self.problem}; {remedy.render()}", *args[1:])
        super().__init__(*args)

    def explain(self, spellings: Mapping[str, str] | None = None) -> str:
        """The message with the remedy's option spelled as ``spellings`` name it."""
        if self.remedy is None:
            return str(self)
        return f"{self.problem}; {self.remedy.render(spellings)}"


class ValidationError(IcebergError, ValueError):
    """Input (a type, schema, spec, metadata file or change) violates the Iceberg spec."""


class IncompatibleColumn(ValidationError):  # noqa: N818 - reads as a noun, as NoSuchTable
    """A column of the data has a type the table's column cannot take: ``column`` is its
    dotted path, ``given`` and ``expected`` the two types as the raiser names them, so that an
    engine's adapter can say it again in its own type names."""

    def __init__(self, message: str, column: str, given: str, expected: str) -> None:
        super().__init__(message)
        self.column, self.given, self.expected = column, given, expected

    def __reduce__(self) -> tuple[type[IncompatibleColumn], tuple[str, str, str, str]]:
        return IncompatibleColumn, (self.problem, self.column, self.given, self.expected)


class CardinalityViolation(ValidationError):  # noqa: N818 - SQL's name for it
    """A MERGE matched one target row with more than one source row where an update or delete
    applies: which source row wins is undefined (SQL's cardinality violation). Nothing was
    written."""


class UnsupportedFeature(IcebergError):  # noqa: N818 - reads as a noun: "unsupported feature"
    """Valid Iceberg input that uses a feature icepark does not implement yet."""


class NoSuchTable(IcebergError):  # noqa: N818
    """The table does not exist in the catalog."""


class NoSuchSnapshot(ValidationError):  # noqa: N818
    """The snapshot, branch or tag a read or change names does not exist (or has expired), or
    no snapshot was current at the time it names. A ``ValidationError`` too: the input names
    something the table does not have."""


class NoSuchCatalog(IcebergError):  # noqa: N818
    """The catalog a command names does not exist (and the command does not create one)."""


class NoSuchNamespace(IcebergError):  # noqa: N818
    """The namespace does not exist in the catalog."""


class AlreadyExists(IcebergError):  # noqa: N818
    """A table, namespace or reference with that name already exists."""


class CommitFailed(IcebergError):  # noqa: N818
    """The commit lost a race or its requirements no longer hold; it may be retried."""


class CommitStateUnknown(IcebergError):  # noqa: N818
    """The commit may or may not have been applied; nothing may be cleaned up."""


class FileNotFound(IcebergError, FileNotFoundError):  # noqa: N818
    """A file that must exist (to read, or to measure) does not; the message names it."""

    def __init__(self, location: str) -> None:
        super().__init__(f"File does not exist: {location}")
        self.location = location

    def __reduce__(self) -> tuple[type[FileNotFound], tuple[str]]:
        return FileNotFound, (self.location,)


class StorageError(IcebergError, OSError):
    """A file system or object store failed an operation on a file that is not simply
    missing (:class:`FileNotFound`): access denied, a missing bucket, an endpoint that cannot
    be reached. The message names the operation, the location and the store's reason, never the
    credentials; ``location`` is the file's. An ``OSError``, as the store's own errors are,
    with their ``errno`` when they had one.

    >>> str(StorageError("read", "s3://b/k", "AWS Error ACCESS_DENIED", 13))
    'Cannot read s3://b/k: AWS Error ACCESS_DENIED'
    """

    def __init__(self, operation: str, location: str, reason: str,
                 code: int | None = None) -> None:
        super().__init__(f"Cannot {operation} {location}: {reason}")
        self.operation, self.location, self.reason = operation, location, reason
        self.errno = code

    def __str__(self) -> str:  # the message, not OSError's "[Errno n] ..."
        return str(self.args[0])

    def __reduce__(self) -> tuple[type[StorageError], tuple[str, str, str, int | None]]:
        return StorageError, (self.operation, self.location, self.reason, self.errno)


class CorruptFile(IcebergError):  # noqa: N818
    """A metadata or data file cannot be decoded."""


class CatalogUnavailable(IcebergError):  # noqa: N818
    """The catalog cannot be reached or opened (its database is down, refuses the connection
    or cannot be opened; its warehouse is not a directory one may read). Retrying once it is
    back may succeed; a commit cut off mid-swap ends in :class:`CommitStateUnknown` instead."""
