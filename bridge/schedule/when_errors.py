"""A time phrase that cannot be scheduled: the error type and its message, EN and DE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bridge.schedule.when_echo import EXAMPLES

_HEADLINES: Final[dict[str, dict[str, str]]] = {
    "en": {
        "empty": "No time given", "not_understood": "I could not read a time",
        "past": "That time is not in the future", "invalid_time": "That is not a time of day",
        "invalid_date": "That date does not exist", "ambiguous": "That date is ambiguous",
        "too_far": "That is too far ahead", "negative": "A negative duration",
        "no_time": "At what time?", "too_often": "That runs too often",
        "bad_cron": "That cron expression is not valid",
    },
    "de": {
        "empty": "Keine Zeit angegeben", "not_understood": "Ich konnte keine Zeit lesen",
        "past": "Diese Zeit liegt nicht in der Zukunft", "invalid_time": "Das ist keine Uhrzeit",
        "invalid_date": "Dieses Datum gibt es nicht", "ambiguous": "Dieses Datum ist mehrdeutig",
        "too_far": "Das liegt zu weit in der Zukunft", "negative": "Eine negative Dauer",
        "no_time": "Um wie viel Uhr?", "too_often": "Das läuft zu oft",
        "bad_cron": "Dieser Cron-Ausdruck ist ungültig",
    },
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class WhenError:
    """A phrase that cannot be scheduled; `message` is ready to send to the person."""

    code: str  # empty | not_understood | past | invalid_time | invalid_date | ambiguous ...
    message: str
    understood: str  # what was read before it failed
    example: str  # a phrasing that works

    def __str__(self) -> str:
        return self.message


def make_error(code: str, detail: str, lang: str, example: str | None = None) -> WhenError:
    """The error for `code`, worded in `lang`, with `detail` and a working example."""
    example = example or EXAMPLES[lang].get(code, EXAMPLES[lang]["default"])
    try_ = "Zum Beispiel" if lang == "de" else "Try e.g."
    head = _HEADLINES[lang][code]
    body = f"{head}: {detail}." if detail else f"{head}."
    return WhenError(code, f"{body} {try_}: {example}", detail, example)
