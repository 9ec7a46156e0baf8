"""Spark SQL over icepark tables: ``ips.register_views`` (a namespace's tables as temporary
views), the statements Spark 4 accepts over the ``icepark`` data source (``CREATE TEMPORARY
VIEW ... USING icepark``, ``INSERT INTO`` / ``INSERT OVERWRITE`` such a view), and what Spark
refuses without a JVM catalog plugin. Every result is checked against the rows written and
against icepark's Arrow reader."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icepark
import icepark.spark as ips
from icepark.catalog import BaseCatalog
from icepark.errors import (
    AlreadyExists,
    NoSuchNamespace,
    NoSuchSnapshot,
    NoSuchTable,
    ValidationError,
)
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField
from icepark.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING),
                   NestedField.optional(3, "score", DOUBLE))
KINDS = ["click", "view", None]


def _rows(ids: range) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "kind": KINDS[i % 3], "score": i / 4} for i in ids],
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                          pa.field("kind", pa.string()), pa.field("score", pa.float64())]))


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in rows)


def _sql(spark: SparkSession, query: str) -> list[tuple[Any, ...]]:
    return _sorted([r.asDict() for r in spark.sql(query).collect()])


def _arrow(table: Table, row_filter: str = "true", **at: Any) -> list[tuple[Any, ...]]:
    return _sorted(table.refresh().scan(row_filter, **at).to_arrow().to_pylist())


def _operation(table: Table) -> str:
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return str(snapshot.summary.operation.value)


@pytest.fixture
def views(spark: SparkSession) -> Iterator[list[str]]:
    """The names of the temporary views a test makes, dropped after it (the session is
    shared)."""
    made: list[str] = []
    yield made
    for name in made:
        spark.catalog.dropTempView(name)


@pytest.fixture
def catalog(tmp_path: Path) -> BaseCatalog:
    """Namespace ``db`` with ``events`` (two appends, tag ``v1`` on the first) and ``users``
    (one append, between those two), and child namespace ``db.inner`` with its own
    ``events``."""
    catalog = icepark.load_catalog("sqltest", uri=f"sqlite:///{tmp_path}/catalog.db",
                                   warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    catalog.create_namespace("db.inner")
    events = catalog.create_table("db.events", SCHEMA).append(_rows(range(10)))
    first = events.current_snapshot()
    assert first is not None
    events.manage_snapshots().create_tag("v1", first.snapshot_id).commit()
    catalog.create_table("db.users", SCHEMA).append(_rows(range(100, 103)))
    time.sleep(0.01)  # the second snapshot of events is logged at a later millisecond
    events.refresh().append(_rows(range(10, 15)))
    catalog.create_table("db.inner.events", SCHEMA).append(_rows(range(500, 502)))
    return catalog


def _options(catalog: BaseCatalog, table: str, key: str = "path", **extra: str) -> str:
    """The OPTIONS clause naming ``table`` in ``catalog`` for the ``icepark`` data source
    (by option ``key``: ``path`` or ``table``)."""
    properties = catalog.properties
    options = {"catalog": catalog.name, "uri": properties["uri"],
               "warehouse": properties["warehouse"], key: table, **extra}
    return ", ".join(f"`{k}` '{v}'" for k, v in options.items())


# ------------------------------------------------------------------------ ips.register_views


def test_every_table_of_a_namespace_becomes_a_view(spark: SparkSession, catalog: BaseCatalog,
                                                    views: list[str]) -> None:
    views += ips.register_views(spark, catalog, "db")
    assert views == ["events", "users"]  # not db.inner's events
    events = catalog.load_table("db.events")
    assert _sql(spark, "SELECT * FROM events") == _arrow(events)
    assert len(_arrow(events)) == 15
    assert _sql(spark, "SELECT * FROM users") == _sorted(_rows(range(100, 103)).to_pylist())
    joined = _sql(spark, "SELECT e.kind, count(*) AS n, max(u.id) AS top FROM events e "
                         "JOIN users u ON e.kind = u.kind GROUP BY e.kind")
    assert joined == [("click", 5, 102), ("view", 5, 100)]

    views += ips.register_views(spark, catalog, ("db", "inner"), prefix="inner_")
    assert views[2:] == ["inner_events"]
    assert _sql(spark, "SELECT id FROM inner_events") == [(500,), (501,)]


def test_a_filtered_query_is_pushed_into_the_scan(spark: SparkSession, catalog: BaseCatalog,
                                                   views: list[str]) -> None:
    views += ips.register_views(spark, catalog, "db", tables=["events"])
    query = "SELECT id, kind FROM events WHERE id > 11 AND kind = 'click'"
    plan = spark.sql(f"EXPLAIN {query}").collect()[0][0]
    pushed = re.search(r"PushedFilters: \[([^\]]*)\]", plan)
    assert pushed is not None, plan
    assert "GreaterThan(id,11)" in pushed.group(1)
    assert "EqualTo(kind,click)" in pushed.group(1)
    assert "score" not in plan.split("ReadSchema:")[1]  # only the query's columns are read
    expected = [(i, k) for i, k, _ in _arrow(catalog.load_table("db.events"),
                                             "id > 11 AND kind = 'click'")]
    assert _sql(spark, query) == expected == [(12, "click")]


def test_views_read_the_snapshot_chosen_and_registering_again_refreshes(
        spark: SparkSession, catalog: BaseCatalog, views: list[str]) -> None:
    events = catalog.load_table("db.events")
    tagged = events.metadata.refs["v1"].snapshot_id
    users = catalog.load_table("db.users").current_snapshot()
    assert users is not None  # committed after v1, before the second append of events
    old = _arrow(events, snapshot_id=tagged)
    assert len(old) == 10

    views += ips.register_views(spark, catalog, "db", tables=["events"], snapshot_id=tagged,
                                prefix="by_id_")
    views += ips.register_views(spark, catalog, "db", ref="v1", prefix="by_tag_",
                                tables=["events"])
    views += ips.register_views(spark, catalog, "db", as_of_timestamp=users.timestamp_ms,
                                prefix="by_time_")
    assert views == ["by_id_events", "by_tag_events", "by_time_events", "by_time_users"]
    for view in ("by_id_events", "by_tag_events", "by_time_events"):
        assert _sql(spark, f"SELECT * FROM {view}") == old, view
    assert _sql(spark, "SELECT count(*) FROM by_time_users") == [(3,)]

    views += ips.register_views(spark, catalog, "db", tables=["events"])
    events.refresh().append(_rows(range(20, 22)))
    assert _sql(spark, "SELECT count(*) FROM events") == [(15,)]  # a view is a snapshot
    assert ips.register_views(spark, catalog, "db", tables=["events"]) == ["events"]
    assert _sql(spark, "SELECT * FROM events") == _arrow(events)
    assert len(_arrow(events)) == 17


def test_the_session_catalog_is_used_by_default(spark: SparkSession, catalog: BaseCatalog,
                                                views: list[str]) -> None:
    ips.configure(spark, catalog=catalog)
    views += ips.register_views(spark, namespace="db.inner")
    assert _sql(spark, "SELECT id FROM events") == [(500,), (501,)]


def test_bad_input_raises_typed_errors_and_makes_no_view(
        spark: SparkSession, catalog: BaseCatalog, views: list[str]) -> None:
    with pytest.raises(NoSuchNamespace, match=r"namespace nope as views: catalog 'sqltest' "
                                              r"has no such namespace \(its top-level "
                                              r"namespaces: db\)"):
        ips.register_views(spark, catalog, "nope")
    with pytest.raises(NoSuchNamespace, match=r"namespace db\.nope as views"):
        ips.register_views(spark, catalog, "db.nope")
    with pytest.raises(NoSuchTable, match=r"has no table nope \(its tables: events, users\)"):
        ips.register_views(spark, catalog, "db", tables=["events", "nope"])
    with pytest.raises(ValidationError, match=r"snapshot_id=1 names one table's snapshot.*"
                                              r"2 tables \(events, users\)"):
        ips.register_views(spark, catalog, "db", snapshot_id=1)
    with pytest.raises(NoSuchSnapshot, match=r"Table db\.events: Cannot find snapshot 1"):
        ips.register_views(spark, catalog, "db", tables=["events"], snapshot_id=1)
    with pytest.raises(NoSuchSnapshot, match=r"Table db\.events: No snapshot was current at"):
        ips.register_views(spark, catalog, "db", as_of_timestamp=1)
    with pytest.raises(NoSuchSnapshot, match=r"Table db\.users: Cannot find branch or tag "
                                             r"'v1'"):
        ips.register_views(spark, catalog, "db", ref="v1")
    assert not spark.catalog.tableExists("events")  # planned first: no view was made

    views.append("users")
    spark.range(1).createOrReplaceTempView("users")
    with pytest.raises(AlreadyExists, match=r"View name\(s\) users are taken.*; pass "
                                            r"replace=True to replace them"):
        ips.register_views(spark, catalog, "db", replace=False)
    assert not spark.catalog.tableExists("events")
    assert _sql(spark, "SELECT * FROM users") == [(0,)]


def test_names_spark_would_confuse_are_refused(spark: SparkSession, catalog: BaseCatalog,
                                              views: list[str]) -> None:
    catalog.create_namespace("cased")
    catalog.create_table("cased.Tag", SCHEMA)
    catalog.create_table("cased.tag", SCHEMA)
    with pytest.raises(ValidationError, match=r"Tables 'Tag' and 'tag' would both be view "
                                              r"'tag'.*case-insensitively"):
        ips.register_views(spark, catalog, "cased")
    catalog.create_table("cased.my-table", SCHEMA).append(_rows(range(2)))
    views += ips.register_views(spark, catalog, "cased", tables=["my-table", "Tag"])
    assert views == ["my-table", "Tag"]
    assert _sql(spark, "SELECT id FROM `my-table`") == [(0,), (1,)]
    assert _sql(spark, "SELECT count(*) FROM TAG") == [(0,)]


# ------------------------------------------------------------ the icepark data source in SQL


def test_a_temporary_view_using_icepark_reads_inserts_and_overwrites(
        spark: SparkSession, catalog: BaseCatalog, views: list[str]) -> None:
    ips.register_datasource(spark)
    events = catalog.load_table("db.events")
    views.append("ds_v1")
    spark.sql(f"CREATE TEMPORARY VIEW ds_v1 USING icepark OPTIONS "
              f"({_options(catalog, 'db.events', tag='v1')})")
    assert (_sql(spark, "SELECT * FROM ds_v1 WHERE id > 6")
            == _arrow(events, "id > 6", ref="v1") == _sorted(_rows(range(7, 10)).to_pylist()))

    users = catalog.load_table("db.users")
    views.append("ds_users")
    spark.sql(f"CREATE TEMPORARY VIEW ds_users USING icepark OPTIONS "
              f"({_options(catalog, 'db.users')})")
    spark.sql("INSERT INTO ds_users VALUES (7, 'sql', 1.5)")
    assert _arrow(users) == sorted([*_sorted(_rows(range(100, 103)).to_pylist()),
                                    (7, "sql", 1.5)])
    assert _operation(users) == "append"
    spark.sql("INSERT OVERWRITE ds_users VALUES (1, 'new', 0.0), (2, 'new', 0.25)")
    assert _arrow(users) == [(1, "new", 0.0), (2, "new", 0.25)]
    assert _operation(users) == "overwrite"
    assert len(users.metadata.snapshots) == 3


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "PySpark 4.3.0 keeps the read a Python data source planned for one query on the relation "
    "and reuses it for a later query of the view that pushes no filter: the earlier filter "
    "still applies. register_views reads through ips.read for this; when this passes, views "
    "over the data source see each query's filters"))
def test_a_view_using_icepark_queried_again_without_a_filter_reads_every_row(
        spark: SparkSession, catalog: BaseCatalog, views: list[str]) -> None:
    ips.register_datasource(spark)
    views.append("ds_reused")
    spark.sql(f"CREATE TEMPORARY VIEW ds_reused USING icepark OPTIONS "
              f"({_options(catalog, 'db.events')})")
    assert _sql(spark, "SELECT count(*) FROM ds_reused WHERE id > 11") == [(3,)]
    assert _sql(spark, "SELECT count(*) FROM ds_reused") == [(15,)]


def test_a_table_using_icepark_keeps_none_of_its_options(
        spark: SparkSession, catalog: BaseCatalog) -> None:
    """Spark 4.3 accepts ``CREATE TABLE ... USING icepark OPTIONS (...)`` (the options reach
    the source while the table is created) but hands the Python data source none of them
    when the table is read or written; when this test fails, Spark keeps them and the
    README's SQL paragraph should say so."""
    ips.register_datasource(spark)
    name = "spark_catalog.default.icepark_sql_options"
    spark.sql(f"CREATE TABLE {name} USING icepark "
              f"OPTIONS ({_options(catalog, 'db.users', key='table')})")
    try:
        assert [f.name for f in spark.table(name).schema] == ["id", "kind", "score"]
        for statement in (f"SELECT * FROM {name}", f"INSERT INTO {name} VALUES (1, 'x', 1.0)"):
            with pytest.raises(Exception, match=r"Name the table"):  # Spark's own error types
                spark.sql(statement).collect()
    finally:
        spark.sql(f"DROP TABLE {name}")  # and its folder in the session's warehouse
    assert len(_arrow(catalog.load_table("db.users"))) == 3


REFUSED = {  # statement -> Spark's refusal, without a JVM catalog plugin
    "SELECT * FROM db.events": r"TABLE_OR_VIEW_NOT_FOUND",
    "SELECT * FROM sqltest.db.events": r"REQUIRES_SINGLE_PART_NAMESPACE",
    "SELECT * FROM events VERSION AS OF 1": r"UNSUPPORTED_FEATURE\.TIME_TRAVEL",
    "INSERT INTO events VALUES (1, 'x', 1.0)": r"UNSUPPORTED_INSERT",
    "DELETE FROM events WHERE id = 1": r"Unexpected table relation",
    "UPDATE events SET kind = 'x' WHERE id = 1": r"does not support UPDATE TABLE",
    "MERGE INTO events t USING users s ON t.id = s.id WHEN MATCHED THEN DELETE":
        r"does not support MERGE INTO TABLE",
}


def test_spark_refuses_what_needs_a_catalog_plugin(spark: SparkSession, catalog: BaseCatalog,
                                                   views: list[str]) -> None:
    views += ips.register_views(spark, catalog, "db")
    for statement, refusal in REFUSED.items():
        with pytest.raises(Exception, match=refusal):  # Spark's own error types
            spark.sql(statement).collect()
    assert _sql(spark, "SELECT count(*) FROM events") == [(15,)]
    assert len(_arrow(catalog.load_table("db.events"))) == 15
