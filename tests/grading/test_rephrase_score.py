"""`_rephrase_score` takes each text's content words once and the reply's only when the
next message has a new word; its figures are those of the plain formula on every case
of the labelled sets (the labels themselves are checked by test_eval). `classify`, which
reads the reply only when the similarity alone reaches the rephrase mark, gives the
outcome (label, confidence, reason) of the eager formula on every case."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from bridge.grading.classify import (
    EARLY,
    REPHRASE_AT,
    SHORT,
    Outcome,
    _rephrase_score,
    _strongest,
    classify,
)
from bridge.grading.cues import find_cues
from bridge.grading.text import Related, content_words, similarity, tokens, word_set

HERE = Path(__file__).parent


def plain(previous_user: str, reply: str, next_user: str) -> tuple[float, float]:
    """The formula written out: every text's words, the reply's always."""
    sim = similarity(previous_user, next_user)
    nxt = set(content_words(next_user))
    in_prev = Related(set(content_words(previous_user)))
    in_said = Related(set(content_words(reply)))
    novel = [w for w in nxt if not in_prev.to(w)]
    taken = sum(in_said.to(w) for w in novel)
    return sim, (taken / len(nxt) if nxt else 0.0)


def cases() -> list[tuple[str, str, str]]:
    found = []
    for name in ("outcomes.jsonl", "outcomes_holdout.jsonl"):
        for line in (HERE / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                found.append((row["previous"], row["reply"], row["next"]))
    return found


def test_the_scores_are_the_plain_formulas_on_every_labelled_case() -> None:
    seen = cases()
    assert len(seen) > 100
    for prev, reply, nxt in seen:
        assert _rephrase_score(prev, reply, nxt) == plain(prev, reply, nxt)
    # the same words again, and none new: the reply is not needed to say "nothing taken"
    assert _rephrase_score("plan a trip to Porto", "Sure!", "trip Porto plan") == plain(
        "plan a trip to Porto", "Sure!", "trip Porto plan"
    )


def eager(previous_user: str, reply: str, next_user: str) -> Outcome:
    """`classify` as it was: every score worked out first, the reply's share always."""
    n_tokens = len(tokens(next_user))
    cues = find_cues(next_user)
    rejection, approval = _strongest(cues, -1), _strongest(cues, +1)
    sim, from_reply = plain(previous_user, reply, next_user)
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
    if sim - 0.5 * from_reply >= REPHRASE_AT:
        conf = min(0.95, 0.5 + sim / 2)
        return Outcome("rephrase", conf, f"similar to the previous request ({sim:.2f})")
    if approval is not None and n_tokens <= 3:
        return Outcome("approval", 0.6, f"short acknowledgement {approval.phrase!r}")
    if rejection is not None and n_tokens <= 3:
        return Outcome("rejection", 0.6, f"short refusal {rejection.phrase!r}")
    conf = 0.7 if sim < REPHRASE_AT / 2 else 0.55
    return Outcome("neutral", conf, f"no cue, similarity {sim:.2f}")


def test_classify_gives_the_eager_outcome_on_every_labelled_case() -> None:
    for prev, reply, nxt in cases():
        assert classify(prev, reply, nxt) == eager(prev, reply, nxt)


def test_the_reply_is_read_only_when_the_similarity_reaches_the_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[str] = []

    def words(text: str) -> list[str]:
        read.append(text)
        return content_words(text)

    def distinct(text: str) -> set[str]:
        read.append(text)
        return word_set(text)

    # the module (bridge.grading's `classify` names the function)
    module = importlib.import_module("bridge.grading.classify")
    monkeypatch.setattr(module, "content_words", words)
    monkeypatch.setattr(module, "word_set", distinct)
    reply = "Porto has a lovely old town by the river. " * 50
    assert classify("plan a trip to Porto", reply, "what about Lisbon tomorrow").label == "neutral"
    assert classify("plan a trip to Porto", reply, "thanks, perfect!").label == "approval"
    assert reply not in read  # a new topic, a cue: the long reply was never tokenised
    again = classify("plan a trip to Porto", reply, "plan a trip to Porto by train")
    assert again.label == "rephrase"
    assert reply in read
