"""A note's term set (each distinct word stemmed once) equals the set of its index terms.

`index_term_set` is what the recall injection splits a saved topic into;
`index_terms` is the stored form of a message. Hypothesis feeds both arbitrary
text, and text made of repeated English and German words, stop words and
letters with diacritics (where the language guess and the folding matter).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.recall.terms import index_term_set, index_terms

WORDS = [
    "the", "and", "der", "und", "nicht", "ist", "body", "revision", "running", "runs",
    "Straße", "café", "Häuser", "naïve", "ÉCOLE", "ǅemal", "ﬁsh", "½", "42", "über",
]  # fmt: skip


def same(text: str) -> None:
    assert index_term_set(text) == frozenset(index_terms(text).split())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    same(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=80), st.sampled_from([" ", "\n", ", ", "-"]))
def test_repeated_words_of_two_languages(words: list[str], sep: str) -> None:
    same(sep.join(words))
