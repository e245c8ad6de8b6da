"""Local wall-clock time to an instant, the one place that decides DST.

The rule, for reminders and recurring jobs alike:
- a wall time that does not exist (the spring-forward gap, 02:30 in Berlin
  on the last Sunday of March) runs at the end of the gap, the first instant
  that does exist (03:00 local), once;
- a wall time that exists twice (the autumn-back hour) runs at its first
  occurrence (fold=0), once.
Elapsed time (minutes, hours) is counted in UTC; calendar steps (days,
weeks, months) keep the wall-clock time.
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo


def is_gap(naive: datetime, tz: ZoneInfo) -> bool:
    """True if this wall time never happens in `tz` (skipped by DST)."""
    aware = naive.replace(tzinfo=tz)
    back = aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    return back != naive


def is_ambiguous(naive: datetime, tz: ZoneInfo) -> bool:
    """True if this wall time happens twice in `tz` (the autumn-back hour)."""
    a = naive.replace(tzinfo=tz, fold=0).utcoffset()
    b = naive.replace(tzinfo=tz, fold=1).utcoffset()
    return a != b and not is_gap(naive, tz)


def resolve_local(day: date, clock: time, tz: ZoneInfo) -> datetime:
    """The aware instant for `day` at `clock` in `tz`, by the rule above."""
    naive = datetime.combine(day, clock.replace(tzinfo=None, fold=0))
    if not is_gap(naive, tz):
        return naive.replace(tzinfo=tz, fold=0)
    # In a gap, fold=1 reads the wall time with the offset from after the
    # jump (an instant before the gap), fold=0 with the one from before (an
    # instant after it). The jump itself lies between: bisect for it, to the
    # second (every zone in the tz database jumps on a whole second).
    lo = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    hi = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) // 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(tz).replace(tzinfo=None) > naive:
            hi = mid
        else:
            lo = mid
    return hi.astimezone(tz)


def add_months(day: date, months: int) -> date:
    """`day` moved by whole months, the day clamped to the month's length."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def utc(instant: datetime) -> datetime:
    """The instant in UTC. Compare through this: Python compares two datetimes that
    share a tzinfo by wall time, ignoring fold, so 02:30 CEST == 02:30 CET."""
    return instant.astimezone(UTC)


def to_local(instant: datetime, tz: ZoneInfo) -> datetime:
    """An aware instant shown in `tz` (fold set right, as ZoneInfo does)."""
    return instant.astimezone(UTC).astimezone(tz)
