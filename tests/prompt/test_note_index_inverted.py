"""`NoteIndex` put right for changed notes (`changed`) against one made afresh from the
same notes: the same holders for every term, after random edits (notes gaining,
losing and swapping words, the same note changed twice in one call); and an index that gave
its holders up to a newer version still answers for its own notes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.recall.notes import NoteIndex

TERMS = st.frozensets(st.sampled_from(("a", "b", "c", "d", "e", "f", "g", "h")), max_size=6)


def holders_of(index: NoteIndex, terms: set[str]) -> dict[str, set[int]]:
    return {t: set(index.holders(t)) for t in sorted(terms)}


def edited(
    held: list[frozenset[str]], edit: list[tuple[int, frozenset[str]]]
) -> tuple[list[frozenset[str]], list[int]]:
    """A new list of notes with `edit`'s (position, terms) put in, and the positions."""
    held, which = list(held), []
    for at, terms in edit:
        held[at % len(held)] = terms
        which.append(at % len(held))
    return held, which


@given(
    first=st.lists(TERMS, min_size=1, max_size=12),
    edits=st.lists(
        st.lists(st.tuples(st.integers(0, 11), TERMS), max_size=4), min_size=1, max_size=12
    ),
)
@settings(max_examples=300, deadline=None)
def test_an_index_put_right_holds_what_a_fresh_one_holds(
    first: list[frozenset[str]], edits: list[list[tuple[int, frozenset[str]]]]
) -> None:
    every = set("abcdefghz")
    held = list(first)
    index = NoteIndex(held)
    for edit in edits:
        old, old_held = index, list(held)
        held, which = edited(held, edit)
        index = index.changed(held, which)
        assert holders_of(index, every) == holders_of(NoteIndex(held), every)
        # the version before, asked again, answers for its own notes
        assert holders_of(old, every) == holders_of(NoteIndex(old_held), every)


@given(
    first=st.lists(TERMS, min_size=1, max_size=12),
    edits=st.lists(
        st.tuples(TERMS, st.lists(st.tuples(st.integers(0, 11), TERMS), max_size=4)),
        min_size=1,
        max_size=12,
    ),
)
@settings(max_examples=300, deadline=None)
def test_words_asked_before_some_edits_and_not_others(
    first: list[frozenset[str]],
    edits: list[tuple[frozenset[str], list[tuple[int, frozenset[str]]]]],
) -> None:
    """Only some words asked between the edits (the others found afresh when first
    asked, those asked kept and put right): every word against a fresh index at the end."""
    held = list(first)
    index = NoteIndex(held)
    for asked, edit in edits:
        assert holders_of(index, set(asked)) == holders_of(NoteIndex(held), set(asked))
        held, which = edited(held, edit)
        index = index.changed(held, which)
    every = set("abcdefghz")
    assert holders_of(index, every) == holders_of(NoteIndex(held), every)


def test_a_different_number_of_notes_is_indexed_afresh() -> None:
    index = NoteIndex([frozenset({"a"}), frozenset({"b"})])
    grown = index.changed([frozenset({"a"}), frozenset({"b"}), frozenset({"a"})], [2])
    assert set(grown.holders("a")) == {0, 2}
    assert set(index.holders("a")) == {0}
