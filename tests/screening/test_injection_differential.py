"""The injection screen decides exactly what its plain form decides.

A pattern runs only when one of its trigger words occurs (all of a table's
words found in one pass, `literal_trie.Occurring`) and then only near its
literals (`windowed.Scanner`). The plain form here looks for each word with
`in` and runs each pattern with `re` on the whole text; both must agree on
every corpus row, on rows joined as a recall group, and on hypothesis texts
made of the patterns' own words, prose and other scripts (which must also
hold injections, or the comparison proves little).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.screening import injection
from bridge.screening.literal_trie import Occurring
from bridge.screening.unicode_clean import clean, skeleton_of_clean

CORPUS = Path(__file__).parent / "corpus"
TEXTS = [
    json.loads(line)["text"]
    for name in ("secrets", "harmless", "injections", "benign")
    for line in (CORPUS / f"{name}.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
INJECTIONS = [
    json.loads(line)["text"]
    for line in (CORPUS / "injections.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
LATIN, OTHER = injection._tables()
WORDS = sorted({w for table in (LATIN, OTHER) for words, _ in table for w in words})


def _plain(table: injection._Table, text: str) -> bool:
    return any(
        (not words or any(w in text for w in words)) and scan.pattern.search(text) is not None
        for words, scan in table
    )


def plain_injection(text: str) -> bool:
    cleaned = clean(text)
    if _plain(LATIN, skeleton_of_clean(cleaned)):
        return True
    return bool(re.search(r"[\u0400-\u04ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", cleaned)) and (
        _plain(OTHER, cleaned.casefold())
    )


def test_every_corpus_row_and_group_is_decided_alike() -> None:
    for text in TEXTS:
        assert injection.looks_like_injection(text) == plain_injection(text), text
    for start in range(0, len(TEXTS), 32):
        group = "\n\n".join(TEXTS[start : start + 32])
        assert injection.looks_like_injection(group) == plain_injection(group)


_PIECE = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(TEXTS),
    st.sampled_from(INJECTIONS),
    st.text("aeinorst .\n", max_size=12),
    st.sampled_from(["Ignore", "the", "previous", "instructions", "Vergiss", "alles", "忽略"]),
)
FOUND: list[bool] = []


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, min_size=1, max_size=14), st.sampled_from([" ", "", "\n", ", "]))
def _decided_alike(pieces: list[str], sep: str) -> None:
    text = sep.join(pieces)
    want = plain_injection(text)
    assert injection.looks_like_injection(text) == want, text
    FOUND.append(want)


def test_generated_texts_are_decided_alike() -> None:
    # and they hold injections and clean texts (one run of the strategy: the comparison
    # ran twice before, as its own test and again inside this check)
    FOUND.clear()
    _decided_alike()
    assert sum(FOUND) >= len(FOUND) // 20 and not all(FOUND)


_SMALL = st.text("abc", min_size=1, max_size=4)  # words that are prefixes of each other


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30),
                 st.lists(_SMALL, min_size=1, max_size=8)), st.data())  # fmt: skip
def test_occurring_finds_what_in_finds(words: list[str], data: st.DataObject) -> None:
    gate = Occurring(words)
    glue = st.text("abceginorst ", max_size=4)
    joined = "".join(data.draw(st.lists(st.one_of(st.sampled_from(words), glue))))
    assert gate.present(joined) == {w for w in set(words) if w in joined}
