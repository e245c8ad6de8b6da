"""The outcome grader as it was before the speed work (main at dce3acc), frozen as an oracle.

bridge/grading/text.py, cues.py and classify.py concatenated, unchanged but for their
imports; test_classify_differential.py asserts the live grader returns exactly what this
one does. Do not edit it to follow the live code: it is the reference.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

# --- text.py


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


def tokens(text: str) -> list[str]:
    """Lowercased word tokens (apostrophe contractions kept: don't, it's)."""
    words = TOKEN_RE.findall(text.lower().replace("’", "'"))
    return [
        w[:-2] if w.endswith("'s") and w not in ("it's", "that's", "what's", "let's") else w
        for w in words
    ]


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """Strip one common English/German suffix; fold umlauts (pure, so remembered)."""
    w = word.translate(_FOLD)
    for suffix in _SUFFIXES:
        if len(w) - len(suffix) >= 4 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


MAX_WORD = 40  # no word of a natural language is longer; longer runs are cut


def content_words(text: str) -> list[str]:
    return [stem(t[:MAX_WORD]) for t in tokens(text) if t not in STOPWORDS]


def _trigrams(words: list[str]) -> Counter[str]:
    grams: Counter[str] = Counter()
    for w in words:
        padded = f" {w} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    return dot / (
        math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    )


def related(x: str, y: str) -> bool:
    """Same stem, or one is the head or modifier of a compound (Wetter/Wetterbericht)."""
    if x == y:
        return True
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    return len(short) >= 4 and (long_.startswith(short) or long_.endswith(short))


class Related:
    """Answers "is any word of this set related to x?" in time linear in len(x)."""

    def __init__(self, words: set[str]) -> None:
        self._words = words
        self._affixes = {cut for w in words for k in range(4, len(w)) for cut in (w[:k], w[-k:])}

    def to(self, x: str) -> bool:
        if x in self._words or x in self._affixes:
            return True
        return any(x[:k] in self._words or x[-k:] in self._words for k in range(4, len(x)))


def dice(a: set[str], b: set[str]) -> float:
    """Dice overlap where related stems count as shared."""
    if not a or not b:
        return 0.0
    in_a, in_b = Related(a), Related(b)
    hits_a = sum(in_b.to(x) for x in a)
    hits_b = sum(in_a.to(y) for y in b)
    return (hits_a + hits_b) / (len(a) + len(b))


def similarity(first: str, second: str) -> float:
    """0..1: how much two messages ask for the same thing (content words + trigrams)."""
    return word_similarity(content_words(first), content_words(second))


def word_similarity(a: list[str], b: list[str]) -> float:
    """`similarity` of two messages' `content_words` (for a caller that has them already)."""
    return 0.5 * dice(set(a), set(b)) + 0.5 * cosine(_trigrams(a), _trigrams(b))


# --- cues.py


NEGATORS = frozenset(
    """
    none
    aren't can't cannot didn't doesn't don't isn't kein keine keinen never nicht nie niemals
    nix no not nothing wasn't won't
    """.split()  # noqa: SIM905
)

# Single words: (polarity, strength). Strength 2 = clear; 1 = weak (ok, gut).
WORDS: dict[str, tuple[int, int]] = {
    **dict.fromkeys(
        """
        thanks thank thx ty perfect great awesome excellent exactly brilliant fantastic
        wonderful amazing helpful nice cool correct right works worked working solved lovely
        superb appreciated appreciate neat danke dankeschön perfekt genau super toll klasse
        prima spitze exakt richtig korrekt hilfreich funktioniert klappt geklappt passt
        stimmt wunderbar großartig hervorragend läuft geholfen merci
        """.split(),  # noqa: SIM905
        (1, 2),
    ),
    **dict.fromkeys(
        """
        ok okay alright fine good gut sure jo yep yes ja
        """.split(),  # noqa: SIM905
        (1, 1),
    ),
    **dict.fromkeys(
        """
        wrong incorrect false nonsense useless bad broken fails failed failing misunderstood
        falsch unsinn quatsch blödsinn schlecht nutzlos kaputt missverstanden unbrauchbar
        """.split(),  # noqa: SIM905
        (-1, 2),
    ),
}

# Phrases, checked in this order before single words (their tokens are then
# consumed): fixed phrases, rejections (which may contain approval words:
# "hilft mir nicht"), approvals.
PHRASES: list[tuple[str, int, int]] = [
    # fixed phrases that look negative but are not
    (r"\b(no|kein) (problem|problemo|worries|sorge)\b", 1, 1),
    # rejections
    (
        r"\b(kann|can'?t|cannot|couldn'?t) (nicht )?"
        r"(stimmen|sein|be right|be true|be correct)\b",
        -1,
        3,
    ),
    (
        r"\b(geht|läuft|klappt|funktioniert|passt|hilft|stimmt)"
        r"( mir| uns| so| leider| immer noch| trotzdem| aber| das)? (nicht|kein)\b",
        -1,
        3,
    ),
    (
        r"\b(doesn'?t|does not|didn'?t|did not|won'?t|isn'?t|is not|not|still not) (work|working|"
        r"help|helping|run|compile|helpful)\b",
        -1,
        3,
    ),
    (r"\bnot what i\b|\bnicht (das|was),? was ich\b|\bnicht was ich\b|\bnicht das was\b", -1, 3),
    (r"\b(that'?s|this is|it'?s) not (it|right|correct|true|what)\b", -1, 3),
    (r"\bdas (ist|war|stimmt) (so )?(nicht|falsch)\b|\bstimmt (so )?nicht\b", -1, 3),
    (r"\b(i|ich) (meant|meinte|said|sagte|asked for|wanted|wollte eigentlich)\b", -1, 2),
    (
        r"\b(still|immer noch|weiterhin|nach wie vor)\b.*\b(not|nicht|error|fehler|same|gleiche|"
        r"fails|broken|kaputt|doesn'?t|don'?t|didn'?t)\b",
        -1,
        3,
    ),
    (r"\b(try|versuch'?s?|versuche es|versuchs) (again|nochmal|noch ?mal|erneut)\b", -1, 2),
    (r"\bnochmal\b.{0,20}\b(richtig|genauer|korrekt)\b", -1, 2),
    (r"\b(are you sure|bist du sicher|sicher\?)", -1, 2),
    (
        r"\b(you|du) (misunderstood|forgot|ignored|missed|hast .{0,30}(vergessen|ignoriert|"
        r"übersehen|falsch verstanden))\b",
        -1,
        3,
    ),
    (r"\b(didn'?t|did not|hast nicht|nicht) (answer|beantwortet|my question|meine frage)\b", -1, 3),
    (
        r"\b(i|ich) (get|got|am getting|bekomme|kriege|krieg) (an? |einen |eine )?"
        r"(error|exception|fehler|fehlermeldung)\b",
        -1,
        3,
    ),
    (r"\b(throws|gives|giving|returns) (an? )?(error|exception)\b", -1, 3),
    (r"\b(es kommt|da kommt|kommt) (ein|eine|immer) ?(fehler|fehlermeldung)\b", -1, 3),
    (r"\b(not|nicht) (quite|ganz|wirklich|really)\b", -1, 2),
    (r"\bthat'?s not\b|\bdas ist nicht\b|\bdas war nicht\b|\bdas meinte ich nicht\b", -1, 2),
    (
        r"\b(too long|zu lang|too vague|zu ungenau|zu allgemein|off topic|irrelevant"
        r"|am thema vorbei)\b",
        -1,
        2,
    ),
    # negated negatives and fixed phrases: approval or nothing
    (r"\bcan'?t complain\b|\bcouldn'?t be better\b|\bnothing (to add|wrong)\b", 1, 2),
    (
        r"\b(that'?s|that was|this is|das ist|das war|genau) "
        r"(it|es|what i (wanted|needed|meant))\b",
        1,
        2,
    ),
    (r"\bgenau so\b|\bgenau das\b|\bso passt\b|\bgut so\b|\bspot on\b|\bnailed it\b", 1, 2),
    (r"\bmakes sense\b|\bgot it\b|\bmacht sinn\b|\bverstanden\b|\balles klar\b", 1, 1),
    (r"\blove (it|this|that)\b|\bwell done\b|\bgood job\b|\bgut gemacht\b|\bvielen dank\b", 1, 2),
    (r"\bhilft mir\b|\bhat geholfen\b|\bthat helps\b|\bthat helped\b|\bsehr gut\b", 1, 2),
]
_PHRASES = [(re.compile(p), pol, st) for p, pol, st in PHRASES]
_LEADING_NO = re.compile(
    r"^\W*(no|nope|nah|nein|nö|ne)\b(?!\s+(problem|worries|sorge|need|thanks))"
)
# German verbs of success are negated after them: "passt nicht", "klappt so nicht".
_POSTNEG_VERBS = frozenset(
    ["funktioniert", "klappt", "passt", "stimmt", "läuft", "geht", "hilft", "works"]
)


@dataclass(frozen=True)
class Cue:
    polarity: int  # +1 approval, -1 rejection
    strength: int  # 1 weak, 2 clear, 3 explicit
    position: int  # token index where it starts
    phrase: str


_CLAUSE_RE = re.compile(r"[^.!?;,:\n]+[.!?;,:\n]*")
_NEGATED_STATEMENT = frozenset(
    "not isn't aren't wasn't weren't don't doesn't didn't none nicht kein keine keinen doch".split()  # noqa: SIM905
)


def _clause_cues(clause: str, first_token: int) -> list[Cue]:
    cues: list[Cue] = []
    question = clause.rstrip().endswith("?")
    starts = [m.start() for m in TOKEN_RE.finditer(clause)]
    masked = clause
    for pattern, pol, strength in _PHRASES:
        chars: list[str] | None = None
        for m in pattern.finditer(masked):
            if pol > 0 and question:
                continue
            where = first_token + bisect.bisect_left(starts, m.start())
            cues.append(Cue(pol, strength, where, m.group(0)))
            chars = chars if chars is not None else list(masked)
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
        if chars is not None:  # one rebuild per phrase pattern keeps this linear
            masked = "".join(chars)
    if first_token == 0:
        leading = _LEADING_NO.match(masked)
        if leading:
            cues.append(Cue(-1, 3, 0, leading.group(1)))
            masked = " " * leading.end() + masked[leading.end() :]
    words = tokens(masked)
    last_cue = -1
    for i, word in enumerate(words):
        if word not in WORDS:
            continue
        pol, strength = WORDS[word]
        before = words[max(0, i - 2, last_cue + 1) : i]
        after = words[i + 1 : i + 3]
        last_cue = i
        if any(w in NEGATORS for w in before) or (
            word in _POSTNEG_VERBS and any(w in NEGATORS for w in after)
        ):
            pol, strength = -pol, max(strength, 2)
        if pol > 0 and question:
            continue
        cues.append(Cue(pol, strength, first_token + i, word))
    if not question and not cues and any(w in _NEGATED_STATEMENT for w in words):
        cues.append(Cue(-1, 1, first_token, "negated statement"))
    return cues


def find_cues(text: str) -> list[Cue]:
    """Cues clause by clause: a negation reaches only into its own clause, and a
    question ("which breed fits a small flat?") approves nothing."""
    lowered = text.lower().replace("’", "'")
    cues: list[Cue] = []
    position = 0
    for clause in _CLAUSE_RE.findall(lowered):
        cues.extend(_clause_cues(clause, position))
        position += len(tokens(clause))
    return cues


# --- classify.py


Label = Literal["approval", "rejection", "rephrase", "neutral"]
LABELS: tuple[Label, ...] = ("approval", "rejection", "rephrase", "neutral")

REPHRASE_AT = 0.40  # similarity from which a message counts as the same request
EARLY = 4  # a cue this close to the start speaks about the reply
SHORT = 8  # a message this short is all reaction


@dataclass(frozen=True)
class Outcome:
    label: Label
    confidence: float  # 0..1
    reason: str


def _rephrase_score(previous_user: str, reply: str, next_user: str) -> tuple[float, float]:
    """Similarity to the previous request, and the share of new words taken from the reply.
    Each text's content words are taken once, the reply's only when a word is new."""
    prev_words, next_words = content_words(previous_user), content_words(next_user)
    sim = word_similarity(prev_words, next_words)
    return sim, _from_reply(prev_words, reply, next_words)


def _from_reply(prev_words: list[str], reply: str, next_words: list[str]) -> float:
    """The share of the next message's words that are new to the previous request and
    taken from the reply (the reply's words are read only when there is a new word)."""
    nxt = set(next_words)
    in_prev = Related(set(prev_words))
    novel = [w for w in nxt if not in_prev.to(w)]
    if not novel:
        return 0.0
    in_said = Related(set(content_words(reply)))
    taken = sum(in_said.to(w) for w in novel)
    return taken / len(nxt)


def _strongest(cues: list[Cue], polarity: int) -> Cue | None:
    found = [c for c in cues if c.polarity == polarity]
    return max(found, key=lambda c: (c.strength, -c.position)) if found else None


def classify(previous_user: str, reply: str, next_user: str) -> Outcome:
    """Label the next user message as approval, rejection, rephrase or neutral."""
    n_tokens = len(tokens(next_user))
    cues = find_cues(next_user)
    rejection = _strongest(cues, -1)
    approval = _strongest(cues, +1)

    if rejection is not None and (rejection.strength >= 2 or approval is None):
        conf = 0.95 if rejection.strength >= 3 else 0.8
        return Outcome("rejection", conf, f"rejection cue {rejection.phrase!r}")
    if (
        approval is not None
        and approval.strength >= 2
        and (approval.position < EARLY or n_tokens <= SHORT)
    ):
        conf = 0.9 if n_tokens <= SHORT else 0.75
        return Outcome("approval", conf, f"approval cue {approval.phrase!r}")
    prev_words, next_words = content_words(previous_user), content_words(next_user)
    sim = word_similarity(prev_words, next_words)
    # the reply's share only lowers the score: below the mark without it, never needed
    if sim >= REPHRASE_AT and sim - 0.5 * _from_reply(prev_words, reply, next_words) >= REPHRASE_AT:
        conf = min(0.95, 0.5 + sim / 2)
        return Outcome("rephrase", conf, f"similar to the previous request ({sim:.2f})")
    if approval is not None and n_tokens <= 3:
        return Outcome("approval", 0.6, f"short acknowledgement {approval.phrase!r}")
    if rejection is not None and n_tokens <= 3:
        return Outcome("rejection", 0.6, f"short refusal {rejection.phrase!r}")
    conf = 0.7 if sim < REPHRASE_AT / 2 else 0.55
    return Outcome("neutral", conf, f"no cue, similarity {sim:.2f}")
