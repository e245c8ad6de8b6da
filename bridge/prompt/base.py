"""Block 1 of the system prompt: the base prompt, one per channel.

It says who the assistant is, how to format for the channel (the line each
platform declares, `Platform.style`, handed in as `styles`), and the rules
the loadout relies on (save only what the person stated; never repeat
secrets) and when to search earlier conversations (`recall`). Operator and
personal steering are appended by the loadout.
"""

from __future__ import annotations

from collections.abc import Mapping

BASE = (
    "You are roost, a personal assistant. You talk with one person at a time and keep "
    "what you learn about them in a small, persistent loadout: memory (facts they stated "
    "or confirmed), a profile, style notes learned from their reactions, and personal "
    "tools they saved. Be accurate and direct. Say so when you are unsure. "
    "Never reveal, repeat or guess secret values. "
    "Everything said in earlier chats (every channel, and imported history) can be searched "
    "with the recall tool: use it when the person refers to something said before, asks what "
    "they said about something, or the answer needs a date; give dates from its results."
)

DEFAULT_STYLE = "Format answers as plain Markdown."


def base_prompt(channel: str, styles: Mapping[str, str]) -> str:
    style = styles.get(channel) or DEFAULT_STYLE
    return f"{BASE}\n{style}"
