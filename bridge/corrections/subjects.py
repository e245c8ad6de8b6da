"""What a standing instruction is about, and when two of them conflict (pure).

`subject_of(text)` gives a small closed key ("language", "units", "length",
"emoji", …) from the words of an instruction, English or German, or '' when
none fits. The key is a word roost chose, never the person's text, so it may
appear in audit records.

The conflict test (`conflicts`), documented in docs/style.md:
1. two instructions with the same non-empty subject key conflict: the newer
   one replaces the older ("always answer in German" then "always answer in
   English"; "use metric" then "use imperial"; "never use emojis" then
   "emojis are fine from now on");
2. without a key, two instructions conflict when their content words are
   nearly the same (Jaccard similarity >= 0.5) and their polarity differs
   ("always add a summary" / "never add a summary"), or when they are the
   same instruction again (similarity >= 0.8, any polarity) — a repeat
   replaces instead of piling up.
"""

from __future__ import annotations

import re

# (key, pattern) in order: the first match wins
_SUBJECTS: tuple[tuple[str, str], ...] = (
    ("name", r"call me|nenn\w* (?:du )?mich|mein name ist"),
    ("formality", r"formal|informal|casual|duzen|siezen|\bsie an\b|förmlich|locker"),
    (
        "language",
        r"\b(?:in|auf) (?:german|english|french|spanish|italian|deutsch|englisch|französisch|"
        r"spanisch|italienisch)\b|(?:switching|wechsel\w*) (?:to|zu|ins) \w+|"
        r"\bnur noch auf \w+",
    ),
    (
        "units",
        r"metric|imperial|metrisch|celsius|fahrenheit|kilomet\w*|miles|meilen|grams?\b|gramm|"
        r"pounds|\bunits\b|einheiten",
    ),
    ("time", r"24-hour|12-hour|24-stunden|12-stunden|am/pm"),
    ("emoji", r"emoji"),
    ("apology", r"apologi[sz]|entschuldig"),
    ("disclaimer", r"disclaimer|as an ai|als ki"),
    ("closer", r"end (?:every|each|with)|am ende|rückfrage|beenden|anything else"),
    ("preamble", r"introduction|einleitung|preamble|straight to|gute frage|great question"),
    ("echo", r"repeat(?:ing)? my question|wiederhol"),
    ("sources", r"sources?\b|quellen?\w*|citation|cite"),
    ("spelling", r"spelling|schreibweise|british english|britisches englisch"),
    ("punctuation", r"exclamation|ausrufezeichen|em dash|gedankenstrich"),
    ("indent", r"\btabs?\b|indentation|einrückung"),
    ("code", r"\bcode\b|codebeispiel\w*|python|typescript|javascript"),
    (
        "format",
        r"bullet|tables?\b|tabellen?|markdown|headings|überschrift|aufzählung|stichpunkt|"
        r"fließtext",
    ),
    (
        "length",
        r"\bshort|brief|concise|long\b|detailed|max(?:imum)? \w+ sentences|"
        r"just the command|\bkurz|knapp|ausführlich|\blange?\b|kürzer",
    ),
)
_COMPILED = tuple((key, re.compile(pattern, re.IGNORECASE)) for key, pattern in _SUBJECTS)
_WORD = re.compile(r"[\wäöüß]+", re.IGNORECASE)
_STOP_WORDS = """from now on always never please don't do not stop ever again anymore
    any more the a an
    to in of and or for with me my you your it be is are use using going forward future
    ab jetzt sofort immer nie wieder bitte nicht keine kein mehr zukunft künftig hör auf
    mich mir du dich dein deine die der das und oder mit zu von an den dem ein eine"""
_STOP = frozenset(_STOP_WORDS.split())


def subject_of(text: str) -> str:
    """The subject key of an instruction ('' when none fits)."""
    for key, pattern in _COMPILED:
        if pattern.search(text):
            return key
    return ""


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the content words of two instructions (0..1)."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def conflicts(
    new_subject: str, new_polarity: int, new_text: str, old: tuple[str, int, str]
) -> bool:
    """Whether the new instruction replaces the `old` (subject, polarity, text)."""
    old_subject, old_polarity, old_text = old
    if new_subject and new_subject == old_subject:
        return True
    if new_subject and old_subject:
        return False  # both known and different: about different things
    same = similarity(new_text, old_text)
    return same >= 0.8 or (same >= 0.5 and new_polarity != old_polarity)
