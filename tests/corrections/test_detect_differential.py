"""The correction detector with its keyword pre-check finds exactly what it found before.

The oracle is the detector of main before the cut (`detect_oracle.py`, frozen). Compared
on every field of the result over: the corpus and tuning lines, public phrasings of
corrections and standing instructions in English and German ("no, I meant", "that's
wrong", "actually", "from now on", "ab sofort", ...), phrasings built from every literal
word of the detector's patterns with the lead words, quotes, sentence marks and
questions, the same texts with letters a case-insensitive match and `.lower()` treat
differently (İ, ı, ß, ẞ, the Kelvin sign K, the long s ſ, the ligature ﬆ, fullwidth
letters), long texts, and hypothesis-generated text.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.corrections import detect as live
from tests.corrections import detect_oracle as old

HERE = Path(__file__).parent
R = random.Random(2113)

PHRASINGS = """
no, I meant the other one|No, I meant Celsius.|that's wrong|That's wrong, it is 12.|actually,
I said metric|Actually no.|not what I asked|I said no emojis!|you got it wrong again|
stop that|Stop.|stop!|Stop using emojis.|quit doing that|never mind|Never mind, thanks.|
don't worry about it|Don't forget the tests.|don't do that again|Don't use tables any more.|
From now on answer in German.|Going forward, keep it short.|from here on out, no jokes|
Henceforth use metric.|starting now, be brief|In future please cite sources.|in the future tense|
from now until Friday|for now on use tabs|From today on call me Sam.|what will happen next?|
Could you from now on answer in English?|Do you always do that?|I always forget my keys.|
the bus never comes|always be closing|I want you to always reply in French.|
You should never guess.|make sure to always add units|remember to never use slang|
no more bullet points|okay, so please always use SI units|Ok, and never apologise.|
nein, ich meinte das andere|Das ist falsch.|eigentlich meinte ich Celsius|
Ab jetzt bitte auf Deutsch.|ab sofort keine Emojis mehr|ab jetzt bis Freitag|Ab heute siezen.|
Von jetzt an kurz antworten.|von nun an bitte mit Quellen|In Zukunft bitte kürzer.|
Künftig ohne Tabellen.|zukünftig auf Englisch|Fortan metrisch.|ab nun bitte du|
Antworte immer auf Deutsch.|Benutze bitte keine Emojis mehr.|nie wieder Tabellen|
Niemals raten!|Hör auf, dich zu entschuldigen.|hört endlich auf mit den Witzen|
Ich möchte, dass du immer Quellen nennst.|Du sollst nie raten.|denk dran, immer kurz|
nie im Leben|Immer mit der Ruhe.|immer wieder das gleiche|nie wieder Krieg|keine Sorge|
ich vergesse immer alles|Kannst du ab jetzt kürzer antworten?|Was bringt die Zukunft?|
schreib nur noch kurz|nutze nicht mehr Markdown|Lass die Emojis weg.|Unterlasse das.|
She said "always use emojis" and I laughed.|He wrote 'never do that' yesterday.|
«Immer kurz» hat er gesagt.|„Nie wieder“ sagte sie.|‘Stop it’ was the title.|
/always do this|  /never|- always use tabs|* never use spaces|• from now on: bullets|
Ich möchte, dass du Quellen nennst.|ich will dass du kurz antwortest|ich hätte gern, dass du
siezt|Ich wünsche mir dass du höflich bist|Denk daran, Quellen zu nennen.|denke dran, kurz|
Don't use tables anymore.|do not add emojis again|From today on use tabs.|Henceforth be terse.|
Zukünftig ohne Emojis.|von nun an kurz|ab nun auf Englisch|du musst keine Quellen nennen|
Hören Sie auf mit den Witzen.|hör endlich auf zu raten|I'd like you to stop guessing.|
you have to always cite|Keine Tabellen mehr bitte.|nur noch kurze Antworten|quit adding jokes
""".replace("\n", "").split("|")

ODD_LETTERS = {
    "i": ["İ", "ı", "I"],
    "s": ["ſ", "S"],
    "k": ["K", "K"],
    "ss": ["ß", "ẞ"],
    "st": ["ﬆ", "ﬅ"],
    "a": ["ä", "A", "ａ"],
    "o": ["ö", "O", "ｏ"],
    "u": ["ü", "U"],
    "e": ["E", "é", "ｅ"],
    "n": ["N", "ñ", "ｎ"],
}
MARKS = [" ", " ", " ", ", ", ". ", "! ", "? ", "; ", ": ", "\n", " - ", "…", "'", '"', "“", "”"]
ODD = [
    "İ",
    "K",
    "ſ",
    "\u0307",
    "ﬆ",
    "🙂",
    "İstanbul",
    "ΣΟΦΙΑ",
    "straße",
    "STRASSE",
    "日本語",
    "\u200b",
    "x" * 40,
    "",
    "ß",
    "K",
]


def _rows(name: str) -> list[str]:
    return [
        str(json.loads(line)["text"])
        for line in (HERE / name).read_text(encoding="utf-8").splitlines()
        if line
    ]


def _pattern_words() -> list[str]:
    """The literal words of every pattern of the detector (what its alternations spell)."""
    words: set[str] = set()
    for name in dir(old):
        value = getattr(old, name)
        if isinstance(value, re.Pattern):
            words.update(re.findall(r"[a-zäöüß']+", value.pattern.replace(r"\b", " ")))
        elif isinstance(value, str) and name.isupper():
            words.update(re.findall(r"[a-zäöüß']+", value.replace(r"\b", " ")))
    return sorted(w for w in words if len(w) > 1)


WORDS = _pattern_words()
_FILLER = (
    "answer in german english metric units emojis tables short answers bullet points code "
    "python the weather tomorrow bitte antworte schreib benutze verwende nutze mir dich "
    "sources jokes tabs spaces know there where however every linie noch mehr nun"
)
FILLER = _FILLER.split()


def _odd(text: str, r: random.Random) -> str:
    """`text` with some letters swapped for ones that fold or lower unlike ASCII."""
    for plain, odd in ODD_LETTERS.items():
        if plain in text and r.random() < 0.5:
            text = text.replace(plain, r.choice(odd), r.randint(1, 3))
    return text


def _phrasing(r: random.Random) -> str:
    parts = []
    if r.random() < 0.5:
        parts.append(r.choice(["ok ", "and ", "please ", "so, ", "bitte ", "und ", "hey, ", ""]))
    for _ in range(r.choice([1, 2, 3, 4, 6, 10, 20])):
        pool = r.choice([WORDS, WORDS, WORDS, FILLER, ODD, PHRASINGS])
        word = r.choice(pool)
        parts.append(word.upper() if r.random() < 0.1 else word)
        parts.append(r.choice(MARKS))
    return "".join(parts)


def _corpus() -> list[str]:
    base = _rows("corpus.jsonl") + _rows("tune.jsonl") + PHRASINGS
    out = list(base)
    out += [w for w in WORDS] + [f"{w} use tabs" for w in WORDS] + [f"{w}?" for w in WORDS]
    out += [_phrasing(R) for _ in range(4000)]
    out += [_odd(t, R) for t in base for _ in range(4)]
    out += [_odd(_phrasing(R), R) for _ in range(2000)]
    out += [t.upper() for t in base] + [t.title() for t in base]
    # a letter that lowers to two (İ: i and a combining dot) right before a word: the
    # word starts a word in the lowered text only
    out += [
        f"{pre}{odd}{w}{post}"
        for w in WORDS
        for odd in ("İ", "K", "ſ")
        for pre, post in (("", ""), ("bitte ", " weg"))
    ]
    out += [_phrasing(R) * 30 for _ in range(20)] + [" ".join(base)]  # long texts
    return out


CORPUS = _corpus()


def _same(text: str) -> None:
    found, expected = live.detect(text), old.detect(text)
    if expected is None:
        assert found is None, text
    else:
        assert found is not None, text
        assert (found.text, found.polarity, found.subject, found.lang) == (
            expected.text,
            expected.polarity,
            expected.subject,
            expected.lang,
        ), text


def test_the_corpus_is_large_and_finds_both_ways() -> None:
    found = [old.detect(t) is not None for t in CORPUS]
    assert len(CORPUS) > 7000 and sum(found) > 1000 and found.count(False) > 1000


def test_every_output_identical_on_the_corpus() -> None:
    for text in CORPUS:
        _same(text)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=120))
def test_identical_on_any_text(text: str) -> None:
    _same(text)


_words = st.sampled_from(WORDS + FILLER + ODD + MARKS + PHRASINGS)


@settings(max_examples=800, deadline=None)
@given(st.lists(_words, max_size=25), st.randoms(use_true_random=False))
def test_identical_on_pattern_laden_text(words: list[str], r: random.Random) -> None:
    _same(" ".join(words))
    _same("".join(words))
    _same(_odd(" ".join(words), r))
