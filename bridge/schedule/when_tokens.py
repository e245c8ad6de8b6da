"""Tokens of a time phrase and the reading of a clock time (`9:30`, `6pm`, `18 Uhr`).

Only the first few words of a text are tokenized (a time phrase is short),
and a word longer than `MAX_WORD` is never a time word, so the cost is
linear in the input and the regexes only ever see short strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bridge.schedule.when_words import MIDNIGHT_WORDS, NOON_WORDS

MAX_TOKENS: Final = 24
MAX_WORD: Final = 32

_WORD = re.compile(r"\S+")
_CLOCK = re.compile(r"(\d{1,2})(?:[:.](\d{2}))?(?::(\d{2}))?(am|pm|a\.m\.|p\.m\.|a|p|h|uhr)?")
_MERIDIEM: Final = {"am": "am", "a.m.": "am", "a": "am", "pm": "pm", "p.m.": "pm", "p": "pm"}


class WhenFail(Exception):
    """Raised inside the parser; turned into a `WhenError` at the edge."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Token:
    word: str  # lower-cased, trailing punctuation removed
    raw: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """The first `MAX_TOKENS` words of `text`, with their offsets."""
    out: list[Token] = []
    for match in _WORD.finditer(text):
        raw = match.group()
        word = raw.lower().rstrip(",;:!?") if len(raw) <= MAX_WORD else "\x00"
        out.append(Token(word, raw, match.start(), match.end()))
        if len(out) >= MAX_TOKENS:
            break
    return out


@dataclass(frozen=True, slots=True)
class Clock:
    """A time of day as written. `kind`: "24h" (9:00, 18 Uhr), "ampm", "bare" (9)."""

    hour: int
    minute: int
    second: int
    kind: str

    def hour24(self, pm_hint: bool) -> int:
        """The hour on a 24 h clock; a bare 1..11 after `evening` is p.m."""
        if self.kind == "bare" and pm_hint and 1 <= self.hour <= 11:
            return self.hour + 12
        return self.hour


def read_clock(tokens: list[Token], i: int) -> tuple[Clock, int] | None:
    """A clock time at `tokens[i]`: (clock, tokens consumed), or None.

    Raises `WhenFail("invalid_time")` for a clock-shaped word that is not a
    time (`25:00`, `9:60`, `13pm`).
    """
    if i >= len(tokens):
        return None
    word = tokens[i].word
    if word in NOON_WORDS:
        return Clock(12, 0, 0, "24h"), 1
    if word in MIDNIGHT_WORDS:
        return Clock(0, 0, 0, "24h"), 1
    match = _CLOCK.fullmatch(word)
    if match is None:
        return None
    hour_s, minute_s, second_s, suffix = match.groups()
    used = 1
    nxt = tokens[i + 1].word if i + 1 < len(tokens) else ""
    if suffix is None and nxt in (*_MERIDIEM, "uhr"):
        suffix, used = nxt, 2
    if suffix == "h" or (minute_s and "." in word and suffix != "uhr"):
        return None  # `18h` is a duration, `18.30` without Uhr is not a time
    if suffix is None and minute_s is None and int(hour_s) > 23:
        return None  # a bare number that cannot be an hour is not a time
    return _checked(int(hour_s), int(minute_s or 0), int(second_s or 0), suffix, word), used


def _checked(hour: int, minute: int, second: int, suffix: str | None, word: str) -> Clock:
    if minute > 59 or second > 59:
        raise WhenFail("invalid_time", f"{word!r} has no such minute")
    meridiem = _MERIDIEM.get(suffix or "")
    if meridiem is not None:
        if not 1 <= hour <= 12:
            raise WhenFail("invalid_time", f"{word!r}: with am/pm the hour is 1 to 12")
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
        return Clock(hour, minute, second, "ampm")
    if hour > 23:
        raise WhenFail("invalid_time", f"{word!r}: the hour goes from 0 to 23")
    explicit = suffix == "uhr" or ":" in word or "." in word
    return Clock(hour, minute, second, "24h" if explicit else "bare")
