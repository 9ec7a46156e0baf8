"""Which files an import takes: Parquet files given one by one, or found under a directory.

A directory is listed recursively as Spark lists a table directory: names starting with ``_``
or ``.`` (``_SUCCESS``, ``.crc`` checksums, ``_temporary``) are skipped, files and directories
alike, and only files named ``*.parquet`` are taken. A file's partition directories are the
Hive-style ``key=value`` directories it sits in: those below the directory it was found in and
the ``key=value`` directories directly above that one (so ``events/dt=2024-03-01/`` given alone
still says ``dt``), or, for a file given by itself, those directly above it. Keys and values
are unescaped as Hive escapes them (``%XX``).

Local paths (also ``file:`` URIs) are made absolute, so one file always has one spelling in the
table; other URIs are kept as given.

>>> hive_directories(["dt=2024-03-01", "kind=a%2Fb"])
(('dt', '2024-03-01'), ('kind', 'a/b'))
>>> hive_directories(["2024", "dt=2024-03-01"], trailing=True)
(('dt', '2024-03-01'),)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from icepark.errors import FileNotFound, ValidationError
from icepark.io.fileio import FileIO

PARQUET_SUFFIX = ".parquet"


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to import: its location, its size if listed, and its Hive partition directories
    as (key, value) pairs, outermost first."""

    location: str
    size: int | None
    directories: tuple[tuple[str, str], ...] = ()

    def directory(self, key: str) -> str | None:
        """The value of the ``key=value`` directory the file is in, or None."""
        for k, v in self.directories:
            if k == key:
                return v
        return None


def normalize(location: str) -> str:
    """One spelling per file: local paths and ``file:`` URIs as absolute paths.

    >>> normalize("file:///tmp/x/../a.parquet"), normalize("s3://b/a.parquet")
    ('/tmp/a.parquet', 's3://b/a.parquet')
    """
    parts = urlsplit(location)
    scheme = parts.scheme.lower()
    if len(scheme) <= 1:
        return os.path.abspath(location)
    if scheme == "file":
        return os.path.abspath(unquote(parts.path) or "/")
    return location


def hive_directories(segments: Sequence[str], *,
                     trailing: bool = False) -> tuple[tuple[str, str], ...]:
    """The ``key=value`` directories among ``segments`` (only the run ending at the last
    segment when ``trailing``), unescaped."""
    if trailing:
        run: list[str] = []
        for segment in reversed(segments):
            if "=" not in segment:
                break
            run.insert(0, segment)
        segments = run
    found = []
    for segment in segments:
        key, sep, value = segment.partition("=")
        if sep and key:
            try:
                found.append((unquote(key, errors="strict"), unquote(value, errors="strict")))
            except UnicodeDecodeError:
                raise ValidationError(f"Directory name {segment!r} is not escaped UTF-8 text"
                                      ) from None
    return tuple(found)


def _hidden(segment: str) -> bool:
    return segment.startswith(("_", "."))


def find_files(file_io: FileIO, source: str | Sequence[str],
               partition_filter: Mapping[str, str] | None = None) -> list[SourceFile]:
    """The files ``source`` names (see the module docstring), those in partition directories
    that ``partition_filter`` (``{"dt": "2024-03-01"}``) names only, in order.

    A missing path raises :class:`~icepark.errors.FileNotFound`; nothing found, or one file
    found twice, a :class:`ValidationError`.
    """
    given = [source] if isinstance(source, str) else list(source)
    if not given:
        raise ValidationError("No files to add: give Parquet files or a directory of them")
    found: list[SourceFile] = []
    for path in given:
        found.extend(_files_at(file_io, normalize(path), path))
    seen: set[str] = set()
    for f in found:
        if f.location in seen:
            raise ValidationError(f"File {f.location} is given more than once")
        seen.add(f.location)
    if partition_filter:
        wanted = dict(partition_filter)
        found = [f for f in found if all(f.directory(k) == v for k, v in wanted.items())]
        if not found:
            shown = ", ".join(f"{k}={v}" for k, v in wanted.items())
            raise ValidationError(f"No file in {', '.join(given)} is in a partition directory "
                                  f"matching the partition filter {shown}")
    return found


def _files_at(file_io: FileIO, location: str, given: str) -> list[SourceFile]:
    try:
        listed = list(file_io.list_prefix(location))
    except NotADirectoryError:
        listed = []
    if not listed:
        if not file_io.exists(location):
            raise FileNotFound(given)
        if _is_empty_directory(location):
            raise ValidationError(f"Directory {given} holds no Parquet files")
        *parents, _ = location.rstrip("/").split("/")
        return [SourceFile(location, None, hive_directories(parents, trailing=True))]
    root = location.rstrip("/")
    above = hive_directories(root.split("/"), trailing=True)
    files = []
    for info in listed:
        *directories, name = info.location[len(root) + 1:].split("/")
        if any(_hidden(s) for s in (*directories, name)) or not name.endswith(PARQUET_SUFFIX):
            continue
        files.append(SourceFile(info.location, info.size,
                                above + hive_directories(directories)))
    if not files:
        raise ValidationError(f"Directory {given} holds no Parquet files (*{PARQUET_SUFFIX}, "
                              "not starting with '_' or '.')")
    return files


def _is_empty_directory(location: str) -> bool:
    return "://" not in location and os.path.isdir(location)
