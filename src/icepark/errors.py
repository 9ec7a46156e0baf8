"""Typed errors raised by icepark.

Every error a user can meet is one of these; none is a bare ``KeyError`` or ``TypeError``.
The message names the field, value or rule at fault and, where it helps, what to do instead.
"""

from __future__ import annotations


class IcebergError(Exception):
    """Base class of every error icepark raises on purpose."""


class ValidationError(IcebergError, ValueError):
    """Input (a type, schema, spec, metadata file or change) violates the Iceberg spec."""


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


class CorruptFile(IcebergError):  # noqa: N818
    """A metadata or data file cannot be decoded."""
