"""Partition values from directory names: Hive's ``key=value`` text and Iceberg's own paths.

Spec, *Partitioning*: "Partition values for a data file must be the same for all records
stored in the data file." A file found in ``dt=2024-03-01/`` holds the rows of that partition,
and its partition tuple is read from the text, as the reference implementation reads it when it
imports files. The text is the readable form Iceberg writes in data file paths (the
reference's ``toHumanString``: ``2024`` for ``year``, ``2024-03`` for ``month``, ``2024-03-01``
for ``day``, ``2024-03-01-18`` for ``hour``, the bucket number for ``bucket``, the value for
``identity`` and ``truncate``) or that Hive and Spark write for a value: ``true``, ``42``,
``1.5``, ``2024-03-01``, ``2024-03-01 12:00:00`` (a timestamp with a zone is read in UTC when
the text has no offset), and ``__HIVE_DEFAULT_PARTITION__`` for null.

When a new table is made from a directory (:mod:`icepark.table.imports.infer`), each partition
key becomes an identity partition; a key that is not a column of the files becomes one, typed by
:func:`infer_type` from its directory values: ``int`` (``long`` when one is too large) if all
are integers written without leading zeros, ``date`` if all are ISO dates, ``string``
otherwise, so the text always reads back the same.

>>> from icepark.spec.types import DATE, STRING, TIMESTAMP
>>> from icepark.spec.transforms import Transform
>>> parse_partition_text(Transform.day(), TIMESTAMP, "2024-03-01")
19783
>>> parse_partition_text(Transform.identity(), TIMESTAMP, "2024-03-01 12:00:00")
1709294400000000
>>> parse_partition_text(Transform.identity(), STRING, "__HIVE_DEFAULT_PARTITION__") is None
True
>>> infer_type(["1", "2", "__HIVE_DEFAULT_PARTITION__"]), infer_type(["01"])
(int, string)
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

from icepark.spec import datetimes as dt
from icepark.spec.transforms import Transform, TransformKind
from icepark.spec.types import DATE, INT, LONG, STRING, IcebergType, PrimitiveType, TypeId
from icepark.spec.values import check_value, from_json, from_python

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory text Hive and Spark write for a null partition value."""

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MONTH = re.compile(r"(-?\d{4,})-(\d{2})")
_HOUR = re.compile(r"(\d{4}-\d{2}-\d{2})-(\d{2})")
_INT_RANGE = range(-(2**31), 2**31)
_LONG_RANGE = range(-(2**63), 2**63)


def parse_partition_text(transform: Transform, source: IcebergType, text: str) -> Any:
    """The partition value of ``transform`` (of a ``source`` column) that ``text`` names.

    Raises :class:`ValueError` (a :class:`ValidationError` for values out of range) when the
    text is not such a value; callers name the file and directory.
    """
    if text == HIVE_NULL or transform.is_void:
        return None
    match transform.kind:
        case TransformKind.YEAR:
            return int(text) - 1970
        case TransformKind.MONTH:
            m = _MONTH.fullmatch(text)
            if m is None:
                raise ValueError("expected a month like 2024-03")
            year, month = int(m.group(1)), int(m.group(2))
            if not 1 <= month <= 12:
                raise ValueError("the month must be 01 to 12")
            return (year - 1970) * 12 + month - 1
        case TransformKind.DAY:
            return dt.iso_to_days(text)
        case TransformKind.HOUR:
            m = _HOUR.fullmatch(text)
            if m is None:
                raise ValueError("expected an hour like 2024-03-01-18")
            hour = int(m.group(2))
            if hour > 23:
                raise ValueError("the hour must be 00 to 23")
            return dt.iso_to_days(m.group(1)) * 24 + hour
        case TransformKind.BUCKET:
            return _integer(text)
    result = transform.result_type(source)
    if not isinstance(result, PrimitiveType):
        raise ValueError(f"{result} is not a partition type")
    return _value(result, text)


def _integer(text: str) -> int:
    if not _INTEGER.fullmatch(text.strip()):
        raise ValueError("expected an integer")
    return int(text)


def _value(t: PrimitiveType, text: str) -> Any:
    """A value of primitive type ``t`` from its directory text."""
    match t.type_id:
        case TypeId.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return text.lower() == "true"
        case TypeId.INT | TypeId.LONG:
            value: Any = _integer(text)
        case TypeId.FLOAT | TypeId.DOUBLE:
            value = from_python(t, float(text))
        case TypeId.DECIMAL:
            value = from_python(t, text.strip())
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            iso = text.strip().replace(" ", "T", 1)
            micros, zoned = dt.iso_to_timestamp_micros(iso)
            if zoned and t.type_id is TypeId.TIMESTAMP:
                raise ValueError("a timestamp without zone cannot have an offset")
            value = micros
        case TypeId.BINARY | TypeId.FIXED:
            try:
                value = base64.b64decode(text, validate=True)
            except binascii.Error as e:
                raise ValueError("expected base64 (Iceberg's path form of binary)") from e
        case _:  # string, date, time, uuid: their JSON single-value text
            value = from_json(t, text)
    check_value(t, value)
    return value


def infer_type(texts: Iterable[str]) -> PrimitiveType:
    """The type of a new partition column from its directory values (module docstring)."""
    values = [t for t in texts if t != HIVE_NULL]
    if not values:
        return STRING
    if all(_INTEGER.fullmatch(v) for v in values):
        numbers = [int(v) for v in values]
        if all(n in _INT_RANGE for n in numbers):
            return INT
        if all(n in _LONG_RANGE for n in numbers):
            return LONG
        return STRING
    if all(_DATE.fullmatch(v) for v in values):
        try:
            for v in values:
                dt.iso_to_days(v)
        except ValueError:
            return STRING
        return DATE
    return STRING
