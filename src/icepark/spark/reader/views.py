"""The tables of a namespace as Spark SQL temporary views: :func:`register_views`.

::

    ips.register_views(spark, namespace="db")            # -> ["events", "users"]
    spark.sql("SELECT kind, count(*) FROM events WHERE id > 5 GROUP BY kind")
    ips.register_views(spark, namespace="db", as_of_timestamp=ms, prefix="old_")  # old_events

Spark SQL resolves a name without a JVM catalog plugin only as a temporary view or a table of
its session catalog, and icepark installs nothing in the JVM, so its tables reach SQL as
temporary views, which "are session-scoped and will disappear if the session that creates it
terminates" (Spark SQL guide, *Global Temporary View*).

Each view is the DataFrame :func:`icepark.spark.reader.read.read` returns for its table: planned
once, in this process, at the snapshot chosen -- the current one (spec, *Scan Planning*: "Scans
are planned by reading the manifest files for the current snapshot"), or the one ``snapshot_id``
names, the one current at ``as_of_timestamp`` by the ``snapshot-log`` ("timestamp and snapshot
ID pairs that encodes changes to the current snapshot for the table"), or the head of branch or
tag ``ref``. A query of the view reads only its columns of the planned data files, deletes
applied, with Spark's Parquet reader, which pushes the query's filters into the Parquet scan. A
view is therefore a snapshot: commits after it was registered are not in it; registering again
replaces it with the table as it is then. The DataFrames are plain Spark plans over the files,
so views work on every kind of session, Spark Connect included (the planning runs in the
client, which reads the catalog, as every ``ips.*`` function does).

Why not views over the ``icepark`` data source (``CREATE TEMPORARY VIEW v USING icepark``):
PySpark 4.3.0 keeps the read a Python data source planned for one query (its partitions and
read function) on the relation and reuses it for every later query of that relation with no
filter Spark can hand to Python, so after ``SELECT * FROM v WHERE id > 6``,
``SELECT count(*) FROM v`` counts only those rows, and every such query reads the snapshot of
the last one planned (``tests/spark/test_sql.py`` records this as a strict xfail).

Names: a view is named ``prefix`` plus its table's name; tables of the namespace's child
namespaces are not included (their names could collide with its own: register them with their
own call and prefix). Spark compares view names case-insensitively unless
``spark.sql.caseSensitive`` is set, so two tables whose names differ only in case are refused;
an existing view of the same name is replaced unless ``replace=False``. Every table is planned
before any view is made, so an error leaves the session's views as they were.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from icepark.catalog import Catalog, load_catalog
from icepark.catalog.identifier import NamespaceLike, namespace_identifier, show
from icepark.errors import (
    AlreadyExists,
    NoSuchNamespace,
    NoSuchSnapshot,
    NoSuchTable,
    Remedy,
    ValidationError,
)
from icepark.spark.reader.read import read
from icepark.spark.schema import quote
from icepark.spark.session import case_sensitive
from icepark.spark.tables import session_catalog
from icepark.table.change.commit import Identifier


def register_views(
        spark: SparkSession, catalog: Catalog | str | None = None,
        namespace: NamespaceLike = "default", *, tables: Sequence[str] | None = None,
        snapshot_id: int | None = None, as_of_timestamp: int | None = None,
        ref: str | None = None, prefix: str = "", replace: bool = True,
        timestamp_ns: str | None = None) -> list[str]:
    """Make every table of ``namespace`` (or those of it named in ``tables``) queryable in
    ``spark.sql`` as a temporary view named ``prefix`` plus the table's name, and return the
    view names: in the order of ``tables``, else of the table names (see the module
    docstring).

    ``catalog`` is a catalog, a catalog name (:func:`icepark.catalog.load_catalog`), or None:
    the session's (:func:`icepark.spark.configure`). Every view reads its table's current
    snapshot, or the one chosen by at most one of ``snapshot_id`` (a snapshot is one table's:
    give it with ``tables`` naming one table), ``as_of_timestamp`` (milliseconds since the
    epoch) and ``ref`` (a branch or tag every table has). ``timestamp_ns`` is how nanosecond
    timestamp columns read, as for :func:`icepark.spark.read`.

    Raises :class:`~icepark.errors.NoSuchNamespace` for an unknown namespace,
    :class:`~icepark.errors.NoSuchTable` for a name in ``tables`` the namespace lacks,
    :class:`~icepark.errors.NoSuchSnapshot` (naming the table) for a snapshot, time or ref a
    table lacks, :class:`~icepark.errors.ValidationError` for names Spark would confuse, and,
    with ``replace=False``, :class:`~icepark.errors.AlreadyExists` when a view name is taken.
    """
    source = _catalog(spark, catalog)
    ns = namespace_identifier(namespace)
    names = _table_names(source, ns, tables)
    if snapshot_id is not None and len(names) > 1:
        raise ValidationError(
            f"snapshot_id={snapshot_id} names one table's snapshot, but namespace {show(ns)} "
            f"has {len(names)} tables ({', '.join(names)}): give tables=[...] naming one, or "
            "choose every table's snapshot by as_of_timestamp or ref")
    views = [prefix + name for name in names]
    _check_names(spark, views, replace)
    frames: list[DataFrame] = []
    for name in names:  # plan every table before making any view
        identifier = (*ns, name)
        try:
            frames.append(read(spark, source.load_table(identifier), snapshot_id=snapshot_id,
                               as_of_timestamp=as_of_timestamp, ref=ref,
                               timestamp_ns=timestamp_ns))
        except NoSuchSnapshot as e:
            raise NoSuchSnapshot(f"Table {show(identifier)}: {e}") from e
    for view, frame in zip(views, frames, strict=True):
        frame.createOrReplaceTempView(quote(view))
    return views


def _catalog(spark: SparkSession, catalog: Catalog | str | None) -> Catalog:
    if catalog is None:
        return session_catalog(spark)
    return load_catalog(catalog) if isinstance(catalog, str) else catalog


def _table_names(catalog: Catalog, namespace: Identifier,
                 wanted: Sequence[str] | None) -> list[str]:
    """The names of the tables of ``namespace`` (only its own: not its children's), or of
    those ``wanted`` names, each checked to be one."""
    try:
        listed = [identifier[-1] for identifier in catalog.list_tables(namespace)]
    except NoSuchNamespace:
        known = ", ".join(show(n) for n in catalog.list_namespaces()) or "none"
        raise NoSuchNamespace(
            f"Cannot register the tables of namespace {show(namespace)} as views: catalog "
            f"{catalog.name!r} has no such namespace (its top-level namespaces: {known})"
        ) from None
    if wanted is None:
        return listed
    chosen = list(dict.fromkeys(wanted))
    missing = [name for name in chosen if name not in listed]
    if missing:
        raise NoSuchTable(f"Namespace {show(namespace)} of catalog {catalog.name!r} has no "
                          f"table {', '.join(missing)} (its tables: "
                          f"{', '.join(listed) or 'none'})")
    return chosen


def _check_names(spark: SparkSession, views: list[str], replace: bool) -> None:
    """Refuse view names Spark would take for one another, and, unless ``replace``, names
    already taken."""
    if not case_sensitive(spark):
        seen: dict[str, str] = {}
        for view in views:
            other = seen.setdefault(view.lower(), view)
            if other != view:
                raise ValidationError(
                    f"Tables {other!r} and {view!r} would both be view {view.lower()!r}: Spark "
                    "compares names case-insensitively (spark.sql.caseSensitive is false); "
                    "register them by separate calls with tables=[...] and different prefix=")
    if not replace:
        taken = [view for view in views if spark.catalog.tableExists(quote(view))]
        if taken:
            raise AlreadyExists(
                f"View name(s) {', '.join(taken)} are taken (a temporary view, or a table of "
                "the current database the view would hide)",
                remedy=Remedy("pass {} to replace them, or a prefix= to name the views apart",
                              "replace=True"))


__all__ = ["register_views"]
