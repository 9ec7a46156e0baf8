"""The ``icepark`` data source reader: ``spark.read.format("icepark").load("db.events")``.

>>> # (spark.read.format("icepark").option("catalog.uri", "sqlite:///c.db")
>>> #    .option("tag", "v1").load("db.events").where("kind = 'click'"))

This is the portable reader: it needs nothing but the Python data source API, and it returns
exactly the rows of the icepark Arrow reader (:class:`~icepark.io.arrow.reader.ArrowReader`,
the reference semantics: position and equality deletes, defaults, name mapping, residuals) for
the same plan. The Python data source API has no column pruning, so every column of every
planned file is read and sent to Spark; a query needing few columns is several times faster
through :func:`icepark.spark.reader.read.read`, the fast path, which plans with icepark and reads
with
Spark's own Parquet reader.

Options (:class:`~icepark.spark.datasource.options.ReadOptions`): the catalog options the writer
takes; at most one of ``snapshot-id``, ``as-of-timestamp`` (ms), ``branch`` and ``tag``;
``split-size``, ``lookback``, ``file-open-cost``. A time-travel read (snapshot ID, timestamp
or tag) has that snapshot's schema (spec, *Snapshots*: ``schema-id`` is the "ID of the table's
current schema when the snapshot was created"); a branch read the table's current one, as the
reference implementation does (:mod:`icepark.table.scan.scan`).

Planning runs once, on the driver: Spark's filters are translated where that is exact
(:mod:`icepark.spark.datasource.filters`) and ANDed into the scan's row filter, which prunes
manifests and files; the scan's bin-packed :class:`~icepark.table.scan.tasks.CombinedScanTask` s
become the Spark partitions (:class:`ScanPartition`), each with the plain values an executor
needs (:class:`ReadContext`). Each executor task reads its bin with the Arrow reader, which
applies the deletes, the row filter and the residuals exactly, and converts the batches to the
Arrow form of the table's Spark schema (:func:`~icepark.spark.arrow_layout.spark_batch`: uuid as
its canonical string, fixed as binary, Spark's names for list and map children). The same
conversion serves ``ips.read`` where Spark cannot open the files
(:mod:`icepark.spark.reader.arrow_rows`).

The v3 types (:mod:`icepark.spark.schema`): nanosecond timestamps are returned as the option
``timestamp-ns`` says (``error``, the default, refuses a table that has one, ``micros`` gives
Spark timestamps truncated toward negative infinity, ``nanos`` exact ``LongType``
nanoseconds); the filters the Arrow reader applies see the exact values either way.
``unknown`` is ``NullType``, ``variant`` ``VariantType`` (PySpark's Arrow form:
``struct<value, metadata>``, the metadata marked), ``geometry``/``geography`` Spark's spatial
types (``struct<srid, wkb>``) or WKB binary.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T  # noqa: N812
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition

from icepark.catalog import BaseCatalog
from icepark.errors import ValidationError
from icepark.expressions import ALWAYS_TRUE, Expr, and_
from icepark.io.arrow.name_mapping import NAME_MAPPING_PROPERTY, parse_name_mapping
from icepark.io.arrow.reader import ArrowReader
from icepark.io.fileio import ArrowFileIO
from icepark.spark.arrow_layout import arrow_schema, spark_batch
from icepark.spark.datasource.filters import translate
from icepark.spark.datasource.options import ReadOptions
from icepark.spark.nanos import ReadMode, check_readable
from icepark.spark.schema import to_spark
from icepark.spec.partitioning import PartitionSpec
from icepark.spec.schema import Schema
from icepark.table.scan.read import DataScan
from icepark.table.scan.tasks import CombinedScanTask

_CATALOG_ONLY = frozenset({"uri"})  # a catalog database URL (maybe with a password): no FileIO use


@dataclass(frozen=True, slots=True)
class ReadContext:
    """What an executor needs to read any task of one scan: plain, picklable values. The
    FileIO properties may hold credentials: they are kept out of ``repr``."""

    io_properties: Mapping[str, str] = field(repr=False)
    schema: Schema
    row_filter: Expr
    partition_specs: tuple[PartitionSpec, ...]
    name_mapping: str | None = None
    case_sensitive: bool = True

    def reader(self) -> ArrowReader:
        """The Arrow reader of this scan (all columns, the row filter, the name mapping)."""
        mapping = None if self.name_mapping is None else parse_name_mapping(self.name_mapping)
        return ArrowReader(ArrowFileIO(self.io_properties), self.schema,
                           row_filter=self.row_filter, case_sensitive=self.case_sensitive,
                           name_mapping=mapping,
                           partition_specs={s.spec_id: s for s in self.partition_specs})


class ScanPartition(InputPartition):
    """One Spark partition: a bin of planned file scan tasks and the scan's context."""

    def __init__(self, context: ReadContext, task: CombinedScanTask) -> None:
        super().__init__(None)
        self.context = context
        self.task = task

    def __repr__(self) -> str:  # InputPartition's shows every attribute
        paths = ", ".join(t.file_path for t in self.task.tasks)
        return f"ScanPartition({len(self.task.tasks)} task(s): {paths})"


def open_scan(options: ReadOptions) -> tuple[DataScan, dict[str, str]]:
    """The scan the options choose, and the FileIO properties of its catalog.

    Raises ``NoSuchTable`` for an unknown table and ``ValidationError`` for an unknown
    snapshot, timestamp, branch or tag, or a ``branch`` that is a tag (and the reverse).
    """
    catalog = options.catalog.load()
    table = options.catalog.table_in(catalog)
    ref = options.branch if options.branch is not None else options.tag
    found = None if ref is None else table.metadata.refs.get(ref)
    if found is not None and found.is_branch != (options.branch is not None):
        kind, other = ("branch", "tag") if found.is_branch else ("tag", "branch")
        raise ValidationError(f"{ref!r} is a {kind}, not a {other}: read it with "
                              f"option('{kind}', {ref!r})")
    scan = table.scan(snapshot_id=options.snapshot_id, ref=ref,
                      as_of_timestamp=options.as_of_timestamp, options=options.scan_options)
    return scan, io_properties(catalog)


def io_properties(catalog: BaseCatalog) -> dict[str, str]:
    """The properties an executor's FileIO needs from ``catalog``: all but the catalog
    database URL, which may hold a password and no FileIO uses."""
    return {k: v for k, v in catalog.properties.items() if k not in _CATALOG_ONLY}


def spark_schema(scan: DataScan, timestamp_ns: ReadMode = "error",
                 table: str = "the table") -> T.StructType:
    """The DataFrame schema of a scan: its schema in the table layout of
    :func:`icepark.spark.schema.to_spark` (field IDs in the metadata), nanosecond timestamps
    as ``timestamp_ns`` says (``error``: a ``table`` with one is refused)."""
    schema = scan.schema()
    check_readable(schema, timestamp_ns, table)
    return to_spark(schema, timestamp_ns="micros" if timestamp_ns == "micros" else "nanos")


class IcebergReader(DataSourceReader):
    """Plans on the driver (:meth:`pushFilters`, :meth:`partitions`), reads on executors."""

    def __init__(self, options: ReadOptions, schema: T.StructType) -> None:
        self.options = options
        scan, self.io_properties = open_scan(options)
        expected = spark_schema(scan, options.timestamp_ns, options.catalog.table)
        if not arrow_schema(schema).equals(arrow_schema(expected)):
            raise ValidationError(
                f"The icepark source reads {options.catalog.table} as {expected.simpleString()},"
                f" not {schema.simpleString()}: do not give a schema, and if the table changed "
                "while the read was planned, run it again")
        self.schema = schema
        self.row_filter: Expr = ALWAYS_TRUE
        self._scan: DataScan | None = scan

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_scan"] = None  # metadata and FileIO stay on the driver
        return state

    def scan(self) -> DataScan:
        """The scan of the options with the pushed filters."""
        if self._scan is None:
            self._scan, _ = open_scan(self.options)
        return self._scan.filter(self.row_filter)

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:  # noqa: N802 - PySpark's name
        """Push every filter that translates exactly; return the others for Spark."""
        self.row_filter = ALWAYS_TRUE  # a reader Spark reuses must not keep a query's filters
        schema = self.scan().schema()
        rest = []
        pushed: Expr = ALWAYS_TRUE
        for f in filters:
            expr = translate(f, schema)
            if expr is None:
                rest.append(f)
            else:
                pushed = and_(pushed, expr)
        self.row_filter = pushed
        return rest

    def partitions(self) -> list[InputPartition]:
        scan = self.scan()
        metadata = scan.metadata
        context = ReadContext(self.io_properties, scan.schema(), scan.row_filter,
                              tuple(metadata.partition_specs),
                              metadata.properties.get(NAME_MAPPING_PROPERTY),
                              scan.case_sensitive)
        return [ScanPartition(context, task) for task in scan.plan_tasks()]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ScanPartition):  # Spark's one partition of an empty plan
            return iter(())
        return read_partition(partition, self.schema)


def read_partition(partition: ScanPartition, schema: T.StructType) -> Iterator[Any]:
    """The rows of one partition as ``pyarrow.RecordBatch`` es of ``schema`` (the Spark
    schema of the scan): the Arrow reader's batches of its tasks, converted."""
    target = arrow_schema(schema)
    iceberg = partition.context.schema
    for batch in partition.context.reader().read_tasks(partition.task.tasks):
        yield spark_batch(batch, iceberg, target)
