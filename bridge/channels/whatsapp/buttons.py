"""One-tap offers (`Final.actions`) as WhatsApp's interactive messages (pure).

Meta's "Interactive reply buttons messages": up to 3 buttons, each a
`reply {id (<= 256), title (<= 20 characters, unique)}`, under a body of at
most 1024 characters. With more offers or a longer label, an "Interactive
list message": one button (<= 20) opening up to 10 rows `{id (<= 200),
title (<= 24)}`. Past that, or when a label does not fit even a row, the
offers are written into the text as "/command — label" lines, as the
terminal shows them. A press arrives as an `interactive` message whose
`button_reply` or `list_reply` carries the id: the offer's command, which
the channel hands to the core as the person's next message (the same
access checks as typing it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridge.types.messages import Action

MAX_BUTTONS, BUTTON_TITLE = 3, 20
MAX_ROWS, ROW_TITLE, ROW_ID = 10, 24, 200
BODY = 1024
LIST_BUTTON = "Choose"
LIST_SECTION = "Options"
TAP = "Tap to answer:"


def interactive(actions: Sequence[Action], body: str) -> dict[str, Any] | None:
    """The `interactive` object offering `actions` under `body`; None when they do
    not fit (the caller writes them as text, `as_text`)."""
    if not actions or len(body) > BODY or not body.strip():
        return None
    labels = [a.label.strip() for a in actions]
    distinct = len(set(labels)) == len(labels) and all(labels)
    if not distinct:
        return None
    if len(actions) <= MAX_BUTTONS and all(len(label) <= BUTTON_TITLE for label in labels):
        buttons = [
            {"type": "reply", "reply": {"id": a.command, "title": label}}
            for a, label in zip(actions, labels, strict=True)
        ]
        return {"type": "button", "body": {"text": body}, "action": {"buttons": buttons}}
    fits = all(
        len(label) <= ROW_TITLE and len(a.command) <= ROW_ID
        for a, label in zip(actions, labels, strict=True)
    )
    if len(actions) <= MAX_ROWS and fits:
        rows = [{"id": a.command, "title": label} for a, label in zip(actions, labels, strict=True)]
        return {
            "type": "list",
            "body": {"text": body},
            "action": {"button": LIST_BUTTON, "sections": [{"title": LIST_SECTION, "rows": rows}]},
        }
    return None


def as_text(actions: Sequence[Action]) -> str:
    """The offers as lines to append to the answer (what to send to take one)."""
    return "\n".join(f"{a.command} — {a.label}" for a in actions)
