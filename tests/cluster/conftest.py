"""One standalone Spark cluster for the run (:mod:`tools.cluster`): a master and two workers
started from the pyspark package's own ``bin/spark-class`` on 127.0.0.1, each worker with one
core, modest memory and a work directory of its own, and stopped at the end (their process
groups killed, their work directories removed), whatever the tests did.

Nothing is installed on the workers but the Python package: their Python workers run this
interpreter (``PYSPARK_PYTHON``), whose environment has icepark installed, and no
``PYTHONPATH`` points at the sources. A driver runs in a process of its own (see
``cluster_driver.py``): a JVM holds one SparkContext, and the test processes hold a
``local[2]`` one. An S3 API endpoint (:mod:`tools.s3_server`) serves the driver's S3 table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tools.cluster import Cluster, standalone_cluster
from tools.s3_server import S3Server, s3_server

WORKERS = 2


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Server]:
    """An S3 API endpoint (:mod:`tools.s3_server`) for the run."""
    with s3_server() as server:
        yield server


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The run's cluster (:func:`tools.cluster.standalone_cluster`)."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster"), WORKERS) as cluster:
        yield cluster
