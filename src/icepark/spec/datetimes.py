"""Conversions between Python date/time objects and the spec's stored integers.

Spec, *Primitive Types*: "All time and timestamp values are stored with microsecond precision"
and "Timestamp values are stored as a long that encodes microseconds from the unix epoch"; dates
are days from 1970-01-01 (Appendix D). Integer arithmetic only, so values before 1970 and far from
it are exact (no float rounding).

>>> date_to_days(date(2017, 11, 16))
17486
>>> days_to_date(-1)
datetime.date(1969, 12, 31)
>>> micros_to_timestamp(timestamp_to_micros(datetime(1900, 1, 1, 0, 0, 0, 1)))
datetime.datetime(1900, 1, 1, 0, 0, 0, 1)
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

EPOCH_DATE = date(1970, 1, 1)
EPOCH = datetime(1970, 1, 1)
EPOCH_TZ = datetime(1970, 1, 1, tzinfo=UTC)
MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR


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
