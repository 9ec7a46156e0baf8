"""The Spark session of the ``icepark`` command's Spark-powered commands, and reading their
input files.

A local session (``--master``, else ``$ICEPARK_SPARK_MASTER``, else ``local[*]``) is started
per command with the Spark UI off, and stopped at its end. Unless ``--verbose``, the JVM's own
console output (its startup banner and log) goes to the null device: the JVM and the Python
workers it forks inherit file descriptors 1 and 2 as they are while it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from icepark.cli.arguments import key_values
from icepark.cli.data_inputs import DataInputs, first_file, resolve_inputs
from icepark.cli.render import Output
from icepark.io.parquet.schema import parquet_schema
from icepark.spec.schema import Schema

SparkSession = Any
"""A ``pyspark.sql.SparkSession`` (pyspark is imported only under :mod:`icepark.spark`)."""
DataFrame = Any
"""A ``pyspark.sql.DataFrame``."""

MASTER_ENV = "ICEPARK_SPARK_MASTER"
_DEFAULT_CONF = {"spark.ui.enabled": "false"}


def add_spark_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("spark")
    group.add_argument("--master", help=f"Spark master (default: ${MASTER_ENV}, else local[*])")
    group.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting (repeatable)")


@contextlib.contextmanager
def quiet_console(verbose: bool) -> Iterator[None]:
    """Point file descriptors 1 and 2 at the null device while the JVM starts, so that it
    (and the Python workers it forks) inherit them; Python's own output is restored after."""
    if verbose:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


@contextlib.contextmanager
def started_session(master: str, app_name: str, verbose: bool,
                    conf: Mapping[str, str] | None = None) -> Iterator[SparkSession]:
    """A Spark session with the UI off and the JVM's log at ``WARN`` (``verbose``) or
    ``ERROR`` (``conf`` wins), stopped afterwards; the JVM's console output while it starts and
    stops is not the command's (see :func:`quiet_console`)."""
    from icepark.spark.session import build_session  # noqa: PLC0415 - imports pyspark

    config = {**_DEFAULT_CONF, "spark.log.level": "WARN" if verbose else "ERROR",
              **(conf or {})}
    with quiet_console(verbose):
        session = build_session(master=master, app_name=app_name, config=config)
    try:
        yield session
    finally:
        with quiet_console(verbose):
            session.stop()


@contextlib.contextmanager
def spark_session(args: argparse.Namespace, out: Output) -> Iterator[SparkSession]:
    """A local (or ``--master``) Spark session for one command, stopped afterwards."""
    conf = key_values(getattr(args, "spark_conf", []), "--spark-conf")
    master = getattr(args, "master", None) or os.environ.get(MASTER_ENV) or "local[*]"
    out.progress(f"starting Spark ({master})...")
    with started_session(master, "icepark-cli", args.verbose, conf) as session:
        yield session


def read_inputs(spark: SparkSession, inputs: DataInputs, schema: Schema | None = None
                ) -> DataFrame:
    """The rows of ``inputs``: CSV (with a header row) and JSON lines with their column types
    inferred, ISO-8601 timestamps and dates included, and, for an existing table's ``schema``,
    converted to its column types (:mod:`icepark.spark.writer.text_inputs`); Parquet as it
    is."""
    from icepark.spark.session import case_sensitive  # noqa: PLC0415 - imports pyspark
    from icepark.spark.writer import text_inputs  # noqa: PLC0415

    match inputs.format:
        case "csv":
            df = text_inputs.read_csv(spark, inputs.paths)
        case "json":
            df = text_inputs.read_json(spark, inputs.paths)
        case _:
            return spark.read.parquet(*inputs.paths)
    if schema is None:
        return df
    return text_inputs.in_table_types(df, schema, case_sensitive(spark))


def infer_schema(args: argparse.Namespace, out: Output) -> Schema:
    """The schema of ``--from-file`` with fresh field IDs: a local Parquet file's own, read
    from its footer; otherwise as Spark infers it."""
    inputs = resolve_inputs([args.from_file], args.format)
    local = first_file(inputs) if inputs.format == "parquet" else None
    if local is not None:
        out.progress(f"reading the columns of {local}...")
        return parquet_schema(local)
    with spark_session(args, out) as spark:
        from icepark.spark.schema import to_iceberg  # noqa: PLC0415

        out.progress(f"reading the columns of {inputs.describe()}...")
        return to_iceberg(read_inputs(spark, inputs).schema, fresh_ids=True)


