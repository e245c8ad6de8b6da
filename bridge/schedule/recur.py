"""Recurring jobs: `/every` specs, the next run, and catching up after downtime.

`parse_every` reads `weekdays 7:30 <prompt>`, `1h me.check_site always`,
`montags 9 Uhr ...` or a cron expression, and returns an `Every`: the rule
(an `Interval` of real elapsed seconds, or a `CronSpec` of wall-clock
times in the job's zone), the rest of the text, a canonical `spec` string
that `parse_every` reads back to the same rule (store it with the zone
name), and an echo for the confirmation.

`next_run(every, after)` is strictly after `after`. A job missed while the
daemon was down runs once at start, not once per missed slot (systemd's
`Persistent=`): `due_once(every, last_run, now)` says whether to run it now,
then `next_run(every, now)` is the next slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bridge.schedule.cron import CronSpec, min_gap_minutes, next_cron, parse_cron
from bridge.schedule.recur_grammar import GERMAN_EVERY, Interval, read_every
from bridge.schedule.when_echo import EXAMPLES
from bridge.schedule.when_errors import WhenError, make_error
from bridge.schedule.when_local import utc
from bridge.schedule.when_tokens import WhenFail, tokenize
from bridge.schedule.when_words import GERMAN_HINTS


@dataclass(frozen=True, slots=True)
class Every:
    """A parsed recurrence: the rule, its zone, the rest of the text, spec and echo."""

    rule: Interval | CronSpec
    tz: ZoneInfo
    rest: str  # the prompt or `me.tool_name` plus options (`always`, `on change`)
    spec: str  # canonical: "1h30m" or five cron fields; parse_every(spec) gives the rule
    echo: str  # "weekdays at 07:30 (Europe/Berlin)"


def parse_every(text: str, tz: ZoneInfo, lang: str | None = None) -> Every | WhenError:
    """Read the recurrence at the start of `text` (a `/every` argument)."""
    tokens = tokenize(text)
    german = GERMAN_HINTS | GERMAN_EVERY
    lang = lang or ("de" if any(t.word in german for t in tokens[:6]) else "en")
    if not tokens:
        return make_error("empty", "", lang, _example(lang))
    try:
        got = read_every(tokens, text)
    except WhenFail as fail:
        return make_error(fail.code, fail.detail, lang, _example(lang, fail.code))
    if got is None:
        detail = repr(text.strip()[:40])
        return make_error("not_understood", detail, lang, _example(lang))
    rule, end, echo = got
    rest = text[end:].lstrip(" \t\r\n:,-–—").rstrip()
    spec = rule.text if isinstance(rule, CronSpec) else _interval_spec(rule.seconds)
    return Every(rule=rule, tz=tz, rest=rest, spec=spec, echo=f"{echo[lang]} ({tz.key})")


def _example(lang: str, code: str = "every") -> str:
    own = code in ("no_time", "too_often", "bad_cron")
    return EXAMPLES[lang][code if own else "every"]


def _interval_spec(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")


def next_run(every: Every, after: datetime) -> datetime:
    """The first run strictly after `after` (aware), in the job's zone."""
    if after.tzinfo is None:
        raise ValueError("after must be timezone-aware")
    if isinstance(every.rule, Interval):
        step = timedelta(seconds=every.rule.seconds)
        return (after.astimezone(UTC) + step).astimezone(every.tz)
    return next_cron(every.rule, after, every.tz)


def due_once(every: Every, last_run: datetime, now: datetime) -> bool:
    """True if at least one slot passed since `last_run` (or creation): run once now."""
    return utc(next_run(every, last_run)) <= utc(now)


def catch_up(every: Every, last_run: datetime, now: datetime) -> tuple[bool, datetime]:
    """(run once now?, the next slot after now): the restart rule in one call."""
    return due_once(every, last_run, now), next_run(every, now)


def min_interval(every: Every) -> timedelta:
    """The shortest distance between two runs, on the wall-clock grid for cron rules."""
    if isinstance(every.rule, Interval):
        return timedelta(seconds=every.rule.seconds)
    return timedelta(minutes=min_gap_minutes(every.rule))


def check_min_interval(every: Every, minimum: timedelta, lang: str = "en") -> WhenError | None:
    """None if `every` runs at most once per `minimum` (the operator's limit), else why not."""
    shortest = min_interval(every)
    if shortest >= minimum:
        return None
    limit = _interval_spec(int(minimum.total_seconds()))
    gap = _interval_spec(int(shortest.total_seconds()))
    interval = isinstance(every.rule, Interval)  # its spec is its gap: not said twice
    if lang == "de":
        detail = f"alle {gap}" if interval else f"{every.spec} läuft alle {gap}"
        detail += f", erlaubt ist höchstens alle {limit}"
    else:
        detail = f"every {gap}" if interval else f"{every.spec} runs every {gap}"
        detail += f", the limit is once every {limit}"
    return make_error("too_often", detail, lang, f"{limit} me.check_site")


__all__ = [
    "CronSpec",
    "Every",
    "Interval",
    "WhenError",
    "catch_up",
    "check_min_interval",
    "due_once",
    "min_interval",
    "next_run",
    "parse_cron",
    "parse_every",
]
