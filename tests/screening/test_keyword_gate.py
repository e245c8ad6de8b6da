"""`keyword_gate.Keywords.present` finds exactly the keywords `in` finds.

For the secret rules' own keywords and for generated keyword sets (letters,
marks, spaces, non-ASCII), on generated texts built from the keywords' pieces
glued to letters, marks, spaces and other scripts (so that keywords occur at a
run's start, inside it, across marks and nearly occur), and on 100k of one
run (linear: no clock, a quadratic scan would not come back).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.screening.keyword_gate import Keywords
from bridge.screening.rule_data import rule_set

RULE_WORDS = sorted({k for r in rule_set()[0] for k in r.keywords})
RULES_GATE = Keywords(RULE_WORDS)
_GLUE = st.text("abxyz_-.:=/$~0123 \nüé", max_size=8)


@st.composite
def _text(draw: st.DrawFn, words: list[str]) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(words), _GLUE), max_size=16))
    cut = draw(st.integers(0, 3))  # a keyword cut short: a near miss
    return "".join(p[cut:] if len(p) > 4 and cut and draw(st.booleans()) else p for p in parts)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_rules_keywords_are_found_as_in_finds_them(data: st.DataObject) -> None:
    lowered = data.draw(_text(RULE_WORDS)).lower()
    assert RULES_GATE.present(lowered) == {w for w in RULE_WORDS if w in lowered}


_WORD = st.text("abc_-.:9 üé\n", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=10, unique=True), st.data())
def test_any_keyword_set_is_found_as_in_finds_it(words: list[str], data: st.DataObject) -> None:
    gate = Keywords(words)
    text = data.draw(_text(words))
    assert gate.present(text) == {w for w in words if w in text}


def test_one_long_run_is_read_once() -> None:
    text = "ab" * 50_000 + "ghp_" + "x" * 50_000
    assert "ghp_" in RULES_GATE.present(text)
    assert RULES_GATE.present("a" * 100_000) == set()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_both_run_finders_find_the_same_runs(data: st.DataObject) -> None:
    text = data.draw(_text(RULE_WORDS)).lower()
    assert RULES_GATE._runs is not None and RULES_GATE._runs_sparse is not None
    assert RULES_GATE._runs.findall(text) == RULES_GATE._runs_sparse.findall(text)
