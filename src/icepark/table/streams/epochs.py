"""Exactly-once streaming writes: which micro-batches of a streaming query a table already holds.

A streaming query writes one snapshot per micro-batch (Spark calls the batch an *epoch*). A
query that is killed after its commit but before Spark records the batch as done replays the
batch when it restarts from its checkpoint, so the commit must be idempotent. Spec,
*Snapshots*: a snapshot's ``summary`` is "A string map that summarizes the snapshot changes";
beyond ``operation`` its keys are free, so each streaming commit records the query and the batch
in it under the names the reference implementation uses (:data:`QUERY_ID_PROPERTY`,
:data:`EPOCH_ID_PROPERTY`): a query restarted by either engine recognises the other's commits.

Before committing batch ``n`` of query ``q``, the writer looks for the newest snapshot of the
branch it writes (the head and its ancestors) that ``q`` committed: if that snapshot's epoch is
``n`` or later, batch ``n`` is already in the table and is not committed again.

>>> from icepark.spec.snapshots import Snapshot, Summary, Operation
>>> from icepark.table.change.metadata_builder import MetadataBuilder
>>> from icepark.spec.schema import Schema
>>> from icepark.spec.types import LONG, NestedField
>>> md, _ = MetadataBuilder.new_table(Schema.of(NestedField.required(1, "id", LONG)), "/t")
>>> last_committed_epoch(md, "main", "q-1") is None
True
>>> epoch_properties("q-1", 7)
{'spark.sql.streaming.queryId': 'q-1', 'spark.sql.streaming.epochId': '7'}
"""

from __future__ import annotations

from icepark.spec.metadata import TableMetadata
from icepark.spec.snapshots import ancestors_of
from icepark.table.snapshot.producer import branch_head

QUERY_ID_PROPERTY = "spark.sql.streaming.queryId"
"""The snapshot summary key naming the streaming query that committed the snapshot (Spark's
``StreamingQuery.id``, kept across restarts from the same checkpoint)."""
EPOCH_ID_PROPERTY = "spark.sql.streaming.epochId"
"""The snapshot summary key naming the micro-batch (epoch) the snapshot commits."""


def epoch_properties(query_id: str, epoch_id: int) -> dict[str, str]:
    """The summary entries that mark a snapshot as batch ``epoch_id`` of ``query_id``."""
    return {QUERY_ID_PROPERTY: query_id, EPOCH_ID_PROPERTY: str(epoch_id)}


def last_committed_epoch(metadata: TableMetadata, branch: str, query_id: str) -> int | None:
    """The epoch of the newest snapshot of ``branch`` (its head and ancestors) committed by
    ``query_id``, or None when the branch holds none of its batches."""
    head = branch_head(metadata, branch)
    if head is None:
        return None
    for snapshot in ancestors_of(head.snapshot_id, metadata.snapshots_by_id):
        summary = snapshot.summary
        if summary is None or summary.properties.get(QUERY_ID_PROPERTY) != query_id:
            continue
        epoch = summary.properties.get(EPOCH_ID_PROPERTY)
        if epoch is not None and epoch.lstrip("-").isdigit():
            return int(epoch)
    return None


def committed(metadata: TableMetadata, branch: str, query_id: str, epoch_id: int) -> bool:
    """Whether batch ``epoch_id`` of ``query_id`` is already committed to ``branch``."""
    last = last_committed_epoch(metadata, branch, query_id)
    return last is not None and last >= epoch_id


__all__ = ["EPOCH_ID_PROPERTY", "QUERY_ID_PROPERTY", "committed", "epoch_properties",
           "last_committed_epoch"]
