"""The correction detector as it was before the keyword pre-check (main at bc5e9ab), frozen.

bridge/corrections/detect.py unchanged (its subject keys come from the live subjects.py,
which the pre-check does not touch); test_detect_differential.py asserts the live
detector returns exactly what this one does. Do not edit it to follow the live code: it
is the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridge.corrections.subjects import subject_of

MAX_CHARS = 300  # an instruction kept is one short line

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")

# a cue for the future: enough on its own when the sentence is not a question
_FUTURE_EN = (
    r"from now on|going forward|from here on(?: out)?|henceforth|starting now|"
    r"in (?:the )?future|for the future|from today on|for now on"
)
_FUTURE_DE = (
    r"ab jetzt|ab sofort|ab heute|von jetzt an|von nun an|in zukunft|künftig|"
    r"zukünftig|fortan|ab nun"
)
_FUTURE = re.compile(rf"(?<!\w)(?:{_FUTURE_EN}|{_FUTURE_DE})(?!\w)", re.IGNORECASE)
# "from now until Friday", "ab jetzt bis Freitag", "in the future tense": only a time span
_NOT_FUTURE = re.compile(
    r"(?:from now|ab jetzt|ab sofort|ab heute) (?:until|till|bis)\b|future tense|"
    r"what (?:will|happens|changes?)|was bringt die zukunft",
    re.IGNORECASE,
)

_LEAD = r"(?:(?:ok(?:ay)?|and|also|oh|so|please|pls|und|auch|also|bitte|ja|hey)[ ,]+)*"
_EN_RULE = re.compile(
    rf"^{_LEAD}(?:always|never|don'?t ever|do not ever|never ever|no more|"
    r"(?:don'?t|do not)\b.*\b(?:anymore|any more|again)\b|"
    r"(?:stop|quit) \w+ing\b|"
    r"(?:i want|i'd like|i would like|i need) you to (?:always|never|stop)|"
    r"you (?:should|must|need to|have to) (?:always|never)|"
    r"make sure (?:you|to) (?:always|never)|remember to (?:always|never)|"
    r"(?:for the future|in future)\b)",
    re.IGNORECASE,
)
_EN_NOT = re.compile(
    r"^(?:never mind|never have i|never hurts|always be closing|stop[!.]?$|"
    r"don'?t (?:worry|forget)\b)",
    re.IGNORECASE,
)
# German: a first word that is a pronoun, article or question word makes a statement
_DE_SUBJECT_WORDS = (
    "ich wir er es man das der die den dem mein meine dein deine unser sein ihr "
    "wie was warum wieso wann wo wer kannst kann hast hat ist sind machst bist "
    "hörst stimmt immer"
)
_DE_SUBJECT = frozenset(_DE_SUBJECT_WORDS.split())
_DE_FREQ = re.compile(
    r"(?<!\w)(?:immer|nie wieder|niemals|nie|keine?n?\b.*\bmehr|nicht mehr|nur noch)(?!\w)",
    re.IGNORECASE,
)
_DE_RULE = re.compile(
    rf"^{_LEAD}(?:immer\b(?! (?:mit der ruhe|wieder|diese)\b)|nie wieder|niemals|"
    r"keine?n? .*\bmehr\b|"
    r"hör(?:t|en sie)? (?:auf|endlich auf)\b(?=.*\b(?:zu|mit)\b)|"
    r"(?:ich (?:möchte|will|hätte gern)|ich wünsche mir),? dass du|"
    r"du (?:sollst|musst|darfst) (?:immer|nie|niemals|keine?)|"
    r"denk(?:e)? (?:dran|daran),? )",
    re.IGNORECASE,
)
_DE_NOT = re.compile(
    r"^(?:nie im leben|immer mit der ruhe|immer wieder|immer diese|keine sorge|"
    r"nie wieder krieg)",
    re.IGNORECASE,
)
_GERMAN_HINT = re.compile(
    r"(?<!\w)(?:bitte|immer|nie|nicht|keine?|mehr|ab|jetzt|zukunft|künftig|hör|du|dich|mich|"
    r"antworte|schreib|benutze|verwende|nutze)(?!\w)",
    re.IGNORECASE,
)
_NEGATIVE = re.compile(
    r"(?<!\w)(?:never|don'?t|do not|stop|quit|no more|avoid|without|nie|niemals|nicht|"
    r"keine?n?|hör\w* auf|lass\w*\b.*\bweg|unterlass\w*)(?!\w)",
    re.IGNORECASE,
)
_POLITE_ASK = re.compile(
    r"^(?:please )?(?:can|could|would|will) you\b|^(?:kannst|könntest|würdest) du\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Correction:
    """A standing instruction found in a message."""

    text: str  # the sentence, one line, as the person wrote it (cut at MAX_CHARS)
    polarity: int  # +1: do this; -1: do not / stop
    subject: str  # conflict key from subjects.py ('' when none is known)
    lang: str  # "en" | "de"


def _unquoted(text: str) -> str:
    return _QUOTED.sub(" … ", text)


def _sentences(text: str) -> list[str]:
    return [s.strip(" \t-*•") for s in _SENTENCES.split(text) if s.strip(" \t-*•")]


def _lang(sentence: str) -> str:
    return "de" if len(_GERMAN_HINT.findall(sentence)) >= 2 or _is_german(sentence) else "en"


def _is_german(sentence: str) -> bool:
    return bool(re.search(r"[äöüß]|(?<!\w)(?:ab|auf|und|zu|mit)(?!\w)", sentence.lower()))


def _german_imperative(sentence: str) -> bool:
    """'Antworte immer …', 'Benutze bitte keine … mehr': an imperative with a frequency word."""
    words = re.findall(r"[\wäöüß'-]+", sentence.lower())
    if not words or words[0] in _DE_SUBJECT:
        return False
    head = " ".join(words[:6])
    return bool(_DE_FREQ.search(head)) and not _DE_NOT.match(sentence)


def _is_rule(sentence: str) -> bool:
    s = sentence.strip()
    low = s.lower()
    question = s.rstrip().endswith("?")
    future = bool(_FUTURE.search(s)) and not _NOT_FUTURE.search(s)
    if question:  # "do you always …?" is a question; "could you from now on …?" is a request
        return future and bool(_POLITE_ASK.match(low))
    if _EN_NOT.match(low) or _DE_NOT.match(low):
        return False
    if future:
        return True
    if _EN_RULE.match(low) or _DE_RULE.match(low):
        return True
    return _german_imperative(s)


def detect(text: str) -> Correction | None:
    """The first sentence of `text` that is a standing instruction, else None."""
    if text.lstrip().startswith("/"):
        return None  # a command is never a correction
    for sentence in _sentences(_unquoted(text)):
        if "…" in sentence and len(sentence.replace("…", "").split()) < 3:
            continue  # what is left around a quote
        if not _is_rule(sentence):
            continue
        original = _original(text, sentence)
        one = " ".join(original.split())[:MAX_CHARS]
        polarity = -1 if _NEGATIVE.search(sentence) else 1
        return Correction(one, polarity, subject_of(one), _lang(sentence))
    return None


def _original(text: str, sentence: str) -> str:
    """The sentence with its quotes put back (the detector read it without them)."""
    if "…" not in sentence:
        return sentence
    for candidate in _sentences(text):
        if _unquoted(candidate).strip(" \t-*•") == sentence:
            return candidate
    return sentence
