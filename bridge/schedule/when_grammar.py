"""The grammar of a time phrase: tokens in, a `Reading` (what was written) out.

A phrase is an optional `me`/`mich`, then either a duration (`in 20m`,
`in einer Stunde`, `2h30m`), optionally followed by a clock time after a
whole number of days (`in 3 days at 9:00`), or any order of one day
(`tomorrow`, `next monday`, `24.12.`, `Dec 24`, `2026-12-24`), one part of
the day (`evening`, `Abend`) and one clock time (`at 9`, `18 Uhr`, `6pm`).
Nothing here knows the current time; `when.py` resolves the reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from bridge.schedule.when_tokens import Clock, Token, WhenFail, read_clock
from bridge.schedule.when_words import (
    AND_WORDS,
    AT_WORDS,
    DAY_WORDS,
    ELAPSED_SECONDS,
    MONTHS,
    NEXT_WORDS,
    NUMBERS,
    ON_WORDS,
    PARTS,
    SELF_WORDS,
    TONIGHT_WORDS,
    UNITS,
    WEEKDAYS,
)

# 5 years and a bit, in seconds: anything longer is refused before any arithmetic.
MAX_SECONDS: Final = 6 * 366 * 86400
_COMPACT = re.compile(r"(?:\d{1,9}(?:s|m|min|h|d|w))+(?:\d{1,2})?")
_COMPACT_PART = re.compile(r"(\d{1,9})(min|s|m|h|d|w)?")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:t(.+))?")
_YMD_SLASH = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})")
_SLASH = re.compile(r"\d{1,2}/\d{1,2}(?:/\d{2,4})?")
_DOTTED = re.compile(r"(\d{1,2})\.(\d{1,2})\.(\d{4})?")
_DAY_NUM = re.compile(r"(\d{1,2})(?:\.|st|nd|rd|th)?")
_YEAR = re.compile(r"\d{4}")


@dataclass
class Reading:
    """What a phrase said, before it is placed in time."""

    seconds: float = 0  # elapsed time (UTC arithmetic)
    days: int = 0  # calendar days and months (wall clock kept)
    months: int = 0
    relative: bool = False
    day_offset: int | None = None  # today 0, tomorrow 1, yesterday -1
    weekday: int | None = None
    weekday_next: bool = False  # "next monday": never today
    date: tuple[int | None, int, int] | None = None  # (year or None, month, day)
    part: tuple[int, bool] | None = None  # (default hour, bare 1..11 means p.m.)
    clock: Clock | None = None
    used: list[Token] = field(default_factory=list)

    @property
    def has_day(self) -> bool:
        return self.day_offset is not None or self.weekday is not None or self.date is not None


def read(tokens: list[Token]) -> Reading:
    """Read the longest time phrase at the start of `tokens`."""
    r = Reading()
    i = 1 if len(tokens) > 1 and tokens[0].word in SELF_WORDS else 0
    start = i
    i = _relative(tokens, i, r)
    if r.relative:
        if r.seconds == 0 and (r.days or r.months):  # `in 3 days at 9:00`
            i = _clock(tokens, i, r, bare_ok=False)
    else:
        i = _absolute(tokens, i, r)
    r.used = tokens[start:i]
    return r


def _absolute(tokens: list[Token], i: int, r: Reading) -> int:
    bare_ok = False
    for _ in range(4):
        j = i
        if not r.has_day:
            j = _day(tokens, j, r)
        if r.part is None:
            j = _part(tokens, j, r)
        day_just_read = j != i
        if r.clock is None:
            j = _clock(tokens, j, r, bare_ok=bare_ok or day_just_read)
        if j == i:
            break
        bare_ok, i = day_just_read, j
    return i


def _relative(tokens: list[Token], i: int, r: Reading) -> int:
    if i < len(tokens) and tokens[i].word == "in":
        j = read_duration(tokens, i + 1, r)
        if j == i + 1:
            nxt = tokens[j].word if j < len(tokens) else ""
            if nxt.startswith("-") and nxt[1:2].isdigit():
                raise WhenFail("negative", "a reminder cannot be in the past")
            raise WhenFail("not_understood", "`in` needs a number and a unit")
        return j
    if i < len(tokens) and _COMPACT.fullmatch(tokens[i].word):
        return read_duration(tokens, i, r)
    return i


def read_duration(tokens: list[Token], i: int, r: Reading) -> int:
    """Read `20m`, `1h30`, `2 hours and 30 minutes`, `einer halben Stunde`."""
    while i < len(tokens):
        word = tokens[i].word
        if _COMPACT.fullmatch(word):
            _add_compact(word, r)
            i += 1
        else:
            got = _number(tokens, i)
            if got is None:
                break
            value, used = got
            unit = UNITS.get(tokens[i + used].word) if i + used < len(tokens) else None
            if unit is None:
                if value < 0:
                    raise WhenFail("negative", "a reminder cannot be in the past")
                raise WhenFail("not_understood", f"in {tokens[i].raw} what? Add a unit")
            _add(value, unit, r)
            i += used + 1
        if i + 1 < len(tokens) and tokens[i].word in AND_WORDS and _starts_amount(tokens, i + 1):
            i += 1
    return i


def _starts_amount(tokens: list[Token], i: int) -> bool:
    return _COMPACT.fullmatch(tokens[i].word) is not None or _number(tokens, i) is not None


def _number(tokens: list[Token], i: int) -> tuple[float, int] | None:
    word = tokens[i].word
    nxt = tokens[i + 1].word if i + 1 < len(tokens) else ""
    if word == "half" and nxt in ("an", "a"):
        return 0.5, 2
    if word in ("anderthalb", "eineinhalb"):
        return 1.5, 1
    if word in NUMBERS:
        if nxt in ("halben", "halbe"):
            return 0.5, 2
        return float(NUMBERS[word]), 1
    if _NUMBER.fullmatch(word):
        return float(word.replace(",", ".")), 1
    return None


def _add_compact(word: str, r: Reading) -> None:
    last = "h"
    for amount, unit in _COMPACT_PART.findall(word):
        unit = unit or ("m" if last == "h" else "")
        if not unit:
            raise WhenFail("not_understood", f"{word!r}: which unit?")
        _add(float(amount), UNITS.get(unit, unit), r)
        last = unit


def _add(value: float, unit: str, r: Reading) -> None:
    if value < 0:
        raise WhenFail("negative", "a reminder cannot be in the past")
    r.relative = True
    if unit in ELAPSED_SECONDS:
        r.seconds += value * ELAPSED_SECONDS[unit]
    elif value != int(value):  # 1.5 days: elapsed; 1.5 months: not a thing
        if unit not in ("d", "w"):
            raise WhenFail("not_understood", "months and years are whole numbers")
        r.seconds += value * 86400 * (7 if unit == "w" else 1)
    elif unit in ("d", "w"):
        r.days += int(value) * (7 if unit == "w" else 1)
    else:
        r.months += int(value) * (12 if unit == "y" else 1)
    if r.seconds + r.days * 86400 + r.months * 31 * 86400 > MAX_SECONDS:
        raise WhenFail("too_far", "that is more than 5 years ahead")


def _day(tokens: list[Token], i: int, r: Reading) -> int:
    n = len(tokens)
    word = tokens[i].word if i < n else ""
    if word == "day" and [t.word for t in tokens[i + 1 : i + 3]] == ["after", "tomorrow"]:
        r.day_offset = 2
        return i + 3
    if word in DAY_WORDS:
        r.day_offset = DAY_WORDS[word]
        return i + 1
    if word in TONIGHT_WORDS:
        r.day_offset, r.part = 0, PARTS["evening"]
        return i + 1
    nxt = tokens[i + 1].word if i + 1 < n else ""
    if word == "this" and nxt in PARTS:
        r.day_offset, r.part = 0, PARTS[nxt]
        return i + 2
    if word in NEXT_WORDS and nxt in WEEKDAYS:
        r.weekday, r.weekday_next = WEEKDAYS[nxt], True
        return i + 2
    if word in ON_WORDS:
        j = _weekday_or_date(tokens, i + 1, r)
        return j if j != i + 1 else i
    return _weekday_or_date(tokens, i, r)


def _weekday_or_date(tokens: list[Token], i: int, r: Reading) -> int:
    if i >= len(tokens):
        return i
    word = tokens[i].word
    if word in WEEKDAYS:
        r.weekday = WEEKDAYS[word]
        return i + 1
    return _date(tokens, i, r)


def _date(tokens: list[Token], i: int, r: Reading) -> int:
    word = tokens[i].word
    if m := _ISO.fullmatch(word):
        r.date = (int(m[1]), int(m[2]), int(m[3]))
        if m[4]:
            got = read_clock([Token(m[4], m[4], 0, 0)], 0)
            if got is None:
                raise WhenFail("invalid_time", f"{tokens[i].raw!r}: no time after T")
            r.clock = got[0]
        return i + 1
    if m := _YMD_SLASH.fullmatch(word):
        r.date = (int(m[1]), int(m[2]), int(m[3]))
        return i + 1
    if _SLASH.fullmatch(word):
        raise WhenFail("ambiguous", f"{tokens[i].raw!r} reads as month/day or day/month")
    if m := _DOTTED.fullmatch(word):
        r.date = (int(m[3]) if m[3] else None, int(m[2]), int(m[1]))
        return i + 1
    return _named_date(tokens, i, r)


def _named_date(tokens: list[Token], i: int, r: Reading) -> int:
    """`Dec 24`, `December 24th 2027`, `24 Dec`, `24. Dezember`, `24th of December`."""
    words = [t.word for t in tokens[i : i + 4]]
    month = day = None
    j = i
    if words[0] in MONTHS and len(words) > 1 and (m := _DAY_NUM.fullmatch(words[1])):
        month, day, j = MONTHS[words[0]], int(m[1]), i + 2
    elif (m := _DAY_NUM.fullmatch(words[0])) and len(words) > 1:
        k = 2 if words[1] == "of" and len(words) > 2 else 1
        if words[k] in MONTHS:
            month, day, j = MONTHS[words[k]], int(m[1]), i + k + 1
    if month is None or day is None:
        return i
    year = None
    if j < len(tokens) and _YEAR.fullmatch(tokens[j].word):
        year, j = int(tokens[j].word), j + 1
    r.date = (year, month, day)
    return j


def _part(tokens: list[Token], i: int, r: Reading) -> int:
    if i >= len(tokens):
        return i
    word = tokens[i].word
    if word in PARTS or (word == "morgen" and r.day_offset is not None):
        r.part = PARTS.get(word, PARTS["morning"])
        if r.day_offset is None and not r.has_day:
            r.day_offset = 0
        return i + 1
    return i


def _clock(tokens: list[Token], i: int, r: Reading, *, bare_ok: bool) -> int:
    at = i < len(tokens) and tokens[i].word in AT_WORDS
    j = i + 1 if at else i
    got = read_clock(tokens, j)
    if got is None or (got[0].kind == "bare" and not (at or bare_ok)):
        if at and j < len(tokens) and tokens[j].word not in ON_WORDS:
            raise WhenFail("invalid_time", f"{tokens[i].raw} {tokens[j].raw!r} is not a time")
        if at and j >= len(tokens):
            raise WhenFail("invalid_time", f"{tokens[i].raw} what time?")
        return i
    r.clock = got[0]
    return j + got[1]
