"""Approval and rejection cues, English and German, with negation handling.

`find_cues(text)` returns the cues found in the user's next message as
`Cue(polarity, strength, position, phrase)`. Negations flip a cue's polarity
("not bad", "nicht schlecht" approve; "not helpful", "passt nicht" reject);
fixed phrases such as "no problem" / "kein Problem" are not rejections.
The phrase patterns are tried one by one (in order, each masking what it
matched) only in a message and a clause that one combined pass of all of
them matched: most messages hold no phrase, and then none is tried. That pass
(`any_phrase`) tries them only where a word one of them can start with starts
(read from `re`'s parse of each alternative: `\b`, then that word): a search of
the union at every position cost 0.27 us a character.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any

from bridge.grading.text import TOKEN_RE, lower, lowered_tokens

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
# one pass over a clause says whether any phrase pattern can match it: none matches
# before another has masked part of it, so no match of the union means no match at all
_ANY_PHRASE = re.compile("|".join(f"(?:{p})" for p, _, _ in PHRASES))
_RUN = re.compile(r"\w+")  # a word as `\b` sees it


def _alternatives(pattern: str) -> list[str]:
    """The pattern's top-level alternatives (split at each `|` outside brackets)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


def _first_words(alternative: str) -> set[str] | None:
    """The words (maximal runs of `\\w`) a match of `alternative` can start with, when
    it is `\\b` then letters, each of its words ending in a non-word character or `\\b`
    (None: it cannot be told from its leading items; then every text is searched whole).
    Read from `re`'s own parse of it, so the table cannot drift from the patterns."""
    sre: Any = importlib.import_module("re._parser")
    items = list(sre.parse(alternative))
    if not items or items[0] != (sre.AT, sre.AT_BOUNDARY):
        return None
    words: set[str] = set()

    def walk(rest: list[tuple[Any, Any]], word: str) -> bool:
        if not rest:
            return False  # a match may end inside a longer word: not told here
        (op, av), after = rest[0], rest[1:]
        if op is sre.LITERAL:
            ch = chr(av)
            if _RUN.fullmatch(ch):
                return walk(after, word + ch)
            words.add(word)
            return bool(word)
        if op is sre.AT and av is sre.AT_BOUNDARY:
            words.add(word)
            return bool(word)
        if op is sre.SUBPATTERN:
            return walk([*av[-1], *after], word)
        if op is sre.BRANCH:
            return all(walk([*alt, *after], word) for alt in av[1])
        if op is sre.IN and all(o is sre.LITERAL for o, _ in av):
            return all(walk([(o, a), *after], word) for o, a in av)
        if op is sre.MAX_REPEAT and av[0] == 0 and av[1] == 1:
            return walk([*av[2], *after], word) and walk(after, word)
        return False

    return words if walk(items[1:], "") else None


@functools.cache  # on the first turn, not at import: every roost process imports this
def _phrase_starts() -> dict[str, re.Pattern[str]] | None:
    """Per word a phrase can start with, the alternatives that start with it (None: one
    alternative's first words cannot be told)."""
    by_word: dict[str, list[str]] = {}
    for pattern, _, _ in PHRASES:
        for alternative in _alternatives(pattern):
            words = _first_words(alternative)
            if words is None:
                return None
            for word in words:
                by_word.setdefault(word, []).append(alternative)
    return {w: re.compile("|".join(f"(?:{a})" for a in alts)) for w, alts in by_word.items()}


def any_phrase(lowered: str) -> bool:
    """`_ANY_PHRASE.search(lowered) is not None`, tried only where a phrase can start: every
    alternative is `\\b` then a word, so a match starts where a word does, and that word is
    one it can start with (a word of the text not among them needs no try)."""
    starts = _phrase_starts()
    if starts is None:
        return _ANY_PHRASE.search(lowered) is not None
    for m in _RUN.finditer(lowered):
        pattern = starts.get(m.group())
        if pattern is not None and pattern.match(lowered, m.start()):
            return True
    return False


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


def _clause_cues(clause: str, first_token: int, phrases: bool) -> tuple[list[Cue], int]:
    """A lowered clause's cues and its number of tokens; `phrases` False: the message
    matches no phrase pattern (one combined pass said so), so none is tried here."""
    cues: list[Cue] = []
    question = clause.rstrip().endswith("?")
    masked = clause
    if phrases and any_phrase(clause):
        starts = [m.start() for m in TOKEN_RE.finditer(clause)]
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
    words = lowered_tokens(masked)
    count = len(words) if masked is clause else len(TOKEN_RE.findall(clause))
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
    if not question and not cues and not _NEGATED_STATEMENT.isdisjoint(words):
        cues.append(Cue(-1, 1, first_token, "negated statement"))
    return cues, count


def find_cues(text: str) -> list[Cue]:
    """Cues clause by clause: a negation reaches only into its own clause, and a
    question ("which breed fits a small flat?") approves nothing."""
    return lowered_cues(lower(text))[0]


def lowered_cues(lowered: str) -> tuple[list[Cue], int]:
    """`find_cues` of a text `lower` has lowered already, and its number of tokens."""
    cues: list[Cue] = []
    position = 0
    phrases = any_phrase(lowered)  # a clause's match is the text's too
    for clause in _CLAUSE_RE.findall(lowered):
        found, count = _clause_cues(clause, position, phrases)
        cues.extend(found)
        position += count
    return cues, position
