"""Approval and rejection cues, English and German, with negation handling.

`find_cues(text)` returns the cues found in the user's next message as
`Cue(polarity, strength, position, phrase)`. Negations flip a cue's polarity
("not bad", "nicht schlecht" approve; "not helpful", "passt nicht" reject);
fixed phrases such as "no problem" / "kein Problem" are not rejections.
The phrase patterns are tried one by one (in order, each masking what it
matched) only in a message and a clause that one combined pass of all of
them matched: most messages hold no phrase, and then none is tried.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

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
    if phrases and _ANY_PHRASE.search(clause):
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
    phrases = _ANY_PHRASE.search(lowered) is not None  # a clause's match is the text's too
    for clause in _CLAUSE_RE.findall(lowered):
        found, count = _clause_cues(clause, position, phrases)
        cues.extend(found)
        position += count
    return cues, position
