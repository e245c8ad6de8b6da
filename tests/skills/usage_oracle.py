"""The skill-usage detection of before its per-text memos (frozen: the oracle of
test_usage_differential.py). Do not change."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bridge.grading.text import Related, content_words, related, stem, tokens
from bridge.skills.files import Skill

PARAPHRASE_SHARE = 0.6
PARAPHRASE_MIN = 3


def _named(name: str, reply_lower: str) -> bool:
    words = [w for w in re.split(r"[_\-\s]+", name.lower()) if w]
    if not words:
        return False
    phrase = r"[\s_\-]+".join(re.escape(w) for w in words)
    return re.search(rf"(?<![a-z0-9]){phrase}(?![a-z0-9])", reply_lower) is not None


def _paraphrased(description: str, reply_words: set[str]) -> bool:
    wanted = set(content_words(description))
    if len(wanted) < PARAPHRASE_MIN:
        return False
    hits = sum(1 for w in wanted if w in reply_words or any(related(w, r) for r in reply_words))
    return hits >= PARAPHRASE_MIN and hits / len(wanted) >= PARAPHRASE_SHARE


def skills_used(reply: str, skills: Sequence[Skill]) -> list[str]:
    if not skills:
        return []
    lower = reply.lower()
    reply_words = set(content_words(reply))
    return [
        s.name for s in skills if _named(s.name, lower) or _paraphrased(s.description, reply_words)
    ]


def _inflected(name: str, request: Related) -> bool:
    words = [stem(w) for w in re.split(r"[_\-\s]+", name.lower()) if w]
    return bool(words) and all(request.to(w) for w in words)


def skills_asked(request: str, skills: Sequence[Skill]) -> list[str]:
    """The skills a request is about: named (inflections too) or clearly described."""
    if not skills:
        return []
    lower = request.lower()
    words = set(content_words(request))
    stems = Related({stem(t) for t in tokens(request)})
    return [
        s.name
        for s in skills
        if _named(s.name, lower) or _inflected(s.name, stems) or _paraphrased(s.description, words)
    ]
