"""Planning a compaction (``rewrite_data_files``): which data files to rewrite, in which groups.

Spec, *Snapshots*: a ``replace`` operation means "Data and delete files were added and removed
without changing table data; i.e., compaction, changing the data file format, or relocating
data files". This module decides what such a rewrite reads; the Spark job
(:mod:`icepark.spark.maintenance.compaction`) writes and commits it.

The options are the reference implementation's, with its names and defaults
(:class:`RewriteOptions`):

* a data file is **selected** when its size is outside ``[min-file-size-bytes,
  max-file-size-bytes]`` (default 75% and 180% of ``target-file-size-bytes``, itself by default
  the table's ``write.target-file-size-bytes``, 512 MiB), when at least
  ``delete-file-threshold`` delete files apply to it, when its deleted rows (deletion vector
  or file-scoped position deletes) are at least ``delete-ratio-threshold`` of its rows
  (default 0.3), when it is not in the output spec (``output-spec-id``), or always with
  ``rewrite-all``;
* selected files are grouped by partition (spec and partition tuple), and each partition's
  files are packed into groups of at most ``max-file-group-size-bytes`` (default 100 GiB);
* a group is **rewritten** when it has at least ``min-input-files`` files (default 5) and more
  than one, when it holds more than one file and more than a target file's bytes, when it holds
  more than ``max-file-group-size-bytes``, when any of its files has too many deletes, when it
  is not in the output spec, or with ``rewrite-all``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icepark.errors import ValidationError
from icepark.spec.manifest import DataFile
from icepark.spec.metadata import TableMetadata
from icepark.table.scan.tasks import FileScanTask

TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
DEFAULT_MAX_GROUP_SIZE = 100 * 1024 * 1024 * 1024

_INT_OPTIONS = ("target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes",
                "min-input-files", "max-file-group-size-bytes",
                "max-concurrent-file-group-rewrites", "partial-progress.max-commits",
                "partial-progress.max-failed-commits", "delete-file-threshold",
                "output-spec-id", "shuffle-partitions-per-file")
_BOOL_OPTIONS = ("rewrite-all", "partial-progress.enabled", "remove-dangling-deletes",
                 "use-starting-sequence-number")
_FLOAT_OPTIONS = ("delete-ratio-threshold",)
OPTION_NAMES = frozenset((*_INT_OPTIONS, *_BOOL_OPTIONS, *_FLOAT_OPTIONS))
"""Every option :func:`RewriteOptions.parse` accepts."""


@dataclass(frozen=True, slots=True)
class RewriteOptions:
    """The options of a compaction, resolved against the table (see the module docstring)."""

    target_file_size: int
    min_file_size: int
    max_file_size: int
    min_input_files: int = 5
    rewrite_all: bool = False
    max_group_size: int = DEFAULT_MAX_GROUP_SIZE
    max_concurrent_groups: int = 5
    partial_progress: bool = False
    max_commits: int = 10
    max_failed_commits: int | None = None
    """Commits that may fail under partial progress before the rewrite fails; None: as many
    as ``max_commits``."""
    delete_file_threshold: int = 2**31 - 1
    delete_ratio_threshold: float = 0.3
    remove_dangling_deletes: bool = False
    use_starting_sequence_number: bool = True
    output_spec_id: int = 0
    shuffle_partitions_per_file: int = 1

    @classmethod
    def parse(cls, options: Mapping[str, str] | None, metadata: TableMetadata
              ) -> RewriteOptions:
        """The options given as strings (the reference's names), checked, with defaults from
        ``metadata``. An unknown name or a bad value is a :class:`ValidationError`."""
        given = dict(options or {})
        unknown = sorted(set(given) - OPTION_NAMES)
        if unknown:
            raise ValidationError(
                f"Unknown rewrite_data_files option(s) {unknown}; the options are "
                f"{sorted(OPTION_NAMES)}")
        values: dict[str, Any] = {}
        for name, text in given.items():
            values[name] = _parse_value(name, str(text))
        target = values.get("target-file-size-bytes", _table_target(metadata))
        minimum = values.get("min-file-size-bytes", int(target * 0.75))
        maximum = values.get("max-file-size-bytes", int(target * 1.8))
        resolved = cls(
            target_file_size=target, min_file_size=minimum, max_file_size=maximum,
            min_input_files=values.get("min-input-files", 5),
            rewrite_all=values.get("rewrite-all", False),
            max_group_size=values.get("max-file-group-size-bytes", DEFAULT_MAX_GROUP_SIZE),
            max_concurrent_groups=values.get("max-concurrent-file-group-rewrites", 5),
            partial_progress=values.get("partial-progress.enabled", False),
            max_commits=values.get("partial-progress.max-commits", 10),
            max_failed_commits=values.get("partial-progress.max-failed-commits"),
            delete_file_threshold=values.get("delete-file-threshold", 2**31 - 1),
            delete_ratio_threshold=values.get("delete-ratio-threshold", 0.3),
            remove_dangling_deletes=values.get("remove-dangling-deletes", False),
            use_starting_sequence_number=values.get("use-starting-sequence-number", True),
            output_spec_id=values.get("output-spec-id", metadata.default_spec_id),
            shuffle_partitions_per_file=values.get("shuffle-partitions-per-file", 1))
        resolved.check(metadata)
        return resolved

    def check(self, metadata: TableMetadata) -> None:
        positive = {"target-file-size-bytes": self.target_file_size,
                    "min-input-files": self.min_input_files,
                    "max-file-group-size-bytes": self.max_group_size,
                    "max-concurrent-file-group-rewrites": self.max_concurrent_groups,
                    "partial-progress.max-commits": self.max_commits,
                    "delete-file-threshold": self.delete_file_threshold,
                    "shuffle-partitions-per-file": self.shuffle_partitions_per_file}
        for name, value in positive.items():
            if value < 1:
                raise ValidationError(f"rewrite_data_files option {name} must be positive, "
                                      f"not {value}")
        if not 0 <= self.min_file_size <= self.target_file_size <= self.max_file_size:
            raise ValidationError(
                "rewrite_data_files needs min-file-size-bytes <= target-file-size-bytes <= "
                f"max-file-size-bytes, not {self.min_file_size}, {self.target_file_size} and "
                f"{self.max_file_size}")
        if not 0.0 < self.delete_ratio_threshold <= 1.0:
            raise ValidationError(
                f"rewrite_data_files option delete-ratio-threshold must be in (0, 1], not "
                f"{self.delete_ratio_threshold}")
        if self.max_failed_commits is not None and self.max_failed_commits < 0:
            raise ValidationError("rewrite_data_files option "
                                  "partial-progress.max-failed-commits must not be negative")
        if self.output_spec_id not in {s.spec_id for s in metadata.partition_specs}:
            raise ValidationError(
                f"rewrite_data_files option output-spec-id {self.output_spec_id} is not a "
                f"partition spec of the table (specs: "
                f"{sorted(s.spec_id for s in metadata.partition_specs)})")


def _table_target(metadata: TableMetadata) -> int:
    text = metadata.properties.get(TARGET_FILE_SIZE_PROPERTY)
    if text is None:
        return DEFAULT_TARGET_FILE_SIZE
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"Table property {TARGET_FILE_SIZE_PROPERTY} is not a number: "
                              f"{text!r}") from None


def _parse_value(name: str, text: str) -> int | bool | float:
    if name in _BOOL_OPTIONS:
        lowered = text.strip().lower()
        if lowered not in {"true", "false"}:
            raise ValidationError(f"rewrite_data_files option {name} must be true or false, "
                                  f"not {text!r}")
        return lowered == "true"
    try:
        return float(text) if name in _FLOAT_OPTIONS else int(text)
    except ValueError:
        kind = "a number" if name in _FLOAT_OPTIONS else "an integer"
        raise ValidationError(f"rewrite_data_files option {name} must be {kind}, not "
                              f"{text!r}") from None


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Data files of one partition rewritten together, by one Spark job."""

    spec_id: int
    partition: tuple[Any, ...]
    tasks: tuple[FileScanTask, ...]
    """The files' scan tasks, with the delete files that apply to them."""

    @property
    def files(self) -> list[DataFile]:
        return [t.data_file for t in self.tasks]

    @property
    def size_in_bytes(self) -> int:
        return sum(t.data_file.file_size_in_bytes for t in self.tasks)

    @property
    def record_count(self) -> int:
        return sum(t.data_file.record_count for t in self.tasks)

    def output_files(self, target_file_size: int) -> int:
        """How many files the group is expected to become: its bytes over the target, at
        least one (the reference's estimate)."""
        return max(1, -(-self.size_in_bytes // target_file_size))


def whole_files(tasks: Iterable[FileScanTask]) -> list[FileScanTask]:
    """One task per data file (a split file's tasks are one rewrite input), in path order."""
    by_path: dict[str, FileScanTask] = {}
    for task in tasks:
        by_path.setdefault(task.data_file.file_path, task)
    return [by_path[p] for p in sorted(by_path)]


def deleted_ratio(task: FileScanTask) -> float:
    """The share of a data file's rows that its deletion vector or its file-scoped position
    delete files delete (their record counts: a deletion vector's is its cardinality)."""
    path = task.data_file.file_path
    deleted = sum(d.record_count for d in task.delete_files
                  if d.referenced_data_file == path)
    return deleted / task.data_file.record_count if task.data_file.record_count else 0.0


def plan_groups(tasks: Iterable[FileScanTask], options: RewriteOptions) -> list[FileGroup]:
    """The groups to rewrite among ``tasks`` (the planned files; see the module docstring),
    largest partition first."""
    selected: dict[tuple[int, tuple[Any, ...]], list[FileScanTask]] = {}
    for task in whole_files(tasks):
        if _selected(task, options):
            key = (task.spec_id, task.data_file.partition)
            selected.setdefault(key, []).append(task)
    groups = [FileGroup(spec_id, partition, tuple(chunk))
              for (spec_id, partition), found in selected.items()
              for chunk in _pack(found, options.max_group_size)]
    groups = [g for g in groups if _worth_rewriting(g, options)]
    return sorted(groups, key=lambda g: -g.size_in_bytes)


def _too_many_deletes(task: FileScanTask, options: RewriteOptions) -> bool:
    return (len(task.delete_files) >= options.delete_file_threshold
            or (bool(task.delete_files)
                and deleted_ratio(task) >= options.delete_ratio_threshold))


def _selected(task: FileScanTask, options: RewriteOptions) -> bool:
    size = task.data_file.file_size_in_bytes
    return (options.rewrite_all or task.spec_id != options.output_spec_id
            or not options.min_file_size <= size <= options.max_file_size
            or _too_many_deletes(task, options))


def _pack(tasks: Sequence[FileScanTask], limit: int) -> list[list[FileScanTask]]:
    """First-fit decreasing by size into bins of at most ``limit`` bytes (a file larger than
    the limit gets a bin of its own)."""
    bins: list[tuple[int, list[FileScanTask]]] = []
    for task in sorted(tasks, key=lambda t: -t.data_file.file_size_in_bytes):
        size = task.data_file.file_size_in_bytes
        for i, (used, members) in enumerate(bins):
            if used + size <= limit:
                members.append(task)
                bins[i] = (used + size, members)
                break
        else:
            bins.append((size, [task]))
    return [sorted(members, key=lambda t: t.data_file.file_path) for _, members in bins]


def _worth_rewriting(group: FileGroup, options: RewriteOptions) -> bool:
    count = len(group.tasks)
    return (options.rewrite_all
            or group.spec_id != options.output_spec_id
            or (count > 1 and count >= options.min_input_files)
            or (count > 1 and group.size_in_bytes > options.target_file_size)
            or group.size_in_bytes > options.max_group_size
            or any(_too_many_deletes(t, options) for t in group.tasks))


def commit_batches(groups: Sequence[FileGroup], options: RewriteOptions
                   ) -> list[list[FileGroup]]:
    """The groups of each commit: all in one without partial progress, else spread evenly
    over at most ``partial-progress.max-commits`` commits."""
    if not groups:
        return []
    if not options.partial_progress:
        return [list(groups)]
    per_commit = -(-len(groups) // options.max_commits)
    return [list(groups[i:i + per_commit]) for i in range(0, len(groups), per_commit)]


__all__ = ["OPTION_NAMES", "FileGroup", "RewriteOptions", "commit_batches", "deleted_ratio",
           "plan_groups", "whole_files"]
