"""The grader's similarity helpers answer the same whichever way they work a case out.

`unrelated` compares a few words against a few others pair by pair and looks many up in
a `Related` index; `compare_read` takes each message's distinct words and trigram norm
from its `Read`. Both ways are held to the plain definitions here (`related` over every
pair, the similarity written out), and a rule changed on purpose is told apart by the
differential comparison with the frozen grader, so that comparison can fail.
"""

from __future__ import annotations

import importlib
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.grading import classify as live_classify
from bridge.grading import text
from bridge.grading.classify import Outcome
from bridge.grading.text import compare_read, read_words, related, unrelated
from tests.grading import classify_oracle as old
from tests.grading.test_classify_differential import CORPUS

_stems = st.text(alphabet="abcdeä", min_size=1, max_size=9)


def _plain_unrelated(xs: set[str], others: set[str]) -> set[str]:
    return {x for x in xs if not any(related(x, y) for y in others)}


@pytest.mark.parametrize("small", [0, text.SMALL, 10**9])  # index always, as shipped, pairs
@settings(max_examples=300, deadline=None)
@given(st.sets(_stems, max_size=12), st.sets(_stems, max_size=12))
def test_unrelated_is_related_over_every_pair_either_way(
    small: int, xs: set[str], others: set[str]
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "SMALL", small)
        found = unrelated(xs, others)
    assert sorted(found) == sorted(_plain_unrelated(xs, others))
    assert found == [x for x in xs if x in set(found)]  # in the order of `xs`


def _written_out(a: list[str], b: list[str]) -> float:
    """The similarity as defined: Dice over related stems, plus the trigram cosine."""
    sa, sb = set(a), set(b)
    dice = 0.0
    if sa and sb:
        hits = len(sa - _plain_unrelated(sa, sb)) + len(sb - _plain_unrelated(sb, sa))
        dice = hits / (len(sa) + len(sb))
    ga = Counter(g for w in a for g in text._grams(w))
    gb = Counter(g for w in b for g in text._grams(w))
    cos = 0.0
    if ga and gb:
        dot = sum(v * gb[k] for k, v in ga.items())
        norm_a = math.sqrt(sum(v * v for v in ga.values()))
        norm_b = math.sqrt(sum(v * v for v in gb.values()))
        cos = dot / (norm_a * norm_b)
    return 0.5 * dice + 0.5 * cos


@settings(max_examples=300, deadline=None)
@given(st.lists(_stems | st.just(""), max_size=10), st.lists(_stems, max_size=10))
def test_compare_read_is_the_similarity_written_out(a: list[str], b: list[str]) -> None:
    sim, novel = compare_read(read_words(a), read_words(b))
    assert sim == _written_out(a, b)
    assert set(novel) == _plain_unrelated(set(b), set(a))


def test_a_read_keeps_its_words_distinct_and_its_norm() -> None:
    read = read_words(["wetter", "wetter", "bericht"])
    assert read.distinct == {"wetter", "bericht"}
    assert read.norm == math.sqrt(sum(v * v for v in read.grams.values()))


def _differs_from_the_oracle() -> int:
    differ = 0
    for prev, reply, nxt in CORPUS[::5]:
        o = old.classify(prev, reply, nxt)
        differ += live_classify(prev, reply, nxt) != Outcome(o.label, o.confidence, o.reason)
    return differ


def test_a_changed_rule_is_told_apart_from_the_frozen_grader() -> None:
    """The differential comparison has teeth: the rephrase mark moved, or a word no longer
    a cue, and outputs differ from the oracle's (and none do with the rules as shipped)."""
    cues = importlib.import_module("bridge.grading.cues")
    cls = importlib.import_module("bridge.grading.classify")  # the module, not the function
    assert _differs_from_the_oracle() == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cls, "REPHRASE_AT", 0.6)
        assert _differs_from_the_oracle() > 0
    thanked = Outcome("approval", 0.9, "approval cue 'thanks'")
    with pytest.MonkeyPatch.context() as mp:
        mp.delitem(cues.WORDS, "thanks")
        assert live_classify("a", "b", "thanks") != thanked
    assert live_classify("a", "b", "thanks") == thanked
