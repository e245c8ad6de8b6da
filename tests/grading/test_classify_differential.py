"""The outcome grader made faster grades exactly as before: every output identical.

The oracle is the grader of main before the speed work (`classify_oracle.py`, frozen).
Compared over the test cases' own messages (outcomes.jsonl, outcomes_holdout.jsonl),
phrasings built from every cue word and every phrase pattern's words in many
combinations (negators, questions, clause marks, unicode, emoji), long texts, and
hypothesis-generated text, on the outcome (label, confidence, reason), the cues with
their positions, and the text helpers the grader shares with skills/usage.py.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.grading import Outcome, classify
from bridge.grading.cues import PHRASES, WORDS, Cue, find_cues
from bridge.grading.text import LastRead, Related, content_words, read_words, similarity, tokens
from tests.grading import classify_oracle as old

HERE = Path(__file__).parent
R = random.Random(1913)


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for name in ("outcomes.jsonl", "outcomes_holdout.jsonl"):
        for line in (HERE / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                c = json.loads(line)
                out.append((c["previous"], c["reply"], c["next"]))
    return out


def _phrase_words() -> list[str]:
    """The literal words of every phrase pattern (what its alternations spell)."""
    words: set[str] = set()
    for pattern, _, _ in PHRASES:
        words.update(re.findall(r"[a-zäöüß']+", pattern.replace(r"\b", " ")))
    return sorted(words)


CUE_WORDS = sorted(WORDS) + sorted(old.NEGATORS) + _phrase_words()
FILLER = (
    "the capital of australia is sydney canberra how do i list hidden files in bash "
    "wie spät ist es in berlin wetterbericht wetter morgen regex postcode python script "
    "please explain again why it fails error exception"
)
FILLER_WORDS = FILLER.split()
MARKS = [" ", " ", " ", ", ", ". ", "! ", "? ", "; ", ": ", "\n", " - ", "...", "’", "'"]
ODD = ["🙂", "👍", "İstanbul", "ΣΟΦΙΑ", "straße", "ÄRGER", "日本語", "\u200b", "x" * 60, "", "ß"]


def _phrasing(r: random.Random) -> str:
    n = r.choice([1, 1, 2, 3, 4, 6, 10, 25])
    parts = []
    for _ in range(n):
        pool = r.choice([CUE_WORDS, CUE_WORDS, FILLER_WORDS, ODD])
        word = r.choice(pool)
        parts.append(word.upper() if r.random() < 0.1 else word)
        parts.append(r.choice(MARKS))
    return "".join(parts).strip() if r.random() < 0.8 else "".join(parts)


def _corpus() -> list[tuple[str, str, str]]:
    cases = _cases()
    prevs = [c[0] for c in cases] + [_phrasing(R) for _ in range(50)] + [""]
    replies = [c[1] for c in cases] + [_phrasing(R) for _ in range(50)] + [""]
    nexts = [c[2] for c in cases]
    nexts += [_phrasing(R) for _ in range(3000)]
    nexts += [" ".join(pair) for pair in itertools.product(["no", "not", "nicht", ""], CUE_WORDS)]
    nexts += [w + "?" for w in CUE_WORDS] + ["", " ", "?", "...", "🙂", "no", "nö, danke"]
    nexts += [_phrasing(R) * 40 for _ in range(20)]  # long texts
    out = list(cases)
    for nxt in nexts:
        out.append((R.choice(prevs), R.choice(replies), nxt))
        out.append((nxt, R.choice(replies), nxt))  # a rephrase of itself
    for prev, reply, _ in cases:  # a rephrase built from the previous request, and the reply
        words = prev.split()
        R.shuffle(words)
        out.append((prev, reply, " ".join(words[: max(1, len(words) - 1)] + reply.split()[:3])))
    return out


CORPUS = _corpus()


def _same(prev: str, reply: str, nxt: str, kept: LastRead | None = None) -> None:
    expected = _as_new(old.classify(prev, reply, nxt))
    assert classify(prev, reply, nxt, kept) == expected, (prev, reply, nxt)
    assert find_cues(nxt) == [_cue(c) for c in old.find_cues(nxt)], nxt


def _as_new(o: old.Outcome) -> Outcome:
    return Outcome(o.label, o.confidence, o.reason)


def _cue(c: old.Cue) -> Cue:
    return Cue(c.polarity, c.strength, c.position, c.phrase)


def test_the_corpus_is_large_and_varied() -> None:
    labels = {old.classify(*case).label for case in CORPUS}
    assert len(CORPUS) > 8000 and labels == {"approval", "rejection", "rephrase", "neutral"}


@pytest.mark.parametrize("chunk", range(8))
def test_every_output_identical_on_the_corpus(chunk: int) -> None:
    for case in CORPUS[chunk::8]:
        _same(*case)


def test_the_text_helpers_are_unchanged() -> None:
    for prev, reply, nxt in CORPUS[::7]:
        assert tokens(nxt) == old.tokens(nxt)
        assert content_words(reply) == old.content_words(reply)
        assert similarity(prev, nxt) == old.similarity(prev, nxt)


_words = st.sampled_from(CUE_WORDS + FILLER_WORDS + ODD + MARKS)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80), st.text(max_size=80))
def test_identical_on_any_text(prev: str, reply: str, nxt: str) -> None:
    _same(prev, reply, nxt)


@settings(max_examples=600, deadline=None)
@given(st.lists(_words, max_size=30), st.lists(_words, max_size=30), st.lists(_words, max_size=30))
def test_identical_on_cue_laden_text(prev: list[str], reply: list[str], nxt: list[str]) -> None:
    _same(" ".join(prev), " ".join(reply), " ".join(nxt))
    _same("".join(prev), "".join(reply), "".join(nxt))


_stems = st.text(alphabet="abcdeä", min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.sets(_stems, max_size=12), st.sets(_stems, min_size=1, max_size=5))
def test_an_index_for_some_lengths_answers_as_a_full_one(words: set[str], asked: set[str]) -> None:
    full, some = Related(words), Related(words, {len(x) for x in asked})
    assert [some.to(x) for x in asked] == [full.to(x) for x in asked]


def test_identical_along_a_conversation_read_from_the_last_turn() -> None:
    """Each next message is the previous one of the next turn: its words are read then
    from the last turn's (`LastRead`), and every outcome stays the oracle's."""
    messages = [case[2] for case in CORPUS[:: len(CORPUS) // 400]]
    kept, hits = LastRead(), 0
    for prev, nxt in itertools.pairwise(messages):
        hits += kept.get(prev) is not None
        _same(prev, "a reply", nxt, kept)
    assert hits > len(messages) // 4  # read as next ones (a cue decides without reading)


def test_the_last_reads_are_bounded_in_number_and_length() -> None:
    kept = LastRead(size=3, longest=10)
    for text in ["a", "b", "c", "d"]:
        kept.put(text, read_words([text]))
    assert kept.get("a") is None and kept.get("d") is not None  # the oldest went first
    kept.put("x" * 11, read_words(["x"]))
    assert kept.get("x" * 11) is None  # too long to keep
