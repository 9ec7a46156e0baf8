"""Partition values through Spark's ``partitionBy`` directories, losslessly, and back.

Spec, *Partitioning*: "Partition values for a data file must be the same for all records
stored in the data file." The native writer (:mod:`icepark.spark.writer.native`) lets Spark's
own Parquet writer split rows by partition with ``partitionBy``, so a file's partition tuple
is known only from the directory Spark puts it in: ``<column>=<text>/...`` inside the job's
directory. These names are the job's own: the files then move to the spec's human-readable
partition paths (:func:`icepark.spark.writer.native_files.place_files`).

Spark's directory text is lossy for raw values: it writes an empty string and a null both as
``__HIVE_DEFAULT_PARTITION__``, formats dates and timestamps by the session time zone, and
escapes some characters (``%XX`` for ``"#%'*/:=?\\{[]^``, DEL and controls; other characters,
spaces and non-ASCII ones, stay as they are). So the partition values are not handed to
``partitionBy`` as they are but each as a string column of :func:`encode_column`, a text from
which :func:`decode_value` gives the exact value back, using only characters that survive
Spark's escaping or are undone by :func:`unescape`:

* boolean, int, long, decimal, float, double: Spark's cast to string (Java's shortest
  round-trip text for floats: ``-0.0``, ``NaN``, ``Infinity`` and ``1.0E10`` parse back
  exactly; decimals are re-scaled to the partition type's scale);
* date: days from 1970-01-01; timestamp and timestamptz: microseconds from the epoch (so the
  session time zone never formats them);
* string: Spark's ``url_encode`` (Java's ``URLEncoder``, the encoding of Iceberg's reference
  partition paths), prefixed with ``~`` when empty or ``__HIVE_DEFAULT_PARTITION__``, which
  ``url_encode`` can never produce otherwise (it encodes ``~``);
* binary: ``x`` and the hex digits.

A null partition value is a null column value, which Spark writes as
``__HIVE_DEFAULT_PARTITION__``; no encoded non-null value is that text.

>>> from icepark.spec.types import STRING, FLOAT
>>> decode_value(STRING, unescape("a+b%252F%25C3%25A9%2A"))
'a b/é*'
>>> decode_value(STRING, "~"), decode_value(FLOAT, "0.1") == 0.10000000149011612
('', True)
>>> parse_partition(["p=~__HIVE_DEFAULT_PARTITION__", "q=__HIVE_DEFAULT_PARTITION__"],
...                 [STRING, STRING])
('__HIVE_DEFAULT_PARTITION__', None)
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from decimal import Context, Decimal
from typing import Any
from urllib.parse import unquote_plus

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - PySpark's conventional name
from pyspark.sql import types as T  # noqa: N812

from icepark.errors import CorruptFile, ValidationError
from icepark.spec.types import IcebergType, PrimitiveType, TypeId
from icepark.spec.values import check_value

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory text Spark writes for a null partition value."""
_EXACT = Context(prec=80)  # room for any decimal(38, S)
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
_INTEGERS = frozenset({TypeId.INT, TypeId.LONG})
_TEXT_CASTS = frozenset({TypeId.BOOLEAN, TypeId.INT, TypeId.LONG, TypeId.FLOAT, TypeId.DOUBLE,
                         TypeId.DECIMAL})


def encode_column(t: IcebergType, col: Column) -> Column:
    """The directory text of each partition value of ``col`` (of partition type ``t``), null
    for null."""
    tid = _primitive(t).type_id
    if tid in _TEXT_CASTS:
        return col.cast(T.StringType())
    match tid:
        case TypeId.DATE:
            return F.unix_date(col).cast(T.StringType())
        case TypeId.TIMESTAMP | TypeId.TIMESTAMPTZ:
            return F.unix_micros(col).cast(T.StringType())
        case TypeId.STRING:
            encoded = F.url_encode(col)
            clash = (col == F.lit("")) | (col == F.lit(HIVE_NULL))
            return F.when(clash, F.concat(F.lit("~"), encoded)).otherwise(encoded)
        case TypeId.BINARY:
            return F.concat(F.lit("x"), F.hex(col))
    raise ValidationError(f"Cannot write {t} partition values with Spark's Parquet writer")


def unescape(text: str) -> str:
    """Undo Spark's directory-name escaping (``%XX`` is the character XX)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def decode_value(t: IcebergType, text: str) -> Any:
    """The partition value of type ``t`` that :func:`encode_column` wrote as ``text`` (after
    :func:`unescape`), checked against ``t``."""
    p = _primitive(t)
    try:
        value = _decode(p, text)
        check_value(p, value)
    except (ValueError, ArithmeticError) as e:  # ValidationError is a ValueError
        raise CorruptFile(f"Partition directory value {text!r} is not a {t}: {e}") from None
    return value


def _decode(t: PrimitiveType, text: str) -> Any:
    tid = t.type_id
    if tid in _INTEGERS or tid in (TypeId.DATE, TypeId.TIMESTAMP, TypeId.TIMESTAMPTZ):
        return int(text)
    match tid:
        case TypeId.BOOLEAN:
            if text not in ("true", "false"):
                raise ValueError("expected true or false")
            return text == "true"
        case TypeId.DOUBLE:
            return float(text)
        case TypeId.FLOAT:
            return struct.unpack("<f", struct.pack("<f", float(text)))[0]
        case TypeId.DECIMAL:
            return Decimal(text).quantize(Decimal(1).scaleb(-t.scale), context=_EXACT)
        case TypeId.STRING:
            return unquote_plus(text.removeprefix("~"), errors="strict")
        case TypeId.BINARY:
            if not text.startswith("x"):
                raise ValueError("expected x and hex digits")
            return bytes.fromhex(text[1:])
    raise ValueError(f"{t} is not a partition type of the native writer")


def parse_partition(directories: Sequence[str], types: Sequence[IcebergType]) -> tuple[Any, ...]:
    """The partition tuple of a file in ``<name>=<text>/...`` ``directories`` (one per
    partition field, in order)."""
    if len(directories) != len(types):
        raise CorruptFile(f"Expected {len(types)} partition directories, found "
                          f"{'/'.join(directories)!r}")
    values = []
    for directory, t in zip(directories, types, strict=True):
        _, sep, text = directory.partition("=")
        if not sep:
            raise CorruptFile(f"Partition directory {directory!r} has no '='")
        values.append(None if text == HIVE_NULL else decode_value(t, unescape(text)))
    return tuple(values)


def _primitive(t: IcebergType) -> PrimitiveType:
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"Partition values are primitive, not {t}")
    return t


__all__ = ["HIVE_NULL", "decode_value", "encode_column", "parse_partition", "unescape"]
