"""Conversions between Python date/time objects and the spec's stored integers.

Spec, *Primitive Types*: "All time and timestamp values are stored with microsecond precision"
and "Timestamp values are stored as a long that encodes microseconds from the unix epoch"; dates
are days from 1970-01-01 (Appendix D). The v3 ``timestamp_ns``/``timestamptz_ns`` store
"nanoseconds from 1970-01-01 00:00:00.000000000". Integer arithmetic only, so values before 1970
and far from it are exact (no float rounding).

>>> date_to_days(date(2017, 11, 16))
17486
>>> days_to_date(-1)
datetime.date(1969, 12, 31)
>>> micros_to_timestamp(timestamp_to_micros(datetime(1900, 1, 1, 0, 0, 0, 1)))
datetime.datetime(1900, 1, 1, 0, 0, 0, 1)
>>> micros_to_iso_timestamp(-1, utc=True)
'1969-12-31T23:59:59.999999+00:00'
>>> iso_to_timestamp_micros("1970-01-01T01:00+01:00")
(0, True)
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

EPOCH_DATE = date(1970, 1, 1)
EPOCH = datetime(1970, 1, 1)
EPOCH_TZ = datetime(1970, 1, 1, tzinfo=UTC)
MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
NANOS_PER_MICRO = 1_000
NANOS_PER_DAY = MICROS_PER_DAY * NANOS_PER_MICRO


def date_to_days(d: date) -> int:
    """Days from 1970-01-01."""
    return (d - EPOCH_DATE).days


def days_to_date(days: int) -> date:
    return EPOCH_DATE + timedelta(days=days)


def _delta_micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def timestamp_to_micros(ts: datetime) -> int:
    """Microseconds from the epoch; an aware datetime is converted to UTC first."""
    if ts.tzinfo is not None:
        return _delta_micros(ts - EPOCH_TZ)
    return _delta_micros(ts - EPOCH)


def micros_to_timestamp(micros: int) -> datetime:
    """A naive datetime (``timestamp`` without zone)."""
    return EPOCH + timedelta(microseconds=micros)


def micros_to_timestamptz(micros: int) -> datetime:
    """An aware UTC datetime (``timestamptz``)."""
    return EPOCH_TZ + timedelta(microseconds=micros)


def time_to_micros(t: time) -> int:
    """Microseconds from midnight."""
    return ((t.hour * 60 + t.minute) * 60 + t.second) * MICROS_PER_SECOND + t.microsecond


def micros_to_time(micros: int) -> time:
    seconds, micro = divmod(micros, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return time(hour, minute, second, micro)


def days_to_year_month(days: int) -> tuple[int, int]:
    """The proleptic Gregorian (year, month) of a day count, for any int (no datetime range).

    Civil-from-days in integer arithmetic, so transforms work on every stored long.

    >>> days_to_year_month(17486), days_to_year_month(-1), days_to_year_month(-719468)
    ((2017, 11), (1969, 12), (0, 3))
    """
    z = days + 719_468  # days since 0000-03-01
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month


# ISO-8601 strings, as Appendix D's JSON single values use them: "2017-11-16",
# "22:31:08.123456", "2017-11-16T22:31:08.123456" and "2017-11-16T22:31:08.123456+00:00".
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_ISO_TIME = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?", re.ASCII)
_ISO_TIMESTAMP = re.compile(r"([^T]+)T([^Z+-]+)(Z|[+-]\d{2}:\d{2})?", re.ASCII)
_FRACTION = re.compile(r"(.*?)(?:\.(\d{1,9}))?", re.ASCII | re.DOTALL)


def days_to_iso(days: int) -> str:
    """``YYYY-MM-DD``; raises OverflowError outside the years 1-9999."""
    return days_to_date(days).isoformat()


def micros_to_iso_time(micros: int) -> str:
    """``HH:MM:SS.ffffff``, always with six fraction digits."""
    seconds, fraction = divmod(micros, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:{second:02d}.{fraction:06d}"


def micros_to_iso_timestamp(micros: int, utc: bool) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffff``, with ``+00:00`` appended if ``utc``."""
    days, time_micros = divmod(micros, MICROS_PER_DAY)
    return f"{days_to_iso(days)}T{micros_to_iso_time(time_micros)}{'+00:00' if utc else ''}"


def nanos_to_iso_timestamp(nanos: int, utc: bool) -> str:
    """``YYYY-MM-DDTHH:MM:SS.fffffffff`` (nine fraction digits, Appendix D's
    ``"2017-11-16T22:31:08.123456789"``), with ``+00:00`` appended if ``utc``.

    >>> nanos_to_iso_timestamp(1510871468123456789, utc=True)
    '2017-11-16T22:31:08.123456789+00:00'
    >>> nanos_to_iso_timestamp(-1, utc=False)
    '1969-12-31T23:59:59.999999999'
    """
    micros, nano = divmod(nanos, NANOS_PER_MICRO)
    text = micros_to_iso_timestamp(micros, utc=False)
    return f"{text}{nano:03d}{'+00:00' if utc else ''}"


def iso_ms(millis: int) -> str:
    """A time in milliseconds since the epoch (as the metadata keeps times) as people read it:
    ISO 8601 in UTC, to the millisecond.

    >>> iso_ms(1709251200123)
    '2024-03-01T00:00:00.123Z'
    """
    try:
        text = micros_to_iso_timestamp(millis * 1000, utc=False)
    except OverflowError:
        return f"{millis} ms since the epoch"
    return text[:-3] + "Z"


def iso_to_days(text: str) -> int:
    """Parse ``YYYY-MM-DD``; raises ValueError."""
    m = _ISO_DATE.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO-8601 date: {text!r}")
    return date_to_days(date(*map(int, m.groups())))


def iso_to_time_micros(text: str) -> int:
    """Parse ``HH:MM[:SS[.f]]`` with at most six fraction digits; raises ValueError."""
    m = _ISO_TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO-8601 time with at most microsecond precision: {text!r}")
    hour, minute, second, fraction = m.groups()
    micros = int((fraction or "0").ljust(6, "0"))
    return time_to_micros(time(int(hour), int(minute), int(second or 0), micros))


def iso_to_timestamp_nanos(text: str) -> tuple[int, bool]:
    """Parse ``<date>T<time>[Z|+HH:MM|-HH:MM]`` with up to nine fraction digits: nanoseconds
    from the epoch (in UTC if zoned), and whether the string had a zone offset. Raises
    ValueError.

    >>> iso_to_timestamp_nanos("2017-11-16T22:31:08.123456789")
    (1510871468123456789, False)
    """
    m = _ISO_TIMESTAMP.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO-8601 timestamp: {text!r}")
    day_part, time_part, offset = m.groups()
    fraction = _FRACTION.fullmatch(time_part)
    assert fraction is not None  # the pattern matches any text
    whole, digits = fraction.groups()
    if "." in whole:
        raise ValueError(f"not an ISO-8601 timestamp with at most nanosecond precision: {text!r}")
    nanos = (iso_to_days(day_part) * NANOS_PER_DAY + iso_to_time_micros(whole) * NANOS_PER_MICRO
             + int((digits or "0").ljust(9, "0")))
    if offset and offset != "Z":
        shift = (int(offset[1:3]) * 60 + int(offset[4:6])) * 60 * MICROS_PER_SECOND
        nanos -= (-shift if offset[0] == "-" else shift) * NANOS_PER_MICRO
    return nanos, offset is not None


def iso_to_timestamp_micros(text: str) -> tuple[int, bool]:
    """Parse ``<date>T<time>[Z|+HH:MM|-HH:MM]``: micros from the epoch (in UTC if zoned), and
    whether the string had a zone offset. Raises ValueError."""
    m = _ISO_TIMESTAMP.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO-8601 timestamp: {text!r}")
    day_part, time_part, offset = m.groups()
    micros = iso_to_days(day_part) * MICROS_PER_DAY + iso_to_time_micros(time_part)
    if offset and offset != "Z":
        shift = (int(offset[1:3]) * 60 + int(offset[4:6])) * 60 * MICROS_PER_SECOND
        micros -= -shift if offset[0] == "-" else shift
    return micros, offset is not None
