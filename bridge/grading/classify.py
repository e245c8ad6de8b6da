"""The outcome grader: what the user's next message says about the last reply.

`classify(previous_user, reply, next_user) -> Outcome` is a pure function.
Labels: approval, rejection, rephrase (the same request again in other
words: the reply missed), neutral (a new topic, or building on the reply).
Explicit cues decide first (rejection over approval); a rephrase is found by
similarity to the previous user message, discounted when the overlap comes
from the reply (building on it). Work a label does not need is skipped: a
cue that decides asks for no similarity, and the reply's words (the longest
text, tokenised and stemmed) are read only when the similarity alone reaches
`REPHRASE_AT`, the one case where the discount can change the label. The next
message is lowered and tokenised once (cues, token count, content words), and
the similarity pass also yields its words new to the previous request, which
are all the reply's share needs. A caller grading a conversation may pass a
`LastRead` it owns (`kept`): the next message's words are then read once, and
reused when it is the previous message of the next turn; the module keeps no
state of its own. tests/grading/test_classify_differential.py holds every
output equal to the grader before these cuts (classify_oracle.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bridge.grading.cues import Cue, lowered_cues
from bridge.grading.text import (
    LastRead,
    compare,
    compare_read,
    content_words,
    lower,
    lowered_tokens,
    read_words,
    unrelated,
    word_set,
    words_of,
)

Label = Literal["approval", "rejection", "rephrase", "neutral"]
LABELS: tuple[Label, ...] = ("approval", "rejection", "rephrase", "neutral")

REPHRASE_AT = 0.40  # similarity from which a message counts as the same request
EARLY = 4  # a cue this close to the start speaks about the reply
SHORT = 8  # a message this short is all reaction


@dataclass(frozen=True)
class Outcome:
    label: Label
    confidence: float  # 0..1
    reason: str


def _rephrase_score(previous_user: str, reply: str, next_user: str) -> tuple[float, float]:
    """Similarity to the previous request, and the share of new words taken from the reply.
    Each text's content words are taken once, the reply's only when a word is new."""
    next_words = content_words(next_user)
    sim, novel = compare(content_words(previous_user), next_words)
    return sim, _from_reply(novel, reply, len(set(next_words)))


def _from_reply(novel: list[str], reply: str, n_words: int) -> float:
    """The share of the next message's `n_words` distinct words that are `novel` (new to
    the previous request) and taken from the reply (the reply's words are read only when
    there is a new word, and indexed only for the lengths of the new words)."""
    if not novel:
        return 0.0
    taken = len(novel) - len(unrelated(set(novel), word_set(reply)))
    return taken / n_words


def _strongest(cues: list[Cue], polarity: int) -> Cue | None:
    found = [c for c in cues if c.polarity == polarity]
    return max(found, key=lambda c: (c.strength, -c.position)) if found else None


def classify(
    previous_user: str, reply: str, next_user: str, kept: LastRead | None = None
) -> Outcome:
    """Label the next user message as approval, rejection, rephrase or neutral. `kept`,
    the caller's, holds the last messages' words read (no output depends on it)."""
    lowered = lower(next_user)  # lowered and tokenised once, for the cues and the words
    next_tokens = lowered_tokens(lowered)
    n_tokens = len(next_tokens)
    cues, _ = lowered_cues(lowered)
    rejection = _strongest(cues, -1) if cues else None
    approval = _strongest(cues, +1) if cues else None

    if rejection is not None and (rejection.strength >= 2 or approval is None):
        conf = 0.95 if rejection.strength >= 3 else 0.8
        return Outcome("rejection", conf, f"rejection cue {rejection.phrase!r}")
    if (
        approval is not None
        and approval.strength >= 2
        and (approval.position < EARLY or n_tokens <= SHORT)
    ):
        conf = 0.9 if n_tokens <= SHORT else 0.75
        return Outcome("approval", conf, f"approval cue {approval.phrase!r}")
    next_words = words_of(next_tokens)
    previous = None if kept is None else kept.get(previous_user)  # read one turn earlier
    if previous is None:
        previous = read_words(content_words(previous_user))
    read = read_words(next_words)
    if kept is not None:
        kept.put(next_user, read)
    sim, novel = compare_read(previous, read)
    n_words = len(set(next_words))
    # the reply's share only lowers the score: below the mark without it, never needed
    if sim >= REPHRASE_AT and sim - 0.5 * _from_reply(novel, reply, n_words) >= REPHRASE_AT:
        conf = min(0.95, 0.5 + sim / 2)
        return Outcome("rephrase", conf, f"similar to the previous request ({sim:.2f})")
    if approval is not None and n_tokens <= 3:
        return Outcome("approval", 0.6, f"short acknowledgement {approval.phrase!r}")
    if rejection is not None and n_tokens <= 3:
        return Outcome("rejection", 0.6, f"short refusal {rejection.phrase!r}")
    conf = 0.7 if sim < REPHRASE_AT / 2 else 0.55
    return Outcome("neutral", conf, f"no cue, similarity {sim:.2f}")
