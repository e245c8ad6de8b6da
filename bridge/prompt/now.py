""" "Now" for the model: the date, weekday and time in the person's zone, to the minute.

It is not a prompt block: it goes in front of the newest user message
(`LoadoutPrompt.now_note`), so the system prompt and the stored history stay
byte-identical from turn to turn and a provider's prefix cache keeps them
(measured in bench/prompt_now.py; see docs/architecture.md). Minute resolution:
two turns in the same minute get the same bytes, so the note is made once per
minute and zone (`_note_at`, a small cache) and reused by every turn in it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo


def now_note(now: float, zone: str) -> str:
    """`[Now: Tuesday 1 December 2026, 14:05 (Europe/Berlin, UTC+01:00)]` and a newline."""
    return _note_at(int(now // 60), zone)


@lru_cache(maxsize=256)
def _note_at(minute: int, zone: str) -> str:
    """The note of one minute (epoch minutes) in `zone`: offsets change on minute bounds."""
    at = datetime.fromtimestamp(minute * 60, UTC).astimezone(ZoneInfo(zone))
    offset = at.strftime("%z")
    utc = f"UTC{offset[:3]}:{offset[3:]}"
    day = f"{at.strftime('%A')} {at.day} {at.strftime('%B %Y')}"
    return f"[Now: {day}, {at.strftime('%H:%M')} ({zone}, {utc})]"
