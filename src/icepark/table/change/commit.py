"""Committing changes: the catalog contract, retry policy, and retry by replaying intent.

Spec, *Commit Conflict Resolution and Retry*: "When two commits happen at the same time and are
based on the same version, only one commit will succeed. In most cases, the failed commit can be
applied to the new current version of table metadata and retried. Updates verify the conditions
under which they can be applied to a new version and retry if those conditions are met."

A :class:`Change` recomputes its requirements and updates from whatever table version it is
given, so a retry re-runs the action (and its validation) on the refreshed table instead of
re-sending stale updates. The catalog (:class:`TableCommitter`) checks the requirements,
builds the new metadata and swaps the pointer atomically.

Writers of one table take turns through the catalog's commit lock
(:meth:`TableCommitter.commit_lock`, see :mod:`icepark.catalog.locks`): holding it, a writer
refreshes, applies its change and swaps, so it meets a conflict only when a writer that does not
take the lock (another engine) commits at the same moment. The retries below are for those.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from icepark.errors import CommitFailed, CommitStateUnknown
from icepark.spec.metadata import TableMetadata
from icepark.spec.properties import int_property
from icepark.table.change.updates import TableRequirement, TableUpdate

Identifier = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommitResult:
    """A committed table version: its metadata and the file that holds it."""

    metadata: TableMetadata
    metadata_location: str


class TableCommitter(Protocol):
    """What a table needs from its catalog."""

    def load_metadata(self, identifier: Identifier) -> CommitResult:
        """The table's current version."""
        ...

    def commit_table(self, identifier: Identifier, requirements: Sequence[TableRequirement],
                     updates: Sequence[TableUpdate]) -> CommitResult:
        """Check ``requirements`` against the current version, apply ``updates`` and swap the
        pointer atomically. Raises :class:`CommitFailed` when a requirement fails or another
        writer won the swap (nothing was changed; retryable) and :class:`CommitStateUnknown`
        when the outcome cannot be known (nothing may be cleaned up)."""
        ...

    def commit_lock(self, identifier: Identifier) -> AbstractContextManager[bool]:
        """Hold the table's commit lock for the ``with`` block, which gets whether it is held
        (False: no lock here, or it was not free in time; the commit goes ahead
        optimistically)."""
        ...


class Change(Protocol):
    """An action that can be (re)applied to any version of the table."""

    def changes(self, base: TableMetadata) -> tuple[list[TableRequirement], list[TableUpdate]]:
        """The requirements and updates that apply this action to ``base``; raises
        :class:`ValidationError` when the action is no longer valid there."""
        ...

    def clean_up(self, committed: bool) -> None:
        """Delete the files written by attempts that are not part of the committed version
        (all of them when ``committed`` is False)."""
        ...


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``commit.retry.*`` table properties, with the reference implementation's defaults."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> RetryPolicy:
        """Read ``commit.retry.num-retries``, ``min-wait-ms``, ``max-wait-ms`` and
        ``total-timeout-ms``.

        >>> RetryPolicy.from_properties({"commit.retry.num-retries": "2"}).num_retries
        2
        """
        defaults = RetryPolicy()

        def read(key: str, default: int) -> int:
            return int_property(properties, f"commit.retry.{key}", default, minimum=0)

        return RetryPolicy(read("num-retries", defaults.num_retries),
                           read("min-wait-ms", defaults.min_wait_ms),
                           read("max-wait-ms", defaults.max_wait_ms),
                           read("total-timeout-ms", defaults.total_timeout_ms))

    def waits_ms(self) -> Iterator[float]:
        """Jittered exponential backoff: up to ``num_retries`` waits, each at most
        ``max_wait_ms`` and together within ``total_timeout_ms``."""
        spent = 0.0
        for attempt in range(self.num_retries):
            ceiling = min(self.max_wait_ms, self.min_wait_ms * 2**attempt)
            wait = random.uniform(ceiling / 2, ceiling)
            if spent + wait > self.total_timeout_ms:
                return
            spent += wait
            yield wait


def commit_with_retry(committer: TableCommitter, identifier: Identifier, base: CommitResult,
                      change: Change, policy: RetryPolicy | None = None) -> CommitResult:
    """Apply ``change`` to the current table and commit, holding the table's commit lock, and
    replay it on the refreshed table after each conflict.

    Holding the lock, the change is applied to the table's current version, reloaded under the
    lock; without it, to ``base`` first. On a known failure (validation or
    requirement errors, retries exhausted) the files every attempt wrote are deleted; on
    :class:`CommitStateUnknown` nothing is deleted, since the commit may have succeeded and
    the files may now be part of the table.
    """
    policy = policy or RetryPolicy.from_properties(base.metadata.properties)
    try:
        with committer.commit_lock(identifier) as locked:
            current = committer.load_metadata(identifier) if locked else base
            result = _attempt(committer, identifier, current, change, policy)
    except CommitStateUnknown:
        raise
    except BaseException:
        change.clean_up(committed=False)
        raise
    change.clean_up(committed=True)
    return result


def _attempt(committer: TableCommitter, identifier: Identifier, current: CommitResult,
             change: Change, policy: RetryPolicy) -> CommitResult:
    waits = policy.waits_ms()
    while True:
        try:
            requirements, updates = change.changes(current.metadata)
            return committer.commit_table(identifier, requirements, updates)
        except CommitFailed:
            wait = next(waits, None)
            if wait is None:
                raise
            time.sleep(wait / 1000)
            current = committer.load_metadata(identifier)
