"""`any_phrase` answers exactly as one search of the phrases' union, though it tries them
only where a word they can start with starts.

Compared on every message of the classifier's differential corpus, on texts made to match
each phrase alternative (hypothesis, from the alternative itself) set inside other words
and marks, and on any text. The table of start words is worked out for every alternative:
none falls back to the whole search.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.grading import cues
from bridge.grading.cues import _ANY_PHRASE, PHRASES, _alternatives, any_phrase
from tests.grading.test_classify_differential import CORPUS, MARKS


def _same(text: str) -> None:
    lowered = text.lower()
    assert any_phrase(lowered) == (_ANY_PHRASE.search(lowered) is not None), lowered


def test_every_alternative_has_its_start_words() -> None:
    assert cues._phrase_starts() is not None
    alternatives = [a for p, _, _ in PHRASES for a in _alternatives(p)]
    assert len(alternatives) > len(PHRASES)  # split at the top-level `|` only
    assert all(a.startswith(r"\b") for a in alternatives)
    assert "|".join(_alternatives(PHRASES[4][0])) == PHRASES[4][0]


def test_identical_on_the_corpus() -> None:
    seen = set()
    for prev, reply, nxt in CORPUS:
        for text in (prev, reply, nxt):
            if text not in seen:
                seen.add(text)
                _same(text)
    assert sum(any_phrase(t.lower()) for t in seen) > 100  # phrases do occur in it


_ALTERNATIVES = [a for p, _, _ in PHRASES for a in _alternatives(p)]


@pytest.mark.parametrize("alternative", _ALTERNATIVES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_identical_on_texts_made_to_match(alternative: str, data: st.DataObject) -> None:
    made = data.draw(st.from_regex(re.compile(alternative), fullmatch=True))
    before = data.draw(st.sampled_from(["", "x", "ok ", "na, ", "_", "wie", "é", *MARKS]))
    after = data.draw(st.sampled_from(["", "x", " ok", "!", "_", "ß", *MARKS]))
    for text in (made, before + made + after, f"{before} {made} {after}"):
        assert any_phrase(text) == (_ANY_PHRASE.search(text) is not None), text
    assert any_phrase(made)  # what an alternative matches whole is found


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_identical_on_any_text(text: str) -> None:
    _same(text)
