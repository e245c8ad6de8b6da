"""Whether literal words occur in a long text, quickly in any script (pure).

The rules run only when one of their words (keywords, trigger words, service
names) occurs, which is one substring search per word. On a long text
`Words(text).holds(words)` gives the same answers as `any(w in text ...)`
for less: a word of printable ASCII is looked for in the text's runs of
printable ASCII joined by newlines (an occurrence is inside one such run; in
another script they are short, and `in` on one-byte text is fast), and only
if those runs hold every character of the word (one set of them, made once).
Other words are looked for in the text itself. Short texts need none of this:
callers search them directly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

LONG = 2048  # from this length on a text is worth a `Words`
_PRINTABLE_RUNS = re.compile(r"[ -~]+")


class Words:
    __slots__ = ("_ascii", "_letters", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._ascii = text if text.isascii() else "\n".join(_PRINTABLE_RUNS.findall(text))
        self._letters = set(self._ascii)

    def holds(self, words: Iterable[str]) -> bool:
        """`any(w in text for w in words)`."""
        return any(self.has(w) for w in words)

    def has(self, word: str) -> bool:
        """`word in text`."""
        if not (word.isascii() and word.isprintable()):
            return word in self._text
        return self._letters.issuperset(word) and word in self._ascii
