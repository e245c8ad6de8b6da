"""The grammar of `/every`: an interval, days plus a clock time, or a cron expression.

`1h`, `30m`, `every 2 hours`, `alle 15 Minuten`, `hourly`; `daily 8:00`,
`every day 8am`, `täglich 8 Uhr`, `weekdays at 7:30`, `werktags 7:30`,
`monday 9:00`, `montags 9 Uhr`, `mon,wed,fri 18:00`, `Mo-Fr 7 Uhr`,
`weekends 10:00`; `*/15 * * * *`, `0 7 * * mon-fri`, `@daily`.
Days with a clock time become a `CronSpec`, so one next-run rule serves both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bridge.schedule.cron import MACROS, CronSpec, parse_cron
from bridge.schedule.when_grammar import Reading, read_duration
from bridge.schedule.when_tokens import Token, WhenFail, read_clock
from bridge.schedule.when_words import (
    AND_WORDS,
    AT_WORDS,
    WEEKDAY_NAMES,
    WEEKDAYS,
    WEEKDAYS_SHORT_DE,
)

# Words that mark a German `/every` (the echo and errors follow the language).
GERMAN_EVERY: Final = frozenset(
    {"werktags", "werktag", "werktagen", "wochentags", "täglich", "taeglich", "wochenende",
     "wochenends", "jeden", "jede", "jedes", "alle", "stündlich", "stuendlich", "minütlich"}
)  # fmt: skip
_FULL_NAMES: Final = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "de": ("montags", "dienstags", "mittwochs", "donnerstags", "freitags", "samstags",
           "sonntags"),
}  # fmt: skip
EVERY_WORDS: Final = frozenset({"every", "each", "jeden", "jede", "jedes", "alle", "all"})
_ON_WORDS: Final = frozenset({"on", "an", "am"})
_ALL_DAYS: Final = frozenset(range(7))
_DAY_SETS: Final[dict[str, frozenset[int]]] = {
    "daily": _ALL_DAYS, "day": _ALL_DAYS, "days": _ALL_DAYS, "täglich": _ALL_DAYS,
    "taeglich": _ALL_DAYS, "tag": _ALL_DAYS,
    "weekday": frozenset(range(5)), "weekdays": frozenset(range(5)),
    "werktags": frozenset(range(5)), "werktag": frozenset(range(5)),
    "werktagen": frozenset(range(5)), "wochentags": frozenset(range(5)),
    "weekend": frozenset({5, 6}), "weekends": frozenset({5, 6}),
    "wochenende": frozenset({5, 6}), "wochenends": frozenset({5, 6}),
}  # fmt: skip
_HOURLY: Final = {"hourly": 3600, "stündlich": 3600, "stuendlich": 3600, "hour": 3600,
                  "stunde": 3600, "minute": 60, "minütlich": 60}  # fmt: skip
_CRON_MINUTE = re.compile(r"[\d*][\d*/,\-]*")
_CRON_FIELD = re.compile(r"[\d*a-z][\d*/,\-a-z]*")


@dataclass(frozen=True, slots=True)
class Interval:
    """Every `seconds` of real elapsed time (a DST change does not stretch it)."""

    seconds: int


Echo = dict[str, str]
Got = tuple[Interval | CronSpec, int, Echo]


def read_every(tokens: list[Token], text: str) -> Got | None:
    """(rule, end offset in `text`, echo per language), or None if nothing reads."""
    first = tokens[0].word
    if first in MACROS or first.startswith("@"):  # an unknown macro raises
        spec = parse_cron(first)
        return spec, tokens[0].end, {"en": f"cron {first}", "de": f"cron {first}"}
    if len(tokens) >= 5 and _looks_like_cron(tokens[:5]):
        spec = parse_cron(" ".join(t.word for t in tokens[:5]))
        return spec, tokens[4].end, {"en": f"cron {spec.text}", "de": f"cron {spec.text}"}
    i = 1 if first in EVERY_WORDS and len(tokens) > 1 else 0
    return _interval(tokens, i) or _days_at(tokens, i)


def _looks_like_cron(fields: list[Token]) -> bool:
    if not _CRON_MINUTE.fullmatch(fields[0].word):
        return False
    return all(_CRON_FIELD.fullmatch(f.word) for f in fields[1:])


def _interval(tokens: list[Token], i: int) -> Got | None:
    word = tokens[i].word
    if word in _HOURLY:
        seconds, end = _HOURLY[word], tokens[i].end
    else:
        r = Reading()
        j = read_duration(tokens, i, r)
        if j == i:
            return None
        if r.days or r.months:
            raise WhenFail("not_understood", "for days use `daily 8:00` or a cron expression")
        seconds, end = round(r.seconds), tokens[j - 1].end
    if seconds <= 0:
        raise WhenFail("too_often", "an interval of 0")
    spec = _span(seconds)
    return Interval(seconds), end, {"en": f"every {spec}", "de": f"alle {spec}"}


def _span(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")


def _days_at(tokens: list[Token], i: int) -> Got | None:
    got = _days(tokens, i)
    if got is None:
        return None
    days, j = got
    at = j < len(tokens) and tokens[j].word in AT_WORDS
    clock = read_clock(tokens, j + 1 if at else j)
    if clock is None:
        raise WhenFail("no_time", f"`{' '.join(t.raw for t in tokens[i:j])}` needs a clock time")
    c, used = clock
    if c.second:
        raise WhenFail("invalid_time", "a recurring job runs on whole minutes")
    end = tokens[(j + 1 if at else j) + used - 1].end
    dows = ",".join(sorted(str((d + 1) % 7) for d in days)) if days != _ALL_DAYS else "*"
    spec = parse_cron(f"{c.minute} {c.hour} * * {dows}")
    return spec, end, _days_echo(days, c.hour, c.minute)


def _days(tokens: list[Token], i: int) -> tuple[frozenset[int], int] | None:
    """A set of weekdays: `daily`, `weekdays`, `monday`, `mon,wed,fri`, `Mo-Fr`."""
    if tokens[i].word in _ON_WORDS and i + 1 < len(tokens):
        i += 1
    word = tokens[i].word
    if word in _DAY_SETS:
        return _DAY_SETS[word], i + 1
    days: set[int] = set()
    while i < len(tokens):
        got = _day_list(tokens[i].word)
        if got is None:
            break
        days |= got
        i += 1
        if (
            i + 1 < len(tokens)
            and tokens[i].word in AND_WORDS
            and _day_list(tokens[i + 1].word) is not None
        ):
            i += 1
        elif not tokens[i - 1].raw.endswith(","):
            break
    return (frozenset(days), i) if days else None


def _day_list(word: str) -> set[int] | None:
    """`mon`, `mondays`, `mon,wed,fri`, `mon-fri`, `mo,mi,fr`; None if not all days."""
    out: set[int] = set()
    for item in word.strip(",").split(","):
        first, dash, last = item.partition("-")
        start = _day_name(first)
        end = _day_name(last) if dash else start
        if start is None or end is None or end < start:
            return None
        out.update(range(start, end + 1))
    return out or None


def _day_name(word: str) -> int | None:
    return WEEKDAYS.get(word, WEEKDAYS_SHORT_DE.get(word))


def _days_echo(days: frozenset[int], hour: int, minute: int) -> Echo:
    clock = f"{hour:02d}:{minute:02d}"
    if days == _ALL_DAYS:
        return {"en": f"every day at {clock}", "de": f"täglich um {clock}"}
    if days == frozenset(range(5)):
        return {"en": f"weekdays at {clock}", "de": f"werktags um {clock}"}
    if days == frozenset({5, 6}):
        return {"en": f"weekends at {clock}", "de": f"am Wochenende um {clock}"}
    if len(days) == 1:
        (day,) = days
        return {"en": f"every {_FULL_NAMES['en'][day]} at {clock}",
                "de": f"{_FULL_NAMES['de'][day]} um {clock}"}  # fmt: skip
    en = ", ".join(WEEKDAY_NAMES["en"][d] for d in sorted(days))
    de = ", ".join(WEEKDAY_NAMES["de"][d] for d in sorted(days))
    return {"en": f"every {en} at {clock}", "de": f"{de} um {clock}"}
