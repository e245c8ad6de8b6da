"""The grader is linear: 100k-character messages of the worst shapes get the right label.

No clock is read. The shapes are what made it quadratic before: many distinct
words (every word compared with every other word), one cue phrase repeated in a
single clause (each hit re-tokenised the clause before it), and one very long
"word". The related-words index is checked against the pairwise definition.
"""

from __future__ import annotations

import random
import string

import pytest

from bridge.grading import classify
from bridge.grading.cues import find_cues
from bridge.grading.text import Related, dice, related

N = 100_000
R = random.Random(99)


def _distinct_words(n: int) -> str:
    words: list[str] = []
    size = 0
    while size < n:
        w = "".join(R.choices(string.ascii_lowercase, k=R.randint(4, 12)))
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n]


def _rep(unit: str) -> str:
    return (unit * (N // len(unit) + 1))[:N]


def test_many_distinct_words_on_all_three_messages() -> None:
    prev, reply, nxt = _distinct_words(N), _distinct_words(N), _distinct_words(N)
    out = classify(prev, reply, nxt)
    assert out.label in ("neutral", "rephrase")
    assert classify(prev, reply, prev).label == "rephrase"


def test_a_cue_repeated_in_one_clause() -> None:
    text = "nope " + _rep("spot on ")
    cues = find_cues(text)
    assert len(cues) >= N // 8 - 2
    positions = [c.position for c in cues if c.phrase == "spot on"]
    assert positions == sorted(positions) and positions[1] - positions[0] == 2
    assert classify("q", "a", text).label == "rejection"


@pytest.mark.parametrize(
    "text",
    [_rep("a"), _rep("ab1"), _rep("=_-"), _rep("no "), _rep("danke schön nicht ")],
    ids=["one word", "alnum run", "punctuation", "no no", "danke nicht"],
)
def test_worst_shapes_finish_with_a_label(text: str) -> None:
    assert classify(text, text, text).label in ("approval", "rejection", "rephrase", "neutral")


def test_related_index_agrees_with_pairwise_definition() -> None:
    alphabet = "abcde"
    for _ in range(300):
        a = {"".join(R.choices(alphabet, k=R.randint(1, 8))) for _ in range(R.randint(0, 8))}
        b = {"".join(R.choices(alphabet, k=R.randint(1, 8))) for _ in range(R.randint(0, 8))}
        index = Related(b)
        for x in a:
            assert index.to(x) == any(related(x, y) for y in b), (x, b)
        expected = (
            (
                sum(any(related(x, y) for y in b) for x in a)
                + sum(any(related(y, x) for x in a) for y in b)
            )
            / (len(a) + len(b))
            if a and b
            else 0.0
        )
        assert dice(a, b) == pytest.approx(expected)
