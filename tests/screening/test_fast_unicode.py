"""The fast Unicode cleaning gives exactly what the per-character version gave.

`reference_unicode.py` is the code as it was (one Python step per code point);
`bridge/screening/unicode_clean.py` now does the per-character work in `re`,
`str.translate` and `unicodedata`. Both run on the same inputs: seeded random
strings over a wide pool of code points (every block the rules care about and
samples of every plane), emoji and joining sequences cut and spliced at random,
the public corpus, long texts and the whole code space in one text; every
output must be equal. The category tables the fast path uses are checked
against `unicodedata`, and the path used without them (another Unicode
version) against the fast one. Hypothesis is not in the environment, so the
generator is a seeded `random.Random`.
"""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

import pytest

from bridge.screening import char_classes, unicode_tables
from bridge.screening import unicode_clean as new
from tests.screening import reference_unicode as old

CORPUS = Path(__file__).parent / "corpus"
SEEDED = Path(__file__).parent.parent / "loadout" / "corpus"

# (first, last) blocks sampled whole or in part: controls, Latin, combining marks,
# Greek, Cyrillic, the joining scripts, Hangul fillers, Khmer, Mongolian selectors,
# punctuation with zero-width and bidi controls, letterlike symbols (K, Å),
# pictographs, Braille blank, CJK, kana, Hangul, private use, variation selectors,
# half/full width, specials, Egyptian format controls, musical format controls,
# mathematical letters (NFKC), emoji, skin tones, tags, plane 14 and 15, surrogates.
_BLOCKS = [
    (0x0000, 0x024F), (0x0250, 0x02FF), (0x0300, 0x036F), (0x0370, 0x03FF), (0x0400, 0x052F),
    (0x0590, 0x05FF), (0x0600, 0x06FF), (0x0700, 0x074F), (0x07C0, 0x07FF), (0x0840, 0x085F),
    (0x0900, 0x0DFF), (0x0E00, 0x0FFF), (0x1100, 0x11FF), (0x1780, 0x17FF), (0x1800, 0x18AF),
    (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2070, 0x20CF),
    (0x20D0, 0x20FF), (0x2100, 0x214F), (0x2150, 0x23FF), (0x2460, 0x27BF), (0x2800, 0x28FF),
    (0x2900, 0x2BFF), (0x2E80, 0x303F), (0x3040, 0x31FF), (0x3200, 0x33FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xA000, 0xA4CF), (0xA640, 0xA69F), (0xA8E0, 0xA8FF), (0xAC00, 0xD7AF),
    (0xD800, 0xDFFF), (0xE000, 0xF8FF), (0xF900, 0xFAFF), (0xFB00, 0xFDFF), (0xFE00, 0xFE6F),
    (0xFE70, 0xFEFF), (0xFF00, 0xFFEF), (0xFFF0, 0xFFFF), (0x10000, 0x1342F),
    (0x13430, 0x1345F), (0x16F00, 0x16FFF), (0x1BC00, 0x1BCAF), (0x1D100, 0x1D1FF),
    (0x1D400, 0x1D7FF), (0x1E900, 0x1E95F), (0x1F000, 0x1F0FF), (0x1F100, 0x1F2FF),
    (0x1F300, 0x1F6FF), (0x1F700, 0x1FAFF), (0x1FB00, 0x1FFFF), (0x20000, 0x2A6DF),
    (0x30000, 0x3134F), (0xE0000, 0xE01EF), (0xE01F0, 0xE0FFF), (0xF0000, 0xF00FF),
    (0x10FF00, 0x10FFFF),
]  # fmt: skip
# Pieces of valid and broken sequences, spliced at random.
_UNITS = [
    "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "❤\ufe0f\u200d🔥", "👩🏽\u200d💻", "1\ufe0f\u20e3",
    "#\ufe0f\u20e3", "*\u20e3", "☎\ufe0e", "☎\ufe0f", "🇨🇭", "🏴\U000e0067\U000e0062\U000e0073"
    "\U000e0063\U000e0074\U000e007f", "🏴\U000e0067\U000e0062", "\U000e0067\U000e0062",
    "\U000e007f", "🏴", "\u200d", "\u200c", "\ufe0f", "\ufe0e", "\u20e3", "می\u200cخواهم",
    "क्\u200dष", "क\u200cष", "a\u200db", "\u0627\u200d", "\u200d\u0627", "\u2028", "\u2029",
    "\u202e", "\u2066", "\u00ad", "\u034f", "\u061c", "\ufeff", "\u3164", "\u115f", "\x1b",
    "\x85", "\t", "\n", "\r", "i\u0307", "ı", "İ", "ſ", "K", "Å", "ﬁ", "①", "𝐀", "ｉｇｎｏｒｅ",
    "Σ", "ς", "straße", "e\u0301", "\u1e9e", "аеорсухі", "ΑΒΕΗ", " ", ". ", "\U000e0041",
]  # fmt: skip


def _pool(r: random.Random) -> list[str]:
    out: list[str] = []
    for first, last in _BLOCKS:
        span = last - first + 1
        picks = range(first, last + 1) if span <= 256 else r.sample(range(first, last + 1), 256)
        out.extend(map(chr, picks))
    return out


def _strings(seed: int, count: int, longest: int) -> list[str]:
    r = random.Random(seed)
    pool = _pool(r)
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(r.randint(0, longest)):
            parts.append(r.choice(_UNITS) if r.random() < 0.3 else r.choice(pool))
        texts.append("".join(parts))
    return texts


def _corpus() -> list[str]:
    texts = []
    for path in [*sorted(CORPUS.glob("*.jsonl")), *sorted(SEEDED.glob("*.jsonl"))]:
        with path.open(encoding="utf-8") as f:
            texts.extend(json.loads(line)["text"] for line in f if line.strip())
    return texts


FUNCTIONS = ["invisible", "clean", "strip_invisible", "skeleton", "describe"]


def _same(text: str) -> None:
    for name in FUNCTIONS:
        assert getattr(new, name)(text) == getattr(old, name)(text), (name, ascii(text)[:200])
    assert new.skeleton_of_clean(new.clean(text)) == old.skeleton(text)


@pytest.mark.parametrize("seed", range(8))
def test_short_random_strings_give_the_same_output(seed: int) -> None:
    texts = _strings(seed, 600, 24)
    for text in texts:
        _same(text)
    # the generator reaches what matters: hidden code points kept and dropped, marks
    assert sum(bool(old.invisible(t)) for t in texts) > 300
    assert sum(old.clean(t) != t for t in texts) > 300
    kept = sum(any(old.is_hidden(c) for c in old.clean(t)) for t in texts)
    assert kept > 10  # valid emoji and joining sequences keep their joiners


@pytest.mark.parametrize("seed", range(3))
def test_long_random_texts_give_the_same_output(seed: int) -> None:
    for text in _strings(100 + seed, 12, 3000):
        _same(text)


def test_the_public_corpus_gives_the_same_output() -> None:
    texts = _corpus()
    assert len(texts) > 1000
    for text in texts:
        _same(text)


def test_code_points_alone_and_between_letters_give_the_same_output() -> None:
    sample = random.Random(7).sample(range(0x110000), 3000)
    for cp in sample:
        for text in (chr(cp), f"a{chr(cp)}b", f"\u0627{chr(cp)}\u0628", f"👨{chr(cp)}👩"):
            _same(text)


EVERY = "".join(map(chr, range(0x110000)))


def test_every_code_point_in_one_text_gives_the_same_hidden_code_points() -> None:
    # the whole code space as one text: each code point between its neighbours
    assert new.invisible(EVERY) == old.invisible(EVERY)
    assert char_classes.drop_marks(EVERY) == "".join(
        c for c in EVERY if not unicodedata.category(c).startswith("M")
    )


@pytest.mark.skipif(
    unicodedata.unidata_version != unicode_tables.UNIDATA_VERSION,
    reason="the tables are for another Unicode version (the slower path is used)",
)
def test_the_category_tables_are_those_of_unicodedata() -> None:
    assert list(unicode_tables.HIDDEN_CATEGORIES) == unicode_tables.ranges(
        unicode_tables.HIDDEN_NAMES
    )
    assert list(unicode_tables.MARKS) == unicode_tables.ranges(unicode_tables.MARK_NAMES)


def test_the_path_without_tables_gives_the_same_classes() -> None:
    # another Unicode version asks unicodedata about each distinct character instead
    texts = [EVERY, *_strings(42, 300, 30), *_corpus()[:300]]
    for text in texts:
        fast, asked = char_classes.hidden_class(text), char_classes._hidden_class_asked(text)
        assert (fast is None) == (asked is None)
        if fast is not None and asked is not None:
            assert [m.start() for m in fast.finditer(text)] == [
                m.start() for m in asked.finditer(text)
            ]
        assert char_classes.drop_marks(text) == char_classes._drop_marks_asked(text)


def test_the_prefilter_lets_every_hidden_code_point_and_mark_through() -> None:
    # without the tables the category is asked only of non-word characters (and the
    # listed fillers): letters and digits must hold no hidden code point and no mark
    for ch in char_classes._NON_WORD.sub("", EVERY):
        assert not old.is_hidden(ch) or char_classes._EXTRA_CLASS.match(ch), f"U+{ord(ch):04X}"
        assert not unicodedata.category(ch).startswith("M"), f"U+{ord(ch):04X}"
