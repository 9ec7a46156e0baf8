"""Options of the ``icepark`` data source, shared by its reader and writer.

Both sides name a table in a catalog the same way:

* the table identifier is the ``load``/``save`` path, or option ``table``;
* ``catalog`` is the catalog name (default ``default``, configured as
  :func:`icepark.catalog.load_catalog` does); catalog properties are given as
  ``catalog.<key>`` (``catalog.uri``, ``catalog.warehouse``, ``catalog.type``, ``catalog.s3.*``)
  or, for the three common ones, bare ``uri``, ``warehouse`` and ``type``.

The reader also chooses what to read (:class:`ReadOptions`). Spec, *Scan Planning*: "Scans are
planned by reading the manifest files for the current snapshot"; time travel reads another
snapshot instead, chosen by at most one of ``snapshot-id``, ``as-of-timestamp`` (milliseconds
since the epoch, looked up in the ``snapshot-log``), ``branch`` or ``tag``. ``split-size``,
``lookback`` and ``file-open-cost`` override the table properties ``read.split.target-size``,
``read.split.planning-lookback`` and ``read.split.open-file-cost`` for one read.
``timestamp-ns`` (``error``, the default, ``micros`` or ``nanos``) is how nanosecond
timestamp columns are returned (:mod:`icepark.spark.nanos`); the data source runs in Python
workers, which cannot see the session's ``spark.icepark.read.timestamp-ns``, so only the
option counts here.

>>> o = ReadOptions.parse({"path": "db.t", "catalog.uri": "sqlite:///c.db", "tag": "v1"})
>>> o.catalog.table, dict(o.catalog.properties), o.tag
('db.t', {'uri': 'sqlite:///c.db'}, 'v1')
>>> ReadOptions.parse({"path": "db.t", "tag": "v1", "snapshot-id": "3"})
Traceback (most recent call last):
...
icepark.errors.ValidationError: Read one snapshot: give at most one of snapshot-id, \
as-of-timestamp, branch and tag, not snapshot-id and tag
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icepark.catalog import BaseCatalog, load_catalog
from icepark.errors import ValidationError
from icepark.spark.nanos import READ_MODE_OPTION, ReadMode, read_mode
from icepark.spark.tables import load
from icepark.spec.snapshots import MAIN_BRANCH
from icepark.table.table import Table

_BARE_CATALOG_KEYS = ("uri", "warehouse", "type")
_CATALOG_PREFIX = "catalog."
_SNAPSHOT_CHOICES = ("snapshot-id", "as-of-timestamp", "branch", "tag")
_SPLIT_OPTIONS = {"split-size": "read.split.target-size",
                  "lookback": "read.split.planning-lookback",
                  "file-open-cost": "read.split.open-file-cost"}


def _get(options: Mapping[str, str], key: str) -> str | None:
    """An option by case-insensitive key (Spark lower-cases option keys)."""
    for k, v in options.items():
        if k.lower() == key:
            return v
    return None


@dataclass(frozen=True, slots=True)
class CatalogOptions:
    """The table and the catalog holding it (plain values; the catalog is loaded on use)."""

    table: str
    catalog_name: str
    properties: Mapping[str, str]

    @staticmethod
    def parse(options: Mapping[str, str]) -> CatalogOptions:
        table = _get(options, "path") or _get(options, "table")
        if not table:
            raise ValidationError("Name the table: .load('db.table') / .save('db.table') or "
                                  "option('table', ...)")
        properties: dict[str, str] = {}
        for key, value in options.items():
            lower = key.lower()
            if lower.startswith(_CATALOG_PREFIX):
                properties[key[len(_CATALOG_PREFIX):]] = value
        for key in _BARE_CATALOG_KEYS:
            bare = _get(options, key)
            if bare is not None:
                properties.setdefault(key, bare)
        return CatalogOptions(table, _get(options, "catalog") or "default", properties)

    def load(self) -> BaseCatalog:
        return load_catalog(self.catalog_name, **self.properties)

    def load_table(self) -> Table:
        return self.table_in(self.load())

    def table_in(self, catalog: BaseCatalog) -> Table:
        """The table in ``catalog`` (this source's), as :func:`icepark.spark.tables.load`
        finds it: the identifier may start with the catalog's name."""
        return load(catalog, self.table, "the icepark source reads catalog "
                                         f"{catalog.name!r}", ".option('catalog', {!r})")


def _integer(options: Mapping[str, str], key: str) -> int | None:
    raw = _get(options, key)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise ValidationError(f"Option {key} must be an integer, not {raw!r}") from None


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The parsed options of one read (see the module docstring)."""

    catalog: CatalogOptions
    snapshot_id: int | None = None
    as_of_timestamp: int | None = None
    branch: str | None = None
    tag: str | None = None
    scan_options: Mapping[str, str] | None = None
    timestamp_ns: ReadMode = "error"

    @staticmethod
    def parse(options: Mapping[str, str]) -> ReadOptions:
        given = [key for key in _SNAPSHOT_CHOICES if _get(options, key) is not None]
        if len(given) > 1:
            raise ValidationError(
                "Read one snapshot: give at most one of snapshot-id, as-of-timestamp, branch "
                f"and tag, not {' and '.join(given)}")
        branch, tag = _get(options, "branch"), _get(options, "tag")
        for key, name in (("branch", branch), ("tag", tag)):
            if name is not None and not name.strip():
                raise ValidationError(f"Option {key} must name a {key}, not an empty string")
        scan_options = {prop: str(value) for key, prop in _SPLIT_OPTIONS.items()
                        if (value := _integer(options, key)) is not None}
        return ReadOptions(CatalogOptions.parse(options), _integer(options, "snapshot-id"),
                           _integer(options, "as-of-timestamp"), branch, tag, scan_options,
                           read_mode(None, _get(options, READ_MODE_OPTION)))


_SNAPSHOT_PROPERTY = "snapshot-property."


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """The parsed options of one write (plain values; the catalog is loaded where needed)."""

    catalog: CatalogOptions
    branch: str
    snapshot_properties: Mapping[str, str]
    overwrite_mode: str | None
    overwrite_filter: str | None

    @staticmethod
    def parse(options: Mapping[str, str]) -> WriteOptions:
        target = CatalogOptions.parse(options)
        snapshot: dict[str, str] = {}
        for key, value in options.items():
            if key.lower().startswith(_SNAPSHOT_PROPERTY):
                snapshot[key[len(_SNAPSHOT_PROPERTY):]] = value
        mode = options.get("overwrite-mode")
        if mode is not None and mode.lower() not in ("static", "dynamic"):
            raise ValidationError(f"Invalid overwrite-mode {mode!r}: use static or dynamic")
        return WriteOptions(
            catalog=target, branch=options.get("branch", MAIN_BRANCH),
            snapshot_properties=snapshot,
            overwrite_mode=None if mode is None else mode.lower(),
            overwrite_filter=options.get("overwrite-filter"))
