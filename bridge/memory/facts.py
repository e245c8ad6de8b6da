"""Facts a person states about themselves: their subject key, found by fixed patterns (pure).

`fact_subject(text)` gives a small closed key ("name", "home", "work",
"birthday", "allergy", "diet", "partner", "children", "pet", "origin") for a
text that states one of these facts in the first or third person, English or
German ("I live in Leipzig", "lives in Leipzig", "ich wohne in Leipzig"), or
'' when none fits. The key is a word roost chose, never the person's text.
`stated_facts(text)` picks the sentences of a message in which the person
says such a fact about themselves ("I …", "my …", "ich …", "mein …"), not
as a question and not inside quotes: what an import proposes to remember
(`bridge.recall.proposals`). Both use the same patterns, so a proposal
kept later supersedes the topic about the same subject (`MemoryStore.save`).
"""

from __future__ import annotations

import re

MAX_SENTENCE = 200  # a longer sentence is not a one-line fact
MIN_SENTENCE = 12

# (key, pattern) in order: the first match wins
_FACTS: tuple[tuple[str, str], ...] = (
    (
        "name",
        r"\bmy name is\b|\bname is\b|\bi'?m called\b|\bi am called\b|\bheiße\b|"
        r"\bmein name ist\b",
    ),
    ("birthday", r"\bbirthday\b|\bborn on\b|\bgeburtstag\b|\bgeboren am\b"),
    ("allergy", r"\ballergic\b|\ballergy\b|\ballergie\b|\ballergisch\b"),
    ("diet", r"\bvegetarian\b|\bvegan\b|\bpescatarian\b|\bvegetarier\w*|\bveganer\w*"),
    (
        "home",
        r"\b(?:i live|lives|i'?m living|i am living|living|i moved|moved|just moved|based) "
        r"(?:in|to)\b|\b(?:wohne|wohnt|lebe|lebt) in\b|\b(?:zog|ziehe|umgezogen) nach\b",
    ),
    (
        "work",
        r"\b(?:i work|works|i'?m working|working) (?:as|at|for)\b|\bmy job\b|\bjob is\b|"
        r"\barbeite\w* (?:als|bei)\b|\bmein beruf\b",
    ),
    (
        "partner",
        r"\bmy (?:wife|husband|partner|girlfriend|boyfriend|fianc\w*)\b|"
        r"\b(?:wife|husband|partner)(?:'s name)? is\b|"
        r"\bmeine? (?:frau|mann|freundin|freund|partnerin|partner|verlobte)\b",
    ),
    (
        "children",
        r"\bmy (?:son|daughter|kids|children|child)\b|\bmein(?:e)? (?:sohn|tochter|kinder)\b",
    ),
    ("pet", r"\bmy (?:dog|cat|pet|puppy|kitten)\b|\bmein hund\b|\bmeine katze\b"),
    ("origin", r"\bi'?m from\b|\bi am from\b|\bcomes? from\b|\bkomme aus\b|\bkommt aus\b"),
)
_COMPILED = tuple((key, re.compile(p, re.IGNORECASE)) for key, p in _FACTS)
# words one of the patterns needs (lower case): a text without any is no fact, and
# one scan for plain words is far cheaper than the patterns with their word bounds
_NEEDS = (
    "name", "called", "heiße", "birthday", "born", "geburtstag", "geboren", "allerg",
    "vegetarian", "vegan", "pescatarian", "vegetarier", "live", "living", "moved", "based",
    "wohn", "lebe", "lebt", "zog", "ziehe", "work", "job", "arbeite", "beruf", "wife",
    "husband", "partner", "girlfriend", "boyfriend", "fianc", "frau", "mann", "freund",
    "verlobte", "son", "daughter", "kids", "child", "sohn", "tochter", "kinder", "dog", "cat",
    "pet", "pupp", "kitten", "hund", "katze", "from", "komm",
)  # fmt: skip
_NEEDED = re.compile("|".join(_NEEDS))
_BOUNDARY = re.compile(r"[.!?;]\s+|\n+")
# words a full stop follows without ending the sentence ("Dr. Sousa", "z.B. Tee")
_ABBREVIATIONS = frozenset(
    {"dr", "mr", "mrs", "ms", "mx", "prof", "st", "jr", "sr", "vs", "e.g", "i.e", "approx"}
    | {"ca", "nr", "str", "hr", "dipl", "z.b", "bzw", "usw", "u.a", "d.h", "inc", "ltd"}
)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»")
_FIRST_PERSON = re.compile(r"^(?:\w+[ ,:;-]+){0,3}?(?:i|i'm|i've|my|ich|mein\w*)\b", re.IGNORECASE)
_NOT_ABOUT_ME = re.compile(
    r"\b(?:if|when|would|could|should|maybe|perhaps|wenn|falls|würde|vielleicht)\b", re.IGNORECASE
)


def fact_subject(text: str) -> str:
    """The fact key of a text ('' when it states none of the known facts)."""
    for key, pattern in _COMPILED:
        if pattern.search(text):
            return key
    return ""


def sentences(text: str) -> list[str]:
    """`text` cut after ".", "!", "?" or ";" followed by a space, and at line breaks,
    each piece keeping its mark; a full stop after an abbreviation ("Dr.") or an
    initial ("J.") does not end a sentence."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        mark = m.group()[0]
        if mark == ".":
            words = text[start : m.start()].split()
            word = words[-1].lower().lstrip("(\"'“„«") if words else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        out.append(text[start : m.start() + (mark in ".!?;")])
        start = m.end()
    out.append(text[start:])
    return out


def stated_facts(text: str) -> list[tuple[str, str]]:
    """(key, sentence) for each sentence of `text` stating a known fact about the speaker."""
    out: list[tuple[str, str]] = []
    if not _NEEDED.search(text.lower()):  # most messages: one scan of plain words
        return out
    for raw in sentences(text):
        sentence = " ".join(raw.split())
        if not MIN_SENTENCE <= len(sentence) <= MAX_SENTENCE or sentence.endswith("?"):
            continue
        if not _FIRST_PERSON.match(sentence):  # the cheapest test first: anchored
            continue
        if _QUOTED.search(sentence) or _NOT_ABOUT_ME.search(sentence):
            continue
        key = fact_subject(sentence)
        if key:
            out.append((key, sentence))
    return out
