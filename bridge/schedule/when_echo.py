"""What the parser understood, said back: the confirmation echo and error examples."""

from __future__ import annotations

from datetime import datetime, time
from typing import Final

from bridge.schedule.when_words import MONTH_NAMES, WEEKDAY_NAMES

DAY_LABELS: Final[dict[str, dict[int, str]]] = {
    "en": {-2: "two days ago", -1: "yesterday", 0: "today", 1: "tomorrow", 2: "day after tomorrow"},
    "de": {-2: "vorgestern", -1: "gestern", 0: "heute", 1: "morgen", 2: "übermorgen"},
}
_UNIT_NAMES: Final[dict[str, tuple[tuple[str, str, int], ...]]] = {
    "en": (("day", "days", 86400), ("hour", "hours", 3600), ("minute", "minutes", 60),
           ("second", "seconds", 1)),
    "de": (("Tag", "Tagen", 86400), ("Stunde", "Stunden", 3600), ("Minute", "Minuten", 60),
           ("Sekunde", "Sekunden", 1)),
}  # fmt: skip

EXAMPLES: Final[dict[str, dict[str, str]]] = {
    "en": {
        "default": "in 20m take the bread out",
        "past": "tomorrow 9:00 call the dentist",
        "invalid_time": "at 17:30 leave the office",
        "invalid_date": "2026-12-24 18:00 christmas dinner",
        "ambiguous": "2026-12-24 18:00 (or 24.12. 18:00) christmas dinner",
        "too_far": "2027-06-01 9:00 renew the passport",
        "negative": "in 5m check the oven",
        "every": "weekdays 7:30 summarize my inbox",
        "no_time": "weekdays 7:30 summarize my inbox",
        "too_often": "1h me.check_site",
        "bad_cron": "0 7 * * 1-5 summarize my inbox",
    },
    "de": {
        "default": "in 20 Minuten Brot rausholen",
        "past": "morgen 9 Uhr Zahnarzt anrufen",
        "invalid_time": "um 17:30 Feierabend",
        "invalid_date": "24.12.2026 18:00 Bescherung",
        "ambiguous": "24.12. 18 Uhr (oder 2026-12-24 18:00) Bescherung",
        "too_far": "01.06.2027 9 Uhr Pass verlängern",
        "negative": "in 5 Minuten Ofen prüfen",
        "every": "werktags 7:30 fasse meine Mails zusammen",
        "no_time": "werktags 7:30 fasse meine Mails zusammen",
        "too_often": "1h me.check_site",
        "bad_cron": "0 7 * * 1-5 fasse meine Mails zusammen",
    },
}


def stamp(at: datetime, now: datetime, lang: str) -> str:
    """`Wed 2 Dec 09:00` (`Mi 2. Dez 09:00`); the year only when not this year."""
    wd = WEEKDAY_NAMES[lang][at.weekday()]
    mon = MONTH_NAMES[lang][at.month - 1]
    year = f" {at.year}" if at.year != now.year else ""
    clock = at.strftime("%H:%M:%S" if at.second else "%H:%M")
    if lang == "de":
        return f"{wd} {at.day}. {mon}{year} {clock}"
    return f"{wd} {at.day} {mon}{year} {clock}"


def duration(seconds: float, lang: str) -> str:
    """`1 hour 30 minutes` / `1 Stunde 30 Minuten`, largest units first."""
    left = round(seconds)
    parts: list[str] = []
    for one, many, size in _UNIT_NAMES[lang]:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    return " ".join(parts) or ("0 seconds" if lang == "en" else "0 Sekunden")


def skipped_note(wanted: time, at: datetime, lang: str) -> str:
    """A note when the clock change moved the time (`02:30` does not exist that night)."""
    if at.time().replace(tzinfo=None) == wanted.replace(tzinfo=None):
        return ""
    w = wanted.strftime("%H:%M")
    if lang == "de":
        return f" ({w} gibt es an dem Tag wegen der Zeitumstellung nicht)"
    return f" ({w} does not exist that day: the clocks go forward)"
