"""Exactly-once writes from ``foreachBatch``: ``ips.foreach_batch_writer(table)``.

>>> # (df.writeStream.foreachBatch(ips.foreach_batch_writer("db.events"))
>>> #    .option("checkpointLocation", ckpt).start())

Spark runs the function once per micro-batch with the batch's DataFrame and ID, and again for
the same ID when a restarted query replays a batch it had not recorded as done. The writer
commits each batch as one snapshot (:func:`icepark.spark.writer.write.write`) whose summary
names the query and the batch (:mod:`icepark.table.streams.epochs`), and skips a batch the
table already holds: every row lands exactly once. The query's ID is the Spark local property
``sql.streaming.queryId`` that Spark sets while it runs the function; where that is not
visible (a Spark Connect client) pass ``query_id``, a name that stays the same across
restarts of the query.

Spark Connect runs the function on the server, in a process that knows nothing of this one:
give ``table`` as a :class:`~icepark.table.table.Table` (it is pickled with its catalog's
name and properties and reconnects there), not as an identifier, which would resolve in the
server's default catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame

from icepark.errors import ValidationError
from icepark.spark.datasource.stream_writer import QUERY_ID_KEY
from icepark.spark.tables import TableLike, resolve
from icepark.spark.writer.write import MODES, write
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.streams.epochs import committed, epoch_properties
from icepark.table.table import Table


def foreach_batch_writer(table: TableLike, *, mode: str = "append", branch: str = MAIN_BRANCH,
                         snapshot_properties: Mapping[str, str] | None = None,
                         query_id: str | None = None) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function writing each micro-batch to ``table`` exactly once, with
    ``mode`` as :func:`icepark.spark.write` takes it (``append``, ``overwrite``,
    ``dynamic``)."""
    if mode not in MODES:
        raise ValidationError(f"Unknown write mode {mode!r}: use one of {', '.join(MODES)}")
    extra = dict(snapshot_properties or {})

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        target = table.refresh() if isinstance(table, Table) else resolve(spark, table)
        query = query_id or _running_query(spark)
        if committed(target.metadata, branch, query, batch_id):
            return
        write(batch, target, mode, branch=branch,
              snapshot_properties={**extra, **epoch_properties(query, batch_id)})

    return write_batch


def _running_query(spark: Any) -> str:
    try:
        found = spark.sparkContext.getLocalProperty(QUERY_ID_KEY)
    except Exception:  # Spark Connect: no SparkContext
        found = None
    if not found:
        raise ValidationError(
            "foreach_batch_writer cannot see the streaming query's ID (it runs outside the "
            "query's thread, e.g. from a Spark Connect client): pass query_id='<a name that "
            "stays the same across restarts>'")
    return str(found)


__all__ = ["foreach_batch_writer"]
