"""When should a reminder fire? `parse_when` turns `tomorrow 9:00 call the dentist`
into an aware instant, the rest of the text, and a short echo of what it understood.

Pure: the current time and the zone are passed in. English and German.
Rules (see docs/architecture.md, "Time language"):
- a clock time alone (`at 17:30`, `um 17:30`) is today, or tomorrow once past;
- a day without a clock is 09:00 (`tonight`/`Abend` 19:00, `afternoon` 15:00);
- `monday` may be today if the time is still ahead; `next monday` never is;
- a date without a year is the next one that is still ahead;
- minutes and hours are elapsed time, days and months keep the wall clock;
- anything in the past, or more than 5 years ahead, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from bridge.schedule.when_echo import DAY_LABELS, duration, skipped_note, stamp
from bridge.schedule.when_errors import WhenError, make_error
from bridge.schedule.when_grammar import Reading, read
from bridge.schedule.when_local import add_months, resolve_local, to_local, utc
from bridge.schedule.when_tokens import WhenFail, tokenize
from bridge.schedule.when_words import GERMAN_HINTS

__all__ = ["When", "WhenError", "parse_when"]

MAX_YEARS: Final = 5
DEFAULT_HOUR: Final = 9


@dataclass(frozen=True, slots=True)
class When:
    """A parsed time: the instant (aware, in the person's zone), the rest, the echo."""

    at: datetime
    rest: str
    echo: str  # "tomorrow, Wed 2 Dec 09:00"
    lang: str  # "en" | "de": the language the phrase was written in


def parse_when(text: str, now: datetime, tz: ZoneInfo, lang: str | None = None) -> When | WhenError:
    """Read the time phrase at the start of `text` (e.g. a `/remind` argument)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    tokens = tokenize(text)
    lang = lang or _language([t.word for t in tokens[:6]])
    if not tokens:
        return make_error("empty", "", lang)
    try:
        r = read(tokens)
        if not r.used:
            raise WhenFail("not_understood", repr(_clip(text)))
        at, wanted = _place(r, to_local(now, tz), tz)
    except WhenFail as fail:
        return make_error(fail.code, fail.detail, lang)
    echo = _echo(r, at, to_local(now, tz), lang) + (
        skipped_note(wanted, at, lang) if wanted else ""
    )
    if utc(at) <= utc(now):
        return make_error("past", echo, lang)
    local_now = to_local(now, tz)
    limit = resolve_local(add_months(local_now.date(), 12 * MAX_YEARS), local_now.time(), tz)
    if utc(at) > utc(limit):
        return make_error("too_far", f"{echo}; the limit is {MAX_YEARS} years", lang)
    rest = text[r.used[-1].end :].lstrip(" \t\r\n:,-–—").rstrip()
    return When(at=at, rest=rest, echo=echo, lang=lang)


def _language(words: list[str]) -> str:
    return "de" if any(w in GERMAN_HINTS for w in words) else "en"


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 40 else text[:40] + "…"


def _place(r: Reading, now: datetime, tz: ZoneInfo) -> tuple[datetime, time | None]:
    """The instant a reading means, seen from local `now`; and the wall time asked for."""
    if r.relative:
        return _relative(r, now, tz)
    wanted = _wall_clock(r)
    today = now.date()
    if r.date is not None:
        return _dated(r.date, wanted, now, tz), wanted
    if r.weekday is not None:
        ahead = (r.weekday - today.weekday()) % 7
        if ahead == 0 and (r.weekday_next or utc(resolve_local(today, wanted, tz)) <= utc(now)):
            ahead = 7
        return resolve_local(today + timedelta(days=ahead), wanted, tz), wanted
    if r.day_offset is not None:
        return resolve_local(today + timedelta(days=r.day_offset), wanted, tz), wanted
    at = resolve_local(today, wanted, tz)  # a clock time alone: today, or tomorrow
    if utc(at) <= utc(now):
        at = resolve_local(today + timedelta(days=1), wanted, tz)
    return at, wanted


def _relative(r: Reading, now: datetime, tz: ZoneInfo) -> tuple[datetime, time | None]:
    at, wanted = now, None
    if r.days or r.months:
        day = add_months(now.date(), r.months) + timedelta(days=r.days)
        wanted = _wall_clock(r) if r.clock else now.time().replace(tzinfo=None)
        at = resolve_local(day, wanted, tz)
    if r.seconds:
        at = (at.astimezone(UTC) + timedelta(seconds=r.seconds)).astimezone(tz)
    return at, wanted


def _wall_clock(r: Reading) -> time:
    pm_hint = r.part[1] if r.part else False
    if r.clock is not None:
        return time(r.clock.hour24(pm_hint), r.clock.minute, r.clock.second)
    return time(r.part[0] if r.part else DEFAULT_HOUR)


def _dated(ymd: tuple[int | None, int, int], wanted: time, now: datetime, tz: ZoneInfo) -> datetime:
    year, month, day = ymd
    years = [year] if year is not None else list(range(now.year, now.year + MAX_YEARS + 4))
    valid: list[datetime] = []
    for y in years:
        try:
            valid.append(resolve_local(date(y, month, day), wanted, tz))
        except ValueError:
            continue
        if year is not None or utc(valid[-1]) > utc(now):
            return valid[-1]
    raise WhenFail("invalid_date", f"no {day:02d}.{month:02d}.{year or ''} in the calendar")


def _echo(r: Reading, at: datetime, now: datetime, lang: str) -> str:
    when = stamp(at, now, lang)
    if r.relative:
        parts = []
        if r.months:
            unit = ("month", "months") if lang == "en" else ("Monat", "Monaten")
            parts.append(f"{r.months} {unit[r.months != 1]}")
        if r.days or r.seconds:
            parts.append(duration(r.days * 86400 + r.seconds, lang))
        return f"in {' '.join(parts or [duration(0, lang)])}, {when}"  # "in 0m": 0 seconds
    label = DAY_LABELS[lang].get((at.date() - now.date()).days)
    return f"{label}, {when}" if label else when
