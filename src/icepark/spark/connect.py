"""Spark Connect sessions (``pyspark.sql.connect``): what icepark adjusts in the client.

A Connect session runs the driver's Spark work on a server; this process is its client.
icepark's metadata work (planning, commits) stays here and its data work runs in the server's
Python workers, so the catalog's properties must reach those workers through the data
source's options (as :mod:`icepark.spark.datasource.options` describes).

**Metrics in command streams.** PySpark 4.3.0's client ends a command's response stream
(``SparkConnectClient.execute_command_as_iterator``, which Spark Declarative Pipelines use for
their run events and streaming listeners use too) with ``UNKNOWN_RESPONSE`` when the server
sends execution metrics along with the results. A Python data source always causes that: its
driver-side workers send their (empty) profiler accumulators back as the observed metric
``__python_accumulator__`` (SPARK-59135, fixed upstream after 4.3.0 by letting consumers
ignore metrics). :func:`tolerate_command_metrics` makes a session's client skip metrics in
those streams, as the fixed client does, so that ``spark-pipelines run`` with an ``icepark``
sink finishes cleanly; any other unexpected response still fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_PATCHED = "_icepark_skips_metrics"


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (without importing the Connect client,
    whose gRPC dependencies a classic installation may lack)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def tolerate_command_metrics(spark: Any) -> None:
    """Make the Connect ``spark`` session's client skip metrics in command response streams
    (see the module docstring); once per client, a no-op for a classic session."""
    if not is_connect(spark):
        return
    client = spark.client
    if getattr(client, _PATCHED, False):
        return
    # the Connect client's modules need gRPC: imported only for a Connect session
    from pyspark.errors import PySparkValueError  # noqa: PLC0415
    from pyspark.sql.metrics import ObservedMetrics, PlanMetrics  # noqa: PLC0415

    def execute_command_as_iterator(command: Any, observations: Any = None
                                    ) -> Iterator[dict[str, Any]]:
        request = client._execute_plan_request_with_metadata()
        client._set_command_in_plan(request.plan, command)
        for response in client._execute_and_fetch_as_iterator(request, observations or {}):
            if isinstance(response, dict):
                yield response
            elif not isinstance(response, PlanMetrics | ObservedMetrics):
                raise PySparkValueError(errorClass="UNKNOWN_RESPONSE",
                                        messageParameters={"response": str(response)})

    client.execute_command_as_iterator = execute_command_as_iterator
    setattr(client, _PATCHED, True)


__all__ = ["is_connect", "tolerate_command_metrics"]
