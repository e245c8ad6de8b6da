"""Which skills a reply used: named, or clearly paraphrased. Pure.

A skill counts as used when its name appears in the reply (as words,
`_`/`-` read as spaces) or when most of the content words of its
description appear (stem-aware), with at least three of them.

`skills_asked` reads the person's request the same way, and also takes an
inflected name ("wie deploye ich", "deployed") as naming the skill: every
word of the name must be related (same stem, or a compound's head or
modifier) to a word of the request. It decides which turns were *about* a
skill before any reply, so what a reply says never changes it.

Both run after every turn over every skill: what depends on a skill alone (its
name's pattern and stems, its description's content words) is worked out once
per text (`lru_cache`), and "related to a word of the reply" is looked up in one
`Related` index of the reply's words per call, not by comparing every pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from bridge.grading.text import Related, content_words, stem, tokens
from bridge.skills.files import Skill

PARAPHRASE_SHARE = 0.6
PARAPHRASE_MIN = 3
_NAME_SPLIT = re.compile(r"[_\-\s]+")


@lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str] | None:
    """The name as words in a text (`_`, `-` and spaces alike); None: no word in it."""
    words = [w for w in _NAME_SPLIT.split(name.lower()) if w]
    if not words:
        return None
    phrase = r"[\s_\-]+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![a-z0-9]){phrase}(?![a-z0-9])")


def _named(name: str, reply_lower: str) -> bool:
    pattern = _name_pattern(name)
    return pattern is not None and pattern.search(reply_lower) is not None


@lru_cache(maxsize=1024)
def _wanted(description: str) -> frozenset[str]:
    """The description's distinct content words."""
    return frozenset(content_words(description))


class _Words:
    """A text's content words, and (made when first asked) their `Related` index."""

    __slots__ = ("_index", "words")

    def __init__(self, words: set[str]) -> None:
        self.words = words
        self._index: Related | None = None

    def related(self) -> Related:
        if self._index is None:
            self._index = Related(self.words)
        return self._index


def _paraphrased(description: str, reply: _Words) -> bool:
    wanted = _wanted(description)
    if len(wanted) < PARAPHRASE_MIN:
        return False
    # a word is related to one of the reply's when equal, or one is the head or the
    # modifier of the other (`related`): what the index answers for each word
    index = reply.related()
    hits = sum(1 for w in wanted if index.to(w))
    return hits >= PARAPHRASE_MIN and hits / len(wanted) >= PARAPHRASE_SHARE


def skills_used(reply: str, skills: Sequence[Skill]) -> list[str]:
    if not skills:
        return []
    lower = reply.lower()
    reply_words = _Words(set(content_words(reply)))
    return [
        s.name for s in skills if _named(s.name, lower) or _paraphrased(s.description, reply_words)
    ]


@lru_cache(maxsize=1024)
def _name_stems(name: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in _NAME_SPLIT.split(name.lower()) if w)


def _inflected(name: str, request: Related) -> bool:
    words = _name_stems(name)
    return bool(words) and all(request.to(w) for w in words)


def skills_asked(request: str, skills: Sequence[Skill]) -> list[str]:
    """The skills a request is about: named (inflections too) or clearly described."""
    if not skills:
        return []
    lower = request.lower()
    words = _Words(set(content_words(request)))
    stems = Related({stem(t) for t in tokens(request)})
    return [
        s.name
        for s in skills
        if _named(s.name, lower) or _inflected(s.name, stems) or _paraphrased(s.description, words)
    ]
