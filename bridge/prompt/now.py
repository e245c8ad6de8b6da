""" "Now" for the model: the date, weekday and time in the person's zone, to the minute.

It is not a prompt block: it goes in front of the newest user message
(`LoadoutPrompt.now_note`), so the system prompt and the stored history stay
byte-identical from turn to turn and a provider's prefix cache keeps them
(measured in bench/prompt_now.py; see docs/architecture.md). Minute resolution:
two turns in the same minute get the same bytes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo


def now_note(now: float, zone: str) -> str:
    """`[Now: Tuesday 1 December 2026, 14:05 (Europe/Berlin, UTC+01:00)]` and a newline."""
    at = datetime.fromtimestamp(now, UTC).astimezone(ZoneInfo(zone))
    offset = at.strftime("%z")
    utc = f"UTC{offset[:3]}:{offset[3:]}"
    day = f"{at.strftime('%A')} {at.day} {at.strftime('%B %Y')}"
    return f"[Now: {day}, {at.strftime('%H:%M')} ({zone}, {utc})]"
