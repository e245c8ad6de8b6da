"""The judge's fixed prompt and its strict parser: pure functions, no model, no clock.

The judge gets a small fixed system prompt and one user message listing one
or more follow-ups, each as the previous request, the first lines of the
answer and the next message. It must answer one line per item, `N: label`,
with a label among approval, rejection, rephrase, neutral (a single item may
be answered by the bare label). Anything else is ignored: a line that is
not `N: label`, a number out of range, an item labelled twice with different
labels; an item left without a valid label is counted as ignored.
`cache_key` names an item by what the judge sees, so the same inputs are
never asked twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.core.words import count
from bridge.grading.classify import LABELS, Label

HEAD_LINES = 3  # the answer's first lines the judge sees
HEAD_CHARS = 300
TEXT_CHARS = 600  # a request or follow-up is cut here (a long paste says little more)

SYSTEM = (
    "You label how a person reacted to an assistant's answer. Each numbered item "
    "gives the person's request, the first lines of the answer and the person's "
    "next message (English or German). Label the next message:\n"
    "approval: the person is content with the answer.\n"
    "rejection: the answer was wrong or unhelpful and the person says or shows it "
    "(sarcasm included) without asking the same thing again.\n"
    "rephrase: the person asks the same thing again in other words because the "
    "answer missed it (other words, shorter or longer, another angle, "
    "'I meant ...').\n"
    "neutral: anything else: a follow-up that builds on the answer, or a new "
    "request, even one that shares many words with the old one.\n"
    "Answer one line per item: the item number, a colon and one word among "
    "approval, rejection, rephrase, neutral. Nothing else."
)

_LINE = re.compile(r"(?:item\s*)?(\d{1,3})\s*[:.)=-]\s*([a-z]+)\.?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """What the judge sees of one follow-up (texts already masked)."""

    previous: str
    reply: str
    next: str


@dataclass(frozen=True, slots=True)
class Parsed:
    labels: tuple[Label | None, ...]  # one per item; None: no valid label
    ignored: int  # items left without a valid label


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def answer_head(reply: str) -> str:
    """The first non-empty lines of an answer, cut at `HEAD_CHARS`."""
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip()][:HEAD_LINES]
    return _one_line(" / ".join(lines), HEAD_CHARS)


def render(items: Sequence[JudgeItem]) -> str:
    """The user message of one judge request."""
    blocks = [
        f"Item {n}\nRequest: {_one_line(it.previous, TEXT_CHARS)}\n"
        f"Answer (first lines): {answer_head(it.reply)}\n"
        f"Next message: {_one_line(it.next, TEXT_CHARS)}"
        for n, it in enumerate(items, 1)
    ]
    return "\n\n".join(blocks) + f"\n\nLabel the {count(len(items), 'item')}, one line each."


def cache_key(item: JudgeItem) -> str:
    """The same request, answer head and follow-up give the same key."""
    seen = [item.previous, answer_head(item.reply), item.next]
    return hashlib.sha256(json.dumps(seen, ensure_ascii=False).encode()).hexdigest()


def _label(word: str) -> Label | None:
    low = word.lower()
    for label in LABELS:
        if low == label:
            return label
    return None


def parse(answer: str, n: int) -> Parsed:
    """Labels for `n` items from the judge's answer; anything but `N: label` is ignored."""
    lines = [ln.strip() for ln in answer.strip().splitlines() if ln.strip()]
    if n == 1 and len(lines) == 1 and (bare := _label(lines[0].rstrip("."))) is not None:
        return Parsed((bare,), 0)
    found: dict[int, Label | None] = {}
    for line in lines:
        m = _LINE.fullmatch(line)
        label = _label(m.group(2)) if m else None
        index = int(m.group(1)) if m else 0
        if label is None or not 1 <= index <= n:
            continue  # not `N: label`: ignored
        if index in found and found[index] != label:
            found[index] = None  # two different labels for one item: neither counts
        elif index not in found:
            found[index] = label
    labels = tuple(found.get(i) for i in range(1, n + 1))
    return Parsed(labels, sum(label is None for label in labels))
