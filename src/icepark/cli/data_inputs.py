"""The data files ``ingest`` and ``create --from-file`` read: paths checked and a format picked
before Spark starts, so a typo fails in a moment rather than after the JVM is up.

>>> format_of("events/2024-03-01.csv.gz"), format_of("x.jsonl"), format_of("part-0.parquet")
('csv', 'json', 'parquet')
>>> format_of("notes.txt") is None
True
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from icepark.errors import FileNotFound, ValidationError

FORMATS = ("csv", "json", "parquet")
_EXTENSIONS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json",
               ".parquet": "parquet", ".parq": "parquet"}
_COMPRESSION = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd")


def format_of(path: str) -> str | None:
    """The data format a file name's extension names (compression suffixes are skipped)."""
    name = path.lower()
    for suffix in _COMPRESSION:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return _EXTENSIONS.get(os.path.splitext(name)[1])


def _is_uri(path: str) -> bool:
    return "://" in path or path.startswith("file:")


def _data_files(folder: Path) -> Iterator[Path]:
    """Files under ``folder`` that Spark reads: not hidden, not ``_SUCCESS``-style markers."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in names:
            if not name.startswith((".", "_")):
                yield Path(root) / name


@dataclass(frozen=True, slots=True)
class DataInputs:
    """Input paths for Spark (absolute, or URIs as given), their format and how many files
    they hold (None when unknown, for URIs)."""

    paths: tuple[str, ...]
    format: str
    file_count: int | None

    def describe(self) -> str:
        if self.file_count is None:
            return f"{len(self.paths)} {self.format} location{'s' * (len(self.paths) != 1)}"
        return f"{self.file_count} {self.format} file{'s' * (self.file_count != 1)}"


def resolve_inputs(paths: Sequence[str], fmt: str | None) -> DataInputs:
    """Check that local ``paths`` exist and pick the format: ``fmt``, else the one format the
    file extensions name. A missing path raises :class:`~icepark.errors.FileNotFound`."""
    resolved: list[str] = []
    formats: set[str] = set()
    unknown: list[str] = []
    file_count: int | None = 0
    for given in paths:
        if _is_uri(given):
            resolved.append(given)
            file_count = None
            if (found := format_of(given)) is not None:
                formats.add(found)
            continue
        path = Path(given)
        if not path.exists():
            raise FileNotFound(given)
        members = list(_data_files(path)) if path.is_dir() else [path]
        if not members:
            raise ValidationError(f"Input folder {given} holds no data files")
        for member in members:
            found = format_of(member.name)
            if found is None:
                unknown.append(str(member))
            else:
                formats.add(found)
        if file_count is not None:
            file_count += len(members)
        resolved.append(str(path.resolve()))
    if fmt is None:
        if len(formats) != 1 or unknown:
            seen = ", ".join(sorted(formats)) or "none"
            example = f" (e.g. {unknown[0]})" if unknown else ""
            raise ValidationError(
                f"Cannot tell the input format from the file names (formats seen: {seen}"
                f"{', and files without a known extension' + example if unknown else ''}): "
                f"pass --format {'|'.join(FORMATS)}")
        fmt = formats.pop()
    return DataInputs(tuple(resolved), fmt, file_count)


def first_file(inputs: DataInputs) -> str | None:
    """The first local data file of ``inputs`` (by name), None for URIs."""
    first = inputs.paths[0]
    if _is_uri(first):
        return None
    path = Path(first)
    return str(min(_data_files(path))) if path.is_dir() else first
