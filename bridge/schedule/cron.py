"""Five-field cron expressions (`*/15 * * * *`, `0 7 * * mon-fri`): parse, match, next run.

Semantics follow Vixie cron (and cronie): fields minute, hour, day of month,
month, day of week (0 and 7 are Sunday; names `jan`, `mon`; ranges and
steps `1-5`, `*/15`, `10-50/20`, `5/15`). When day of month AND day of week
are both restricted (neither starts with `*`), a day matches if EITHER
matches (`0 0 1 * mon` is the 1st and every Monday). Macros: `@hourly`,
`@daily`, `@midnight`, `@weekly`, `@monthly`, `@yearly`, `@annually`.

Times are wall-clock times in the job's zone; the DST rule is `when_local`'s
(a skipped time runs at the end of the gap, once; a repeated time runs at
its first occurrence, once). Only a job whose hour field is `*` also runs
in the repeated hour, as Vixie cron does for jobs that run every hour.
"""

from __future__ import annotations

import calendar
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from bridge.schedule.when_local import is_ambiguous, resolve_local, to_local, utc
from bridge.schedule.when_tokens import WhenFail

MACROS: Final[dict[str, str]] = {
    "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}  # fmt: skip
_MONTH_NAMES: Final[tuple[str, ...]] = tuple(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
)
_DOW_NAMES: Final[tuple[str, ...]] = tuple(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])
# (low, high, names) per field; day of week allows 7 (Sunday) on input.
_FIELDS: Final[tuple[tuple[str, int, int, tuple[str, ...]], ...]] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTH_NAMES),
    ("day of week", 0, 7, _DOW_NAMES),
)
_ITEM = re.compile(r"(\*|[0-9a-z]{1,3}(?:-[0-9a-z]{1,3})?)(?:/(\d{1,2}))?")
# How far ahead a match is looked for: Feb 29 on a given weekday can take 28 years.
_SEARCH_DAYS: Final = 366 * 29


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A parsed cron expression. Weekdays are Python's (Monday 0 .. Sunday 6)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    dom_star: bool
    dow_star: bool
    text: str  # the five fields as written (macros expanded), re-parseable

    def day_matches(self, day: date) -> bool:
        """Vixie cron's rule: month, then day-of-month OR day-of-week if both are set."""
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = day.weekday() in self.weekdays
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow


def parse_cron(expr: str) -> CronSpec:
    """Parse five fields or a macro; raises `WhenFail("bad_cron")` with the reason."""
    text = MACROS.get(expr.strip().lower(), expr.strip().lower())
    if text.startswith("@"):
        raise WhenFail("bad_cron", f"unknown macro {expr.strip()!r}")
    fields = text.split()
    if len(fields) != 5:
        raise WhenFail("bad_cron", f"cron needs 5 fields, got {len(fields)}")
    sets = [_field(f, *spec) for f, spec in zip(fields, _FIELDS, strict=True)]
    weekdays = frozenset((d - 1) % 7 for d in sets[4])  # cron Sunday 0/7 -> Python 6
    spec = CronSpec(
        sets[0], sets[1], sets[2], sets[3], weekdays,
        dom_star=fields[2].startswith("*"), dow_star=fields[4].startswith("*"),
        text=" ".join(fields),
    )  # fmt: skip
    if spec.dow_star and not _some_day_exists(spec):
        raise WhenFail("bad_cron", f"{' '.join(fields[2:4])!r}: that day never comes")
    return spec


def _field(field: str, name: str, low: int, high: int, names: tuple[str, ...]) -> frozenset[int]:
    out: set[int] = set()
    for item in field.split(","):
        m = _ITEM.fullmatch(item)
        if m is None:
            raise WhenFail("bad_cron", f"{name}: cannot read {item!r}")
        body, step_s = m.groups()
        step = int(step_s) if step_s else 1
        if step == 0:
            raise WhenFail("bad_cron", f"{name}: a step of 0")
        if body == "*":
            start, stop = low, high
        else:
            first, _, last = body.partition("-")
            start = _value(first, name, low, high, names)
            stop = _value(last, name, low, high, names) if last else (high if step_s else start)
        if start > stop:
            raise WhenFail("bad_cron", f"{name}: {item!r} runs backwards")
        out.update(range(start, stop + 1, step))
    return frozenset(out)


def _value(word: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    if word in names:
        return names.index(word) + (1 if name == "month" else 0)
    if not word.isdigit() or not low <= int(word) <= high:
        raise WhenFail("bad_cron", f"{name}: {word!r} is not in {low}-{high}")
    return int(word)


def _some_day_exists(spec: CronSpec) -> bool:
    """True if some listed day exists in some listed month (Feb 29 counts)."""
    longest = {m: calendar.monthrange(2000, m)[1] for m in range(1, 13)}  # 2000: leap
    return any(d <= longest[m] for m in spec.months for d in spec.days)


def next_cron(spec: CronSpec, after: datetime, tz: ZoneInfo) -> datetime:
    """The first run strictly after `after`, as an aware datetime in `tz`."""
    start, after_utc = to_local(after, tz), utc(after)
    day = start.date()
    for _ in range(_SEARCH_DAYS):
        if day.month not in spec.months:
            day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
            continue
        if spec.day_matches(day):
            first = start if day == start.date() else None
            for at in _slots(spec, day, tz, first):
                if utc(at) > after_utc:
                    return at
        day += timedelta(days=1)
    raise WhenFail("bad_cron", f"{spec.text!r} never runs")  # unreachable once parsed


def _slots(spec: CronSpec, day: date, tz: ZoneInfo, start: datetime | None) -> Iterator[datetime]:
    """The runs on `day` in order of real time, from about `start` (local) on."""
    if _steady(day, tz):  # no clock change today: wall order is time order
        floor = (start.hour, start.minute) if start else (0, 0)
        for hour in sorted(h for h in spec.hours if h >= floor[0]):
            for minute in sorted(spec.minutes):
                if (hour, minute) >= floor:
                    yield datetime.combine(day, time(hour, minute), tzinfo=tz)
        return
    yield from _slots_on_change_day(spec, day, tz)


def _steady(day: date, tz: ZoneInfo) -> bool:
    today = datetime.combine(day, time(0), tzinfo=tz).utcoffset()
    return today == datetime.combine(day + timedelta(days=1), time(0), tzinfo=tz).utcoffset()


def _slots_on_change_day(spec: CronSpec, day: date, tz: ZoneInfo) -> Iterator[datetime]:
    """Gap slots collapse to the gap's end; a repeated hour runs twice only for hour `*`."""
    hour_star = len(spec.hours) == 24
    minutes = sorted(spec.minutes)
    for hour in sorted(spec.hours):
        repeated = False
        for minute in minutes:
            wall = time(hour, minute)
            yield resolve_local(day, wall, tz)
            repeated = repeated or is_ambiguous(datetime.combine(day, wall), tz)
        if repeated and hour_star:  # the second pass through a repeated hour
            for minute in minutes:
                naive = datetime.combine(day, time(hour, minute))
                if is_ambiguous(naive, tz):
                    yield naive.replace(tzinfo=tz, fold=1).astimezone(UTC).astimezone(tz)


def min_gap_minutes(spec: CronSpec) -> int:
    """The shortest wall-clock distance between two runs (the day's wrap included)."""
    marks = sorted(h * 60 + m for h in spec.hours for m in spec.minutes)
    gaps = [b - a for a, b in itertools.pairwise(marks)]
    gaps.append(marks[0] + 1440 - marks[-1])
    return min(gaps)
