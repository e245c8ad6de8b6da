"""`_rephrase_score` takes each text's content words once and the reply's only when the
next message has a new word; its figures are those of the plain formula on every case
of the labelled sets (the labels themselves are checked by test_eval)."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.grading.classify import _rephrase_score
from bridge.grading.text import Related, content_words, similarity

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
