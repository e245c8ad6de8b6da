"""Text helpers of the outcome grader: tokens, stopwords, stems, similarity.

Pure functions. English and German. Similarity is what tells a rephrase (the
same request in other words) from a new topic: content words after stopword
removal and a light stemmer, plus character trigrams (inflections, compounds).
Every function is linear in its input: a stem is at most `MAX_WORD` characters,
and "related" look-ups go through a `Related` index instead of comparing all
pairs of words; only a word that is not shared and has 4 letters or more is
looked up (`unrelated`), in an index of the lengths asked (a few such words against
a few others, at most `SMALL` pairs, are compared pair by pair: no index to build).
A `Read` holds what a comparison takes of a message (its distinct words, its trigram
counts and their norm), worked out once: a chat's message is read as the next one,
and kept for the turn after (`LastRead`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

TOKEN_RE = re.compile(r"[a-zà-öø-ÿß0-9]+(?:'[a-z]+)?")
_FOLD = str.maketrans("äöüßàáâãåçèéêëìíîïñòóôõøùúûýÿ", "aousaaaaaceeeeiiiinooooouuuyy")

STOPWORDS = frozenset(
    """
    a aber about actually again all als also am an and any anything are as at auch auf aus
    be been bei being bin bis bist bitte brauche brauchst but by can could da danke dann das
    dein deine dem den denn der des dich did die dir do doch does doing done dort down du
    eigentlich ein eine einem einen einer eines er erklär erkläre erklären es etwas explain
    for from für geben gegen gern gerne get gib gibt give got habe haben had halt has hast
    hat hatte have having he here hier how hätte i i'd i'm i've ich if ihr ihre im in into
    irgendwie is ist it it's its ja just kann kannst kein keine kindly know könnte könntest
    let let's like mach mache machen make mal may maybe me mein meine meinen mich might mine
    mir mit more most muss must my möchte möchtest nach need nein nicht no noch not now nur
    oder of off ohne ok okay on once one ones only or other our out over own please pls plz
    quick quickly really sag sage sagen same schon sehr sein shall she should show sie sind
    so soll sollte some something such tell than thank thanks that the their them then there
    these they thing things this those to too um und under uns unter up us very von vor wann
    want war waren warum was way we weißt welche welcher welches wenn wer werden were
    weshalb what what's when where which who whom whose why wie wieso will willst wir wird
    wissen with wo wollen wollte would wurde würde würdest yes you you're your yours zeig
    zeige zeigen zu zum zur über
    """.split()  # noqa: SIM905
)
_SUFFIXES = (
    "ungen", "ingly", "ation", "ments", "ness", "ing", "ung", "ies", "ied", "est",
    "ern", "ens", "ed", "es", "er", "en", "em", "ly", "e", "s", "n",
)  # fmt: skip


_KEEP_S = frozenset(("it's", "that's", "what's", "let's"))


def lower(text: str) -> str:
    """The text as the grader reads it: lowercased, typographic apostrophes plain."""
    return text.lower().replace("’", "'")


def tokens(text: str) -> list[str]:
    """Lowercased word tokens (apostrophe contractions kept: don't, it's)."""
    return lowered_tokens(lower(text))


def lowered_tokens(lowered: str) -> list[str]:
    """`tokens` of a text `lower` has lowered already (lowering twice changes nothing)."""
    if "'" not in lowered:  # no token ends in 's
        return TOKEN_RE.findall(lowered)
    return [
        w[:-2] if w.endswith("'s") and w not in _KEEP_S else w for w in TOKEN_RE.findall(lowered)
    ]


_SUFFIX_LENGTHS = tuple((suffix, len(suffix)) for suffix in _SUFFIXES)


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """Strip one common English/German suffix, leaving 4 letters or more; fold umlauts
    (pure, so remembered; a word under 5 letters keeps every letter)."""
    w = word.translate(_FOLD)
    n = len(w)
    if n < 5:  # the shortest suffix is one letter
        return w
    for suffix, k in _SUFFIX_LENGTHS:
        if n - k >= 4 and w.endswith(suffix):
            return w[:-k]
    return w


MAX_WORD = 40  # no word of a natural language is longer; longer runs are cut


def content_words(text: str) -> list[str]:
    return words_of(tokens(text))


def word_set(text: str) -> set[str]:
    """`set(content_words(text))`, each distinct token stemmed once (for a long text)."""
    return {stem(t[:MAX_WORD]) for t in set(tokens(text)) if t not in STOPWORDS}


def words_of(tokens: list[str]) -> list[str]:
    """`content_words` of a text's `tokens`."""
    return [stem(t[:MAX_WORD]) for t in tokens if t not in STOPWORDS]


@lru_cache(maxsize=8192)
def _grams(word: str) -> tuple[str, ...]:
    padded = f" {word} "
    return tuple(padded[i : i + 3] for i in range(len(padded) - 2))


def _trigrams(words: list[str]) -> Counter[str]:
    return Counter(chain.from_iterable(map(_grams, words)))  # counted in C


def _norm(grams: Counter[str]) -> float:
    return math.sqrt(sum([v * v for v in grams.values()]))


def _dot(a: Counter[str], b: Counter[str]) -> int:
    """The trigram counts' dot product, over the shorter one's grams (whole numbers: the
    same sum in any order)."""
    if len(a) > len(b):
        a, b = b, a
    return sum([v * b[k] for k, v in a.items() if k in b])


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    return _dot(a, b) / (_norm(a) * _norm(b))


def related(x: str, y: str) -> bool:
    """Same stem, or one is the head or modifier of a compound (Wetter/Wetterbericht)."""
    if x == y:
        return True
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    return len(short) >= 4 and (long_.startswith(short) or long_.endswith(short))


class Related:
    """Answers "is any word of this set related to x?" in time linear in len(x).
    With `lengths`, only for an x of one of those lengths (the index is smaller: a
    long text asked about a few words keeps only the affixes of their lengths)."""

    def __init__(self, words: set[str], lengths: set[int] | None = None) -> None:
        self._words = words
        if lengths is None:
            self._affixes = {
                cut for w in words for k in range(4, len(w)) for cut in (w[:k], w[-k:])
            }
        else:
            cuts = sorted(k for k in lengths if k >= 4)
            self._affixes = {
                cut for w in words for k in cuts if k < len(w) for cut in (w[:k], w[-k:])
            }

    def to(self, x: str) -> bool:
        if x in self._words or x in self._affixes:
            return True
        return any(x[:k] in self._words or x[-k:] in self._words for k in range(4, len(x)))


SMALL = 24  # pairs of words below which `unrelated` compares them instead of indexing


def unrelated(xs: set[str], others: set[str]) -> list[str]:
    """The words of `xs` related to no word of `others` (a word under 4 letters is related
    only to itself, so only the longer ones are looked up, in an index of their lengths;
    a few words against a few others are compared pair by pair: `related`, in C)."""
    out = [x for x in xs if x not in others]
    long_ = [x for x in out if len(x) >= 4]
    if not long_:
        return out
    if len(long_) * len(others) <= SMALL:
        found = {x for x in long_ if _related_to_any(x, others)}
        return [x for x in out if x not in found] if found else out
    index = Related(others, {len(x) for x in long_})
    return [x for x in out if len(x) < 4 or not index.to(x)]


def _related_to_any(x: str, others: set[str]) -> bool:
    """`related(x, y)` for some y of `others`, x of 4 letters or more and not among them."""
    for y in others:
        if len(y) >= 4 and (
            (x.startswith(y) or x.endswith(y))
            if len(y) <= len(x)
            else (y.startswith(x) or y.endswith(x))
        ):
            return True
    return False


def dice(a: set[str], b: set[str]) -> float:
    """Dice overlap where related stems count as shared."""
    return _dice(a, b, unrelated(b, a))


def _dice(a: set[str], b: set[str], new_in_b: list[str]) -> float:
    if not a or not b:
        return 0.0
    hits_a = len(a) - len(unrelated(a, b))
    hits_b = len(b) - len(new_in_b)
    return (hits_a + hits_b) / (len(a) + len(b))


def similarity(first: str, second: str) -> float:
    """0..1: how much two messages ask for the same thing (content words + trigrams)."""
    return word_similarity(content_words(first), content_words(second))


def word_similarity(a: list[str], b: list[str]) -> float:
    """`similarity` of two messages' `content_words` (for a caller that has them already)."""
    return compare(a, b)[0]


def compare(a: list[str], b: list[str]) -> tuple[float, list[str]]:
    """`word_similarity(a, b)`, and the distinct words of b related to no word of a."""
    return compare_read(read_words(a), read_words(b))


class Read(NamedTuple):
    """A message's content words, their trigram counts (what `compare` reads), and what
    is worked out of them once: the distinct words and the counts' norm (`cosine`'s)."""

    words: list[str]
    grams: Counter[str]
    distinct: set[str]
    norm: float


def read_words(words: list[str]) -> Read:
    grams = _trigrams(words)
    return Read(words, grams, set(words), _norm(grams))


def compare_read(a: Read, b: Read) -> tuple[float, list[str]]:
    """`compare` of two messages read already (`read_words`)."""
    set_a, set_b = a.distinct, b.distinct
    new_in_b = unrelated(set_b, set_a)
    if not set_a or not set_b:  # `_dice` and `cosine` are 0 (no words: no grams either)
        return 0.0, new_in_b
    hits_a = len(set_a) - len(unrelated(set_a, set_b))
    hits_b = len(set_b) - len(new_in_b)
    dice = (hits_a + hits_b) / (len(set_a) + len(set_b))  # `_dice`, its sets read once
    cos = _dot(a.grams, b.grams) / (a.norm * b.norm) if a.grams and b.grams else 0.0
    return 0.5 * dice + 0.5 * cos, new_in_b


class LastRead:
    """The `Read` of the last few messages by text: a chat's next message is compared
    with the one before it, read as the next message one turn earlier. Values are
    never changed after they are put (a `Read` is not copied out). A text longer than
    `longest` characters is not kept (read again: the memory stays small)."""

    def __init__(self, size: int = 256, longest: int = 4_000) -> None:
        self._entries: dict[str, Read] = {}
        self._size, self._longest = size, longest

    def get(self, text: str) -> Read | None:
        return self._entries.get(text)

    def put(self, text: str, read: Read) -> None:
        if len(text) > self._longest:
            return
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]  # the oldest put
        self._entries[text] = read
