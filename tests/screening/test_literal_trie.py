"""`literal_trie.alternation` matches where the plain alternation matches, the longest literal.

At every position of generated texts (made of the literals' own characters, so
that they occur, overlap and nearly occur) the trie pattern matches exactly when
one of the literals starts there, and what it matches is the longest of them;
`search` finds the first such position, as the plain alternation does.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.screening.literal_trie import alternation

_ALPHABET = "ab-_.c\\[]()?*+|^$"
_LITERALS = st.lists(st.text(_ALPHABET, min_size=1, max_size=6), min_size=1, max_size=12)


@settings(max_examples=400, deadline=None)
@given(_LITERALS, st.text(_ALPHABET, max_size=60))
def test_the_trie_matches_where_and_what_the_literals_match(literals: list[str], text: str) -> None:
    trie = re.compile(alternation(literals))
    plain = re.compile("|".join(map(re.escape, literals)))
    for p in range(len(text) + 1):
        starting = [lit for lit in literals if text.startswith(lit, p)]
        m = trie.match(text, p)
        assert (m is not None) == bool(starting)
        if m is not None:
            assert m.group(0) == max(starting, key=len)
    a, b = trie.search(text), plain.search(text)
    assert (a and a.start()) == (b and b.start())


def test_a_shared_prefix_is_factored() -> None:
    assert alternation(["pin", "pincode", "puk"]) == "p(?:in(?:code)?|uk)"


def test_an_empty_literal_is_refused() -> None:
    with pytest.raises(ValueError):
        alternation(["a", ""])
